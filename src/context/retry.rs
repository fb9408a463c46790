//! Which failures are worth retrying, and after how long (kit §4.8–§4.9).
//!
//! A failed request is retried when its error looks transient: an overloaded or rate-limited
//! provider, a 5xx status, a dropped connection or stream, a timeout. Account limits (quota,
//! billing, usage caps) are not transient even when they come as a 429. The text rules are
//! libagent's own; the sessions kit holds the real texts they are checked against.

use std::sync::OnceLock;

use regex::RegexSet;

use super::overflow::case_insensitive_set;
use crate::json::{Field, Json};

/// Limits that last hours or need a person: quota, billing, usage caps.
const ACCOUNT_LIMITS: &[&str] = &[
    r"insufficient[_ ]quota",
    r"quota[_ ]exceeded",
    r"exceeded (your )?(current )?quota",
    r"billing",
    r"usage[_ ]?limit",
    r"out of budget",
    r"available balance",
    r#""code"\s*:\s*"?1308\b"#, // z.ai: the plan's usage limit, sent as a 429
];

/// Transient failures, grouped by where they happen.
const TRANSIENT: &[&str] = &[
    // The provider is busy or throttling.
    r"overloaded",
    r"server[_ ]busy|servers? (are|is) currently busy",
    r"high demand|at capacity",
    r"rate[ _-]?limit",
    r"too many requests",
    r"resource[_ ]?exhausted",
    // The provider or a gateway failed on its side.
    r"(service|server)( is)?( temporarily)? unavailable",
    r"temporarily unavailable",
    r"(usage|user)[_ ]unavailable",
    r"(server|internal)[ _-]?error",
    r"provider returned (an )?error",
    r"upstream",
    // The connection failed or dropped.
    r"network[ _-]?error",
    r"connection[ _-]?(error|refused|lost|closed|reset)",
    r"other side closed",
    r"fetch failed",
    r"request to \S+ failed",
    r"getaddrinfo",
    r"\b(econnreset|econnaborted|econnrefused|etimedout|epipe|enotfound|eai_again)\b",
    r"socket (hang up|connection was closed)",
    r"reset before headers",
    r"\btimed? ?out\b|timeout",
    r"\bterminated\b",
    // The response stream ended early.
    r"websocket[ _-]?(closed|error|connection[ _-]?limit)",
    r"ended without",
    r"stream ended before",
    r"stream disconnected",
    r"stream was interrupted",
    r"http/?2 (stream failed|request did not get a response)",
    r"cut short",
    r"pending stream has been canceled",
    // The provider says to retry.
    r"retry your request|try your request again|retry delay",
];

/// HTTP statuses that mean "try again" when they stand alone in a text.
const TRANSIENT_STATUSES: &[&str] = &["429", "500", "502", "503", "504", "520", "524"];

fn account_limits() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| case_insensitive_set(ACCOUNT_LIMITS))
}

fn transient() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| case_insensitive_set(TRANSIENT))
}

/// A transient status code as a whole token: not part of a longer number or word (a request
/// id, a byte count, an address).
fn has_transient_status(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|token| TRANSIENT_STATUSES.contains(&token))
}

/// True when an error text describes a transient failure (and not an account limit).
pub fn is_retryable_text(error_message: &str) -> bool {
    !error_message.is_empty()
        && !account_limits().is_match(error_message)
        && (has_transient_status(error_message) || transient().is_match(error_message))
}

/// True when an assistant message is an error (`stopReason` "error") whose text is transient
/// ([`is_retryable_text`]). A caller first handles context overflows (compact, not retry).
pub fn is_retryable_error(message: &Json) -> bool {
    message.get("stopReason").and_then(Json::as_str) == Some("error")
        && is_retryable_text(
            message
                .get("errorMessage")
                .and_then(Json::as_str)
                .unwrap_or(""),
        )
}

/// Retry settings (pi-coding-agent's `retry` settings and defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetrySettings {
    /// Retry at all (default true).
    pub enabled: bool,
    /// Retries of one failing turn (default 3).
    pub max_retries: u32,
    /// The first delay; each next one doubles (default 2,000 ms).
    pub base_delay_ms: u64,
    /// No delay is longer (default 60,000 ms).
    pub max_delay_ms: u64,
}

/// The default cap on one delay.
const DEFAULT_MAX_DELAY_MS: u64 = 60_000;

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_delay_ms: DEFAULT_MAX_DELAY_MS,
        }
    }
}

impl RetrySettings {
    /// These settings with the members `settings` sets (`{"enabled"?, "maxRetries"?,
    /// "baseDelayMs"?, "maxAgentDelayMs"?}`; null or absent leaves them). An ill-typed member
    /// is an error naming it.
    pub fn with_overrides(mut self, settings: &Json) -> Result<Self, String> {
        let settings = match settings {
            Json::Null => return Ok(self),
            Json::Object(map) => map,
            _ => return Err("The retry settings must be a JSON object or null.".into()),
        };
        let whole = |key: &str| -> Result<Option<u64>, String> {
            match settings.field(key).filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(v) => super::threshold::token_count(v).map(Some).ok_or_else(|| {
                    format!("The retry setting \"{key}\" must be a whole number (0 or more).")
                }),
            }
        };
        if let Some(value) = settings.field("enabled").filter(|v| !v.is_null()) {
            self.enabled = value
                .as_bool()
                .ok_or("The retry setting \"enabled\" must be true or false.")?;
        }
        if let Some(n) = whole("maxRetries")? {
            self.max_retries = u32::try_from(n)
                .map_err(|_| "The retry setting \"maxRetries\" is too large.".to_string())?;
        }
        if let Some(ms) = whole("baseDelayMs")? {
            self.base_delay_ms = ms;
        }
        if let Some(ms) = whole("maxAgentDelayMs")? {
            self.max_delay_ms = ms;
        }
        Ok(self)
    }
}

/// The largest integer a JavaScript number holds exactly (2^53 − 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The delay before retry number `attempt` (1-based; below 1 counts as 1):
/// `base × 2^(attempt − 1)`, capped at `max_delay_ms`. A product beyond 2^53 − 1 counts as
/// 2^53 − 1 before the cap.
pub fn retry_delay_ms(base_delay_ms: u64, max_delay_ms: u64, attempt: i64) -> u64 {
    let exponent = attempt.saturating_sub(1).clamp(0, i32::MAX as i64) as i32;
    let delay = base_delay_ms as f64 * 2f64.powi(exponent);
    let delay = if delay.is_finite() && delay <= MAX_SAFE_INTEGER {
        delay
    } else {
        MAX_SAFE_INTEGER
    };
    (delay as u64).min(max_delay_ms)
}

/// The delays before each retry of one failing turn: attempts 1 to `max_retries` (none when
/// retries are disabled).
pub fn retry_schedule(settings: &RetrySettings) -> Vec<u64> {
    if !settings.enabled {
        return Vec::new();
    }
    (1..=i64::from(settings.max_retries))
        .map(|attempt| retry_delay_ms(settings.base_delay_ms, settings.max_delay_ms, attempt))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_count_only_as_whole_tokens() {
        assert!(is_retryable_text("HTTP 503"));
        assert!(is_retryable_text("status_code=502"));
        assert!(!is_retryable_text("id 5021"));
        assert!(!is_retryable_text("a500 b"));
    }

    #[test]
    fn an_account_limit_wins_over_a_transient_word() {
        assert!(!is_retryable_text("503 billing hard limit reached"));
        assert!(!is_retryable_text("GoUsageLimitError: 429"));
        assert!(is_retryable_text(
            "error code 13080, please retry your request"
        ));
    }

    #[test]
    fn delays_saturate_instead_of_overflowing() {
        assert_eq!(retry_delay_ms(0, 10, 5000), 10);
        assert_eq!(retry_delay_ms(3, u64::MAX, 60), 9_007_199_254_740_991);
        assert_eq!(retry_delay_ms(7, 1000, -4), 7);
        assert_eq!(retry_delay_ms(7, 1000, i64::MIN), 7);
        assert_eq!(retry_delay_ms(7, 1000, i64::MAX), 1000);
    }
}

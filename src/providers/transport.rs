//! How a provider request travels: the transport options of a stream call (timeouts, retries,
//! extra trusted CAs), checked once, and the HTTP clients they need.
//!
//! Defaults, and why:
//! - `timeoutMs` 600 000 (10 min): the OpenAI and Anthropic SDKs' default request timeout, which
//!   pi-ai passes `timeoutMs` to. Here it bounds one attempt from connecting to the last body byte
//!   (a trickling server cannot keep a run alive); 0 = no limit, for answers longer than that.
//! - `connectTimeoutMs` 30 000: TCP connect plus the TLS handshake. A reachable endpoint does this
//!   in well under a second; 30 s covers slow links and proxies without leaving a run parked.
//! - `idleTimeoutMs` 300 000 (5 min): the longest wait for the response head (counted from the
//!   request's start: the client does not report when the connection is up) or the next body
//!   byte. Reasoning models can stay silent for minutes before their first token (and a local
//!   server processes a long prompt before it sends anything); a stalled server is still caught
//!   well before the total timeout.
//! - `maxRetryDelayMs`: absent = pi-ai's 60 s cap; 0 (pi-ai: no cap) and larger values are held
//!   at 10 min, one request's total timeout: a longer retry-after is a quota reset that waiting
//!   would not help, and must not park a run.

use std::sync::Arc;
use std::time::Duration;

use crate::http_client::Client;
use crate::json::Json;

pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 600_000;
pub(crate) const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 30_000;
pub(crate) const DEFAULT_IDLE_TIMEOUT_MS: u64 = 300_000;
/// pi-ai's default cap on a server-requested retry delay.
pub(crate) const DEFAULT_MAX_RETRY_DELAY_MS: f64 = 60_000.0;
/// No server-requested retry delay is waited beyond this, whatever `maxRetryDelayMs` says.
pub(crate) const RETRY_DELAY_CEILING_MS: f64 = 600_000.0;

/// The transport options of one stream call.
#[derive(Clone, Debug, PartialEq)]
pub struct Transport {
    /// `timeoutMs`: one attempt, connect to last byte (0 = no limit).
    pub timeout_ms: u64,
    /// `connectTimeoutMs`: TCP connect and TLS handshake (0 = no limit).
    pub connect_timeout_ms: u64,
    /// `idleTimeoutMs`: the longest silence before the head or between body bytes (0 = no limit).
    pub idle_timeout_ms: u64,
    /// `maxRetries` (pi-ai: 0 by default).
    pub max_retries: u32,
    /// `maxRetryDelayMs` as given (0 disables pi-ai's cap, see [`Transport::retry_delay_cap_ms`]).
    pub max_retry_delay_ms: Option<f64>,
    /// PEM text of extra trusted CAs (`caCertificates`, then `caCertificateFile`'s contents).
    pub extra_ca_pem: Option<Arc<String>>,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            timeout_ms: DEFAULT_TIMEOUT_MS,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            max_retries: 0,
            max_retry_delay_ms: None,
            extra_ca_pem: None,
        }
    }
}

/// `Option "<key>" must be ...` for a value of the wrong type or range.
fn bad(key: &str, what: &str) -> String {
    format!("Option \"{key}\" must be {what}.")
}

/// A non-negative number option (absent or null = `None`).
fn non_negative(options: &Json, key: &str) -> Result<Option<f64>, String> {
    match options.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(value) => match value.as_f64() {
            Some(n) if n >= 0.0 && n.is_finite() => Ok(Some(n)),
            _ => Err(bad(key, "a non-negative number")),
        },
    }
}

fn text<'a>(options: &'a Json, key: &str) -> Result<Option<&'a str>, String> {
    match options.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(text)) => Ok(Some(text)),
        Some(_) => Err(bad(key, "a string")),
    }
}

impl Transport {
    /// Reads and checks the transport options of a stream call; a bad value or an unreadable CA
    /// is an error naming the option.
    pub fn from_options(options: &Json) -> Result<Transport, String> {
        let mut transport = Transport::default();
        let ms = |key: &str, default: u64| -> Result<u64, String> {
            Ok(non_negative(options, key)?.map_or(default, |n| n.ceil() as u64))
        };
        transport.timeout_ms = ms("timeoutMs", DEFAULT_TIMEOUT_MS)?;
        transport.connect_timeout_ms = ms("connectTimeoutMs", DEFAULT_CONNECT_TIMEOUT_MS)?;
        transport.idle_timeout_ms = ms("idleTimeoutMs", DEFAULT_IDLE_TIMEOUT_MS)?;
        // pi-ai retries while the attempt count is below maxRetries: 1.5 allows two retries.
        transport.max_retries = non_negative(options, "maxRetries")?
            .map_or(0, |n| n.ceil().min(u32::MAX as f64) as u32);
        transport.max_retry_delay_ms = non_negative(options, "maxRetryDelayMs")?;
        let mut pem = String::new();
        if let Some(inline) = text(options, "caCertificates")? {
            check_pem(inline, "Option \"caCertificates\"")?;
            pem.push_str(inline);
            pem.push('\n');
        }
        if let Some(path) = text(options, "caCertificateFile")? {
            let contents = std::fs::read_to_string(path).map_err(|e| {
                format!("Cannot read the file of option \"caCertificateFile\" ({path}): {e}.")
            })?;
            check_pem(&contents, &format!("The file {path} (caCertificateFile)"))?;
            pem.push_str(&contents);
        }
        if !pem.is_empty() {
            transport.extra_ca_pem = Some(Arc::new(pem));
        }
        Ok(transport)
    }

    /// The largest server-requested retry delay that is waited for.
    pub fn retry_delay_cap_ms(&self) -> f64 {
        match self.max_retry_delay_ms {
            None => DEFAULT_MAX_RETRY_DELAY_MS,
            Some(cap) if cap > 0.0 => cap.min(RETRY_DELAY_CEILING_MS),
            Some(_) => RETRY_DELAY_CEILING_MS,
        }
    }

    pub fn timeout(&self) -> Option<Duration> {
        (self.timeout_ms > 0).then(|| Duration::from_millis(self.timeout_ms))
    }

    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.idle_timeout_ms > 0).then(|| Duration::from_millis(self.idle_timeout_ms))
    }
}

/// At least one PEM certificate in `pem`, else an error starting with `what`.
fn check_pem(pem: &str, what: &str) -> Result<(), String> {
    match crate::http_client::pem_certificates(pem) {
        Ok(certificates) if !certificates.is_empty() => Ok(()),
        _ => Err(format!(
            "{what} holds no PEM certificate (-----BEGIN CERTIFICATE----- ...)."
        )),
    }
}

/// The client for a request to `url` (shared: each client has its connection pool).
pub fn client(url: &str, transport: &Transport) -> Result<Client, String> {
    crate::http_client::shared(
        crate::http_client::is_loopback(url),
        transport.connect_timeout_ms,
        transport.extra_ca_pem.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn defaults_and_checked_values() {
        let defaults = Transport::from_options(&json!({})).unwrap();
        assert_eq!(defaults, Transport::default());
        assert_eq!(defaults.retry_delay_cap_ms(), 60_000.0);
        let set = Transport::from_options(&json!({"timeoutMs": 5, "connectTimeoutMs": 0,
            "idleTimeoutMs": 7.2, "maxRetries": 2, "maxRetryDelayMs": 0}))
        .unwrap();
        assert_eq!(
            (set.timeout_ms, set.connect_timeout_ms, set.idle_timeout_ms),
            (5, 0, 8)
        );
        assert_eq!(set.max_retries, 2);
        assert_eq!(set.retry_delay_cap_ms(), RETRY_DELAY_CEILING_MS);
        assert_eq!(
            Transport::from_options(&json!({"maxRetryDelayMs": 1e12}))
                .unwrap()
                .retry_delay_cap_ms(),
            RETRY_DELAY_CEILING_MS
        );
        assert_eq!(
            Transport::from_options(&json!({"idleTimeoutMs": -1})).unwrap_err(),
            "Option \"idleTimeoutMs\" must be a non-negative number."
        );
        assert_eq!(
            Transport::from_options(&json!({"maxRetries": "3"})).unwrap_err(),
            "Option \"maxRetries\" must be a non-negative number."
        );
    }

    #[test]
    fn ca_options_need_pem_certificates() {
        let err = Transport::from_options(&json!({"caCertificates": "not a cert"})).unwrap_err();
        assert!(
            err.starts_with("Option \"caCertificates\" holds no PEM"),
            "{err}"
        );
        let err = Transport::from_options(&json!({"caCertificateFile": "/nonexistent/ca.pem"}))
            .unwrap_err();
        assert!(
            err.starts_with(
                "Cannot read the file of option \"caCertificateFile\" (/nonexistent/ca.pem)"
            ),
            "{err}"
        );
    }
}

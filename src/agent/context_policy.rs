//! The agent's context settings (`compaction`, `retry`) and what they amount to for a model:
//! both are off unless enabled; compaction also needs the model's context window.

use crate::context::{CompactionSettings, RetrySettings};
use crate::json::Field;
use crate::json::{Json, JsonMap};

const COMPACTION_MEMBERS: [&str; 3] = ["enabled", "reserveTokens", "keepRecentTokens"];
const RETRY_MEMBERS: [&str; 4] = ["enabled", "maxRetries", "baseDelayMs", "maxDelayMs"];

fn check_members(option: &str, members: &JsonMap, known: &[&str]) -> Result<(), String> {
    match members.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "Unknown option \"{option}.{key}\" (known: {}).",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// Checks a `compaction` option object (unknown members and wrong types name the member).
pub(super) fn check_compaction(members: &JsonMap) -> Result<(), String> {
    check_members("compaction", members, &COMPACTION_MEMBERS)?;
    compaction_settings(members).map(drop)
}

/// Checks a `retry` option object.
pub(super) fn check_retry(members: &JsonMap) -> Result<(), String> {
    check_members("retry", members, &RETRY_MEMBERS)?;
    retry_settings(members).map(drop)
}

fn compaction_settings(members: &JsonMap) -> Result<CompactionSettings, String> {
    if members.is_empty() {
        return Ok(CompactionSettings::default());
    }
    CompactionSettings::default()
        .with_overrides(&Json::Object(members.clone()))
        .map_err(|error| format!("Option \"compaction\": {error}"))
}

fn retry_settings(members: &JsonMap) -> Result<RetrySettings, String> {
    if members.is_empty() {
        return Ok(RetrySettings::default());
    }
    // The sessions kit's (and pi's) name for the cap is `maxAgentDelayMs`.
    let mut renamed = members.clone();
    if let Some(cap) = renamed.shift_remove("maxDelayMs") {
        renamed.insert("maxAgentDelayMs".into(), cap);
    }
    RetrySettings::default()
        .with_overrides(&Json::Object(renamed))
        .map_err(|error| {
            format!(
                "Option \"retry\": {}",
                error.replace("maxAgentDelayMs", "maxDelayMs")
            )
        })
}

/// What the agent does about context for one model.
#[derive(Clone, Copy, Debug)]
pub(super) struct ContextPolicy {
    pub compaction: CompactionSettings,
    pub retry: RetrySettings,
    /// The model's `contextWindow` (0 when it has none).
    pub context_window: f64,
    /// The model's `maxTokens` (0 when it has none): a length stop below it is recoverable.
    pub max_tokens: f64,
    /// Compaction was asked for explicitly but the model has no window to measure against.
    pub compaction_needs_window: bool,
}

impl ContextPolicy {
    pub fn of(compaction: &JsonMap, retry: &JsonMap, model: &Json) -> ContextPolicy {
        let number = |key: &str| {
            model
                .field(key)
                .and_then(Json::as_f64)
                .filter(|n| n.is_finite() && *n > 0.0)
                .unwrap_or(0.0)
        };
        let context_window = number("contextWindow");
        let has_window = context_window > 0.0;
        let explicit = |members: &JsonMap| members.field("enabled").and_then(Json::as_bool);
        // Checked when set: a failure here cannot happen; the defaults stand in.
        let mut compaction_settings = compaction_settings(compaction).unwrap_or_default();
        let mut retry_settings = retry_settings(retry).unwrap_or_default();
        // Opt-in: the Agent's default behaviour is the agent loop's (the conformance kits pin
        // it, with models that have windows and errors that would be retried).
        compaction_settings.enabled = explicit(compaction) == Some(true) && has_window;
        retry_settings.enabled = explicit(retry) == Some(true);
        ContextPolicy {
            compaction: compaction_settings,
            retry: retry_settings,
            context_window,
            max_tokens: number("maxTokens"),
            compaction_needs_window: explicit(compaction) == Some(true) && !has_window,
        }
    }
}

/// Why a compaction runs (the events' `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CompactReason {
    Manual,
    Threshold,
    Overflow,
}

impl CompactReason {
    pub fn name(self) -> &'static str {
        match self {
            CompactReason::Manual => "manual",
            CompactReason::Threshold => "threshold",
            CompactReason::Overflow => "overflow",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    fn map(value: Json) -> JsonMap {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn enabled_on_request_and_compaction_only_with_a_window() {
        let none = JsonMap::new();
        let windowed = ContextPolicy::of(&none, &none, &json!({"contextWindow": 8000}));
        assert!(!windowed.compaction.enabled && !windowed.retry.enabled);
        assert!(!windowed.compaction_needs_window);
        let asked = map(json!({"enabled": true}));
        let windowed = ContextPolicy::of(&asked, &asked, &json!({"contextWindow": 8000}));
        assert!(windowed.compaction.enabled && windowed.retry.enabled);
        assert_eq!(windowed.context_window, 8000.0);
        let bare = ContextPolicy::of(&asked, &asked, &json!({"contextWindow": 0}));
        assert!(!bare.compaction.enabled && bare.compaction_needs_window);
        assert!(bare.retry.enabled, "retries need no window");
        let off = map(json!({"enabled": false}));
        let windowed = ContextPolicy::of(&off, &off, &json!({"contextWindow": 8000}));
        assert!(!windowed.compaction.enabled && !windowed.retry.enabled);
    }

    #[test]
    fn members_are_checked_by_name() {
        assert_eq!(
            check_compaction(&map(json!({"reserve": 1}))).unwrap_err(),
            "Unknown option \"compaction.reserve\" (known: enabled, reserveTokens, keepRecentTokens)."
        );
        let error = check_retry(&map(json!({"maxDelayMs": -1}))).unwrap_err();
        assert!(error.contains("\"maxDelayMs\""), "{error}");
        let error = check_compaction(&map(json!({"reserveTokens": "x"}))).unwrap_err();
        assert!(error.contains("\"reserveTokens\""), "{error}");
        let retry = retry_settings(&map(json!({"maxDelayMs": 5, "baseDelayMs": 1}))).unwrap();
        assert_eq!((retry.max_delay_ms, retry.base_delay_ms), (5, 1));
    }
}

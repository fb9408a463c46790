//! Did the request overflow the model's context window? (kit §4.7)
//!
//! Providers say so in their own words (about forty phrasings across hosted APIs, gateways and
//! local servers), or not at all: some accept an oversized prompt and answer anyway, or stop
//! at once for length. The text rules below are libagent's own, grouped by what the provider
//! is saying; the sessions kit holds the real texts they are checked against, near misses
//! included (rate limits that mention tokens, output-limit errors, a string-length error).

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

use crate::json::Json;

/// Texts that are about throttling even when they also mention prompts or tokens.
const THROTTLING: &[&str] = &[
    r"^(throttling error|service unavailable):", // AWS Bedrock's formatted non-overflow errors
    r"rate limit",
    r"too many requests",
];

/// The ways providers say the prompt did not fit, grouped by what they name.
const OVERFLOW: &[&str] = &[
    // The prompt or input itself is too long or too large.
    r"\b(prompt|input)( is)? too (long|large)\b",
    r"\bprompt exceeds (the )?max(imum)? length",
    r"request[_ ]too[_ ]large",
    // The context window, exceeded (in prose, as a code, or as an exception name).
    r"context[ _-]?window[ _-]*(is )?exceed",
    r"exceed(s|ed)? (the )?context[ _-]?window",
    // The context length: exceeded, a maximum, or less than the input.
    r"context[ _-]?length[ _-]*exceeded",
    r"\bmax(imum)? context length\b",
    r"(greater|longer) than the (model'?s )?context length",
    // A local server's context size.
    r"exceeds? (the )?available context size",
    r"configured context size is",
    r"exceed_context_size",
    // A count of input tokens over a limit, or input length limits.
    r"token count\b.{0,40}\bexceeds\b",
    r"\bmaximum prompt length\b",
    r"\bmaximum allowed input length\b",
    r"\brange of input length\b",
    r"reduce the length of the messages",
    r"too many tokens",
    r"token limit exceeded",
    r"exceeded (the )?(model )?token limit",
    // HTTP 413 (payload too large) only when the text starts with it: raw, or as libagent's
    // provider errors and others prefix it. A 413 further in is a byte count or an id.
    r"^(413(\s|:|$)|[\w -]+ api error \(413\):)",
];

/// Cerebras answers an oversized request with a bodiless 400 or 413.
const CEREBRAS_BODILESS: &str = r"^(400|413)\s*(status code\s*)?\(no body\)";

fn throttling() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| case_insensitive_set(THROTTLING))
}

fn overflow() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| case_insensitive_set(OVERFLOW))
}

fn cerebras_bodiless() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        regex::RegexBuilder::new(CEREBRAS_BODILESS)
            .case_insensitive(true)
            .build()
            .expect("the bodiless-overflow pattern compiles")
    })
}

pub(crate) fn case_insensitive_set(patterns: &[&str]) -> RegexSet {
    regex::RegexSetBuilder::new(patterns)
        .case_insensitive(true)
        .build()
        .expect("the classifier's patterns compile")
}

/// True when an error text from `provider` says the request did not fit the context window.
/// Throttling texts never count, whatever else they say.
pub fn is_overflow_text(error_message: &str, provider: &str) -> bool {
    if error_message.is_empty() || throttling().is_match(error_message) {
        return false;
    }
    overflow().is_match(error_message)
        || (provider == "cerebras" && cerebras_bodiless().is_match(error_message))
}

fn usage_number(message: &Json, key: &str) -> f64 {
    message
        .get("usage")
        .and_then(|u| u.get(key))
        .and_then(Json::as_f64)
        .unwrap_or(0.0)
}

fn stop_reason(message: &Json) -> &str {
    message
        .get("stopReason")
        .and_then(Json::as_str)
        .unwrap_or("")
}

/// True when an assistant message shows a context overflow: an error whose text says so
/// ([`is_overflow_text`]), or, when the window is known (`context_window` > 0), a silent
/// overflow: a successful stop whose input (`input + cacheRead`) exceeds the window, or a
/// length stop with no output whose input fills 99% of it.
pub fn is_context_overflow(message: &Json, context_window: Option<f64>) -> bool {
    let stop = stop_reason(message);
    if stop == "error" {
        let text = message
            .get("errorMessage")
            .and_then(Json::as_str)
            .unwrap_or("");
        let provider = message.get("provider").and_then(Json::as_str).unwrap_or("");
        if is_overflow_text(text, provider) {
            return true;
        }
    }
    let Some(window) = context_window.filter(|w| *w > 0.0) else {
        return false;
    };
    let input = usage_number(message, "input") + usage_number(message, "cacheRead");
    match stop {
        "stop" => input > window,
        "length" => usage_number(message, "output") == 0.0 && input >= window * 0.99,
        _ => false,
    }
}

/// True when a length stop came before the output the request asked for
/// (`desired_max_output`): the context left too little room, so compacting and retrying once
/// may let the answer finish.
pub fn is_recoverable_length(message: &Json, desired_max_output: f64) -> bool {
    stop_reason(message) == "length"
        && desired_max_output > 0.0
        && usage_number(message, "output") < desired_max_output
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn status_413_counts_only_at_the_start() {
        assert!(is_overflow_text("413", "x"));
        assert!(is_overflow_text("anthropic API error (413): too big", "x"));
        assert!(!is_overflow_text("4130 bytes", "x"));
        assert!(!is_overflow_text("upstream said 413", "x"));
    }

    #[test]
    fn throttling_wins_over_overflow_words() {
        assert!(!is_overflow_text(
            "Rate limit exceeded: too many tokens",
            "x"
        ));
        assert!(is_overflow_text("too many tokens", "x"));
    }

    #[test]
    fn silent_overflow_needs_a_window() {
        let message = json!({"stopReason": "stop", "usage": {"input": 10}});
        assert!(!is_context_overflow(&message, None));
        assert!(!is_context_overflow(&message, Some(0.0)));
        assert!(is_context_overflow(&message, Some(9.0)));
        // An error text with a window given still counts by its text.
        let error =
            json!({"stopReason": "error", "errorMessage": "prompt is too long", "usage": {}});
        assert!(is_context_overflow(&error, Some(100.0)));
    }
}

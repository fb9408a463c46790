//! Numbers pi-ai derives from the model and the transcript: the context-token estimate, max
//! tokens clamped to the context window, the reasoning level clamped to the model, thinking
//! budgets. Every length is counted in UTF-16 code units, as JavaScript's `.length`.

use std::borrow::Borrow;

use crate::json::{to_string, Json};
use crate::transcript::{content_text, get_system_message_text};

const CHARS_PER_TOKEN: f64 = 3.5;
const IMAGE_CHARS: f64 = 4800.0;
const CONTEXT_SAFETY_TOKENS: f64 = 4096.0;
const CONTEXT_SAFETY_RATIO: f64 = 0.15;
const MIN_OUTPUT_WITH_RATIO_MARGIN: f64 = 32768.0;
/// Tokens always left for the answer when a thinking budget shares the response ceiling.
pub(crate) const MIN_ANSWER_TOKENS: f64 = 1024.0;

/// JavaScript's `text.length`.
pub fn js_len(text: &str) -> f64 {
    text.encode_utf16().count() as f64
}

fn num(value: Option<&Json>) -> f64 {
    value.and_then(Json::as_f64).unwrap_or(0.0)
}

fn str_len(value: Option<&Json>) -> f64 {
    value.and_then(Json::as_str).map_or(0.0, js_len)
}

/// Characters of a user or tool-result content: text lengths, 4800 per other block.
fn content_chars(content: Option<&Json>) -> f64 {
    match content {
        Some(Json::String(text)) => js_len(text),
        Some(Json::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Json::as_str) {
                Some("text") => str_len(b.get("text")),
                _ => IMAGE_CHARS,
            })
            .sum(),
        _ => 0.0,
    }
}

fn tokens(chars: f64) -> f64 {
    (chars / CHARS_PER_TOKEN).ceil()
}

fn tools_tokens(tools: Option<&Json>) -> f64 {
    match tools {
        Some(Json::Array(list)) if !list.is_empty() => {
            tokens(js_len(&to_string(&Json::Array(list.clone()))))
        }
        _ => 0.0,
    }
}

/// pi-ai's `estimateMessageTokens`.
fn message_tokens(message: &Json) -> f64 {
    match message.get("role").and_then(Json::as_str) {
        Some("system") => {
            tokens(js_len(&get_system_message_text(message)))
                + tools_tokens(message.get("toolsAdded"))
                + tools_tokens(message.get("toolsRemoved"))
        }
        Some("user") | Some("toolResult") => tokens(content_chars(message.get("content"))),
        _ => {
            let blocks = message.get("content").and_then(Json::as_array);
            let chars =
                blocks
                    .into_iter()
                    .flatten()
                    .map(|b| match b.get("type").and_then(Json::as_str) {
                        Some("text") => str_len(b.get("text")),
                        Some("thinking") => str_len(b.get("thinking")),
                        _ => {
                            let arguments = b
                                .get("arguments")
                                .map_or(String::from("undefined"), to_string);
                            str_len(b.get("name")) + js_len(&arguments)
                        }
                    });
            tokens(chars.sum())
        }
    }
}

/// `calculateContextTokens`: `totalTokens`, or the sum of the parts when that is 0.
fn usage_tokens(usage: &Json) -> f64 {
    let total = num(usage.get("totalTokens"));
    if total != 0.0 && !total.is_nan() {
        return total;
    }
    ["input", "output", "cacheRead", "cacheWrite"]
        .iter()
        .map(|k| num(usage.get(*k)))
        .sum()
}

/// JavaScript's `Math.max` (NaN wins).
fn js_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// pi-ai's `estimateContextTokens`: the newest applicable assistant usage, plus estimates of
/// what follows it (or estimates of everything).
pub fn estimate_context_tokens<M: Borrow<Json>>(messages: &[M]) -> f64 {
    let mut latest = f64::NEG_INFINITY;
    let mut with_usage = None;
    for (i, message) in messages.iter().map(Borrow::borrow).enumerate() {
        let timestamp = message
            .get("timestamp")
            .and_then(Json::as_f64)
            .unwrap_or(f64::NAN);
        if message.get("role").and_then(Json::as_str) == Some("assistant") {
            let stop = message.get("stopReason").and_then(Json::as_str);
            let usage = message.get("usage").map_or(0.0, usage_tokens);
            if timestamp >= latest
                && stop != Some("aborted")
                && stop != Some("error")
                && usage > 0.0
            {
                with_usage = Some((i, usage));
            }
        }
        latest = js_max(latest, timestamp);
    }
    match with_usage {
        Some((index, usage)) => {
            usage
                + messages[index + 1..]
                    .iter()
                    .map(|m| message_tokens(m.borrow()))
                    .sum::<f64>()
        }
        None => messages.iter().map(|m| message_tokens(m.borrow())).sum(),
    }
}

/// `clampMaxTokensToContext(model, context, maxTokens)`.
pub fn clamp_max_tokens<M: Borrow<Json>>(model: &Json, messages: &[M], max_tokens: f64) -> f64 {
    let window = num(model.get("contextWindow"));
    if window <= 0.0 {
        return max_tokens.max(1.0);
    }
    let input = estimate_context_tokens(messages);
    let margin = CONTEXT_SAFETY_TOKENS.max((input * CONTEXT_SAFETY_RATIO).ceil());
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(window - input - CONTEXT_SAFETY_TOKENS);
    }
    max_tokens.min(room.max(1.0))
}

/// The max tokens of a request: `options.maxTokens ?? model.maxTokens`, clamped to the context.
pub fn max_tokens<M: Borrow<Json>>(model: &Json, messages: &[M], options: &Json) -> f64 {
    let requested = options
        .get("maxTokens")
        .and_then(Json::as_f64)
        .unwrap_or_else(|| num(model.get("maxTokens")));
    clamp_max_tokens(model, messages, requested)
}

const LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// `getSupportedThinkingLevels(model)`.
fn supported_levels(model: &Json) -> Vec<&'static str> {
    if !model.get("reasoning").is_some_and(truthy) {
        return vec!["off"];
    }
    let map = model.get("thinkingLevelMap");
    LEVELS
        .into_iter()
        .filter(|level| {
            let mapped = map.and_then(|m| m.as_object()).and_then(|m| m.get(*level));
            match mapped {
                Some(Json::Null) => false,
                mapped if matches!(*level, "xhigh" | "max") => mapped.is_some(),
                _ => true,
            }
        })
        .collect()
}

/// `clampThinkingLevel(model, level)`: the level if supported, else the next higher supported
/// one, else the next lower one.
pub fn clamp_level(model: &Json, level: &str) -> String {
    let supported = supported_levels(model);
    if supported.contains(&level) {
        return level.to_string();
    }
    let first = supported.first().copied().unwrap_or("off");
    let Some(requested) = LEVELS.iter().position(|l| *l == level) else {
        return first.to_string();
    };
    let higher = LEVELS[requested..].iter().find(|l| supported.contains(l));
    let lower = LEVELS[..requested]
        .iter()
        .rev()
        .find(|l| supported.contains(l));
    higher.or(lower).copied().unwrap_or(first).to_string()
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(value: &Json) -> bool {
    match value {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Json::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// The thinking budget of `level` (`xhigh`/`max` count as `high`): `thinkingBudgets[level]`, else
/// pi-ai's defaults.
pub fn thinking_budget(level: &str, budgets: Option<&Json>) -> Option<f64> {
    let level = if matches!(level, "xhigh" | "max") {
        "high"
    } else {
        level
    };
    if let Some(custom) = budgets.and_then(|b| b.get(level)).and_then(Json::as_f64) {
        return Some(custom);
    }
    match level {
        "minimal" => Some(1024.0),
        "low" => Some(2048.0),
        "medium" => Some(8192.0),
        "high" => Some(16384.0),
        _ => None,
    }
}

/// `contentText` of a message's content with `separator` (text blocks only).
pub fn text_of(content: Option<&Json>, separator: &str) -> String {
    content.map_or_else(String::new, |c| content_text(c, separator))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn levels_clamp_to_what_the_model_supports() {
        let plain = json!({"reasoning": false});
        assert_eq!(clamp_level(&plain, "high"), "off");
        let reasoning = json!({"reasoning": true});
        assert_eq!(clamp_level(&reasoning, "medium"), "medium");
        // xhigh/max exist only when mapped: the next lower level is used.
        assert_eq!(clamp_level(&reasoning, "xhigh"), "high");
        let mapped =
            json!({"reasoning": true, "thinkingLevelMap": {"xhigh": "max-effort", "low": null}});
        assert_eq!(clamp_level(&mapped, "xhigh"), "xhigh");
        // A level mapped to null is unsupported: the next higher one is taken.
        assert_eq!(clamp_level(&mapped, "low"), "medium");
        assert_eq!(clamp_level(&reasoning, "bogus"), "off");
    }

    #[test]
    fn max_tokens_leave_room_for_the_estimated_input() {
        let model = json!({"contextWindow": 128000, "maxTokens": 16384});
        let short = vec![json!({"role": "user", "content": "Hi", "timestamp": 1})];
        assert_eq!(max_tokens(&model, &short, &json!({})), 16384.0);
        // maxTokens = the window: clamped below it (window - input - 4096 when little room).
        let window = json!({"contextWindow": 32768, "maxTokens": 32768});
        assert_eq!(
            max_tokens(&window, &short, &json!({})),
            32768.0 - 1.0 - 4096.0
        );
        // An applicable assistant usage replaces the estimate of everything up to it.
        let with_usage = vec![
            json!({"role": "user", "content": "x".repeat(35), "timestamp": 1}),
            json!({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 2,
                "usage": {"totalTokens": 1000}}),
            json!({"role": "user", "content": "y".repeat(7), "timestamp": 3}),
        ];
        assert_eq!(estimate_context_tokens(&with_usage), 1002.0);
        // Lengths are UTF-16 units: one astral character counts 2.
        assert_eq!(js_len("a😀"), 3.0);
        assert_eq!(
            clamp_max_tokens(&json!({"contextWindow": 0}), &short, 0.0),
            1.0
        );
    }

    #[test]
    fn thinking_budgets_default_and_override() {
        assert_eq!(thinking_budget("medium", None), Some(8192.0));
        assert_eq!(thinking_budget("max", None), Some(16384.0));
        assert_eq!(
            thinking_budget("low", Some(&json!({"low": 500}))),
            Some(500.0)
        );
        assert_eq!(thinking_budget("off", None), None);
    }
}

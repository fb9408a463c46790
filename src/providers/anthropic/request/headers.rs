//! The anthropic-messages request headers: the beta list and the header sources merged the way
//! the Anthropic SDK's `buildHeaders` does (kit README §8.1, §8.4).

use crate::json::{is_js_whitespace, json, str_field, Json, JsonMap};

use super::super::super::transcript as tr;
use super::super::super::Call;
use super::{fallback_models, truthy_field, Compat, Thinking};

/// The Claude Code version an OAuth request names in its user agent.
const CLAUDE_CODE_VERSION: &str = "2.1.322";

const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const MESSAGE_THREADS_BETA: &str = "message-threads-2026-08-12";
const MID_CONVERSATION_OUTPUT_CONFIG_BETA: &str = "mid-conversation-output-config-2026-07-01";
const SERVER_SIDE_FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";
const THINKING_BINDING_CONTROLS_BETA: &str = "thinking-binding-controls-2026-08-01";

/// `getBetaFeatures`: a configured `anthropic-beta` header replaces the computed list.
pub(super) fn beta_features(
    call: &Call,
    compat: &Compat,
    tools: &[Json],
    thinking: &Thinking,
    oauth: bool,
    native_tool_changes: bool,
    message_threads: bool,
) -> Vec<String> {
    let mut configured: Option<&Json> = None;
    for headers in [call.model.get("headers"), call.options.get("headers")] {
        for (name, value) in headers.and_then(Json::as_object).into_iter().flatten() {
            if name.eq_ignore_ascii_case("anthropic-beta") {
                configured = Some(value);
            }
        }
    }
    let mut features: Vec<String> = Vec::new();
    let mut add = |feature: &str| {
        if !feature.is_empty() && !features.iter().any(|f| f == feature) {
            features.push(feature.to_string());
        }
    };
    match configured {
        Some(Json::Null) => {}
        Some(value) => {
            let text = match value {
                Json::String(s) => s.clone(),
                other => crate::json::to_string(other),
            };
            for feature in text.split(',') {
                add(feature.trim_matches(is_js_whitespace));
            }
        }
        None => {
            if oauth {
                add("claude-code-20250219");
                add("oauth-2025-04-20");
            }
            if !tools.is_empty() && !compat.eager_tool_input_streaming {
                add(FINE_GRAINED_TOOL_STREAMING_BETA);
            }
            if truthy_field(&call.model, "reasoning")
                && thinking.enabled
                && !compat.force_adaptive_thinking
            {
                add(INTERLEAVED_THINKING_BETA);
            }
            if fallback_models(call).is_some() {
                add(SERVER_SIDE_FALLBACK_BETA);
            }
            if compat.mid_convo_effort {
                add(MID_CONVERSATION_OUTPUT_CONFIG_BETA);
                add(THINKING_BINDING_CONTROLS_BETA);
            }
            if native_tool_changes {
                add(INLINE_TOOLS_BETA);
            }
            if message_threads {
                add(MESSAGE_THREADS_BETA);
            }
        }
    }
    features
}

/// Headers merged case-insensitively in order, later wins, `null` removes (the SDK's
/// `buildHeaders`). Names are kept lowercase.
#[derive(Default)]
struct HeaderSet(Vec<(String, String)>);

impl HeaderSet {
    fn set(&mut self, name: &str, value: &Json) {
        let lower = name.to_ascii_lowercase();
        let values: Vec<String> = match value {
            Json::Null => {
                self.0.retain(|(n, _)| *n != lower);
                return;
            }
            Json::Array(items) => items.iter().filter_map(header_text).collect(),
            other => header_text(other).into_iter().collect(),
        };
        if values.is_empty() {
            return;
        }
        let value = values.join(", ");
        match self.0.iter_mut().find(|(n, _)| *n == lower) {
            Some(slot) => slot.1 = value,
            None => self.0.push((lower, value)),
        }
    }

    fn set_str(&mut self, name: &str, value: &str) {
        self.set(name, &Json::String(value.to_string()));
    }

    /// An object of headers (`Object.assign` of several sources was flattened by the caller).
    fn merge(&mut self, headers: &JsonMap) {
        for (name, value) in headers {
            self.set(name, value);
        }
    }
}

/// A header value as `Headers.set` would store it (`String(value)`, trimmed).
fn header_text(value: &Json) -> Option<String> {
    let text = match value {
        Json::Null => return None,
        Json::String(s) => s.clone(),
        other => crate::json::to_string(other),
    };
    Some(text.trim_matches([' ', '\t', '\n', '\r']).to_string())
}

/// pi-ai's `mergeHeaders` (`Object.assign`: exact-name keys overwrite in place).
fn merge_sources(sources: &[Option<&Json>]) -> JsonMap {
    let mut merged = JsonMap::new();
    for source in sources.iter().flatten() {
        if let Some(map) = source.as_object() {
            for (name, value) in map {
                merged.insert(name.clone(), value.clone());
            }
        }
    }
    merged
}

/// `getIdentityHeaders`: `User-Agent` and provider attribution.
fn identity_headers(call: &Call) -> Json {
    let mut headers = JsonMap::new();
    headers.insert(
        "User-Agent".into(),
        super::super::super::user_agent(call).into(),
    );
    for (name, value) in super::super::super::attribution_headers(call) {
        headers.insert(name, value.into());
    }
    Json::Object(headers)
}

/// The request headers: the SDK's defaults and auth, pi-ai's default headers (identity, API
/// defaults, session affinity, model and option headers), `content-type`, then `anthropic-beta`.
#[allow(clippy::too_many_arguments)]
pub(super) fn headers(
    call: &Call,
    compat: &Compat,
    api_key: Option<&str>,
    oauth: bool,
    session_id: Option<&str>,
    betas: &[String],
    messages: &[&Json],
) -> Vec<(String, String)> {
    let mut set = HeaderSet::default();
    set.set_str("accept", "application/json");
    set.set_str("user-agent", "Anthropic/JS 0.129.0");
    set.set_str("anthropic-dangerous-direct-browser-access", "true");
    set.set_str("anthropic-version", "2023-06-01");
    let copilot = call.model_str("provider") == "github-copilot";
    let model_headers = call.model.get("headers");
    let option_headers = call.options.get("headers");
    let api_defaults = json!({"accept": "application/json",
        "anthropic-dangerous-direct-browser-access": "true"});
    let defaults = if copilot {
        if let Some(key) = api_key {
            set.set_str("authorization", &format!("Bearer {key}"));
        }
        let identity = identity_headers(call);
        let dynamic = copilot_headers(messages);
        merge_sources(&[
            Some(&identity),
            Some(&api_defaults),
            model_headers,
            Some(&dynamic),
            option_headers,
        ])
    } else if oauth {
        if let Some(key) = api_key {
            set.set_str("authorization", &format!("Bearer {key}"));
        }
        let claude_code = json!({"accept": "application/json",
            "anthropic-dangerous-direct-browser-access": "true",
            "user-agent": format!("claude-cli/{CLAUDE_CODE_VERSION}"),
            "x-app": "cli"});
        merge_sources(&[Some(&claude_code), model_headers, option_headers])
    } else {
        if let Some(key) = api_key {
            set.set_str("x-api-key", key);
        }
        let identity = identity_headers(call);
        let mut affinity = JsonMap::new();
        if let Some(session) = session_id.filter(|s| !s.is_empty()) {
            if compat.session_affinity {
                let name = if compat.openrouter_affinity_format {
                    "x-session-id"
                } else {
                    "x-session-affinity"
                };
                affinity.insert(name.into(), session.into());
            }
        }
        let affinity = Json::Object(affinity);
        merge_sources(&[
            Some(&identity),
            Some(&api_defaults),
            Some(&affinity),
            model_headers,
            option_headers,
        ])
    };
    set.merge(&defaults);
    set.set_str("content-type", "application/json");
    if !betas.is_empty() {
        set.set_str("anthropic-beta", &betas.join(","));
    }
    set.0
}

/// `buildCopilotDynamicHeaders`.
fn copilot_headers(messages: &[&Json]) -> Json {
    let initiator = match messages.last() {
        Some(last) if !tr::is_role(last, "user") => "agent",
        _ => "user",
    };
    let has_images = messages.iter().any(|m| {
        (tr::is_role(m, "user") || tr::is_role(m, "toolResult"))
            && m.get("content")
                .and_then(Json::as_array)
                .is_some_and(|c| c.iter().any(|b| str_field(b, "type") == Some("image")))
    });
    let mut headers = json!({"X-Initiator": initiator, "Openai-Intent": "conversation-edits"});
    if has_images {
        headers["Copilot-Vision-Request"] = "true".into();
    }
    headers
}

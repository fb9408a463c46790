//! `openai-completions`: pi-ai 1.6.0's Chat Completions provider (OpenAI, vLLM, llama.cpp,
//! Ollama, LM Studio, OpenRouter, Groq, ...). Request mapping per the kit README §8.2, stream
//! mapping per §8.3, errors per §8.6. `request` builds the HTTP request from the transcript;
//! `response` maps the server-sent chunks onto the stream.

pub(super) mod request;
mod response;

use super::output::Output;
use super::{require_api_key, Call};
use crate::json::Json;
use crate::stream::StreamSender;
use request::build_request;
pub(super) use request::HeaderList;
#[cfg(any(test, feature = "fuzzing"))]
pub(super) use response::read_body;
use response::run;

/// The delta fields reasoning text streams in (first non-empty wins), also replayed by name.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// The compatibility settings pi-ai detects from the provider and base URL, overridden by
/// `model.compat` (only the ones this port acts on).
struct Compat {
    supports_store: bool,
    supports_developer_role: bool,
    supports_reasoning_effort: bool,
    supports_usage_in_streaming: bool,
    supports_finish_reason: bool,
    max_tokens_field: String,
    requires_tool_result_name: bool,
    requires_assistant_after_tool_result: bool,
    requires_non_null_assistant_content: bool,
    requires_tools_with_tool_history: bool,
    requires_thinking_as_text: bool,
    requires_reasoning_content_on_assistant: bool,
    thinking_format: String,
    supports_strict_mode: bool,
    mid_convo_system_messages: bool,
    /// Tools added mid-conversation can be sent in place (with mid-conversation system messages).
    mid_convo_tool_additions: bool,
    send_session_affinity_headers: bool,
    session_affinity_format: String,
    supports_long_cache_retention: bool,
    prompt_cache_key_mode: String,
    /// `"anthropic"`: Anthropic-style `cache_control` marks (OpenRouter's `anthropic/` models).
    cache_control_format: Option<String>,
}

fn detect_compat(call: &Call) -> Compat {
    let provider = call.model_str("provider");
    let url = call.model_str("baseUrl");
    let has = |s: &str| url.contains(s);
    let zai =
        matches!(provider, "zai" | "zai-coding-cn") || has("api.z.ai") || has("open.bigmodel.cn");
    let together = provider == "together" || has("api.together.ai") || has("api.together.xyz");
    let moonshot = matches!(provider, "moonshotai" | "moonshotai-cn") || has("api.moonshot.");
    let openrouter = provider == "openrouter" || has("openrouter.ai");
    let workers_ai = provider == "cloudflare-workers-ai" || has("api.cloudflare.com");
    let ai_gateway = provider == "cloudflare-ai-gateway" || has("gateway.ai.cloudflare.com");
    let nvidia = provider == "nvidia" || has("integrate.api.nvidia.com");
    let ant_ling = provider == "ant-ling" || has("api.ant-ling.com");
    let cerebras = provider == "cerebras" || has("cerebras.ai");
    let deepseek = provider == "deepseek" || url.to_lowercase().contains("deepseek.com");
    let grok = provider == "xai" || has("api.x.ai");
    let non_standard = nvidia
        || cerebras
        || grok
        || together
        || has("chutes.ai")
        || deepseek
        || zai
        || moonshot
        || provider == "opencode"
        || has("opencode.ai")
        || workers_ai
        || ai_gateway
        || ant_ling;
    let use_max_tokens = has("chutes.ai")
        || deepseek
        || moonshot
        || ai_gateway
        || together
        || nvidia
        || ant_ling
        || zai;
    let thinking_format = if deepseek {
        "deepseek"
    } else if zai {
        "zai"
    } else if together {
        "together"
    } else if ant_ling {
        "ant-ling"
    } else if openrouter {
        "openrouter"
    } else {
        "openai"
    };
    let flag =
        |key: &str, detected: bool| call.compat(key).and_then(Json::as_bool).unwrap_or(detected);
    let text = |key: &str, detected: &str| {
        call.compat(key)
            .and_then(Json::as_str)
            .unwrap_or(detected)
            .to_string()
    };
    Compat {
        supports_store: flag("supportsStore", !non_standard),
        supports_developer_role: flag(
            "supportsDeveloperRole",
            provider == "openai" || has("api.openai.com"),
        ),
        supports_reasoning_effort: flag(
            "supportsReasoningEffort",
            !grok && !zai && !moonshot && !together && !ai_gateway && !nvidia && !ant_ling,
        ),
        supports_usage_in_streaming: flag("supportsUsageInStreaming", true),
        supports_finish_reason: flag("supportsFinishReason", true),
        max_tokens_field: text(
            "maxTokensField",
            if use_max_tokens {
                "max_tokens"
            } else {
                "max_completion_tokens"
            },
        ),
        requires_tool_result_name: flag("requiresToolResultName", false),
        requires_assistant_after_tool_result: flag("requiresAssistantAfterToolResult", false),
        requires_non_null_assistant_content: flag("requiresNonNullAssistantContent", false),
        requires_tools_with_tool_history: flag("requiresToolsWithToolHistory", false),
        requires_thinking_as_text: flag("requiresThinkingAsText", false),
        requires_reasoning_content_on_assistant: flag(
            "requiresReasoningContentOnAssistantMessages",
            deepseek,
        ),
        thinking_format: text("thinkingFormat", thinking_format),
        supports_strict_mode: flag("supportsStrictMode", false),
        mid_convo_system_messages: flag("supportsMidConvoSystemMessages", false),
        mid_convo_tool_additions: flag("supportsMidConvoToolAdditions", false),
        send_session_affinity_headers: flag("sendSessionAffinityHeaders", openrouter),
        session_affinity_format: text(
            "sessionAffinityFormat",
            if openrouter { "openrouter" } else { "openai" },
        ),
        supports_long_cache_retention: flag(
            "supportsLongCacheRetention",
            !(together || workers_ai || ai_gateway || nvidia || ant_ling),
        ),
        prompt_cache_key_mode: text("promptCacheKeyMode", "auto"),
        cache_control_format: call
            .compat("cacheControlFormat")
            .and_then(Json::as_str)
            .map(str::to_string)
            .or_else(|| {
                let anthropic =
                    provider == "openrouter" && call.model_str("id").starts_with("anthropic/");
                anthropic.then(|| "anthropic".to_string())
            }),
    }
}

/// Checks the key, builds the request and starts the task.
pub fn start(call: Call, sender: &StreamSender) -> Result<(), String> {
    require_api_key(&call, &["authorization", "cf-aig-authorization"])?;
    let compat = detect_compat(&call);
    let request = build_request(&call, &compat);
    let out = Output::new(sender.clone(), &call.model);
    crate::runtime::spawn(async move {
        let _ = run(call, compat, request, out).await;
    });
    Ok(())
}

/// A valid OpenRouter `reasoning_details` entry (read from the stream and from replayed signatures).
fn is_reasoning_detail(detail: &Json) -> bool {
    let Some(map) = detail.as_object() else {
        return false;
    };
    let optional = |key: &str, ok: fn(&Json) -> bool| map.get(key).is_none_or(ok);
    let common = optional("id", |v| v.is_null() || v.is_string())
        && optional("format", Json::is_string)
        && optional("index", Json::is_number);
    common
        && match map.get("type").and_then(Json::as_str) {
            Some("reasoning.summary") => map.get("summary").is_some_and(Json::is_string),
            Some("reasoning.encrypted") => map.get("data").is_some_and(Json::is_string),
            Some("reasoning.text") => {
                map.get("text").is_some_and(Json::is_string)
                    && optional("signature", |v| v.is_null() || v.is_string())
            }
            _ => false,
        }
}

#[cfg(test)]
mod tests;

//! `openai-responses`: pi-ai 1.6.0's OpenAI Responses provider (OpenAI's reasoning models with
//! encrypted reasoning replayed between turns, and hosts speaking the same API). Request mapping
//! per the kit README §8.8, stream mapping per §8.9, error texts per §8.12. `request` builds the
//! HTTP request from the transcript; `response` maps the server-sent events onto the stream.

mod grammar;
mod request;
mod response;
#[cfg(any(test, feature = "fuzzing"))]
pub(super) use response::read_body;

use super::output::Output;
use super::{require_api_key, Call};
use crate::json::Json;
use crate::stream::StreamSender;

/// Providers whose `call|item` tool-call ids keep both parts when replayed (pi-ai's list).
const ITEM_ID_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];

/// The compatibility settings pi-ai reads for this API, from `model.compat` (only the ones this
/// port acts on).
struct Compat {
    supports_developer_role: bool,
    supports_mid_convo_system_messages: bool,
    /// `"openrouter"` (`x-session-id`) or `"openai"` (`session-id` + `x-client-request-id`).
    session_affinity_format: String,
    prompt_cache_key_mode: String,
    supports_long_cache_retention: bool,
    supports_strict_mode: bool,
    supports_grammar_tools: bool,
    supports_explicit_prompt_cache_mode: bool,
    supports_max_output_tokens: bool,
    /// Tools added mid-conversation are loaded through client tool-search items.
    supports_tool_search: bool,
    /// The thinking level travels in `configuration_update` items.
    supports_mid_convo_effort: bool,
}

fn detect_compat(call: &Call) -> Compat {
    let flag =
        |key: &str, default: bool| call.compat(key).and_then(Json::as_bool).unwrap_or(default);
    let text = |key: &str, default: &str| {
        call.compat(key)
            .and_then(Json::as_str)
            .unwrap_or(default)
            .to_string()
    };
    let openrouter = call.model_str("provider") == "openrouter"
        || call.model_str("baseUrl").contains("openrouter.ai");
    Compat {
        supports_developer_role: flag("supportsDeveloperRole", true),
        supports_mid_convo_system_messages: flag("supportsMidConvoSystemMessages", false),
        session_affinity_format: text(
            "sessionAffinityFormat",
            if openrouter { "openrouter" } else { "openai" },
        ),
        prompt_cache_key_mode: text("promptCacheKeyMode", "auto"),
        supports_long_cache_retention: flag("supportsLongCacheRetention", true),
        supports_strict_mode: flag("supportsStrictMode", false),
        supports_grammar_tools: flag("supportsOpenAIGrammarTools", false),
        supports_explicit_prompt_cache_mode: flag("supportsExplicitPromptCacheMode", false),
        supports_max_output_tokens: flag("supportsMaxOutputTokens", true),
        supports_tool_search: flag("supportsToolSearch", false),
        supports_mid_convo_effort: flag("supportsMidConvoEffort", false),
    }
}

/// Checks the key, builds the request and starts the task.
pub fn start(call: Call, sender: &StreamSender) -> Result<(), String> {
    require_api_key(&call, &["authorization", "cf-aig-authorization"])?;
    let compat = detect_compat(&call);
    let request = request::build_request(&call, &compat);
    let mut out = Output::new(sender.clone(), &call.model);
    if let Some(level) = request::configuration_effort(&call, &compat) {
        out.preset("providerThinkingLevel", level);
    }
    crate::runtime::spawn(async move {
        let _ = response::run(call, request, out).await;
    });
    Ok(())
}

#[cfg(test)]
mod tests;

//! `openai-completions`: pi-ai 1.6.0's Chat Completions provider (OpenAI, vLLM, llama.cpp,
//! Ollama, LM Studio, OpenRouter, Groq, ...). Request mapping per the kit README §8.2, stream
//! mapping per §8.3, errors per §8.6.

use std::collections::HashMap;

use super::http::{self, Chunk, Failure, HttpRequest};
use super::limits::{clamp_level, js_len, max_tokens, text_of, truthy};
use super::output::{BlockKind, Output, Pushed, Usage};
use super::sse::{SseEvent, SseParser};
use super::transcript::{is_role, resolve, tools, transform};
use super::{require_api_key, Call};
use crate::args::ArgumentStream;
use crate::json::{json, number, to_string, Json, JsonMap};
use crate::stream::StreamSender;
use crate::transcript::get_system_message_text;

/// The SDK's text for an SSE event whose data is not JSON.
const MALFORMED: &str = "Error reading response: malformed server-sent event JSON.";
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

/// `PI_CACHE_RETENTION=long` (options.env or the process) makes `long` the default.
pub(crate) fn cache_retention(call: &Call) -> String {
    if let Some(retention) = call
        .option("cacheRetention")
        .and_then(Json::as_str)
        .filter(|r| !r.is_empty())
    {
        return retention.to_string();
    }
    match super::env::value("PI_CACHE_RETENTION", call.option("env")) {
        Some(v) if v == "long" => "long".into(),
        _ => "short".into(),
    }
}

fn build_request(call: &Call, compat: &Compat) -> HttpRequest {
    let retention = cache_retention(call);
    let session = call
        .option("sessionId")
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty());
    let cache_session = session.filter(|_| retention != "none");
    // Headers: SDK defaults, identity attribution, model headers, session affinity, options.
    let mut headers = HeaderList::default();
    headers.set("accept", Some("application/json".into()));
    headers.set(
        "authorization",
        call.api_key.as_ref().map(|k| format!("Bearer {k}")),
    );
    headers.set("user-agent", Some(super::user_agent(call)));
    for (name, value) in super::attribution_headers(call) {
        headers.set(&name, Some(value));
    }
    headers.merge(call.model.get("headers"));
    if let Some(session) = cache_session.filter(|_| compat.send_session_affinity_headers) {
        if compat.session_affinity_format == "openrouter" {
            headers.set("x-session-id", Some(session.into()));
        } else {
            if compat.session_affinity_format == "openai" {
                headers.set("session_id", Some(session.into()));
            }
            headers.set("x-client-request-id", Some(session.into()));
            headers.set("x-session-affinity", Some(session.into()));
        }
    }
    headers.merge(call.option("headers"));
    headers.set("content-type", Some("application/json".into()));
    let base = call.model_str("baseUrl").trim_end_matches('/');
    HttpRequest {
        url: format!("{base}/chat/completions"),
        headers: headers.into_vec(),
        body: to_string(&build_body(call, compat, &retention)),
        transport: call.transport.clone(),
    }
}

/// Headers by lowercase name in first-set order; a later value replaces, `null` removes.
#[derive(Default)]
pub(crate) struct HeaderList(Vec<(String, String)>);

impl HeaderList {
    pub fn set(&mut self, name: &str, value: Option<String>) {
        let lower = name.to_ascii_lowercase();
        self.0.retain(|(n, _)| n.to_ascii_lowercase() != lower);
        if let Some(value) = value {
            self.0.push((name.to_string(), value));
        }
    }

    /// Merges a JSON object of headers (strings set, `null` removes).
    pub fn merge(&mut self, headers: Option<&Json>) {
        for (name, value) in headers.and_then(Json::as_object).into_iter().flatten() {
            match value {
                Json::String(v) => self.set(name, Some(v.clone())),
                Json::Null => self.set(name, None),
                _ => {}
            }
        }
    }

    pub fn into_vec(self) -> Vec<(String, String)> {
        self.0
    }
}

fn build_body(call: &Call, compat: &Compat, retention: &str) -> Json {
    let messages = resolve(&call.messages, compat.mid_convo_system_messages);
    let mut body = JsonMap::new();
    body.insert(
        "model".into(),
        call.model.get("id").cloned().unwrap_or(Json::Null),
    );
    body.insert(
        "messages".into(),
        Json::Array(convert_messages(call, compat, &messages)),
    );
    body.insert("stream".into(), true.into());
    let session = call.option("sessionId").and_then(Json::as_str);
    let prompt_cache_key = compat.prompt_cache_key_mode == "enabled"
        || (compat.prompt_cache_key_mode == "auto"
            && (call.model_str("baseUrl").contains("api.openai.com")
                || (retention == "long" && compat.supports_long_cache_retention)));
    if let Some(session) = session.filter(|_| retention != "none" && prompt_cache_key) {
        body.insert(
            "prompt_cache_key".into(),
            session.chars().take(64).collect::<String>().into(),
        );
    }
    if retention == "long" && compat.supports_long_cache_retention {
        body.insert("prompt_cache_retention".into(), "24h".into());
    }
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), false.into());
    }
    let max = max_tokens(&call.model, &call.messages, &call.options);
    if max != 0.0 && !max.is_nan() {
        body.insert(compat.max_tokens_field.clone(), number(max));
    }
    if let Some(temperature) = call.option("temperature") {
        body.insert("temperature".into(), temperature.clone());
    }
    let current_tools = tools(&messages);
    if !current_tools.is_empty() {
        let converted = current_tools
            .iter()
            .map(|t| convert_tool(t, compat))
            .collect();
        body.insert("tools".into(), Json::Array(converted));
    } else if compat.requires_tools_with_tool_history && has_tool_history(&call.messages) {
        body.insert("tools".into(), Json::Array(Vec::new()));
    }
    if compat.cache_control_format.as_deref() == Some("anthropic") && retention != "none" {
        let mut mark = json!({"type": "ephemeral"});
        if retention == "long" && compat.supports_long_cache_retention {
            mark["ttl"] = "1h".into();
        }
        apply_cache_control(&mut body, &mark);
    }
    if let Some(choice) = call.option("toolChoice").filter(|c| truthy(c)) {
        body.insert("tool_choice".into(), choice.clone());
    }
    if let Some(priority) = call.compat("vllmPriority") {
        body.insert("priority".into(), priority.clone());
    }
    add_reasoning(call, compat, &mut body);
    if let Some(routing) = call.compat("openRouterRouting") {
        body.insert("provider".into(), routing.clone());
    }
    Json::Object(body)
}

/// Marks the system prompt, the last tool and the last conversation message for caching.
fn apply_cache_control(body: &mut JsonMap, mark: &Json) {
    let role = |m: &Json| {
        m.get("role")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Some(Json::Array(messages)) = body.get_mut("messages") {
        if let Some(system) = messages
            .iter_mut()
            .find(|m| matches!(role(m).as_str(), "system" | "developer"))
        {
            mark_text(system, mark);
        }
        for message in messages.iter_mut().rev() {
            if matches!(role(message).as_str(), "user" | "assistant" | "tool")
                && mark_text(message, mark)
            {
                break;
            }
        }
    }
    if let Some(Json::Array(tools)) = body.get_mut("tools") {
        if let Some(Json::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), mark.clone());
        }
    }
}

/// Puts `mark` on the message's last text part (a string content becomes one text part).
fn mark_text(message: &mut Json, mark: &Json) -> bool {
    match message.get_mut("content") {
        Some(content @ Json::String(_)) => {
            let text = content.as_str().unwrap_or("").to_string();
            if text.is_empty() {
                return false;
            }
            *content = json!([{"type": "text", "text": text, "cache_control": mark.clone()}]);
            true
        }
        Some(Json::Array(parts)) => {
            match parts.iter_mut().rev().find(|p| block_type(p) == "text") {
                Some(Json::Object(part)) => {
                    part.insert("cache_control".into(), mark.clone());
                    true
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// The clamped reasoning level, `None` for off.
fn reasoning_effort(call: &Call) -> Option<String> {
    let requested = call
        .option("reasoning")
        .and_then(Json::as_str)
        .filter(|r| !r.is_empty())?;
    Some(clamp_level(&call.model, requested)).filter(|level| level != "off")
}

/// `model.thinkingLevelMap[level]` (a string, `null`, or absent).
fn mapped_level<'a>(call: &'a Call, level: &str) -> Option<&'a Json> {
    call.model
        .get("thinkingLevelMap")
        .and_then(|m| m.get(level))
}

fn mapped_or(call: &Call, level: &str) -> Json {
    match mapped_level(call, level) {
        Some(v) if !v.is_null() => v.clone(),
        _ => Json::String(level.to_string()),
    }
}

fn add_reasoning(call: &Call, compat: &Compat, body: &mut JsonMap) {
    let reasoning = call.model.get("reasoning").is_some_and(truthy);
    let effort = reasoning_effort(call);
    let off_mapping = mapped_level(call, "off");
    match compat.thinking_format.as_str() {
        "zai" if reasoning => {
            let thinking = match &effort {
                Some(_) => json!({"type": "enabled", "clear_thinking": false}),
                None => json!({"type": "disabled"}),
            };
            body.insert("thinking".into(), thinking);
            if let (Some(effort), true) = (&effort, compat.supports_reasoning_effort) {
                let mapped = match mapped_level(call, effort) {
                    None => Some(Json::String(effort.clone())),
                    Some(v) => Some(v.clone()),
                };
                if let Some(v @ Json::String(_)) = mapped {
                    body.insert("reasoning_effort".into(), v);
                }
            }
        }
        "qwen" if reasoning => {
            body.insert("enable_thinking".into(), effort.is_some().into());
            if let (Some(effort), true) = (&effort, compat.supports_reasoning_effort) {
                if let v @ Json::String(_) = mapped_or(call, effort) {
                    body.insert("reasoning_effort".into(), v);
                }
            }
        }
        "qwen-chat-template" if reasoning => {
            body.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
            );
        }
        "deepseek" if reasoning => {
            if effort.is_some() {
                body.insert("thinking".into(), json!({"type": "enabled"}));
            } else if !matches!(off_mapping, Some(Json::Null)) {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
            if let (Some(effort), true) = (&effort, compat.supports_reasoning_effort) {
                body.insert("reasoning_effort".into(), mapped_or(call, effort));
            }
        }
        "openrouter" if reasoning => {
            if let Some(effort) = &effort {
                body.insert(
                    "reasoning".into(),
                    json!({"effort": mapped_or(call, effort)}),
                );
            } else if !matches!(off_mapping, Some(Json::Null)) {
                let off = off_mapping.cloned().unwrap_or_else(|| "none".into());
                body.insert("reasoning".into(), json!({"effort": off}));
            }
        }
        "together" if reasoning => {
            body.insert("reasoning".into(), json!({"enabled": effort.is_some()}));
            if let (Some(effort), true) = (&effort, compat.supports_reasoning_effort) {
                body.insert("reasoning_effort".into(), mapped_or(call, effort));
            }
        }
        "string-thinking" if reasoning => {
            if let Some(effort) = &effort {
                body.insert("thinking".into(), mapped_or(call, effort));
            } else if !matches!(off_mapping, Some(Json::Null)) {
                body.insert(
                    "thinking".into(),
                    off_mapping.cloned().unwrap_or_else(|| "none".into()),
                );
            }
        }
        "ant-ling" if reasoning => {
            if let Some(v @ Json::String(_)) = effort.as_deref().and_then(|e| mapped_level(call, e))
            {
                body.insert("reasoning".into(), json!({"effort": v}));
            }
        }
        _ => {
            if reasoning && compat.supports_reasoning_effort {
                match &effort {
                    Some(effort) => {
                        body.insert("reasoning_effort".into(), mapped_or(call, effort));
                    }
                    None => {
                        if let Some(off @ Json::String(_)) = off_mapping {
                            body.insert("reasoning_effort".into(), off.clone());
                        }
                    }
                }
            }
        }
    }
}

fn has_tool_history(messages: &[Json]) -> bool {
    messages.iter().any(|m| {
        is_role(m, "toolResult")
            || (is_role(m, "assistant")
                && m.get("content")
                    .and_then(Json::as_array)
                    .is_some_and(|c| c.iter().any(|b| block_type(b) == "toolCall")))
    })
}

fn convert_tool(tool: &Json, compat: &Compat) -> Json {
    let mut function = JsonMap::new();
    function.insert(
        "name".into(),
        tool.get("name").cloned().unwrap_or(Json::Null),
    );
    if let Some(description) = tool.get("description") {
        function.insert("description".into(), description.clone());
    }
    if let Some(parameters) = tool.get("parameters") {
        function.insert("parameters".into(), parameters.clone());
    }
    if compat.supports_strict_mode {
        function.insert("strict".into(), false.into());
    }
    json!({"type": "function", "function": Json::Object(function)})
}

fn block_type(block: &Json) -> &str {
    block.get("type").and_then(Json::as_str).unwrap_or("")
}

/// Tool-call ids from other providers: `call|item` ids become `call_item` (or a hashed 40-char
/// form), OpenAI's own are cut to 40 characters.
fn normalize_id_openai(id: &str) -> String {
    normalize_id(id, true)
}

fn normalize_id_other(id: &str) -> String {
    normalize_id(id, false)
}

fn normalize_id(id: &str, provider_openai: bool) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    if let Some((call_id, item_id)) = id.split_once('|') {
        let (call_id, item_id) = (clean(call_id), clean(item_id));
        let combined = if item_id.is_empty() {
            call_id.clone()
        } else {
            format!("{call_id}_{item_id}")
        };
        if js_len(&combined) <= 40.0 {
            return combined;
        }
        let hash = short_hash(id);
        let keep = 40usize.saturating_sub(hash.len() + 1).max(1);
        let prefix: String = call_id.chars().take(keep).collect();
        return format!("{prefix}_{hash}");
    }
    if provider_openai && js_len(id) > 40.0 {
        return id.chars().take(40).collect();
    }
    id.to_string()
}

/// An 8-character hex digest (FNV-1a; pi-ai's own hash is not reproduced, see README).
fn short_hash(text: &str) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("{hash:08x}")
}

fn image_url(block: &Json) -> Json {
    let mime = block.get("mimeType").and_then(Json::as_str).unwrap_or("");
    let data = block.get("data").and_then(Json::as_str).unwrap_or("");
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

fn convert_messages(call: &Call, compat: &Compat, messages: &[Json]) -> Vec<Json> {
    let normalize = if call.model_str("provider") == "openai" {
        normalize_id_openai
    } else {
        normalize_id_other
    };
    let transformed = transform(messages, &call.model, Some(normalize));
    let supports_images = call
        .model
        .get("input")
        .and_then(Json::as_array)
        .is_some_and(|i| i.iter().any(|x| x.as_str() == Some("image")));
    let reasoning_model = call.model.get("reasoning").is_some_and(truthy);
    let instruction_role = if reasoning_model && compat.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    let mut out = Vec::new();
    let mut last_role = String::new();
    let mut i = 0;
    while i < transformed.len() {
        let message = &transformed[i];
        let role = message.get("role").and_then(Json::as_str).unwrap_or("");
        if compat.requires_assistant_after_tool_result
            && last_role == "toolResult"
            && role == "user"
        {
            out.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
        }
        match role {
            "system" => {
                let text = get_system_message_text(message);
                if !text.is_empty() {
                    out.push(json!({"role": instruction_role, "content": text}));
                }
            }
            "user" => match message.get("content") {
                Some(Json::String(text)) => out.push(json!({"role": "user", "content": text})),
                other => {
                    let content: Vec<Json> = other
                        .and_then(Json::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|block| match block_type(block) {
                            "text" => {
                                let text = block.get("text").and_then(Json::as_str).unwrap_or("");
                                (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
                            }
                            _ => Some(image_url(block)),
                        })
                        .collect();
                    if content.is_empty() {
                        i += 1;
                        continue;
                    }
                    out.push(json!({"role": "user", "content": content}));
                }
            },
            "assistant" => {
                if let Some(converted) = convert_assistant(call, compat, message) {
                    out.push(converted);
                } else {
                    i += 1;
                    continue;
                }
            }
            "toolResult" => {
                let mut images = Vec::new();
                let mut j = i;
                while j < transformed.len() && is_role(&transformed[j], "toolResult") {
                    let result = &transformed[j];
                    let blocks = result
                        .get("content")
                        .and_then(Json::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let text = text_of(Some(&Json::Array(blocks.clone())), "\n");
                    let has_images = blocks.iter().any(|b| block_type(b) == "image");
                    let content = if !text.trim().is_empty() {
                        text
                    } else if has_images {
                        "(see attached image)".into()
                    } else {
                        "(no tool output)".into()
                    };
                    let mut tool = JsonMap::new();
                    tool.insert("role".into(), "tool".into());
                    tool.insert("content".into(), content.into());
                    tool.insert(
                        "tool_call_id".into(),
                        result.get("toolCallId").cloned().unwrap_or(Json::Null),
                    );
                    if compat.requires_tool_result_name {
                        if let Some(name) = result.get("toolName").filter(|n| truthy(n)) {
                            tool.insert("name".into(), name.clone());
                        }
                    }
                    out.push(Json::Object(tool));
                    if has_images && supports_images {
                        images.extend(
                            blocks
                                .iter()
                                .filter(|b| block_type(b) == "image")
                                .map(image_url),
                        );
                    }
                    j += 1;
                }
                i = j;
                if images.is_empty() {
                    last_role = "toolResult".into();
                } else {
                    if compat.requires_assistant_after_tool_result {
                        out.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                    }
                    let mut content = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    content.extend(images);
                    out.push(json!({"role": "user", "content": content}));
                    last_role = "user".into();
                }
                continue;
            }
            _ => {}
        }
        last_role = role.to_string();
        i += 1;
    }
    out
}

/// An assistant turn, or `None` when it has neither content nor tool calls.
fn convert_assistant(call: &Call, compat: &Compat, message: &Json) -> Option<Json> {
    let blocks = message
        .get("content")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = JsonMap::new();
    out.insert("role".into(), "assistant".into());
    let empty =
        compat.requires_assistant_after_tool_result || compat.requires_non_null_assistant_content;
    out.insert("content".into(), if empty { "".into() } else { Json::Null });
    let texts: Vec<String> = blocks
        .iter()
        .filter(|b| block_type(b) == "text")
        .filter_map(|b| b.get("text").and_then(Json::as_str))
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
        .collect();
    let text = texts.concat();
    let thinking: Vec<&Json> = blocks
        .iter()
        .filter(|b| block_type(b) == "thinking")
        .filter(|b| {
            !b.get("thinking")
                .and_then(Json::as_str)
                .unwrap_or("")
                .trim()
                .is_empty()
        })
        .collect();
    let details = blocks
        .iter()
        .filter(|b| block_type(b) == "thinking")
        .find_map(|b| reasoning_details(b.get("thinkingSignature")));
    if !thinking.is_empty() {
        let thinking_texts: Vec<&str> = thinking
            .iter()
            .map(|b| b.get("thinking").and_then(Json::as_str).unwrap_or(""))
            .collect();
        if compat.requires_thinking_as_text {
            let mut content = vec![json!({"type": "text", "text": thinking_texts.join("\n\n")})];
            content.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
            out.insert("content".into(), Json::Array(content));
        } else {
            if !text.is_empty() {
                out.insert("content".into(), text.clone().into());
            }
            if details.is_none() {
                let signature = thinking[0]
                    .get("thinkingSignature")
                    .and_then(Json::as_str)
                    .unwrap_or("");
                let signature =
                    if call.model_str("provider") == "opencode-go" && signature == "reasoning" {
                        "reasoning_content"
                    } else {
                        signature
                    };
                if REASONING_FIELDS.contains(&signature) {
                    out.insert(signature.into(), thinking_texts.join("\n").into());
                }
            }
        }
    } else if !text.is_empty() {
        out.insert("content".into(), text.into());
    }
    let calls: Vec<Json> = blocks
        .iter()
        .filter(|b| block_type(b) == "toolCall")
        .map(|b| {
            let arguments = b.get("arguments").map_or_else(|| "undefined".to_string(), to_string);
            json!({"id": b.get("id").cloned().unwrap_or(Json::Null), "type": "function",
                "function": {"name": b.get("name").cloned().unwrap_or(Json::Null), "arguments": arguments}})
        })
        .collect();
    let has_calls = !calls.is_empty();
    if has_calls {
        out.insert("tool_calls".into(), Json::Array(calls));
    }
    if let Some(details) = details {
        out.insert("reasoning_details".into(), details);
    }
    if compat.requires_reasoning_content_on_assistant
        && call.model.get("reasoning").is_some_and(truthy)
        && !out.contains_key("reasoning_content")
    {
        out.insert("reasoning_content".into(), "".into());
    }
    let has_content = match out.get("content") {
        Some(Json::String(s)) => !s.is_empty(),
        Some(Json::Array(a)) => !a.is_empty(),
        _ => false,
    };
    (has_content || has_calls).then_some(Json::Object(out))
}

/// OpenRouter's `reasoning_details` kept as a thinking signature (a JSON array of detail objects).
fn reasoning_details(signature: Option<&Json>) -> Option<Json> {
    let text = signature?.as_str()?;
    if !text.starts_with('[') {
        return None;
    }
    let parsed = crate::json::parse(text).ok()?;
    let list = parsed.as_array()?;
    (!list.is_empty() && list.iter().all(is_reasoning_detail)).then_some(parsed)
}

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

// ---------------------------------------------------------------------------------------------
// The response stream.
// ---------------------------------------------------------------------------------------------

/// `E.message` style text of an HTTP error (README §8.6).
pub(crate) fn describe_status(status: u16, body: &str) -> String {
    if body.is_empty() {
        return format!("{status} status code (no body)");
    }
    let Ok(json) = crate::json::parse(body) else {
        return format!("{status} {body}");
    };
    let error = match json.get("error") {
        Some(e) if !e.is_null() => e.clone(),
        _ => json.clone(),
    };
    let text = to_string(&error);
    match &error {
        Json::Object(map) if !map.is_empty() => {
            let units: Vec<u16> = text.encode_utf16().collect();
            if units.len() > 4000 {
                let cut = String::from_utf16_lossy(&units[..4000]);
                format!(
                    "{status}: {cut}... [truncated {} chars]",
                    units.len() - 4000
                )
            } else {
                format!("{status}: {text}")
            }
        }
        _ => format!("{status} {text}"),
    }
}

/// The OpenAI SDK's `APIError` message: `<status> <error.message>` (or the error object as JSON,
/// or the non-JSON body), `<status> status code (no body)` without any of them.
fn sdk_message(status: u16, body: &str) -> String {
    let message = match crate::json::parse(body) {
        Ok(json) => match json.get("error") {
            Some(error) if truthy(error) => match error.get("message").filter(|m| truthy(m)) {
                Some(Json::String(text)) => Some(text.clone()),
                Some(other) => Some(to_string(other)),
                None => Some(to_string(error)),
            },
            _ => None,
        },
        Err(_) => Some(body.to_string()).filter(|b| !b.is_empty()),
    };
    match message {
        Some(message) => format!("{status} {message}"),
        None => format!("{status} status code (no body)"),
    }
}

/// Per-request stream state.
struct Reader {
    out: Output,
    text: Option<usize>,
    thinking: Option<usize>,
    /// Tool-call block by stream index and by id, and each block's argument stream.
    by_index: HashMap<i64, usize>,
    by_id: HashMap<String, usize>,
    arguments: HashMap<usize, ArgumentStream>,
    names: HashMap<usize, String>,
    ids: HashMap<usize, String>,
    details: Option<Vec<Json>>,
    response_id: bool,
    response_model: bool,
    stop_reason: String,
    error_message: Option<String>,
    finished: bool,
}

async fn run(call: Call, compat: Compat, request: HttpRequest, out: Output) -> Pushed {
    if call.signal.is_aborted() {
        return out.fail(true, "Request aborted");
    }
    let mut response = match http::send(&request, &call.signal, sdk_message).await {
        Ok(response) => response,
        Err(Failure::Aborted) => return out.fail(true, "Request aborted"),
        Err(Failure::Status { status, body }) => {
            return out.fail(call.signal.is_aborted(), &describe_status(status, &body))
        }
        Err(Failure::Message(text)) => return out.fail(call.signal.is_aborted(), &text),
    };
    let mut reader = Reader {
        out,
        text: None,
        thinking: None,
        by_index: HashMap::new(),
        by_id: HashMap::new(),
        arguments: HashMap::new(),
        names: HashMap::new(),
        ids: HashMap::new(),
        details: None,
        response_id: false,
        response_model: false,
        stop_reason: "pending".into(),
        error_message: None,
        finished: false,
    };
    reader.out.start()?;
    let mut parser = SseParser::new();
    let failure = 'read: loop {
        let (events, end) = match response.next_chunk(&call.signal).await {
            Chunk::Data(bytes) => (parser.feed(&bytes), false),
            Chunk::End => (parser.finish().into_iter().collect(), true),
            Chunk::Aborted => break None,
            Chunk::Failed(text) => break Some(text),
        };
        for event in events {
            match reader.event(&call, event)? {
                Step::Continue => {}
                Step::Done => break 'read None,
                Step::Fail(text) => break 'read Some(text),
            }
        }
        if end {
            break None;
        }
    };
    // The connection is dropped before anything else is reported.
    drop(response);
    let aborted = call.signal.is_aborted();
    if let Some(text) = failure {
        reader.finish_thinking_details()?;
        return reader.out.fail(aborted, &text);
    }
    reader.finish_thinking_details()?;
    reader.out.close_all()?;
    if aborted {
        return reader.out.fail(true, "Request was aborted");
    }
    let has_tool_call =
        (0..reader.out.block_count()).any(|i| reader.out.kind(i) == Some(BlockKind::ToolCall));
    if !reader.finished && !compat.supports_finish_reason {
        reader.stop_reason = if has_tool_call {
            "toolUse".into()
        } else {
            "stop".into()
        };
        reader
            .out
            .set("stopReason", reader.stop_reason.clone().into())?;
    }
    if reader.stop_reason == "error" {
        let text = reader
            .error_message
            .clone()
            .unwrap_or_else(|| "Provider returned an error stop reason".into());
        return reader.out.fail(false, &text);
    }
    if (compat.supports_finish_reason && !reader.finished) || reader.stop_reason == "pending" {
        return reader.out.fail(false, "Stream ended without finish_reason");
    }
    let reason = reader.stop_reason.clone();
    reader.out.done(&reason)
}

enum Step {
    Continue,
    /// `data: [DONE]`: stop reading.
    Done,
    Fail(String),
}

impl Reader {
    fn event(&mut self, call: &Call, event: SseEvent) -> Result<Step, crate::stream::StreamClosed> {
        if event.data.starts_with("[DONE]") {
            return Ok(Step::Done);
        }
        let Ok(chunk) = crate::json::parse(&event.data) else {
            return Ok(Step::Fail(MALFORMED.into()));
        };
        if event.event.as_deref() == Some("error") {
            return Ok(Step::Fail(stream_error_text(
                chunk.get("error").unwrap_or(&chunk),
            )));
        }
        if let Some(error) = chunk.get("error").filter(|e| truthy(e)) {
            return Ok(Step::Fail(stream_error_text(error)));
        }
        self.chunk(call, &chunk)?;
        Ok(Step::Continue)
    }

    fn chunk(&mut self, call: &Call, chunk: &Json) -> Pushed {
        if !chunk.is_object() {
            return Ok(());
        }
        // `responseId ||= chunk.id`: replaced while it is falsy (an empty id included).
        if !self.response_id {
            if let Some(id) = chunk.get("id") {
                self.response_id = truthy(id);
                self.out.set("responseId", id.clone())?;
            }
        }
        if !self.response_model {
            if let Some(model) = chunk.get("model").and_then(Json::as_str) {
                if !model.is_empty() && Some(model) != call.model.get("id").and_then(Json::as_str) {
                    self.response_model = true;
                    self.out.set("responseModel", model.into())?;
                }
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| truthy(u)) {
            self.out.set_usage(&parse_usage(usage))?;
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Json::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if !chunk.get("usage").is_some_and(truthy) {
            if let Some(usage) = choice.get("usage").filter(|u| truthy(u)) {
                self.out.set_usage(&parse_usage(usage))?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").filter(|r| truthy(r)) {
            self.out.set("rawStopReason", reason.clone())?;
            let reason_text = match reason {
                Json::String(s) => s.clone(),
                other => to_string(other),
            };
            let (stop, error) = match reason_text.as_str() {
                "stop" | "end" => ("stop", None),
                "length" => ("length", None),
                "function_call" | "tool_calls" => ("toolUse", None),
                other => ("error", Some(format!("Provider finish_reason: {other}"))),
            };
            self.stop_reason = stop.into();
            self.out.set("stopReason", stop.into())?;
            if let Some(error) = error {
                self.error_message = Some(error.clone());
                self.out.set("errorMessage", error.into())?;
            }
            self.finished = true;
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return Ok(());
        };
        let reasoning = REASONING_FIELDS.iter().find(|f| {
            delta
                .get(**f)
                .and_then(Json::as_str)
                .is_some_and(|s| !s.is_empty())
        });
        if let Some(field) = reasoning {
            let text = delta.get(*field).and_then(Json::as_str).unwrap_or("");
            let signature = if call.model_str("provider") == "opencode-go" && *field == "reasoning"
            {
                "reasoning_content"
            } else {
                field
            };
            let index = self.thinking_block(signature)?;
            self.out.delta(index, text)?;
        }
        if let Some(details) = delta.get("reasoning_details").and_then(Json::as_array) {
            for detail in details.iter().filter(|d| is_reasoning_detail(d)) {
                self.thinking_block("")?;
                append_detail(self.details.get_or_insert_with(Vec::new), detail);
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Json::as_str)
            .filter(|t| !t.is_empty())
        {
            let index = match self.text {
                Some(index) => index,
                None => {
                    let mut block = JsonMap::new();
                    block.insert("type".into(), "text".into());
                    block.insert("text".into(), "".into());
                    let index = self.out.open(BlockKind::Text, block)?;
                    self.text = Some(index);
                    index
                }
            };
            self.out.delta(index, text)?;
        }
        for call_delta in delta
            .get("tool_calls")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            self.tool_call_delta(call_delta)?;
        }
        Ok(())
    }

    fn thinking_block(&mut self, signature: &str) -> Result<usize, crate::stream::StreamClosed> {
        if let Some(index) = self.thinking {
            return Ok(index);
        }
        let mut block = JsonMap::new();
        block.insert("type".into(), "thinking".into());
        block.insert("thinking".into(), "".into());
        block.insert("thinkingSignature".into(), signature.into());
        let index = self.out.open(BlockKind::Thinking, block)?;
        self.thinking = Some(index);
        Ok(index)
    }

    fn tool_call_delta(&mut self, delta: &Json) -> Pushed {
        let stream_index = delta.get("index").and_then(Json::as_i64);
        let id = delta
            .get("id")
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty());
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Json::as_str);
        let mut index = stream_index.and_then(|i| self.by_index.get(&i).copied());
        if index.is_none() {
            index = id.and_then(|id| self.by_id.get(id).copied());
        }
        let index = match index {
            Some(index) => index,
            None => {
                let mut block = JsonMap::new();
                block.insert("type".into(), "toolCall".into());
                block.insert("id".into(), id.unwrap_or("").into());
                block.insert("name".into(), name.unwrap_or("").into());
                block.insert("arguments".into(), Json::Object(JsonMap::new()));
                let index = self.out.open(BlockKind::ToolCall, block)?;
                self.arguments.insert(index, ArgumentStream::new());
                self.names.insert(index, name.unwrap_or("").into());
                self.ids.insert(index, id.unwrap_or("").into());
                index
            }
        };
        if let Some(i) = stream_index {
            self.by_index.entry(i).or_insert(index);
        }
        if let Some(id) = id {
            self.by_id.insert(id.to_string(), index);
            if self.ids.get(&index).is_some_and(String::is_empty) {
                self.ids.insert(index, id.into());
                self.out.set_block_field(index, "id", id.into())?;
            }
        }
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            if self.names.get(&index).is_some_and(String::is_empty) {
                self.names.insert(index, name.into());
                self.out.set_block_field(index, "name", name.into())?;
            }
        }
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Json::as_str)
            .filter(|a| !a.is_empty())
            .unwrap_or("");
        self.out.delta(index, arguments)
    }

    /// OpenRouter's accumulated `reasoning_details` become the thinking block's signature.
    fn finish_thinking_details(&mut self) -> Pushed {
        if let (Some(index), Some(details)) = (self.thinking, self.details.take()) {
            let signature = to_string(&Json::Array(details));
            self.out
                .set_block_field(index, "thinkingSignature", signature.into())?;
        }
        Ok(())
    }
}

/// Consecutive `reasoning.text` (or `reasoning.summary`) details merge into one entry, which
/// takes the first signature and the common fields it lacks.
fn append_detail(details: &mut Vec<Json>, detail: &Json) {
    let kind = detail.get("type").and_then(Json::as_str).unwrap_or("");
    let field = match kind {
        "reasoning.text" => "text",
        "reasoning.summary" => "summary",
        _ => {
            details.push(detail.clone());
            return;
        }
    };
    let Some(Json::Object(last)) = details
        .last_mut()
        .filter(|l| l.get("type") == detail.get("type"))
    else {
        details.push(detail.clone());
        return;
    };
    let addition = detail.get(field).and_then(Json::as_str).unwrap_or("");
    if let Some(Json::String(text)) = last.get_mut(field) {
        text.push_str(addition);
    }
    let absent = |v: Option<&Json>| v.is_none_or(Json::is_null);
    if field == "text" && !last.get("signature").is_some_and(truthy) {
        if let Some(signature) = detail.get("signature") {
            last.insert("signature".into(), signature.clone());
        }
    }
    for key in ["id", "format", "index"] {
        let missing = if key == "format" {
            !last.get(key).is_some_and(truthy)
        } else {
            absent(last.get(key))
        };
        if missing {
            if let Some(value) = detail.get(key) {
                last.insert(key.into(), value.clone());
            }
        }
    }
}

/// `E.message` of an error chunk, plus `metadata.raw` when present.
fn stream_error_text(error: &Json) -> String {
    let mut text = match error.get("message").and_then(Json::as_str) {
        Some(message) => message.to_string(),
        None => to_string(error),
    };
    if let Some(raw) = error
        .get("metadata")
        .and_then(|m| m.get("raw"))
        .filter(|r| truthy(r))
    {
        let raw = match raw {
            Json::String(s) => s.clone(),
            other => to_string(other),
        };
        if !text.contains(&raw) {
            text.push('\n');
            text.push_str(&raw);
        }
    }
    text
}

/// pi-ai's `parseChunkUsage`: cached tokens are taken out of the prompt tokens.
fn parse_usage(raw: &Json) -> Usage {
    let n = |v: Option<&Json>| {
        v.and_then(Json::as_f64)
            .filter(|f| *f != 0.0 && !f.is_nan())
    };
    let prompt = n(raw.get("prompt_tokens")).unwrap_or(0.0);
    let details = raw.get("prompt_tokens_details");
    let cache_read = details
        .and_then(|d| d.get("cached_tokens"))
        .filter(|v| !v.is_null())
        .or_else(|| raw.get("prompt_cache_hit_tokens").filter(|v| !v.is_null()))
        .or_else(|| raw.get("cached_tokens").filter(|v| !v.is_null()))
        .and_then(Json::as_f64)
        .unwrap_or(0.0);
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens"))).unwrap_or(0.0);
    let input = (prompt - cache_read - cache_write).max(0.0);
    let output = n(raw.get("completion_tokens")).unwrap_or(0.0);
    let reasoning = n(raw
        .get("completion_tokens_details")
        .and_then(|d| d.get("reasoning_tokens")))
    .or_else(|| n(raw.get("reasoning_tokens")))
    .unwrap_or(0.0);
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        cache_write_1h: None,
        reasoning: Some(reasoning),
        total_tokens: input + output + cache_read + cache_write,
    }
}

//! The anthropic-messages request: pi-ai 1.6.0's `streamSimple` options, `buildParams`,
//! `convertMessages`, `convertTools` and the headers the Anthropic SDK sends (kit README §8.1,
//! §8.4). Nothing here does I/O.

mod headers;

use std::collections::HashMap;

use crate::json::{is_js_whitespace, json, number, str_field, Json, JsonMap};
use crate::transcript::{get_system_message_text, render_system_message_update};

use super::super::env;
use super::super::http::HttpRequest;
use super::super::limits::{self, truthy};
use super::super::transcript as tr;
use super::super::Call;
use super::strict;
use headers::{beta_features, headers};

/// The fixed first system block of an OAuth (Claude Code) request.
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
/// Claude Code's tool names; an OAuth request sends matching tools in this casing.
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// A request ready to send, plus what the stream reader needs to know about it.
pub struct Built {
    pub request: HttpRequest,
    /// An OAuth token: tool names come back in Claude Code casing.
    pub oauth: bool,
    /// The current tools (to map Claude Code names back).
    pub tools: Vec<Json>,
    /// `providerThinkingLevel` of the reply (managed-effort models).
    pub provider_thinking_level: Option<String>,
    /// A tool that prefers strict sampling went out strict (a strict-limit rejection can be
    /// retried without).
    pub has_preferred_strict_tools: bool,
    /// The body as an object (what a thread request is derived from) and the betas it went
    /// out with.
    pub params: JsonMap,
    pub betas: Vec<String>,
    /// The session whose requests use message threads (pi-ai's `threadSessionId`).
    pub thread_session: Option<String>,
    pub allow_empty_signature: bool,
}

/// `toClaudeCodeName`.
fn to_claude_code_name(name: &str) -> String {
    let lower = name.to_lowercase();
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.to_lowercase() == lower)
        .map_or_else(|| name.to_string(), |t| t.to_string())
}

/// `fromClaudeCodeName`: the current tool whose name matches case-insensitively, else `name`.
pub fn from_claude_code_name(name: &str, tools: &[Json]) -> String {
    let lower = name.to_lowercase();
    tools
        .iter()
        .filter_map(|t| str_field(t, "name"))
        .find(|t| t.to_lowercase() == lower)
        .unwrap_or(name)
        .to_string()
}

/// `isOAuthToken`.
pub fn is_oauth_key(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

/// JavaScript's `text.trim().length === 0`.
fn is_blank(text: &str) -> bool {
    text.trim_matches(is_js_whitespace).is_empty()
}

/// JavaScript's `Math.min` (NaN wins).
fn js_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// A number for the body; NaN (pi-ai's arithmetic on a missing budget) is `null`, as
/// `JSON.stringify` writes it.
fn body_number(n: f64) -> Json {
    if n.is_finite() {
        number(n)
    } else {
        Json::Null
    }
}

/// The compat flags pi-ai's `getAnthropicCompat` derives.
struct Compat {
    eager_tool_input_streaming: bool,
    long_cache_retention: bool,
    session_affinity: bool,
    openrouter_affinity_format: bool,
    cache_control_on_tools: bool,
    temperature: bool,
    allow_empty_signature: bool,
    strict_tools: bool,
    mid_convo_system_messages: bool,
    mid_convo_tool_changes: bool,
    mid_convo_effort: bool,
    force_adaptive_thinking: bool,
    message_threads: bool,
}

impl Compat {
    fn of(call: &Call) -> Self {
        let openrouter = is_openrouter(&call.model);
        let flag = |key: &str, default: bool| call.compat(key).map_or(default, truthy);
        let format = call.compat("sessionAffinityFormat").cloned();
        Compat {
            eager_tool_input_streaming: flag("supportsEagerToolInputStreaming", true),
            long_cache_retention: flag("supportsLongCacheRetention", true),
            session_affinity: flag("sendSessionAffinityHeaders", openrouter),
            openrouter_affinity_format: match format {
                Some(format) => format.as_str() == Some("openrouter"),
                None => openrouter,
            },
            cache_control_on_tools: flag("supportsCacheControlOnTools", true),
            temperature: flag("supportsTemperature", true),
            allow_empty_signature: flag("allowEmptySignature", false),
            strict_tools: flag("supportsStrictTools", false),
            mid_convo_system_messages: flag("supportsMidConvoSystemMessages", false),
            mid_convo_tool_changes: flag("supportsMidConvoToolChanges", false),
            // These two are compared with `=== true` in pi-ai.
            mid_convo_effort: call.compat("supportsMidConvoEffort") == Some(&Json::Bool(true)),
            force_adaptive_thinking: call.compat("forceAdaptiveThinking")
                == Some(&Json::Bool(true)),
            // Gateways may drop the `thread` field: by default only Anthropic's own endpoint.
            message_threads: flag(
                "supportsMessageThreads",
                call.model_str("baseUrl").contains("api.anthropic.com"),
            ),
        }
    }
}

fn is_openrouter(model: &Json) -> bool {
    str_field(model, "provider") == Some("openrouter")
        || str_field(model, "baseUrl").is_some_and(|u| u.contains("openrouter.ai"))
}

/// What `streamSimple` hands to `stream`: the response ceiling and the thinking settings.
struct Thinking {
    enabled: bool,
    max_tokens: f64,
    budget_tokens: f64,
    effort: Option<String>,
}

/// `streamSimple`'s choice of max tokens and thinking (budget or adaptive effort).
fn thinking(call: &Call) -> Thinking {
    let base = limits::max_tokens(&call.model, &call.messages, &call.options);
    let level = match call.options.get("reasoning") {
        Some(level) if truthy(level) => level.as_str().unwrap_or("").to_string(),
        _ => {
            return Thinking {
                enabled: false,
                max_tokens: base,
                budget_tokens: 0.0,
                effort: None,
            }
        }
    };
    if call.compat("forceAdaptiveThinking") == Some(&Json::Bool(true)) {
        let mapped = call
            .model
            .get("thinkingLevelMap")
            .and_then(|m| m.get(&level))
            .and_then(Json::as_str);
        let effort = match (mapped, level.as_str()) {
            (Some(mapped), _) => mapped,
            (None, "minimal" | "low") => "low",
            (None, "medium") => "medium",
            _ => "high",
        };
        return Thinking {
            enabled: true,
            max_tokens: base,
            budget_tokens: 0.0,
            effort: Some(effort.to_string()),
        };
    }
    // `adjustMaxTokensForThinking`; a level without a budget (e.g. "off") gives NaN, as in pi-ai.
    let model_max = call
        .model
        .get("maxTokens")
        .and_then(Json::as_f64)
        .unwrap_or(f64::NAN);
    let mut budget =
        limits::thinking_budget(&level, call.option("thinkingBudgets")).unwrap_or(f64::NAN);
    let adjusted = js_min(base + budget, model_max);
    if adjusted <= budget {
        budget = js_min(budget, (adjusted - limits::MIN_ANSWER_TOKENS).max(0.0));
    }
    let max_tokens = if adjusted.is_nan() {
        adjusted
    } else {
        limits::clamp_max_tokens(&call.model, &call.messages, adjusted)
    };
    let room = if max_tokens.is_nan() {
        f64::NAN
    } else {
        (max_tokens - limits::MIN_ANSWER_TOKENS).max(0.0)
    };
    Thinking {
        enabled: true,
        max_tokens,
        budget_tokens: js_min(budget, room),
        effort: None,
    }
}

/// `resolveCacheRetention` + `getCacheControl`: `None` for retention `none`.
fn cache_control(call: &Call, compat: &Compat) -> (String, Option<Json>) {
    let retention = match call.options.get("cacheRetention") {
        Some(value) if truthy(value) => value.as_str().unwrap_or("").to_string(),
        _ if env::value("PI_CACHE_RETENTION", call.options.get("env")).as_deref()
            == Some("long") =>
        {
            "long".to_string()
        }
        _ => "short".to_string(),
    };
    if retention == "none" {
        return (retention, None);
    }
    let control = if retention == "long" && compat.long_cache_retention {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    };
    (retention, Some(control))
}

/// Builds the request of `call` (pi-ai throws from `buildParams` only for strict-tool
/// requirements; that text is the `Err`).
/// `disable_preferred_strict` sends tools that only prefer strict sampling non-strict.
pub fn build(call: &Call, disable_preferred_strict: bool) -> Result<Built, String> {
    let compat = Compat::of(call);
    let thinking = thinking(call);
    let resolved = tr::resolve(&call.messages, compat.mid_convo_system_messages);
    let messages = resolved.refs();
    let tools = tr::tools(&messages);
    let api_key = call.api_key.clone();
    let oauth = call.model_str("provider") != "github-copilot"
        && api_key.as_deref().is_some_and(is_oauth_key);
    let (retention, cache) = cache_control(call, &compat);
    let session_id = if retention == "none" {
        None
    } else {
        call.option("sessionId").and_then(Json::as_str)
    };
    let thread_session = session_id.filter(|_| compat.message_threads);

    let initial = messages
        .first()
        .copied()
        .filter(|m| tr::is_role(m, "system"));
    let system_text = initial.map(get_system_message_text).unwrap_or_default();
    let transformed = tr::transform(&messages, &call.model, Some(normalize_tool_call_id));
    let conversation = if initial.is_some() && !transformed.is_empty() {
        &transformed[1..]
    } else {
        &transformed[..]
    };
    let initial_tools: Vec<Json> = initial
        .and_then(|m| m.get("toolsAdded"))
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let native_tool_changes = compat.mid_convo_system_messages
        && compat.mid_convo_tool_changes
        && !initial_tools.is_empty();
    let thinking_disabled = truthy_field(&call.model, "reasoning")
        && !thinking.enabled
        && call
            .model
            .get("thinkingLevelMap")
            .and_then(|m| m.get("off"))
            .is_none_or(|off| !off.is_null());
    let effort_messages = compat.mid_convo_effort && !thinking_disabled;
    let tool_cache = if compat.cache_control_on_tools {
        cache.clone()
    } else {
        None
    };
    let converter = ToolConverter {
        oauth,
        eager: compat.eager_tool_input_streaming,
        strict_supported: compat.strict_tools,
        disable_preferred_strict,
        has_preferred_strict: std::cell::Cell::new(false),
    };
    let converted = convert_messages(
        conversation,
        oauth,
        cache.as_ref(),
        compat.allow_empty_signature,
        effort_messages.then(|| call.model_str("provider")),
        native_tool_changes.then_some(&converter),
    )?;
    let active_effort = thinking.effort.clone().unwrap_or_else(|| "high".into());
    let betas = beta_features(
        call,
        &compat,
        &tools,
        &thinking,
        oauth,
        native_tool_changes,
        thread_session.is_some(),
    );

    let mut body = JsonMap::new();
    body.insert(
        "model".into(),
        call.model.get("id").cloned().unwrap_or(Json::Null),
    );
    let wire_messages = if effort_messages {
        insert_thinking_level_messages(converted, &active_effort)
    } else {
        converted.messages
    };
    body.insert("messages".into(), Json::Array(wire_messages));
    body.insert("max_tokens".into(), body_number(thinking.max_tokens));
    body.insert("stream".into(), Json::Bool(true));
    let with_cache = |mut block: JsonMap| {
        if let Some(cache) = &cache {
            block.insert("cache_control".into(), cache.clone());
        }
        Json::Object(block)
    };
    let text_block = |text: &str| {
        let mut block = JsonMap::new();
        block.insert("type".into(), "text".into());
        block.insert("text".into(), text.into());
        block
    };
    if oauth {
        let mut system = vec![with_cache(text_block(CLAUDE_CODE_IDENTITY))];
        if !system_text.is_empty() {
            system.push(with_cache(text_block(&system_text)));
        }
        body.insert("system".into(), Json::Array(system));
    } else if !system_text.is_empty() {
        body.insert(
            "system".into(),
            Json::Array(vec![with_cache(text_block(&system_text))]),
        );
    }
    if let Some(temperature) = call.options.get("temperature") {
        if !thinking.enabled && !compat.mid_convo_effort && compat.temperature {
            body.insert("temperature".into(), temperature.clone());
        }
    }
    if native_tool_changes {
        let mut list = converter.convert(&initial_tools, tool_cache.as_ref())?;
        list.push(json!({"name": "__pi_deferred_placeholder__",
            "description": "Reserved placeholder. Never available. Never call this.",
            "input_schema": {"type": "object", "properties": {}, "required": []},
            "defer_loading": true}));
        body.insert("tools".into(), Json::Array(list));
    } else if !tools.is_empty() {
        let list = converter.convert(&tools, tool_cache.as_ref())?;
        body.insert("tools".into(), Json::Array(list));
    }
    if thinking_disabled {
        body.insert("thinking".into(), json!({"type": "disabled"}));
    } else if effort_messages {
        body.insert(
            "thinking".into(),
            json!({"type": "adaptive", "display": "summarized",
                "block_binding": {"prefix_mismatch_behavior": "drop_block"}}),
        );
        body.insert("output_config".into(), json!({"effort": "low"}));
    } else if truthy_field(&call.model, "reasoning") && thinking.enabled {
        if compat.force_adaptive_thinking {
            body.insert(
                "thinking".into(),
                json!({"type": "adaptive", "display": "summarized"}),
            );
            if let Some(effort) = &thinking.effort {
                body.insert("output_config".into(), json!({ "effort": effort }));
            }
        } else {
            // `budget_tokens || 1024`: 0 and NaN fall back to the minimum.
            let budget = if thinking.budget_tokens == 0.0 || thinking.budget_tokens.is_nan() {
                1024.0
            } else {
                thinking.budget_tokens
            };
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": number(budget), "display": "summarized"}),
            );
        }
    }
    if let Some(metadata) = call.option("metadata").filter(|m| truthy(m)) {
        if let Some(user_id) = metadata.get("user_id").filter(|u| u.is_string()) {
            body.insert("metadata".into(), json!({ "user_id": user_id }));
        }
    }
    if let Some(choice) = call.option("toolChoice").filter(|c| truthy(c)) {
        let choice = match choice {
            Json::String(kind) => json!({ "type": kind }),
            other => other.clone(),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(fallbacks) = fallback_models(call) {
        // `{model: fallback.model}`: an absent model leaves `{}`.
        let list = fallbacks
            .iter()
            .map(|f| {
                let mut entry = JsonMap::new();
                if let Some(model) = f.get("model") {
                    entry.insert("model".into(), model.clone());
                }
                Json::Object(entry)
            })
            .collect();
        body.insert("fallbacks".into(), Json::Array(list));
    }

    let headers = headers(
        call,
        &compat,
        api_key.as_deref(),
        oauth,
        session_id,
        &betas,
        &messages,
    );
    let base = str_field(&call.model, "baseUrl")
        .filter(|u| !u.is_empty())
        .unwrap_or("https://api.anthropic.com");
    let url = if base.ends_with('/') {
        format!("{base}v1/messages?beta=true")
    } else {
        format!("{base}/v1/messages?beta=true")
    };
    Ok(Built {
        request: HttpRequest {
            url,
            headers,
            body: crate::json::to_string(&Json::Object(body.clone())),
            transport: call.transport.clone(),
        },
        oauth,
        tools,
        provider_thinking_level: effort_messages.then_some(active_effort),
        has_preferred_strict_tools: converter.has_preferred_strict.get(),
        params: body,
        betas,
        thread_session: thread_session.map(str::to_string),
        allow_empty_signature: compat.allow_empty_signature,
    })
}

fn truthy_field(value: &Json, key: &str) -> bool {
    value.get(key).is_some_and(truthy)
}

/// `model.compat.allowedFallbackModels` when non-empty.
pub fn fallback_models(call: &Call) -> Option<&Vec<Json>> {
    call.compat("allowedFallbackModels")
        .and_then(Json::as_array)
        .filter(|list| !list.is_empty())
}

/// `normalizeToolCallId`: characters outside `[a-zA-Z0-9_-]` become `_`, at most 64 (UTF-16
/// units; every kept character is ASCII, each replaced one counts once per code unit).
fn normalize_tool_call_id(id: &str) -> String {
    let mut out = String::new();
    let mut units = 0;
    for c in id.chars() {
        for _ in 0..c.len_utf16() {
            if units == 64 {
                return out;
            }
            units += 1;
            out.push(if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            });
            if c.len_utf16() == 1 {
                break;
            }
        }
    }
    out
}

/// `convertTools` with its settings.
pub struct ToolConverter {
    oauth: bool,
    eager: bool,
    strict_supported: bool,
    disable_preferred_strict: bool,
    /// Set when a converted tool that prefers strict sampling went out strict.
    has_preferred_strict: std::cell::Cell<bool>,
}

impl ToolConverter {
    fn convert(&self, tools: &[Json], cache: Option<&Json>) -> Result<Vec<Json>, String> {
        let last = tools.len().saturating_sub(1);
        tools
            .iter()
            .enumerate()
            .map(|(index, tool)| {
                let prefers = strict::prefers_strict(tool);
                let strict = if self.disable_preferred_strict && prefers {
                    None
                } else {
                    strict::resolve(tool, self.strict_supported)?
                };
                if strict.is_some() && prefers {
                    self.has_preferred_strict.set(true);
                }
                let parameters = match &strict {
                    Some(schema) => schema.clone(),
                    None => tool.get("parameters").cloned().unwrap_or(Json::Null),
                };
                let field = |key: &str| parameters.get(key).filter(|v| !v.is_null()).cloned();
                let mut schema = JsonMap::new();
                schema.insert("type".into(), "object".into());
                schema.insert(
                    "properties".into(),
                    field("properties").unwrap_or_else(|| json!({})),
                );
                schema.insert(
                    "required".into(),
                    field("required").unwrap_or_else(|| json!([])),
                );
                for key in ["additionalProperties", "$defs", "definitions"] {
                    if let Some(value) = parameters.get(key) {
                        schema.insert(key.into(), value.clone());
                    }
                }
                let input_schema = match (&strict, parameters) {
                    (Some(_), Json::Object(mut full)) => {
                        for (key, value) in schema {
                            full.insert(key, value);
                        }
                        Json::Object(full)
                    }
                    _ => Json::Object(schema),
                };
                let name = str_field(tool, "name").unwrap_or("");
                let mut out = JsonMap::new();
                out.insert(
                    "name".into(),
                    if self.oauth {
                        to_claude_code_name(name).into()
                    } else {
                        tool.get("name").cloned().unwrap_or(Json::Null)
                    },
                );
                if let Some(description) = tool.get("description") {
                    out.insert("description".into(), description.clone());
                }
                if self.eager {
                    out.insert("eager_input_streaming".into(), Json::Bool(true));
                }
                if strict.is_some() {
                    out.insert("strict".into(), Json::Bool(true));
                }
                out.insert("input_schema".into(), input_schema);
                if let (Some(cache), true) = (cache, index == last) {
                    out.insert("cache_control".into(), cache.clone());
                }
                Ok(Json::Object(out))
            })
            .collect()
    }
}

/// The converted messages and the efforts of replayed assistant turns (by wire index).
struct Converted {
    messages: Vec<Json>,
    assistant_levels: HashMap<usize, String>,
}

fn image_block(image: &Json) -> Json {
    let mut source = JsonMap::new();
    source.insert("type".into(), "base64".into());
    if let Some(mime) = image.get("mimeType") {
        source.insert("media_type".into(), mime.clone());
    }
    if let Some(data) = image.get("data") {
        source.insert("data".into(), data.clone());
    }
    json!({"type": "image", "source": Json::Object(source)})
}

fn text_of(block: &Json) -> &str {
    str_field(block, "text").unwrap_or("")
}

fn text_json(text: &str) -> Json {
    json!({"type": "text", "text": text})
}

/// `convertContentBlocks`: text joined by `\n`, or blocks when images are present.
fn content_blocks(content: &[Json]) -> Json {
    let is_image = |b: &Json| str_field(b, "type") == Some("image");
    if !content.iter().any(is_image) {
        let texts: Vec<&str> = content.iter().map(text_of).collect();
        return Json::String(texts.join("\n"));
    }
    let mut blocks: Vec<Json> = content
        .iter()
        .map(|b| {
            if str_field(b, "type") == Some("text") {
                text_json(text_of(b))
            } else {
                image_block(b)
            }
        })
        .collect();
    if !blocks.iter().any(|b| str_field(b, "type") == Some("text")) {
        blocks.insert(0, text_json("(see attached image)"));
    }
    Json::Array(blocks)
}

fn blocks_of(message: &Json) -> &[Json] {
    message
        .get("content")
        .and_then(Json::as_array)
        .map_or(&[], Vec::as_slice)
}

/// One tool result, and the caption and images of an error result (sent after all results).
fn tool_result(message: &Json, error_images: &mut Vec<Json>) -> Json {
    let content = blocks_of(message);
    let is_error = message.get("isError").is_some_and(truthy);
    let images: Vec<&Json> = content
        .iter()
        .filter(|b| str_field(b, "type") == Some("image"))
        .collect();
    let content = if is_error && !images.is_empty() {
        // `splitErrorToolResultImages`: a placeholder per run of images.
        let mut kept = Vec::new();
        let mut previous_was_placeholder = false;
        for block in content {
            if str_field(block, "type") == Some("image") {
                if !previous_was_placeholder {
                    kept.push(text_json(ERROR_TOOL_IMAGE_PLACEHOLDER));
                }
                previous_was_placeholder = true;
                continue;
            }
            kept.push(block.clone());
            previous_was_placeholder =
                str_field(block, "text") == Some(ERROR_TOOL_IMAGE_PLACEHOLDER);
        }
        let id = message
            .get("toolCallId")
            .map_or_else(|| "undefined".into(), js_string);
        let name = message
            .get("toolName")
            .map_or_else(|| "undefined".into(), js_string);
        error_images.push(text_json(&format!(
            "Images from the error result of tool call {id} ({name}):"
        )));
        error_images.extend(images.into_iter().map(image_block));
        content_blocks(&kept)
    } else {
        content_blocks(content)
    };
    let mut result = JsonMap::new();
    result.insert("type".into(), "tool_result".into());
    if let Some(id) = message.get("toolCallId") {
        result.insert("tool_use_id".into(), id.clone());
    }
    result.insert("content".into(), content);
    if let Some(is_error) = message.get("isError") {
        result.insert("is_error".into(), is_error.clone());
    }
    Json::Object(result)
}

/// A value in a template string (`${value}`), for the id and name in a caption.
fn js_string(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        other => crate::json::to_string(other),
    }
}

fn is_effort(level: &str) -> bool {
    matches!(level, "low" | "medium" | "high" | "xhigh" | "max")
}

/// `convertMessages`. `managed_provider` is set for managed-effort models; `native_tools` when
/// tool changes go into system messages as `tool_addition`/`tool_removal` blocks.
fn convert_messages(
    messages: &[Json],
    oauth: bool,
    cache: Option<&Json>,
    allow_empty_signature: bool,
    managed_provider: Option<&str>,
    native_tools: Option<&ToolConverter>,
) -> Result<Converted, String> {
    let mut params: Vec<Json> = Vec::new();
    let mut assistant_levels = HashMap::new();
    // Later system messages wait for the next assistant message (tool results must follow
    // their tool uses directly).
    let mut pending_system: Vec<Json> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        let role = str_field(message, "role").unwrap_or("");
        match role {
            "system" => {
                let text = render_system_message_update(message);
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(text_json(&text));
                }
                if let Some(converter) = native_tools {
                    let added: &[Json] = message
                        .get("toolsAdded")
                        .and_then(Json::as_array)
                        .map_or(&[], Vec::as_slice);
                    let redefined: Vec<&str> =
                        added.iter().filter_map(|t| str_field(t, "name")).collect();
                    let removed = message.get("toolsRemoved").and_then(Json::as_array);
                    for tool in removed.into_iter().flatten() {
                        let name = str_field(tool, "name").unwrap_or("");
                        if redefined.contains(&name) {
                            continue;
                        }
                        let name = if oauth {
                            to_claude_code_name(name)
                        } else {
                            name.to_string()
                        };
                        blocks.push(json!({"type": "tool_removal",
                            "tool": {"type": "tool_reference", "name": name}}));
                    }
                    for definition in converter.convert(added, None)? {
                        blocks.push(json!({"type": "tool_addition",
                            "tool": {"type": "tool_definition", "definition": definition}}));
                    }
                }
                if !blocks.is_empty() {
                    pending_system.push(json!({"role": "system", "content": blocks}));
                }
            }
            "user" => match message.get("content") {
                Some(Json::String(text)) => {
                    if !is_blank(text) {
                        params.push(json!({"role": "user", "content": text}));
                    }
                }
                _ => {
                    let blocks: Vec<Json> = blocks_of(message)
                        .iter()
                        .filter_map(|b| {
                            if str_field(b, "type") == Some("text") {
                                let text = text_of(b);
                                (!is_blank(text)).then(|| text_json(text))
                            } else {
                                Some(image_block(b))
                            }
                        })
                        .collect();
                    if !blocks.is_empty() {
                        params.push(json!({"role": "user", "content": blocks}));
                    }
                }
            },
            "assistant" => {
                let mut blocks = Vec::new();
                for block in blocks_of(message) {
                    match str_field(block, "type") {
                        Some("text") => {
                            let text = text_of(block);
                            if !is_blank(text) {
                                blocks.push(text_json(text));
                            }
                        }
                        Some("thinking") => {
                            let signature = block.get("thinkingSignature");
                            if block.get("redacted").is_some_and(truthy) {
                                let mut redacted = JsonMap::new();
                                redacted.insert("type".into(), "redacted_thinking".into());
                                if let Some(data) = signature {
                                    redacted.insert("data".into(), data.clone());
                                }
                                blocks.push(Json::Object(redacted));
                                continue;
                            }
                            let thinking = str_field(block, "thinking").unwrap_or("");
                            let signature =
                                signature.and_then(Json::as_str).filter(|s| !is_blank(s));
                            match signature {
                                Some(signature) => blocks.push(json!({"type": "thinking",
                                    "thinking": thinking, "signature": signature})),
                                None if is_blank(thinking) => {}
                                None if allow_empty_signature => blocks.push(
                                    json!({"type": "thinking", "thinking": thinking, "signature": ""}),
                                ),
                                None => blocks.push(text_json(thinking)),
                            }
                        }
                        Some("toolCall") => {
                            let name = str_field(block, "name").unwrap_or("");
                            let mut tool_use = JsonMap::new();
                            tool_use.insert("type".into(), "tool_use".into());
                            if let Some(id) = block.get("id") {
                                tool_use.insert("id".into(), id.clone());
                            }
                            tool_use.insert(
                                "name".into(),
                                if oauth {
                                    to_claude_code_name(name).into()
                                } else {
                                    block.get("name").cloned().unwrap_or(Json::Null)
                                },
                            );
                            let input = block
                                .get("arguments")
                                .filter(|a| !a.is_null())
                                .cloned()
                                .unwrap_or_else(|| json!({}));
                            tool_use.insert("input".into(), input);
                            blocks.push(Json::Object(tool_use));
                        }
                        _ => {}
                    }
                }
                if !blocks.is_empty() {
                    params.append(&mut pending_system);
                    let index = params.len();
                    params.push(json!({"role": "assistant", "content": blocks}));
                    if let Some(provider) = managed_provider {
                        let level = str_field(message, "providerThinkingLevel");
                        if str_field(message, "api") == Some("anthropic-messages")
                            && str_field(message, "provider") == Some(provider)
                        {
                            if let Some(level) = level.filter(|l| is_effort(l)) {
                                assistant_levels.insert(index, level.to_string());
                            }
                        }
                    }
                }
            }
            "toolResult" => {
                let mut results = Vec::new();
                let mut error_images = Vec::new();
                while i < messages.len() && tr::is_role(&messages[i], "toolResult") {
                    results.push(tool_result(&messages[i], &mut error_images));
                    i += 1;
                }
                results.append(&mut error_images);
                params.push(json!({"role": "user", "content": results}));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    params.append(&mut pending_system);
    if let (Some(cache), Some(last)) = (cache, params.last_mut()) {
        let role = str_field(last, "role").unwrap_or("");
        if role == "user" || role == "system" {
            match last.get_mut("content") {
                Some(Json::Array(blocks)) => {
                    if let Some(block) = blocks.last_mut() {
                        let kind = str_field(block, "type").unwrap_or("");
                        if matches!(
                            kind,
                            "text" | "image" | "tool_result" | "tool_addition" | "tool_removal"
                        ) {
                            block["cache_control"] = cache.clone();
                        }
                    }
                }
                Some(Json::String(text)) => {
                    let text = std::mem::take(text);
                    last["content"] =
                        json!([{"type": "text", "text": text, "cache_control": cache}]);
                }
                _ => {}
            }
        }
    }
    Ok(Converted {
        messages: params,
        assistant_levels,
    })
}

/// The wire form of a reply (`convertMessages` of the transformed output, assistant only).
pub fn reply_messages(reply: &Json, oauth: bool, allow_empty_signature: bool) -> Vec<Json> {
    convert_messages(
        std::slice::from_ref(reply),
        oauth,
        None,
        allow_empty_signature,
        None,
        None,
    )
    .map(|c| c.messages)
    .unwrap_or_default()
    .into_iter()
    .filter(|m| tr::is_role(m, "assistant"))
    .collect()
}

/// `insertThinkingLevelMessages`: an effort marker before each replayed assistant turn that had
/// one, and the active effort last.
fn insert_thinking_level_messages(converted: Converted, active: &str) -> Vec<Json> {
    let marker = |effort: &str| json!({"role": "system", "content": [], "output_config": {"effort": effort}});
    let mut out = Vec::with_capacity(converted.messages.len() + 1);
    for (index, message) in converted.messages.into_iter().enumerate() {
        if let Some(level) = converted.assistant_levels.get(&index) {
            out.push(marker(level));
        }
        out.push(message);
    }
    out.push(marker(active));
    out
}

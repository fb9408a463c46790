//! The openai-completions request: headers, body and the transcript mapping (kit README §8.2).
//! Nothing here does I/O.

use super::super::http::HttpRequest;
use super::super::limits::{clamp_level, js_len, max_tokens, text_of, truthy};
use super::super::transcript::{is_role, request_tools, resolve, transform};
use super::super::Call;
use super::{is_reasoning_detail, Compat, REASONING_FIELDS};
use crate::json::{json, number, to_string, Json, JsonMap};
use crate::message::Message;
use crate::transcript::{get_system_message_text, render_system_message_update};

/// `PI_CACHE_RETENTION=long` (options.env or the process) makes `long` the default.
pub(crate) fn cache_retention(call: &Call) -> String {
    if let Some(retention) = call
        .option("cacheRetention")
        .and_then(Json::as_str)
        .filter(|r| !r.is_empty())
    {
        return retention.to_string();
    }
    match super::super::env::value("PI_CACHE_RETENTION", call.option("env")) {
        Some(v) if v == "long" => "long".into(),
        _ => "short".into(),
    }
}

/// The OpenAI SDK's headers (bearer key, user agent), identity attribution and the model's own
/// headers: the start of every OpenAI request (chat completions and responses).
pub(in crate::providers) fn sdk_headers(call: &Call) -> HeaderList {
    let mut headers = HeaderList::default();
    headers.set("accept", Some("application/json".into()));
    headers.set(
        "authorization",
        call.api_key.as_ref().map(|k| format!("Bearer {k}")),
    );
    headers.set("user-agent", Some(super::super::user_agent(call)));
    for (name, value) in super::super::attribution_headers(call) {
        headers.set(&name, Some(value));
    }
    headers.merge(call.model.get("headers"));
    headers
}

pub(super) fn build_request(call: &Call, compat: &Compat) -> HttpRequest {
    let retention = cache_retention(call);
    let session = call
        .option("sessionId")
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty());
    let cache_session = session.filter(|_| retention != "none");
    // Headers: SDK defaults, identity attribution, model headers, session affinity, options.
    let mut headers = sdk_headers(call);
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
    let resolved = resolve(&call.messages, compat.mid_convo_system_messages);
    let messages = resolved.refs();
    let mut body = JsonMap::new();
    body.insert(
        "model".into(),
        call.model.get("id").cloned().unwrap_or(Json::Null),
    );
    let additions = compat.mid_convo_system_messages && compat.mid_convo_tool_additions;
    let (request_tools, folded) = request_tools(&messages, additions);
    body.insert(
        "messages".into(),
        Json::Array(convert_messages(call, compat, &messages, folded)),
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
    if !request_tools.is_empty() {
        let converted = request_tools
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

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().map(Message::json).any(|m| {
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

/// Tool-call ids from other providers: `call|item` ids become `call_item` (or, past 40 UTF-16
/// units, the call id cut short plus pi-ai's hash of the whole id), OpenAI's own are cut to 40.
fn normalize_id_openai(id: &str) -> String {
    normalize_id(id, true)
}

fn normalize_id_other(id: &str) -> String {
    normalize_id(id, false)
}

pub(super) fn normalize_id(id: &str, provider_openai: bool) -> String {
    if let Some((call_id, item_id)) = id.split_once('|') {
        let (call_id, item_id) = (sanitize_id(call_id), sanitize_id(item_id));
        let combined = if item_id.is_empty() {
            call_id.clone()
        } else {
            format!("{call_id}_{item_id}")
        };
        // Sanitized ids are ASCII: bytes are UTF-16 units.
        if combined.len() <= 40 {
            return combined;
        }
        let hash: String = short_hash(id).chars().take(8).collect();
        let keep = 40usize.saturating_sub(hash.len() + 1).max(1);
        return format!("{}_{hash}", &call_id[..keep.min(call_id.len())]);
    }
    if provider_openai && js_len(id) > 40.0 {
        return utf16_prefix(id, 40);
    }
    id.to_string()
}

/// Every UTF-16 unit outside `[a-zA-Z0-9_-]` becomes `_` (a character beyond the BMP gives two,
/// as JavaScript's non-Unicode regular expressions see it).
fn sanitize_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
    }
    out
}

/// The longest prefix of at most `units` UTF-16 units (a pair that would be cut is dropped:
/// Rust strings cannot end in half a pair).
fn utf16_prefix(text: &str, units: usize) -> String {
    let mut used = 0;
    text.chars()
        .take_while(|c| {
            used += c.len_utf16();
            used <= units
        })
        .collect()
}

/// pi-ai's `shortHash`: two 32-bit multiply-xor lanes over the UTF-16 units, mixed at the end,
/// written as two base-36 numbers (the second lane first).
pub(crate) fn short_hash(text: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in text.encode_utf16() {
        h1 = (h1 ^ u32::from(unit)).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ u32::from(unit)).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

/// `n.toString(36)`.
fn base36(mut n: u32) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit(n % 36, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}

fn image_url(block: &Json) -> Json {
    let mime = block.get("mimeType").and_then(Json::as_str).unwrap_or("");
    let data = block.get("data").and_then(Json::as_str).unwrap_or("");
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

/// The request's messages; tools added by system messages past the first `folded` ones go out in
/// place, as a `{"role": "system", "tools": [...]}` message.
fn convert_messages(call: &Call, compat: &Compat, messages: &[&Json], folded: usize) -> Vec<Json> {
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
    let mut system_index = 0;
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
                let added = message.get("toolsAdded").and_then(Json::as_array);
                if let Some(added) = added.filter(|a| system_index >= folded && !a.is_empty()) {
                    let tools = added.iter().map(|t| convert_tool(t, compat)).collect();
                    out.push(json!({"role": "system", "tools": Json::Array(tools)}));
                }
                system_index += 1;
                // Only a leading system message is the whole prompt; later ones are updates.
                let text = if i == 0 {
                    get_system_message_text(message)
                } else {
                    render_system_message_update(message)
                };
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

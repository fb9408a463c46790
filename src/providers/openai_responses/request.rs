//! The openai-responses request: headers, body and the transcript as input items (kit README
//! §8.8). Nothing here does I/O.

use super::super::http::HttpRequest;
use super::super::limits::{clamp_level, js_len, max_tokens, text_of, truthy};
use super::super::openai::request::{cache_retention, sdk_headers, short_hash};
use super::super::transcript::{is_role, request_tools, resolve, transform_with};
use super::super::Call;
use super::grammar::{self, InputProperties};
use super::{Compat, ITEM_ID_PROVIDERS};
use crate::json::{json, number, str_field, to_string, Json, JsonMap};
use crate::transcript::{get_system_message_text, render_system_message_update};

/// OpenAI rejects `max_output_tokens` below 16.
const MIN_OUTPUT_TOKENS: f64 = 16.0;
/// The longest message or tool item id OpenAI accepts.
const MAX_ITEM_ID_LEN: usize = 64;

/// The request and the grammar tools' input properties, or the text of the error the stream
/// ends with (pi-ai fails the stream, it does not throw, for a transcript it cannot send).
pub(super) fn build_request(
    call: &Call,
    compat: &Compat,
) -> Result<(HttpRequest, InputProperties), String> {
    let resolved = resolve(&call.messages, compat.supports_mid_convo_system_messages);
    let messages = resolved.refs();
    let properties = grammar::input_properties(&messages, compat.supports_grammar_tools)?;
    let retention = cache_retention(call);
    let session = call
        .option("sessionId")
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty() && retention != "none");
    // Headers: SDK defaults, identity, model headers, session affinity, options.
    let mut headers = sdk_headers(call);
    if call.model_str("provider") == "github-copilot" {
        for (name, value) in copilot_headers(&messages) {
            headers.set(name, Some(value.into()));
        }
    }
    if let Some(session) = session {
        if compat.session_affinity_format == "openrouter" {
            headers.set("x-session-id", Some(session.into()));
        } else {
            if compat.session_affinity_format == "openai" {
                headers.set("session-id", Some(session.into()));
            }
            headers.set("x-client-request-id", Some(session.into()));
        }
    }
    headers.merge(call.option("headers"));
    headers.set("content-type", Some("application/json".into()));
    let base = call.model_str("baseUrl").trim_end_matches('/');
    let body = build_body(call, compat, &retention, &messages, &properties)?;
    let request = HttpRequest {
        url: format!("{base}/responses"),
        headers: headers.into_vec(),
        body: to_string(&body),
        transport: call.transport.clone(),
    };
    Ok((request, properties))
}

/// With `compat.supportsMidConvoEffort`, the thinking level (mapped) that `configuration_update`
/// items carry; the request's own effort is then fixed.
pub(super) fn configuration_effort(call: &Call, compat: &Compat) -> Option<Json> {
    if !compat.supports_mid_convo_effort || chatgpt_sign_in(call) {
        return None;
    }
    let effort = reasoning_effort(call)?;
    Some(
        call.model
            .get("thinkingLevelMap")
            .and_then(|m| m.get(effort.as_str()))
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| effort.into()),
    )
}

/// The effort a request carries while `configuration_update` items carry the thinking level.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// GitHub Copilot's per-request headers: who started the turn (the user, or the agent after a
/// tool result) and whether images are in the conversation.
fn copilot_headers(messages: &[&Json]) -> Vec<(&'static str, &'static str)> {
    let initiator = match messages.last() {
        Some(last) if !is_role(last, "user") => "agent",
        _ => "user",
    };
    let mut headers = vec![
        ("X-Initiator", initiator),
        ("Openai-Intent", "conversation-edits"),
    ];
    let has_image = messages.iter().any(|m| {
        (is_role(m, "user") || is_role(m, "toolResult"))
            && m.get("content")
                .and_then(Json::as_array)
                .is_some_and(|blocks| blocks.iter().any(|b| block_type(b) == "image"))
    });
    if has_image {
        headers.push(("Copilot-Vision-Request", "true"));
    }
    headers
}

/// A ChatGPT sign-in token sent to OpenAI itself (not an `sk-` key): some fields are refused.
fn chatgpt_sign_in(call: &Call) -> bool {
    call.model_str("provider") == "openai"
        && call.model_str("baseUrl") == "https://api.openai.com/v1"
        && call
            .api_key
            .as_deref()
            .is_some_and(|k| !k.starts_with("sk-"))
}

fn build_body(
    call: &Call,
    compat: &Compat,
    retention: &str,
    messages: &[&Json],
    properties: &InputProperties,
) -> Result<Json, String> {
    // Tools added mid-conversation stay in place (as tool-search items) only with tool search.
    let (tools, folded) = request_tools(messages, compat.supports_tool_search);
    let sign_in = chatgpt_sign_in(call);
    let mut body = JsonMap::new();
    body.insert(
        "model".into(),
        call.model.get("id").cloned().unwrap_or(Json::Null),
    );
    body.insert(
        "input".into(),
        Json::Array(input_items(call, compat, messages, properties, folded)?),
    );
    body.insert("stream".into(), true.into());
    if retention != "none" && compat.prompt_cache_key_mode != "disabled" {
        if let Some(session) = call.option("sessionId").and_then(Json::as_str) {
            let key: String = session.chars().take(64).collect();
            body.insert("prompt_cache_key".into(), key.into());
        }
    }
    if !sign_in {
        let explicit = compat.supports_explicit_prompt_cache_mode;
        if retention == "long" && compat.supports_long_cache_retention && !explicit {
            body.insert("prompt_cache_retention".into(), "24h".into());
        }
        if explicit && retention == "none" {
            body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
        } else if explicit && retention == "long" && compat.supports_long_cache_retention {
            body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
        }
    }
    body.insert("store".into(), false.into());
    let max = max_tokens(&call.model, &call.messages, &call.options);
    if max != 0.0 && !max.is_nan() && compat.supports_max_output_tokens && !sign_in {
        body.insert(
            "max_output_tokens".into(),
            number(max.max(MIN_OUTPUT_TOKENS)),
        );
    }
    // pi-ai sends these whenever they are defined, `null` included.
    if let Some(temperature) = call.options.get("temperature").filter(|_| !sign_in) {
        body.insert("temperature".into(), temperature.clone());
    }
    if !tools.is_empty() {
        let converted: Vec<Json> = tools
            .iter()
            .map(|t| convert_tool(t, compat))
            .collect::<Result<_, _>>()?;
        body.insert("tools".into(), Json::Array(converted));
    }
    if let Some(choice) = call.options.get("toolChoice") {
        body.insert("tool_choice".into(), choice.clone());
    }
    let effort = reasoning_effort(call);
    if call.model.get("reasoning").is_some_and(truthy) {
        let map = call.model.get("thinkingLevelMap");
        if let Some(effort) = &effort {
            let mapped = match configuration_effort(call, compat) {
                Some(_) => CONFIGURATION_UPDATE_REQUEST_EFFORT.into(),
                None => map
                    .and_then(|m| m.get(effort.as_str()))
                    .filter(|v| !v.is_null())
                    .cloned()
                    .unwrap_or_else(|| effort.clone().into()),
            };
            body.insert(
                "reasoning".into(),
                json!({"effort": mapped, "summary": "auto"}),
            );
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        } else {
            let off = map.and_then(|m| m.get("off"));
            if call.model_str("provider") != "github-copilot" && !matches!(off, Some(Json::Null)) {
                let off = off.cloned().unwrap_or_else(|| "none".into());
                body.insert("reasoning".into(), json!({"effort": off}));
            }
        }
        if call.model_str("provider") == "xai" {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    // Sampling parameters last: they override the named fields.
    let level = clamp_level(
        &call.model,
        call.option("reasoning")
            .and_then(Json::as_str)
            .unwrap_or("off"),
    );
    let by_level = call
        .model
        .get("samplingParamsByThinkingLevel")
        .and_then(|m| m.get(level.as_str()));
    for source in [
        call.model.get("samplingParams"),
        by_level,
        call.option("samplingParams"),
    ] {
        for (key, value) in source.and_then(Json::as_object).into_iter().flatten() {
            body.insert(key.clone(), value.clone());
        }
    }
    Ok(Json::Object(body))
}

/// The clamped reasoning level, `None` for off.
fn reasoning_effort(call: &Call) -> Option<String> {
    let requested = call
        .option("reasoning")
        .and_then(Json::as_str)
        .filter(|r| !r.is_empty())?;
    Some(clamp_level(&call.model, requested)).filter(|level| level != "off")
}

/// `{type: "function", name, description, parameters, strict?}`; a tool asking for strict JSON
/// schema sampling gets the strict schema when the model supports strict mode; a grammar tool is
/// `{type: "custom", name, description, format}`.
fn convert_tool(tool: &Json, compat: &Compat) -> Result<Json, String> {
    convert_tool_as(tool, compat, false)
}

/// [`convert_tool`]; `deferred`: a tool loaded by tool search (`defer_loading: true`).
fn convert_tool_as(tool: &Json, compat: &Compat, deferred: bool) -> Result<Json, String> {
    if let Some(grammar) = grammar::resolve(tool, compat.supports_grammar_tools)? {
        let mut custom = JsonMap::new();
        custom.insert("type".into(), "custom".into());
        custom.insert(
            "name".into(),
            tool.get("name").cloned().unwrap_or(Json::Null),
        );
        if let Some(description) = tool.get("description") {
            custom.insert("description".into(), description.clone());
        }
        custom.insert(
            "format".into(),
            json!({"type": "grammar", "syntax": grammar.syntax, "definition": grammar.definition}),
        );
        if deferred {
            custom.insert("defer_loading".into(), true.into());
        }
        return Ok(Json::Object(custom));
    }
    let strict =
        super::super::anthropic::strict_schema(tool, compat.supports_strict_mode, |_, _| false)?;
    let mut function = JsonMap::new();
    function.insert("type".into(), "function".into());
    function.insert(
        "name".into(),
        tool.get("name").cloned().unwrap_or(Json::Null),
    );
    if let Some(description) = tool.get("description") {
        function.insert("description".into(), description.clone());
    }
    let parameters = strict.clone().or_else(|| tool.get("parameters").cloned());
    if let Some(parameters) = parameters {
        function.insert("parameters".into(), parameters);
    }
    if deferred {
        function.insert("defer_loading".into(), true.into());
    }
    if compat.supports_strict_mode {
        function.insert("strict".into(), strict.is_some().into());
    }
    Ok(Json::Object(function))
}

/// pi-ai's id part normalization: characters outside `[a-zA-Z0-9_-]` become `_` (per UTF-16
/// unit), at most 64 units, trailing `_` removed.
fn normalize_id_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
    }
    // Only ASCII is left: bytes are UTF-16 units.
    out.truncate(MAX_ITEM_ID_LEN);
    out.trim_end_matches('_').to_string()
}

/// A tool-call id of another model, as this API replays it: `call|item` ids keep both parts for
/// OpenAI's own providers (an item id from another provider or API becomes `fc_<hash>`, and
/// every item id starts with `fc_`); any other id is sanitized as a whole.
pub(super) fn normalize_tool_call_id(model: &Json, id: &str, source: &Json) -> String {
    let provider = str_field(model, "provider").unwrap_or("");
    if !ITEM_ID_PROVIDERS.contains(&provider) || !id.contains('|') {
        return normalize_id_part(id);
    }
    let mut parts = id.split('|');
    let call_id = normalize_id_part(parts.next().unwrap_or(""));
    let item_id = parts.next().unwrap_or("");
    let foreign =
        source.get("provider") != model.get("provider") || source.get("api") != model.get("api");
    let mut item_id = if foreign {
        let mut hashed = format!("fc_{}", short_hash(item_id));
        hashed.truncate(MAX_ITEM_ID_LEN);
        hashed
    } else {
        normalize_id_part(item_id)
    };
    if !item_id.starts_with("fc_") {
        item_id = normalize_id_part(&format!("fc_{item_id}"));
    }
    format!("{call_id}|{item_id}")
}

fn block_type(block: &Json) -> &str {
    block.get("type").and_then(Json::as_str).unwrap_or("")
}

fn image_part(block: &Json) -> Json {
    let mime = block.get("mimeType").and_then(Json::as_str).unwrap_or("");
    let data = block.get("data").and_then(Json::as_str).unwrap_or("");
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime};base64,{data}")})
}

/// The transcript as Responses input items.
fn input_items(
    call: &Call,
    compat: &Compat,
    messages: &[&Json],
    properties: &InputProperties,
    folded: usize,
) -> Result<Vec<Json>, String> {
    let model = &call.model;
    let effort_update = configuration_effort(call, compat);
    let mut system_index = 0;
    let normalize = |id: &str, source: &Json| normalize_tool_call_id(model, id, source);
    let transformed = transform_with(messages, model, Some(&normalize));
    let takes_images = model
        .get("input")
        .and_then(Json::as_array)
        .is_some_and(|i| i.iter().any(|x| x.as_str() == Some("image")));
    // pi-ai reads `supportsDeveloperRole` from the model's compat here (default true).
    let instruction_role =
        if model.get("reasoning").is_some_and(truthy) && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
    let mut items = Vec::new();
    // Counts the messages after the leading system message (fallback message ids).
    let mut message_index = 0;
    for (position, message) in transformed.iter().enumerate() {
        let leading_system = position == 0 && is_role(message, "system");
        let role = message.get("role").and_then(Json::as_str).unwrap_or("");
        match role {
            "system" => {
                // Tools added past the folded system messages are loaded where they were added.
                if system_index >= folded {
                    let seed = format!("system:{message_index}");
                    items.extend(tool_search_items(message, &seed, compat)?);
                }
                system_index += 1;
                let text = if leading_system {
                    get_system_message_text(message)
                } else {
                    render_system_message_update(message)
                };
                if !text.is_empty() {
                    items.push(json!({"role": instruction_role, "content": text}));
                }
            }
            "user" => {
                match message.get("content") {
                    Some(Json::String(text)) => {
                        items.push(json!({"role": "user", "content": [{"type": "input_text", "text": text}]}));
                    }
                    other => {
                        let content: Vec<Json> = other
                            .and_then(Json::as_array)
                            .into_iter()
                            .flatten()
                            .map(|block| match block_type(block) {
                                "text" => json!({"type": "input_text",
                                "text": block.get("text").cloned().unwrap_or(Json::Null)}),
                                _ => image_part(block),
                            })
                            .collect();
                        if content.is_empty() {
                            continue;
                        }
                        items.push(json!({"role": "user", "content": content}));
                    }
                }
            }
            "assistant" => {
                let output = assistant_items(model, message, message_index, properties)?;
                if output.is_empty() {
                    continue;
                }
                let same_model = message.get("provider") == model.get("provider")
                    && message.get("api") == model.get("api")
                    && message.get("model") == model.get("id");
                let level = message.get("providerThinkingLevel");
                if let (Some(_), true, Some(level)) = (&effort_update, same_model, level) {
                    items.push(json!({"type": "configuration_update", "reasoning": {"effort": level.clone()}}));
                }
                items.extend(output);
            }
            "toolResult" => {
                let id = message
                    .get("toolCallId")
                    .and_then(Json::as_str)
                    .unwrap_or("");
                let call_id = id.split('|').next().unwrap_or("");
                let blocks = message
                    .get("content")
                    .and_then(Json::as_array)
                    .map_or(&[][..], Vec::as_slice);
                let name = message.get("toolName").and_then(Json::as_str).unwrap_or("");
                let kind = if properties.contains_key(name) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                items.push(json!({"type": kind, "call_id": call_id,
                    "output": tool_output(blocks, takes_images)}));
            }
            _ => {}
        }
        if !leading_system {
            message_index += 1;
        }
    }
    if let Some(level) = effort_update {
        items.push(json!({"type": "configuration_update", "reasoning": {"effort": level}}));
    }
    Ok(items)
}

/// The client tool-search call and output that load the tools a system message added.
fn tool_search_items(message: &Json, seed: &str, compat: &Compat) -> Result<Vec<Json>, String> {
    let added: Vec<&Json> = message
        .get("toolsAdded")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .collect();
    if added.is_empty() || !compat.supports_tool_search {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = added
        .iter()
        .map(|t| t.get("name").and_then(Json::as_str).unwrap_or(""))
        .collect();
    let call_id = format!(
        "pi_tool_load_{}",
        short_hash(&format!("{seed}:{}", names.join(",")))
    );
    let tools = added
        .iter()
        .map(|t| convert_tool_as(t, compat, true))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(vec![
        json!({"type": "tool_search_call", "call_id": call_id.clone(), "execution": "client",
            "status": "completed", "arguments": {"query": names.join(" "), "limit": names.len()}}),
        json!({"type": "tool_search_output", "call_id": call_id, "execution": "client",
            "status": "completed", "tools": Json::Array(tools)}),
    ])
}

/// A tool result's `output`: its text (blocks joined by a line break), or an array of text and
/// images when it has images the model can take.
fn tool_output(blocks: &[Json], takes_images: bool) -> Json {
    let text = text_of(Some(&Json::Array(blocks.to_vec())), "\n");
    let images: Vec<&Json> = blocks.iter().filter(|b| block_type(b) == "image").collect();
    let has_text = !text.trim().is_empty();
    if images.is_empty() || !takes_images {
        return Json::String(if has_text {
            text
        } else if !images.is_empty() {
            "(see attached image)".into()
        } else {
            "(no tool output)".into()
        });
    }
    let mut output = Vec::new();
    if has_text {
        output.push(json!({"type": "input_text", "text": text}));
    }
    output.extend(images.into_iter().map(image_part));
    Json::Array(output)
}

/// The id and phase a text block's `textSignature` carries: `{"v":1,"id","phase"?}` or a legacy
/// plain id.
pub(super) fn text_signature(signature: Option<&Json>) -> Option<(String, Option<String>)> {
    let signature = signature.and_then(Json::as_str).filter(|s| !s.is_empty())?;
    if signature.starts_with('{') {
        if let Ok(parsed) = crate::json::parse(signature) {
            let v1 = parsed.get("v").and_then(Json::as_f64) == Some(1.0);
            if let (true, Some(id)) = (v1, parsed.get("id").and_then(Json::as_str)) {
                let phase = parsed
                    .get("phase")
                    .and_then(Json::as_str)
                    .filter(|p| matches!(*p, "commentary" | "final_answer"))
                    .map(str::to_string);
                return Some((id.to_string(), phase));
            }
        }
    }
    Some((signature.to_string(), None))
}

/// An assistant turn's items: its reasoning items (from thinking signatures), messages and
/// function calls, in block order.
fn assistant_items(
    model: &Json,
    message: &Json,
    message_index: usize,
    properties: &InputProperties,
) -> Result<Vec<Json>, String> {
    let same_provider_api =
        message.get("provider") == model.get("provider") && message.get("api") == model.get("api");
    let different_model = same_provider_api && message.get("model") != model.get("id");
    let mut items = Vec::new();
    let mut text_index = 0;
    for block in message
        .get("content")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        match block_type(block) {
            "thinking" => {
                let Some(signature) = block
                    .get("thinkingSignature")
                    .filter(|s| truthy(s))
                    .and_then(Json::as_str)
                else {
                    continue;
                };
                let item = crate::json::parse(signature).map_err(|e| {
                    format!("The thinking signature of an earlier turn is not a Responses reasoning item (invalid JSON: {e}).")
                })?;
                items.push(item);
            }
            "text" => {
                let parsed = text_signature(block.get("textSignature"));
                let fallback = if text_index == 0 {
                    format!("msg_pi_{message_index}")
                } else {
                    format!("msg_pi_{message_index}_{text_index}")
                };
                text_index += 1;
                let (id, phase) = match parsed {
                    Some((id, phase)) if !id.is_empty() => (id, phase),
                    Some((_, phase)) => (fallback, phase),
                    None => (fallback, None),
                };
                let id = if js_len(&id) > MAX_ITEM_ID_LEN as f64 {
                    format!("msg_{}", short_hash(&id))
                } else {
                    id
                };
                let mut item = JsonMap::new();
                item.insert("type".into(), "message".into());
                item.insert("role".into(), "assistant".into());
                item.insert(
                    "content".into(),
                    json!([{"type": "output_text",
                        "text": block.get("text").cloned().unwrap_or(Json::Null), "annotations": []}]),
                );
                item.insert("status".into(), "completed".into());
                item.insert("id".into(), id.into());
                if let Some(phase) = phase {
                    item.insert("phase".into(), phase.into());
                }
                items.push(Json::Object(item));
            }
            "toolCall" => {
                let id = block.get("id").and_then(Json::as_str).unwrap_or("");
                let mut parts = id.split('|');
                let call_id = parts.next().unwrap_or("");
                let name = block.get("name").and_then(Json::as_str).unwrap_or("");
                let property = properties.get(name);
                let prefix = if property.is_some() { "ctc_" } else { "fc_" };
                // Another model's item ids would fail OpenAI's pairing with its reasoning items,
                // and an id of the other call type would be refused.
                let item_id = parts
                    .next()
                    .filter(|item| !different_model && item.starts_with(prefix));
                let mut item = JsonMap::new();
                let kind = if property.is_some() {
                    "custom_tool_call"
                } else {
                    "function_call"
                };
                item.insert("type".into(), kind.into());
                if let Some(item_id) = item_id {
                    item.insert("id".into(), item_id.into());
                }
                item.insert("call_id".into(), call_id.into());
                item.insert(
                    "name".into(),
                    block.get("name").cloned().unwrap_or(Json::Null),
                );
                if let Some(property) = property {
                    let input = block
                        .get("arguments")
                        .and_then(|a| a.get(property.as_str()))
                        .and_then(Json::as_str)
                        .ok_or_else(|| {
                            format!("Grammar tool call \"{name}\" requires argument \"{property}\" to be a string.")
                        })?;
                    item.insert("input".into(), input.into());
                } else if let Some(arguments) = block.get("arguments") {
                    item.insert("arguments".into(), to_string(arguments).into());
                }
                let same_model = same_provider_api && !different_model;
                if let Some(namespace) = block.get("namespace").filter(|_| same_model) {
                    item.insert("namespace".into(), namespace.clone());
                }
                items.push(Json::Object(item));
            }
            _ => {}
        }
    }
    Ok(items)
}

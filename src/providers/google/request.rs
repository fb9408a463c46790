//! The google-generative-ai request: URL, headers, body and the transcript mapping (kit README
//! §8.10). Nothing here does I/O.

use std::sync::OnceLock;

use regex::Regex;

use super::super::anthropic::strict;
use super::super::http::HttpRequest;
use super::super::limits::{clamp_level, max_tokens, truthy};
use super::super::openai::HeaderList;
use super::super::transcript::{is_role, resolve, tools, transform};
use super::super::{attribution_headers, user_agent, Call};
use super::{gemini_major_version, model_id, requires_tool_call_id};
use crate::json::{is_js_whitespace, json, number, str_field, to_string, Json, JsonMap};
use crate::transcript::get_system_message_text;

/// The Google SDK's address of the Gemini API (with its default API version).
const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// What `streamSimple` decided about thinking.
#[derive(Debug, Clone, PartialEq)]
pub enum Thinking {
    /// No level or `off`: thinking is turned down as far as the model allows.
    Disabled,
    /// Gemini 3+: `MINIMAL`, `LOW`, `MEDIUM` or `HIGH`.
    Level(&'static str),
    /// Gemini 2.x and others: a token budget (`thinkingBudgets[level]` is passed as given).
    Budget(Json),
}

/// pi-ai's choice of thinking configuration from `options.reasoning` (a failure is its
/// synchronous error for a level mapped to something Gemini does not know).
pub(super) fn thinking(call: &Call) -> Result<Thinking, String> {
    let Some(requested) = call
        .option("reasoning")
        .and_then(Json::as_str)
        .filter(|r| !r.is_empty())
    else {
        return Ok(Thinking::Disabled);
    };
    let level = clamp_level(&call.model, requested);
    if level == "off" {
        return Ok(Thinking::Disabled);
    }
    let resolved = resolve_level(&call.model, &level)?;
    if uses_thinking_level(model_id(&call.model)) {
        return Ok(Thinking::Level(google_level(resolved)));
    }
    let custom = call
        .option("thinkingBudgets")
        .and_then(|b| b.get(resolved))
        .cloned();
    Ok(Thinking::Budget(custom.unwrap_or_else(|| {
        number(default_budget(model_id(&call.model), resolved))
    })))
}

/// `thinkingLevelMap[level]` (when a string, lowercased) or the level itself, which must be one
/// of Gemini's four.
fn resolve_level(model: &Json, level: &str) -> Result<&'static str, String> {
    let mapped = model.get("thinkingLevelMap").and_then(|m| m.get(level));
    let resolved = match mapped {
        Some(Json::String(text)) => text.to_lowercase(),
        _ => level.to_string(),
    };
    match resolved.as_str() {
        "minimal" => Ok("minimal"),
        "low" => Ok("low"),
        "medium" => Ok("medium"),
        "high" => Ok("high"),
        _ => {
            let shown = match mapped {
                None => "undefined".to_string(),
                Some(Json::String(text)) => text.clone(),
                Some(other) => to_string(other),
            };
            Err(format!(
                "Unsupported Google thinking level mapping for {}/{}: {level} -> {shown}",
                str_field(model, "provider").unwrap_or(""),
                model_id(model)
            ))
        }
    }
}

fn google_level(level: &str) -> &'static str {
    match level {
        "minimal" => "MINIMAL",
        "low" => "LOW",
        "medium" => "MEDIUM",
        _ => "HIGH",
    }
}

/// Gemini 3+ Pro/Flash, Gemini 4 and later, the `*-flash(-lite)-latest` aliases and Gemma 4
/// take a thinking level; other models a token budget.
pub(super) fn uses_thinking_level(id: &str) -> bool {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        Regex::new(r"gemini-3(?:\.\d+)?-(?:pro|flash)|gemini-(?:[4-9]|[1-9]\d)|gemma-?4")
            .expect("a valid pattern")
    });
    let id = id.to_lowercase();
    pattern.is_match(&id) || id == "gemini-flash-latest" || id == "gemini-flash-lite-latest"
}

/// pi-ai's default thinking budgets (tokens) per model family; -1 lets the model decide.
fn default_budget(id: &str, level: &str) -> f64 {
    let table: [f64; 4] = if id.contains("2.5-pro") {
        [128.0, 2048.0, 8192.0, 32768.0]
    } else if id.contains("2.5-flash-lite") {
        [512.0, 2048.0, 8192.0, 24576.0]
    } else if id.contains("2.5-flash") {
        [128.0, 2048.0, 8192.0, 24576.0]
    } else {
        return -1.0;
    };
    match level {
        "minimal" => table[0],
        "low" => table[1],
        "medium" => table[2],
        _ => table[3],
    }
}

/// The request, or the text of pi-ai's failure while building it (a strict tool that cannot be
/// strict, a level mapping it cannot send).
pub(super) fn build(call: &Call, thinking: &Thinking) -> Result<HttpRequest, String> {
    let body = build_body(call, thinking)?;
    let id = model_id(&call.model);
    let path = if id.starts_with("models/") || id.starts_with("tunedModels/") {
        id.to_string()
    } else {
        format!("models/{id}")
    };
    let base = match call.model_str("baseUrl").trim_end_matches('/') {
        "" => DEFAULT_BASE_URL,
        base => base,
    };
    Ok(HttpRequest {
        url: format!("{base}/{path}:streamGenerateContent?alt=sse"),
        headers: headers(call),
        body: to_string(&body),
        transport: call.transport.clone(),
    })
}

/// The Google SDK refuses model names that could step out of the URL path.
pub(super) fn check_model_id(id: &str) -> Result<(), String> {
    if id.contains("..") || id.contains('?') || id.contains('&') {
        return Err("invalid model parameter".into());
    }
    Ok(())
}

/// Identity, `model.headers` and `options.headers` (a `null` removes one of them), over the SDK's
/// `content-type: application/json`; the key only when no `x-goog-api-key` header was given;
/// fetch's `accept: */*` when no `accept` was.
fn headers(call: &Call) -> Vec<(String, String)> {
    let mut headers = HeaderList::default();
    headers.set("user-agent", Some(user_agent(call)));
    for (name, value) in attribution_headers(call) {
        headers.set(&name, Some(value));
    }
    headers.merge(call.model.get("headers"));
    headers.merge(call.option("headers"));
    let mut list = headers.into_vec();
    let has = |list: &[(String, String)], name: &str| {
        list.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !has(&list, "content-type") {
        list.insert(0, ("content-type".into(), "application/json".into()));
    }
    if !has(&list, "x-goog-api-key") {
        if let Some(key) = &call.api_key {
            list.push(("x-goog-api-key".into(), key.clone()));
        }
    }
    if !has(&list, "accept") {
        list.push(("accept".into(), "*/*".into()));
    }
    list
}

fn build_body(call: &Call, thinking: &Thinking) -> Result<Json, String> {
    let resolved = resolve(&call.messages, false);
    let messages = resolved.refs();
    let current_tools = tools(&call.messages);
    let strict_supported = gemini_major_version(model_id(&call.model)).is_some_and(|v| v >= 3);
    let mut body = JsonMap::new();
    body.insert(
        "contents".into(),
        Json::Array(convert_messages(&call.model, &messages)),
    );
    let system = messages
        .first()
        .filter(|m| is_role(m, "system"))
        .map(|m| get_system_message_text(m))
        .unwrap_or_default();
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}], "role": "user"}),
        );
    }
    if !current_tools.is_empty() {
        let mut declarations = Vec::with_capacity(current_tools.len());
        let mut any_strict = false;
        for tool in &current_tools {
            let strict_schema = strict::resolve_with(tool, strict_supported, |_, _| false)?;
            any_strict |= strict_schema.is_some();
            declarations.push(declaration(tool, strict_schema));
        }
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": Json::Array(declarations)}]),
        );
        if let Some(mode) = calling_mode(call.option("toolChoice"), any_strict) {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": mode}}),
            );
        }
    }
    let mut generation = JsonMap::new();
    if let Some(temperature) = call.option("temperature") {
        generation.insert("temperature".into(), temperature.clone());
    }
    // Without any max tokens pi-ai computes NaN, which goes out as null (no limit).
    let has_max = call
        .option("maxTokens")
        .or_else(|| call.model.get("maxTokens"))
        .is_some_and(Json::is_number);
    let max = max_tokens(&call.model, &call.messages, &call.options);
    let max = if has_max && max.is_finite() {
        number(max)
    } else {
        Json::Null
    };
    generation.insert("maxOutputTokens".into(), max);
    if let Some(config) = thinking_config(&call.model, thinking)? {
        generation.insert("thinkingConfig".into(), config);
    }
    body.insert("generationConfig".into(), Json::Object(generation));
    Ok(Json::Object(body))
}

/// `generationConfig.thinkingConfig`, only for reasoning models.
fn thinking_config(model: &Json, thinking: &Thinking) -> Result<Option<Json>, String> {
    if !model.get("reasoning").is_some_and(truthy) {
        return Ok(None);
    }
    let config = match thinking {
        Thinking::Level(level) => json!({"includeThoughts": true, "thinkingLevel": *level}),
        Thinking::Budget(budget) => {
            json!({"includeThoughts": true, "thinkingBudget": budget.clone()})
        }
        Thinking::Disabled => {
            // Level models that cannot turn thinking off get their lowest level.
            let fallback = clamp_level(model, "off");
            if !uses_thinking_level(model_id(model)) || fallback == "off" {
                json!({"thinkingBudget": 0})
            } else {
                json!({"thinkingLevel": google_level(resolve_level(model, &fallback)?)})
            }
        }
    };
    Ok(Some(config))
}

/// `toolConfig.functionCallingConfig.mode`: `none`/`any` as asked, else VALIDATED when a tool is
/// sent strict, else AUTO for any other given choice.
fn calling_mode(choice: Option<&Json>, any_strict: bool) -> Option<&'static str> {
    match choice.and_then(Json::as_str) {
        Some("none") => return Some("NONE"),
        Some("any") => return Some("ANY"),
        _ => {}
    }
    if any_strict {
        return Some("VALIDATED");
    }
    choice.filter(|c| truthy(c)).map(|_| "AUTO")
}

/// One function declaration: the parameters (strict when resolved so) with string and number
/// `const`s rewritten as one-value `enum`s, which Gemini honours.
fn declaration(tool: &Json, strict_schema: Option<Json>) -> Json {
    let mut declaration = JsonMap::new();
    declaration.insert(
        "name".into(),
        tool.get("name").cloned().unwrap_or(Json::Null),
    );
    if let Some(description) = tool.get("description") {
        declaration.insert("description".into(), description.clone());
    }
    if let Some(parameters) = strict_schema.or_else(|| tool.get("parameters").cloned()) {
        declaration.insert(
            "parametersJsonSchema".into(),
            const_as_enum(&parameters, false),
        );
    }
    Json::Object(declaration)
}

/// Keywords whose value maps names to subschemas.
const NAME_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Keywords holding a subschema or an array of subschemas.
const SUBSCHEMAS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Rewrites `const: "x"` (or a number) as `enum: ["x"]` in every schema of `schema`, leaving
/// literal data (`default`, `examples`, …) and property names alone.
fn const_as_enum(schema: &Json, name_map: bool) -> Json {
    match schema {
        Json::Array(items) => Json::Array(items.iter().map(|i| const_as_enum(i, false)).collect()),
        Json::Object(map) => {
            let mut out = JsonMap::with_capacity(map.len());
            for (key, value) in map {
                let value = if name_map || SUBSCHEMAS.contains(&key.as_str()) {
                    const_as_enum(value, false)
                } else if NAME_MAPS.contains(&key.as_str()) {
                    const_as_enum(value, true)
                } else {
                    value.clone()
                };
                out.insert(key.clone(), value);
            }
            if !name_map && !out.contains_key("enum") {
                if let Some(value) = out.get("const").filter(|v| v.is_string() || v.is_number()) {
                    let value = value.clone();
                    out.shift_remove("const");
                    out.insert("enum".into(), Json::Array(vec![value]));
                }
            }
            Json::Object(out)
        }
        other => other.clone(),
    }
}

/// Tool-call ids as Gemini 3 takes them: UTF-16 units outside `[a-zA-Z0-9_-]` become `_`, at
/// most 64 units.
fn normalize_id_for_ids(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
    }
    out.truncate(64);
    out
}

/// Models that are sent no ids keep them as they are.
fn keep_id(id: &str) -> String {
    id.to_string()
}

/// A thought signature is replayed only to the model that made it, and only if it is base64.
fn replayable_signature(same_model: bool, signature: Option<&Json>) -> Option<&str> {
    let signature = signature.and_then(Json::as_str)?;
    let base64 = !signature.is_empty() && signature.len() % 4 == 0 && {
        let body = signature.trim_end_matches('=');
        signature.len() - body.len() <= 2
            && !body.is_empty()
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    };
    (same_model && base64).then_some(signature)
}

/// JavaScript's `!text || text.trim() === ""`.
fn blank(text: Option<&str>) -> bool {
    text.is_none_or(|t| t.trim_matches(is_js_whitespace).is_empty())
}

fn inline_data(block: &Json) -> Json {
    let mut data = JsonMap::new();
    for key in ["mimeType", "data"] {
        if let Some(value) = block.get(key) {
            data.insert(key.into(), value.clone());
        }
    }
    json!({"inlineData": Json::Object(data)})
}

fn block_type(block: &Json) -> &str {
    str_field(block, "type").unwrap_or("")
}

fn content_blocks(message: &Json) -> &[Json] {
    message
        .get("content")
        .and_then(Json::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The collapsed transcript (leading system message excluded) as Gemini `contents`.
pub(super) fn convert_messages(model: &Json, messages: &[&Json]) -> Vec<Json> {
    let id = model_id(model);
    let send_ids = requires_tool_call_id(id);
    let conversation: Vec<&Json> = messages
        .iter()
        .enumerate()
        .filter(|(i, m)| !(*i == 0 && is_role(m, "system")))
        .map(|(_, m)| *m)
        .collect();
    let normalize = if send_ids {
        normalize_id_for_ids
    } else {
        keep_id
    };
    let transformed = transform(&conversation, model, Some(normalize));
    // Gemini 3+ (and non-Gemini models) take images inside the function response.
    let multimodal_responses = gemini_major_version(id).is_none_or(|v| v >= 3);
    let takes_images = model
        .get("input")
        .and_then(Json::as_array)
        .is_some_and(|input| input.iter().any(|i| i.as_str() == Some("image")));
    let mut contents: Vec<Json> = Vec::new();
    for message in &transformed {
        match str_field(message, "role") {
            Some("user") => {
                let parts: Vec<Json> = match message.get("content") {
                    Some(Json::String(text)) => vec![json!({"text": text})],
                    _ => content_blocks(message)
                        .iter()
                        .map(|block| match block_type(block) {
                            "text" => {
                                json!({"text": block.get("text").cloned().unwrap_or(Json::Null)})
                            }
                            _ => inline_data(block),
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Some("assistant") => {
                let same_model = message.get("provider") == model.get("provider")
                    && message.get("model") == model.get("id");
                let parts = assistant_parts(message, same_model, send_ids);
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Some("toolResult") => {
                tool_result(
                    message,
                    send_ids,
                    multimodal_responses,
                    takes_images,
                    &mut contents,
                );
            }
            _ => {}
        }
    }
    contents
}

fn assistant_parts(message: &Json, same_model: bool, send_ids: bool) -> Vec<Json> {
    let mut parts = Vec::new();
    for block in content_blocks(message) {
        match block_type(block) {
            "text" => {
                let signature = replayable_signature(same_model, block.get("textSignature"));
                let text = block.get("text").and_then(Json::as_str);
                if blank(text) && signature.is_none() {
                    continue;
                }
                let mut part = JsonMap::new();
                if let Some(text) = block.get("text") {
                    part.insert("text".into(), text.clone());
                }
                if let Some(signature) = signature {
                    part.insert("thoughtSignature".into(), signature.into());
                }
                parts.push(Json::Object(part));
            }
            "thinking" => {
                let text = block.get("thinking").and_then(Json::as_str);
                if same_model {
                    let signature =
                        replayable_signature(same_model, block.get("thinkingSignature"));
                    if blank(text) && signature.is_none() {
                        continue;
                    }
                    let mut part = JsonMap::new();
                    part.insert("thought".into(), true.into());
                    part.insert("text".into(), text.unwrap_or("").into());
                    if let Some(signature) = signature {
                        part.insert("thoughtSignature".into(), signature.into());
                    }
                    parts.push(Json::Object(part));
                } else if !blank(text) {
                    parts.push(json!({"text": text.unwrap_or("")}));
                }
            }
            "toolCall" => {
                let mut call = JsonMap::new();
                call.insert(
                    "name".into(),
                    block.get("name").cloned().unwrap_or(Json::Null),
                );
                let arguments = block
                    .get("arguments")
                    .filter(|a| !a.is_null())
                    .cloned()
                    .unwrap_or_else(|| Json::Object(JsonMap::new()));
                call.insert("args".into(), arguments);
                if send_ids {
                    if let Some(id) = block.get("id") {
                        call.insert("id".into(), id.clone());
                    }
                }
                let mut part = JsonMap::new();
                part.insert("functionCall".into(), Json::Object(call));
                if let Some(signature) =
                    replayable_signature(same_model, block.get("thoughtSignature"))
                {
                    part.insert("thoughtSignature".into(), signature.into());
                }
                parts.push(Json::Object(part));
            }
            _ => {}
        }
    }
    parts
}

/// A tool result as a `functionResponse` part, merged into the previous user turn when that
/// turn holds function responses; images of Gemini < 3 follow in a user turn of their own.
fn tool_result(
    message: &Json,
    send_ids: bool,
    multimodal_responses: bool,
    takes_images: bool,
    contents: &mut Vec<Json>,
) {
    let blocks = content_blocks(message);
    let text = blocks
        .iter()
        .filter(|b| block_type(b) == "text")
        .map(|b| b.get("text").and_then(Json::as_str).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let images: Vec<Json> = if takes_images {
        blocks
            .iter()
            .filter(|b| block_type(b) == "image")
            .map(inline_data)
            .collect()
    } else {
        Vec::new()
    };
    let value = if !blank(Some(&text)) {
        text
    } else if !images.is_empty() {
        "(see attached image)".to_string()
    } else {
        String::new()
    };
    let mut response = JsonMap::new();
    response.insert(
        "name".into(),
        message.get("toolName").cloned().unwrap_or(Json::Null),
    );
    let key = if message.get("isError").is_some_and(truthy) {
        "error"
    } else {
        "output"
    };
    let mut outcome = JsonMap::new();
    outcome.insert(key.into(), value.into());
    response.insert("response".into(), Json::Object(outcome));
    if !images.is_empty() && multimodal_responses {
        response.insert("parts".into(), Json::Array(images.clone()));
    }
    if send_ids {
        if let Some(id) = message.get("toolCallId") {
            response.insert("id".into(), id.clone());
        }
    }
    let part = json!({"functionResponse": Json::Object(response)});
    let merge = contents.last_mut().filter(|last| {
        last.get("role").and_then(Json::as_str) == Some("user")
            && last
                .get("parts")
                .and_then(Json::as_array)
                .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
    });
    match merge
        .and_then(|last| last.get_mut("parts"))
        .and_then(Json::as_array_mut)
    {
        Some(parts) => parts.push(part),
        None => contents.push(json!({"role": "user", "parts": [part]})),
    }
    if !images.is_empty() && !multimodal_responses {
        let mut parts = vec![json!({"text": "Tool result image:"})];
        parts.extend(images);
        contents.push(json!({"role": "user", "parts": parts}));
    }
}

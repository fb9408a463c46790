//! The transcript as pi-ai's providers see it (`resolveTranscript` + `transformMessages`):
//! system messages collapsed into one leading message, errored turns dropped, orphaned tool
//! calls given a synthetic result, other models' thinking dropped, tool-call ids normalized,
//! images replaced for text-only models.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

use crate::json::{json, now_ms, Json};
use crate::message::Message;
use crate::transcript::{current_system_message, get_current_tools};

use super::limits::truthy;

const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";

/// `resolveTranscript`: unless `compat.supportsMidConvoSystemMessages`, every system message is
/// replayed into one leading system message.
/// The messages are borrowed; only the merged system message is new.
pub fn resolve(messages: &[Message], keep_system_in_place: bool) -> Resolved<'_> {
    let trees = messages.iter().map(Message::json);
    if keep_system_in_place {
        return Resolved {
            head: None,
            messages: trees.collect(),
        };
    }
    Resolved {
        head: current_system_message(trees.clone()),
        messages: trees.filter(|m| !is_role(m, "system")).collect(),
    }
}

/// A resolved transcript: the merged system message (when system messages were merged), then
/// the request's other messages, borrowed.
pub struct Resolved<'a> {
    head: Option<Json>,
    messages: Vec<&'a Json>,
}

impl Resolved<'_> {
    /// Every message in order, the merged system message first.
    pub fn refs(&self) -> Vec<&Json> {
        self.head
            .iter()
            .chain(self.messages.iter().copied())
            .collect()
    }
}

/// The tools in effect after every system message.
pub fn tools<M: Borrow<Json>>(messages: &[M]) -> Vec<Json> {
    get_current_tools(messages)
}

/// `resolveTranscriptTools`: the request's top-level tools, and how many system messages (from
/// the first) they stand for. With `additions` (a model taking tools added mid-conversation),
/// a removal or a redeclared name cannot be sent in place, so the top-level tools are the state
/// after the last such change and only later additions stay in place; otherwise every system
/// message is folded into the top-level tools.
pub fn request_tools<M: Borrow<Json>>(messages: &[M], additions: bool) -> (Vec<Json>, usize) {
    let systems: Vec<(usize, &Json)> = messages
        .iter()
        .map(Borrow::borrow)
        .enumerate()
        .filter(|(_, m)| is_role(m, "system"))
        .collect();
    if !additions {
        return (get_current_tools(messages), systems.len());
    }
    // A name declared before counts as redeclared even after its removal (as in pi-ai).
    let mut declared = HashSet::new();
    let mut last_change = None;
    for (index, (_, message)) in systems.iter().enumerate() {
        if list(message, "toolsRemoved").next().is_some() {
            last_change = Some(index);
        }
        for tool in list(message, "toolsAdded") {
            let name = tool.get("name").and_then(Json::as_str).unwrap_or("");
            if !declared.insert(name) {
                last_change = Some(index);
            }
        }
    }
    let leading = usize::from(
        messages
            .first()
            .is_some_and(|m| is_role(m.borrow(), "system")),
    );
    let folded = leading.max(last_change.map_or(0, |i| i + 1));
    // The messages up to the last folded system message hold exactly the folded tool changes.
    let end = folded
        .checked_sub(1)
        .and_then(|i| systems.get(i))
        .map_or(0, |(position, _)| position + 1);
    (get_current_tools(&messages[..end]), folded)
}

/// The items of the array field `key` of a message (none when absent or not an array).
fn list<'a>(message: &'a Json, key: &str) -> impl Iterator<Item = &'a Json> {
    message
        .get(key)
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
}

pub fn is_role(message: &Json, role: &str) -> bool {
    message.get("role").and_then(Json::as_str) == Some(role)
}

fn blocks(message: &Json) -> &[Json] {
    message
        .get("content")
        .and_then(Json::as_array)
        .map_or(&[], Vec::as_slice)
}

fn block_type(block: &Json) -> &str {
    block.get("type").and_then(Json::as_str).unwrap_or("")
}

/// Replaces each run of images with one placeholder text block.
fn replace_images(content: &[Json], placeholder: &str) -> Vec<Json> {
    let mut out = Vec::new();
    let mut previous_was_placeholder = false;
    for block in content {
        if block_type(block) == "image" {
            if !previous_was_placeholder {
                out.push(json!({"type": "text", "text": placeholder}));
            }
            previous_was_placeholder = true;
            continue;
        }
        out.push(block.clone());
        previous_was_placeholder = block.get("text").and_then(Json::as_str) == Some(placeholder);
    }
    out
}

fn with_content(message: &Json, content: Vec<Json>) -> Json {
    let mut message = message.clone();
    if let Some(map) = message.as_object_mut() {
        map.insert("content".into(), Json::Array(content));
    }
    message
}

/// Normalizes a foreign tool-call id for the target API.
pub type NormalizeId = fn(&str) -> String;

/// `transformMessages(messages, model, normalizeToolCallId)`.
pub fn transform<M: Borrow<Json>>(
    messages: &[M],
    model: &Json,
    normalize_id: Option<NormalizeId>,
) -> Vec<Json> {
    match normalize_id {
        Some(normalize) => {
            transform_with(messages, model, Some(&|id: &str, _: &Json| normalize(id)))
        }
        None => transform_with(messages, model, None),
    }
}

/// A tool-call id normalizer that also sees the assistant message the call comes from.
pub type NormalizeIdFrom<'a> = &'a dyn Fn(&str, &Json) -> String;

/// [`transform`] with a normalizer that sees the call's source message (pi-ai passes it, and the
/// Responses API tells its own earlier item ids from other providers' by it).
pub fn transform_with<M: Borrow<Json>>(
    messages: &[M],
    model: &Json,
    normalize_id: Option<NormalizeIdFrom>,
) -> Vec<Json> {
    let supports_images = model
        .get("input")
        .and_then(Json::as_array)
        .is_some_and(|input| input.iter().any(|i| i.as_str() == Some("image")));
    let same = |m: &Json| {
        ["provider", "api"]
            .iter()
            .all(|k| m.get(*k) == model.get(*k))
            && m.get("model") == model.get("id")
    };
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut transformed = Vec::with_capacity(messages.len());
    for message in messages {
        let mut message = message.borrow().clone();
        if let Some(map) = message.as_object_mut() {
            if map.get("content").is_none_or(Json::is_null) {
                map.insert("content".into(), Json::Array(Vec::new()));
            }
        }
        let role = message
            .get("role")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        if !supports_images && matches!(role.as_str(), "user" | "toolResult") {
            if let Some(content) = message.get("content").and_then(Json::as_array) {
                let placeholder = if role == "user" {
                    USER_IMAGE_PLACEHOLDER
                } else {
                    TOOL_IMAGE_PLACEHOLDER
                };
                message = with_content(&message, replace_images(content, placeholder));
            }
        }
        match role.as_str() {
            "toolResult" => {
                let id = message
                    .get("toolCallId")
                    .and_then(Json::as_str)
                    .unwrap_or("");
                if let Some(new_id) = id_map.get(id).filter(|new| *new != id).cloned() {
                    message["toolCallId"] = Json::String(new_id);
                }
            }
            "assistant" => {
                let same_model = same(&message);
                let content = blocks(&message)
                    .iter()
                    .filter_map(|block| match block_type(block) {
                        "thinking" => {
                            if !same_model {
                                return None;
                            }
                            let signed = block.get("redacted").is_some_and(truthy)
                                || block.get("thinkingSignature").is_some_and(truthy);
                            let text = block.get("thinking").and_then(Json::as_str).unwrap_or("");
                            (signed || !text.trim().is_empty()).then(|| block.clone())
                        }
                        "text" if !same_model => {
                            Some(json!({"type": "text", "text": block.get("text").cloned().unwrap_or(Json::Null)}))
                        }
                        "toolCall" => {
                            let mut call = block.clone();
                            if !same_model {
                                if let Some(map) = call.as_object_mut() {
                                    map.shift_remove("thoughtSignature");
                                }
                                if let Some(normalize) = normalize_id {
                                    let id = call.get("id").and_then(Json::as_str).unwrap_or("").to_string();
                                    let new_id = normalize(&id, &message);
                                    if new_id != id {
                                        call["id"] = Json::String(new_id.clone());
                                        id_map.insert(id, new_id);
                                    }
                                }
                            }
                            Some(call)
                        }
                        _ => Some(block.clone()),
                    })
                    .collect();
                message = with_content(&message, content);
            }
            _ => {}
        }
        transformed.push(message);
    }
    add_missing_tool_results(transformed)
}

/// Drops errored/aborted assistant turns and answers tool calls left without a result with
/// `No result provided`; system messages between a call and its results move after them.
fn add_missing_tool_results(messages: Vec<Json>) -> Vec<Json> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<Json> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut held: Vec<Json> = Vec::new();
    let close = |out: &mut Vec<Json>,
                 pending: &mut Vec<Json>,
                 answered: &mut HashSet<String>,
                 held: &mut Vec<Json>| {
        for call in pending.drain(..) {
            let id = call.get("id").and_then(Json::as_str).unwrap_or("");
            if !answered.contains(id) {
                out.push(json!({"role": "toolResult", "toolCallId": id,
                    "toolName": call.get("name").cloned().unwrap_or(Json::Null),
                    "content": [{"type": "text", "text": "No result provided"}],
                    "isError": true, "timestamp": now_ms()}));
            }
        }
        answered.clear();
        out.append(held);
    };
    for message in messages {
        let role = message
            .get("role")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        match role.as_str() {
            "assistant" => {
                close(&mut out, &mut pending, &mut answered, &mut held);
                let stop = message.get("stopReason").and_then(Json::as_str);
                if matches!(stop, Some("error" | "aborted")) {
                    continue;
                }
                let calls: Vec<Json> = blocks(&message)
                    .iter()
                    .filter(|b| block_type(b) == "toolCall")
                    .cloned()
                    .collect();
                if !calls.is_empty() {
                    pending = calls;
                    answered.clear();
                }
                out.push(message);
            }
            "toolResult" => {
                let id = message
                    .get("toolCallId")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string();
                answered.insert(id);
                out.push(message);
            }
            "system" if !pending.is_empty() => held.push(message),
            "user" => {
                close(&mut out, &mut pending, &mut answered, &mut held);
                out.push(message);
            }
            _ => out.push(message),
        }
    }
    close(&mut out, &mut pending, &mut answered, &mut held);
    out
}

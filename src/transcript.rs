//! System-prompt replay, tool declarations and tool-state diffs (SPEC §4).
//!
//! Every function here reads untrusted host JSON: fields may be missing or of the wrong type.
//! Malformed pieces (non-object tool entries, entries without a string `name`, `sections` that is
//! not an object, ...) are skipped; nothing panics. Only messages whose `role` is `"system"` are
//! interpreted; every other role (custom ones included) is treated as non-system.

use crate::json::Field;
use std::borrow::Borrow;
use std::collections::HashMap;

use crate::json::{
    field, is_array_index, now_ms, number_to_string, same_text, set_key, Json, JsonMap,
};
use crate::message::{declaration_fields, role, tool_declaration};

fn is_system(message: &Json) -> bool {
    role(message) == "system"
}

/// The string `name` of a tool entry or reference, if it has one.
fn tool_name(tool: &Json) -> Option<&str> {
    field(tool, "name").and_then(Json::as_str)
}

/// The elements of `value[key]` when it is an array (anything else counts as empty).
fn array_field<'a>(value: &'a Json, key: &str) -> &'a [Json] {
    field(value, key)
        .and_then(Json::as_array)
        .map_or(&[], Vec::as_slice)
}

/// True when `value[key]` is a non-empty array.
fn has_entries(value: &Json, key: &str) -> bool {
    !array_field(value, key).is_empty()
}

/// The entries of an object in ECMAScript own-property order (§0.4 item 2). Host objects that
/// went through `json::parse` are already in that order; this also covers hand-built values.
fn ecma_entries(map: &JsonMap) -> Vec<(&str, &Json)> {
    let mut entries: Vec<(&str, &Json)> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
    if entries.iter().any(|(k, _)| is_array_index(k)) {
        // Stable sort: index keys ascending first, the others keep their relative order.
        entries.sort_by_key(|(k, _)| {
            if is_array_index(k) {
                (0, k.parse::<u64>().unwrap_or(0))
            } else {
                (1, 0)
            }
        });
    }
    entries
}

/// The `sections` of a message in key order, or nothing when it is not an object.
fn section_entries(message: &Json) -> Vec<(&str, &Json)> {
    message
        .field("sections")
        .and_then(Json::as_object)
        .map(ecma_entries)
        .unwrap_or_default()
}

/// `String(text)` for the scalar values a text block may hold; missing/null/objects give "".
fn block_text(text: Option<&Json>) -> String {
    match text {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Number(n)) => number_to_string(crate::json::number_value(n)),
        Some(Json::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// §4.1: a string as is, or the `text` of the `"text"` blocks joined with `separator`.
pub fn content_text(content: &Json, separator: &str) -> String {
    match content {
        Json::String(s) => s.clone(),
        Json::Array(blocks) => blocks
            .iter()
            .filter(|b| b.field("type").and_then(Json::as_str) == Some("text"))
            .map(|b| block_text(b.field("text")))
            .collect::<Vec<_>>()
            .join(separator),
        _ => String::new(),
    }
}

fn message_content_text(message: &Json) -> String {
    message
        .field("content")
        .map_or_else(String::new, |c| content_text(c, "\n"))
}

/// §4.2: the first system message of a transcript, or nothing for no prompt and no tools.
/// `tools` may be definitions or declarations; each is stored as its declaration.
pub fn create_initial_system_message(system_prompt: Option<&str>, tools: &[Json]) -> Option<Json> {
    let prompt = system_prompt.unwrap_or("");
    if prompt.is_empty() && tools.is_empty() {
        return None;
    }
    let mut m = JsonMap::with_capacity(4);
    m.insert("role".into(), Json::from("system"));
    m.insert("content".into(), Json::from(prompt));
    if !tools.is_empty() {
        let declared = tools.iter().map(tool_declaration).collect();
        m.insert("toolsAdded".into(), Json::Array(declared));
    }
    m.insert("timestamp".into(), Json::from(0));
    // Not compacted: an agent keeps it as text (`Message::stored`), so spare capacity in the
    // declarations' cloned schemas dies with this tree.
    Some(Json::Object(m))
}

/// Replays tool declarations (§4.3) without copying them. Removal leaves a tombstone so that
/// every step is O(1): a removed name that comes back is appended at the end.
fn replay_tools<'a>(messages: impl Iterator<Item = &'a Json>) -> Vec<&'a Json> {
    let mut slots: Vec<Option<&'a Json>> = Vec::new();
    let mut index: HashMap<&'a str, usize> = HashMap::new();
    for message in messages.filter(|m| is_system(m)) {
        for reference in array_field(message, "toolsRemoved") {
            if let Some(slot) = tool_name(reference).and_then(|n| index.remove(n)) {
                slots[slot] = None;
            }
        }
        for tool in array_field(message, "toolsAdded") {
            let Some(name) = tool_name(tool) else {
                continue;
            };
            match index.get(name) {
                Some(&slot) => slots[slot] = Some(tool),
                None => {
                    index.insert(name, slots.len());
                    slots.push(Some(tool));
                }
            }
        }
    }
    slots.into_iter().flatten().collect()
}

/// §4.3: the tool declarations in effect after replaying every system message.
pub fn get_current_tools<M: Borrow<Json>>(messages: &[M]) -> Vec<Json> {
    replay_tools(messages.iter().map(Borrow::borrow))
        .into_iter()
        .cloned()
        .collect()
}

/// §4.4: the effective system message (merged content, sections and tools), or nothing when
/// the list holds no system message with a timestamp and no tool stays declared.
pub fn get_current_system_message(messages: &[Json]) -> Option<Json> {
    current_system_message(messages.iter())
}

/// `get_current_system_message` over any list of message references (shared or plain).
pub fn current_system_message<'a>(
    messages: impl Iterator<Item = &'a Json> + Clone,
) -> Option<Json> {
    let mut parts: Vec<String> = Vec::new();
    let mut sections = JsonMap::new();
    // The reference keeps the first timestamp that is neither absent nor null (`??=`), and a
    // transcript whose system messages all lack one counts as having none unless tools remain.
    let mut timestamp: Option<&Json> = None;
    for message in messages.clone().filter(|m| is_system(m)) {
        if timestamp.is_none() {
            timestamp = message.field("timestamp").filter(|t| !t.is_null());
        }
        let text = message_content_text(message);
        if !text.is_empty() {
            parts.push(text);
        }
        for (name, value) in section_entries(message) {
            match value {
                // Deleting first means a later set re-inserts at the end.
                Json::Null => {
                    sections.shift_remove(name);
                }
                Json::String(_) => set_key(&mut sections, name, value.clone()),
                _ => {} // malformed section value: ignored
            }
        }
    }
    let tools: Vec<Json> = replay_tools(messages).into_iter().cloned().collect();
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    let mut m = JsonMap::new();
    m.insert("role".into(), Json::from("system"));
    m.insert("content".into(), Json::from(parts.join("\n\n")));
    if !sections.is_empty() {
        m.insert("sections".into(), Json::Object(sections));
    }
    if !tools.is_empty() {
        m.insert("toolsAdded".into(), Json::Array(tools));
    }
    m.insert(
        "timestamp".into(),
        timestamp.cloned().unwrap_or_else(|| Json::from(0)),
    );
    Some(Json::Object(m))
}

/// §4.5: content text, then every non-null section value in key order, empties dropped,
/// joined with a blank line.
pub fn get_system_message_text(message: &Json) -> String {
    let mut parts = vec![message_content_text(message)];
    for (_, value) in section_entries(message) {
        if let Some(text) = value.as_str() {
            parts.push(text.to_string());
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// §4.5: the rendered current system prompt ("" without any system message).
pub fn get_current_system_prompt(messages: &[Json]) -> String {
    current_system_prompt(messages.iter())
}

/// `get_current_system_prompt` over any list of message references.
pub fn current_system_prompt<'a>(messages: impl Iterator<Item = &'a Json> + Clone) -> String {
    current_system_message(messages)
        .map(|m| get_system_message_text(&m))
        .unwrap_or_default()
}

/// §4.6: equal when both declarations serialise to the same JSON text (key-order sensitive),
/// decided field by field without rendering (this runs for every tool on every turn).
pub fn declarations_equal(a: &Json, b: &Json) -> bool {
    declaration_fields(a)
        .iter()
        .zip(declaration_fields(b))
        .all(|pair| match pair {
            (None, None) => true,
            (Some(x), Some(y)) => same_text(x, y),
            _ => false,
        })
}

/// The result of `getToolStateChanges` (§4.6).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolStateChanges {
    /// Declarations of the new or changed tools, in `current` order.
    pub tools_added: Vec<Json>,
    /// `{ "name": ... }` of the dropped or changed tools, in `previous` order.
    pub tools_removed: Vec<Json>,
}

impl ToolStateChanges {
    /// True when neither list has an entry.
    pub fn is_empty(&self) -> bool {
        self.tools_added.is_empty() && self.tools_removed.is_empty()
    }
}

/// name → index of the last entry with that name (entries without a string name are skipped).
fn index_by_name<'a>(tools: &[&'a Json]) -> HashMap<&'a str, usize> {
    let mut index = HashMap::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        if let Some(name) = tool_name(tool) {
            index.insert(name, i);
        }
    }
    index
}

/// `getToolStateChanges` (§4.6) over declared and current tool lists.
fn tool_state_changes(previous: &[&Json], current: &[&Json]) -> ToolStateChanges {
    let prev_index = index_by_name(previous);
    let cur_index = index_by_name(current);
    let mut changes = ToolStateChanges::default();
    for tool in current {
        let Some(name) = tool_name(tool) else {
            continue;
        };
        let same = prev_index
            .get(name)
            .is_some_and(|&j| declarations_equal(previous[j], tool));
        if !same {
            changes.tools_added.push(tool_declaration(tool));
        }
    }
    for tool in previous {
        let Some(name) = tool_name(tool) else {
            continue;
        };
        let same = cur_index
            .get(name)
            .is_some_and(|&i| declarations_equal(tool, current[i]));
        if !same {
            let mut reference = JsonMap::new();
            reference.insert("name".into(), Json::from(name));
            changes.tools_removed.push(Json::Object(reference));
        }
    }
    changes
}

/// §4.6: what to declare so that a transcript declaring `previous` ends up declaring `current`.
pub fn get_tool_state_changes(previous: &[Json], current: &[Json]) -> ToolStateChanges {
    let previous: Vec<&Json> = previous.iter().collect();
    let current: Vec<&Json> = current.iter().collect();
    tool_state_changes(&previous, &current)
}

/// Appends the non-empty change lists to `message` (toolsAdded, then toolsRemoved).
fn put_changes(message: &mut JsonMap, changes: ToolStateChanges) {
    if !changes.tools_added.is_empty() {
        message.insert("toolsAdded".into(), Json::Array(changes.tools_added));
    }
    if !changes.tools_removed.is_empty() {
        message.insert("toolsRemoved".into(), Json::Array(changes.tools_removed));
    }
}

/// §4.7: `context_messages` = C.messages, `context_tools` = the executable tools' definitions
/// (C.tools), `pending` = P. Returns the list to append instead of P.
pub fn declare_tool_changes(
    context_messages: &[Json],
    context_tools: &[Json],
    pending: Vec<Json>,
) -> Vec<Json> {
    let context_tools: Vec<&Json> = context_tools.iter().collect();
    declare_tool_changes_in(context_messages.iter(), &context_tools, pending)
}

/// `declare_tool_changes` over any list of message references (shared or plain).
pub fn declare_tool_changes_in<'a>(
    context_messages: impl Iterator<Item = &'a Json>,
    context_tools: &[&Json],
    mut pending: Vec<Json>,
) -> Vec<Json> {
    let last_system = pending.iter().rposition(is_system);
    // The baseline strips the tool fields of that message, which is the same as skipping it
    // during replay (a system message contributes tools only through those fields).
    let baseline = pending
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != last_system)
        .map(|(_, m)| m);
    // Reborrowed so both halves share the shorter lifetime of `pending`.
    #[allow(clippy::map_identity)]
    let declared = replay_tools(context_messages.map(|m| m).chain(baseline));
    let changes = tool_state_changes(&declared, context_tools);

    match last_system {
        Some(s) => {
            let message = &pending[s];
            let declares_tools =
                has_entries(message, "toolsAdded") || has_entries(message, "toolsRemoved");
            if changes.is_empty() && !declares_tools {
                return pending;
            }
            if let Json::Object(map) = &mut pending[s] {
                // Caller-provided tool fields are intent only: replace them by the exact delta.
                map.shift_remove("toolsAdded");
                map.shift_remove("toolsRemoved");
                put_changes(map, changes);
            }
            pending
        }
        None if changes.is_empty() => pending,
        None => {
            let mut m = JsonMap::new();
            m.insert("role".into(), Json::from("system"));
            m.insert("content".into(), Json::from(""));
            m.insert("timestamp".into(), now_ms());
            put_changes(&mut m, changes);
            // P holds no system message here, so "before the first non-system one" is index 0.
            pending.insert(0, Json::Object(m));
            pending
        }
    }
}

/// §4.8 `normalizeContext`: the initial system message (if any) followed by `messages`.
pub fn normalize_context(
    system_prompt: Option<&str>,
    messages: Vec<Json>,
    tools: &[Json],
) -> Vec<Json> {
    match create_initial_system_message(system_prompt, tools) {
        Some(initial) => {
            let mut out = Vec::with_capacity(messages.len() + 1);
            out.push(initial);
            out.extend(messages);
            out
        }
        None => messages,
    }
}

/// §4.8: the first message when it is a system message.
pub fn get_initial_system_message(messages: &[Json]) -> Option<&Json> {
    messages.first().filter(|m| is_system(m))
}

/// §4.8: `messages` without a leading system message.
pub fn without_initial_system_message(messages: &[Json]) -> &[Json] {
    match messages.first() {
        Some(first) if is_system(first) => &messages[1..],
        _ => messages,
    }
}

/// §4.8: the effective system message (if any) followed by every non-system message.
pub fn collapse_system_messages(messages: &[Json]) -> Vec<Json> {
    let head = get_current_system_message(messages);
    let rest = messages.iter().filter(|m| !is_system(m)).cloned();
    head.into_iter().chain(rest).collect()
}

/// §4.8: a human-readable description of what one later system message changes.
pub fn render_system_message_update(message: &Json) -> String {
    let mut parts = Vec::new();
    let text = message_content_text(message);
    if !text.is_empty() {
        parts.push(text);
    }
    for (name, value) in section_entries(message) {
        match value {
            Json::Null => parts.push(format!("Removed system prompt section \"{name}\".")),
            Json::String(v) => {
                parts.push(format!("Updated system prompt section \"{name}\":\n\n{v}"))
            }
            _ => {} // malformed section value: ignored
        }
    }
    parts.join("\n\n")
}

/// §4.8: every declaration ever added by a system message; the last definition of each name,
/// at the position where that name was first declared.
pub fn get_declared_tools(messages: &[Json]) -> Vec<Json> {
    let mut slots: Vec<&Json> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for message in messages.iter().filter(|m| is_system(m)) {
        for tool in array_field(message, "toolsAdded") {
            let Some(name) = tool_name(tool) else {
                continue;
            };
            match index.get(name) {
                Some(&slot) => slots[slot] = tool,
                None => {
                    index.insert(name, slots.len());
                    slots.push(tool);
                }
            }
        }
    }
    slots.into_iter().cloned().collect()
}

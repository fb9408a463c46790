//! The context at a leaf (pi `buildSessionContext`): the path from the root, the latest
//! compaction's projection, each entry as messages, context edits, the model and thinking level.

use std::collections::HashMap;

use super::{ids, Session};
use crate::json::{Json, JsonMap};

/// What a model is sent from a session (before conversion, see [`super::convert_to_llm`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<Json>,
    /// The last `thinking_level_change` on the path; `"off"` without one.
    pub thinking_level: String,
    /// `{"provider", "modelId"}` of the last model change or assistant message on the path.
    pub model: Option<Json>,
}

impl SessionContext {
    /// `{"messages", "thinkingLevel", "model"}`.
    pub fn to_json(&self) -> Json {
        crate::json::object([
            ("messages", Json::Array(self.messages.clone())),
            ("thinkingLevel", self.thinking_level.clone().into()),
            ("model", self.model.clone().unwrap_or(Json::Null)),
        ])
    }
}

fn kind(entry: &Json) -> Option<&str> {
    entry.get("type").and_then(Json::as_str)
}

fn id(entry: &Json) -> Option<&str> {
    entry.get("id").and_then(Json::as_str)
}

fn message_role(entry: &Json) -> Option<&str> {
    entry
        .get("message")
        .and_then(|m| m.get("role"))
        .and_then(Json::as_str)
}

/// The path's context entries: without a compaction the whole path; else the latest
/// compaction, the entries from its `firstKeptEntryId` up to it (system messages left out), and
/// every entry after it.
fn context_entries<'a>(path: &[&'a Json]) -> Vec<&'a Json> {
    let Some(at) = path.iter().rposition(|e| kind(e) == Some("compaction")) else {
        return path.to_vec();
    };
    let compaction = path[at];
    let first_kept = compaction.get("firstKeptEntryId").and_then(Json::as_str);
    let mut entries = vec![compaction];
    let mut keeping = false;
    for entry in &path[..at] {
        if first_kept.is_some() && id(entry) == first_kept {
            keeping = true;
        }
        if keeping && !(kind(entry) == Some("message") && message_role(entry) == Some("system")) {
            entries.push(entry);
        }
    }
    entries.extend_from_slice(&path[at + 1..]);
    entries
}

/// `new Date(entry.timestamp).getTime()` as JSON (null for NaN).
fn timestamp_ms(entry: &Json) -> Json {
    match entry.get("timestamp") {
        Some(Json::String(text)) => ids::iso_to_ms(text).map_or(Json::Null, Json::from),
        Some(Json::Number(n)) => Json::Number(n.clone()),
        Some(Json::Null) => Json::from(0),
        _ => Json::Null,
    }
}

/// A derived message: `role`, then the entry's members named in `members` that it has, then
/// `timestamp`.
fn derived(role: &str, entry: &Json, members: &[(&str, Option<Json>)]) -> Json {
    let mut message = JsonMap::new();
    message.insert("role".into(), role.into());
    for (name, value) in members {
        if let Some(value) = value.clone().or_else(|| entry.get(*name).cloned()) {
            message.insert((*name).into(), value);
        }
    }
    message.insert("timestamp".into(), timestamp_ms(entry));
    Json::Object(message)
}

/// One entry as context messages, before edits (pi `sessionEntryToContextMessages`).
pub fn entry_messages(entry: &Json) -> Vec<Json> {
    match kind(entry) {
        Some("message") => {
            let Some(message) = entry.get("message") else {
                return Vec::new();
            };
            let missing = message.get("content").is_none_or(Json::is_null);
            let empty = match message.get("role").and_then(Json::as_str) {
                Some("system") if missing => Some(Json::from("")),
                Some("user" | "assistant" | "toolResult") if missing => Some(Json::Array(vec![])),
                _ => None,
            };
            match (empty, message) {
                (Some(content), Json::Object(map)) => {
                    let mut map = map.clone();
                    crate::json::set_key(&mut map, "content", content);
                    vec![Json::Object(map)]
                }
                _ => vec![message.clone()],
            }
        }
        Some("custom_message") => {
            let content = match entry.get("content") {
                None | Some(Json::Null) => Json::Array(vec![]),
                Some(content) => content.clone(),
            };
            vec![derived(
                "custom",
                entry,
                &[
                    ("customType", None),
                    ("content", Some(content)),
                    ("display", None),
                    ("details", None),
                ],
            )]
        }
        Some("branch_summary") if entry.get("summary").is_some_and(super::is_truthy) => {
            vec![derived(
                "branchSummary",
                entry,
                &[("summary", None), ("fromId", None)],
            )]
        }
        Some("compaction") => {
            let summary = derived(
                "compactionSummary",
                entry,
                &[("summary", None), ("tokensBefore", None)],
            );
            match entry.get("systemMessage") {
                Some(system) if super::is_truthy(system) => vec![system.clone(), summary],
                _ => vec![summary],
            }
        }
        _ => Vec::new(),
    }
}

/// An entry's messages with its context edit applied (pi `projectContextEntry`).
fn edited_messages(entry: &Json, edit: Option<&Json>) -> Vec<Json> {
    let messages = entry_messages(entry);
    let Some(edit) = edit else {
        return messages;
    };
    let replacement = edit.get("replacement").unwrap_or(&Json::Null);
    if replacement.is_null() {
        return Vec::new();
    }
    messages
        .into_iter()
        .map(|message| {
            let role = message.get("role").and_then(Json::as_str).unwrap_or("");
            if !matches!(role, "user" | "assistant" | "toolResult" | "custom") {
                return message;
            }
            let content = match replacement.get("content") {
                Some(Json::String(text)) if matches!(role, "assistant" | "toolResult") => {
                    Some(crate::json::json!([{"type": "text", "text": text}]))
                }
                other => other.cloned(),
            };
            let Json::Object(mut map) = message else {
                return message;
            };
            match content {
                Some(content) => crate::json::set_key(&mut map, "content", content),
                None => {
                    map.shift_remove("content");
                }
            }
            Json::Object(map)
        })
        .collect()
}

/// The thinking level and model on a path (pi `getSessionContextSettings`).
fn settings(path: &[&Json]) -> (String, Option<Json>) {
    let mut thinking_level = "off".to_string();
    let mut model = None;
    for entry in path {
        match kind(entry) {
            Some("thinking_level_change") => {
                if let Some(level) = entry.get("thinkingLevel").and_then(Json::as_str) {
                    thinking_level = level.to_string();
                }
            }
            Some("model_change") => {
                model = Some(model_json(entry.get("provider"), entry.get("modelId")));
            }
            Some("message") if message_role(entry) == Some("assistant") => {
                let message = &entry["message"];
                model = Some(model_json(message.get("provider"), message.get("model")));
            }
            _ => {}
        }
    }
    (thinking_level, model)
}

fn model_json(provider: Option<&Json>, model_id: Option<&Json>) -> Json {
    let mut model = JsonMap::new();
    if let Some(provider) = provider {
        model.insert("provider".into(), provider.clone());
    }
    if let Some(model_id) = model_id {
        model.insert("modelId".into(), model_id.clone());
    }
    Json::Object(model)
}

/// The context at the session's leaf.
pub(crate) fn build(session: &Session) -> SessionContext {
    let values = session.path_values(session.leaf_id());
    let path: Vec<&Json> = values.iter().collect();
    let (thinking_level, model) = settings(&path);
    let messages = project(&path)
        .into_iter()
        .flat_map(|entry| entry.messages)
        .collect();
    SessionContext {
        messages,
        thinking_level,
        model,
    }
}

/// One entry the context is built from, with the messages it contributes.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectedEntry<'a> {
    /// The session entry.
    pub entry: &'a Json,
    /// Its context messages after edits (none for model and thinking changes, labels, edits,
    /// an older compaction inside the newest one's kept range, an omitted message, ...).
    pub messages: Vec<Json>,
}

/// The context of a path (root to leaf) entry by entry (pi `buildSessionProjection`): the
/// context's messages are the concatenation of the entries' messages. Compaction and retry
/// logic needs to know which entry each message came from.
pub fn project<'a>(path: &[&'a Json]) -> Vec<ProjectedEntry<'a>> {
    let entries = context_entries(path);
    // The last edit of a target on the selected range wins.
    let mut edits: HashMap<&str, &Json> = HashMap::new();
    for entry in &entries {
        if kind(entry) == Some("context_edit") {
            if let Some(target) = entry.get("targetId").and_then(Json::as_str) {
                edits.insert(target, entry);
            }
        }
    }
    entries
        .iter()
        .enumerate()
        .map(|(index, &entry)| {
            // An older compaction kept inside the newest one's range contributes nothing.
            let messages = if index > 0 && kind(entry) == Some("compaction") {
                Vec::new()
            } else {
                let edit = id(entry).and_then(|id| edits.get(id).copied());
                edited_messages(entry, edit)
            };
            ProjectedEntry { entry, messages }
        })
        .collect()
}

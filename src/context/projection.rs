//! A branch's context with provenance: for each entry the session's context is built from, the
//! messages it contributes (after compaction and context edits). The cut point needs to know
//! which entry each context message came from; the session's own context is the concatenation.
//!
//! The rules are the session format's (kit §4.1 "Context"): the latest compaction on the path
//! comes first, then the path entries from its `firstKeptEntryId` up to it (system-role
//! messages left out), then every entry after it; each entry's latest `context_edit` applies.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::json::{Json, JsonMap};

/// One entry of a projected branch and the context messages it contributes (none for model
/// and thinking changes, labels, edits, an older compaction in the kept range, ...).
#[derive(Clone, Debug)]
pub struct ProjectedEntry<'a> {
    pub source: &'a Json,
    pub messages: Vec<Cow<'a, Json>>,
}

impl ProjectedEntry<'_> {
    /// The entry's `type`.
    pub fn kind(&self) -> &str {
        entry_type(self.source)
    }
}

/// A branch projected into context messages, entry by entry.
#[derive(Clone, Debug, Default)]
pub struct Projection<'a> {
    pub entries: Vec<ProjectedEntry<'a>>,
}

impl<'a> Projection<'a> {
    /// Projects `branch` (the path from the root to the leaf, in order).
    pub fn of_branch(branch: &[&'a Json]) -> Projection<'a> {
        let selected = context_entries(branch);
        // The last edit of a target wins.
        let mut edits: HashMap<&str, &Json> = HashMap::new();
        for entry in &selected {
            if entry_type(entry) == "context_edit" {
                if let Some(target) = entry.get("targetId").and_then(Json::as_str) {
                    edits.insert(target, entry);
                }
            }
        }
        let entries = selected
            .iter()
            .enumerate()
            .map(|(index, &source)| {
                // Only the newest compaction, projected first, contributes its summary; an
                // older one inside the kept range contributes nothing.
                let messages = if entry_type(source) == "compaction" && index > 0 {
                    Vec::new()
                } else {
                    let edit = source
                        .get("id")
                        .and_then(Json::as_str)
                        .and_then(|id| edits.get(id).copied());
                    apply_edit(entry_messages(source), edit)
                };
                ProjectedEntry { source, messages }
            })
            .collect();
        Projection { entries }
    }

    /// Every context message, in order.
    pub fn messages(&self) -> Vec<&Json> {
        self.entries
            .iter()
            .flat_map(|e| e.messages.iter().map(|m| m.as_ref()))
            .collect()
    }

    /// The entry that contributed the context message at `index` of [`Projection::messages`].
    pub fn source_of_message(&self, index: usize) -> Option<&'a Json> {
        let mut end = 0;
        for entry in &self.entries {
            end += entry.messages.len();
            if index < end {
                return Some(entry.source);
            }
        }
        None
    }
}

pub(crate) fn entry_type(entry: &Json) -> &str {
    entry.get("type").and_then(Json::as_str).unwrap_or("")
}

/// The entries the context is built from: the branch, or with a compaction on it, the latest
/// compaction, the kept entries before it (without system messages) and everything after it.
fn context_entries<'a>(branch: &[&'a Json]) -> Vec<&'a Json> {
    let Some(at) = branch.iter().rposition(|e| entry_type(e) == "compaction") else {
        return branch.to_vec();
    };
    let compaction = branch[at];
    let first_kept = compaction.get("firstKeptEntryId").and_then(Json::as_str);
    let mut selected = vec![compaction];
    let mut keeping = false;
    for entry in &branch[..at] {
        keeping = keeping
            || (first_kept.is_some() && entry.get("id").and_then(Json::as_str) == first_kept);
        let is_system = entry_type(entry) == "message"
            && entry.pointer("/message/role").and_then(Json::as_str) == Some("system");
        if keeping && !is_system {
            selected.push(entry);
        }
    }
    selected.extend_from_slice(&branch[at + 1..]);
    selected
}

/// The context messages one entry stands for, before edits.
pub fn entry_messages(entry: &Json) -> Vec<Cow<'_, Json>> {
    match entry_type(entry) {
        "message" => {
            let Some(message) = entry.get("message") else {
                return Vec::new();
            };
            let role = message.get("role").and_then(Json::as_str);
            let content_missing = message.get("content").is_none_or(Json::is_null);
            let filled = match role {
                Some("system") if content_missing => Some(Json::from("")),
                Some("user" | "assistant" | "toolResult") if content_missing => {
                    Some(Json::Array(Vec::new()))
                }
                _ => None,
            };
            match (filled, message) {
                (Some(content), Json::Object(members)) => {
                    let mut members = members.clone();
                    members.insert("content".into(), content);
                    vec![Cow::Owned(Json::Object(members))]
                }
                _ => vec![Cow::Borrowed(message)],
            }
        }
        "custom_message" => {
            let mut m = JsonMap::new();
            m.insert("role".into(), "custom".into());
            copy(&mut m, entry, "customType");
            let content = entry.get("content").filter(|c| !c.is_null());
            m.insert(
                "content".into(),
                content.cloned().unwrap_or(Json::Array(Vec::new())),
            );
            copy(&mut m, entry, "display");
            copy(&mut m, entry, "details");
            m.insert("timestamp".into(), entry_time(entry));
            vec![Cow::Owned(Json::Object(m))]
        }
        "branch_summary" if is_truthy(entry.get("summary")) => {
            let mut m = JsonMap::new();
            m.insert("role".into(), "branchSummary".into());
            copy(&mut m, entry, "summary");
            copy(&mut m, entry, "fromId");
            m.insert("timestamp".into(), entry_time(entry));
            vec![Cow::Owned(Json::Object(m))]
        }
        "compaction" => {
            let mut messages = Vec::with_capacity(2);
            if let Some(system) = entry.get("systemMessage").filter(|s| is_truthy(Some(s))) {
                messages.push(Cow::Borrowed(system));
            }
            let mut m = JsonMap::new();
            m.insert("role".into(), "compactionSummary".into());
            copy(&mut m, entry, "summary");
            copy(&mut m, entry, "tokensBefore");
            m.insert("timestamp".into(), entry_time(entry));
            messages.push(Cow::Owned(Json::Object(m)));
            messages
        }
        _ => Vec::new(),
    }
}

/// An entry's edit: `replacement: null` removes its messages, otherwise the content of its
/// user, assistant, tool-result and custom messages is replaced (a string becomes one text
/// block for an assistant or a tool result).
fn apply_edit<'a>(messages: Vec<Cow<'a, Json>>, edit: Option<&Json>) -> Vec<Cow<'a, Json>> {
    let Some(edit) = edit else { return messages };
    let replacement = edit.get("replacement").unwrap_or(&Json::Null);
    if replacement.is_null() {
        return Vec::new();
    }
    let new_content = replacement.get("content");
    messages
        .into_iter()
        .map(|message| {
            let role = message.get("role").and_then(Json::as_str).unwrap_or("");
            if !matches!(role, "user" | "assistant" | "toolResult" | "custom") {
                return message;
            }
            let content = match new_content {
                Some(Json::String(text)) if matches!(role, "assistant" | "toolResult") => {
                    crate::json::json!([{"type": "text", "text": text}])
                }
                Some(content) => content.clone(),
                None => Json::Null, // absent content: JSON leaves the member out
            };
            let mut members = message.as_object().cloned().unwrap_or_default();
            if content.is_null() && new_content.is_none() {
                members.shift_remove("content");
            } else {
                members.insert("content".into(), content);
            }
            Cow::Owned(Json::Object(members))
        })
        .collect()
}

fn copy(target: &mut JsonMap, entry: &Json, key: &str) {
    if let Some(value) = entry.get(key) {
        target.insert(key.into(), value.clone());
    }
}

fn is_truthy(value: Option<&Json>) -> bool {
    match value {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(Json::String(s)) => !s.is_empty(),
        Some(Json::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(_) => true,
    }
}

/// `new Date(entry.timestamp).getTime()`: milliseconds, or null where JavaScript gives NaN.
fn entry_time(entry: &Json) -> Json {
    entry
        .get("timestamp")
        .and_then(Json::as_str)
        .and_then(iso_to_ms)
        .map_or(Json::Null, Json::from)
}

/// Milliseconds since the epoch of an ISO 8601 UTC time (`2024-12-03T14:00:01.000Z`, the form
/// session entries are written with; seconds and milliseconds optional, `Z` or `±HH:MM`).
fn iso_to_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let (year, month, day, hour, minute) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
    );
    let mut i = 16;
    let mut second = 0;
    let mut millis = 0;
    if b.get(i) == Some(&b':') {
        second = num(i + 1..i + 3)?;
        i += 3;
        if b.get(i) == Some(&b'.') {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            let fraction = &text[i + 1..i + 1 + digits.min(3)];
            millis = fraction.parse::<i64>().ok()? * 10i64.pow(3 - fraction.len() as u32);
            i += 1 + digits;
        }
    }
    let offset_minutes = match b.get(i) {
        Some(b'Z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let minutes = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute - offset_minutes) * 60_000 + second * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_entry_timestamps_as_javascript_does() {
        assert_eq!(
            iso_to_ms("2024-12-03T14:00:01.000Z"),
            Some(1_733_234_401_000)
        );
        assert_eq!(iso_to_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso_to_ms("1970-01-01T01:00:00.5+01:00"), Some(500));
        assert_eq!(iso_to_ms("yesterday"), None);
    }
}

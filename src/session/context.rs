//! The context at a leaf (pi `buildSessionContext`): the path from the root, the latest
//! compaction's projection, each entry as messages, context edits, the model and thinking level.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use super::read::{SpanReader, Text};
use super::scan::Role;
use super::{ids, Session, SessionError};
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

/// What the choice of an entry's messages depends on (see `select`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Facts<'a> {
    pub kind: Option<&'a str>,
    pub id: Option<&'a str>,
    /// A `message` entry holding a system message.
    pub system_message: bool,
    /// A compaction's `firstKeptEntryId`.
    pub first_kept: Option<&'a str>,
    /// A context edit's `targetId`.
    pub edit_target: Option<&'a str>,
}

impl<'a> Facts<'a> {
    pub(crate) fn of(entry: &'a Json) -> Facts<'a> {
        let kind = kind(entry);
        let member = |name: &str| entry.get(name).and_then(Json::as_str);
        Facts {
            kind,
            id: id(entry),
            system_message: kind == Some("message") && message_role(entry) == Some("system"),
            first_kept: member("firstKeptEntryId").filter(|_| kind == Some("compaction")),
            edit_target: member("targetId").filter(|_| kind == Some("context_edit")),
        }
    }
}

/// One entry of the context, by its position on the path.
pub(crate) struct Selected {
    pub position: usize,
    /// The position of the context edit that applies to it (the last one on the range).
    pub edit: Option<usize>,
    /// It contributes nothing (an older compaction inside the newest one's kept range).
    pub silent: bool,
}

/// The context entries of a path of `len` entries, each told by `path(position)` (pi
/// `buildSessionProjection`'s choice): without a compaction the
/// whole path; else the latest compaction, the entries from its `firstKeptEntryId` up to it
/// (system messages left out), and every entry after it; each with the edit that applies.
pub(crate) fn select<'a>(len: usize, path: impl Fn(usize) -> Facts<'a>) -> Vec<Selected> {
    let positions: Vec<usize> = match (0..len).rev().find(|&p| path(p).kind == Some("compaction")) {
        None => (0..len).collect(),
        Some(at) => {
            let first_kept = path(at).first_kept;
            let mut positions = vec![at];
            let mut keeping = false;
            for position in 0..at {
                let entry = path(position);
                if first_kept.is_some() && entry.id == first_kept {
                    keeping = true;
                }
                if keeping && !entry.system_message {
                    positions.push(position);
                }
            }
            positions.extend(at + 1..len);
            positions
        }
    };
    // The last edit of a target on the selected range wins.
    let mut edits: HashMap<&str, usize> = HashMap::new();
    for &position in &positions {
        if let Some(target) = path(position).edit_target {
            edits.insert(target, position);
        }
    }
    positions
        .iter()
        .enumerate()
        .map(|(index, &position)| {
            let entry = path(position);
            let silent = index > 0 && entry.kind == Some("compaction");
            let edit = entry.id.and_then(|id| edits.get(id).copied());
            Selected {
                position,
                edit: edit.filter(|_| !silent),
                silent,
            }
        })
        .collect()
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
pub(crate) fn edited_messages(entry: &Json, edit: Option<&Json>) -> Vec<Json> {
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
pub(crate) fn settings(path: &[&Json]) -> (String, Option<Json>) {
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
pub(crate) fn build(session: &Session) -> Result<SessionContext, SessionError> {
    let values = session.path_values(session.leaf_id())?;
    let path: Vec<&Json> = values.iter().collect();
    let (thinking_level, model) = settings(&path);
    let messages = project(&path)
        .into_iter()
        .flat_map(|entry| entry.messages)
        .collect();
    Ok(SessionContext {
        messages,
        thinking_level,
        model,
    })
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
    select(path.len(), |position| Facts::of(path[position]))
        .into_iter()
        .map(|selected| {
            let entry = path[selected.position];
            let messages = if selected.silent {
                Vec::new()
            } else {
                edited_messages(entry, selected.edit.map(|position| path[position]))
            };
            ProjectedEntry { entry, messages }
        })
        .collect()
}

/// The context at the session's leaf as JSON text: `{"messages", "thinkingLevel", "model"}`, or
/// with `llm` the messages converted for a model (an array); the same text as rendering
/// `build`'s values. A `message` entry read in `JSON.stringify`'s form and not edited is
/// spliced from its text; only the entries the projection changes (and those read in another
/// form) are parsed.
pub(crate) fn build_text(session: &Session, llm: bool) -> Result<ContextText, SessionError> {
    let indices = session.path_indices(session.leaf_id());
    let spliced = |position: usize| session.entries[indices[position]].message.as_ref();
    // Spliced as it is: any message of the context; for a model, the roles it passes unchanged.
    let splices = |role: &Role| {
        !llm || matches!(
            role,
            Role::System | Role::User | Role::Assistant | Role::ToolResult
        )
    };
    let render = |pieces: &mut Vec<Piece>, entry: &Json, edit: Option<&Json>| {
        let mut messages = edited_messages(entry, edit);
        if llm {
            messages = super::convert_to_llm(&messages);
        }
        pieces.extend(
            messages
                .iter()
                .map(|m| Piece::Text(crate::json::to_string(m))),
        );
    };
    let mut reader = session.text_reader(true);
    // One pass over the path makes the pieces of the whole path, unless a compaction or a
    // context edit (never spliced: parsed) makes the choice more than that. Only the entries
    // that are not spliced are parsed (a few among many messages): kept by position, in order,
    // so nothing the size of the path is allocated per entry.
    let mut parsed_entries: Vec<(usize, Json)> = Vec::new();
    let mut pieces = Vec::with_capacity(indices.len());
    let mut whole_path = true;
    for (position, &index) in indices.iter().enumerate() {
        let stored = &session.entries[index];
        match &stored.message {
            Some((role, message)) if whole_path && splices(role) => {
                pieces.push(Piece::Splice(&stored.text, message.clone()));
            }
            Some(_) if whole_path => render(&mut pieces, &reader.parse(index)?, None),
            Some(_) => {}
            None => {
                let entry = reader.parse(index)?;
                if matches!(kind(&entry), Some("compaction" | "context_edit")) {
                    whole_path = false;
                } else if whole_path {
                    render(&mut pieces, &entry, None);
                }
                parsed_entries.push((position, entry));
            }
        }
    }
    let parsed = |position: usize| {
        parsed_entries
            .binary_search_by_key(&position, |(at, _)| *at)
            .ok()
            .map(|at| &parsed_entries[at].1)
    };
    if !whole_path {
        let selected = select(indices.len(), |position| match spliced(position) {
            None => parsed(position).map(Facts::of).unwrap_or_default(),
            Some((role, _)) => Facts {
                kind: Some("message"),
                id: session.entries[indices[position]].id.as_deref(),
                system_message: *role == Role::System,
                ..Facts::default()
            },
        });
        pieces.clear();
        for selected in &selected {
            let stored = &session.entries[indices[selected.position]];
            match &stored.message {
                Some((role, message))
                    if selected.edit.is_none() && !selected.silent && splices(role) =>
                {
                    pieces.push(Piece::Splice(&stored.text, message.clone()));
                    continue;
                }
                _ if selected.silent => continue,
                _ => {}
            }
            let own;
            let entry = match parsed(selected.position) {
                Some(entry) => entry,
                None => {
                    own = reader.parse(indices[selected.position])?;
                    &own
                }
            };
            // An edit is a context_edit entry: never spliced, so parsed.
            render(&mut pieces, entry, selected.edit.and_then(parsed));
        }
    }
    let head = if llm { "[" } else { "{\"messages\":[" };
    let mut tail = String::from("]");
    if !llm {
        // The settings come from the parsed entries and the last spliced assistant message (a
        // model is the last one named).
        let last_assistant = (0..indices.len())
            .rev()
            .find(|&position| spliced(position).is_some_and(|(role, _)| *role == Role::Assistant));
        let assistant = last_assistant
            .map(|position| session.parse_at(indices[position]))
            .transpose()?;
        let mut relevant: Vec<(usize, &Json)> = parsed_entries
            .iter()
            .map(|(at, entry)| (*at, entry))
            .collect();
        if let (Some(position), Some(assistant)) = (last_assistant, &assistant) {
            let at = relevant.partition_point(|(other, _)| *other < position);
            relevant.insert(at, (position, assistant));
        }
        let relevant: Vec<&Json> = relevant.into_iter().map(|(_, entry)| entry).collect();
        let (thinking_level, model) = settings(&relevant);
        tail.push_str(",\"thinkingLevel\":");
        crate::json::write_string(&mut tail, &thinking_level);
        tail.push_str(",\"model\":");
        crate::json::write_json(&mut tail, model.as_ref().unwrap_or(&Json::Null));
        tail.push('}');
    }
    assemble(session, head, &pieces, &tail)
}

/// The context's JSON text.
pub(crate) struct ContextText {
    pub text: String,
    /// Every byte was seen, as it was written, not to be NUL (so the text is a C string as it
    /// is, without another pass over it).
    pub without_nul: bool,
}

/// A message of the context text: the range of an entry's line, or its rendering.
enum Piece<'s> {
    Splice(&'s Text, std::ops::Range<usize>),
    Text(String),
}

impl Piece<'_> {
    fn len(&self) -> usize {
        match self {
            Piece::Splice(_, range) => range.len(),
            Piece::Text(text) => text.len(),
        }
    }
}

/// Outputs larger than this are written by two threads, each its half of the pieces.
const SPLIT_BYTES: usize = 1 << 20;

/// `head`, the pieces separated by commas, and `tail`, in one string of the exact size (with
/// room for the C string's terminator, so the text is not copied again). A large text is
/// written by two threads, each reading its pieces' lines back and copying them into its half
/// (the copies and the kernel's zeroing of the fresh pages run side by side).
fn assemble(
    session: &Session,
    head: &str,
    pieces: &[Piece],
    tail: &str,
) -> Result<ContextText, SessionError> {
    let commas = pieces.len().saturating_sub(1);
    let total = head.len() + pieces.iter().map(Piece::len).sum::<usize>() + commas + tail.len();
    // Not zeroed here: each thread's first write to its half takes that half's page faults.
    let mut out: Vec<u8> = Vec::with_capacity(total + 1);
    #[cfg(target_os = "linux")]
    if total >= SPLIT_BYTES {
        advise_huge_pages(out.spare_capacity_mut());
    }
    // Where the second half starts: the piece at which half the text is written.
    let mut split_piece = pieces.len();
    let mut split_byte = total;
    if total >= SPLIT_BYTES {
        let mut at = head.len();
        for (index, piece) in pieces.iter().enumerate() {
            if at >= total / 2 {
                (split_piece, split_byte) = (index, at);
                break;
            }
            at += usize::from(index > 0) + piece.len();
        }
    }
    let (first, second) = out.spare_capacity_mut()[..total].split_at_mut(split_byte);
    let (first_pieces, second_pieces) = pieces.split_at(split_piece);
    let (file, path) = session.file_for_reading();
    let write = |out: &mut [MaybeUninit<u8>],
                 head: &str,
                 pieces: &[Piece],
                 starts_text: bool,
                 tail: &str| {
        write_pieces(
            SpanReader::new(file, path, true),
            out,
            head,
            pieces,
            starts_text,
            tail,
        )
    };
    let without_nul = if second_pieces.is_empty() {
        write(first, head, first_pieces, true, tail)?
    } else {
        // Behind a lock so this thread can write it when no other thread is to be had.
        let second = std::sync::Mutex::new(second);
        let write_second = || {
            write(
                &mut crate::sync::lock(&second),
                "",
                second_pieces,
                false,
                tail,
            )
        };
        std::thread::scope(|scope| {
            let other = std::thread::Builder::new()
                .name("libagent-session-context".into())
                .spawn_scoped(scope, write_second);
            let mine = write(first, head, first_pieces, true, "")?;
            let other = match other.map(|thread| thread.join()) {
                Ok(Ok(result)) => result?,
                // No thread to be had (or, never expected, it panicked): this one writes it.
                _ => write_second()?,
            };
            Ok::<_, SessionError>(mine && other)
        })?
    };
    // SAFETY: `write_pieces` wrote every byte of both halves, `total` in all (it checks that it
    // filled its half), and from `&str`s (whole lines' ranges that start and end at ASCII
    // delimiters, renderings, ASCII separators), so `out` is valid UTF-8.
    let text = unsafe {
        out.set_len(total);
        String::from_utf8_unchecked(out)
    };
    Ok(ContextText { text, without_nul })
}

/// Asks Linux to back `buffer`'s whole 2 MiB pages with transparent huge pages: writing a fresh
/// text of tens of megabytes then takes a page fault per 2 MiB instead of per 4 KiB, which
/// halves its time here (BENCHMARKS.md "Sessions"). Advice only: without huge pages it changes
/// nothing.
#[cfg(target_os = "linux")]
fn advise_huge_pages(buffer: &mut [MaybeUninit<u8>]) {
    const HUGE_PAGE: usize = 2 << 20;
    let start = buffer.as_mut_ptr() as usize;
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + buffer.len()) & !(HUGE_PAGE - 1);
    if end > first {
        // SAFETY: the range lies within `buffer`, memory this function borrows mutably; the
        // advice changes how the kernel backs the pages, not what they hold or who owns them.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

/// Writes `head`, `pieces` (each after a comma, but for the very first piece of the text) and
/// `tail` into `out`, which they fill exactly (checked: `assemble` relies on it); whether no
/// byte written was NUL (each piece checked while it is in the cache).
fn write_pieces(
    mut reader: SpanReader<'_>,
    out: &mut [MaybeUninit<u8>],
    head: &str,
    pieces: &[Piece],
    starts_text: bool,
    tail: &str,
) -> Result<bool, SessionError> {
    let mut at = 0;
    let mut without_nul = true;
    let mut put = |bytes: &[u8]| {
        out[at..at + bytes.len()].write_copy_of_slice(bytes);
        at += bytes.len();
        without_nul &= memchr::memchr(0, bytes).is_none();
    };
    put(head.as_bytes());
    for (index, piece) in pieces.iter().enumerate() {
        if index > 0 || !starts_text {
            put(b",");
        }
        match piece {
            Piece::Splice(Text::Own(text), range) => put(&text.as_bytes()[range.clone()]),
            Piece::Splice(Text::File(span), range) => {
                put(&reader.line(span)?.as_bytes()[range.clone()])
            }
            Piece::Text(text) => put(text.as_bytes()),
        }
    }
    put(tail.as_bytes());
    assert_eq!(
        at,
        out.len(),
        "the context's pieces fill their part exactly"
    );
    Ok(without_nul)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writing the pieces reports a NUL byte among them (so the text then goes through the C
    /// string's own check), and only then.
    #[test]
    fn writing_the_pieces_sees_a_nul_byte() {
        let write = |text: &str| {
            let pieces = [Piece::Text("[1]".into()), Piece::Text(text.into())];
            let mut out = vec![MaybeUninit::uninit(); 3 + 1 + text.len() + 2];
            let path = std::path::Path::new("unused");
            write_pieces(
                SpanReader::new(None, path, false),
                &mut out,
                "[",
                &pieces,
                true,
                "]",
            )
            .unwrap()
        };
        assert!(write("\"a\""));
        assert!(!write("\"a\0\""));
        assert!(!write("\0"));
    }
}

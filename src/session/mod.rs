//! Session files: pi-coding-agent's JSONL format (version 3), a tree of entries whose leaf is the
//! current position. A [`Session`] opens, migrates and resumes a file, creates one (written only
//! once it holds a conversation), or lives in memory; it appends entries one line each and builds
//! the context at its leaf.
//!
//! Entries are kept as the order-preserving JSON text they were read or written as, so unknown
//! entry types and members survive untouched; a message read from the file keeps only where its
//! line is, and is read back (checked unchanged) when asked for. The store knows nothing of the
//! agent loop.

mod context;
mod file;
mod ids;
mod index;
mod llm;
mod migrate;
mod read;
mod scan;
mod shapes;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use compact_str::CompactString;

use crate::json::{Json, JsonMap};

pub use context::{entry_messages, project, ProjectedEntry, SessionContext};
use file::{Found, LoadedFile, PartEntries, SessionFile};
use index::IdIndex;
pub use llm::convert_to_llm;
use read::{SpanReader, Text};
use scan::Role;

/// A file at least this large gives the memory its reading used back to the system.
const RELEASE_AFTER_READING: u64 = 16 << 20;

/// The format version libagent writes (and the newest it reads).
pub(crate) const CURRENT_VERSION: u64 = 3;

/// When an appended entry counts as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Each entry is handed to the operating system as it is appended (survives the process).
    #[default]
    Flush,
    /// Each entry is also synced to the disk (`sync_data`) before the append returns (survives
    /// a power loss).
    Fsync,
}

/// What went wrong with a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionErrorKind {
    /// A file-system error; the message names the path and the OS error.
    Io,
    /// The session file is open for writing elsewhere (an advisory lock).
    Locked,
    /// The file is not a session file (bad header, unknown version, too large).
    NotASession,
    /// The call was refused and changed nothing (unknown entry, wrong shape).
    Refused,
}

/// A session error: its kind and a sentence naming what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionError {
    pub kind: SessionErrorKind,
    pub message: String,
}

impl SessionError {
    pub(crate) fn new(kind: SessionErrorKind, message: impl Into<String>) -> Self {
        SessionError {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn refused(message: impl Into<String>) -> Self {
        SessionError::new(SessionErrorKind::Refused, message)
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SessionError {}

/// One entry as held in memory: its JSON text (where it is in the file, for a message read
/// there; else the text itself) and the links of the tree, so an open session holds far less
/// than its file; values are parsed when asked for.
struct Stored {
    text: Text,
    /// Ids held inline (pi's are 8 characters): no allocation per entry, no pointer to follow
    /// when they are indexed.
    id: Option<CompactString>,
    parent: Option<CompactString>,
    /// For a `message` entry in `JSON.stringify`'s form: its role and its message's text (a
    /// range of `text`), which the context splices without parsing.
    message: Option<(Role, Range<usize>)>,
}

impl Stored {
    /// An entry as stored, from its text and what reading it found; an entry that is not a
    /// message in `JSON.stringify`'s form is returned too, for `Session::note`.
    fn read(text: Text, found: Found) -> (Stored, Option<Json>) {
        match found {
            Found::Parsed(entry) => (Stored::parsed(text, &entry), Some(entry)),
            Found::Message {
                id,
                parent,
                role,
                message,
            } => (
                Stored {
                    text,
                    id,
                    parent,
                    message: Some((role, message)),
                },
                None,
            ),
        }
    }

    /// An entry as stored, from its text and its value.
    fn parsed(text: Text, entry: &Json) -> Stored {
        let link = |key| entry.get(key).and_then(Json::as_str).map(Into::into);
        Stored {
            text,
            id: link("id"),
            parent: link("parentId"),
            message: None,
        }
    }
}

/// The id of the entry at `index` (an indexed entry has one).
fn id_at(entries: &[Stored], index: usize) -> &str {
    entries[index].id.as_deref().unwrap_or_default()
}

/// Entries' texts, those read from the file read back through one window (in file order, the
/// lines of a path cost a few reads).
struct TextReader<'s> {
    session: &'s Session,
    spans: SpanReader<'s>,
}

impl TextReader<'_> {
    fn get(&mut self, index: usize) -> Result<&str, SessionError> {
        match &self.session.entries[index].text {
            Text::Own(text) => Ok(text),
            Text::File(span) => self.spans.line(span),
        }
    }

    /// The value of the entry at `index` (its text was valid JSON when it was stored).
    fn parse(&mut self, index: usize) -> Result<Json, SessionError> {
        Ok(crate::json::parse(self.get(index)?).unwrap_or(Json::Null))
    }
}

/// A session: its header, its entries in file order, the leaf, and (unless in memory) its file.
pub struct Session {
    /// The working directory written into new headers.
    cwd: String,
    header: Json,
    entries: Vec<Stored>,
    /// Every entry parsed, made by the first `entries()` or `branch_path()` and kept up to date.
    parsed: OnceCell<Vec<Json>>,
    /// Entry id -> index in `entries`.
    by_id: IdIndex,
    /// Whether two entries ever had the same id (then a parent is always looked up in `by_id`,
    /// which holds the later one).
    repeated_ids: bool,
    /// Target id -> `[label, the label entry's timestamp]`, as the label entries left them, in
    /// the order of a JavaScript Map (a cleared label that is set again moves to the end).
    labels: JsonMap,
    leaf: Option<String>,
    /// Whether an entry holds a user or assistant message (a file is written only then).
    has_conversation: bool,
    file: Option<SessionFile>,
    skipped_lines: Vec<usize>,
}

impl Session {
    /// Opens the session file at `path` (pi `SessionManager.open`): reads it, migrates versions
    /// 1 and 2 (rewriting the file), repairs a missing final newline, and takes the advisory
    /// lock. An empty file gets a new header; a missing file is a new session written there
    /// once it holds a conversation. The leaf is the file's last entry.
    pub fn open(path: &Path, cwd: &str, durability: Durability) -> Result<Session, SessionError> {
        let mut session = Session::empty(cwd);
        match file::load(path, durability, session.by_id.hasher())? {
            LoadedFile::Missing(file) => {
                session.header = session.new_header(None);
                session.file = Some(file);
            }
            LoadedFile::Empty(mut file) => {
                session.header = session.new_header(None);
                file.write_all_entries(&session.header, std::iter::empty())?;
                session.file = Some(file);
            }
            LoadedFile::Read {
                file,
                mut header,
                entries,
                skipped_lines,
            } => {
                let size = file.size();
                session.file = Some(file);
                session.store_parts(entries);
                // The leaf is the last entry (set here once, not for every message read).
                session.leaf = session
                    .entries
                    .last()
                    .and_then(|e| e.id.as_deref().map(Into::into));
                if size >= RELEASE_AFTER_READING {
                    // The reading's temporaries (each line's findings) were the size of a
                    // fraction of the file: the host should not keep them resident.
                    crate::release_freed_memory();
                }
                if migrate::needed(&header) {
                    // Old files are migrated as values, then rewritten.
                    let mut entries = session.parse_all()?;
                    migrate::migrate(&mut header, &mut entries);
                    session.set_entries(entries);
                    let texts: Vec<String> =
                        session.texts()?.into_iter().map(Cow::into_owned).collect();
                    if let Some(file) = &mut session.file {
                        file.write_all_entries(&header, texts.iter().map(String::as_str))?;
                    }
                }
                session.header = header;
                session.skipped_lines = skipped_lines;
            }
        }
        Ok(session)
    }

    /// Starts a new session whose file goes into `dir` (pi `SessionManager.create`), named
    /// `<timestamp>_<session id>.jsonl`; nothing is written until it holds a user or assistant
    /// message. Creates `dir` when it does not exist.
    pub fn create(dir: &Path, cwd: &str, durability: Durability) -> Result<Session, SessionError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| file::io_error("create the directory", dir, &e))?;
        let mut session = Session::empty(cwd);
        session.header = session.new_header(None);
        session.file = Some(SessionFile::unwritten(
            dir.join(file_name_for(&session.header)),
            durability,
        ));
        Ok(session)
    }

    /// Opens the newest session file in `dir` (by modification time) whose header names `cwd`,
    /// or creates a new session there when there is none (pi `SessionManager.continueRecent`).
    pub fn continue_recent(
        dir: &Path,
        cwd: &str,
        durability: Durability,
    ) -> Result<Session, SessionError> {
        match file::most_recent(dir, cwd) {
            Some(path) => Session::open(&path, cwd, durability),
            None => Session::create(dir, cwd, durability),
        }
    }

    /// A session kept in memory only (pi `SessionManager.inMemory`).
    pub fn in_memory(cwd: &str) -> Session {
        let mut session = Session::empty(cwd);
        session.header = session.new_header(None);
        session
    }

    /// An in-memory session holding `entries` (no header among them: a new one is made), with
    /// the leaf at the last entry (pi `SessionManager.inMemory(cwd, undefined, entries)`).
    pub fn from_entries(cwd: &str, entries: Vec<Json>) -> Result<Session, SessionError> {
        if let Some(position) = entries.iter().position(|e| !e.is_object()) {
            return Err(SessionError::refused(format!(
                "Entry {position} is not a JSON object; every session entry is one."
            )));
        }
        let mut session = Session::in_memory(cwd);
        session.set_entries(entries);
        Ok(session)
    }

    fn empty(cwd: &str) -> Session {
        Session {
            cwd: cwd.to_string(),
            header: Json::Null,
            entries: Vec::new(),
            parsed: OnceCell::new(),
            by_id: IdIndex::default(),
            repeated_ids: false,
            labels: JsonMap::new(),
            leaf: None,
            has_conversation: false,
            file: None,
            skipped_lines: Vec::new(),
        }
    }

    /// A version 3 header for a new session (`parentSession` names the file it was forked from).
    fn new_header(&self, parent_session: Option<&Path>) -> Json {
        let mut header = JsonMap::new();
        header.insert("type".into(), "session".into());
        header.insert("version".into(), CURRENT_VERSION.into());
        header.insert("id".into(), ids::session_id().into());
        header.insert("timestamp".into(), ids::now_iso().into());
        header.insert("cwd".into(), self.cwd.clone().into());
        if let Some(parent) = parent_session {
            header.insert(
                "parentSession".into(),
                parent.to_string_lossy().into_owned().into(),
            );
        }
        Json::Object(header)
    }

    /// Replaces every entry (and the index, labels, conversation flag and leaf).
    fn set_entries(&mut self, entries: Vec<Json>) {
        self.entries.clear();
        self.parsed = OnceCell::new();
        self.by_id.clear();
        self.repeated_ids = false;
        self.labels.clear();
        self.has_conversation = false;
        self.leaf = None;
        for entry in entries {
            self.store(Text::Own(crate::json::to_string(&entry).into()), &entry);
        }
    }

    /// Stores the entries the reading threads made ready, in file order.
    fn store_parts(&mut self, parts: Vec<PartEntries>) {
        let count = parts.iter().map(|part| part.entries.len()).sum();
        self.by_id.reserve(count, |_| "");
        for mut part in parts {
            let offset = self.entries.len();
            if offset == 0 {
                // Taken, not copied (the first part reserved room for the others).
                self.entries = std::mem::take(&mut part.entries);
            }
            self.entries.reserve_exact(count - self.entries.len());
            self.entries.append(&mut part.entries);
            self.has_conversation |= part.has_conversation;
            let entries = &self.entries;
            for (at, hash) in part.id_hashes {
                if self
                    .by_id
                    .insert_hashed(hash, offset + at, |i| id_at(entries, i))
                {
                    self.repeated_ids = true;
                }
            }
            for entry in &part.parsed {
                self.note(entry);
            }
        }
    }

    /// Indexes the id of the entry just pushed.
    fn index_last(&mut self) {
        let at = self.entries.len() - 1;
        let entries = &self.entries;
        if entries[at].id.is_some() && self.by_id.insert(at, |i| id_at(entries, i)) {
            self.repeated_ids = true;
        }
    }

    /// The index of the entry with `id` (the later one when two have it).
    fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id, |i| id_at(&self.entries, i))
    }

    fn has_id(&self, id: &str) -> bool {
        self.index_of(id).is_some()
    }

    /// Takes back the entry just stored (its write failed). Its id is a fresh one
    /// (`ids::entry_id`), so no earlier entry had it.
    fn unstore_last(&mut self) {
        if let Some(id) = self.entries.last().and_then(|e| e.id.clone()) {
            let entries = &self.entries;
            self.by_id.remove(&id, |i| id_at(entries, i));
        }
        self.entries.pop();
    }

    /// Adds an entry (`text` is its JSON, `entry` its value), indexes it and makes it the leaf.
    fn store(&mut self, text: Text, entry: &Json) {
        let stored = Stored::parsed(text, entry);
        self.leaf = stored.id.as_deref().map(str::to_string);
        self.entries.push(stored);
        self.index_last();
        if let Some(parsed) = self.parsed.get_mut() {
            parsed.push(entry.clone());
        }
        self.note(entry);
    }

    /// What an entry other than a message in `JSON.stringify`'s form changes beyond the entries:
    /// the conversation flag and the labels.
    fn note(&mut self, entry: &Json) {
        if is_conversation(entry) {
            self.has_conversation = true;
        }
        if entry.get("type").and_then(Json::as_str) == Some("label") {
            if let Some(target) = entry.get("targetId").and_then(Json::as_str) {
                match entry.get("label") {
                    Some(label) if is_truthy(label) => {
                        let timestamp = entry.get("timestamp").cloned().unwrap_or(Json::Null);
                        let value = Json::Array(vec![label.clone(), timestamp]);
                        self.labels.insert(target.to_string(), value);
                    }
                    _ => {
                        self.labels.shift_remove(target);
                    }
                }
            }
        }
    }

    /// A reader of the entries' texts: `window` for many entries in file order, else each read
    /// alone.
    fn text_reader(&self, window: bool) -> TextReader<'_> {
        let (file, path) = self.file_for_reading();
        TextReader {
            session: self,
            spans: SpanReader::new(file, path, window),
        }
    }

    /// The file entries' lines are read back from, and its path (for errors).
    fn file_for_reading(&self) -> (Option<&File>, &Path) {
        let file = self.file.as_ref();
        (
            file.and_then(SessionFile::handle),
            file.map_or(Path::new(""), SessionFile::path),
        )
    }

    /// The value of the entry at `index`.
    fn parse_at(&self, index: usize) -> Result<Json, SessionError> {
        self.text_reader(false).parse(index)
    }

    fn parse_all(&self) -> Result<Vec<Json>, SessionError> {
        let mut reader = self.text_reader(true);
        (0..self.entries.len()).map(|i| reader.parse(i)).collect()
    }

    /// Every entry's JSON text.
    fn texts(&self) -> Result<Vec<Cow<'_, str>>, SessionError> {
        let mut reader = self.text_reader(true);
        (0..self.entries.len())
            .map(|index| match &self.entries[index].text {
                Text::Own(text) => Ok(Cow::Borrowed(&**text)),
                Text::File(_) => Ok(Cow::Owned(reader.get(index)?.to_string())),
            })
            .collect()
    }

    /// The indices of the entries from the root to `leaf` (an unknown parent ends the walk, and
    /// so does a cycle in a hand-edited file).
    fn path_indices(&self, leaf: Option<&str>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut current = leaf.and_then(|id| self.index_of(id));
        while let Some(index) = current {
            if path.len() > self.entries.len() {
                break;
            }
            path.push(index);
            let Some(parent) = self.entries[index].parent.as_deref() else {
                break;
            };
            // Most entries follow their parent in the file: no lookup then.
            let previous = index.checked_sub(1);
            current = match previous {
                Some(p) if !self.repeated_ids && self.entries[p].id.as_deref() == Some(parent) => {
                    Some(p)
                }
                _ => self.index_of(parent),
            };
        }
        path.reverse();
        path
    }

    /// The entries from the root to `leaf`, parsed.
    fn path_values(&self, leaf: Option<&str>) -> Result<Vec<Json>, SessionError> {
        let mut reader = self.text_reader(true);
        self.path_indices(leaf)
            .into_iter()
            .map(|index| match self.parsed.get() {
                Some(parsed) => Ok(parsed[index].clone()),
                None => reader.parse(index),
            })
            .collect()
    }

    /// The session header (`{type: "session", version, id, timestamp, cwd, ...}`).
    pub fn header(&self) -> &Json {
        &self.header
    }

    /// Every entry except the header, in file order. (The first call parses them all; the
    /// session then keeps the values.) Entries read from the file are read again: an error when
    /// the file was changed by another program since.
    pub fn entries(&self) -> Result<&[Json], SessionError> {
        if let Some(parsed) = self.parsed.get() {
            return Ok(parsed);
        }
        let parsed = self.parse_all()?;
        Ok(self.parsed.get_or_init(|| parsed))
    }

    /// Every entry, parsed for the caller (the session keeps only their texts unless
    /// `entries()` was called): what the C ABI hands out, so a host that reads the entries does
    /// not make the session hold them parsed.
    pub(crate) fn entry_values(&self) -> Result<Vec<Json>, SessionError> {
        match self.parsed.get() {
            Some(parsed) => Ok(parsed.clone()),
            None => self.parse_all(),
        }
    }

    /// `branch_path()` parsed for the caller (see `entry_values`).
    pub(crate) fn branch_values(&self) -> Result<Vec<Json>, SessionError> {
        self.path_values(self.leaf.as_deref())
    }

    /// The entry with `id` (see `entries` for the error).
    pub fn entry(&self, id: &str) -> Result<Option<Json>, SessionError> {
        self.index_of(id)
            .map(|index| self.parse_at(index))
            .transpose()
    }

    /// The current position: new entries become its children. None before the first entry or
    /// after `branch(None)`.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// The entries from the root to the leaf (a parent that does not exist ends the walk; see
    /// `entries` for the error).
    pub fn branch_path(&self) -> Result<Vec<&Json>, SessionError> {
        let entries = self.entries()?;
        Ok(self
            .path_indices(self.leaf.as_deref())
            .into_iter()
            .map(|index| &entries[index])
            .collect())
    }

    /// The session file's path; None in memory.
    pub fn file_path(&self) -> Option<&Path> {
        self.file.as_ref().map(SessionFile::path)
    }

    /// Whether the session file exists yet (a new session writes it once it holds a user or
    /// assistant message).
    pub fn file_exists(&self) -> bool {
        self.file.as_ref().is_some_and(SessionFile::is_written)
    }

    /// The 1-based numbers of the lines that were not JSON objects when the file was read
    /// (skipped, as the reference skips them). Blank lines are not counted.
    pub fn skipped_lines(&self) -> &[usize] {
        &self.skipped_lines
    }

    /// The context at the leaf (pi `buildSessionContext`): the messages a model is sent (before
    /// conversion), the thinking level and the model (see `entries` for the error).
    pub fn context(&self) -> Result<SessionContext, SessionError> {
        context::build(self)
    }

    /// `context().to_json()` as text, made without parsing most entries (what the C ABI hands
    /// out).
    #[cfg(test)]
    pub(crate) fn context_text(&self) -> Result<String, SessionError> {
        Ok(context::build_text(self, false)?.text)
    }

    /// `convert_to_llm(&context().messages)` as JSON text (see `context_text`).
    #[cfg(test)]
    pub(crate) fn llm_text(&self) -> Result<String, SessionError> {
        Ok(context::build_text(self, true)?.text)
    }

    /// `context_text` (or, with `llm`, `llm_text`), with whether it was seen to hold no NUL
    /// byte as it was written.
    pub(crate) fn context_json(&self, llm: bool) -> Result<context::ContextText, SessionError> {
        context::build_text(self, llm)
    }

    /// Appends an entry as a child of the leaf and makes it the leaf; returns its id. `entry`
    /// is `{"type": ..., members}`: `id`, `parentId` and `timestamp` are filled in (any given are
    /// replaced). The rules of the reference's own append functions apply by type: a `label`'s
    /// target must exist; a `context_edit` must target an editable message on the current
    /// branch; a `session_info` name is put on one line; a `compaction` without
    /// `firstKeptEntryId` keeps nothing (its own id) and carries the current system message.
    pub fn append(&mut self, entry: Json) -> Result<String, SessionError> {
        let Json::Object(mut members) = entry else {
            return Err(SessionError::refused(
                "The entry is not a JSON object; pass {\"type\": ..., members}.",
            ));
        };
        let Some(Json::String(kind)) = members.shift_remove("type") else {
            return Err(SessionError::refused(
                "The entry has no string \"type\"; pass {\"type\": ..., members}.",
            ));
        };
        for key in ["id", "parentId", "timestamp"] {
            members.shift_remove(key);
        }
        let id = ids::entry_id(|id| self.has_id(id));
        let timestamp = ids::now_iso();
        self.check_members(&kind, &mut members, &id, &timestamp)?;
        let parent = self.leaf.clone();
        let entry = build_entry(&kind, &id, parent.as_deref(), &timestamp, members);
        self.push(entry)?;
        Ok(id)
    }

    /// Appends a `message` entry.
    pub fn append_message(&mut self, message: &Json) -> Result<String, SessionError> {
        self.append(crate::json::object([
            ("type", "message".into()),
            ("message", message.clone()),
        ]))
    }

    /// Appends a `model_change` entry.
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<String, SessionError> {
        self.append(crate::json::object([
            ("type", "model_change".into()),
            ("provider", provider.into()),
            ("modelId", model_id.into()),
        ]))
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, SessionError> {
        self.append(crate::json::object([
            ("type", "thinking_level_change".into()),
            ("thinkingLevel", level.into()),
        ]))
    }

    /// Moves the leaf to an existing entry (None: before the first entry, so the next entry is a
    /// new root). Writes nothing.
    pub fn branch(&mut self, entry_id: Option<&str>) -> Result<(), SessionError> {
        match entry_id {
            None => self.leaf = None,
            Some(id) if self.has_id(id) => self.leaf = Some(id.to_string()),
            Some(id) => return Err(not_found(id)),
        }
        Ok(())
    }

    /// Moves the leaf to `target` (None: a new root) and appends a `branch_summary` child of it
    /// whose `fromId` is the previous leaf (`"root"` when there was none). `summary` is
    /// `{"summary", "details"?, "fromHook"?, "usage"?}`.
    pub fn branch_with_summary(
        &mut self,
        target: Option<&str>,
        summary: Json,
    ) -> Result<String, SessionError> {
        if let Some(id) = target {
            if !self.has_id(id) {
                return Err(not_found(id));
            }
        }
        let Json::Object(given) = summary else {
            return Err(SessionError::refused(
                "The branch summary is not a JSON object; pass {\"summary\": ..., \"details\"?, \"fromHook\"?, \"usage\"?}.",
            ));
        };
        let from = self.leaf.clone().unwrap_or_else(|| "root".to_string());
        let mut members = JsonMap::new();
        members.insert("fromId".into(), from.into());
        // The reference's member order; other members follow.
        for key in ["summary", "details", "usage", "fromHook"] {
            if let Some(value) = given.get(key) {
                members.insert(key.into(), value.clone());
            }
        }
        for (key, value) in given {
            if !members.contains_key(&key) && key != "fromId" {
                members.insert(key, value);
            }
        }
        let previous_leaf = std::mem::replace(&mut self.leaf, target.map(str::to_string));
        let id = ids::entry_id(|id| self.has_id(id));
        let entry = build_entry("branch_summary", &id, target, &ids::now_iso(), members);
        if let Err(error) = self.push(entry) {
            self.leaf = previous_leaf;
            return Err(error);
        }
        Ok(id)
    }

    /// Replaces the session by the path from the root to `target` (pi `createBranchedSession`):
    /// label entries are left out and the kept entries re-chained, then one label entry per label
    /// still set on a kept entry follows. A file session continues in a new file beside the old
    /// one (whose header names the old file as `parentSession`), written now when the path holds
    /// a conversation; the old file is left as it was.
    pub fn fork(&mut self, target: &str) -> Result<(), SessionError> {
        if !self.has_id(target) {
            return Err(not_found(target));
        }
        let path = self.path_values(Some(target))?;
        let mut kept: Vec<Json> = Vec::with_capacity(path.len());
        let mut replacement_of_label: HashMap<String, String> = HashMap::new();
        let mut pending_labels: Vec<String> = Vec::new();
        let mut parent: Option<String> = None;
        for mut entry in path {
            let id = entry.get("id").and_then(Json::as_str).map(str::to_string);
            if entry.get("type").and_then(Json::as_str) == Some("label") {
                pending_labels.extend(id);
                continue;
            }
            if let Some(id) = &id {
                for label in pending_labels.drain(..) {
                    replacement_of_label.insert(label, id.clone());
                }
            }
            if let Json::Object(map) = &mut entry {
                crate::json::set_key(
                    map,
                    "parentId",
                    parent.clone().map_or(Json::Null, Json::from),
                );
                if map.get("type").and_then(Json::as_str) == Some("compaction") {
                    let first_kept = map.get("firstKeptEntryId").and_then(Json::as_str);
                    if let Some(replacement) = first_kept
                        .filter(|kept| Some(*kept) != id.as_deref())
                        .and_then(|kept| replacement_of_label.get(kept))
                    {
                        map.insert("firstKeptEntryId".into(), replacement.clone().into());
                    }
                }
            }
            parent = id;
            kept.push(entry);
        }
        let mut taken: std::collections::HashSet<String> = kept
            .iter()
            .filter_map(|e| e.get("id").and_then(Json::as_str).map(str::to_string))
            .collect();
        let mut label_entries = Vec::new();
        let labels: Vec<(String, Json)> = self
            .labels
            .iter()
            .filter(|(target, _)| taken.contains(*target))
            .map(|(target, value)| (target.clone(), value.clone()))
            .collect();
        for (target, value) in labels {
            let id = ids::entry_id(|id| taken.contains(id));
            taken.insert(id.clone());
            let mut members = JsonMap::new();
            members.insert("targetId".into(), target.into());
            members.insert("label".into(), value[0].clone());
            let mut entry = build_entry("label", &id, parent.as_deref(), "", members);
            entry["timestamp"] = value[1].clone();
            parent = Some(id);
            label_entries.push(entry);
        }
        kept.extend(label_entries);

        let old_path = self.file_path().map(Path::to_path_buf);
        let header = self.new_header(old_path.as_deref());
        let new_file = self.file.as_ref().map(|file| {
            SessionFile::unwritten(file.dir().join(file_name_for(&header)), file.durability())
        });
        let mut forked = Session::empty(&self.cwd);
        forked.header = header;
        forked.set_entries(kept);
        if forked.has_conversation {
            if let Some(mut file) = new_file {
                let texts = forked.texts()?;
                file.create_with(&forked.header, texts.iter().map(|text| &**text))?;
                forked.file = Some(file);
            }
        } else {
            forked.file = new_file;
        }
        *self = forked;
        Ok(())
    }

    /// The type-specific rules of the reference's append functions; may normalize `members`.
    fn check_members(
        &self,
        kind: &str,
        members: &mut JsonMap,
        id: &str,
        timestamp: &str,
    ) -> Result<(), SessionError> {
        match kind {
            "session" => Err(SessionError::refused(
                "A session header cannot be appended as an entry.",
            )),
            "message" => match members.get("message") {
                Some(Json::Object(message)) if message.get("role").is_some_and(Json::is_string) => {
                    Ok(())
                }
                _ => Err(SessionError::refused(
                    "A message entry needs a \"message\" object with a string \"role\".",
                )),
            },
            "label" => {
                let target = members.get("targetId").and_then(Json::as_str);
                match target {
                    Some(target) if self.has_id(target) => {
                        if members.get("label").is_some_and(Json::is_null) {
                            members.shift_remove("label");
                        }
                        Ok(())
                    }
                    Some(target) => Err(not_found(target)),
                    None => Err(SessionError::refused(
                        "A label entry needs a string \"targetId\" naming an entry.",
                    )),
                }
            }
            "session_info" => {
                let Some(Json::String(name)) = members.get("name") else {
                    return Err(SessionError::refused(
                        "A session_info entry needs a string \"name\".",
                    ));
                };
                let one_line = one_line(name);
                members.insert("name".into(), one_line.into());
                Ok(())
            }
            "context_edit" => self.check_context_edit(members),
            "compaction" => {
                match members.get("firstKeptEntryId") {
                    None | Some(Json::Null) => {
                        crate::json::set_key(members, "firstKeptEntryId", id.into());
                    }
                    Some(_) => {}
                }
                if !members.contains_key("systemMessage") {
                    let messages = self.context()?.messages;
                    if let Some(mut system) =
                        crate::transcript::get_current_system_message(&messages)
                    {
                        if let Json::Object(map) = &mut system {
                            map.insert(
                                "timestamp".into(),
                                ids::iso_to_ms(timestamp).map_or(Json::Null, Json::from),
                            );
                        }
                        members.insert("systemMessage".into(), system);
                    }
                }
                Ok(())
            }
            "usage" => {
                if members.get("note").is_some_and(|note| !is_truthy(note)) {
                    members.shift_remove("note");
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// pi `appendContextEdit`'s checks, and a string replacement of an assistant or tool-result
    /// message stored as one text block.
    fn check_context_edit(&self, members: &mut JsonMap) -> Result<(), SessionError> {
        let replacement = members.get("replacement").cloned();
        let valid = match replacement.as_ref().unwrap_or(&Json::Bool(false)) {
            Json::Null => true,
            Json::Object(map) => {
                matches!(map.get("content"), Some(Json::String(_) | Json::Array(_)))
            }
            _ => false,
        };
        if !valid {
            return Err(SessionError::refused(
                "A context edit's \"replacement\" must be null or {\"content\": string or array}.",
            ));
        }
        let Some(target_id) = members.get("targetId").and_then(Json::as_str) else {
            return Err(SessionError::refused(
                "A context_edit entry needs a string \"targetId\" naming an entry.",
            ));
        };
        let Some(target) = self.entry(target_id)? else {
            return Err(not_found(target_id));
        };
        let on_branch = self
            .path_indices(self.leaf.as_deref())
            .into_iter()
            .any(|index| self.entries[index].id.as_deref() == Some(target_id));
        if !on_branch {
            return Err(SessionError::refused(format!(
                "Entry {target_id} is not on the current branch; a context edit targets an entry on it."
            )));
        }
        let role = match target.get("type").and_then(Json::as_str) {
            Some("custom_message") => Some("custom"),
            Some("message") => target
                .get("message")
                .and_then(|m| m.get("role"))
                .and_then(Json::as_str)
                .filter(|role| matches!(*role, "user" | "assistant" | "toolResult")),
            _ => None,
        };
        let Some(role) = role else {
            return Err(SessionError::refused(format!(
                "Entry {target_id} holds no user, assistant, tool-result or custom message, so there is nothing to edit."
            )));
        };
        if let Some(Json::String(text)) = replacement.as_ref().and_then(|r| r.get("content")) {
            if matches!(role, "assistant" | "toolResult") {
                let block = crate::json::json!([{"type": "text", "text": text}]);
                members.insert(
                    "replacement".into(),
                    crate::json::object([("content", block)]),
                );
            }
        }
        Ok(())
    }

    /// Adds a finished entry, makes it the leaf and stores it; on a write failure memory is left
    /// as it was (an entry that was not written must not become a parent).
    fn push(&mut self, entry: Json) -> Result<(), SessionError> {
        let previous_leaf = self.leaf.clone();
        let previous_conversation = self.has_conversation;
        let previous_labels = (entry.get("type").and_then(Json::as_str) == Some("label"))
            .then(|| self.labels.clone());
        self.store(Text::Own(crate::json::to_string(&entry).into()), &entry);
        if let Err(error) = self.persist() {
            self.unstore_last();
            if let Some(parsed) = self.parsed.get_mut() {
                parsed.pop();
            }
            self.leaf = previous_leaf;
            self.has_conversation = previous_conversation;
            if let Some(labels) = previous_labels {
                self.labels = labels;
            }
            return Err(error);
        }
        Ok(())
    }

    /// Writes the last entry: one appended line, or — the first time the session holds a
    /// conversation — the header and every entry so far.
    fn persist(&mut self) -> Result<(), SessionError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        if file.is_written() {
            let Some(last) = self.entries.len().checked_sub(1) else {
                return Ok(());
            };
            // An appended entry holds its text.
            let line = match &self.entries[last].text {
                Text::Own(text) => Cow::Borrowed(&**text),
                Text::File(_) => Cow::Owned(self.text_reader(false).get(last)?.to_string()),
            };
            match &mut self.file {
                Some(file) => file.append_line(&line),
                None => Ok(()),
            }
        } else if self.has_conversation {
            // Not written yet: every entry holds its text (none was read from this file).
            let texts: Vec<String> = self.texts()?.into_iter().map(Cow::into_owned).collect();
            match &mut self.file {
                Some(file) => file.create_with(&self.header, texts.iter().map(String::as_str)),
                None => Ok(()),
            }
        } else {
            Ok(())
        }
    }

    #[cfg(test)]
    pub(crate) fn io_counters(&self) -> (u64, u64) {
        self.file.as_ref().map_or((0, 0), SessionFile::counters)
    }
}

/// pi's per-directory layout: `base/--<cwd with its leading separator removed and the other
/// separators and colons as '-'>--/`.
pub fn session_directory(base: &Path, cwd: &str) -> PathBuf {
    let absolute = if Path::new(cwd).is_absolute() {
        PathBuf::from(cwd)
    } else {
        std::env::current_dir()
            .map(|dir| dir.join(cwd))
            .unwrap_or_else(|_| PathBuf::from(cwd))
    };
    let text = absolute.to_string_lossy();
    let trimmed = text.strip_prefix(['/', '\\']).unwrap_or(&text);
    let encoded: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    base.join(format!("--{encoded}--"))
}

/// `<header timestamp with ':' and '.' as '-'>_<session id>.jsonl`, as pi names new files.
fn file_name_for(header: &Json) -> String {
    let timestamp = header
        .get("timestamp")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .replace([':', '.'], "-");
    let id = header.get("id").and_then(Json::as_str).unwrap_or_default();
    format!("{timestamp}_{id}.jsonl")
}

/// A new entry with the reference's member order: `type, id, parentId, timestamp, members`,
/// except `custom` and `custom_message` entries, which the reference writes with their members
/// before the id.
fn build_entry(
    kind: &str,
    id: &str,
    parent: Option<&str>,
    timestamp: &str,
    members: JsonMap,
) -> Json {
    let mut entry = JsonMap::with_capacity(members.len() + 4);
    entry.insert("type".into(), kind.into());
    let members_first = matches!(kind, "custom" | "custom_message");
    if members_first {
        entry.extend(members.clone());
    }
    entry.insert("id".into(), id.into());
    entry.insert("parentId".into(), parent.map_or(Json::Null, Json::from));
    entry.insert("timestamp".into(), timestamp.into());
    if !members_first {
        entry.extend(members);
    }
    Json::Object(entry)
}

fn not_found(id: &str) -> SessionError {
    SessionError::refused(format!("Entry {id} not found in the session."))
}

/// A `message` entry holding a user or assistant message.
fn is_conversation(entry: &Json) -> bool {
    entry.get("type").and_then(Json::as_str) == Some("message")
        && matches!(
            entry
                .get("message")
                .and_then(|m| m.get("role"))
                .and_then(Json::as_str),
            Some("user" | "assistant")
        )
}

/// JavaScript truthiness of a JSON value.
fn is_truthy(value: &Json) -> bool {
    match value {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => {
            let n = crate::json::number_value(n);
            n != 0.0 && !n.is_nan()
        }
        Json::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// Runs of CR/LF become one space, then the text is trimmed (pi `appendSessionInfo`).
fn one_line(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_break = false;
    for c in name.chars() {
        if c == '\r' || c == '\n' {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            in_break = false;
            out.push(c);
        }
    }
    out.trim_matches(crate::json::is_js_whitespace).to_string()
}

#[cfg(test)]
mod tests;

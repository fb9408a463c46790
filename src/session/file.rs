//! The session file itself: reading its lines, the advisory lock, lazy creation, and appending
//! one whole line per entry (a failed write is cut back so no partial line remains).

use std::fs::{File, OpenOptions, TryLockError};
use std::hash::BuildHasher;
use std::io::{BufRead, BufReader, Write};
use std::ops::Range;

use compact_str::CompactString;
use std::path::{Path, PathBuf};

use super::index::IdHasher;
use super::read::{self, ReadLine};
use super::scan::{self, Role};

use super::{Durability, SessionError, SessionErrorKind, Stored, CURRENT_VERSION};
use crate::json::Json;

/// The largest file `open` reads: entries are held in memory, and a larger file is far more
/// likely a mistake than a conversation.
pub(crate) const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// An open (locked) or not yet written session file.
pub(crate) struct SessionFile {
    path: PathBuf,
    durability: Durability,
    /// The locked handle, opened for appending; None until the file is created.
    handle: Option<File>,
    /// The file's length as libagent wrote it: a failed write is truncated back to it.
    len: u64,
    /// Counted for the tests of O(1) appends.
    #[cfg_attr(not(test), allow(dead_code))]
    bytes_read: u64,
    #[cfg_attr(not(test), allow(dead_code))]
    bytes_written: u64,
}

/// What `load` found at a path.
pub(crate) enum LoadedFile {
    /// No file: a new session is written there once it holds a conversation.
    Missing(SessionFile),
    /// An empty file (locked): it gets a new header.
    Empty(SessionFile),
    /// A session file (locked; a missing final newline already repaired): its header and its
    /// entries in file order.
    Read {
        file: SessionFile,
        header: Json,
        entries: Vec<PartEntries>,
        skipped_lines: Vec<usize>,
    },
}

/// The lines one reading thread read, made ready to be stored: the session joins the parts,
/// indexes the ids hashed here and notes the entries parsed here, without going over each
/// entry again.
pub(crate) struct PartEntries {
    /// Whether the part starts the file: its first entry is the header.
    first_part: bool,
    /// The part's first entry line, the header if no part before has an entry (a message: null).
    first: Option<Json>,
    /// The part's entries (the header and later header lines left out).
    pub entries: Vec<Stored>,
    /// The position in `entries` of each entry with an id, and its hash by the session's index.
    pub id_hashes: Vec<(usize, u64)>,
    hasher: IdHasher,
    /// The entries that are not messages in `JSON.stringify`'s form, parsed, in order.
    pub parsed: Vec<Json>,
    /// Whether a message entry holds a user or assistant message.
    pub has_conversation: bool,
    /// The part's lines so far, and the numbers (from 1 within the part) of those skipped.
    lines: usize,
    skipped: Vec<usize>,
}

impl PartEntries {
    fn new(first_part: bool, hasher: IdHasher) -> PartEntries {
        PartEntries {
            first_part,
            first: None,
            entries: Vec::new(),
            id_hashes: Vec::new(),
            hasher,
            parsed: Vec::new(),
            has_conversation: false,
            lines: 0,
            skipped: Vec::new(),
        }
    }
}

impl read::Lines for PartEntries {
    fn push(&mut self, line: ReadLine) {
        self.lines += 1;
        let (text, found) = match line {
            ReadLine::Blank => return,
            ReadLine::Skipped => return self.skipped.push(self.lines),
            ReadLine::Entry(text, found) => (text, found),
        };
        if self.first.is_none() {
            self.first = Some(match &found {
                Found::Parsed(entry) => entry.clone(),
                Found::Message { .. } => Json::Null,
            });
            if self.first_part {
                return;
            }
        }
        if is_header(&found) {
            return;
        }
        if let Found::Message { role, .. } = &found {
            self.has_conversation |= matches!(role, Role::User | Role::Assistant);
        }
        let (stored, parsed) = Stored::read(text, found);
        if let Some(id) = stored.id.as_deref() {
            let hash = self.hasher.hash_one(id);
            self.id_hashes.push((self.entries.len(), hash));
        }
        self.entries.push(stored);
        self.parsed.extend(parsed);
    }

    fn held(&self) -> usize {
        self.entries.len()
    }

    fn try_reserve(&mut self, more: usize, more_in_file: usize) {
        // The first part's entries become the session's, which the other parts' join: room for
        // them too saves copying the first part.
        let entries = if self.first_part { more_in_file } else { more };
        let _ = self.entries.try_reserve(entries);
        let _ = self.id_hashes.try_reserve(more);
    }

    const LINE_BYTES: usize = std::mem::size_of::<Stored>() + std::mem::size_of::<(usize, u64)>();
}

/// A line's content.
pub(crate) enum Found {
    /// A `message` entry as `JSON.stringify` writes it: its links, its message's role and the
    /// message's range in the line.
    Message {
        id: Option<CompactString>,
        parent: Option<CompactString>,
        role: Role,
        message: Range<usize>,
    },
    /// Any other entry, parsed: a header whole, an entry as its `skeleton`.
    Parsed(Json),
}

/// What one line is.
pub(crate) enum Line {
    Blank,
    /// Not a JSON object: skipped, as the reference skips it.
    Skipped,
    Entry(Found),
}

pub(crate) fn read_line(line: &str) -> Line {
    if let Some(found) = scan::message_line(line) {
        return Line::Entry(message_found(line, found));
    }
    if line.trim_matches(crate::json::is_js_whitespace).is_empty() {
        return Line::Blank;
    }
    match crate::json::parse(line) {
        Ok(entry @ Json::Object(_)) => Line::Entry(Found::Parsed(skeleton(entry))),
        _ => Line::Skipped,
    }
}

/// What the store keeps of a message line the scan recognized as `found`.
pub(crate) fn message_found(line: &str, found: scan::MessageLine) -> Found {
    let text = |range: Option<Range<usize>>| range.map(|range| line[range].into());
    Found::Message {
        id: text(found.id),
        parent: text(found.parent),
        role: found.role,
        message: found.message,
    }
}

/// The members the store indexes an entry by (its type and links, a label's members, a
/// message's role): all the lines are read before any is stored, and the rest of each value is
/// parsed again from its text when asked for.
fn skeleton(entry: Json) -> Json {
    let Json::Object(mut map) = entry else {
        return entry;
    };
    if map.get("type").and_then(Json::as_str) == Some("session") {
        return Json::Object(map);
    }
    let mut kept = crate::json::JsonMap::new();
    for key in ["type", "id", "parentId", "targetId", "label", "timestamp"] {
        if let Some(value) = map.shift_remove(key) {
            kept.insert(key.into(), value);
        }
    }
    if let Some(Json::Object(message)) = map.get_mut("message") {
        let role = message.shift_remove("role");
        kept.insert(
            "message".into(),
            crate::json::object([("role", role.unwrap_or(Json::Null))]),
        );
    }
    Json::Object(kept)
}

pub(crate) fn io_error(action: &str, path: &Path, error: &std::io::Error) -> SessionError {
    SessionError::new(
        SessionErrorKind::Io,
        format!("Could not {action} {}: {error}.", path.display()),
    )
}

fn not_a_session(message: String) -> SessionError {
    SessionError::new(SessionErrorKind::NotASession, message)
}

/// Opens `path` for appending (created when `create` is set, failing if it exists) and takes
/// its exclusive advisory lock.
fn open_locked(path: &Path, create: bool) -> Result<File, SessionError> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    if create {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| {
        io_error(
            if create {
                "create the session file"
            } else {
                "open the session file"
            },
            path,
            &e,
        )
    })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(SessionError::new(
            SessionErrorKind::Locked,
            format!(
                "{} is open for writing in another session (it holds the file's lock); close that session first.",
                path.display()
            ),
        )),
        Err(TryLockError::Error(e)) => Err(io_error("lock", path, &e)),
    }
}

/// Reads the session file at `path` and locks it (see `LoadedFile`); the entries' ids are hashed
/// with `hasher` (the session index's). A file that is not a session, of an unknown version or too
/// large is refused and left untouched.
pub(crate) fn load(
    path: &Path,
    durability: Durability,
    hasher: IdHasher,
) -> Result<LoadedFile, SessionError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(LoadedFile::Missing(SessionFile::unwritten(
                path.to_path_buf(),
                durability,
            )))
        }
        Err(e) => return Err(io_error("read", path, &e)),
    };
    if metadata.is_dir() {
        return Err(not_a_session(format!(
            "{} is a directory, not a session file.",
            path.display()
        )));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(not_a_session(format!(
            "{} is {} bytes; libagent opens session files up to 512 MiB.",
            path.display(),
            metadata.len()
        )));
    }
    let handle = open_locked(path, false)?;
    let mut file = SessionFile {
        path: path.to_path_buf(),
        durability,
        handle: None,
        len: 0,
        bytes_read: 0,
        bytes_written: 0,
    };
    // Streamed, not held: entries read in `JSON.stringify`'s form are read back when needed.
    let read = read::read_file(&handle, path, metadata.len(), |first_part| {
        PartEntries::new(first_part, hasher.clone())
    })?;
    file.bytes_read = read.len;
    file.len = read.len;
    file.handle = Some(handle);
    if read.len == 0 {
        return Ok(LoadedFile::Empty(file));
    }
    let mut header = None;
    let mut lines_before = 0;
    let mut skipped_lines = Vec::new();
    for part in &read.parts {
        header = header.or_else(|| part.first.clone());
        skipped_lines.extend(part.skipped.iter().map(|line| lines_before + line));
        lines_before += part.lines;
    }
    let Some(header) = header else {
        return Err(not_a_session(format!(
            "{} is not a session file: none of its lines is a JSON object.",
            path.display()
        )));
    };
    check_header(path, &header)?;
    if !read.ends_with_newline {
        // The last line was cut off (or just lacks its newline): the next entry starts its own.
        file.write(b"\n")?;
    }
    Ok(LoadedFile::Read {
        file,
        header,
        entries: read.parts,
        skipped_lines,
    })
}

/// A header line after the first: the reference drops it.
fn is_header(found: &Found) -> bool {
    matches!(found, Found::Parsed(entry) if entry.get("type").and_then(Json::as_str) == Some("session"))
}

/// A header the reader accepts: `{"type": "session", "id": string}` of version 1 to 3.
fn check_header(path: &Path, entry: &Json) -> Result<(), SessionError> {
    if entry.get("type").and_then(Json::as_str) != Some("session")
        || !entry.get("id").is_some_and(Json::is_string)
    {
        return Err(not_a_session(format!(
            "{} is not a session file: its first entry is not a session header ({{\"type\": \"session\", \"id\": ...}}).",
            path.display()
        )));
    }
    match entry.get("version") {
        None | Some(Json::Null) => Ok(()),
        Some(Json::Number(n)) if crate::json::number_value(n) <= CURRENT_VERSION as f64 => Ok(()),
        Some(version) => Err(not_a_session(format!(
            "{} is a session file of version {}; libagent reads versions 1 to {CURRENT_VERSION}.",
            path.display(),
            crate::json::to_string(version)
        ))),
    }
}

/// The newest `*.jsonl` file in `dir` (by modification time) whose header is a session started
/// in `cwd`.
pub(crate) fn most_recent(dir: &Path, cwd: &str) -> Option<PathBuf> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
        .collect();
    files.sort_by_key(|file| std::cmp::Reverse(file.0));
    files
        .into_iter()
        .map(|(_, path)| path)
        .find(|path| read_header(path).is_some_and(|h| same_dir(h.get("cwd"), cwd)))
}

fn same_dir(header_cwd: Option<&Json>, cwd: &str) -> bool {
    let trim = |text: &str| text.trim_end_matches(['/', '\\']).to_string();
    header_cwd
        .and_then(Json::as_str)
        .is_some_and(|dir| !dir.is_empty() && trim(dir) == trim(cwd))
}

/// The first JSON object of a file when it is a session header (reading at most 1 MiB).
fn read_header(path: &Path) -> Option<Json> {
    let file = File::open(path).ok()?;
    let mut reader = BufReader::new(std::io::Read::take(file, 1 << 20));
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim_matches(crate::json::is_js_whitespace).is_empty() {
            continue;
        }
        if let Ok(entry @ Json::Object(_)) = crate::json::parse(text.trim_end_matches('\n')) {
            let is_header = entry.get("type").and_then(Json::as_str) == Some("session")
                && entry.get("id").is_some_and(Json::is_string);
            return is_header.then_some(entry);
        }
    }
}

impl SessionFile {
    /// A file at `path` that does not exist yet.
    pub fn unwritten(path: PathBuf, durability: Durability) -> SessionFile {
        SessionFile {
            path,
            durability,
            handle: None,
            len: 0,
            bytes_read: 0,
            bytes_written: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    pub fn durability(&self) -> Durability {
        self.durability
    }

    pub fn is_written(&self) -> bool {
        self.handle.is_some()
    }

    /// The file's length (as read and written by this session).
    pub fn size(&self) -> u64 {
        self.len
    }

    /// The open file, for reading entries back.
    pub fn handle(&self) -> Option<&File> {
        self.handle.as_ref()
    }

    /// (bytes read, bytes written) since the file was opened.
    #[cfg(test)]
    pub fn counters(&self) -> (u64, u64) {
        (self.bytes_read, self.bytes_written)
    }

    /// Creates the file (it must not exist), locks it and writes the header and `entries`. On
    /// failure the file is removed again and the session stays unwritten.
    pub fn create_with<'a>(
        &mut self,
        header: &Json,
        entries: impl Iterator<Item = &'a str>,
    ) -> Result<(), SessionError> {
        let dir = self.dir().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| io_error("create the directory", &dir, &e))?;
        let handle = open_locked(&self.path, true)?;
        self.handle = Some(handle);
        self.len = 0;
        if let Err(error) = self.write(render(header, entries).as_bytes()) {
            self.handle = None;
            let _ = std::fs::remove_file(&self.path);
            return Err(error);
        }
        Ok(())
    }

    /// Replaces the file's content by the header and `entries` (an empty file's new header, a
    /// migration).
    pub fn write_all_entries<'a>(
        &mut self,
        header: &Json,
        entries: impl Iterator<Item = &'a str>,
    ) -> Result<(), SessionError> {
        let text = render(header, entries);
        let handle = self
            .handle
            .as_ref()
            .expect("an opened session file has a handle");
        handle
            .set_len(0)
            .map_err(|e| io_error("rewrite", &self.path, &e))?;
        self.len = 0;
        self.write(text.as_bytes())
    }

    /// Appends one entry (its JSON text) as one line.
    pub fn append_line(&mut self, entry: &str) -> Result<(), SessionError> {
        let mut line = String::with_capacity(entry.len() + 1);
        line.push_str(entry);
        line.push('\n');
        self.write(line.as_bytes())
    }

    /// Appends `bytes` whole, then flushes or syncs; on failure the file is cut back to its
    /// previous length so no partial line remains.
    fn write(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        let handle = self
            .handle
            .as_mut()
            .expect("a written session file has a handle");
        let result = handle
            .write_all(bytes)
            .and_then(|()| match self.durability {
                Durability::Flush => handle.flush(),
                Durability::Fsync => handle.sync_data(),
            });
        if let Err(error) = result {
            let _ = handle.set_len(self.len);
            return Err(io_error("write to", &self.path, &error));
        }
        self.len += bytes.len() as u64;
        self.bytes_written += bytes.len() as u64;
        Ok(())
    }
}

/// The file text of a header and entries (their JSON texts): one line each.
fn render<'a>(header: &Json, entries: impl Iterator<Item = &'a str>) -> String {
    let mut text = crate::json::to_string(header);
    text.push('\n');
    for entry in entries {
        text.push_str(entry);
        text.push('\n');
    }
    text
}

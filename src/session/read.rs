//! Reading a session file without holding its text: the file streams through a small reused
//! buffer (two threads, each over half of the lines, for a large file) and each line is read as
//! it passes. A `message` entry in `JSON.stringify`'s form keeps only where its line is and a
//! hash of its bytes; its text is read back from the file when asked for and checked against that
//! hash, so a file changed behind the session's back is reported, never misread. (No mmap: a file
//! truncated by another process would kill the host with SIGBUS.)

use std::borrow::Cow;
use std::fs::File;
use std::hash::BuildHasher;
use std::io;
use std::path::Path;

use super::file::{io_error, message_found, read_line, Found, Line, MAX_FILE_BYTES};
use super::scan;
use super::{SessionError, SessionErrorKind};

/// The streaming buffer (grown for a longer line), and the window entries are read back through.
const BUFFER_BYTES: usize = 1 << 20;

/// Files smaller than this are read on the calling thread alone.
pub(crate) const SPLIT_BYTES: u64 = 1 << 20;

/// Where an entry's line is in the file (without its newline), with a hash of its bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileSpan {
    pub offset: u64,
    pub len: u32,
    hash: u64,
}

/// An entry's JSON text: a line of the file (read back when needed) or held in memory (appended,
/// migrated, parsed in another form, or repaired invalid UTF-8).
pub(crate) enum Text {
    File(FileSpan),
    Own(Box<str>),
}

/// One line of the file, read.
pub(crate) enum ReadLine {
    Blank,
    /// Not a JSON object: skipped, as the reference skips it.
    Skipped,
    Entry(Text, Found),
}

/// What reading the whole file found.
pub(crate) struct ReadFile<L> {
    /// Every line in order, in the parts the threads read (not copied into one).
    pub parts: Vec<L>,
    /// The bytes read (the file's length as read).
    pub len: u64,
    pub ends_with_newline: bool,
}

fn hash(bytes: &[u8]) -> u64 {
    // A fixed seed: the hashes are compared within the process only.
    foldhash::fast::FixedState::with_seed(0x5e55_1044).hash_one(bytes)
}

fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<usize> {
    loop {
        #[cfg(unix)]
        let read = std::os::unix::fs::FileExt::read_at(file, buffer, offset);
        #[cfg(windows)]
        let read = std::os::windows::fs::FileExt::seek_read(file, buffer, offset);
        match read {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// One line (without its newline) at `offset`; `valid` when it is known to be UTF-8. Invalid
/// UTF-8 becomes U+FFFD, as the whole text did before: a newline always ends an invalid sequence.
fn read_one(bytes: &[u8], offset: u64, valid: bool) -> ReadLine {
    let (text, valid) = if valid {
        // SAFETY: the caller checked these bytes are UTF-8.
        (
            Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(bytes) }),
            true,
        )
    } else {
        match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => (Cow::Borrowed(text), true),
            Err(_) => (String::from_utf8_lossy(bytes), false),
        }
    };
    match read_line(&text) {
        Line::Blank => ReadLine::Blank,
        Line::Skipped => ReadLine::Skipped,
        Line::Entry(found @ Found::Message { .. }) if valid => {
            message_in_file(bytes, offset, found)
        }
        Line::Entry(found) => ReadLine::Entry(Text::Own(text.into()), found),
    }
}

/// A message line left in the file (read back when needed).
fn message_in_file(bytes: &[u8], offset: u64, found: Found) -> ReadLine {
    let span = FileSpan {
        offset,
        len: bytes.len() as u32,
        hash: hash(bytes),
    };
    ReadLine::Entry(Text::File(span), found)
}

/// The message line at the start of `bytes` (which ends with a newline, all UTF-8), if it is of
/// a shape the thread has learned, and its length: found without looking for its end first.
fn shaped_message(bytes: &[u8], offset: u64) -> Option<(ReadLine, usize)> {
    let (found, len) = scan::message_line_at_start(bytes)?;
    // SAFETY: the caller checked `bytes` are UTF-8, and the line ends at a newline (ASCII).
    let line = unsafe { std::str::from_utf8_unchecked(&bytes[..len]) };
    let found = message_found(line, found);
    Some((message_in_file(line.as_bytes(), offset, found), len))
}

/// Where the lines of `bytes` from `from` that are known to be UTF-8 end: up to its last newline
/// when all of that is (one check for many lines), else `from` (each line is checked alone).
fn utf8_lines_end(bytes: &[u8], from: usize) -> usize {
    match memchr::memrchr(b'\n', bytes) {
        Some(last) if last >= from && simdutf8::basic::from_utf8(&bytes[from..last]).is_ok() => {
            last
        }
        _ => from,
    }
}

/// Where a reading thread puts the lines it reads, in file order.
pub(crate) trait Lines: Send {
    fn push(&mut self, line: ReadLine);
    /// How many lines are held (the reservation after the first buffer is made from it).
    fn held(&self) -> usize;
    /// Room for about `more` lines (`more_in_file`: to the file's end), if the memory is to be
    /// had.
    fn try_reserve(&mut self, more: usize, more_in_file: usize);
    /// The memory one held line takes.
    const LINE_BYTES: usize;
}

/// The lines one thread reads.
struct Part<L> {
    lines: L,
    /// The file's length and last byte, when this part read to its end.
    end: Option<(u64, Option<u8>)>,
    too_large: bool,
}

/// Reads the lines that start at `from` or later and before `until` (`from` a line start, or with
/// `seek` any offset: the line it falls in is left to the part before); `size` is the file's
/// length when it was opened.
fn read_part<L: Lines>(
    file: &File,
    from: u64,
    seek: bool,
    until: u64,
    size: u64,
    lines: L,
) -> io::Result<Part<L>> {
    let mut part = Part {
        lines,
        end: None,
        too_large: false,
    };
    let mut buffer = vec![0u8; BUFFER_BYTES];
    // buffer[..filled] holds the file from offset `base`; every line before it has been read.
    let mut base = from;
    let mut filled = 0;
    let mut seeking = seek;
    let mut last_byte = None;
    loop {
        if filled == buffer.len() {
            // A line longer than the buffer: room for the whole of it.
            buffer.resize(buffer.len() * 2, 0);
        }
        let read = read_at(file, &mut buffer[filled..], base + filled as u64)?;
        if read == 0 {
            if !seeking && filled > 0 && base < until {
                part.lines.push(read_one(&buffer[..filled], base, false));
            }
            part.end = Some((base + filled as u64, last_byte));
            return Ok(part);
        }
        last_byte = Some(buffer[filled + read - 1]);
        filled += read;
        if base + filled as u64 > MAX_FILE_BYTES {
            part.too_large = true;
            return Ok(part);
        }
        let mut consumed = 0;
        let mut valid_until = if seeking {
            0
        } else {
            utf8_lines_end(&buffer[..filled], 0)
        };
        loop {
            if !seeking && consumed < valid_until && base + (consumed as u64) < until {
                // A line of a known shape is read without looking for its end first.
                let lines = &buffer[consumed..=valid_until];
                if let Some((line, len)) = shaped_message(lines, base + consumed as u64) {
                    part.lines.push(line);
                    consumed += len + 1;
                    continue;
                }
            }
            let Some(newline) = memchr::memchr(b'\n', &buffer[consumed..filled]) else {
                break;
            };
            let end = consumed + newline;
            if seeking {
                seeking = false;
                valid_until = utf8_lines_end(&buffer[..filled], end + 1);
            } else if base + consumed as u64 >= until {
                return Ok(part);
            } else {
                let line = &buffer[consumed..end];
                part.lines
                    .push(read_one(line, base + consumed as u64, end <= valid_until));
            }
            consumed = end + 1;
        }
        if base == from && consumed > 0 {
            // After the first buffer: room for as many lines again per byte as it held, so the
            // list is not copied as it grows (a few per cent of a large file's open). At most
            // the rest of the part's size in bytes, and only if the memory is to be had: a file
            // that starts with short lines and goes on with a huge one must not reserve more.
            let lines_in = |until: u64| {
                let rest = until.min(size).saturating_sub(from + consumed as u64);
                let estimate = (part.lines.held() as u64).saturating_mul(rest) / consumed as u64;
                (estimate + estimate / 8).min(rest / L::LINE_BYTES as u64) as usize
            };
            part.lines.try_reserve(lines_in(until), lines_in(size));
        }
        if !seeking && base + consumed as u64 >= until {
            return Ok(part);
        }
        buffer.copy_within(consumed..filled, 0);
        base += consumed as u64;
        filled -= consumed;
    }
}

/// Reads every line of `file`, `size` bytes long when it was opened (it is read to its end
/// whatever its length now; over `MAX_FILE_BYTES` is refused).
/// `lines(first)` makes the place a part's lines go (`first`: the part that starts the file).
pub(crate) fn read_file<L: Lines>(
    file: &File,
    path: &Path,
    size: u64,
    lines: impl Fn(bool) -> L + Sync,
) -> Result<ReadFile<L>, SessionError> {
    let failed = |e: io::Error| io_error("read", path, &e);
    let parts = if size < SPLIT_BYTES {
        vec![read_part(file, 0, false, u64::MAX, size, lines(true)).map_err(failed)?]
    } else {
        // The first thread reads the lines starting in the first half, the second the rest.
        let middle = size / 2;
        let rest = || read_part(file, middle - 1, true, u64::MAX, size, lines(false));
        std::thread::scope(|scope| {
            let second = std::thread::Builder::new()
                .name("libagent-session-read".into())
                .spawn_scoped(scope, rest);
            let first = read_part(file, 0, false, middle, size, lines(true));
            let second = match second.map(|thread| thread.join()) {
                Ok(Ok(rest)) => rest,
                // No thread to be had (or, never expected, it panicked): this one reads that half.
                _ => rest(),
            };
            Ok::<_, SessionError>(vec![first.map_err(failed)?, second.map_err(failed)?])
        })?
    };
    let mut lines = Vec::with_capacity(parts.len());
    let mut end = None;
    for part in parts {
        if part.too_large {
            return Err(SessionError::new(
                SessionErrorKind::NotASession,
                format!(
                    "{} is over 512 MiB; libagent opens session files up to 512 MiB.",
                    path.display()
                ),
            ));
        }
        lines.push(part.lines);
        end = part.end.or(end);
    }
    let (len, last_byte) = end.unwrap_or((0, None));
    Ok(ReadFile {
        parts: lines,
        len,
        ends_with_newline: last_byte == Some(b'\n'),
    })
}

/// Reads entries' lines back from the file, in file order for speed (a window of the file is
/// kept, so neighbouring lines cost one read).
pub(crate) struct SpanReader<'a> {
    file: Option<&'a File>,
    path: &'a Path,
    /// How much is read at once: a window of `BUFFER_BYTES`, or (0) each line alone.
    read_bytes: usize,
    /// `window[..filled]` holds the file from offset `start`.
    window: Vec<u8>,
    filled: usize,
    start: u64,
    /// `window[..valid_until]` is known to be UTF-8.
    valid_until: usize,
}

impl<'a> SpanReader<'a> {
    /// A reader of `file` (None: nothing to read back), with a window for many lines in file
    /// order.
    pub fn new(file: Option<&'a File>, path: &'a Path, window: bool) -> Self {
        SpanReader {
            file,
            path,
            read_bytes: if window { BUFFER_BYTES } else { 0 },
            window: Vec::new(),
            filled: 0,
            start: 0,
            valid_until: 0,
        }
    }

    /// The line at `span`, exactly as it was when the session read it; an error when the file
    /// no longer holds it.
    pub fn line(&mut self, span: &FileSpan) -> Result<&str, SessionError> {
        let len = span.len as usize;
        let within = span.offset >= self.start
            && span.offset + span.len as u64 <= self.start + self.filled as u64;
        if !within {
            self.fill(span.offset, len.max(self.read_bytes))?;
        }
        let at = (span.offset - self.start) as usize;
        let bytes = self.window[..self.filled]
            .get(at..at + len)
            .unwrap_or_default();
        if bytes.len() != len || hash(bytes) != span.hash {
            return Err(self.changed());
        }
        if at + len <= self.valid_until {
            // SAFETY: `window[..valid_until]` was checked to be UTF-8 when it was read.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        simdutf8::basic::from_utf8(bytes).map_err(|_| self.changed())
    }

    /// Reads up to `len` bytes at `offset` into the window (fewer at the file's end).
    fn fill(&mut self, offset: u64, len: usize) -> Result<(), SessionError> {
        let Some(file) = self.file else {
            return Err(self.changed());
        };
        if self.window.len() < len {
            self.window.resize(len, 0);
        }
        self.filled = 0;
        self.valid_until = 0;
        self.start = offset;
        while self.filled < len {
            let buffer = &mut self.window[self.filled..len];
            match read_at(file, buffer, offset + self.filled as u64) {
                Ok(0) => break,
                Ok(read) => self.filled += read,
                Err(e) => return Err(io_error("read", self.path, &e)),
            }
        }
        self.valid_until = utf8_lines_end(&self.window[..self.filled], 0);
        Ok(())
    }

    fn changed(&self) -> SessionError {
        SessionError::new(
            SessionErrorKind::Io,
            format!(
                "{} was changed by another program since the session read it; open it again.",
                self.path.display()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Lines for Vec<ReadLine> {
        fn push(&mut self, line: ReadLine) {
            Vec::push(self, line);
        }
        fn held(&self) -> usize {
            self.len()
        }
        fn try_reserve(&mut self, more: usize, _: usize) {
            let _ = Vec::try_reserve(self, more);
        }
        const LINE_BYTES: usize = std::mem::size_of::<ReadLine>();
    }

    /// The room reserved from the first buffer's lines is bounded by the bytes left: a file
    /// that starts with a megabyte of short lines and goes on with one long line reserves no
    /// more than the file's size beyond what its lines take (not a short line's worth of entries
    /// per byte left).
    #[test]
    fn the_lines_reserved_are_bounded_by_the_bytes_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.jsonl");
        let mut text = "{\"short\":true}\n".repeat(BUFFER_BYTES / 16);
        text.push_str(&"x".repeat(16 * BUFFER_BYTES));
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        let size = text.len();
        let part = read_part(&file, 0, false, u64::MAX, size as u64, Vec::new()).unwrap();
        assert_eq!(part.lines.len(), BUFFER_BYTES / 16 + 1);
        let entry = std::mem::size_of::<ReadLine>();
        let reserved = part.lines.capacity() * entry;
        assert!(
            reserved <= size + 2 * part.lines.len() * entry,
            "{reserved} bytes reserved for a {size}-byte file of {} lines",
            part.lines.len()
        );
    }
}

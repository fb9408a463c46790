//! Server-sent events, parsed the way the OpenAI SDK and pi-ai's Anthropic reader do: line ends
//! `\r`, `\n` or `\r\n` (also split across reads), `:` comments, `data:` lines joined with `\n`,
//! one leading space stripped from a value, unknown fields ignored, and the event still open at the
//! end of the body dispatched.
//!
//! Written here rather than taken from a crate: the SSE crates on crates.io copy their buffer
//! once per line (quadratic when a read brings many lines) and drop the event open at the end of
//! the body, which both SDKs dispatch. Each byte here is scanned once.

use compact_str::CompactString;

use crate::cost_canary::{cost_canary_on, Canary};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if the event had one (inline up to 24 bytes: no allocation per event).
    pub event: Option<CompactString>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes not yet split into lines.
    pending: Vec<u8>,
    /// The last byte seen was a `\r`: a `\n` starting the next read belongs to it.
    after_cr: bool,
    /// pi-ai's own Anthropic reader: a `\r` ending a read ends its line, so a `\n` starting the
    /// next read is an empty line (which dispatches the open event).
    cr_ends_read_line: bool,
    event: Option<CompactString>,
    data: Option<String>,
    /// Every byte fed so far, kept only for the cost test's canary (`Canary::Sse`).
    canary_body: Vec<u8>,
}

impl SseParser {
    /// The parser of pi-ai's Anthropic reader (see `cr_ends_read_line`).
    pub fn split_crlf_across_reads() -> Self {
        SseParser {
            cr_ends_read_line: true,
            ..Self::default()
        }
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one read of the body; returns the events it completed, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if bytes.is_empty() {
            return events;
        }
        if cost_canary_on(Canary::Sse) {
            self.canary_body.extend_from_slice(bytes);
        }
        let mut bytes = bytes;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut line_start = 0;
        let mut ends = memchr::memchr2_iter(b'\n', b'\r', bytes);
        while let Some(end) = ends.next() {
            if self.pending.is_empty() {
                self.line(&bytes[line_start..end], &mut events);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&bytes[line_start..end]);
                self.line(&line, &mut events);
                line.clear();
                self.pending = line;
            }
            line_start = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(end + 1) {
                    None => self.after_cr = !self.cr_ends_read_line,
                    Some(b'\n') => {
                        ends.next();
                        line_start += 1;
                    }
                    Some(_) => {}
                }
            }
        }
        self.pending.extend_from_slice(&bytes[line_start..]);
        events
    }

    /// The end of the body: the last unterminated line and the open event.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut events);
        }
        self.line(b"", &mut events);
        events.pop()
    }

    /// One line, line end excluded. Its bytes are taken as UTF-8 with invalid sequences replaced
    /// (as a text decoder does); the field name and the `:` are ASCII, so replacing within the
    /// value alone gives the same text as replacing in the whole line.
    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.event.is_some() || self.data.is_some() {
                if cost_canary_on(Canary::Sse) {
                    std::hint::black_box(self.canary_body.clone());
                }
                events.push(SseEvent {
                    event: self.event.take(),
                    data: self.data.take().unwrap_or_default(),
                });
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.event = Some(CompactString::from(text(value))),
            b"data" => {
                let value = text(value);
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&value);
                    }
                    None => self.data = Some(value.into_owned()),
                }
            }
            _ => {}
        }
    }
}

/// Bytes as text, invalid UTF-8 replaced (valid text, nearly always, checked at SIMD speed).
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The longest SSE line read (bytes, line end excluded).
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes one event may span (its lines up to the blank line that dispatches it).
pub(crate) const MAX_EVENT_BYTES: usize = 2 << 20;

/// The most bytes of one response body. The longest answers (hundreds of thousands of tokens,
/// a few hundred bytes of SSE framing each) stay far below; an endless stream of valid events does
/// not grow the transcript until the total timeout.
pub(crate) const MAX_BODY_BYTES: usize = 256 << 20;

/// Holds a response to the SSE size limits before its bytes reach the parser, so that a server
/// cannot make the parser buffer without bound: counts the bytes of the open line and of the open
/// event (from the last blank line), with the parser's line ends (`\r`, `\n`, `\r\n`), and of the
/// whole body.
#[derive(Debug)]
pub struct SseLimits {
    line: usize,
    event: usize,
    after_cr: bool,
    body: usize,
    max_body: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits::with_max_body(MAX_BODY_BYTES)
    }
}

impl SseLimits {
    fn with_max_body(max_body: usize) -> Self {
        SseLimits {
            line: 0,
            event: 0,
            after_cr: false,
            body: 0,
            max_body,
        }
    }

    /// Counts `len` bytes of a line (none of them a line end).
    fn count_run(&mut self, len: usize) {
        if len > 0 {
            self.line += len;
            self.event += len;
            self.after_cr = false;
        }
    }

    /// Counts `bytes` from the start, run by run (runs of bytes between line ends whole).
    fn count_walk(&mut self, bytes: &[u8]) {
        let mut run_start = 0;
        for end in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            self.count_run(end - run_start);
            // A `\n` right after a `\r` is the second half of one line end.
            if !(bytes[end] == b'\n' && self.after_cr) {
                if self.line == 0 {
                    self.event = 0;
                }
                self.line = 0;
            }
            self.after_cr = bytes[end] == b'\r';
            run_start = end + 1;
        }
        self.count_run(bytes.len() - run_start);
    }

    /// The counts after `bytes`, read from its end (a read of SSE nearly always ends with the
    /// blank line of an event: its last two bytes settle them, where a walk reads every byte).
    /// What follows the last line end is the open line; what follows the last line end that
    /// ends an empty line (and so starts a new event) is the open event.
    fn count_from_the_end(&mut self, bytes: &[u8]) {
        let mut ends = memchr::memrchr2_iter(b'\n', b'\r', bytes);
        let Some(last_end) = ends.next() else {
            self.count_run(bytes.len());
            return;
        };
        let is_end = |b: u8| b == b'\n' || b == b'\r';
        // The line end at `at` ends an empty line: the byte before it is a line end too (or,
        // at the start, the open line is empty), unless it is the `\n` of a `\r\n`.
        let starts_event = |at: usize| match at {
            0 => self.line == 0 && !(bytes[0] == b'\n' && self.after_cr),
            _ => is_end(bytes[at - 1]) && !(bytes[at] == b'\n' && bytes[at - 1] == b'\r'),
        };
        // Line-end bytes from `at` to the end.
        let (mut at, mut ends_after) = (last_end, 1);
        let event = loop {
            if starts_event(at) {
                break bytes.len() - 1 - at - (ends_after - 1);
            }
            match ends.next() {
                Some(end) => (at, ends_after) = (end, ends_after + 1),
                // No event starts in this read: the open one goes on.
                None => break self.event + bytes.len() - ends_after,
            }
        };
        self.line = bytes.len() - 1 - last_end;
        self.event = event;
        self.after_cr = bytes[bytes.len() - 1] == b'\r';
    }

    /// Counts one read; past a limit, the text that names it.
    pub fn check(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.body += bytes.len();
        if self.body > self.max_body {
            return Err(format!(
                "The response body exceeded {} bytes (limit for one response).",
                self.max_body
            ));
        }
        if self.line + bytes.len() <= MAX_LINE_BYTES && self.event + bytes.len() <= MAX_EVENT_BYTES
        {
            // No limit can be passed within this read: only the counts at its end matter.
            self.count_from_the_end(bytes);
            return Ok(());
        }
        self.count_walk(bytes);
        if self.line > MAX_LINE_BYTES {
            return Err(format!(
                "The server sent an event-stream line longer than {MAX_LINE_BYTES} bytes (limit for one SSE line)."
            ));
        }
        if self.event > MAX_EVENT_BYTES {
            return Err(format!(
                "The server sent an event larger than {MAX_EVENT_BYTES} bytes (limit for one SSE event)."
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(reads: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = reads.iter().flat_map(|r| parser.feed(r)).collect();
        events.extend(parser.finish());
        events
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(CompactString::from),
            data: data.to_string(),
        }
    }

    #[test]
    fn line_ends_comments_and_multi_line_data() {
        let events = parse(&[b"event: a\r\ndata: 1\rdata:2\n\n: note\n\ndata: x\r\n\r\n"]);
        assert_eq!(events, vec![ev(Some("a"), "1\n2"), ev(None, "x")]);
    }

    #[test]
    fn reads_split_anywhere_give_the_same_events() {
        let body =
            "event: e\r\ndata: {\"t\":\"é✓\"}\r\n\r\ndata: two\rid: 3\r\rdata: last".as_bytes();
        let whole = parse(&[body]);
        assert_eq!(
            whole,
            vec![
                ev(Some("e"), "{\"t\":\"é✓\"}"),
                ev(None, "two"),
                ev(None, "last")
            ]
        );
        for cut in 0..body.len() {
            assert_eq!(parse(&[&body[..cut], &body[cut..]]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn pi_ai_anthropic_reader_ends_a_line_at_a_read_ending_in_cr() {
        let mut parser = SseParser::split_crlf_across_reads();
        let mut events = parser.feed(b"event: a\r");
        events.extend(parser.feed(b"\ndata: x\r\n\r\n"));
        events.extend(parser.finish());
        assert_eq!(events, vec![ev(Some("a"), ""), ev(None, "x")]);
        // Within one read a CRLF is one line end.
        let mut parser = SseParser::split_crlf_across_reads();
        let events = parser.feed(b"event: a\r\ndata: x\r\n\r\n");
        assert_eq!(events, vec![ev(Some("a"), "x")]);
    }

    #[test]
    fn limits_count_the_open_line_and_the_open_event() {
        let mut limits = SseLimits::default();
        let line = vec![b'x'; MAX_LINE_BYTES];
        // A line at the limit passes; the event limit counts lines up to a blank line.
        assert!(limits.check(&line).is_ok());
        assert!(limits.check(b"\r\n").is_ok());
        assert!(limits.check(&line).is_ok());
        let err = limits.check(b"\n!").unwrap_err();
        assert!(err.contains("one SSE event"), "{err}");
        // A blank line (also CRLF CRLF, split across reads) starts a new event.
        let mut limits = SseLimits::default();
        assert!(limits.check(&line).is_ok());
        assert!(limits.check(b"\r\n\r").is_ok());
        assert!(limits.check(b"\n").is_ok());
        assert!(limits.check(&line).is_ok());
        assert!(limits.check(b"\n\n").is_ok());
        assert!(limits.check(&line).is_ok());
        let err = limits.check(b"y").unwrap_err();
        assert!(err.contains("one SSE line"), "{err}");
    }

    #[test]
    fn limits_count_as_a_byte_by_byte_walk_does() {
        // The byte-by-byte definition of the counts, beside the run-by-run walk.
        fn walk(limits: &mut (usize, usize, bool), bytes: &[u8]) {
            for &b in bytes {
                let after_cr = std::mem::replace(&mut limits.2, b == b'\r');
                match b {
                    b'\n' if after_cr => {}
                    b'\n' | b'\r' => {
                        if limits.0 == 0 {
                            limits.1 = 0;
                        }
                        limits.0 = 0;
                    }
                    _ => {
                        limits.0 += 1;
                        limits.1 += 1;
                    }
                }
            }
        }
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let len = (next() % 40) as usize;
            let body: Vec<u8> = (0..len)
                .map(|_| [b'a', b'\r', b'\n'][(next() % 3) as usize])
                .collect();
            // Both ways of counting: from the end (far from the limits) and the walk.
            let (mut from_end, mut walked) = (SseLimits::default(), SseLimits::default());
            let mut model = (0, 0, false);
            let mut rest = &body[..];
            while !rest.is_empty() {
                let cut = 1 + (next() as usize % rest.len());
                from_end.check(&rest[..cut]).unwrap();
                walked.count_walk(&rest[..cut]);
                walk(&mut model, &rest[..cut]);
                rest = &rest[cut..];
                for limits in [&from_end, &walked] {
                    assert_eq!(
                        (limits.line, limits.event, limits.after_cr),
                        model,
                        "{body:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_in_values() {
        let events = parse(&[b"event: \xffx\ndata: a\xe2\x9c\n\n"]);
        assert_eq!(events, vec![ev(Some("\u{fffd}x"), "a\u{fffd}")]);
    }

    #[test]
    fn the_whole_body_is_limited_too() {
        let mut limits = SseLimits::with_max_body(10);
        assert!(limits.check(b"data: 1\n\n").is_ok());
        assert_eq!(
            limits.check(b"data: 2\n\n").unwrap_err(),
            "The response body exceeded 10 bytes (limit for one response)."
        );
    }

    #[test]
    fn an_event_without_data_or_name_is_not_dispatched() {
        assert_eq!(parse(&[b"id: 1\n\nretry: 5\n\n"]), vec![]);
        assert_eq!(parse(&[b"event: ping\n\n"]), vec![ev(Some("ping"), "")]);
    }
}

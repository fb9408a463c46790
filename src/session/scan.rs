//! One pass over an entry line that recognizes the common case without building a value: a
//! `message` entry written exactly as `JSON.stringify` writes it (what pi and libagent write).
//! Such a line is valid JSON, and its `message` member's bytes are that message's JSON text, so
//! the context can be spliced from them. Anything else (whitespace, other escapes, numbers in
//! another form, duplicate or array-index keys, deep nesting, other entry types) is left to the
//! full parser, which then decides as it always did. A line of a shape already recognized on this
//! thread is checked against that shape (`shapes`) instead of scanned token by token.

use std::ops::Range;

use super::shapes::Shapes;

/// What the context needs of a message's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    System,
    User,
    Assistant,
    ToolResult,
    Other,
}

/// A recognized `message` entry line: byte ranges into the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MessageLine {
    pub id: Option<Range<usize>>,
    pub parent: Option<Range<usize>>,
    pub role: Role,
    /// The `message` member's text (an object with a string role and non-null content).
    pub message: Range<usize>,
}

/// `Some` when `line` is a `message` entry in `JSON.stringify`'s form whose message has a role
/// and content; `None` means "parse it fully" (it may still be valid JSON, or not).
pub(crate) fn message_line(line: &str) -> Option<MessageLine> {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => {
            let Scratch { keys, shapes } = &mut *scratch;
            if let Some(found) = shapes.find(line) {
                return Some(found);
            }
            let (found, fixed) = message_line_with(line, keys)?;
            shapes.learn(line, &found, fixed);
            Some(found)
        }
        // Never expected (the scan calls nothing that scans): a fresh buffer then.
        Err(_) => message_line_with(line, &mut Vec::new()).map(|(found, _)| found),
    })
}

/// The line at the start of `bytes` (up to its first newline), if it is of a shape this thread
/// learned (see `message_line`), with its length. The line's bytes must be UTF-8.
pub(crate) fn message_line_at_start(bytes: &[u8]) -> Option<(MessageLine, usize)> {
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.try_borrow_mut().ok()?;
        scratch.shapes.find_at_start(bytes)
    })
}

/// `message_line` without the shapes learned: the scan, token by token; with the ranges (with
/// quotes) of the line's `type` and `role` values, which a shape keeps as they are.
#[cfg(test)]
pub(crate) fn message_line_scanned(line: &str) -> Option<(MessageLine, [Range<usize>; 2])> {
    message_line_with(line, &mut Vec::new())
}

/// The value ranges of the members the context needs (of the entry, or of its message).
#[derive(Default)]
struct Members {
    kind: Option<Range<usize>>,
    id: Option<Range<usize>>,
    parent: Option<Range<usize>>,
    message: Option<Range<usize>>,
    role: Option<Range<usize>>,
    content: Option<Range<usize>>,
}

impl Members {
    /// The slot of the member named `key`, if it is one of them.
    fn slot(&mut self, key: &[u8]) -> Option<&mut Option<Range<usize>>> {
        match key {
            b"type" => Some(&mut self.kind),
            b"id" => Some(&mut self.id),
            b"parentId" => Some(&mut self.parent),
            b"message" => Some(&mut self.message),
            b"role" => Some(&mut self.role),
            b"content" => Some(&mut self.content),
            _ => None,
        }
    }
}

/// What a thread keeps between lines: the keys a scan has seen (so a line costs no allocation)
/// and the shapes of the lines it recognized.
#[derive(Default)]
struct Scratch {
    keys: Vec<Key>,
    shapes: Shapes,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// A recognized line, and the ranges of its `type` and `role` values (with their quotes).
fn message_line_with(line: &str, keys: &mut Vec<Key>) -> Option<(MessageLine, [Range<usize>; 2])> {
    keys.clear();
    let mut top = Members::default();
    let mut members = Members::default();
    let mut scanner = Scanner {
        bytes: line.as_bytes(),
        at: 0,
        keys,
    };
    if scanner.bytes.first() != Some(&b'{') {
        return None;
    }
    scanner.object(1, Some(&mut top), Some(&mut members))?;
    if scanner.at != scanner.bytes.len() {
        return None;
    }
    if top.kind.clone().map(|r| &line[r]) != Some("\"message\"") {
        return None;
    }
    let id = plain_string_or_null(line, top.id)?;
    let parent = plain_string_or_null(line, top.parent)?;
    let message = top.message?;
    if line.as_bytes()[message.start] != b'{' {
        return None;
    }
    let role_value = members.role.clone()?;
    let role = plain_string_or_null(line, members.role)??;
    let content = members.content?;
    if &line[content] == "null" {
        return None;
    }
    let role = match &line[role.clone()] {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "toolResult" => Role::ToolResult,
        _ => Role::Other,
    };
    let kind = top.kind?;
    Some((
        MessageLine {
            id,
            parent,
            role,
            message,
        },
        [kind, role_value],
    ))
}

/// A member that is absent or null (`Some(None)`), or a string without escapes (`Some(Some(the
/// text between its quotes))`); `None` for anything else.
fn plain_string_or_null(line: &str, value: Option<Range<usize>>) -> Option<Option<Range<usize>>> {
    let Some(value) = value else {
        return Some(None);
    };
    let text = &line.as_bytes()[value.clone()];
    if text == b"null" {
        return Some(None);
    }
    let inner = text.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    Some(Some(value.start + 1..value.end - 1))
}

/// The parser's nesting limit (`json::MAX_PARSE_DEPTH`): deeper lines are the parser's to refuse.
const MAX_DEPTH: usize = crate::json::MAX_PARSE_DEPTH;
/// Objects with more members than this are left to the parser (the duplicate-key check is
/// quadratic).
const MAX_MEMBERS: usize = 32;

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The keys of the objects being scanned (for the duplicate check), innermost last.
    keys: &'a mut Vec<Key>,
}

/// A key seen in an object being scanned: where it is, and its length and first bytes in one
/// word, so keys are told apart without comparing their bytes (they rarely share both).
#[derive(Clone)]
struct Key {
    word: u64,
    range: Range<usize>,
}

impl Key {
    fn new(bytes: &[u8], range: Range<usize>) -> Key {
        let len = range.len();
        // A key is followed by its quote and more: 8 bytes from its start are usually there.
        let first = match bytes.get(range.start..range.start + 8) {
            Some(word) => u64::from_le_bytes(word.try_into().unwrap_or_default()),
            None => {
                let mut word = [0u8; 8];
                let tail = &bytes[range.start..];
                word[..tail.len()].copy_from_slice(tail);
                u64::from_le_bytes(word)
            }
        };
        let shown = len.min(7);
        let mask = (1u64 << (shown * 8)) - 1;
        Key {
            word: (first & mask) | ((len.min(255) as u64) << 56),
            range,
        }
    }
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1, None, None),
            b'[' => self.array(depth + 1),
            b'"' => self.short_string().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// An object at `depth`; with `fields`, where the values of the members it names are, and
    /// with `message_fields` those of its member `message` too when that is an object (so the
    /// line is scanned once).
    fn object(
        &mut self,
        depth: usize,
        mut fields: Option<&mut Members>,
        mut message_fields: Option<&mut Members>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let base = self.keys.len();
        // A bit per key word seen in this object: a key whose bit is clear is no repeat.
        let mut seen_bits = 0u64;
        loop {
            let key = self.short_string()?;
            let bytes = self.bytes;
            let text = &bytes[key.clone()];
            let seen = Key::new(bytes, key.clone());
            let bit = 1u64 << (seen.word.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58);
            // Array-index keys are reordered by the parser; a repeated key keeps one value.
            if text.first().is_some_and(u8::is_ascii_digit)
                || self.keys.len() - base >= MAX_MEMBERS
                || (seen_bits & bit != 0
                    && self.keys[base..]
                        .iter()
                        .any(|k| k.word == seen.word && &bytes[k.range.clone()] == text))
            {
                return None;
            }
            seen_bits |= bit;
            self.keys.push(seen);
            self.eat(b':')?;
            let start = self.at;
            if text == b"message" && self.peek() == Some(b'{') && message_fields.is_some() {
                self.object(depth + 1, message_fields.take(), None)?;
            } else {
                self.value(depth)?;
            }
            if let Some(slot) = fields.as_deref_mut().and_then(|f| f.slot(text)) {
                *slot = Some(start..self.at);
            }
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    self.keys.truncate(base);
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    #[inline(always)]
    fn short_string(&mut self) -> Option<Range<usize>> {
        let end = string_end(self.bytes, self.at)?;
        let start = self.at + 1;
        self.at = end;
        Some(start..end - 1)
    }

    fn number(&mut self) -> Option<()> {
        self.at = number_end(self.bytes, self.at)?;
        Some(())
    }
}

/// Where the string whose opening quote is at `at` ends (past its closing quote), if it has only
/// the escapes `JSON.stringify` writes; a short plain string (most keys and many values) is
/// settled in one block, inline.
#[inline(always)]
pub(super) fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if bytes.get(at) == Some(&b'"') {
        if let Some(Ok(end)) = sse2::first_special_in_block(bytes, at + 1) {
            if bytes[end] == b'"' {
                return Some(end + 1);
            }
        }
    }
    long_string_end(bytes, at)
}

fn long_string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    at += 1;
    loop {
        at = plain_run_end(bytes, at);
        let byte = *bytes.get(at)?;
        at += 1;
        match byte {
            b'"' => return Some(at),
            b'\\' => {
                let escape = *bytes.get(at)?;
                at += 1;
                match escape {
                    b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        // Only the control characters without a short escape, in lower case.
                        let hex = bytes.get(at..at + 4)?;
                        let low = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
                        let code = u8::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16);
                        if &hex[..2] != b"00"
                            || !hex[2..].iter().all(|&b| low(b))
                            || !matches!(code, Ok(c) if c < 0x20 && !matches!(c, 0x08..=0x0a | 0x0c | 0x0d))
                        {
                            return None;
                        }
                        at += 4;
                    }
                    _ => return None,
                }
            }
            0..=0x1f => return None,
            _ => {}
        }
    }
}

/// Where the number at `start` ends, if it is in the form JavaScript prints it.
#[inline(always)]
pub(super) fn number_end(bytes: &[u8], start: usize) -> Option<usize> {
    let digits = |at: &mut usize| {
        let from = *at;
        *at = digit_run_end(bytes, from);
        *at - from
    };
    let mut at = start;
    if bytes.get(at) == Some(&b'-') {
        at += 1;
    }
    let integer_start = at;
    let integer_digits = digits(&mut at);
    if integer_digits == 0 || (integer_digits > 1 && bytes[integer_start] == b'0') {
        return None;
    }
    let mut plain = true;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        if digits(&mut at) == 0 {
            return None;
        }
        plain = false;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        if digits(&mut at) == 0 {
            return None;
        }
        plain = false;
    }
    let number = &bytes[start..at];
    // Short integers print as themselves (but `-0` prints as `0`); anything else must be
    // what JavaScript prints for its double.
    if plain && integer_digits <= 15 && number != b"-0" {
        return Some(at);
    }
    prints_as_javascript_does(number).then_some(at)
}

/// Whether `number` (digits, signs, `.` and exponent letters only) is what JavaScript prints
/// for its double. Out of line: the common numbers never come here.
#[inline(never)]
fn prints_as_javascript_does(number: &[u8]) -> bool {
    if prints_as_itself(number) {
        return true;
    }
    let Ok(text) = std::str::from_utf8(number) else {
        return false;
    };
    text.parse::<f64>()
        .is_ok_and(|value| value.is_finite() && crate::json::number_to_string(value) == text)
}

/// The first index from `at` whose byte is not an ASCII digit: a word at a time.
#[inline(always)]
fn digit_run_end(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A byte is a digit when its high nibble is 3 both as it is and with 6 added (the low
        // nibble at most 9). A carry out of a byte (only from 0xfa and up, not a digit) spoils
        // the bytes above it only, so the lowest non-digit is found exactly.
        let high = |v: u64| (v & (ONES * 0xf0)) ^ (ONES * 0x30);
        let off = high(word) | high(word.wrapping_add(ONES * 0x06));
        let nonzero = (((off & (ONES * 0x7f)) + ONES * 0x7f) | off) & (ONES * 0x80);
        if nonzero != 0 {
            return at + (nonzero.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while bytes.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

/// Whether a decimal without exponent is what JavaScript prints for its double, without
/// computing that: at most 15 significant digits (so no other decimal of 15 digits or fewer
/// reads as the same double, and the shortest that round-trips is this one), no trailing zero in
/// the fraction, and at least 1e-6 (smaller prints with an exponent).
fn prints_as_itself(number: &[u8]) -> bool {
    let unsigned = number.strip_prefix(b"-").unwrap_or(number);
    let Some(dot) = unsigned.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (integer, fraction) = (&unsigned[..dot], &unsigned[dot + 1..]);
    if fraction.is_empty() || fraction.ends_with(b"0") || !fraction.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let significant = if integer == b"0" {
        let zeros = fraction.iter().take_while(|&&b| b == b'0').count();
        if zeros > 5 {
            return false;
        }
        fraction.len() - zeros
    } else {
        integer.len() + fraction.len()
    };
    significant <= 15
}

/// The first index from `at` whose byte is a quote, a backslash or a control character (or a
/// few bytes before the end): 32 and 16 bytes at a time, the last bytes a word at a time.
fn plain_run_end(bytes: &[u8], mut at: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        match sse2::plain_run_end(bytes, at) {
            Ok(found) => return found,
            Err(rest) => at = rest,
        }
    }
    while let Some(mask) = special_bytes(bytes, at) {
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// The first special byte of the 16 bytes from `at`: `Some(Ok(index))`, `Some(Err(()))` when
    /// there is none, `None` when fewer than 16 bytes are left.
    #[inline(always)]
    pub(super) fn first_special_in_block(bytes: &[u8], at: usize) -> Option<Result<usize, ()>> {
        if at + 16 > bytes.len() {
            return None;
        }
        // SAFETY: SSE2 is always available on x86_64; the load reads the 16 bytes from `at`,
        // inside `bytes` (checked above); unaligned loads are allowed.
        let mask = unsafe {
            let block = _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
            let control = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1f)), block);
            let special = _mm_or_si128(
                _mm_cmpeq_epi8(block, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(block, _mm_set1_epi8(b'\\' as i8)),
            );
            _mm_movemask_epi8(_mm_or_si128(control, special)) as u32
        };
        Some(if mask == 0 {
            Err(())
        } else {
            Ok(at + mask.trailing_zeros() as usize)
        })
    }

    /// `super::plain_run_end` over 16-byte blocks (SSE2 is part of every x86-64 CPU): `Ok` with
    /// the special byte's index, or `Err` with where the blocks ended (fewer than 16 bytes left).
    pub(super) fn plain_run_end(bytes: &[u8], mut at: usize) -> Result<usize, usize> {
        // SAFETY: SSE2 is always available on x86_64; every load reads 16 bytes inside `bytes`
        // (`at + 16 <= len` or `at + 32 <= len` is checked first) and unaligned loads are allowed.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let highest_control = _mm_set1_epi8(0x1f);
            let attention = |at: usize| {
                let block = _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
                let control = _mm_cmpeq_epi8(_mm_min_epu8(block, highest_control), block);
                let special = _mm_or_si128(
                    _mm_cmpeq_epi8(block, quote),
                    _mm_cmpeq_epi8(block, backslash),
                );
                _mm_movemask_epi8(_mm_or_si128(control, special)) as u32
            };
            while at + 32 <= bytes.len() {
                let mask = attention(at) | (attention(at + 16) << 16);
                if mask != 0 {
                    return Ok(at + mask.trailing_zeros() as usize);
                }
                at += 32;
            }
            while at + 16 <= bytes.len() {
                let mask = attention(at);
                if mask != 0 {
                    return Ok(at + mask.trailing_zeros() as usize);
                }
                at += 16;
            }
        }
        Err(at)
    }
}

/// The 8 bytes from `at` (if there are 8) as a mask with the high bit of each byte that is a
/// control character, `"` or `\\` set; exact up to its lowest set bit (a borrow only runs from a
/// flagged byte to the bytes above it), which is all that is read of it.
fn special_bytes(bytes: &[u8], at: usize) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let word = u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?);
    let zero_bytes = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    Some(
        below_space
            | zero_bytes(word ^ (ONES * b'"' as u64))
            | zero_bytes(word ^ (ONES * b'\\' as u64)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line the scanner takes is what the parser reads, and its message's text is the
    /// message's rendering.
    fn agrees(line: &str) -> bool {
        let Some(found) = message_line(line) else {
            return false;
        };
        let value = crate::json::parse(line).expect("a recognized line parses");
        assert_eq!(crate::json::to_string(&value), line);
        assert_eq!(
            crate::json::to_string(&value["message"]),
            &line[found.message.clone()]
        );
        assert_eq!(
            value.get("id").and_then(crate::json::Json::as_str),
            found.id.map(|r| &line[r])
        );
        true
    }

    #[test]
    fn recognizes_stringified_message_entries() {
        assert!(agrees(
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi \"there\"\n\u001f","timestamp":1,"n":[1.5,-2,0.00015,1e+21,true,false,null,{}]}}"#
        ));
        assert!(agrees(
            r#"{"type":"message","id":"b","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"é ✓"}],"provider":"p","model":"m"}}"#
        ));
        let line = r#"{"type":"message","id":"b","message":{"role":"toolResult","content":[]}}"#;
        assert_eq!(message_line(line).map(|m| m.role), Some(Role::ToolResult));
    }

    /// Keys that share their length and first bytes are still told apart by their bytes.
    #[test]
    fn keys_alike_in_length_and_start_are_not_duplicates() {
        let long = "k".repeat(300);
        for (a, b) in [
            ("abcdefgh1", "abcdefgh2"),
            ("abcdefg", "abcdefh"),
            ("x", "y"),
            (&long[..], &format!("{}j", &long[..299])[..]),
        ] {
            let distinct = format!(
                r#"{{"type":"message","id":"a","message":{{"role":"user","content":{{"{a}":1,"{b}":2}}}}}}"#
            );
            assert!(agrees(&distinct), "{a} {b}");
            let repeated = distinct.replace(b, a);
            assert_eq!(message_line(&repeated), None, "{a}");
        }
    }

    /// The block scan stops exactly where a byte-at-a-time scan would, at every position of the
    /// special byte in a block and near the end (but for the last bytes, fewer than a word).
    #[test]
    fn plain_runs_end_at_the_first_special_byte() {
        for len in [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 100] {
            for special in [b'"', b'\\', 0x00, 0x1f, 0x0a] {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    // Non-ASCII bytes (high bit set) are plain.
                    if at > 0 {
                        bytes[at - 1] = 0xe9;
                    }
                    let end = plain_run_end(&bytes, 0);
                    assert!(end <= at, "{len} {special} {at}: {end}");
                    // Exact, but in the last bytes (fewer than a word), left to the caller.
                    assert!(end == at || len - end < 8, "{len} {special} {at}: {end}");
                }
                let plain = vec![0x7fu8; len];
                assert!(len - plain_run_end(&plain, 0) < 8);
                assert!(!plain[plain_run_end(&plain, 0)..].contains(&b'"'));
            }
        }
    }

    /// The word-at-a-time run of digits ends where a byte-at-a-time one does, for every byte
    /// value at every offset of a run.
    #[test]
    fn digit_runs_end_at_the_first_other_byte() {
        for len in 0..20 {
            for other in 0..=255u8 {
                for at in 0..len {
                    let mut bytes = vec![b'7'; len];
                    bytes[at] = other;
                    if let Some(after) = bytes.get_mut(at + 1) {
                        *after = 0xff;
                    }
                    let expected = bytes
                        .iter()
                        .position(|b| !b.is_ascii_digit())
                        .unwrap_or(len);
                    assert_eq!(digit_run_end(&bytes, 0), expected, "{len} {other} {at}");
                }
            }
        }
    }

    /// The shortcut agrees with printing the parsed double, on decimals around its limits.
    #[test]
    fn decimals_that_print_as_themselves() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut taken = 0;
        for _ in 0..200_000 {
            let integer_width = 10u64.pow(1 + next(12) as u32);
            let integer = match next(3) {
                0 => "0".to_string(),
                _ => (1 + next(integer_width)).to_string(),
            };
            let zeros = "0".repeat(next(8) as usize);
            let fraction_width = 10u64.pow(1 + next(16) as u32);
            let digits = next(fraction_width).to_string();
            let sign = if next(2) == 0 { "-" } else { "" };
            let text = format!("{sign}{integer}.{zeros}{digits}");
            let exact = text
                .parse::<f64>()
                .is_ok_and(|v| crate::json::number_to_string(v) == text);
            if prints_as_itself(text.as_bytes()) {
                assert!(exact, "{text}");
                taken += 1;
            }
        }
        assert!(taken > 50_000, "{taken}");
        for text in ["0.000001", "-0.5", "123456789012.345", "0.1", "1.5"] {
            assert!(prints_as_itself(text.as_bytes()), "{text}");
        }
        for text in ["0.0000001", "1.50", "0.0", "1234567890123.456", "1e5", "7"] {
            assert!(!prints_as_itself(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn leaves_everything_else_to_the_parser() {
        for line in [
            // Invalid JSON.
            r#"{"type":"message","id":"a","message":{"role":"user","content":tru}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":"x"}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":"x"}}x"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":01}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":"\x"}}"#,
            "{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"\t\"}}",
            // Valid, but not as JSON.stringify writes it.
            r#"{"type":"message", "id":"a","message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":"\/"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":"\u0041"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":"\ud800"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":1.0}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":-0}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":1e400}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":{"b":1,"b":2}}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":{"b":1,"0":2}}}"#,
            r#"{"type":"message","id":"a","id":"b","message":{"role":"user","content":"x"}}"#,
            // Not the common case: escaped ids, other types, missing or null content or role.
            r#"{"type":"message","id":"a\"","message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":7,"message":{"role":"user","content":"x"}}"#,
            r#"{"type":"label","id":"a","message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user","content":null}}"#,
            r#"{"type":"message","id":"a","message":{"role":"user"}}"#,
            r#"{"type":"message","id":"a","message":{"content":"x"}}"#,
            r#"{"type":"message","id":"a","message":"text"}"#,
        ] {
            assert_eq!(message_line(line), None, "{line}");
        }
        let deep = format!(
            r#"{{"type":"message","id":"a","message":{{"role":"user","content":{}1{}}}}}"#,
            "[".repeat(600),
            "]".repeat(600)
        );
        assert_eq!(message_line(&deep), None);
    }
}

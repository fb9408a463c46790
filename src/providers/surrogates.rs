//! A UTF-16 surrogate pair split across two server-sent events: a string of one event's JSON ends
//! in a lone high-surrogate escape (`\ud83d`) and the same field of a later event starts with
//! the low half (`\ude00`). pi-ai's JavaScript strings join the halves when it appends the
//! deltas; a Rust string cannot hold half a pair (the JSON parser would make each half U+FFFD).
//! So the event data is rewritten before it is parsed: the trailing high escape is taken out of
//! its event and put back in front of the low escape that completes it.
//!
//! Fields are matched by their JSON path (`choices/0/delta/content`). A held half whose field
//! does not start with the low half in the next event that has that field becomes U+FFFD there
//! (as an unpaired escape inside a string does); one that no later event's field takes is
//! dropped (pi-ai keeps it unpaired in the message and strips it when the text is sent back).
//! Each event is scanned once, and only when it has a `\u` escape or a half is held.

use std::borrow::Cow;

/// At most this many halves are held (one per field that streams text: a handful).
const MAX_HELD: usize = 8;

/// The held high halves (their escape text), by the path of the field whose text they ended.
#[derive(Debug, Default)]
pub struct SplitSurrogates {
    held: Vec<(String, String)>,
}

/// A string value of the event that matters here.
struct Field {
    path: String,
    /// Byte range of the text between the quotes.
    start: usize,
    end: usize,
    /// The text starts with a low-surrogate escape.
    low_first: bool,
    /// The text ends with a high-surrogate escape: where that escape starts.
    high_last: Option<usize>,
}

enum Frame {
    Object { key: String, expect_key: bool },
    Array { index: usize },
}

impl SplitSurrogates {
    /// `data` with held halves put back and new trailing high halves taken out.
    pub fn rejoin<'a>(&mut self, data: &'a str) -> Cow<'a, str> {
        if self.held.is_empty() && !data.contains("\\u") {
            return Cow::Borrowed(data);
        }
        let fields = scan(data, !self.held.is_empty());
        if fields.is_empty() {
            return Cow::Borrowed(data);
        }
        let mut held = std::mem::take(&mut self.held);
        let mut out = String::with_capacity(data.len() + 12);
        let mut copied = 0;
        for field in &fields {
            out.push_str(&data[copied..field.start]);
            if let Some(at) = held.iter().position(|(path, _)| *path == field.path) {
                let (_, escape) = held.remove(at);
                // The half pairs with the low escape that starts the text, else it is broken.
                out.push_str(if field.low_first { &escape } else { "\\ufffd" });
            }
            let text_end = field.high_last.unwrap_or(field.end);
            out.push_str(&data[field.start..text_end]);
            if field.high_last.is_some() {
                self.held
                    .push((field.path.clone(), data[text_end..field.end].to_string()));
            }
            copied = field.end;
        }
        out.push_str(&data[copied..]);
        // Halves whose field did not come up wait for it (a few at most: the newest).
        held.append(&mut self.held);
        let excess = held.len().saturating_sub(MAX_HELD);
        held.drain(..excess);
        self.held = held;
        Cow::Owned(out)
    }
}

/// The 16-bit unit of a `\uXXXX` escape starting at `at`.
fn escape_at(bytes: &[u8], at: usize) -> Option<u16> {
    let hex = bytes.get(at..at + 6)?;
    if hex[0] != b'\\' || hex[1] != b'u' {
        return None;
    }
    std::str::from_utf8(&hex[2..])
        .ok()
        .and_then(|h| u16::from_str_radix(h, 16).ok())
}

/// The string values that start with a low or end with a high surrogate escape (and, with
/// `all`, every string value, so that a held half finds its field), in order.
fn scan(data: &str, all: bool) -> Vec<Field> {
    let bytes = data.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut fields = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => stack.push(Frame::Object {
                key: String::new(),
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            b'"' => {
                let start = i + 1;
                let (end, last_escape) = string_end(bytes, start);
                i = end + 1;
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut() {
                    if *expect_key {
                        *key = data[start..end].to_string();
                        continue;
                    }
                }
                let low_first = escape_at(bytes, start).is_some_and(is_low);
                let high_last = last_escape
                    .filter(|(at, unit)| at + 6 == end && is_high(*unit))
                    .map(|(at, _)| at);
                if all || low_first || high_last.is_some() {
                    fields.push(Field {
                        path: path(&stack),
                        start,
                        end,
                        low_first,
                        high_last,
                    });
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    fields
}

/// The position of the closing quote of the string whose text starts at `start` (the end of the
/// data when it is unterminated), and its last `\u` escape with its unit.
fn string_end(bytes: &[u8], start: usize) -> (usize, Option<(usize, u16)>) {
    let mut last_escape = None;
    let mut j = start;
    while j < bytes.len() {
        match bytes[j] {
            b'"' => return (j, last_escape),
            b'\\' => match escape_at(bytes, j) {
                Some(unit) => {
                    last_escape = Some((j, unit));
                    j += 6;
                }
                None => j += 2,
            },
            _ => j += 1,
        }
    }
    (bytes.len(), last_escape)
}

fn is_high(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

fn path(stack: &[Frame]) -> String {
    let mut path = String::new();
    for frame in stack {
        if !path.is_empty() {
            path.push('/');
        }
        match frame {
            Frame::Object { key, .. } => path.push_str(key),
            Frame::Array { index } => path.push_str(&index.to_string()),
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(data: &str) -> String {
        let parsed = crate::json::parse(data).expect("valid JSON");
        parsed["d"]["content"].as_str().unwrap_or("").to_string()
    }

    #[test]
    fn a_pair_split_across_events_is_joined_in_the_later_one() {
        let mut joiner = SplitSurrogates::default();
        let first = joiner
            .rejoin(r#"{"d":{"content":"Hi \ud83d"}}"#)
            .into_owned();
        assert_eq!(text(&first), "Hi ");
        let second = joiner
            .rejoin(r#"{"d":{"content":"\ude00 there"}}"#)
            .into_owned();
        assert_eq!(text(&second), "\u{1F600} there");
    }

    #[test]
    fn only_the_same_field_takes_the_held_half() {
        let mut joiner = SplitSurrogates::default();
        joiner.rejoin(r#"{"d":{"content":"a\uD83D"}}"#);
        // Another field starting with a low half is not completed by it.
        let other = joiner
            .rejoin(r#"{"d":{"reasoning":"\ude00"},"x":1}"#)
            .into_owned();
        let parsed = crate::json::parse(&other).expect("valid JSON");
        assert_eq!(parsed["d"]["reasoning"], "\u{FFFD}");
        // Still held: the next content completes it.
        let later = joiner.rejoin(r#"{"d":{"content":"\uDE00b"}}"#).into_owned();
        assert_eq!(text(&later), "\u{1F600}b");
    }

    #[test]
    fn a_held_half_not_completed_becomes_a_replacement_character() {
        let mut joiner = SplitSurrogates::default();
        joiner.rejoin(r#"{"d":{"content":"a\ud83d"}}"#);
        let next = joiner.rejoin(r#"{"d":{"content":"b"}}"#).into_owned();
        assert_eq!(text(&next), "\u{FFFD}b");
        // Nothing is held any more.
        assert_eq!(
            joiner.rejoin(r#"{"d":{"content":"c"}}"#),
            r#"{"d":{"content":"c"}}"#
        );
        // An event without the field keeps the half for a later one.
        joiner.rejoin(r#"{"d":{"content":"a\ud83d"}}"#);
        joiner.rejoin(r#"{"d":{"finish":"stop"}}"#);
        let later = joiner.rejoin(r#"{"d":{"content":"\ude00"}}"#).into_owned();
        assert_eq!(text(&later), "\u{1F600}");
    }

    #[test]
    fn pairs_inside_an_event_and_escaped_backslashes_are_left_alone() {
        let mut joiner = SplitSurrogates::default();
        for data in [
            r#"{"d":{"content":"\ud83d\ude00"}}"#,
            r#"{"d":{"content":"\\ud83d"}}"#,
            r#"{"d":{"content":"x\ud83dy"}}"#,
            r#"{"\ud83d":{"content":"x"}}"#,
        ] {
            assert_eq!(joiner.rejoin(data), data);
        }
    }

    #[test]
    fn tool_call_arguments_in_arrays_are_matched_by_position() {
        let mut joiner = SplitSurrogates::default();
        let event = |args: &str| format!(r#"{{"t":[{{"a":"x"}},{{"a":"{args}"}}]}}"#);
        let first = joiner.rejoin(&event(r#"{\"e\":\"\ud83d"#)).into_owned();
        let parsed = crate::json::parse(&first).expect("valid JSON");
        assert_eq!(parsed["t"][1]["a"], "{\"e\":\"");
        let second = joiner.rejoin(&event(r#"\ude80\"}"#)).into_owned();
        let parsed = crate::json::parse(&second).expect("valid JSON");
        assert_eq!(parsed["t"][1]["a"], "\u{1F680}\"}");
    }

    #[test]
    fn held_halves_are_bounded() {
        let mut joiner = SplitSurrogates::default();
        for n in 0..100 {
            joiner.rejoin(&format!(r#"{{"k{n}":"\ud83d"}}"#));
        }
        assert!(joiner.held.len() <= MAX_HELD);
    }
}

//! The incremental tolerant JSON parser of SPEC §3.8.2–§3.8.4.
//!
//! The parser keeps every open container by value on its stack (the parent holds a placeholder at
//! the child's slot until the child closes). A snapshot copies the open containers from the
//! innermost outwards, exactly as §3.8.4 describes, so the visible values and the credit
//! accounting match the reference while each `append` only walks the new piece.
//!
//! Values are [`SharedValue`]s: a copy of an open container is shallow (its completed children
//! are shared, as the reference shares its JavaScript objects) and costs O(members), which is
//! what §3.8.4 charges against the credit; an open string is an append-only [`SharedText`], so
//! showing it in a snapshot costs O(1), not O(length). Keys are `Arc<str>` and a member's slot
//! remembers its position, so no snapshot hashes or copies a key. Hence the snapshots of a whole
//! argument text cost O(text) in total.

use std::collections::HashMap;
use std::sync::Arc;

use crate::json::shared::{Scalar, SharedObject, SharedText, SharedValue};
use crate::json::{is_array_index, number, Json};

/// Credit granted per appended piece, plus `PER_UNIT` per UTF-16 code unit (§3.8.3 step 1).
const BASE_CREDIT: u64 = 256;
const PER_UNIT: u64 = 8;
/// Longest pending scalar token that is still displayed (§3.8.4 step 2).
const MAX_PENDING_SCALAR: usize = 64;

/// Where a value goes (§3.8.2): relative to the top frame, or the root.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Root,
    Element(usize),
    /// An array-index key (SPEC §0.4.2).
    Index(u32),
    /// Any other key, with its position among the object's other keys (its current position, or
    /// the end when it is new; nothing else is placed in that object while the slot is live).
    Name(Arc<str>, usize),
    None,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Key,
    Colon,
    Value,
    Comma,
}

/// An open container, or a snapshot's copy of one (a shallow copy: children are shared).
#[derive(Debug, Clone)]
enum Container {
    Object(SharedObject),
    Array(Vec<SharedValue>),
}

impl Container {
    fn into_value(self) -> SharedValue {
        match self {
            Container::Object(object) => SharedValue::Object(Arc::new(object)),
            Container::Array(items) => SharedValue::Array(Arc::new(items)),
        }
    }

    /// Puts `value` at `slot`; returns true when that added a member or element.
    fn put(&mut self, slot: &Slot, value: SharedValue) -> bool {
        match (self, slot) {
            (Container::Array(items), Slot::Element(n)) => {
                if *n < items.len() {
                    items[*n] = value;
                } else if *n == items.len() {
                    items.push(value);
                    return true;
                }
                false
            }
            (Container::Object(object), Slot::Index(n)) => {
                object.indices.insert(*n, value).is_none()
            }
            (Container::Object(object), Slot::Name(key, position)) => {
                if let Some(member) = object.names.get_mut(*position) {
                    member.1 = value;
                    false
                } else {
                    object.names.push((key.clone(), value));
                    true
                }
            }
            _ => false,
        }
    }
}

#[derive(Debug)]
struct Frame {
    container: Container,
    /// Positions of the object's non-index keys (empty for arrays).
    positions: HashMap<Arc<str>, usize>,
    /// Where this container sits in its parent (the frame below, or the root).
    slot: Slot,
    phase: Phase,
    key: Option<Arc<str>>,
    size: u64,
}

impl Frame {
    /// Puts a value into this frame's container; returns true when that added a member.
    fn put(&mut self, slot: &Slot, value: SharedValue) -> bool {
        let added = self.container.put(slot, value);
        if added {
            self.size += 1;
            if let Slot::Name(key, position) = slot {
                self.positions.insert(key.clone(), *position);
            }
        }
        added
    }
}

#[derive(Debug)]
struct OpenString {
    is_key: bool,
    slot: Slot,
    text: SharedText,
    /// Pending escape text: empty, `\`, or `\u` plus up to 3 hex digits.
    escape: String,
    /// A decoded high surrogate waiting for its partner (the libagent surrogate rule).
    high_surrogate: Option<u16>,
}

/// The incremental tolerant JSON parser of SPEC §3.8.2–§3.8.4.
#[derive(Debug)]
pub struct PartialJsonParser {
    root: Option<SharedValue>,
    done: bool,
    stack: Vec<Frame>,
    string: Option<OpenString>,
    scalar: String,
    scalar_slot: Slot,
    path_cost: u64,
    credit: u64,
    dirty: bool,
    snapshot: Option<SharedValue>,
    /// Incremented for every freshly built snapshot.
    generation: u64,
}

impl Default for PartialJsonParser {
    fn default() -> Self {
        Self::new()
    }
}

fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | '\r' | ',' | ':' | '{' | '}' | '[' | ']' | '"'
    )
}

impl PartialJsonParser {
    pub fn new() -> Self {
        Self {
            root: None,
            done: false,
            stack: Vec::new(),
            string: None,
            scalar: String::new(),
            scalar_slot: Slot::None,
            path_cost: 0,
            credit: 0,
            dirty: false,
            snapshot: None,
            generation: 0,
        }
    }

    /// The last snapshot returned (`None` = no value yet).
    pub fn current(&self) -> Option<&SharedValue> {
        self.snapshot.as_ref()
    }

    /// Number of fresh snapshots built so far; changes exactly when `snapshot` builds a new one.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// True once a complete root value was read (later text is ignored).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one piece of text (§3.8.3).
    pub fn append(&mut self, piece: &str) {
        let units: u64 = piece.chars().map(|c| c.len_utf16() as u64).sum();
        self.credit = self
            .credit
            .saturating_add(BASE_CREDIT.saturating_add(PER_UNIT.saturating_mul(units)));
        let mut rest = piece;
        while !rest.is_empty() && !self.done {
            rest = if self.string.is_some() {
                self.read_string(rest)
            } else if !self.scalar.is_empty() {
                self.read_scalar(rest)
            } else {
                let mut chars = rest.chars();
                if let Some(c) = chars.next() {
                    self.structural(c);
                }
                chars.as_str()
            };
        }
    }

    /// Returns the current snapshot per §3.8.4, rebuilding it only when dirty and affordable.
    pub fn snapshot(&mut self) -> Option<&SharedValue> {
        if self.dirty {
            let pending = self.pending_scalar();
            let cost = self.path_cost + u64::from(pending.is_some());
            if cost <= self.credit {
                self.credit -= cost;
                self.dirty = false;
                self.snapshot = self.build(pending);
                self.generation += 1;
            }
        }
        self.snapshot.as_ref()
    }

    fn build(&self, pending: Option<Json>) -> Option<SharedValue> {
        // The innermost visible extra value: the pending scalar, or the open value string's text
        // (which the reference holds live inside its container).
        let mut carry: Option<(Slot, SharedValue)> = match (&self.string, pending) {
            (_, Some(value)) => Some((
                self.scalar_slot.clone(),
                SharedValue::Scalar(Scalar::of(value)),
            )),
            (Some(s), None) if !s.is_key && s.slot != Slot::None => {
                Some((s.slot.clone(), SharedValue::String(s.text.clone())))
            }
            _ => None,
        };
        for frame in self.stack.iter().rev() {
            let mut copy = frame.container.clone();
            if let Some((slot, value)) = carry.take() {
                copy.put(&slot, value);
            }
            carry = match frame.slot {
                Slot::None => None,
                ref slot => Some((slot.clone(), copy.into_value())),
            };
        }
        match carry {
            Some((Slot::Root, value)) => Some(value),
            _ => self.root.clone(),
        }
    }

    /// The displayed value of the open scalar token, if any (§3.8.4 step 2).
    fn pending_scalar(&self) -> Option<Json> {
        if self.scalar.is_empty()
            || self.scalar_slot == Slot::None
            // Bytes bound UTF-16 units from above, and only ASCII tokens are ever displayable,
            // so the byte length decides exactly (and in O(1) for long tokens).
            || self.scalar.len() > MAX_PENDING_SCALAR
        {
            return None;
        }
        let token = self.scalar.as_str();
        if "true".starts_with(token) {
            return Some(Json::Bool(true));
        }
        if "false".starts_with(token) {
            return Some(Json::Bool(false));
        }
        if "null".starts_with(token) {
            return Some(Json::Null);
        }
        if let Some(value) = parse_number(token) {
            return Some(value);
        }
        // A number followed by `e`/`E` and an optional sign, without exponent digits.
        let trimmed = token.strip_suffix(['+', '-']).unwrap_or(token);
        let mantissa = trimmed.strip_suffix(['e', 'E'])?;
        parse_number(mantissa)
    }

    fn value_slot(&self) -> Slot {
        match self.stack.last() {
            None if self.root.is_none() => Slot::Root,
            None => Slot::None,
            Some(Frame {
                container: Container::Array(items),
                ..
            }) => Slot::Element(items.len()),
            Some(Frame {
                container: Container::Object(object),
                positions,
                phase: Phase::Value | Phase::Colon,
                key: Some(key),
                ..
            }) => {
                if is_array_index(key) {
                    key.parse().map_or(Slot::None, Slot::Index)
                } else {
                    let position = positions.get(key).copied();
                    Slot::Name(key.clone(), position.unwrap_or(object.names.len()))
                }
            }
            Some(_) => Slot::None,
        }
    }

    /// Places a value at a slot of the top frame (or the root), counting new members.
    fn place(&mut self, slot: &Slot, value: SharedValue) {
        match slot {
            Slot::None => return,
            Slot::Root => self.root = Some(value),
            slot => {
                if let Some(frame) = self.stack.last_mut() {
                    if frame.put(slot, value) {
                        self.path_cost += 1;
                    }
                }
            }
        }
        self.dirty = true;
    }

    /// Writes a finished value into its already-counted slot (no size or dirty change).
    fn store(&mut self, slot: &Slot, value: SharedValue) {
        match (slot, self.stack.last_mut()) {
            (Slot::Root, _) => self.root = Some(value),
            (Slot::None, _) | (_, None) => {}
            (slot, Some(frame)) => {
                frame.put(slot, value);
            }
        }
    }

    fn value_ended(&mut self) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_some() {
                    self.done = true;
                }
            }
            Some(frame) => frame.phase = Phase::Comma,
        }
    }

    fn structural(&mut self, c: char) {
        match c {
            ' ' | '\t' | '\n' | '\r' => {}
            '"' => self.start_string(),
            '{' | '[' if self.stack.len() >= crate::json::MAX_PARSE_DEPTH => {
                // Deeper than any document `json::parse` accepts: stop reading, so that no
                // recursive walk (snapshot copy, drop) can exhaust the stack. The final parse
                // reports the text as too deeply nested.
                self.done = true;
            }
            '{' | '[' => {
                let slot = self.value_slot();
                let (container, placeholder, phase) = if c == '{' {
                    (
                        Container::Object(SharedObject::default()),
                        SharedValue::empty_object(),
                        Phase::Key,
                    )
                } else {
                    (
                        Container::Array(Vec::new()),
                        SharedValue::Array(Arc::default()),
                        Phase::Value,
                    )
                };
                self.place(&slot, placeholder);
                self.stack.push(Frame {
                    container,
                    positions: HashMap::new(),
                    slot,
                    phase,
                    key: None,
                    size: 0,
                });
                self.path_cost += 1;
                self.dirty = true;
            }
            '}' | ']' => {
                if let Some(frame) = self.stack.pop() {
                    self.path_cost = self.path_cost.saturating_sub(frame.size + 1);
                    self.dirty = true;
                    self.store(&frame.slot, frame.container.into_value());
                    self.value_ended();
                }
            }
            ':' => {
                if let Some(frame) = self.stack.last_mut() {
                    if matches!(frame.container, Container::Object(_))
                        && frame.phase == Phase::Colon
                    {
                        frame.phase = Phase::Value;
                    }
                }
            }
            ',' => {
                if let Some(frame) = self.stack.last_mut() {
                    frame.phase = match frame.container {
                        Container::Array(_) => Phase::Value,
                        Container::Object(_) => Phase::Key,
                    };
                }
            }
            _ => {
                self.scalar_slot = self.value_slot();
                self.scalar.push(c);
                if self.scalar_slot != Slot::None {
                    self.dirty = true;
                }
            }
        }
    }

    fn start_string(&mut self) {
        let key_position = matches!(
            self.stack.last(),
            Some(Frame {
                container: Container::Object(_),
                phase: Phase::Key | Phase::Comma,
                ..
            })
        );
        let slot = if key_position {
            Slot::None
        } else {
            let slot = self.value_slot();
            self.place(&slot, SharedValue::String(SharedText::default()));
            slot
        };
        self.string = Some(OpenString {
            is_key: key_position,
            slot,
            text: SharedText::default(),
            escape: String::new(),
            high_surrogate: None,
        });
    }

    /// Reads the open string; returns the unread rest of the piece.
    fn read_string<'a>(&mut self, piece: &'a str) -> &'a str {
        let mut rest = piece;
        while let Some(c) = rest.chars().next() {
            let escaping = self.string.as_ref().is_some_and(|s| !s.escape.is_empty());
            if escaping {
                if self.continue_escape(c) {
                    rest = &rest[c.len_utf8()..];
                }
                continue;
            }
            match c {
                '"' => {
                    self.end_string();
                    return &rest[1..];
                }
                '\\' => {
                    if let Some(s) = self.string.as_mut() {
                        s.escape.push('\\');
                    }
                    rest = &rest[1..];
                }
                _ => {
                    // A run of ordinary characters is appended in one step.
                    let end = rest.find(['"', '\\']).unwrap_or(rest.len());
                    self.push_text(&rest[..end]);
                    rest = &rest[end..];
                }
            }
        }
        rest
    }

    /// Continues a pending escape with `c`; returns false when `c` must be read normally.
    fn continue_escape(&mut self, c: char) -> bool {
        let Some(s) = self.string.as_mut() else {
            return true;
        };
        if s.escape == "\\" {
            let decoded = match c {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{08}',
                'f' => '\u{0c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    s.escape.push('u');
                    return true;
                }
                _ => {
                    s.escape.clear();
                    self.push_text("\\");
                    return false;
                }
            };
            s.escape.clear();
            self.push_text(decoded.encode_utf8(&mut [0; 4]));
            return true;
        }
        if !c.is_ascii_hexdigit() {
            let literal = std::mem::take(&mut s.escape);
            self.push_text(&literal);
            return false;
        }
        s.escape.push(c);
        if s.escape.len() == 6 {
            let unit = u16::from_str_radix(&s.escape[2..], 16).unwrap_or(0xFFFD);
            s.escape.clear();
            self.push_unit(unit);
        }
        true
    }

    /// Appends one decoded UTF-16 unit, pairing surrogates (the libagent rule of §3.8.3).
    fn push_unit(&mut self, unit: u16) {
        let Some(s) = self.string.as_mut() else {
            return;
        };
        match unit {
            0xD800..=0xDBFF => {
                if s.high_surrogate.replace(unit).is_some() {
                    self.append_raw("\u{FFFD}");
                }
            }
            0xDC00..=0xDFFF => match s.high_surrogate.take() {
                Some(high) => {
                    let code =
                        0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                    let ch = char::from_u32(code).unwrap_or('\u{FFFD}');
                    self.append_raw(ch.encode_utf8(&mut [0; 4]));
                }
                None => self.append_raw("\u{FFFD}"),
            },
            _ => {
                let ch = char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}');
                self.push_text(ch.encode_utf8(&mut [0; 4]));
            }
        }
    }

    /// Appends text to the open string, first resolving a held high surrogate into U+FFFD.
    fn push_text(&mut self, text: &str) {
        if let Some(s) = self.string.as_mut() {
            if s.high_surrogate.take().is_some() {
                s.text.push_str("\u{FFFD}");
            }
        }
        self.append_raw(text);
    }

    fn append_raw(&mut self, text: &str) {
        if let Some(s) = self.string.as_mut() {
            s.text.push_str(text);
            // Re-placing a value string's text at a real slot makes the value dirty.
            if !s.is_key && s.slot != Slot::None {
                self.dirty = true;
            }
        }
    }

    fn end_string(&mut self) {
        if self
            .string
            .as_ref()
            .is_some_and(|s| s.high_surrogate.is_some())
        {
            self.push_text("");
        }
        let Some(s) = self.string.take() else { return };
        if s.is_key {
            if let Some(frame) = self.stack.last_mut() {
                frame.key = Some(Arc::from(s.text.to_string()));
                frame.phase = Phase::Colon;
            }
        } else {
            // The text was already (virtually) placed as it grew; store the final value.
            self.store(&s.slot, SharedValue::String(s.text));
            self.value_ended();
        }
    }

    /// Reads the open scalar token up to the next delimiter; returns the unread rest.
    fn read_scalar<'a>(&mut self, piece: &'a str) -> &'a str {
        let end = piece.find(is_delimiter).unwrap_or(piece.len());
        if end > 0 {
            self.scalar.push_str(&piece[..end]);
            if self.scalar_slot != Slot::None {
                self.dirty = true;
            }
        }
        if end < piece.len() {
            self.end_scalar();
        }
        &piece[end..]
    }

    fn end_scalar(&mut self) {
        let token = std::mem::take(&mut self.scalar);
        let slot = std::mem::replace(&mut self.scalar_slot, Slot::None);
        let value = match token.as_str() {
            "true" => Some(Json::Bool(true)),
            "false" => Some(Json::Bool(false)),
            "null" => Some(Json::Null),
            _ => parse_number(&token),
        };
        if let Some(value) = value {
            self.place(&slot, SharedValue::Scalar(Scalar::of(value)));
        }
        self.value_ended();
    }
}

/// Length of the longest prefix of `token` matching
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, or `None` if not even the integer part
/// matches.
fn number_end(token: &str) -> Option<usize> {
    let b = token.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(b.first() == Some(&b'-'));
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i += digits(i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') && digits(i + 1) > 0 {
        i += 1 + digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let n = digits(i + 1 + sign);
        if n > 0 {
            i += 1 + sign + n;
        }
    }
    Some(i)
}

/// The number a complete token denotes, if it matches the JSON number pattern in full.
fn parse_number(token: &str) -> Option<Json> {
    if number_end(token) != Some(token.len()) {
        return None;
    }
    token.parse::<f64>().ok().map(number)
}

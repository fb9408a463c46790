//! Persistent JSON pieces for streaming (ARCHITECTURE principle 5): values whose clone is O(1),
//! so that keeping one snapshot per stream event costs O(1) however large the value has grown.
//!
//! - [`SharedText`]: an append-only string. Clones share one buffer and each remembers the length
//!   it saw, so appending to the newest clone never changes what an older clone reads.
//! - [`SharedValue`]: a JSON value whose strings are `SharedText`s and whose containers sit behind
//!   `Arc`s (completed children are shared, never copied). JSON is built only on request.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::{Json, JsonMap};
use crate::cost_canary::{cost_canary_on, Canary};

/// An append-only text shared by the writer and its snapshots.
#[derive(Default)]
pub struct SharedText {
    buffer: Arc<RwLock<String>>,
    /// The length this value sees (a char boundary: only whole strings are appended).
    len: usize,
}

impl Clone for SharedText {
    fn clone(&self) -> Self {
        SharedText {
            buffer: self.buffer.clone(),
            len: self.len,
        }
    }

    /// A snapshot of the same buffer takes the newer length alone.
    fn clone_from(&mut self, source: &Self) {
        if Arc::ptr_eq(&self.buffer, &source.buffer) {
            self.len = source.len;
        } else {
            *self = source.clone();
        }
    }
}

impl SharedText {
    pub fn new(text: &str) -> Self {
        SharedText {
            buffer: Arc::new(RwLock::new(text.to_string())),
            len: text.len(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `text`: in place (amortized O(len(text))) when this value sees the whole buffer,
    /// otherwise into a fresh buffer holding this value's text (never visible to other clones).
    pub fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        {
            let mut buffer = self.buffer.write().unwrap_or_else(|e| e.into_inner());
            if buffer.len() == self.len && !cost_canary_on(Canary::Text) {
                buffer.push_str(text);
                self.len = buffer.len();
                return;
            }
        }
        let mut copy = self.with_str(|s| {
            let mut copy = String::with_capacity(s.len() + text.len());
            copy.push_str(s);
            copy
        });
        copy.push_str(text);
        *self = SharedText {
            len: copy.len(),
            buffer: Arc::new(RwLock::new(copy)),
        };
    }

    /// Calls `f` with the text this value sees.
    pub fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        let buffer = self.buffer.read().unwrap_or_else(|e| e.into_inner());
        f(buffer.get(..self.len).unwrap_or(&buffer))
    }
}

impl std::fmt::Display for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_str(|s| f.write_str(s))
    }
}

impl std::fmt::Debug for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_str(|s| std::fmt::Debug::fmt(s, f))
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && (Arc::ptr_eq(&self.buffer, &other.buffer)
                || self.with_str(|a| other.with_str(|b| a == b)))
    }
}

/// An object in ECMAScript own-property order: array-index keys ascending, then the other keys
/// in insertion order (SPEC §0.4.2). Array-index keys are `0..=4294967294`, so `u32` holds them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SharedObject {
    pub indices: BTreeMap<u32, SharedValue>,
    pub names: Vec<(Arc<str>, SharedValue)>,
}

impl SharedObject {
    pub fn len(&self) -> usize {
        self.indices.len() + self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn to_json(&self) -> JsonMap {
        let mut map = JsonMap::new();
        for (key, value) in &self.indices {
            map.insert(key.to_string(), value.to_json());
        }
        for (key, value) in &self.names {
            map.insert(key.to_string(), value.to_json());
        }
        map
    }
}

/// `null`, a boolean or a number: a third of a whole `Json`'s size, which a snapshot per event
/// moves around.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Number(serde_json::Number),
}

impl Scalar {
    /// The scalar `value` is (`null` for a string or container, which are not scalars).
    pub fn of(value: Json) -> Self {
        match value {
            Json::Bool(b) => Scalar::Bool(b),
            Json::Number(n) => Scalar::Number(n),
            _ => Scalar::Null,
        }
    }

    pub fn to_json(&self) -> Json {
        match self {
            Scalar::Null => Json::Null,
            Scalar::Bool(b) => Json::Bool(*b),
            Scalar::Number(n) => Json::Number(n.clone()),
        }
    }
}

/// A JSON value with O(1) clone.
#[derive(Debug, PartialEq)]
pub enum SharedValue {
    Scalar(Scalar),
    String(SharedText),
    Array(Arc<Vec<SharedValue>>),
    Object(Arc<SharedObject>),
}

impl Clone for SharedValue {
    fn clone(&self) -> Self {
        match self {
            SharedValue::Scalar(value) => SharedValue::Scalar(value.clone()),
            SharedValue::String(text) => SharedValue::String(text.clone()),
            SharedValue::Array(items) => SharedValue::Array(items.clone()),
            SharedValue::Object(members) => SharedValue::Object(members.clone()),
        }
    }

    /// A text takes a newer snapshot of its own buffer in place (see [`SharedText`]): the
    /// streaming case, inlined; anything else is a clone.
    #[inline(always)]
    fn clone_from(&mut self, source: &Self) {
        if let (SharedValue::String(text), SharedValue::String(from)) = (&mut *self, source) {
            if Arc::ptr_eq(&text.buffer, &from.buffer) {
                text.len = from.len;
                return;
            }
        }
        self.clone_from_other(source);
    }
}

impl SharedValue {
    #[cold]
    #[inline(never)]
    fn clone_from_other(&mut self, source: &Self) {
        *self = source.clone();
    }

    pub fn empty_object() -> Self {
        SharedValue::Object(Arc::default())
    }

    pub fn is_object(&self) -> bool {
        matches!(self, SharedValue::Object(_))
    }

    /// Appends the text of `to_json()`; a string or scalar without building it.
    pub fn write_text(&self, out: &mut String) {
        match self {
            SharedValue::Scalar(value) => super::write_json(out, &value.to_json()),
            SharedValue::String(text) => text.with_str(|s| super::write_string(out, s)),
            _ => super::write_json(out, &self.to_json()),
        }
    }

    /// The value as JSON (O(size)).
    pub fn to_json(&self) -> Json {
        match self {
            SharedValue::Scalar(value) => value.to_json(),
            SharedValue::String(text) => Json::String(text.to_string()),
            SharedValue::Array(items) => Json::Array(items.iter().map(Self::to_json).collect()),
            SharedValue::Object(object) => Json::Object(object.to_json()),
        }
    }
}

impl PartialEq<Json> for SharedValue {
    fn eq(&self, other: &Json) -> bool {
        self.to_json() == *other
    }
}

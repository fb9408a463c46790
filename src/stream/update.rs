//! The update event a `message_update` carries: the assistant stream event as forwarded to
//! listeners (SPEC §3.7), kept typed for deltas.

use crate::json::Field;
use std::fmt::Write;

use compact_str::CompactString;

use super::partial::{BlockKind, PartialSnapshot};
use crate::json::{set_key, write_json, write_object_with, write_string, Json, JsonMap};

/// A forwarded update event: the full-form event without its `partial` (SPEC §3.7, last
/// paragraph). The field a delta-form `*_end` fills in from the partial (`content` of
/// `text_end`/`thinking_end`, `toolCall` of `toolcall_end`) is read from the partial of the same
/// event when JSON is built, so forwarding costs O(1); until then it is absent.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateEvent {
    fields: Fields,
}

/// The event's own fields.
#[derive(Debug, Clone, PartialEq)]
enum Fields {
    /// As a host pushed them. Boxed: a delta's event, moved from the stream to every listener,
    /// stays small.
    Json(Box<JsonFields>),
    /// A typed delta (no JSON until asked): `{"type", "contentIndex", "delta"}`.
    Delta {
        kind: BlockKind,
        index: usize,
        /// Inline up to 24 bytes: a small delta allocates nothing.
        delta: CompactString,
    },
    /// A typed block start or end (no JSON until asked): `{"type", "contentIndex"}`, and for an
    /// end the field filled from the partial. As small as a delta's: every delta moves this type.
    Op {
        kind: BlockKind,
        end: bool,
        index: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct JsonFields {
    /// A `null` placeholder at the key filled from the partial.
    json: Json,
    from_partial: Option<FromPartial>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum FromPartial {
    /// `key` = the text of block `index`'s `field` (`""` when that is not a string).
    Text {
        key: &'static str,
        index: usize,
        field: &'static str,
    },
    /// `key` = block `index`.
    Block { key: &'static str, index: usize },
}

impl UpdateEvent {
    /// An event forwarded as it is.
    pub fn new(json: Json) -> Self {
        UpdateEvent {
            fields: Fields::Json(Box::new(JsonFields {
                json,
                from_partial: None,
            })),
        }
    }

    /// The delta event `{"type": kind, "contentIndex": index, "delta": delta}`, kept typed.
    pub(crate) fn delta(kind: BlockKind, index: usize, delta: CompactString) -> Self {
        UpdateEvent {
            fields: Fields::Delta { kind, index, delta },
        }
    }

    /// A typed block start: `{"type": "{kind}_start", "contentIndex": index}`.
    pub(crate) fn block_start(kind: BlockKind, index: usize) -> Self {
        UpdateEvent {
            fields: Fields::Op {
                kind,
                end: false,
                index,
            },
        }
    }

    /// A typed block end: `{"type": "{kind}_end", "contentIndex": index}` with `content` (the
    /// block's text) for a text or thinking block, `toolCall` (the block) for a tool call.
    pub(crate) fn block_end(kind: BlockKind, index: usize) -> Self {
        UpdateEvent {
            fields: Fields::Op {
                kind,
                end: true,
                index,
            },
        }
    }

    fn with_placeholder(mut json: Json, key: &'static str, from_partial: FromPartial) -> Self {
        if let Some(map) = json.as_object_mut() {
            set_key(map, key, Json::Null);
        }
        UpdateEvent {
            fields: Fields::Json(Box::new(JsonFields {
                json,
                from_partial: Some(from_partial),
            })),
        }
    }

    /// `json` with `key` = the text of block `index`'s `field`.
    pub(crate) fn with_text(
        json: Json,
        key: &'static str,
        index: usize,
        field: &'static str,
    ) -> Self {
        Self::with_placeholder(json, key, FromPartial::Text { key, index, field })
    }

    /// `json` with `key` = block `index`.
    pub(crate) fn with_block(json: Json, key: &'static str, index: usize) -> Self {
        Self::with_placeholder(json, key, FromPartial::Block { key, index })
    }

    /// The assistant stream event type (`text_delta`, ...), if it is a string.
    pub fn kind(&self) -> Option<&str> {
        match &self.fields {
            Fields::Json(fields) => fields.json.field("type").and_then(Json::as_str),
            Fields::Delta { kind, .. } => Some(kind.delta_event()),
            Fields::Op { kind, end, .. } => Some(op_event(*kind, *end)),
        }
    }

    /// The `delta` text, if the event has a string one.
    pub fn delta_text(&self) -> Option<&str> {
        match &self.fields {
            Fields::Json(fields) => fields.json.field("delta").and_then(Json::as_str),
            Fields::Delta { delta, .. } => Some(delta),
            Fields::Op { .. } => None,
        }
    }

    /// A delta kept typed (pushed without JSON): its block kind, content index and text.
    pub(crate) fn typed_delta(&self) -> Option<(BlockKind, usize, &str)> {
        match &self.fields {
            Fields::Delta { kind, index, delta } => Some((*kind, *index, delta)),
            Fields::Json(_) | Fields::Op { .. } => None,
        }
    }

    /// The `contentIndex`, if it is a non-negative integer.
    pub fn content_index(&self) -> Option<usize> {
        match &self.fields {
            Fields::Json(fields) => fields
                .json
                .field("contentIndex")
                .and_then(Json::as_u64)
                .map(|i| i as usize),
            Fields::Delta { index, .. } | Fields::Op { index, .. } => Some(*index),
        }
    }

    /// Appends the text of `to_json(partial)` with `"partial"` set to `partial_text` (the full
    /// shape's assistant event): a typed delta is written without building JSON.
    pub(crate) fn write_full_text(
        &self,
        out: &mut String,
        partial: &PartialSnapshot,
        partial_text: &str,
    ) {
        if let Some((kind, index, delta)) = self.typed_delta() {
            out.push_str(r#"{"type":""#);
            out.push_str(kind.delta_event());
            let _ = write!(out, r#"","contentIndex":{index},"delta":"#);
            write_string(out, delta);
            out.push_str(r#","partial":"#);
            out.push_str(partial_text);
            out.push('}');
            return;
        }
        match self.to_json(partial) {
            Json::Object(map) => {
                write_object_with(out, &map, "partial", |out| out.push_str(partial_text))
            }
            other => write_json(out, &other),
        }
    }

    /// The event as JSON, `partial` being the partial message of the same event (O(size of the
    /// field taken from it)).
    pub fn to_json(&self, partial: &PartialSnapshot) -> Json {
        let (mut json, from_partial) = match &self.fields {
            Fields::Json(fields) => (fields.json.clone(), fields.from_partial),
            Fields::Delta { kind, index, delta } => {
                let mut map = JsonMap::new();
                map.insert("type".into(), kind.delta_event().into());
                map.insert("contentIndex".into(), (*index).into());
                map.insert("delta".into(), delta.as_str().into());
                return Json::Object(map);
            }
            Fields::Op { kind, end, index } => {
                let mut map = JsonMap::with_capacity(3);
                map.insert("type".into(), op_event(*kind, *end).into());
                map.insert("contentIndex".into(), (*index).into());
                let index = *index;
                let filled = match (end, kind) {
                    (false, _) => None,
                    (true, BlockKind::ToolCall) => Some(FromPartial::Block {
                        key: "toolCall",
                        index,
                    }),
                    (true, text) => Some(FromPartial::Text {
                        key: "content",
                        index,
                        field: text.block_type(),
                    }),
                };
                (Json::Object(map), filled)
            }
        };
        let filled = match from_partial {
            None => return json,
            Some(FromPartial::Text { key, index, field }) => {
                let text = partial.block_field(index, field);
                let text = text.filter(Json::is_string);
                (
                    key,
                    Some(text.unwrap_or_else(|| Json::String(String::new()))),
                )
            }
            Some(FromPartial::Block { key, index }) => (key, partial.block_json(index)),
        };
        if let (Json::Object(map), (key, Some(value))) = (&mut json, filled) {
            set_key(map, key, value);
        }
        json
    }
}

/// The event type of a typed block start or end.
fn op_event(kind: BlockKind, end: bool) -> &'static str {
    if end {
        kind.end_event()
    } else {
        kind.start_event()
    }
}

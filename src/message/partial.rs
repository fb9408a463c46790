//! The streaming partial message as a persistent value (ARCHITECTURE principle 5): a snapshot per
//! event costs O(1), and each delta-form update costs O(its own size) amortized (plus O(log n) in
//! the number of blocks), so streaming N events costs O(N) in total whatever their kind. JSON is
//! built only when someone asks for it.
//!
//! - The message's fields other than `content` live in a copy-on-write map (only `start`, a
//!   full-form event or `done`/`error` change them).
//! - `content` is a persistent vector of blocks (`imbl::Vector`: O(1) clone, O(log n) update), so
//!   a new block or a changed block does not copy the others. The block being streamed is kept
//!   beside the vector (`hot`), so consecutive deltas to one block do not touch the vector at all
//!   (an update of a shared vector copies a node of up to 64 blocks).
//! - A block is its JSON behind an `Arc` plus at most one *live* field streamed by deltas (`text`,
//!   `thinking` or `arguments`), kept out of the JSON as a [`SharedValue`]: an append-only text or
//!   the argument stream's latest parsed value, both O(1) to clone. The block JSON holds a `null`
//!   placeholder at the live field's key, so the key keeps its position.

use std::fmt::Write;
use std::sync::{Arc, OnceLock};

use imbl::Vector;

use crate::json::shared::{SharedText, SharedValue};
use crate::json::{set_key, write_json, write_object_with, write_string, Json, JsonMap};

/// One content block.
#[derive(Debug, Clone)]
struct Block {
    json: Arc<Json>,
    live: Option<(&'static str, SharedValue)>,
    /// The block's `type` when it is one of the streamed kinds, cached: every delta checks it.
    kind: Option<BlockKind>,
}

impl Block {
    fn new(json: Json) -> Self {
        let kind = BlockKind::of(&json);
        Block {
            json: Arc::new(json),
            live: None,
            kind,
        }
    }

    fn is(&self, kind: &str) -> bool {
        match BlockKind::from_type(kind) {
            Some(streamed) => self.kind == Some(streamed),
            None => self.json.get("type").and_then(Json::as_str) == Some(kind),
        }
    }

    fn to_json(&self) -> Json {
        let mut json = (*self.json).clone();
        if let (Some((field, value)), Json::Object(map)) = (&self.live, &mut json) {
            set_key(map, field, value.to_json());
        }
        json
    }

    /// Appends the text of `to_json()` without building it.
    fn write_text(&self, out: &mut String) {
        match (&self.live, &*self.json) {
            (Some((field, value)), Json::Object(map)) => {
                write_object_with(out, map, field, |out| value.write_text(out))
            }
            _ => write_json(out, &self.json),
        }
    }

    /// The value of `field` (O(size of that field)).
    fn field(&self, field: &str) -> Option<Json> {
        match &self.live {
            Some((live, value)) if *live == field => Some(value.to_json()),
            _ => self.json.get(field).cloned(),
        }
    }

    /// The block object for a change other than the live field (copied if shared).
    fn map_mut(&mut self) -> Option<&mut JsonMap> {
        Arc::make_mut(&mut self.json).as_object_mut()
    }

    /// Makes `field` the live field holding `value`.
    fn set_live(&mut self, field: &'static str, value: SharedValue) {
        if !matches!(self.live, Some((live, _)) if live == field) {
            self.materialize();
            if let Some(map) = self.map_mut() {
                set_key(map, field, Json::Null);
            }
        }
        self.live = Some((field, value));
    }

    /// Puts the live field back into the JSON.
    fn materialize(&mut self) {
        if let Some((field, value)) = self.live.take() {
            if let Some(map) = self.map_mut() {
                set_key(map, field, value.to_json());
            }
        }
    }

    /// Sets `key` (a live field of that name stops being live).
    fn set(&mut self, key: &str, value: Json) {
        if matches!(self.live, Some((live, _)) if live == key) {
            self.live = None;
        }
        if let Some(map) = self.map_mut() {
            set_key(map, key, value);
        }
        if key == "type" {
            self.kind = BlockKind::of(&self.json);
        }
    }
}

/// The content block types that stream (`text`, `thinking`, `toolCall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

impl BlockKind {
    /// The kind named by a block's `type` value.
    pub fn from_type(block_type: &str) -> Option<Self> {
        match block_type {
            "text" => Some(BlockKind::Text),
            "thinking" => Some(BlockKind::Thinking),
            "toolCall" => Some(BlockKind::ToolCall),
            _ => None,
        }
    }

    fn of(block: &Json) -> Option<Self> {
        Self::from_type(block.get("type")?.as_str()?)
    }

    /// The block's `type` value.
    pub fn block_type(self) -> &'static str {
        match self {
            BlockKind::Text => "text",
            BlockKind::Thinking => "thinking",
            BlockKind::ToolCall => "toolCall",
        }
    }

    /// The stream event of a delta to such a block.
    pub fn delta_event(self) -> &'static str {
        match self {
            BlockKind::Text => "text_delta",
            BlockKind::Thinking => "thinking_delta",
            BlockKind::ToolCall => "toolcall_delta",
        }
    }

    /// The stream event that starts such a block.
    pub fn start_event(self) -> &'static str {
        match self {
            BlockKind::Text => "text_start",
            BlockKind::Thinking => "thinking_start",
            BlockKind::ToolCall => "toolcall_start",
        }
    }

    /// The stream event that ends such a block.
    pub fn end_event(self) -> &'static str {
        match self {
            BlockKind::Text => "text_end",
            BlockKind::Thinking => "thinking_end",
            BlockKind::ToolCall => "toolcall_end",
        }
    }
}

/// The content blocks: `blocks`, except that `hot` (index, block), when set, replaces one.
#[derive(Debug, Clone, Default)]
struct Content {
    blocks: Vector<Block>,
    hot: Option<(usize, Block)>,
}

impl Content {
    fn len(&self) -> usize {
        self.blocks.len()
    }

    fn get(&self, index: usize) -> Option<&Block> {
        match &self.hot {
            Some((hot, block)) if *hot == index => Some(block),
            _ => self.blocks.get(index),
        }
    }

    /// Block `index`, made the hot block.
    fn get_mut(&mut self, index: usize) -> Option<&mut Block> {
        if !matches!(self.hot, Some((hot, _)) if hot == index) {
            let block = self.blocks.get(index)?.clone();
            if let Some((previous, old)) = self.hot.replace((index, block)) {
                self.blocks.set(previous, old);
            }
        }
        self.hot.as_mut().map(|(_, block)| block)
    }

    /// Appends `block` as the hot block (the vector is written once per event: after its first
    /// write in an event it is no longer shared with a snapshot).
    fn push(&mut self, block: Block) {
        if let Some((previous, old)) = self.hot.take() {
            self.blocks.set(previous, old);
        }
        self.blocks.push_back(block.clone());
        self.hot = Some((self.blocks.len() - 1, block));
    }

    fn iter(&self) -> impl Iterator<Item = &Block> {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// The partial message being assembled.
#[derive(Debug, Clone, Default)]
pub struct Partial {
    /// The message; when `content` is `Some`, the map holds a placeholder at its key.
    map: Arc<MessageFields>,
    content: Option<Content>,
}

/// The message's fields (with a placeholder at `content`), and their text around `content`:
/// rendered by the first full-shape event after a change and reused while they stay the same
/// (only `start`, full-form events and the end change them).
#[derive(Debug, Clone, Default)]
struct MessageFields {
    json: JsonMap,
    text: OnceLock<(String, String)>,
}

impl Partial {
    /// A partial holding `map` (O(number of blocks)).
    pub fn from_map(mut map: JsonMap) -> Self {
        let content = match map.get_mut("content") {
            Some(Json::Array(blocks)) => {
                let blocks = std::mem::take(blocks);
                Some(Content {
                    blocks: blocks.into_iter().map(Block::new).collect(),
                    hot: None,
                })
            }
            _ => None,
        };
        Partial {
            map: Arc::new(MessageFields {
                json: map,
                text: OnceLock::new(),
            }),
            content,
        }
    }

    /// The message's fields for a change (copied if shared; their cached text is dropped).
    fn map_mut(&mut self) -> &mut JsonMap {
        let fields = Arc::make_mut(&mut self.map);
        fields.text = OnceLock::new();
        &mut fields.json
    }

    /// P.content, made an array if the message had none (or not an array).
    fn content_mut(&mut self) -> &mut Content {
        if self.content.is_none() {
            set_key(self.map_mut(), "content", Json::Array(Vec::new()));
        }
        self.content.get_or_insert_with(Content::default)
    }

    fn block(&self, index: usize) -> Option<&Block> {
        self.content.as_ref()?.get(index)
    }

    /// Changes block `index` with `change` (nothing when there is no such block).
    fn update(&mut self, index: usize, change: impl FnOnce(&mut Block)) {
        if let Some(block) = self.content.as_mut().and_then(|c| c.get_mut(index)) {
            change(block);
        }
    }

    /// Number of blocks (0 when `content` is not an array).
    pub fn block_count(&self) -> usize {
        self.content.as_ref().map_or(0, Content::len)
    }

    /// Whether block `index` is an object of type `kind`.
    pub fn block_is(&self, index: usize, kind: &str) -> bool {
        self.block(index).is_some_and(|b| b.is(kind))
    }

    /// The streamed kind of block `index`, if it is one.
    pub fn block_kind(&self, index: usize) -> Option<BlockKind> {
        self.block(index)?.kind
    }

    /// `P.content[index] = block`, padding with `null` up to `index` (the content array is
    /// created if needed).
    pub fn place_block(&mut self, index: usize, block: JsonMap) {
        let content = self.content_mut();
        let block = Block::new(Json::Object(block));
        if let Some(slot) = content.get_mut(index) {
            *slot = block;
        } else {
            while content.len() < index {
                content.push(Block::new(Json::Null));
            }
            content.push(block);
        }
    }

    /// Appends to block `index`'s text `field` (amortized O(len(delta))).
    pub fn append_text(&mut self, index: usize, field: &'static str, delta: &str) {
        self.update(index, |block| {
            let mut text = match &block.live {
                Some((live, SharedValue::String(text))) if *live == field => text.clone(),
                _ => SharedText::new(block.json.get(field).and_then(Json::as_str).unwrap_or("")),
            };
            text.push_str(delta);
            block.set_live(field, SharedValue::String(text));
        });
    }

    /// Replaces block `index`'s text `field`.
    pub fn set_text(&mut self, index: usize, field: &'static str, value: &str) {
        self.update(index, |block| {
            block.set_live(field, SharedValue::String(SharedText::new(value)))
        });
    }

    /// Sets block `index`'s `arguments` to the argument stream's latest value (O(1)).
    pub fn set_arguments(&mut self, index: usize, arguments: SharedValue) {
        self.update(index, |block| block.set_live("arguments", arguments));
    }

    /// Sets the message's top-level `key` (O(number of top-level fields)).
    pub fn set_field(&mut self, key: &str, value: Json) {
        if key == "content" {
            return;
        }
        set_key(self.map_mut(), key, value);
    }

    /// Sets `key` of block `index`.
    pub fn set_block_field(&mut self, index: usize, key: &str, value: Json) {
        self.update(index, |block| block.set(key, value));
    }

    /// A snapshot of the message as it is now (O(1)).
    pub fn snapshot(&self) -> PartialSnapshot {
        PartialSnapshot(Arc::new(self.clone()))
    }

    /// The message as JSON now.
    pub fn to_json(&self) -> Json {
        self.snapshot().to_json()
    }
}

/// The partial message at one event; immutable, O(1) to clone.
#[derive(Debug, Clone)]
pub struct PartialSnapshot(Arc<Partial>);

impl PartialSnapshot {
    /// Builds the message JSON (O(message size)).
    pub fn to_json(&self) -> Json {
        let mut map = self.0.map.json.clone();
        if let Some(content) = &self.0.content {
            let blocks = content.iter().map(Block::to_json).collect();
            set_key(&mut map, "content", Json::Array(blocks));
        }
        Json::Object(map)
    }

    /// Appends the text of `to_json()` (O(message size)) without building the JSON.
    pub fn write_text(&self, out: &mut String) {
        let fields = &self.0.map;
        let Some(content) = &self.0.content else {
            return write_json(out, &Json::Object(fields.json.clone()));
        };
        let (before, after) = fields.text.get_or_init(|| {
            let mut text = String::new();
            let mut cut = 0;
            write_object_with(&mut text, &fields.json, "content", |out| cut = out.len());
            let after = text.split_off(cut);
            (text, after)
        });
        out.push_str(before);
        out.push('[');
        for (i, block) in content.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            block.write_text(out);
        }
        out.push(']');
        out.push_str(after);
    }

    /// Field `field` of block `index` (O(size of that field)).
    pub fn block_field(&self, index: usize, field: &str) -> Option<Json> {
        self.0.content.as_ref()?.get(index)?.field(field)
    }

    /// Block `index` (O(size of the block)).
    pub fn block_json(&self, index: usize) -> Option<Json> {
        Some(self.0.content.as_ref()?.get(index)?.to_json())
    }
}

impl PartialEq for PartialSnapshot {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
    }
}

/// A forwarded update event: the full-form event without its `partial` (SPEC §3.7, last
/// paragraph). The field a delta-form `*_end` fills in from the partial (`content` of
/// `text_end`/`thinking_end`, `toolCall` of `toolcall_end`) is read from the partial of the same
/// event when JSON is built, so forwarding costs O(1); until then it is absent.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateEvent {
    fields: Fields,
    from_partial: Option<FromPartial>,
}

/// The event's own fields.
#[derive(Debug, Clone, PartialEq)]
enum Fields {
    /// As a host pushed them (a `null` placeholder at the key filled from the partial).
    Json(Json),
    /// A typed delta (no JSON until asked): `{"type", "contentIndex", "delta"}`.
    Delta {
        kind: &'static str,
        index: usize,
        delta: String,
    },
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
            fields: Fields::Json(json),
            from_partial: None,
        }
    }

    /// The delta event `{"type": kind, "contentIndex": index, "delta": delta}`, kept typed.
    pub(crate) fn delta(kind: &'static str, index: usize, delta: String) -> Self {
        UpdateEvent {
            fields: Fields::Delta { kind, index, delta },
            from_partial: None,
        }
    }

    fn with_placeholder(mut json: Json, key: &'static str, from_partial: FromPartial) -> Self {
        if let Some(map) = json.as_object_mut() {
            set_key(map, key, Json::Null);
        }
        UpdateEvent {
            fields: Fields::Json(json),
            from_partial: Some(from_partial),
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
            Fields::Json(json) => json.get("type").and_then(Json::as_str),
            Fields::Delta { kind, .. } => Some(kind),
        }
    }

    /// The `delta` text, if the event has a string one.
    pub fn delta_text(&self) -> Option<&str> {
        match &self.fields {
            Fields::Json(json) => json.get("delta").and_then(Json::as_str),
            Fields::Delta { delta, .. } => Some(delta),
        }
    }

    /// A delta kept typed (pushed without JSON): its type, content index and text.
    pub(crate) fn typed_delta(&self) -> Option<(&'static str, usize, &str)> {
        match (&self.fields, self.from_partial) {
            (Fields::Delta { kind, index, delta }, None) => Some((kind, *index, delta)),
            _ => None,
        }
    }

    /// The `contentIndex`, if it is a non-negative integer.
    pub fn content_index(&self) -> Option<usize> {
        match &self.fields {
            Fields::Json(json) => json
                .get("contentIndex")
                .and_then(Json::as_u64)
                .map(|i| i as usize),
            Fields::Delta { index, .. } => Some(*index),
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
            out.push_str(kind);
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
        let mut json = match &self.fields {
            Fields::Json(json) => json.clone(),
            Fields::Delta { kind, index, delta } => {
                let mut map = JsonMap::new();
                map.insert("type".into(), (*kind).into());
                map.insert("contentIndex".into(), (*index).into());
                map.insert("delta".into(), delta.as_str().into());
                Json::Object(map)
            }
        };
        let filled = match self.from_partial {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{json, to_string};

    fn text(snapshot: &PartialSnapshot) -> String {
        let mut out = String::new();
        snapshot.write_text(&mut out);
        out
    }

    /// The fields' cached text follows every change, and an older snapshot keeps the text of its
    /// own moment; blocks with live fields (text, parsed arguments) and extra fields render as
    /// their JSON does.
    #[test]
    fn written_text_follows_changes_and_snapshots_keep_theirs() {
        let map = json!({"role": "assistant", "content": [], "api": "a", "usage": {"input": 1}});
        let mut partial = Partial::from_map(map.as_object().unwrap().clone());
        partial.place_block(
            0,
            json!({"type": "text", "text": ""})
                .as_object()
                .unwrap()
                .clone(),
        );
        partial.append_text(0, "text", "he said \"hi\"\n");
        let before = partial.snapshot();
        assert_eq!(text(&before), to_string(&before.to_json()));

        partial.set_field("usage", json!({"input": 2}));
        partial.set_field("stopReason", json!("stop"));
        partial.append_text(0, "text", "é");
        partial.place_block(
            1,
            json!({"type": "toolCall", "id": "c", "name": "t", "arguments": {}})
                .as_object()
                .unwrap()
                .clone(),
        );
        partial.set_arguments(1, SharedValue::empty_object());
        partial.set_block_field(0, "signature", json!("s"));
        let after = partial.snapshot();
        assert_eq!(text(&after), to_string(&after.to_json()));
        assert!(text(&after).contains(r#""usage":{"input":2}"#));
        assert!(text(&after).contains(r#""stopReason":"stop""#));
        assert!(
            text(&before).contains(r#""usage":{"input":1}"#),
            "{}",
            text(&before)
        );
        assert_eq!(text(&before), to_string(&before.to_json()));

        // A partial without content renders its fields alone.
        let bare = Partial::from_map(json!({"role": "assistant"}).as_object().unwrap().clone());
        assert_eq!(text(&bare.snapshot()), r#"{"role":"assistant"}"#);
    }
}

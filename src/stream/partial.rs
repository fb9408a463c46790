//! The streaming partial message as a persistent value (ARCHITECTURE principle 5): a snapshot per
//! event costs O(1) and allocates nothing, and each delta-form update costs O(its own size)
//! amortized (plus O(log n) in the number of blocks), so streaming N events costs O(N) in total
//! whatever their kind. JSON is built only when someone asks for it.
//!
//! - A partial is a *frozen* part shared with its snapshots (behind one `Arc`) plus the live
//!   value of the block being streamed (`hot`). A delta changes only `hot` (an append to a shared
//!   text, or the argument stream's latest value), so a snapshot is the frozen part's `Arc` and
//!   a clone of `hot`: two reference counts, never a copy.
//! - The frozen part holds the message's fields other than `content` in a copy-on-write map
//!   (only `start`, a full-form event or `done`/`error` change them) and `content` as a
//!   persistent vector of blocks (`imbl::Vector`: O(1) clone, O(log n) update), so a new or
//!   changed block does not copy the others.
//! - A block is its JSON behind an `Arc` plus at most one *live* field streamed by deltas (`text`,
//!   `thinking` or `arguments`), kept out of the JSON as a [`SharedValue`]: an append-only text or
//!   the argument stream's latest parsed value, both O(1) to clone. The block JSON holds a `null`
//!   placeholder at the live field's key, so the key keeps its position. The hot block's live
//!   value is `hot`'s, which overrides the one stored in the frozen block.

use crate::json::Field;
use std::sync::{Arc, OnceLock};

use imbl::Vector;

use crate::json::shared::{SharedText, SharedValue};
use crate::json::{set_key, write_json, write_object_with, Json, JsonMap};

/// One content block of the frozen part.
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
            None => self.json.field("type").and_then(Json::as_str) == Some(kind),
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

/// A block as a reader sees it: its JSON and its live field (the hot value for the hot block).
#[derive(Clone, Copy)]
struct BlockView<'a> {
    json: &'a Json,
    live: Option<(&'static str, &'a SharedValue)>,
}

impl BlockView<'_> {
    fn to_json(self) -> Json {
        let mut json = self.json.clone();
        if let (Some((field, value)), Json::Object(map)) = (self.live, &mut json) {
            set_key(map, field, value.to_json());
        }
        json
    }

    /// Appends the text of `to_json()` without building it.
    fn write_text(self, out: &mut String) {
        match (self.live, self.json) {
            (Some((field, value)), Json::Object(map)) => {
                write_object_with(out, map, field, |out| value.write_text(out))
            }
            _ => write_json(out, self.json),
        }
    }

    /// The value of `field` (O(size of that field)).
    fn field(self, field: &str) -> Option<Json> {
        match self.live {
            Some((live, value)) if live == field => Some(value.to_json()),
            _ => self.json.get(field).cloned(),
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
        Self::from_type(block.field("type")?.as_str()?)
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

/// Whether two live-field names are the same: they are the literals `text`, `thinking` and
/// `arguments`, so nearly always the same address (checked first: a delta costs no `memcmp`).
fn same_field(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// The live value of the block being streamed: deltas change only this.
#[derive(Debug, Clone)]
struct Hot {
    index: usize,
    field: &'static str,
    value: SharedValue,
    /// The block's streamed kind: every change to a block other than its live field stores the
    /// hot value first, so while hot the block keeps this kind (a delta reads it here, not from
    /// the vector).
    kind: Option<BlockKind>,
}

/// What a partial shares with its snapshots: the message's fields and its content blocks
/// (`None` when the message has no `content` array).
#[derive(Debug, Clone, Default)]
struct Frozen {
    fields: Arc<MessageFields>,
    content: Option<Vector<Block>>,
}

/// The partial message being assembled; a clone is a snapshot (O(1), no allocation).
#[derive(Debug, Clone, Default)]
pub struct Partial {
    frozen: Arc<Frozen>,
    hot: Option<Hot>,
}

/// The message's fields (with a placeholder at `content`), and their text around `content`:
/// rendered by the first full-shape event after a change and reused while they stay the same
/// (only `start`, full-form events and the end change them).
#[derive(Debug, Default)]
struct MessageFields {
    json: JsonMap,
    text: OnceLock<(String, String)>,
}

impl Clone for MessageFields {
    /// A copy is made to be changed (`Arc::make_mut`): the text it would copy is stale then.
    fn clone(&self) -> Self {
        MessageFields {
            json: self.json.clone(),
            text: OnceLock::new(),
        }
    }
}

impl Partial {
    /// A partial holding `map` (O(number of blocks)).
    pub fn from_map(mut map: JsonMap) -> Self {
        let content = match map.get_mut("content") {
            Some(Json::Array(blocks)) => {
                let blocks = std::mem::take(blocks);
                Some(blocks.into_iter().map(Block::new).collect())
            }
            _ => None,
        };
        let fields = Arc::new(MessageFields {
            json: map,
            text: OnceLock::new(),
        });
        Partial {
            frozen: Arc::new(Frozen { fields, content }),
            hot: None,
        }
    }

    /// The frozen part for a change (copied if a snapshot shares it: O(1) but the fields' `Arc`
    /// and the vector's root).
    fn frozen_mut(&mut self) -> &mut Frozen {
        Arc::make_mut(&mut self.frozen)
    }

    /// The message's fields for a change (copied if shared; their cached text is dropped).
    fn fields_mut(&mut self) -> &mut JsonMap {
        let fields = Arc::make_mut(&mut self.frozen_mut().fields);
        fields.text = OnceLock::new();
        &mut fields.json
    }

    /// P.content, made an array if the message had none (or not an array).
    fn content_mut(&mut self) -> &mut Vector<Block> {
        if self.frozen.content.is_none() {
            set_key(self.fields_mut(), "content", Json::Array(Vec::new()));
        }
        self.frozen_mut().content.get_or_insert_with(Vector::new)
    }

    fn stored_block(&self, index: usize) -> Option<&Block> {
        self.frozen.content.as_ref()?.get(index)
    }

    /// Block `index` as readers see it.
    fn block(&self, index: usize) -> Option<BlockView<'_>> {
        let block = self.stored_block(index)?;
        let live = match &self.hot {
            Some(hot) if hot.index == index => Some((hot.field, &hot.value)),
            _ => block.live.as_ref().map(|(field, value)| (*field, value)),
        };
        Some(BlockView {
            json: &block.json,
            live,
        })
    }

    /// Stores the hot value in its block: the next change may touch any block.
    fn flush_hot(&mut self) {
        if let Some(hot) = self.hot.take() {
            if let Some(block) = self
                .frozen_mut()
                .content
                .as_mut()
                .and_then(|c| c.get_mut(hot.index))
            {
                block.live = Some((hot.field, hot.value));
            }
        }
    }

    /// Makes `value` the live `field` of block `index` (nothing when there is no such block):
    /// O(1) when that block and field are hot already.
    fn set_hot(&mut self, index: usize, field: &'static str, value: SharedValue) {
        if let Some(hot) = self
            .hot
            .as_mut()
            .filter(|h| h.index == index && same_field(h.field, field))
        {
            hot.value = value;
            return;
        }
        let Some(kind) = self.stored_block(index).map(|block| block.kind) else {
            return;
        };
        self.flush_hot();
        if let Some(block) = self.frozen_block_mut(index) {
            // The frozen block gets the placeholder at the field's key; `hot` has the value.
            block.set_live(field, value.clone());
        }
        self.hot = Some(Hot {
            index,
            field,
            value,
            kind,
        });
    }

    /// Changes block `index` with `change` (nothing when there is no such block).
    fn update(&mut self, index: usize, change: impl FnOnce(&mut Block)) {
        self.flush_hot();
        if let Some(block) = self.frozen_block_mut(index) {
            change(block);
        }
    }

    /// Block `index` of the frozen part, made unique to this snapshot.
    fn frozen_block_mut(&mut self, index: usize) -> Option<&mut Block> {
        self.frozen_mut()
            .content
            .as_mut()
            .and_then(|c| c.get_mut(index))
    }

    /// Number of blocks (0 when `content` is not an array).
    pub fn block_count(&self) -> usize {
        self.frozen.content.as_ref().map_or(0, Vector::len)
    }

    /// Whether block `index` is an object of type `kind`.
    pub fn block_is(&self, index: usize, kind: &str) -> bool {
        self.stored_block(index).is_some_and(|b| b.is(kind))
    }

    /// The streamed kind of block `index`, if it is one.
    pub fn block_kind(&self, index: usize) -> Option<BlockKind> {
        match &self.hot {
            Some(hot) if hot.index == index => hot.kind,
            _ => self.stored_block(index)?.kind,
        }
    }

    /// `P.content[index] = block`, padding with `null` up to `index` (the content array is
    /// created if needed).
    pub fn place_block(&mut self, index: usize, block: JsonMap) {
        self.flush_hot();
        let content = self.content_mut();
        let block = Block::new(Json::Object(block));
        if let Some(slot) = content.get_mut(index) {
            *slot = block;
        } else {
            while content.len() < index {
                content.push_back(Block::new(Json::Null));
            }
            content.push_back(block);
        }
    }

    /// Appends `delta` to the text of block `index` when it is the hot block, of `kind`, and
    /// its live value is a text: a delta's usual case, decided without looking into the vector.
    /// False (nothing changed) otherwise.
    #[inline]
    pub fn append_to_hot_text(&mut self, kind: BlockKind, index: usize, delta: &str) -> bool {
        match &mut self.hot {
            Some(Hot {
                index: hot_index,
                kind: Some(hot_kind),
                field,
                value: SharedValue::String(text),
            }) if *hot_index == index
                && *hot_kind == kind
                && same_field(field, kind.block_type()) =>
            {
                text.push_str(delta);
                true
            }
            _ => false,
        }
    }

    /// Appends to block `index`'s text `field` (amortized O(len(delta))).
    #[inline]
    pub fn append_text(&mut self, index: usize, field: &'static str, delta: &str) {
        if let Some(Hot {
            value: SharedValue::String(text),
            ..
        }) = self
            .hot
            .as_mut()
            .filter(|h| h.index == index && same_field(h.field, field))
        {
            text.push_str(delta);
            return;
        }
        let Some(block) = self.block(index) else {
            return;
        };
        let mut text = match block.live {
            Some((live, SharedValue::String(text))) if live == field => text.clone(),
            _ => SharedText::new(block.json.get(field).and_then(Json::as_str).unwrap_or("")),
        };
        text.push_str(delta);
        self.set_hot(index, field, SharedValue::String(text));
    }

    /// Replaces block `index`'s text `field`.
    pub fn set_text(&mut self, index: usize, field: &'static str, value: &str) {
        self.set_hot(index, field, SharedValue::String(SharedText::new(value)));
    }

    /// Sets block `index`'s `arguments` to the argument stream's latest value (O(1)).
    pub fn set_arguments(&mut self, index: usize, arguments: SharedValue) {
        self.set_hot(index, "arguments", arguments);
    }

    /// Sets the message's top-level `key` (O(number of top-level fields)).
    pub fn set_field(&mut self, key: &str, value: Json) {
        if key == "content" {
            return;
        }
        set_key(self.fields_mut(), key, value);
    }

    /// Sets `key` of block `index`.
    pub fn set_block_field(&mut self, index: usize, key: &str, value: Json) {
        self.update(index, |block| block.set(key, value));
    }

    /// A snapshot of the message as it is now (O(1), no allocation).
    pub fn snapshot(&self) -> PartialSnapshot {
        PartialSnapshot(self.clone())
    }

    /// The message as JSON now.
    pub fn to_json(&self) -> Json {
        let mut map = self.frozen.fields.json.clone();
        if self.frozen.content.is_some() {
            let blocks = self.blocks().map(BlockView::to_json).collect();
            set_key(&mut map, "content", Json::Array(blocks));
        }
        Json::Object(map)
    }

    fn blocks(&self) -> impl Iterator<Item = BlockView<'_>> {
        (0..self.block_count()).filter_map(|i| self.block(i))
    }
}

/// The partial message at one event; immutable, O(1) to clone.
#[derive(Debug)]
pub struct PartialSnapshot(Partial);

impl Clone for PartialSnapshot {
    fn clone(&self) -> Self {
        PartialSnapshot(self.0.clone())
    }

    /// Shares what it already shares with `source` (see [`PartialSnapshot::assign`]).
    #[inline(always)]
    fn clone_from(&mut self, source: &Self) {
        self.assign(&source.0)
    }
}

impl PartialSnapshot {
    /// Becomes a snapshot of `partial` now, sharing what it already shares with it: consecutive
    /// snapshots of a stream differ in their hot value's length only (no reference counts
    /// change, nothing is dropped). Inlined: it runs twice per delta (the event and the state).
    #[inline(always)]
    pub fn assign(&mut self, partial: &Partial) {
        match (&mut self.0.hot, &partial.hot) {
            (Some(hot), Some(from)) if Arc::ptr_eq(&self.0.frozen, &partial.frozen) => {
                // Field by field: the value keeps its buffer when it is the same text's.
                hot.index = from.index;
                hot.field = from.field;
                hot.kind = from.kind;
                hot.value.clone_from(&from.value);
            }
            _ => self.assign_parts(partial),
        }
    }

    /// `assign` when the frozen part or the hot block's presence changed.
    #[cold]
    #[inline(never)]
    fn assign_parts(&mut self, partial: &Partial) {
        if !Arc::ptr_eq(&self.0.frozen, &partial.frozen) {
            self.0.frozen = partial.frozen.clone();
        }
        match (&mut self.0.hot, &partial.hot) {
            (Some(hot), Some(from)) => hot.clone_from(from),
            (hot, from) => *hot = from.clone(),
        }
    }

    /// Builds the message JSON (O(message size)).
    pub fn to_json(&self) -> Json {
        self.0.to_json()
    }

    /// Appends the text of `to_json()` (O(message size)) without building the JSON.
    pub fn write_text(&self, out: &mut String) {
        let fields = &self.0.frozen.fields;
        if self.0.frozen.content.is_none() {
            return write_json(out, &Json::Object(fields.json.clone()));
        }
        let (before, after) = fields.text.get_or_init(|| {
            let mut text = String::new();
            let mut cut = 0;
            write_object_with(&mut text, &fields.json, "content", |out| cut = out.len());
            let after = text.split_off(cut);
            (text, after)
        });
        out.push_str(before);
        out.push('[');
        for (i, block) in self.0.blocks().enumerate() {
            if i > 0 {
                out.push(',');
            }
            block.write_text(out);
        }
        out.push(']');
        out.push_str(after);
    }

    /// The message's top-level `key`, other than `content` (O(number of fields)).
    pub fn field(&self, key: &str) -> Option<&Json> {
        match key {
            "content" => None,
            _ => crate::json::map_field(&self.0.frozen.fields.json, key),
        }
    }

    /// Field `field` of block `index` (O(size of that field)).
    pub fn block_field(&self, index: usize, field: &str) -> Option<Json> {
        self.0.block(index)?.field(field)
    }

    /// Block `index` (O(size of the block)).
    pub fn block_json(&self, index: usize) -> Option<Json> {
        Some(self.0.block(index)?.to_json())
    }
}

impl PartialEq for PartialSnapshot {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
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

    /// A snapshot assigned from a later one (`clone_from`, as the agent's state slot is at each
    /// delta) reads exactly as that one, whatever changed between them, and an older snapshot
    /// it was cloned from keeps its own moment.
    #[test]
    fn a_snapshot_assigned_from_a_later_one_reads_as_it() {
        let map = json!({"role": "assistant", "content": [], "api": "a"});
        let mut partial = Partial::from_map(map.as_object().unwrap().clone());
        let block = |json: Json| json.as_object().unwrap().clone();
        let mut slot = partial.snapshot();
        let (mut snapshots, mut moments) = (vec![slot.clone()], vec![text(&slot)]);
        type Step<'a> = Box<dyn Fn(&mut Partial) + 'a>;
        let steps: Vec<Step> = vec![
            Box::new(|p| p.place_block(0, block(json!({"type": "text", "text": ""})))),
            Box::new(|p| p.append_text(0, "text", "one ")),
            Box::new(|p| p.append_text(0, "text", "two ")),
            Box::new(|p| p.set_field("usage", json!({"input": 2}))),
            Box::new(|p| p.append_text(0, "text", "three")),
            Box::new(|p| p.place_block(1, block(json!({"type": "thinking", "thinking": ""})))),
            Box::new(|p| p.append_text(1, "thinking", "hm")),
            Box::new(|p| p.append_text(0, "text", " four")),
            Box::new(|p| p.set_text(0, "text", "replaced")),
            Box::new(|p| {
                p.place_block(
                    2,
                    block(json!({"type": "toolCall", "id": "c", "arguments": {}})),
                )
            }),
            Box::new(|p| p.set_arguments(2, SharedValue::empty_object())),
            Box::new(|p| p.append_text(1, "thinking", "m")),
        ];
        for step in steps {
            step(&mut partial);
            let now = partial.snapshot();
            slot.clone_from(&now);
            assert_eq!(slot.to_json(), now.to_json());
            assert_eq!(text(&slot), text(&now));
            snapshots.push(slot.clone());
            moments.push(text(&now));
        }
        // Every kept copy still reads as the moment it was taken at.
        let texts: Vec<String> = snapshots.iter().map(text).collect();
        assert_eq!(texts, moments);
        assert!(texts[2].contains("one ") && !texts[2].contains("two"));
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

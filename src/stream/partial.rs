//! The streaming partial message as a persistent value: taking a snapshot per event costs
//! O(number of text blocks), not O(message size), so streaming N deltas costs O(N) in total
//! (ARCHITECTURE principle 5). JSON is built only when someone asks for it.
//!
//! Text and thinking blocks keep their text out of the message map, in an append-only buffer
//! shared with the snapshots (each snapshot remembers the length it saw); the map holds an empty
//! placeholder so the key keeps its position. Everything else lives in a copy-on-write map.

use std::sync::{Arc, RwLock};

use crate::json::{Json, JsonMap};

/// An append-only text shared by the partial being built and its snapshots.
#[derive(Debug, Clone, Default)]
struct SharedText(Arc<RwLock<String>>);

impl SharedText {
    fn new(text: &str) -> Self {
        SharedText(Arc::new(RwLock::new(text.to_string())))
    }

    fn push(&self, delta: &str) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push_str(delta);
    }

    fn len(&self) -> usize {
        self.0.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The first `len` bytes (always a char boundary: only whole strings are appended).
    fn prefix(&self, len: usize) -> String {
        let text = self.0.read().unwrap_or_else(|e| e.into_inner());
        text.get(..len).unwrap_or(&text).to_string()
    }
}

/// An externalised text field: block `index`'s `field` lives in `text`.
#[derive(Debug, Clone)]
struct TextCell {
    index: usize,
    field: String,
    text: SharedText,
}

/// The partial message being assembled.
#[derive(Debug, Clone, Default)]
pub struct Partial {
    /// The message with empty placeholders where externalised texts go.
    map: Arc<JsonMap>,
    cells: Vec<TextCell>,
}

impl Partial {
    /// A partial holding `map` (texts inline).
    pub fn from_map(map: JsonMap) -> Self {
        Partial {
            map: Arc::new(map),
            cells: Vec::new(),
        }
    }

    /// The message map for changes other than text appends (texts of externalised fields read
    /// as placeholders there; use `text`/`set_text` for them).
    pub fn map_mut(&mut self) -> &mut JsonMap {
        Arc::make_mut(&mut self.map)
    }

    pub fn map(&self) -> &JsonMap {
        &self.map
    }

    fn cell(&self, index: usize, field: &str) -> Option<&TextCell> {
        self.cells
            .iter()
            .find(|c| c.index == index && c.field == field)
    }

    /// Forgets externalised texts of block `index` (the block is being replaced).
    pub fn reset_block(&mut self, index: usize) {
        self.cells.retain(|c| c.index != index);
    }

    /// The current text of block `index`'s `field` (a string field), if any.
    pub fn text(&self, index: usize, field: &str) -> Option<String> {
        if let Some(cell) = self.cell(index, field) {
            return Some(cell.text.prefix(cell.text.len()));
        }
        self.block(index)?.get(field)?.as_str().map(String::from)
    }

    fn block(&self, index: usize) -> Option<&JsonMap> {
        self.map.get("content")?.as_array()?.get(index)?.as_object()
    }

    /// Appends to block `index`'s text `field`, externalising it on first use.
    pub fn append_text(&mut self, index: usize, field: &str, delta: &str) {
        if let Some(cell) = self.cell(index, field) {
            cell.text.push(delta);
            return;
        }
        let current = self.text(index, field).unwrap_or_default();
        let text = SharedText::new(&current);
        text.push(delta);
        self.set_placeholder(index, field);
        self.cells.push(TextCell {
            index,
            field: field.to_string(),
            text,
        });
    }

    /// Replaces block `index`'s text `field`.
    pub fn set_text(&mut self, index: usize, field: &str, value: &str) {
        self.cells
            .retain(|c| !(c.index == index && c.field == field));
        self.set_placeholder(index, field);
        self.cells.push(TextCell {
            index,
            field: field.to_string(),
            text: SharedText::new(value),
        });
    }

    fn set_placeholder(&mut self, index: usize, field: &str) {
        let map = Arc::make_mut(&mut self.map);
        let block = map
            .get_mut("content")
            .and_then(Json::as_array_mut)
            .and_then(|content| content.get_mut(index))
            .and_then(Json::as_object_mut);
        if let Some(block) = block {
            crate::json::set_key(block, field, Json::String(String::new()));
        }
    }

    /// A snapshot of the message as it is now.
    pub fn snapshot(&self) -> PartialSnapshot {
        let texts = self
            .cells
            .iter()
            .map(|c| (c.clone(), c.text.len()))
            .collect();
        PartialSnapshot {
            map: self.map.clone(),
            texts: Arc::new(texts),
        }
    }

    /// The message as JSON now.
    pub fn to_json(&self) -> Json {
        self.snapshot().to_json()
    }
}

/// The partial message at one event; immutable, cheap to clone.
#[derive(Debug, Clone)]
pub struct PartialSnapshot {
    map: Arc<JsonMap>,
    texts: Arc<Vec<(TextCell, usize)>>,
}

impl PartialSnapshot {
    /// Builds the message JSON (O(message size)).
    pub fn to_json(&self) -> Json {
        let mut map = (*self.map).clone();
        let content = map.get_mut("content").and_then(Json::as_array_mut);
        if let Some(content) = content {
            for (cell, len) in self.texts.iter() {
                if let Some(Json::Object(block)) = content.get_mut(cell.index) {
                    crate::json::set_key(block, &cell.field, Json::String(cell.text.prefix(*len)));
                }
            }
        }
        Json::Object(map)
    }

    /// The `arguments` of tool-call block `index` (never externalised, so no copy of texts).
    pub fn block_field(&self, index: usize, field: &str) -> Option<&Json> {
        self.map.get("content")?.as_array()?.get(index)?.get(field)
    }
}

impl PartialEq for PartialSnapshot {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
    }
}

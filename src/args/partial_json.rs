//! The incremental tolerant JSON parser and the argument stream of SPEC §3.8.

pub mod parser;

pub use parser::PartialJsonParser;

use super::parse::{parse_tool_call_arguments, ParsedArguments};
use crate::json::shared::SharedValue;

/// Streams one tool call's raw argument text and yields best-effort partial arguments.
///
/// `lastArguments` of §3.8.1 is not stored separately: it always equals the parser's current
/// snapshot when that is an object, else `{}`. (The root is placed at most once, so once a
/// snapshot is an object every later snapshot is one too, and a non-object snapshot can only
/// follow non-object ones.)
#[derive(Debug, Default)]
pub struct ArgumentStream {
    text: String,
    parser: PartialJsonParser,
}

impl ArgumentStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a delta and returns the current partial arguments (always an object). Amortized
    /// O(len(delta)): the value shares everything with the previous ones (`to_json` builds JSON).
    pub fn append(&mut self, delta: &str) -> SharedValue {
        self.text.push_str(delta);
        self.parser.append(delta);
        match self.parser.snapshot() {
            Some(value @ SharedValue::Object(_)) => value.clone(),
            _ => SharedValue::empty_object(),
        }
    }

    /// Replaces the text with `full_text` (the reference's optional `replace`): appends the
    /// missing suffix when `full_text` extends the current text, otherwise starts over.
    pub fn replace(&mut self, full_text: &str) -> SharedValue {
        if let Some(suffix) = full_text.strip_prefix(self.text.as_str()) {
            let suffix = suffix.to_string();
            return self.append(&suffix);
        }
        *self = Self::new();
        self.append(full_text)
    }

    /// The raw argument text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The final parse of the complete text (SPEC §3.9).
    pub fn finish(&self) -> ParsedArguments {
        parse_tool_call_arguments(&self.text)
    }
}

//! The incremental tolerant JSON parser and the argument stream of SPEC §3.8.

use super::parse::ParsedArguments;
use crate::json::Json;

/// Streams one tool call's raw argument text and yields best-effort partial arguments.
#[derive(Debug, Default)]
pub struct ArgumentStream {}

impl ArgumentStream {
    pub fn new() -> Self {
        Self {}
    }

    /// Appends a delta and returns the current partial arguments (always a JSON object).
    pub fn append(&mut self, delta: &str) -> Json {
        let _ = delta;
        todo!("SPEC §3.8.1")
    }

    /// The final parse of the complete text (SPEC §3.9).
    pub fn finish(&self) -> ParsedArguments {
        todo!("SPEC §3.9")
    }
}

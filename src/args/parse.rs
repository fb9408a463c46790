//! The final argument parse (`parseToolCallArguments`) and `repairJson` of SPEC §3.9.

use crate::json::Json;

/// Result of the final parse: `arguments` is `{}` whenever `error` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedArguments {
    pub arguments: Json,
    /// The full `argumentsError` text (`<description>\n\nReceived arguments:\n<text>`).
    pub error: Option<String>,
}

/// Parses the complete raw argument text of a tool call (SPEC §3.9).
pub fn parse_tool_call_arguments(text: &str) -> ParsedArguments {
    let _ = text;
    todo!("SPEC §3.9")
}

/// `repairJson` of SPEC §3.9.
pub fn repair_json(text: &str) -> String {
    let _ = text;
    todo!("SPEC §3.9")
}

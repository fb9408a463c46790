//! Tool-argument handling (SPEC §3.8, §3.9, §5): streamed partial JSON, the final parse and
//! repair, coercion, and JSON Schema validation with the reference's error texts.

pub mod coerce;
pub mod parse;
pub mod partial_json;
pub mod schema;

pub use parse::{parse_tool_call_arguments, repair_json, ParsedArguments};
pub use partial_json::ArgumentStream;

use crate::json::Json;

/// Validates a (prepared) tool call against a tool's `parameters` (SPEC §5.3–§5.7).
///
/// `tool_call` is the call after `prepareArguments`: `{ id, name, arguments, argumentsError? }`.
/// Returns the coerced arguments on success, or the exact failure text (`Invalid arguments for
/// tool ...`, `Validation failed for tool ...`, `A schema must be an object or a boolean, got ...`).
pub fn validate_tool_arguments(tool_name: &str, parameters: &Json, tool_call: &Json) -> Result<Json, String> {
    // Placeholder until the validator lands: only the argumentsError short-circuit.
    let _ = parameters;
    if let Some(error) = tool_call.get("argumentsError").and_then(Json::as_str).filter(|e| !e.is_empty()) {
        return Err(format!("Invalid arguments for tool \"{tool_name}\": {error}"));
    }
    Ok(tool_call.get("arguments").cloned().unwrap_or(Json::Null))
}

//! Tool-argument handling (SPEC §3.8, §3.9, §5): streamed partial JSON, the final parse and
//! repair, coercion, and JSON Schema validation with the reference's error texts.

pub mod coerce;
pub mod parse;
pub mod partial_json;
pub mod schema;

pub use parse::{parse_tool_call_arguments, repair_json, ParsedArguments};
pub use partial_json::ArgumentStream;

mod schema_cache;

use std::sync::Arc;

use crate::json::Json;

/// Validates a (prepared) tool call against a tool's `parameters` (SPEC §5.3–§5.7).
///
/// `tool_call` is the call after `prepareArguments`: `{ id, name, arguments, argumentsError? }`.
/// Returns the coerced arguments on success, or the exact failure text (`Invalid arguments for
/// tool ...`, `Validation failed for tool ...`, `A schema must be an object or a boolean, got ...`).
/// An invalid `pattern` makes the schema uncompilable: the failure text is the compile error.
pub fn validate_tool_arguments(
    tool_name: &str,
    parameters: &Json,
    tool_call: &Json,
) -> Result<Json, String> {
    validate_with(tool_name, tool_call, |arguments| {
        validate_arguments(
            tool_name,
            parameters,
            schema::Compiled::new(parameters)?,
            arguments,
        )
    })
}

/// `validate_tool_arguments` against the `parameters` of a tool `definition`, whose compiled
/// schema is kept for the definition's lifetime (a definition never changes behind its `Arc`).
pub fn validate_tool_call(
    tool_name: &str,
    definition: &Arc<Json>,
    tool_call: &Json,
) -> Result<Json, String> {
    let parameters = definition.get("parameters").unwrap_or(&Json::Null);
    validate_with(tool_name, tool_call, |arguments| {
        let compiled = schema_cache::compiled(definition, parameters)?;
        validate_arguments(tool_name, parameters, compiled, arguments)
    })
}

/// The `argumentsError` check, then `validate` on the arguments, guarded against panics.
fn validate_with(
    tool_name: &str,
    tool_call: &Json,
    validate: impl FnOnce(&Json) -> Result<Json, String>,
) -> Result<Json, String> {
    if let Some(Json::String(error)) = tool_call.get("argumentsError") {
        if !error.is_empty() {
            return Err(format!(
                "Invalid arguments for tool \"{tool_name}\": {error}"
            ));
        }
    }
    let arguments = tool_call
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| Json::Object(Default::default()));
    // Schemas and arguments are untrusted: a panic inside a dependency must not escape.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| validate(&arguments))).unwrap_or_else(
        |_| {
            Err(format!(
                "Validation failed for tool \"{tool_name}\": internal error"
            ))
        },
    )
}

fn validate_arguments(
    tool_name: &str,
    parameters: &Json,
    compiled: impl Into<Arc<schema::Compiled>>,
    arguments: &Json,
) -> Result<Json, String> {
    let schema = schema::Schema::with_compiled(parameters, compiled.into());
    let coerced = coerce::coerce(&schema, arguments);
    if schema.is_valid(&coerced) {
        return Ok(coerced);
    }
    let lines: Vec<String> = schema::explain(&schema, &coerced)
        .iter()
        .map(|e| format!("  - {}: {}", schema::format_path(&e.path), e.message))
        .collect();
    Err(format!(
        "Validation failed for tool \"{tool_name}\":\n{}\n\nReceived arguments:\n{}",
        lines.join("\n"),
        crate::json::to_string_pretty(arguments)
    ))
}

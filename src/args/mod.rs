//! Tool-argument handling (SPEC §3.8, §3.9, §5): streamed partial JSON, the final parse and
//! repair, coercion, and JSON Schema validation with the reference's error texts.

pub mod coerce;
pub mod parse;
pub mod partial_json;
pub mod schema;

pub use parse::{parse_tool_call_arguments, repair_json, ParsedArguments};
pub use partial_json::ArgumentStream;

mod schema_cache;

use crate::json::Field;
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
    let parameters = definition.field("parameters").unwrap_or(&Json::Null);
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
    if let Some(Json::String(error)) = tool_call.field("argumentsError") {
        if !error.is_empty() {
            return Err(format!(
                "Invalid arguments for tool \"{tool_name}\": {error}"
            ));
        }
    }
    // Borrowed: `validate` copies the arguments it returns (once), not this.
    let absent = Json::Object(Default::default());
    let arguments = tool_call.field("arguments").unwrap_or(&absent);
    // Schemas and arguments are untrusted: a panic inside a dependency must not escape.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| validate(arguments))).unwrap_or_else(
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
    let compiled = compiled.into();
    // Most calls are valid already; for a flat schema coercing those changes nothing.
    let flat = compiled.is_flat();
    let schema = schema::Schema::with_compiled(parameters, compiled);
    if flat && schema.is_valid(arguments) {
        return Ok(arguments.clone());
    }
    coerce_and_validate(tool_name, &schema, arguments)
}

/// The coercion passes, then validation (SPEC §5.4, §5.5).
fn coerce_and_validate(
    tool_name: &str,
    schema: &schema::Schema<'_>,
    arguments: &Json,
) -> Result<Json, String> {
    let coerced = coerce::coerce(schema, arguments);
    if schema.is_valid(&coerced) {
        return Ok(coerced);
    }
    let lines: Vec<String> = schema::explain(schema, &coerced)
        .iter()
        .map(|e| format!("  - {}: {}", schema::format_path(&e.path), e.message))
        .collect();
    Err(format!(
        "Validation failed for tool \"{tool_name}\":\n{}\n\nReceived arguments:\n{}",
        lines.join("\n"),
        crate::json::to_string_pretty(arguments)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{json, to_string};

    fn flat_schemas() -> Vec<Json> {
        vec![
            json!({"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"]}),
            json!({"type": "object", "description": "adds", "properties": {
                "a": {"type": "number", "description": "first"}, "b": {"type": "integer"},
                "c": {"type": "boolean", "title": "flag"}}, "required": ["a"],
                "additionalProperties": false}),
            json!({"type": "object", "properties": {}, "additionalProperties": true}),
        ]
    }

    fn values() -> Vec<Json> {
        let mut values = vec![
            json!({}),
            json!(null),
            json!([1]),
            json!("x"),
            json!({"text": "hello", "extra": null, "n": [1, {"b": 2}]}),
        ];
        let samples = [
            json!("hi"),
            json!("12"),
            json!("1.5"),
            json!(""),
            json!("true"),
            json!(3),
            json!(2.5),
            json!(-0.0),
            json!(true),
            json!(false),
            json!(null),
            json!([]),
            json!(["7"]),
            json!({"k": 1}),
        ];
        for key in ["text", "a", "b", "c"] {
            for sample in &samples {
                values.push(json!({ key: sample.clone() }));
                values.push(json!({ key: sample.clone(), "text": "t", "a": 1, "z": null }));
                values.push(json!({ "a": 1, key: sample.clone() }));
            }
        }
        values
    }

    #[test]
    fn flat_schemas_are_told_apart_from_those_whose_coercion_may_change_a_valid_value() {
        for schema in flat_schemas() {
            assert!(
                schema::Compiled::new(&schema).unwrap().is_flat(),
                "{schema}"
            );
        }
        for schema in [
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "number"},
                {"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": {"type": ["number", "string"]}}}),
            json!({"type": "object", "properties": {"a": {"type": "number", "default": 1}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}),
            json!({"type": "object", "properties": {"a": {"type": "object"}}}),
            json!({"type": "object", "properties": {"a": {"description": "any"}}}),
            json!({"type": "object", "additionalProperties": {"type": "number"}}),
            json!({"properties": {"a": {"type": "string"}}}),
            json!({"type": "array"}),
            json!(true),
        ] {
            assert!(
                !schema::Compiled::new(&schema).unwrap().is_flat(),
                "{schema}"
            );
        }
    }

    /// The shortcut's premise, checked pass by pass: under a flat schema, coercing a value the
    /// schema accepts gives that value back, key order included; and the outcome (value or error
    /// text) with the shortcut is the outcome of coercing then validating.
    #[test]
    fn a_valid_value_of_a_flat_schema_comes_back_unchanged() {
        let mut valid = 0;
        for parameters in flat_schemas() {
            let compiled = Arc::new(schema::Compiled::new(&parameters).unwrap());
            let schema = schema::Schema::with_compiled(&parameters, compiled.clone());
            for value in values() {
                if schema.is_valid(&value) {
                    valid += 1;
                    let coerced = coerce::coerce(&schema, &value);
                    assert_eq!(
                        to_string(&coerced),
                        to_string(&value),
                        "{parameters} {value}"
                    );
                }
                let shortcut = validate_arguments("t", &parameters, compiled.clone(), &value);
                let full = coerce_and_validate("t", &schema, &value);
                assert_eq!(
                    shortcut.as_ref().map(to_string),
                    full.as_ref().map(to_string),
                    "{parameters} {value}"
                );
            }
        }
        assert!(valid > 20, "only {valid} valid pairs");
    }

    /// The passes run for everything but a flat schema's valid arguments.
    #[test]
    fn only_a_flat_schemas_valid_arguments_skip_the_coercion_passes() {
        let runs = || coerce::RUNS.with(std::cell::Cell::get);
        let definition = Arc::new(json!({"name": "echo", "parameters": flat_schemas()[0]}));
        let call = |arguments: Json| json!({"id": "c", "name": "echo", "arguments": arguments});
        let before = runs();
        assert_eq!(
            validate_tool_call("echo", &definition, &call(json!({"text": "hi"}))).unwrap(),
            json!({"text": "hi"})
        );
        assert_eq!(
            runs(),
            before,
            "valid arguments of a flat schema were coerced"
        );
        // A number where a string is declared needs the passes (it becomes "12").
        assert_eq!(
            validate_tool_call("echo", &definition, &call(json!({"text": 12}))).unwrap(),
            json!({"text": "12"})
        );
        assert_eq!(runs(), before + 1);
        let union = Arc::new(
            json!({"name": "u", "parameters": {"type": "object", "properties":
            {"a": {"anyOf": [{"type": "number"}, {"type": "string"}]}}}}),
        );
        validate_tool_call("u", &union, &call(json!({"a": "1"}))).unwrap();
        assert_eq!(
            runs(),
            before + 2,
            "a union schema's arguments skipped the passes"
        );
    }
}

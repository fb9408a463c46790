//! Tool-argument coercion and JSON Schema validation (src/args, SPEC §5.3–§5.7).
//! Input: `<schema JSON> NUL <arguments JSON>` (no NUL: the whole input is the schema and the
//! arguments are `{}`); texts that are not JSON are skipped (the JSON entry points are fuzzed by
//! `ffi_json`).
//!
//! The engine pieces are called directly, outside the panic guard of `validate_tool_arguments`,
//! so that a panic anywhere in compile/coerce/validate/explain is a finding.
//! Invariants: nothing panics or overflows the stack; the cached path (`validate_tool_call`)
//! and the uncached one agree; an accepted call yields arguments the schema accepts; a
//! rejection carries the reference's text and at least one reason; a set `argumentsError`
//! always wins.
#![no_main]

use std::sync::Arc;

use ::agent::args::schema::{explain, Compiled, Schema};
use ::agent::args::{coerce, validate_tool_arguments, validate_tool_call};
use ::agent::json::{self, json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (schema_bytes, args_bytes) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let (Ok(schema_text), Ok(args_text)) = (
        std::str::from_utf8(schema_bytes),
        std::str::from_utf8(args_bytes),
    ) else {
        return;
    };
    let (Ok(parameters), Ok(arguments)) = (json::parse(schema_text), json::parse(args_text)) else {
        return;
    };

    // The raw engine, unguarded.
    let mut compile_error_text = String::new();
    let compile_error = match Compiled::new(&parameters) {
        Ok(compiled) => Some(compiled),
        Err(error) => {
            compile_error_text = error;
            None
        }
    };
    if let Some(compiled) = compile_error {
        let schema = Schema::with_compiled(&parameters, Arc::new(compiled));
        let coerced = coerce::coerce(&schema, &arguments);
        if !schema.is_valid(&coerced) {
            assert!(!explain(&schema, &coerced).is_empty());
        }
    }

    // The public entry points.
    let call = json!({"id": "c1", "name": "t", "arguments": arguments.clone()});
    let uncached = validate_tool_arguments("t", &parameters, &call);
    let definition = Arc::new(json!({"name": "t", "parameters": parameters.clone()}));
    let cached = validate_tool_call("t", &definition, &call);
    assert_eq!(uncached, cached, "cached and uncached validation disagree");
    // A second call hits the compiled-schema cache.
    assert_eq!(validate_tool_call("t", &definition, &call), cached);
    match &uncached {
        Ok(coerced) => {
            let schema = Schema::compile(&parameters).expect("an accepting schema compiles");
            assert!(
                schema.is_valid(coerced),
                "accepted arguments fail their schema: {coerced}"
            );
        }
        Err(text) => {
            assert!(
                !text.ends_with(": internal error"),
                "validation panicked inside: {text}"
            );
            if compile_error_text.is_empty() {
                assert!(
                    text.starts_with("Validation failed for tool \"t\":\n  - "),
                    "a rejection without reasons: {text}"
                );
            } else {
                assert_eq!(
                    text, &compile_error_text,
                    "a schema error must be reported as is"
                );
            }
        }
    }

    // `argumentsError` (a failed final parse) always wins over validation.
    let broken = json!({"id": "c1", "name": "t", "arguments": {}, "argumentsError": "bad json"});
    assert_eq!(
        validate_tool_arguments("t", &parameters, &broken),
        Err("Invalid arguments for tool \"t\": bad json".to_string())
    );
});

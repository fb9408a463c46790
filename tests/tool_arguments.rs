//! SPEC §5: tool-argument coercion, JSON Schema validation and the exact error texts.

use agent::args::validate_tool_arguments;
use agent::json::{json, parse, Json};

fn call(arguments: Json) -> Json {
    json!({ "type": "toolCall", "id": "c1", "name": "t", "arguments": arguments })
}

fn run(schema: &Json, arguments: Json) -> Result<Json, String> {
    validate_tool_arguments("t", schema, &call(arguments))
}

/// An object schema with the single property `a`.
fn with_a(property: Json, required: bool) -> Json {
    let required = if required { json!(["a"]) } else { json!([]) };
    json!({ "type": "object", "properties": { "a": property }, "required": required })
}

/// The coerced value of `a`, `None` when the key was dropped; panics on a validation failure.
fn coerced(property: Json, input: Json, required: bool) -> Option<Json> {
    let result = run(&with_a(property, required), json!({ "a": input }));
    match result {
        Ok(Json::Object(map)) => map.get("a").cloned(),
        other => panic!("unexpected result {other:?}"),
    }
}

/// The error lines (between the header and the blank line) of a failed validation.
fn lines(schema: &Json, arguments: Json) -> Vec<String> {
    let message = run(schema, arguments).expect_err("validation should fail");
    let body = message
        .split("\n\nReceived arguments:\n")
        .next()
        .unwrap_or("");
    body.lines()
        .skip(1)
        .map(|l| l.trim_start_matches("  - ").to_string())
        .collect()
}

fn a_error(property: Json, input: Json) -> Vec<String> {
    lines(&with_a(property, false), json!({ "a": input }))
}

// ---- §5.3 argumentsError ----

#[test]
fn c092_arguments_error_short_circuits() {
    let error = "Expected double-quoted property name in JSON at position 8\n\nReceived arguments:\n{\"n\": 1,,}";
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } } });
    let tool_call = json!({ "type": "toolCall", "id": "1", "name": "num", "arguments": { "n": 1 }, "argumentsError": error });
    assert_eq!(
        validate_tool_arguments("num", &schema, &tool_call).unwrap_err(),
        format!("Invalid arguments for tool \"num\": {error}")
    );
    // Even an uncompilable schema is not looked at.
    assert!(validate_tool_arguments("num", &json!("x"), &tool_call)
        .unwrap_err()
        .starts_with("Invalid arguments"));
    // An empty argumentsError does not count.
    let ok = json!({ "type": "toolCall", "id": "1", "name": "num", "arguments": { "n": "1" }, "argumentsError": "" });
    assert_eq!(
        validate_tool_arguments("num", &schema, &ok).unwrap(),
        json!({ "n": 1 })
    );
}

// ---- §5.4 coercion ----

#[test]
fn c094_numeric_strings_coerce_to_numbers() {
    let n = json!({ "type": "number" });
    for (input, out) in [
        (json!("42"), json!(42)),
        (json!(""), json!(0)),
        (json!(" 7 "), json!(7)),
        (json!("0x10"), json!(16)),
        (json!("0b11"), json!(3)),
        (json!("0o17"), json!(15)),
        (json!(".5"), json!(0.5)),
        (json!("5."), json!(5)),
        (json!("+3"), json!(3)),
        (json!("1e3"), json!(1000)),
        (json!("12n"), json!(12)),
        (json!(true), json!(1)),
    ] {
        assert_eq!(
            coerced(n.clone(), input.clone(), false),
            Some(out),
            "{input}"
        );
    }
    assert_eq!(coerced(n.clone(), json!(null), true), Some(json!(0)));
    for (input, got) in [
        (json!("abc"), "string"),
        (json!([1]), "array"),
        (json!("Infinity"), "string"),
        (json!("1,5"), "string"),
        (json!("-0x10"), "string"),
    ] {
        assert_eq!(
            a_error(n.clone(), input),
            vec![format!("a: expected number, got {got}")]
        );
    }
}

#[test]
fn c095_true_false_any_case_coerce_for_number_and_boolean() {
    let n = json!({ "type": "number" });
    assert_eq!(coerced(n.clone(), json!("TRUE"), false), Some(json!(1)));
    assert_eq!(coerced(n.clone(), json!("False"), false), Some(json!(0)));
    let b = json!({ "type": "boolean" });
    assert_eq!(coerced(b.clone(), json!("TRUE"), false), Some(json!(true)));
    assert_eq!(
        coerced(b.clone(), json!("fAlSe"), false),
        Some(json!(false))
    );
    assert_eq!(coerced(b.clone(), json!("1"), false), Some(json!(true)));
    assert_eq!(coerced(b.clone(), json!(0), false), Some(json!(false)));
    assert_eq!(coerced(b.clone(), json!(null), true), Some(json!(false)));
    assert_eq!(
        a_error(b.clone(), json!(2)),
        vec!["a: expected boolean, got integer"]
    );
    assert_eq!(
        a_error(b, json!("yes")),
        vec!["a: expected boolean, got string"]
    );
}

#[test]
fn c096_integers_truncate_toward_zero() {
    let i = json!({ "type": "integer" });
    assert_eq!(coerced(i.clone(), json!("3.5"), false), Some(json!(3)));
    assert_eq!(coerced(i.clone(), json!(-3.5), false), Some(json!(-3)));
    assert_eq!(coerced(i.clone(), json!("1e3"), false), Some(json!(1000)));
    assert_eq!(coerced(i.clone(), json!(3.7), false), Some(json!(3)));
    let big = coerced(i, json!("123456789012345678901234567890"), false).unwrap();
    assert_eq!(agent::json::to_string(&big), "1.2345678901234568e+29");
}

#[test]
fn c097_numbers_and_booleans_coerce_to_strings() {
    let s = json!({ "type": "string" });
    assert_eq!(coerced(s.clone(), json!(5), false), Some(json!("5")));
    assert_eq!(coerced(s.clone(), json!(1.5), false), Some(json!("1.5")));
    assert_eq!(
        coerced(s.clone(), json!(false), false),
        Some(json!("false"))
    );
    assert_eq!(coerced(s.clone(), json!(null), true), Some(json!("null")));
    assert_eq!(
        a_error(s.clone(), json!({})),
        vec!["a: expected string, got object"]
    );
    assert_eq!(
        a_error(s, json!(["x"])),
        vec!["a: expected string, got array"]
    );
}

#[test]
fn null_type_coercions() {
    let n = json!({ "type": "null" });
    assert_eq!(coerced(n.clone(), json!(""), true), Some(json!(null)));
    assert_eq!(coerced(n, json!("NULL"), true), Some(json!(null)));
}

#[test]
fn c098_optional_null_is_dropped_when_rejected() {
    assert_eq!(
        coerced(json!({ "type": "number" }), json!(null), false),
        None
    );
    assert_eq!(
        coerced(json!({ "type": "string" }), json!(null), false),
        None
    );
    let nested = json!({ "type": "object", "properties": { "o": { "type": "object", "properties": { "s": { "type": "string" } } } } });
    assert_eq!(
        run(&nested, json!({ "o": { "s": null } })).unwrap(),
        json!({ "o": {} })
    );
    let list = json!({ "type": "object", "properties": { "l": { "type": "array", "items": { "type": "object", "properties": { "s": { "type": "string" } } } } } });
    assert_eq!(
        run(&list, json!({ "l": [{ "s": null }] })).unwrap(),
        json!({ "l": [{}] })
    );
}

#[test]
fn c099_optional_null_is_kept_when_accepted() {
    assert_eq!(
        coerced(json!({ "type": ["string", "null"] }), json!(null), false),
        Some(json!(null))
    );
    assert_eq!(
        coerced(
            json!({ "anyOf": [{ "type": "string" }, { "type": "null" }] }),
            json!(null),
            false
        ),
        Some(json!(null))
    );
}

#[test]
fn c100_ref_property_null_is_never_dropped() {
    let schema = json!({
        "type": "object",
        "$defs": { "s": { "type": "string" } },
        "properties": { "a": { "$ref": "#/$defs/s" } }
    });
    assert_eq!(
        run(&schema, json!({ "a": null })).unwrap(),
        json!({ "a": "null" })
    );
}

#[test]
fn c101_single_values_are_wrapped() {
    let strings = json!({ "type": "array", "items": { "type": "string" } });
    assert_eq!(
        coerced(strings.clone(), json!("x"), false),
        Some(json!(["x"]))
    );
    assert_eq!(
        coerced(strings.clone(), json!(5), false),
        Some(json!(["5"]))
    );
    assert_eq!(coerced(strings, json!(null), true), Some(json!(["null"])));
    let objects = json!({ "type": "array", "items": { "type": "object" } });
    assert_eq!(
        coerced(objects, json!({ "k": 1 }), false),
        Some(json!([{ "k": 1 }]))
    );
    assert_eq!(
        coerced(json!({ "type": "array" }), json!("x"), false),
        Some(json!(["x"]))
    );
}

#[test]
fn c102_tuples_never_wrap() {
    let tuple =
        json!({ "type": "array", "prefixItems": [{ "type": "number" }, { "type": "string" }] });
    assert_eq!(
        a_error(tuple.clone(), json!("1")),
        vec!["a: expected array, got string"]
    );
    assert_eq!(
        coerced(tuple, json!(["1", 2]), false),
        Some(json!([1, "2"]))
    );
    let draft7 = json!({ "type": "array", "items": [{ "type": "number" }, { "type": "string" }] });
    assert_eq!(
        a_error(draft7.clone(), json!("1")),
        vec!["a: expected array, got string"]
    );
    assert_eq!(
        coerced(draft7, json!(["1", 2]), false),
        Some(json!([1, "2"]))
    );
}

#[test]
fn c103_array_items_convert_individually() {
    let ints = json!({ "type": "array", "items": { "type": "integer" } });
    assert_eq!(
        coerced(ints, json!(["1", "2.9", true]), false),
        Some(json!([1, 2, 1]))
    );
}

#[test]
fn c104_union_takes_first_accepted_conversion() {
    let nb = json!({ "anyOf": [{ "type": "number" }, { "type": "boolean" }] });
    assert_eq!(coerced(nb, json!("true"), false), Some(json!(1)));
    let ns = json!({ "anyOf": [{ "type": "number" }, { "type": "string" }] });
    assert_eq!(coerced(ns, json!("5"), false), Some(json!("5")));
    let bs = json!({ "oneOf": [{ "type": "boolean" }, { "type": "string" }] });
    assert_eq!(coerced(bs, json!(1), false), Some(json!(true)));
}

#[test]
fn c105_enum_and_const_convert_to_members() {
    assert_eq!(
        coerced(json!({ "enum": [1, 2, 3] }), json!("2"), false),
        Some(json!(2))
    );
    assert_eq!(
        coerced(json!({ "enum": [0, 1] }), json!(true), false),
        Some(json!(1))
    );
    assert_eq!(
        coerced(json!({ "const": true }), json!("true"), false),
        Some(json!(true))
    );
    // Case matters.
    assert_eq!(
        a_error(json!({ "enum": ["a"] }), json!("A")),
        vec![r#"a: expected one of ["a"]"#]
    );
}

#[test]
fn c106_type_arrays_are_coerced_by_pass_three() {
    let t = json!({ "type": ["integer", "null"] });
    assert_eq!(coerced(t.clone(), json!("5"), false), Some(json!(5)));
    assert_eq!(coerced(t.clone(), json!(""), false), Some(json!(null)));
    assert_eq!(coerced(t, json!(null), true), Some(json!(null)));
    assert_eq!(
        coerced(json!({ "type": ["number", "string"] }), json!(true), false),
        Some(json!(1))
    );
}

#[test]
fn c107_value_matching_a_type_array_member_is_unchanged() {
    assert_eq!(
        coerced(json!({ "type": ["string", "number"] }), json!(5), false),
        Some(json!(5))
    );
    assert_eq!(
        coerced(json!({ "type": ["number", "string"] }), json!("x"), false),
        Some(json!("x"))
    );
}

#[test]
fn c108_members_under_root_type_array_only_get_pass_three() {
    let schema =
        json!({ "type": ["object", "null"], "properties": { "n": { "type": "integer" } } });
    assert_eq!(
        lines(&schema, json!({ "n": "3.5" })),
        vec!["n: expected integer, got string"]
    );
    assert_eq!(
        run(&schema, json!({ "n": "3" })).unwrap(),
        json!({ "n": 3 })
    );
}

#[test]
fn coercion_table_remaining_rows() {
    let untyped = json!({ "properties": { "n": { "type": "integer" } } });
    assert_eq!(
        run(&untyped, json!({ "n": "4" })).unwrap(),
        json!({ "n": 4 })
    );
    let additional = json!({ "type": "object", "additionalProperties": { "type": "number" } });
    let message = run(&additional, json!({ "z": "5", "y": "q" })).unwrap_err();
    assert_eq!(
        message,
        "Validation failed for tool \"t\":\n  - y: expected number, got string\n\nReceived arguments:\n{\n  \"z\": \"5\",\n  \"y\": \"q\"\n}"
    );
    assert_eq!(
        run(&additional, json!({ "z": "5" })).unwrap(),
        json!({ "z": 5 })
    );
    let all_of = json!({ "allOf": [{ "type": "integer" }, { "minimum": 5 }] });
    assert_eq!(
        a_error(all_of.clone(), json!("3")),
        vec!["a: expected >= 5"]
    );
    assert_eq!(coerced(all_of, json!("7"), false), Some(json!(7)));
}

#[test]
fn validation_does_not_modify_its_input() {
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" }, "o": { "type": "string" } } });
    let tool_call = call(json!({ "n": "42", "o": null }));
    let before = tool_call.clone();
    assert_eq!(
        validate_tool_arguments("t", &schema, &tool_call).unwrap(),
        json!({ "n": 42 })
    );
    assert_eq!(tool_call, before);
}

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

// ---- §5.7 message text ----

fn num_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "n": { "type": "integer" },
            "tags": { "type": "array", "items": { "type": "string" } },
            "opt": { "type": "string" }
        },
        "required": ["n"],
        "additionalProperties": false
    })
}

#[test]
fn c112_full_message_text() {
    let arguments = parse(r#"{ "n": "abc", "extra": 1 }"#).unwrap();
    let message = validate_tool_arguments("num", &num_schema(), &call(arguments)).unwrap_err();
    assert_eq!(
        message,
        "Validation failed for tool \"num\":\n  - n: expected integer, got string\n  - extra: unknown field\n\nReceived arguments:\n{\n  \"n\": \"abc\",\n  \"extra\": 1\n}"
    );
}

#[test]
fn section_5_7_valid_example_coerces() {
    let arguments = json!({ "n": "42", "tags": "one", "opt": null });
    assert_eq!(
        run(&num_schema(), arguments).unwrap(),
        json!({ "n": 42, "tags": ["one"] })
    );
}

#[test]
fn c110_nested_paths_are_dotted() {
    let schema = json!({
        "type": "object",
        "properties": { "edits": { "type": "array", "items": {
            "type": "object",
            "properties": { "oldText": { "type": "string" } },
            "required": ["oldText"],
            "additionalProperties": false
        } } }
    });
    let arguments = json!({ "edits": [{ "oldText": 1 }, { "x": 1 }] });
    let message = run(&schema, arguments).unwrap_err();
    assert_eq!(
        message,
        "Validation failed for tool \"t\":\n  - edits.1.oldText: missing\n  - edits.1.x: unknown field\n\nReceived arguments:\n{\n  \"edits\": [\n    {\n      \"oldText\": 1\n    },\n    {\n      \"x\": 1\n    }\n  ]\n}"
    );
}

#[test]
fn c110_root_errors_use_root() {
    assert_eq!(
        lines(&json!({ "type": "string" }), json!({})),
        vec!["root: expected string, got object"]
    );
    assert_eq!(
        lines(&json!({ "type": "object" }), json!([1])),
        vec!["root: expected object, got array"]
    );
}

#[test]
fn c111_path_segments_unescape() {
    let schema = json!({ "type": "object", "properties": { "a/b~c": { "type": "string" }, "x.y": { "type": "integer" } } });
    assert_eq!(
        lines(&schema, json!({ "a/b~c": {}, "x.y": "q" })),
        vec![
            "a/b~c: expected string, got object",
            "x.y: expected integer, got string"
        ]
    );
}

#[test]
fn c113_type_failure_suppresses_other_keywords() {
    let schema = with_a(
        json!({ "type": "string", "minLength": 3, "enum": ["abc"] }),
        false,
    );
    assert_eq!(
        lines(&schema, json!({ "a": {} })),
        vec!["a: expected string, got object"]
    );
    // Without a type failure, the other keywords report independently.
    assert_eq!(
        lines(&schema, json!({ "a": "x" })),
        vec![
            r#"a: expected one of ["abc"]"#,
            "a: expected at least 3 characters"
        ]
    );
}

#[test]
fn c114_required_errors_come_first() {
    let schema = json!({
        "type": "object",
        "properties": { "b": { "type": "integer" }, "a": { "type": "string" } },
        "required": ["a", "c"]
    });
    assert_eq!(
        lines(&schema, json!({ "b": "x" })),
        vec![
            "a: missing",
            "c: missing",
            "b: expected integer, got string"
        ]
    );
}

#[test]
fn c115_additional_properties_false_reports_unknown_field() {
    let schema =
        json!({ "type": "object", "properties": { "a": {} }, "additionalProperties": false });
    assert_eq!(
        lines(&schema, json!({ "a": 1, "zz": 2 })),
        vec!["zz: unknown field"]
    );
}

#[test]
fn c116_keyword_messages() {
    let cases: Vec<(Json, Json, &str)> = vec![
        (
            json!({ "type": "string", "minLength": 3 }),
            json!("ab"),
            "a: expected at least 3 characters",
        ),
        (
            json!({ "type": "string", "maxLength": 1 }),
            json!("ab"),
            "a: expected at most 1 characters",
        ),
        (
            json!({ "type": "string", "pattern": "^x" }),
            json!("ab"),
            "a: expected to match ^x",
        ),
        (
            json!({ "type": "number", "minimum": 1.5 }),
            json!(1),
            "a: expected >= 1.5",
        ),
        (
            json!({ "type": "number", "maximum": 1 }),
            json!(2),
            "a: expected <= 1",
        ),
        (
            json!({ "type": "number", "exclusiveMinimum": 1 }),
            json!(1),
            "a: expected > 1",
        ),
        (
            json!({ "type": "number", "exclusiveMaximum": 1e21 }),
            json!(1e22),
            "a: expected < 1e+21",
        ),
        (
            json!({ "type": "number", "multipleOf": 2 }),
            json!(3),
            "a: expected a multiple of 2",
        ),
        (
            json!({ "type": "array", "minItems": 2 }),
            json!([1]),
            "a: expected at least 2 items",
        ),
        (
            json!({ "type": "array", "maxItems": 1 }),
            json!([1, 2]),
            "a: expected at most 1 items",
        ),
        (
            json!({ "type": "array", "uniqueItems": true }),
            json!([{ "x": 1, "y": 2 }, { "y": 2, "x": 1.0 }]),
            "a: expected unique items",
        ),
        (
            json!({ "type": "array", "contains": { "type": "string" } }),
            json!([1]),
            "a: expected at least 1 matching item",
        ),
        (
            json!({ "type": "array", "contains": { "type": "string" }, "minContains": 2 }),
            json!(["x"]),
            "a: expected at least 2 matching items",
        ),
        (
            json!({ "type": "array", "contains": { "type": "string" }, "minContains": 0, "maxContains": 1 }),
            json!(["x", "y"]),
            "a: expected at most 1 matching item",
        ),
        (
            json!({ "type": "array", "contains": { "type": "string" }, "minContains": 2, "maxContains": 3 }),
            json!(["x"]),
            "a: expected between 2 and 3 matching items",
        ),
        (
            json!({ "type": "object", "minProperties": 2 }),
            json!({ "k": 1 }),
            "a: expected at least 2 properties",
        ),
        (
            json!({ "type": "object", "maxProperties": 0 }),
            json!({ "k": 1 }),
            "a: expected at most 0 properties",
        ),
        (
            json!({ "const": { "k": 1 } }),
            json!({ "k": 2 }),
            r#"a: expected {"k":1}"#,
        ),
        (
            json!({ "enum": ["a", "b", 3, null] }),
            json!("c"),
            r#"a: expected one of ["a","b",3,null]"#,
        ),
        (
            json!({ "not": { "type": "string" } }),
            json!("x"),
            "a: must not match the schema in not",
        ),
        (json!(false), json!(1), "a: no value is allowed here"),
    ];
    for (property, input, expected) in cases {
        assert_eq!(
            a_error(property.clone(), input),
            vec![expected.to_string()],
            "{property}"
        );
    }
}

#[test]
fn c116_object_dependency_and_name_messages() {
    let dependent = with_a(
        json!({ "type": "object", "dependentRequired": { "x": ["y"] } }),
        false,
    );
    assert_eq!(
        lines(&dependent, json!({ "a": { "x": 1 } })),
        vec!["a.y: required when x is present"]
    );
    let dependencies = with_a(
        json!({ "type": "object", "dependencies": { "x": ["y", "z"] } }),
        false,
    );
    assert_eq!(
        lines(&dependencies, json!({ "a": { "x": 1, "z": 1 } })),
        vec!["a.y: required when x is present"]
    );
    let schema_form = with_a(
        json!({ "type": "object", "dependentSchemas": { "x": { "required": ["w"] } } }),
        false,
    );
    assert_eq!(
        lines(&schema_form, json!({ "a": { "x": 1 } })),
        vec!["a.w: missing"]
    );
    let names = with_a(
        json!({ "type": "object", "propertyNames": { "pattern": "^[a-z]+$" } }),
        false,
    );
    assert_eq!(
        lines(&names, json!({ "a": { "ok": 1, "X1": 2 } })),
        vec!["a.X1: invalid property name"]
    );
    let unevaluated = json!({ "type": "object", "allOf": [{ "properties": { "a": true } }], "unevaluatedProperties": false });
    assert_eq!(
        lines(&unevaluated, json!({ "a": 1, "b": 2 })),
        vec!["b: unknown field"]
    );
    let items = with_a(
        json!({ "type": "array", "prefixItems": [true], "unevaluatedItems": false }),
        false,
    );
    assert_eq!(
        lines(&items, json!({ "a": [1, 2] })),
        vec!["a.1: unexpected item"]
    );
    let conditional = with_a(
        json!({ "if": { "type": "string" }, "then": { "minLength": 2 }, "else": { "type": "integer" } }),
        false,
    );
    assert_eq!(
        lines(&conditional, json!({ "a": "x" })),
        vec!["a: expected at least 2 characters"]
    );
    assert_eq!(
        lines(&conditional, json!({ "a": [] })),
        vec!["a: expected integer, got array"]
    );
}

#[test]
fn other_message_examples_of_section_5_7() {
    // The list in §5.7 not already covered by c116.
    assert_eq!(
        a_error(
            json!({ "type": "string", "format": "email" }),
            json!("nope")
        ),
        vec!["a: expected format email"]
    );
    let unresolved = json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/nope" } } });
    assert_eq!(
        lines(&unresolved, json!({ "a": 1 })),
        vec!["a: unresolved reference #/$defs/nope"]
    );
    let path = json!({ "type": "object", "properties": { "a/b~c": { "type": "string" } } });
    assert_eq!(
        lines(&path, json!({ "a/b~c": {} })),
        vec!["a/b~c: expected string, got object"]
    );
}

#[test]
fn c117_type_name_integer_versus_number() {
    let s = json!({ "type": "boolean" });
    assert_eq!(
        a_error(s.clone(), json!(2)),
        vec!["a: expected boolean, got integer"]
    );
    assert_eq!(
        a_error(s.clone(), parse("2.0").unwrap()),
        vec!["a: expected boolean, got integer"]
    );
    assert_eq!(
        a_error(s, json!(2.5)),
        vec!["a: expected boolean, got number"]
    );
    assert_eq!(
        a_error(json!({ "type": ["string", "null"] }), json!([])),
        vec!["a: expected string or null, got array"]
    );
}

#[test]
fn c118_long_enum_lists_are_cut() {
    let members: Vec<Json> = (1..=25).map(|i| json!(format!("v{i}"))).collect();
    let list: Vec<String> = (1..=20).map(|i| format!("\"v{i}\"")).collect();
    assert_eq!(
        a_error(json!({ "enum": members }), json!("x")),
        vec![format!(
            "a: expected one of [{}, ... and 5 more]",
            list.join(",")
        )]
    );
    let exactly: Vec<Json> = (1..=20).map(|i| json!(i)).collect();
    let text = (1..=20)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(
        a_error(json!({ "enum": exactly }), json!("x")),
        vec![format!("a: expected one of [{text}]")]
    );
}

// ---- §5.6.1 unions ----

#[test]
fn c119_union_blame_picks_branch_declaring_most_present_keys() {
    let property = json!({ "anyOf": [
        { "type": "object", "properties": { "x": { "type": "string" }, "y": { "type": "number" } }, "required": ["x"] },
        { "type": "object", "properties": { "z": { "type": "number" } }, "required": ["z"] }
    ] });
    assert_eq!(a_error(property, json!({ "y": 1 })), vec!["a.x: missing"]);
    let scalar = json!({ "anyOf": [{ "type": "number", "minimum": 10 }, { "type": "boolean" }] });
    assert_eq!(a_error(scalar, json!(3)), vec!["a: expected >= 10"]);
}

#[test]
fn c120_tagged_unions() {
    let property = json!({ "anyOf": [
        { "type": "object", "properties": { "kind": { "const": "t" }, "text": { "type": "string" } } },
        { "type": "object", "properties": { "kind": { "const": "i" }, "w": { "type": "integer" } } }
    ] });
    assert_eq!(
        a_error(property.clone(), json!({ "kind": "v" })),
        vec![r#"a.kind: expected one of ["t","i"]"#]
    );
    assert_eq!(
        a_error(property, json!({ "kind": "i", "w": "x" })),
        vec!["a.w: expected integer, got string"]
    );
    // `$ref` branches are resolved to find the tag.
    let with_refs = json!({
        "type": "object",
        "$defs": {
            "t": { "type": "object", "properties": { "kind": { "const": "t" } } },
            "i": { "type": "object", "properties": { "kind": { "const": "i" }, "w": { "type": "integer" } } }
        },
        "properties": { "a": { "oneOf": [{ "$ref": "#/$defs/t" }, { "$ref": "#/$defs/i" }] } }
    });
    assert_eq!(
        lines(&with_refs, json!({ "a": { "kind": 1 } })),
        vec![r#"a.kind: expected one of ["t","i"]"#]
    );
}

#[test]
fn c121_one_of_with_several_matches() {
    let property = json!({ "oneOf": [{ "type": "number" }, { "type": "integer" }] });
    assert_eq!(
        a_error(property, json!(2)),
        vec!["a: matches more than one alternative"]
    );
}

#[test]
fn unresolved_dynamic_ref_rejects_its_place() {
    // An unresolved `$dynamicRef` acts as `false` (like `$ref`), and the walk says so.
    let property = json!({ "anyOf": [{ "$dynamicRef": "#nope" }] });
    assert_eq!(
        a_error(property, json!(1)),
        vec!["a: does not match the dynamically referenced schema"]
    );
    assert_eq!(
        coerced(json!({ "type": "string" }), json!(1), false),
        Some(json!("1"))
    );
}

// ---- §5.5 schema handling ----

#[test]
fn c122_unresolved_ref_fails_only_its_place() {
    let schema = json!({
        "type": "object",
        "properties": { "a": { "$ref": "#/$defs/nope" }, "b": { "type": "integer" }, "c": { "$ref": "other.json#/x" } }
    });
    assert_eq!(
        run(&schema, json!({ "b": "3" })).unwrap(),
        json!({ "b": 3 })
    );
    assert_eq!(
        lines(&schema, json!({ "a": 1, "b": "x", "c": 2 })),
        vec![
            "a: unresolved reference #/$defs/nope",
            "b: expected integer, got string",
            "c: unresolved reference other.json#/x"
        ]
    );
}

#[test]
fn refs_resolve_ids_anchors_pointers_and_recursion() {
    let schema = json!({
        "$id": "https://example.com/root.json",
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {
            "node": {
                "type": "object",
                "properties": { "v": { "type": "integer" }, "next": { "$ref": "#/definitions/node" } }
            },
            "item": { "$id": "item.json", "type": "string", "minLength": 2 },
            "named": { "$anchor": "named", "type": "boolean" },
            "a/b": { "type": "number" },
            "x y": { "type": "null" }
        },
        "properties": {
            "list": { "$ref": "#/definitions/node" },
            "item": { "$ref": "item.json" },
            "flag": { "$ref": "#named" },
            "slash": { "$ref": "#/definitions/a~1b" },
            "space": { "$ref": "#/definitions/x%20y" },
            "tuple": { "type": "array", "items": [{ "type": "integer" }], "additionalItems": false }
        }
    });
    let ok = run(
        &schema,
        json!({ "list": { "v": "1", "next": { "v": "2" } }, "flag": "true", "slash": "4", "space": "" }),
    );
    assert_eq!(
        ok.unwrap(),
        json!({ "list": { "v": 1, "next": { "v": 2 } }, "flag": true, "slash": 4, "space": null })
    );
    assert_eq!(
        lines(
            &schema,
            json!({ "list": { "next": { "next": { "v": "x" } } }, "item": "q", "tuple": [1, 2] })
        ),
        vec![
            "list.next.next.v: expected integer, got string",
            "item: expected at least 2 characters",
            "tuple.1: no value is allowed here"
        ]
    );
}

#[test]
fn c123_non_schema_parameters() {
    assert_eq!(
        run(&json!("x"), json!({})).unwrap_err(),
        r#"A schema must be an object or a boolean, got "x""#
    );
    assert_eq!(
        run(&json!(5), json!({})).unwrap_err(),
        "A schema must be an object or a boolean, got 5"
    );
    assert_eq!(
        run(&json!(true), json!({ "k": 1 })).unwrap(),
        json!({ "k": 1 })
    );
    assert_eq!(
        run(&json!(false), json!({})).unwrap_err(),
        "Validation failed for tool \"t\":\n  - root: no value is allowed here\n\nReceived arguments:\n{}"
    );
}

#[test]
fn c124_formats_are_enforced() {
    let cases = [
        ("email", "a@example.com", "nope"),
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-01-01T10:00:00Z", "2024-01-01T10:00:00"),
        ("time", "10:00:00+01:00", "10:00:00"),
        (
            "uuid",
            "123e4567-E89B-12d3-a456-426614174000",
            "123e4567-e89b-12d3-a456",
        ),
        ("ipv4", "192.168.0.1", "192.168.0.01"),
        ("ipv6", "::1", "1:::2"),
        ("uri", "https://example.com/x", "example"),
        ("url", "https://example.com/x", "nope"),
        ("hostname", "example.com", "-bad-.com"),
        ("regex", "(?<=a)b", "("),
    ];
    for (format, good, bad) in cases {
        let property = json!({ "type": "string", "format": format });
        assert_eq!(
            coerced(property.clone(), json!(good), false),
            Some(json!(good)),
            "{format}"
        );
        assert_eq!(
            a_error(property, json!(bad)),
            vec![format!("a: expected format {format}")],
            "{format}"
        );
    }
    // Unknown formats are annotations; non-strings pass.
    assert_eq!(
        coerced(json!({ "format": "whatever" }), json!("x"), false),
        Some(json!("x"))
    );
    assert_eq!(
        coerced(json!({ "format": "email" }), json!(5), false),
        Some(json!(5))
    );
}

#[test]
fn c125_string_lengths_count_code_points() {
    let property = json!({ "type": "string", "maxLength": 1, "minLength": 1 });
    assert_eq!(
        coerced(property.clone(), json!("😀"), false),
        Some(json!("😀"))
    );
    assert_eq!(
        a_error(property, json!("😀😀")),
        vec!["a: expected at most 1 characters"]
    );
}

#[test]
fn ecmascript_patterns_and_exact_multiples() {
    let lookbehind = json!({ "type": "string", "pattern": "(?<=a)b" });
    assert_eq!(coerced(lookbehind, json!("ab"), false), Some(json!("ab")));
    let digits = json!({ "type": "string", "pattern": "^\\d+$" });
    assert_eq!(
        a_error(digits, json!("١٢")),
        vec!["a: expected to match ^\\d+$"]
    );
    assert_eq!(
        coerced(json!({ "multipleOf": 0.0001 }), json!(0.0075), false),
        Some(json!(0.0075))
    );
    assert_eq!(
        coerced(json!({ "multipleOf": 0.1 }), json!(0.3), false),
        Some(json!(0.3))
    );
    let keyed = json!({ "type": "object", "patternProperties": { "^n_": { "type": "integer" } }, "additionalProperties": false });
    assert_eq!(
        run(&keyed, json!({ "n_1": "2" })).unwrap(),
        json!({ "n_1": 2 })
    );
    assert_eq!(
        lines(&keyed, json!({ "n_1": "x", "m": 1 })),
        vec!["n_1: expected integer, got string", "m: unknown field"]
    );
}

#[test]
fn invalid_pattern_makes_the_schema_uncompilable() {
    let message = run(
        &with_a(json!({ "type": "string", "pattern": "(" }), false),
        json!({ "a": "x" }),
    )
    .unwrap_err();
    assert!(
        message.starts_with("Invalid regular expression: /(/"),
        "{message}"
    );
}

#[test]
fn unknown_type_names_match_nothing() {
    assert_eq!(
        a_error(json!({ "type": "bigint" }), json!(1)),
        vec!["a: expected bigint, got integer"]
    );
    assert_eq!(
        coerced(json!({ "type": ["bigint", "string"] }), json!("x"), false),
        Some(json!("x"))
    );
}

#[test]
fn hostile_inputs_do_not_panic() {
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!({ "a": [deep] });
    }
    let recursive = json!({ "$ref": "#", "anyOf": [{ "type": "object", "additionalProperties": { "$ref": "#" } }, { "type": "array", "items": { "$ref": "#" } }] });
    let _ = run(&recursive, deep.clone());
    let wrap_loop = json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/l" } }, "$defs": { "l": { "type": "array", "items": { "$ref": "#/$defs/l" } } } });
    let _ = run(&wrap_loop, json!({ "a": "x" }));
    let weird = json!({ "type": "object", "properties": { "a": { "minLength": "x", "items": 5, "$ref": 3 } } });
    let _ = run(&weird, json!({ "a": "x" }));
    let big: Vec<Json> = (0..20000).map(|i| json!(i.to_string())).collect();
    let ints = json!({ "type": "object", "properties": { "l": { "type": "array", "items": { "type": "integer" }, "uniqueItems": true } } });
    let result = run(&ints, json!({ "l": big })).unwrap();
    assert_eq!(result["l"][19999], json!(19999));
}

/// A tool's compiled schema is kept per definition: repeated calls (and failures, and an
/// uncompilable schema) answer exactly what a fresh compile answers.
#[test]
fn cached_schema_answers_like_a_fresh_compile() {
    use agent::args::validate_tool_call;
    use std::sync::Arc;
    let schemas = [
        num_schema(),
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "("}}}),
        json!("not a schema"),
    ];
    let calls = [
        call(json!({"n": "3", "tags": ["a"]})),
        call(json!({"n": "x"})),
        call(json!({"s": "q"})),
        json!({"id": "c", "name": "t", "arguments": {}, "argumentsError": "bad"}),
    ];
    for schema in schemas {
        let definition = Arc::new(json!({"name": "t", "parameters": schema.clone()}));
        for _ in 0..3 {
            for tool_call in &calls {
                assert_eq!(
                    validate_tool_call("t", &definition, tool_call),
                    validate_tool_arguments("t", &schema, tool_call)
                );
            }
        }
    }
    // Without `parameters` the schema is `null`, as before.
    let bare = Arc::new(json!({"name": "t"}));
    assert_eq!(
        validate_tool_call("t", &bare, &calls[0]),
        validate_tool_arguments("t", &Json::Null, &calls[0])
    );
}

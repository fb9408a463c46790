//! SPEC §3.8 (incremental tolerant JSON parser, argument stream) and §3.9 (final parse, repair):
//! checklist items 39–69, the worked rows of §3.8.4 and §3.9, and the conformance-kit table.

use agent::args::partial_json::PartialJsonParser;
use agent::args::{parse_tool_call_arguments, repair_json, ArgumentStream};
use agent::json::{json, parse, to_string, Json};

/// Feeds `text` one character per append; returns the arguments after each append.
fn per_char(text: &str) -> Vec<Json> {
    let mut stream = ArgumentStream::new();
    text.chars()
        .map(|c| stream.append(c.encode_utf8(&mut [0; 4])).to_json())
        .collect()
}

/// The arguments after the whole `text` was fed one character at a time.
fn final_per_char(text: &str) -> Json {
    per_char(text).pop().unwrap_or_else(|| json!({}))
}

/// The arguments right after the character that ends `prefix` (fed one character at a time).
fn after(text: &str, prefix: &str) -> Json {
    assert!(
        text.starts_with(prefix),
        "{prefix:?} is not a prefix of {text:?}"
    );
    per_char(text)[prefix.chars().count() - 1].clone()
}

/// Feeds `pieces` in order; returns the arguments after each.
fn pieces(parts: &[&str]) -> Vec<Json> {
    let mut stream = ArgumentStream::new();
    parts.iter().map(|p| stream.append(p).to_json()).collect()
}

fn j(text: &str) -> Json {
    parse(text).expect("test JSON")
}

fn assert_json_eq(actual: &Json, expected: &str) {
    assert_eq!(to_string(actual), to_string(&j(expected)));
}

#[test]
fn c039_arguments_empty_until_first_member_value() {
    let text = r#"{"path": "x"}"#;
    let values = per_char(text);
    // Everything up to and including the space before the value's opening quote shows `{}`.
    for value in &values[..9] {
        assert_eq!(value, &json!({}));
    }
    assert_eq!(values[9], json!({"path": ""}));
}

#[test]
fn c040_string_member_appears_on_opening_quote() {
    let text = r#"{"path": "a\nb", "x": 1}"#;
    assert_json_eq(&after(text, r#"{"path": ""#), r#"{"path":""}"#);
    assert_json_eq(&after(text, r#"{"path": "a"#), r#"{"path":"a"}"#);
}

#[test]
fn c041_escape_invisible_until_complete() {
    let text = r#"{"path": "a\nb", "x": 1}"#;
    assert_json_eq(&after(text, r#"{"path": "a\"#), r#"{"path":"a"}"#);
    assert_eq!(after(text, r#"{"path": "a\n"#), json!({"path": "a\n"}));
    assert_eq!(final_per_char(text), json!({"path": "a\nb", "x": 1}));
}

#[test]
fn c042_unicode_escape_shows_after_fourth_hex_digit() {
    let text = r#"{"u": "\u00e9!"}"#;
    for prefix in [
        r#"{"u": ""#,
        r#"{"u": "\"#,
        r#"{"u": "\u"#,
        r#"{"u": "\u0"#,
        r#"{"u": "\u00"#,
        r#"{"u": "\u00e"#,
    ] {
        assert_eq!(after(text, prefix), json!({"u": ""}), "after {prefix}");
    }
    assert_eq!(after(text, r#"{"u": "\u00e9"#), json!({"u": "é"}));
    assert_eq!(after(text, r#"{"u": "\u00e9!"#), json!({"u": "é!"}));
}

#[test]
fn c043_invalid_escape_stays_literal() {
    let text = r#"{"a": "x\dy"}"#;
    assert_eq!(final_per_char(text), json!({"a": "x\\dy"}));
    assert_eq!(after(text, r#"{"a": "x\"#), json!({"a": "x"}));
    assert_eq!(after(text, r#"{"a": "x\d"#), json!({"a": "x\\d"}));
    // Same in one piece.
    assert_eq!(pieces(&[text])[0], json!({"a": "x\\dy"}));
}

#[test]
fn c044_pending_minus_shows_nothing_then_number() {
    let text = r#"{"n": -12.5e+3}"#;
    assert_eq!(after(text, r#"{"n": -"#), json!({}));
    assert_eq!(after(text, r#"{"n": -1"#), json!({"n": -1}));
    assert_eq!(after(text, r#"{"n": -12"#), json!({"n": -12}));
}

#[test]
fn c045_pending_trailing_dot_hides_member() {
    let text = r#"{"n": -12.5e+3}"#;
    assert_eq!(after(text, r#"{"n": -12."#), json!({}));
    assert_eq!(after(text, r#"{"n": -12.5"#), json!({"n": -12.5}));
}

#[test]
fn c046_pending_exponent_without_digits_shows_mantissa() {
    let text = r#"{"n": -12.5e+3}"#;
    assert_eq!(after(text, r#"{"n": -12.5e"#), json!({"n": -12.5}));
    assert_eq!(after(text, r#"{"n": -12.5e+"#), json!({"n": -12.5}));
    assert_eq!(after(text, r#"{"n": -12.5e+3"#), json!({"n": -12500}));
    assert_eq!(final_per_char(text), json!({"n": -12500}));
    assert_eq!(final_per_char(r#"{"n": 12.5E"#), json!({"n": 12.5}));
}

#[test]
fn c047_pending_literal_prefixes_show_their_value() {
    let text = r#"{"ok": true, "no": false, "z": null}"#;
    assert_eq!(after(text, r#"{"ok": t"#), json!({"ok": true}));
    assert_eq!(after(text, r#"{"ok": tr"#), json!({"ok": true}));
    assert_eq!(
        after(text, r#"{"ok": true, "no": f"#),
        json!({"ok": true, "no": false})
    );
    assert_eq!(
        after(text, r#"{"ok": true, "no": false, "z": n"#),
        json!({"ok": true, "no": false, "z": null})
    );
    assert_eq!(
        after(text, r#"{"ok": true, "no": false, "z": nu"#),
        json!({"ok": true, "no": false, "z": null})
    );
}

#[test]
fn c048_invalid_literal_dropped_stale_preview_remains() {
    let text = r#"{"a": tru, "b": 1}"#;
    assert_eq!(after(text, r#"{"a": t"#), json!({"a": true}));
    assert_eq!(after(text, r#"{"a": tru"#), json!({"a": true}));
    assert_eq!(after(text, r#"{"a": tru,"#), json!({"a": true}));
    assert_eq!(after(text, r#"{"a": tru, "b""#), json!({"a": true}));
    assert_eq!(after(text, r#"{"a": tru, "b": 1"#), json!({"b": 1}));
    assert_eq!(final_per_char(text), json!({"b": 1}));
}

#[test]
fn c049_leading_zero_number_dropped() {
    let text = r#"{"a": 01}"#;
    assert_eq!(after(text, r#"{"a": 0"#), json!({"a": 0}));
    assert_eq!(after(text, r#"{"a": 01"#), json!({}));
    assert_eq!(final_per_char(text), json!({}));
}

#[test]
fn c050_nan_never_shown() {
    let text = r#"{"a": NaN, "b": 2}"#;
    for value in per_char(text) {
        assert!(value.get("a").is_none(), "{value}");
    }
    assert_eq!(final_per_char(text), json!({"b": 2}));
}

#[test]
fn c051_missing_colon_and_comma_tolerated() {
    assert_json_eq(&final_per_char(r#"{"a" 1 "b": 2}"#), r#"{"a":1,"b":2}"#);
    assert_json_eq(&pieces(&[r#"{"a" 1 "b": 2}"#])[0], r#"{"a":1,"b":2}"#);
}

#[test]
fn c052_missing_comma_in_array_tolerated() {
    assert_json_eq(&final_per_char(r#"{"a": [1 2]}"#), r#"{"a":[1,2]}"#);
}

#[test]
fn c053_member_without_value_never_appears() {
    let text = r#"{"a": [1 2], "c": }"#;
    for value in per_char(text) {
        assert!(value.get("c").is_none(), "{value}");
    }
    assert_json_eq(&final_per_char(text), r#"{"a":[1,2]}"#);
}

#[test]
fn c054_text_after_root_ignored() {
    let text = r#" {"a":1} trailing"#;
    assert_json_eq(&final_per_char(text), r#"{"a":1}"#);
    assert_json_eq(&final_per_char(r#"{"a":1} {"b":2}"#), r#"{"a":1}"#);
    assert_json_eq(&pieces(&[r#"{"a":1}"#, r#","b":2}"#])[1], r#"{"a":1}"#);
}

#[test]
fn c055_non_object_root_shows_empty_object() {
    for text in ["[1,2]", r#""str""#, "12", "true", r#"[{"a":1}]"#] {
        for value in per_char(text) {
            assert_eq!(value, json!({}), "{text}");
        }
    }
    let mut parser = PartialJsonParser::new();
    parser.append("[1,2");
    assert_eq!(parser.snapshot().map(|v| v.to_json()), Some(json!([1, 2])));
}

#[test]
fn c056_closer_of_either_kind_closes_innermost() {
    assert_json_eq(
        &final_per_char(r#"{"a": [1, 2}, "b": 3]"#),
        r#"{"a":[1,2],"b":3}"#,
    );
    assert_json_eq(
        &final_per_char(r#"{"a": {"x": 1], "b": 3}"#),
        r#"{"a":{"x":1},"b":3}"#,
    );
}

#[test]
fn c057_stray_closer_ignored() {
    assert_json_eq(&final_per_char(r#"]}{"a":1}"#), r#"{"a":1}"#);
    let mut parser = PartialJsonParser::new();
    parser.append("}]");
    assert_eq!(parser.snapshot().map(|v| v.to_json()), None);
}

#[test]
fn c058_long_pending_scalar_not_shown() {
    let digits64 = "1".repeat(64);
    let digits65 = "1".repeat(65);
    let shown = final_per_char(&format!(r#"{{"a": {digits64}"#));
    assert_eq!(shown, json!({"a": digits64.parse::<f64>().unwrap()}));
    assert_eq!(final_per_char(&format!(r#"{{"a": {digits65}"#)), json!({}));
    // Once ended, a long number is placed normally.
    let ended = final_per_char(&format!(r#"{{"a": {digits65}}}"#));
    assert!(ended.get("a").is_some_and(Json::is_number));
}

fn array_len(value: &Json) -> usize {
    value.get("a").and_then(Json::as_array).map_or(0, Vec::len)
}

#[test]
fn c059_credit_first_stale_preview_at_append_1055() {
    let text = format!(r#"{{"a":[{}"#, "7,".repeat(800));
    let values = per_char(&text);
    let mut sevens = 0;
    let mut first_stale = None;
    for (n, (c, value)) in text.chars().zip(&values).enumerate() {
        let append = n + 1;
        if c == '7' {
            sevens += 1;
        }
        if append >= 6 && array_len(value) != sevens && first_stale.is_none() {
            first_stale = Some(append);
            assert_eq!(array_len(value) + 1, sevens, "one element behind");
        }
    }
    assert_eq!(first_stale, Some(1055));
}

#[test]
fn c060_credit_pieces_of_200_show_exact_lengths() {
    let mut stream = ArgumentStream::new();
    assert_eq!(stream.append(r#"{"a":["#), json!({"a": []}));
    let piece = "7,".repeat(100);
    for k in 1..=10 {
        let value = stream.append(&piece).to_json();
        assert_eq!(array_len(&value), 100 * k);
    }
}

#[test]
fn c061_duplicate_key_replaced_in_place() {
    assert_json_eq(
        &final_per_char(r#"{"a": 1, "b": 2, "a": 3}"#),
        r#"{"a":3,"b":2}"#,
    );
    let text = r#"{"a": 1, "b": 2, "a": "xy"}"#;
    let value = after(text, r#"{"a": 1, "b": 2, "a": "x"#);
    assert_eq!(to_string(&value), r#"{"a":"x","b":2}"#);
    // Integer-like keys come first, in numeric order.
    assert_eq!(
        to_string(&final_per_char(r#"{"b": 1, "2": 2, "1": 3}"#)),
        r#"{"1":3,"2":2,"b":1}"#
    );
}

#[test]
fn proto_is_an_ordinary_key() {
    assert_eq!(
        to_string(&final_per_char(r#"{"__proto__": {"x": 1}, "y": 2}"#)),
        r#"{"__proto__":{"x":1},"y":2}"#
    );
}

#[test]
fn table_list_row() {
    let text = r#"{"list": [1, "x", null, {"k": false}]}"#;
    assert_json_eq(&after(text, r#"{"list": ["#), r#"{"list":[]}"#);
    assert_json_eq(&after(text, r#"{"list": [1"#), r#"{"list":[1]}"#);
    assert_json_eq(&after(text, r#"{"list": [1, ""#), r#"{"list":[1,""]}"#);
    assert_json_eq(
        &after(text, r#"{"list": [1, "x", n"#),
        r#"{"list":[1,"x",null]}"#,
    );
    assert_json_eq(
        &after(text, r#"{"list": [1, "x", null, {"#),
        r#"{"list":[1,"x",null,{}]}"#,
    );
    assert_json_eq(
        &after(text, r#"{"list": [1, "x", null, {"k": f"#),
        r#"{"list":[1,"x",null,{"k":false}]}"#,
    );
    assert_json_eq(
        &final_per_char(text),
        r#"{"list":[1,"x",null,{"k":false}]}"#,
    );
}

#[test]
fn surrogate_pairs_combine_and_lone_ones_become_replacement() {
    assert_eq!(
        final_per_char(r#"{"e": "\ud83d\ude00!"}"#),
        json!({"e": "😀!"})
    );
    assert_eq!(
        after(r#"{"e": "\ud83d\ude00!"}"#, r#"{"e": "\ud83d"#),
        json!({"e": ""})
    );
    assert_eq!(
        final_per_char(r#"{"e": "\ud83dx"}"#),
        json!({"e": "\u{FFFD}x"})
    );
    assert_eq!(
        final_per_char(r#"{"e": "\ud83d"}"#),
        json!({"e": "\u{FFFD}"})
    );
    assert_eq!(
        final_per_char(r#"{"e": "\ude00"}"#),
        json!({"e": "\u{FFFD}"})
    );
    assert_eq!(final_per_char(r#"{"e": "\u12x"}"#), json!({"e": "\\u12x"}));
}

#[test]
fn keys_with_escapes() {
    assert_eq!(
        final_per_char(r#"{"a\"b": 1, "\u0041": 2}"#),
        json!({"a\"b": 1, "A": 2})
    );
}

#[test]
fn values_in_invalid_positions_are_dropped() {
    assert_json_eq(
        &final_per_char(r#"{"a": 1, 2, "b": 3}"#),
        r#"{"a":1,"b":3}"#,
    );
    assert_json_eq(&final_per_char(r#"{{"x": 1}, "b": 3}"#), r#"{"b":3}"#);
}

#[test]
fn stream_returns_identical_arguments_while_nothing_changes() {
    let values = pieces(&[r#"{"a": 1"#, " ", "  ", ","]);
    assert!(values.iter().all(|v| v == &json!({"a": 1})));
}

#[test]
fn replace_appends_suffix_or_restarts() {
    let mut stream = ArgumentStream::new();
    stream.append(r#"{"a": 1"#);
    assert_eq!(
        stream.replace(r#"{"a": 1, "b": 2}"#),
        json!({"a": 1, "b": 2})
    );
    assert_eq!(stream.replace(r#"{"c": 3}"#), json!({"c": 3}));
    assert_eq!(stream.text(), r#"{"c": 3}"#);
}

#[test]
fn conformance_kit_table() {
    // Each case: cut points of one argument text and the arguments expected after each delta.
    let cases: &[&[(&str, &str)]] = &[
        &[
            (r#"{"pa"#, "{}"),
            (r#"{"path":"#, "{}"),
            (r#"{"path":"not"#, r#"{"path":"not"}"#),
        ],
        &[
            (r#"{"id":"42","n"#, r#"{"id":"42"}"#),
            (
                r#"{"id":"42","note":null,"ta"#,
                r#"{"id":"42","note":null}"#,
            ),
        ],
        &[
            (r#"{"name": ""#, r#"{"name":""}"#),
            (r#"{"name": "a\"#, r#"{"name":"a"}"#),
            (r#"{"name": "a\"b\\"#, r#"{"name":"a\"b\\"}"#),
            (r#"{"name": "a\"b\\c\u00"#, r#"{"name":"a\"b\\c"}"#),
            (r#"{"name": "a\"b\\c\u00e9", "si"#, r#"{"name":"a\"b\\cé"}"#),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12"#,
                r#"{"name":"a\"b\\cé","size":12}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12."#,
                r#"{"name":"a\"b\\cé"}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12.5, "tags": ["x"#,
                r#"{"name":"a\"b\\cé","size":12.5,"tags":["x"]}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12.5, "tags": ["x"], "on": t"#,
                r#"{"name":"a\"b\\cé","size":12.5,"tags":["x"],"on":true}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12.5, "tags": ["x"], "on": true, "off": f"#,
                r#"{"name":"a\"b\\cé","size":12.5,"tags":["x"],"on":true,"off":false}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12.5, "tags": ["x"], "on": true, "off": false, "none": nul"#,
                r#"{"name":"a\"b\\cé","size":12.5,"tags":["x"],"on":true,"off":false,"none":null}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12.5, "tags": ["x"], "on": true, "off": false, "none": null, "nested": {"k": [1, {"z": -"#,
                r#"{"name":"a\"b\\cé","size":12.5,"tags":["x"],"on":true,"off":false,"none":null,"nested":{"k":[1,{}]}}"#,
            ),
            (
                r#"{"name": "a\"b\\c\u00e9", "size": 12.5, "tags": ["x"], "on": true, "off": false, "none": null, "nested": {"k": [1, {"z": -3}]}}"#,
                r#"{"name":"a\"b\\cé","size":12.5,"tags":["x"],"on":true,"off":false,"none":null,"nested":{"k":[1,{"z":-3}]}}"#,
            ),
        ],
    ];
    for case in cases {
        let mut stream = ArgumentStream::new();
        let mut sent = 0;
        for (prefix, expected) in case.iter() {
            let value = stream.append(&prefix[sent..]).to_json();
            sent = prefix.len();
            assert!(
                agent::json::deep_equal(&value, &j(expected)),
                "after {prefix}: got {value}, want {expected}"
            );
        }
        // The same cut points also hold when every character is its own delta.
        let last = case.last().map_or("", |(p, _)| p);
        let values = per_char(last);
        for (prefix, expected) in case.iter() {
            let value = &values[prefix.chars().count() - 1];
            assert!(
                agent::json::deep_equal(value, &j(expected)),
                "per char after {prefix}: got {value}"
            );
        }
    }
}

// §3.9 — final parse and repair.

fn parsed(text: &str) -> (Json, Option<String>) {
    let result = parse_tool_call_arguments(text);
    (result.arguments, result.error)
}

#[test]
fn c062_empty_or_whitespace_is_empty_object() {
    for text in ["", "   ", "\n\t", "\u{a0}\u{feff}\u{2028}"] {
        assert_eq!(parsed(text), (json!({}), None), "{text:?}");
    }
    assert_eq!(ArgumentStream::new().finish().arguments, json!({}));
}

#[test]
fn c063_null_is_not_an_object() {
    assert_eq!(
        parsed("null"),
        (
            json!({}),
            Some("Tool arguments must be a JSON object\n\nReceived arguments:\nnull".into())
        )
    );
}

#[test]
fn c064_array_and_string_are_not_objects() {
    for text in ["[1,2]", r#""str""#, "12", "true"] {
        let (arguments, error) = parsed(text);
        assert_eq!(arguments, json!({}));
        assert_eq!(
            error,
            Some(format!(
                "Tool arguments must be a JSON object\n\nReceived arguments:\n{text}"
            ))
        );
    }
}

#[test]
fn c065_raw_control_characters_repaired() {
    assert_eq!(
        parsed("{\"a\":\"line1\nline2\ttab\"}"),
        (json!({"a": "line1\nline2\ttab"}), None)
    );
    assert_eq!(
        repair_json("{\"a\":\"x\u{1}\r\"}"),
        "{\"a\":\"x\\u0001\\r\"}"
    );
}

#[test]
fn c066_invalid_escape_repaired_to_literal_backslash() {
    assert_eq!(
        parsed(r#"{"a":"C:\dir\file"}"#),
        (json!({"a": "C:\\dir\u{c}ile"}), None)
    );
    assert_eq!(
        repair_json(r#"{"a":"C:\dir\file"}"#),
        r#"{"a":"C:\\dir\file"}"#
    );
    // A backslash at the very end of the text is doubled.
    assert_eq!(repair_json(r#"{"a":"x\"#), r#"{"a":"x\\"#);
}

#[test]
fn c067_short_unicode_escape_repaired_to_literal() {
    assert_eq!(parsed(r#"{"a":"\u12"}"#), (json!({"a": "\\u12"}), None));
    assert_eq!(repair_json(r#"{"a":"\u00e9"}"#), r#"{"a":"\u00e9"}"#);
}

#[test]
fn c068_syntax_error_format() {
    for text in [r#"{"a":1"#, "{'a':1}", r#"{"a":}"#] {
        let (arguments, error) = parsed(text);
        assert_eq!(arguments, json!({}));
        let error = error.expect("error");
        let (description, tail) = error
            .split_once("\n\nReceived arguments:\n")
            .expect("format");
        assert!(!description.is_empty());
        assert_eq!(tail, text);
    }
}

#[test]
fn c069_trailing_data_is_an_error() {
    let (arguments, error) = parsed(r#"{"a":1}{"b":2}"#);
    assert_eq!(arguments, json!({}));
    assert!(error.is_some_and(|e| e.ends_with("\n\nReceived arguments:\n{\"a\":1}{\"b\":2}")));
}

#[test]
fn final_parse_keeps_key_order_and_duplicates() {
    let (arguments, error) = parsed(r#"{"b":1,"2":2,"b":3}"#);
    assert_eq!(error, None);
    assert_eq!(to_string(&arguments), r#"{"2":2,"b":3}"#);
}

#[test]
fn final_parse_lone_surrogate_becomes_replacement() {
    assert_eq!(
        parsed(r#"{"a":"\ud800x","b":"\ud83d\ude00"}"#),
        (json!({"a": "\u{FFFD}x", "b": "😀"}), None)
    );
    // An escaped backslash before `u` is not a unicode escape.
    assert_eq!(
        parsed(r#"{"a":"\\ud800"}"#),
        (json!({"a": "\\ud800"}), None)
    );
}

#[test]
fn repair_leaves_text_outside_strings_alone() {
    assert_eq!(repair_json("{\n\"a\" : 1}"), "{\n\"a\" : 1}");
    assert_eq!(repair_json(r#"{"a":"q\"x\n"}"#), r#"{"a":"q\"x\n"}"#);
}

/// Deterministic pseudo-random generator for the robustness tests.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

#[test]
fn random_text_never_panics_and_always_yields_objects() {
    let alphabet: Vec<char> = "{}[]\":, \\u0aeE+-.19tfnrulsx\u{e9}\u{1F600}\n\t\u{1}d"
        .chars()
        .collect();
    let mut rng = Lcg(7);
    for _ in 0..400 {
        let len = rng.next(80);
        let text: String = (0..len)
            .map(|_| alphabet[rng.next(alphabet.len())])
            .collect();
        let mut stream = ArgumentStream::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let n = 1 + rng.next(6);
            let piece: String = chars[i..(i + n).min(chars.len())].iter().collect();
            assert!(stream.append(&piece).is_object(), "{text:?}");
            i += n;
        }
        let finished = stream.finish();
        assert!(finished.arguments.is_object());
        if finished.error.is_some() {
            assert_eq!(finished.arguments, json!({}));
        }
        let _ = repair_json(&text);
    }
}

/// A long string in small deltas (its cost is checked by counting in tests/stream_cost.rs).
#[test]
fn long_string_in_small_deltas() {
    let mut stream = ArgumentStream::new();
    stream.append(r#"{"content": ""#);
    let chunk = "abcdefghij".repeat(10);
    let first = stream.append(&chunk);
    for _ in 1..2000 {
        stream.append(&chunk);
    }
    // An earlier value is a snapshot: later deltas do not change it.
    assert_eq!(first.to_json(), json!({"content": chunk}));
    let value = stream.append("\"}").to_json();
    assert_eq!(value["content"].as_str().map(str::len), Some(200_000));
}

/// Hostile nesting cannot exhaust the stack: past `json::MAX_PARSE_DEPTH` levels the parser stops
/// reading, and the final parse reports the text as an error.
#[test]
fn extreme_nesting_is_cut_off_safely() {
    let handle = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            let mut stream = ArgumentStream::new();
            let text = format!("{{\"a\":{}", "[".repeat(200_000));
            for chunk in text.as_bytes().chunks(4096) {
                let args = stream.append(std::str::from_utf8(chunk).unwrap());
                assert!(args.is_object());
            }
            let parsed = stream.finish();
            assert!(parsed.error.is_some());
            assert_eq!(parsed.arguments, json!({}));
        })
        .unwrap();
    handle.join().expect("no stack overflow");
}

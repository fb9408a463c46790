//! Accept/reject decisions and error lines of libagent's own schema evaluator against the
//! reference's, case by case: every format of SPEC §5.5.4 with good and bad values, and the
//! keywords whose semantics are easy to get wrong (`unevaluated*` through applicators,
//! `$dynamicRef`, `dependencies` beside `dependentRequired`, `multipleOf` 0 and negative, ...).
//! `tests/schema/decisions.json` holds each case with the outcome pi-ai 1.6.0's
//! `validateToolArguments` gave (recorded by `tests/schema/record.mjs`).

use agent::args::validate_tool_arguments;
use agent::json::Json;
use serde_json::json;

/// "OK", or "ERR " and the error lines joined with " ; " (the recorder's form).
fn outcome(schema: &Json, arguments: &Json) -> String {
    let call = json!({ "id": "c", "name": "t", "arguments": arguments });
    match validate_tool_arguments("t", schema, &call) {
        Ok(_) => "OK".into(),
        Err(error) => {
            let lines: Vec<&str> = error.lines().filter(|l| l.starts_with("  - ")).collect();
            match lines.is_empty() {
                true => format!("ERR {}", error.lines().next().unwrap_or("")),
                false => format!("ERR {}", lines.join(" ; ")),
            }
        }
    }
}

#[test]
fn decisions_match_the_reference() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/schema/decisions.json"
    ))
    .expect("tests/schema/decisions.json is readable");
    let cases: Vec<Json> = serde_json::from_str(&text).expect("decisions.json is JSON");
    assert!(cases.len() > 250, "the case table is complete");
    let mut differences = Vec::new();
    for case in &cases {
        let got = outcome(&case["schema"], &case["arguments"]);
        let expected = case["reference"].as_str().expect("a recorded outcome");
        if got != expected {
            differences.push(format!(
                "{} with {}\n  reference: {expected}\n  libagent:  {got}",
                case["schema"], case["arguments"]
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

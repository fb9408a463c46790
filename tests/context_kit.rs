//! The sessions kit's context-management ops (README §4.3–§4.9: estimate, should-compact,
//! cut-point, file-lists, overflow, retryable, retry-delay) through the Rust API, compared by
//! the kit's own compare.py. The C runner (`make sessions-conformance`) is what counts; this
//! test checks the Rust pieces on their own. The kit is read from `SESSIONS_KIT` (default
//! /work/shared/sessions); without it the test says so and passes nothing off as checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use agent::context::{
    self, cut::CompactionPreparation, projection::Projection, CompactionSettings, FileOps,
    RetrySettings,
};
use agent::json::{self, json, Json};
use agent::session::{self, Session};

const OPS: &[&str] = &[
    "estimate",
    "should-compact",
    "cut-point",
    "file-lists",
    "overflow",
    "retryable",
    "retry-delay",
];

fn kit_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(
        std::env::var("SESSIONS_KIT").unwrap_or_else(|_| "/work/shared/sessions".into()),
    );
    dir.join("fixtures").is_dir().then_some(dir)
}

/// The kit's in-memory session (README §3): the fixture's entries, at `leafId` when given.
fn session_of(fixture: &Json) -> Session {
    let entries = fixture["entries"].as_array().unwrap().clone();
    let mut session = Session::from_entries("/kit/cwd", entries).unwrap();
    if let Some(leaf) = fixture["leafId"].as_str() {
        session.branch(Some(leaf)).unwrap();
    }
    session
}

fn settings_of(fixture: &Json) -> CompactionSettings {
    CompactionSettings::default()
        .with_overrides(fixture.get("settings").unwrap_or(&Json::Null))
        .unwrap()
}

fn prepared(fixture: &Json) -> Option<CompactionPreparation> {
    let session = session_of(fixture);
    context::prepare_compaction(&session.branch_path().unwrap(), &settings_of(fixture))
}

fn run(fixture: &Json) -> Json {
    match fixture["op"].as_str().unwrap() {
        "estimate" => {
            if let Some(messages) = fixture["messages"].as_array() {
                let per: Vec<u64> = messages.iter().map(context::estimate_message).collect();
                json!({"perMessage": per, "context": context::estimate_context(messages).to_json()})
            } else {
                let session = session_of(fixture);
                let branch = session.branch_path().unwrap();
                let projection = Projection::of_branch(&branch);
                json!({"projected": context::estimate_projected(&projection, &branch).to_json()})
            }
        }
        "should-compact" => {
            let results: Vec<Json> = fixture["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|case| {
                    let tokens = match case.get("contextTokens") {
                        Some(t) => t.as_f64().unwrap(),
                        None => context::usage_context_tokens(&case["usage"]),
                    };
                    let settings = CompactionSettings::default()
                        .with_overrides(case.get("settings").unwrap_or(&Json::Null))
                        .unwrap();
                    let window = case["contextWindow"].as_f64().unwrap();
                    json!({"contextTokens": tokens, "shouldCompact": context::should_compact(tokens, window, &settings)})
                })
                .collect();
            json!({ "results": results })
        }
        "cut-point" => match prepared(fixture) {
            None => json!({"prepared": null}),
            Some(p) => {
                let mut out = p.to_json();
                if fixture["recordSummarizerInput"] == json!(true) {
                    out["summarizerInput"] = p.summarizer_input(session::convert_to_llm).to_json();
                }
                json!({ "prepared": out })
            }
        },
        "file-lists" => {
            if let Some(messages) = fixture["messages"].as_array() {
                let ops = FileOps::from_messages(messages);
                let lists = ops.lists();
                json!({"fileOps": ops.to_json(), "readFiles": lists.read_files, "modifiedFiles": lists.modified_files})
            } else {
                match prepared(fixture) {
                    None => json!({"prepared": false}),
                    Some(p) => {
                        let lists = p.file_ops.lists();
                        json!({"prepared": true, "fileOps": p.file_ops.to_json(), "readFiles": lists.read_files, "modifiedFiles": lists.modified_files})
                    }
                }
            }
        }
        "overflow" => {
            let results: Vec<Json> = fixture["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|case| {
                    let mut message = json!({"stopReason": "error", "provider": "kit",
                        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}});
                    for (key, value) in case["message"].as_object().unwrap() {
                        if key == "usage" {
                            for (k, v) in value.as_object().unwrap() {
                                message["usage"][k] = v.clone();
                            }
                        } else {
                            message[key] = value.clone();
                        }
                    }
                    let window = case.get("contextWindow").and_then(Json::as_f64);
                    let mut result = json!({"overflow": context::is_context_overflow(&message, window)});
                    if let Some(desired) = case.get("desiredMaxOutput").and_then(Json::as_f64) {
                        result["recoverableLength"] = context::is_recoverable_length(&message, desired).into();
                    }
                    result
                })
                .collect();
            json!({ "results": results })
        }
        "retryable" => {
            let results: Vec<Json> = fixture["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|case| {
                    let message = json!({
                        "stopReason": case.get("stopReason").cloned().unwrap_or(json!("error")),
                        "errorMessage": case["errorMessage"],
                        "provider": case.get("provider").cloned().unwrap_or(json!("kit")),
                        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                    });
                    let window = case.get("contextWindow").and_then(Json::as_f64);
                    let retryable = context::is_retryable_error(&message);
                    let overflow = context::is_context_overflow(&message, window);
                    json!({"retryable": retryable, "overflow": overflow, "retryableInSession": retryable && !overflow})
                })
                .collect();
            json!({ "results": results })
        }
        "retry-delay" => {
            let results: Vec<Json> = fixture["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|case| {
                    let settings = RetrySettings::default().with_overrides(&case["settings"]).unwrap();
                    match case.get("attempt") {
                        Some(attempt) => json!({"delayMs": context::retry_delay_ms(
                            settings.base_delay_ms, settings.max_delay_ms, attempt.as_i64().unwrap())}),
                        None => json!({"delays": context::retry_schedule(&settings)}),
                    }
                })
                .collect();
            json!({ "results": results })
        }
        op => panic!("not a context op: {op}"),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("context-kit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_context_ops_of_the_sessions_kit_match() {
    let Some(kit) = kit_dir() else {
        eprintln!("sessions kit not found (set SESSIONS_KIT): skipped");
        return;
    };
    let expected = temp_dir("expected");
    let actual = temp_dir("actual");
    let mut count = 0;
    let mut names: Vec<PathBuf> = std::fs::read_dir(kit.join("fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let fixture = json::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if !OPS.contains(&fixture["op"].as_str().unwrap_or("")) {
            continue;
        }
        let file = path.file_name().unwrap();
        std::fs::copy(kit.join("expected").join(file), expected.join(file)).unwrap();
        std::fs::write(actual.join(file), json::to_string(&run(&fixture))).unwrap();
        count += 1;
    }
    assert!(
        count >= 37,
        "only {count} context fixtures found in {}",
        kit.display()
    );
    let output = Command::new("python3")
        .arg(kit.join("compare.py"))
        .args([&expected, &actual])
        .output()
        .expect("python3 runs compare.py");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(&format!("sessions conformance: {count} passed, 0 failed")),
        "{text}"
    );
    for dir in [expected, actual] {
        let _ = std::fs::remove_dir_all(Path::new(&dir));
    }
}

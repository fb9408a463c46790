//! Regressions found by the conformance runner (tests/conformance) against the reference traces.

use agent::json::{json, Json};
use agent::stream::assemble::{Assembler, StreamOutput};

fn forwarded(assembler: &mut Assembler, event: Json) -> Json {
    match assembler.accept(event) {
        // The event's `partial` is a placeholder; the snapshot is its value.
        StreamOutput::Update { event } => {
            let partial = assembler.snapshot();
            let mut event = event.to_json(&partial);
            event["partial"] = partial.to_json();
            event
        }
        other => panic!("expected an update, got {other:?}"),
    }
}

fn keys(event: &Json) -> Vec<String> {
    event
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default()
}

/// Conformance 002/004: the delta form's input-only fields (`id`/`toolName` of `toolcall_start`,
/// `contentSignature`/`redacted` of `*_end`) are not forwarded: `message_update` carries the
/// reference's event shape (SPEC §3.7, last paragraph).
#[test]
fn delta_form_input_fields_are_not_forwarded() {
    let model = json!({"id": "m1", "api": "test-api", "provider": "test-prov"});
    let mut a = Assembler::new(&model);
    assert!(matches!(
        a.accept(json!({"type": "start"})),
        StreamOutput::Start { .. }
    ));
    forwarded(&mut a, json!({"type": "thinking_start", "contentIndex": 0}));
    let end = forwarded(
        &mut a,
        json!({"type": "thinking_end", "contentIndex": 0, "content": "Plan",
            "contentSignature": "sig", "redacted": false}),
    );
    assert_eq!(keys(&end), ["type", "contentIndex", "content", "partial"]);
    assert_eq!(end["partial"]["content"][0]["thinkingSignature"], "sig");
    assert_eq!(end["partial"]["content"][0]["redacted"], false);

    forwarded(&mut a, json!({"type": "text_start", "contentIndex": 1}));
    let end = forwarded(
        &mut a,
        json!({"type": "text_end", "contentIndex": 1, "content": "Hi", "contentSignature": "t"}),
    );
    assert_eq!(keys(&end), ["type", "contentIndex", "content", "partial"]);
    assert_eq!(end["partial"]["content"][1]["textSignature"], "t");

    let start = forwarded(
        &mut a,
        json!({"type": "toolcall_start", "contentIndex": 2, "id": "call_1", "toolName": "read"}),
    );
    assert_eq!(keys(&start), ["type", "contentIndex", "partial"]);
    assert_eq!(start["partial"]["content"][2]["id"], "call_1");
    assert_eq!(start["partial"]["content"][2]["name"], "read");
}

/// Extra scenario (identity with an unknown field): the forwarded identity merges only the
/// ClientIdentity fields `userAgent`, `attribution` and `version` over the default; other
/// fields are dropped, `null` is kept (verified with the conformance oracle).
#[test]
fn identity_merges_only_client_identity_fields() {
    use agent::agent_loop::merged_identity;
    let merged = merged_identity(Some(
        &json!({"extra": 1, "userAgent": "short", "version": "v"}),
    ));
    assert_eq!(
        merged,
        json!({"attribution": {"name": "pi", "url": "https://pi.dev", "categories": ["cli-agent"]},
            "userAgent": "short", "version": "v"})
    );
    let merged = merged_identity(Some(&json!({"attribution": null, "zzz": null})));
    assert_eq!(merged, json!({"attribution": null}));
}

/// Conformance 946: the replay keeps the first timestamp that is neither absent nor null, and
/// system messages without one do not make a system message unless tools stay declared (the
/// replayed message then gets timestamp 0). `state.systemPrompt` and `reset()` depend on it.
#[test]
fn system_replay_ignores_messages_without_timestamp() {
    use agent::transcript::{get_current_system_message, get_current_system_prompt};
    let untimed = vec![
        json!({"role": "system", "content": "no ts"}),
        json!({"role": "user", "content": "x"}),
    ];
    assert_eq!(get_current_system_message(&untimed), None);
    assert_eq!(get_current_system_prompt(&untimed), "");

    let null_then_seven = vec![
        json!({"role": "system", "content": "a", "timestamp": null}),
        json!({"role": "system", "content": "b", "timestamp": 7}),
    ];
    assert_eq!(
        get_current_system_message(&null_then_seven),
        Some(json!({"role": "system", "content": "a\n\nb", "timestamp": 7}))
    );

    let tool = json!({"name": "echo", "description": "Echo.", "parameters": {"type": "object"}});
    let tools_only = vec![json!({"role": "system", "content": "t", "toolsAdded": [tool.clone()]})];
    assert_eq!(
        get_current_system_message(&tools_only),
        Some(json!({"role": "system", "content": "t", "toolsAdded": [tool], "timestamp": 0}))
    );
    assert_eq!(get_current_system_prompt(&tools_only), "t");
}

/// Conformance q01 (kept as 947): `JSON.parse` accepts nesting beyond serde_json's default 128
/// levels, so the final parse of deep tool arguments must too (up to 512 levels); walking the value (print,
/// clone, drop) stays within a small thread stack.
#[test]
fn deep_arguments_parse_beyond_128_levels() {
    let depth = 512;
    let text = format!(
        "{{\"a\": {}1{}, \"b\": 2}}",
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    );
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let value = agent::json::parse(&text).expect("deep JSON parses");
            assert_eq!(value["b"], json!(2));
            let printed = agent::json::to_string(&value);
            assert_eq!(printed, text.replace(" ", ""));
            let copy = value.clone();
            drop(copy);
            let too_deep = format!("{}{}", "[".repeat(depth + 1), "]".repeat(depth + 1));
            assert!(agent::json::parse(&too_deep).is_err());
            // Brackets inside strings do not count.
            let quoted = format!("[\"{}\"]", "[".repeat(5000));
            assert!(agent::json::parse(&quoted).is_ok());
        })
        .expect("thread");
    handle.join().expect("no stack overflow");
}

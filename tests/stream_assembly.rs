//! SPEC §3.3–§3.5, §3.7, §3.10 at the Assembler level: checklist items 13, 16, 17, 19, 25–38 and
//! the 15-event worked example of §3.7.

use agent::json::{json, to_string, Json};
use agent::message::zero_usage;
use agent::stream::assemble::{Assembler, StreamOutput};

fn model() -> Json {
    json!({"id": "m1", "name": "Model", "api": "test-api", "provider": "test-prov"})
}

fn started() -> Assembler {
    let mut a = Assembler::new(&model());
    assert!(matches!(
        a.accept(json!({"type": "start"})),
        StreamOutput::Start { .. }
    ));
    a
}

/// The forwarded event and partial of the update `step` makes (the partial as of it is the
/// assembler's after it).
fn update(a: &mut Assembler, step: impl FnOnce(&mut Assembler) -> StreamOutput) -> (Json, Json) {
    match step(a) {
        StreamOutput::Update { event } => {
            let partial = a.snapshot();
            // The event's `partial` is a placeholder; the snapshot is its value.
            let mut event = event.to_json(&partial);
            let partial = partial.to_json();
            event["partial"] = partial.clone();
            (event, partial)
        }
        other => panic!("expected Update, got {other:?}"),
    }
}

/// `update` of an event the host pushed.
fn accepted(a: &mut Assembler, event: Json) -> (Json, Json) {
    update(a, |s| s.accept(event))
}

fn final_message(result: StreamOutput) -> (Json, bool) {
    match result {
        StreamOutput::Final { message, started } => (message, started),
        other => panic!("expected Final, got {other:?}"),
    }
}

fn content(partial: &Json) -> String {
    to_string(&partial["content"])
}

/// The partial message of a `Start` output.
fn start_partial(output: StreamOutput) -> Json {
    match output {
        StreamOutput::Start { partial } => partial.to_json(),
        other => panic!("not a start: {other:?}"),
    }
}

#[test]
fn worked_example_rows() {
    let mut a = Assembler::new(&model());
    let StreamOutput::Start { partial } = a.accept(json!({"type": "start"})) else {
        panic!("start")
    };
    let partial = partial.to_json();
    assert_eq!(content(&partial), "[]");
    assert_eq!(partial["stopReason"], "pending");

    let thinking = r#"{"type":"thinking","thinking":"Plan","thinkingSignature":"sig1"}"#;
    let text = r#"{"type":"text","text":"Reading."}"#;
    let rows: Vec<(Json, String)> = vec![
        (
            json!({"type":"thinking_start","contentIndex":0}),
            r#"[{"type":"thinking","thinking":""}]"#.into(),
        ),
        (
            json!({"type":"thinking_delta","contentIndex":0,"delta":"Plan"}),
            r#"[{"type":"thinking","thinking":"Plan"}]"#.into(),
        ),
        (
            json!({"type":"thinking_end","contentIndex":0,"contentSignature":"sig1"}),
            format!("[{thinking}]"),
        ),
        (
            json!({"type":"text_start","contentIndex":1}),
            format!(r#"[{thinking},{{"type":"text","text":""}}]"#),
        ),
        (
            json!({"type":"text_delta","contentIndex":1,"delta":"Read"}),
            format!(r#"[{thinking},{{"type":"text","text":"Read"}}]"#),
        ),
        (
            json!({"type":"text_delta","contentIndex":1,"delta":"ing."}),
            format!("[{thinking},{text}]"),
        ),
        (
            json!({"type":"text_end","contentIndex":1}),
            format!("[{thinking},{text}]"),
        ),
        (
            json!({"type":"toolcall_start","contentIndex":2,"id":"call_1","toolName":"read"}),
            format!(
                r#"[{thinking},{text},{{"type":"toolCall","id":"call_1","name":"read","arguments":{{}}}}]"#
            ),
        ),
        (
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"{\"pa"}),
            format!(
                r#"[{thinking},{text},{{"type":"toolCall","id":"call_1","name":"read","arguments":{{}}}}]"#
            ),
        ),
        (
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"th\": \"src/ma"}),
            format!(
                r#"[{thinking},{text},{{"type":"toolCall","id":"call_1","name":"read","arguments":{{"path":"src/ma"}}}}]"#
            ),
        ),
        (
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"in.rs\", \"limit\": 2"}),
            format!(
                r#"[{thinking},{text},{{"type":"toolCall","id":"call_1","name":"read","arguments":{{"path":"src/main.rs","limit":2}}}}]"#
            ),
        ),
        (
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"0}"}),
            format!(
                r#"[{thinking},{text},{{"type":"toolCall","id":"call_1","name":"read","arguments":{{"path":"src/main.rs","limit":20}}}}]"#
            ),
        ),
        (
            json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"src/main.rs","limit":20}}}),
            format!(
                r#"[{thinking},{text},{{"type":"toolCall","id":"call_1","name":"read","arguments":{{"path":"src/main.rs","limit":20}}}}]"#
            ),
        ),
    ];
    for (n, (event, expected)) in rows.into_iter().enumerate() {
        let (forwarded, partial) = accepted(&mut a, event);
        assert_eq!(content(&partial), expected, "row {}", n + 2);
        assert_eq!(forwarded["partial"], partial, "row {}", n + 2);
    }
    let usage = json!({"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let (message, was_started) =
        final_message(a.accept(json!({"type":"done","reason":"toolUse","usage":usage})));
    assert!(was_started);
    assert_eq!(message["stopReason"], "toolUse");
    assert_eq!(message["usage"], usage);
    assert_eq!(message["content"].as_array().map(Vec::len), Some(3));
    assert!(a.is_complete());
}

#[test]
fn c013_updates_before_start_ignored() {
    let mut a = Assembler::new(&model());
    assert_eq!(
        a.accept(json!({"type": "text_start", "contentIndex": 0})),
        StreamOutput::Ignored
    );
    assert_eq!(
        a.accept(json!({"type": "text_delta", "contentIndex": 0, "delta": "x"})),
        StreamOutput::Ignored
    );
    let full = json!({"type": "text_start", "contentIndex": 0, "partial": {"role": "assistant", "content": [{"type": "text", "text": ""}]}});
    assert_eq!(a.accept(full), StreamOutput::Ignored);
    let StreamOutput::Start { partial } = a.accept(json!({"type": "start"})) else {
        panic!("start")
    };
    let partial = partial.to_json();
    assert_eq!(content(&partial), "[]");
}

#[test]
fn c016_events_after_terminal_ignored() {
    let mut a = started();
    let _ = final_message(a.accept(json!({"type": "done", "reason": "stop"})));
    assert_eq!(
        a.accept(json!({"type": "text_start", "contentIndex": 0})),
        StreamOutput::Ignored
    );
    assert_eq!(
        a.accept(json!({"type": "error", "reason": "error", "errorMessage": "x"})),
        StreamOutput::Ignored
    );
    assert_eq!(a.accept(json!({"type": "start"})), StreamOutput::Ignored);
    assert_eq!(a.end(None), StreamOutput::Ignored);
}

#[test]
fn c017_second_start_ignored() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    assert_eq!(
        a.accept(json!({"type": "start", "partial": {"role": "assistant", "content": []}})),
        StreamOutput::Ignored
    );
    let (_, partial) = accepted(
        &mut a,
        json!({"type": "text_delta", "contentIndex": 0, "delta": "hi"}),
    );
    assert_eq!(content(&partial), r#"[{"type":"text","text":"hi"}]"#);
}

#[test]
fn c019_end_without_terminal_event() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    let _ = accepted(
        &mut a,
        json!({"type": "text_delta", "contentIndex": 0, "delta": "so far"}),
    );
    let (message, was_started) = final_message(a.end(None));
    assert!(was_started);
    assert_eq!(message["stopReason"], "error");
    assert_eq!(
        message["errorMessage"],
        "Stream ended without a done or error event"
    );
    assert_eq!(content(&message), r#"[{"type":"text","text":"so far"}]"#);
    assert!(a.is_complete());

    // Without a start: a fresh base partial.
    let mut b = Assembler::new(&model());
    let (message, was_started) = final_message(b.end(None));
    assert!(!was_started);
    assert_eq!(message["stopReason"], "error");
    assert_eq!(
        message["errorMessage"],
        "Stream ended without a done or error event"
    );
    assert_eq!(message["model"], "m1");
    assert_eq!(content(&message), "[]");
}

#[test]
fn end_with_explicit_final_message() {
    let mut a = started();
    let explicit =
        json!({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 5});
    assert_eq!(
        final_message(a.end(Some(explicit.clone()))),
        (explicit, true)
    );
    assert_eq!(a.end(None), StreamOutput::Ignored);
}

#[test]
fn c025_unknown_event_types_ignored() {
    let mut a = started();
    assert_eq!(
        a.accept(json!({"type": "mystery", "contentIndex": 0})),
        StreamOutput::Ignored
    );
    assert_eq!(a.accept(json!({"no": "type"})), StreamOutput::Ignored);
    assert_eq!(a.accept(json!([1, 2])), StreamOutput::Ignored);
    assert_eq!(a.accept(json!("text_start")), StreamOutput::Ignored);
    assert!(!a.is_complete());
}

#[test]
fn c026_delta_start_builds_base_partial() {
    let mut a = Assembler::new(&model());
    let StreamOutput::Start { partial } = a.accept(json!({"type": "start"})) else {
        panic!("start")
    };
    let partial = partial.to_json();
    let keys: Vec<&str> = partial
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "role",
            "stopReason",
            "content",
            "api",
            "provider",
            "model",
            "usage",
            "timestamp"
        ]
    );
    assert_eq!(partial["role"], "assistant");
    assert_eq!(partial["stopReason"], "pending");
    assert_eq!(partial["api"], "test-api");
    assert_eq!(partial["provider"], "test-prov");
    assert_eq!(partial["model"], "m1");
    assert_eq!(partial["usage"], zero_usage());
    assert!(partial["timestamp"]
        .as_i64()
        .is_some_and(|t| t > 1_600_000_000_000));

    // With a partial, it is taken as given.
    let mut b = Assembler::new(&model());
    let given = json!({"role": "assistant", "content": [], "api": "x", "stopReason": "pending", "timestamp": 3});
    assert_eq!(
        start_partial(b.accept(json!({"type": "start", "partial": given.clone()}))),
        given
    );
}

#[test]
fn c027_text_delta_appends() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    for (delta, expected) in [("He", "He"), ("llo", "Hello"), ("", "Hello")] {
        let (event, partial) = accepted(
            &mut a,
            json!({"type": "text_delta", "contentIndex": 0, "delta": delta}),
        );
        assert_eq!(partial["content"][0]["text"], expected);
        assert_eq!(event["delta"], delta);
    }
}

#[test]
fn c028_text_end_content_and_signature() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    let _ = accepted(
        &mut a,
        json!({"type": "text_delta", "contentIndex": 0, "delta": "draft"}),
    );
    let (event, partial) = accepted(
        &mut a,
        json!({"type": "text_end", "contentIndex": 0, "content": "final", "contentSignature": "s"}),
    );
    assert_eq!(
        content(&partial),
        r#"[{"type":"text","text":"final","textSignature":"s"}]"#
    );
    assert_eq!(event["content"], "final");

    // Without `content`, the forwarded content is the accumulated text.
    let mut b = started();
    let _ = accepted(&mut b, json!({"type": "text_start", "contentIndex": 0}));
    let _ = accepted(
        &mut b,
        json!({"type": "text_delta", "contentIndex": 0, "delta": "abc"}),
    );
    let (event, _) = accepted(&mut b, json!({"type": "text_end", "contentIndex": 0}));
    let expected = format!(
        r#"{{"type":"text_end","contentIndex":0,"content":"abc","partial":{}}}"#,
        to_string(&event["partial"])
    );
    assert_eq!(to_string(&event), expected);
}

#[test]
fn c029_thinking_end_signature_and_redacted() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "thinking_start", "contentIndex": 0}));
    let _ = accepted(
        &mut a,
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": "hmm"}),
    );
    let (event, partial) = accepted(
        &mut a,
        json!({"type": "thinking_end", "contentIndex": 0, "contentSignature": "sig", "redacted": true}),
    );
    assert_eq!(
        content(&partial),
        r#"[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig","redacted":true}]"#
    );
    assert_eq!(event["content"], "hmm");
}

#[test]
fn c030_toolcall_start_block() {
    let mut a = started();
    let (_, partial) = accepted(
        &mut a,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "read"}),
    );
    assert_eq!(
        content(&partial),
        r#"[{"type":"toolCall","id":"c1","name":"read","arguments":{}}]"#
    );
}

#[test]
fn c031_toolcall_delta_uses_partial_parser() {
    let mut a = started();
    let _ = accepted(
        &mut a,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "read"}),
    );
    let (_, partial) = accepted(
        &mut a,
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"pa"}),
    );
    assert_eq!(partial["content"][0]["arguments"], json!({}));
    let (_, partial) = accepted(
        &mut a,
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "th\": \"src/ma"}),
    );
    assert_eq!(
        partial["content"][0]["arguments"],
        json!({"path": "src/ma"})
    );
}

#[test]
fn c032_toolcall_end_copies_tool_call_fields() {
    let mut a = started();
    let _ = accepted(
        &mut a,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "read"}),
    );
    let _ = accepted(
        &mut a,
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"a\":1"}),
    );
    let (event, partial) = accepted(
        &mut a,
        json!({"type": "toolcall_end", "contentIndex": 0,
        "toolCall": {"type": "toolCall", "id": "c1", "name": "read2", "arguments": {"b": 2}, "thoughtSignature": "t"}}),
    );
    let expected = r#"{"type":"toolCall","id":"c1","name":"read2","arguments":{"b":2},"thoughtSignature":"t"}"#;
    assert_eq!(to_string(&partial["content"][0]), expected);
    assert_eq!(to_string(&event["toolCall"]), expected);
}

#[test]
fn c033_toolcall_end_without_tool_call_uses_final_parse() {
    let mut a = started();
    let _ = accepted(
        &mut a,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "read"}),
    );
    let _ = accepted(
        &mut a,
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"a\":\"x\\dy\"}"}),
    );
    let (event, partial) = accepted(&mut a, json!({"type": "toolcall_end", "contentIndex": 0}));
    assert_eq!(partial["content"][0]["arguments"], json!({"a": "x\\dy"}));
    assert!(partial["content"][0].get("argumentsError").is_none());
    assert_eq!(event["toolCall"], partial["content"][0]);

    let mut b = started();
    let _ = accepted(
        &mut b,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "read"}),
    );
    let _ = accepted(
        &mut b,
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"a\":1"}),
    );
    let (event, partial) = accepted(&mut b, json!({"type": "toolcall_end", "contentIndex": 0}));
    let block = &partial["content"][0];
    assert_eq!(block["arguments"], json!({}));
    let error = block["argumentsError"].as_str().unwrap_or_default();
    assert!(
        error.ends_with("\n\nReceived arguments:\n{\"a\":1"),
        "{error}"
    );
    assert_eq!(&event["toolCall"], block);
    // The argument stream is dropped: later deltas fail.
    let (message, _) =
        final_message(b.accept(json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "x"})));
    assert_eq!(
        message["errorMessage"],
        "Received toolcall_delta for non-toolCall content"
    );
}

#[test]
fn c034_text_delta_on_non_text_block_fails() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "thinking_start", "contentIndex": 0}));
    let (message, was_started) =
        final_message(a.accept(json!({"type": "text_delta", "contentIndex": 0, "delta": "x"})));
    assert!(was_started);
    assert_eq!(message["stopReason"], "error");
    assert_eq!(
        message["errorMessage"],
        "Received text_delta for non-text content"
    );
    assert_eq!(content(&message), r#"[{"type":"thinking","thinking":""}]"#);
    assert!(a.is_complete());
    assert_eq!(
        a.accept(json!({"type": "done", "reason": "stop"})),
        StreamOutput::Ignored
    );
}

#[test]
fn c035_toolcall_delta_on_non_tool_call_block_fails() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    let (message, _) =
        final_message(a.accept(json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{"})));
    assert_eq!(
        message["errorMessage"],
        "Received toolcall_delta for non-toolCall content"
    );
    assert_eq!(message["stopReason"], "error");
}

#[test]
fn other_failure_texts() {
    let cases = [
        ("text_end", "Received text_end for non-text content"),
        (
            "thinking_delta",
            "Received thinking_delta for non-thinking content",
        ),
        (
            "thinking_end",
            "Received thinking_end for non-thinking content",
        ),
    ];
    for (kind, text) in cases {
        let mut a = started();
        let _ = accepted(
            &mut a,
            json!({"type": "toolcall_start", "contentIndex": 0, "id": "c", "toolName": "t"}),
        );
        let (message, _) =
            final_message(a.accept(json!({"type": kind, "contentIndex": 0, "delta": "x"})));
        assert_eq!(message["errorMessage"], text);
    }
    // Missing or out-of-range index: not a block of that kind.
    let mut a = started();
    let (message, _) =
        final_message(a.accept(json!({"type": "text_delta", "contentIndex": 7, "delta": "x"})));
    assert_eq!(
        message["errorMessage"],
        "Received text_delta for non-text content"
    );
    let mut b = started();
    let (message, _) = final_message(b.accept(json!({"type": "thinking_delta", "delta": "x"})));
    assert_eq!(
        message["errorMessage"],
        "Received thinking_delta for non-thinking content"
    );
}

#[test]
fn toolcall_end_on_non_tool_call_block_ignored() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    assert_eq!(
        a.accept(json!({"type": "toolcall_end", "contentIndex": 0})),
        StreamOutput::Ignored
    );
    assert_eq!(
        a.accept(json!({"type": "toolcall_end", "contentIndex": 4})),
        StreamOutput::Ignored
    );
    assert_eq!(
        a.accept(json!({"type": "toolcall_end"})),
        StreamOutput::Ignored
    );
    assert!(!a.is_complete());
}

#[test]
fn c036_done_without_message_uses_partial() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    let usage = json!({"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let (message, _) = final_message(a.accept(
        json!({"type": "done", "reason": "stop", "usage": usage, "providerThinkingLevel": "high"}),
    ));
    assert_eq!(message["stopReason"], "stop");
    assert_eq!(message["usage"], usage);
    assert_eq!(message["providerThinkingLevel"], "high");
    assert_eq!(content(&message), r#"[{"type":"text","text":""}]"#);

    // [libagent] usage is kept when not given.
    let mut b = started();
    let (message, _) = final_message(b.accept(json!({"type": "done", "reason": "length"})));
    assert_eq!(message["stopReason"], "length");
    assert_eq!(message["usage"], zero_usage());

    // A given `message` is the final message as is.
    let mut c = started();
    let given = json!({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1});
    assert_eq!(
        final_message(
            c.accept(json!({"type": "done", "reason": "stop", "message": given.clone()}))
        ),
        (given, true)
    );
}

#[test]
fn c037_error_without_error_sets_error_message() {
    let mut a = started();
    let (message, _) = final_message(a.accept(
        json!({"type": "error", "reason": "aborted", "errorMessage": "Request was aborted"}),
    ));
    assert_eq!(message["stopReason"], "aborted");
    assert_eq!(message["errorMessage"], "Request was aborted");

    let mut b = started();
    let given = json!({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "429", "timestamp": 1});
    assert_eq!(
        final_message(
            b.accept(json!({"type": "error", "reason": "error", "error": given.clone()}))
        ),
        (given, true)
    );
}

#[test]
fn terminal_as_first_event_is_final_without_start() {
    let mut a = Assembler::new(&model());
    let given = json!({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "setup", "timestamp": 1});
    assert_eq!(
        final_message(
            a.accept(json!({"type": "error", "reason": "error", "error": given.clone()}))
        ),
        (given, false)
    );

    let mut b = Assembler::new(&model());
    let (message, was_started) = final_message(b.accept(json!({"type": "done", "reason": "stop"})));
    assert!(!was_started);
    assert_eq!(message["stopReason"], "stop");
    assert_eq!(message["api"], "test-api");
}

#[test]
fn c038_forwarded_events_are_full_form() {
    let mut a = started();
    let events = [
        json!({"type": "text_start", "contentIndex": 0}),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "x"}),
        json!({"type": "text_end", "contentIndex": 0}),
        json!({"type": "thinking_start", "contentIndex": 1}),
        json!({"type": "thinking_delta", "contentIndex": 1, "delta": "y"}),
        json!({"type": "thinking_end", "contentIndex": 1}),
        json!({"type": "toolcall_start", "contentIndex": 2, "id": "c", "toolName": "t"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{}"}),
        json!({"type": "toolcall_end", "contentIndex": 2}),
    ];
    for event in events {
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        let (forwarded, partial) = accepted(&mut a, event);
        assert_eq!(forwarded["type"], kind.as_str());
        assert_eq!(forwarded["partial"], partial);
        match kind.as_str() {
            "text_end" => assert_eq!(forwarded["content"], "x"),
            "thinking_end" => assert_eq!(forwarded["content"], "y"),
            "toolcall_end" => assert_eq!(forwarded["toolCall"], partial["content"][2]),
            _ => {}
        }
    }
}

#[test]
fn full_form_events_forwarded_as_given() {
    let mut a = Assembler::new(&model());
    let p0 = json!({"role": "assistant", "content": [], "stopReason": "pending", "timestamp": 9});
    assert_eq!(
        start_partial(a.accept(json!({"type": "start", "partial": p0.clone()}))),
        p0
    );
    let p1 = json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "t", "arguments": {}}],
        "stopReason": "pending", "timestamp": 9});
    let event = json!({"type": "toolcall_start", "contentIndex": 0, "partial": p1.clone()});
    let (forwarded, partial) = accepted(&mut a, event.clone());
    assert_eq!(forwarded, event);
    assert_eq!(partial, p1);
    // A later delta-form delta still works: the full-form start created an argument stream.
    let (forwarded, partial) = accepted(
        &mut a,
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"k\": 1"}),
    );
    assert_eq!(partial["content"][0]["arguments"], json!({"k": 1}));
    assert_eq!(forwarded["partial"], partial);
    assert_eq!(partial["timestamp"], 9);
}

#[test]
fn mixed_stream_partial_replaces_p() {
    let mut a = started();
    let _ = accepted(&mut a, json!({"type": "text_start", "contentIndex": 0}));
    let replaced = json!({"role": "assistant", "content": [{"type": "text", "text": "abc"}], "stopReason": "pending", "timestamp": 2});
    let _ = accepted(
        &mut a,
        json!({"type": "text_delta", "contentIndex": 0, "delta": "c", "partial": replaced}),
    );
    let (_, partial) = accepted(
        &mut a,
        json!({"type": "text_delta", "contentIndex": 0, "delta": "d"}),
    );
    assert_eq!(content(&partial), r#"[{"type":"text","text":"abcd"}]"#);
    let (message, _) = final_message(a.accept(json!({"type": "done", "reason": "stop"})));
    assert_eq!(message["timestamp"], 2);
}

#[test]
fn start_beyond_end_pads_and_bad_indexes_do_not_panic() {
    let mut a = started();
    let (_, partial) = accepted(&mut a, json!({"type": "text_start", "contentIndex": 2}));
    assert_eq!(
        content(&partial),
        r#"[null,null,{"type":"text","text":""}]"#
    );
    assert_eq!(
        a.accept(json!({"type": "text_start", "contentIndex": 1_000_000_000u64})),
        StreamOutput::Ignored
    );
    assert_eq!(
        a.accept(json!({"type": "text_start", "contentIndex": -1})),
        StreamOutput::Ignored
    );
    assert_eq!(
        a.accept(json!({"type": "text_start", "contentIndex": "0"})),
        StreamOutput::Ignored
    );
    let (_, partial) = accepted(
        &mut a,
        json!({"type": "text_delta", "contentIndex": 2.0, "delta": 5}),
    );
    assert_eq!(partial["content"][2]["text"], "");
    let (message, _) =
        final_message(a.accept(json!({"type": "text_delta", "contentIndex": 0.5, "delta": "x"})));
    assert_eq!(
        message["errorMessage"],
        "Received text_delta for non-text content"
    );
}

#[test]
fn forwarded_field_order_keeps_host_fields() {
    let mut a = started();
    let _ = accepted(
        &mut a,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "c", "toolName": "t"}),
    );
    let (event, _) = accepted(
        &mut a,
        json!({"contentIndex": 0, "type": "toolcall_end", "extra": 1}),
    );
    let keys: Vec<&str> = event
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        ["contentIndex", "type", "extra", "toolCall", "partial"]
    );
}

#[test]
fn random_events_never_panic() {
    let kinds = [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
        "error",
        "other",
    ];
    let indexes = [
        json!(0),
        json!(1),
        json!(2),
        json!(5),
        json!(-1),
        json!(1.5),
        json!(null),
        json!("1"),
    ];
    let values = [
        json!("x"),
        json!("{\"a\":"),
        json!(3),
        json!(null),
        json!({"k": 1}),
        json!([1]),
        json!(true),
    ];
    let mut state: u64 = 11;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    for _ in 0..300 {
        let mut a = Assembler::new(&model());
        for _ in 0..30 {
            let mut event = json!({"type": kinds[next(kinds.len())]});
            for key in [
                "contentIndex",
                "delta",
                "content",
                "toolCall",
                "partial",
                "message",
                "error",
                "usage",
                "reason",
                "id",
                "toolName",
                "redacted",
            ] {
                if next(3) == 0 {
                    event[key] = if key == "contentIndex" {
                        indexes[next(indexes.len())].clone()
                    } else {
                        values[next(values.len())].clone()
                    };
                }
            }
            if next(20) == 0 {
                event = values[next(values.len())].clone();
            }
            let _ = a.accept(event);
        }
        let _ = a.end(None);
        assert!(a.is_complete());
    }
}

/// SPEC §0.4.8: a partial delivered with an event never changes afterwards, although the
/// partials share their texts, blocks and argument values (ARCHITECTURE principle 5).
#[test]
fn kept_partials_never_change() {
    let mut a = started();
    let events = [
        json!({"type": "text_start", "contentIndex": 0}),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "lo"}),
        json!({"type": "thinking_start", "contentIndex": 1}),
        json!({"type": "thinking_delta", "contentIndex": 1, "delta": "hmm"}),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "!"}),
        json!({"type": "thinking_end", "contentIndex": 1, "content": "replaced", "contentSignature": "s"}),
        json!({"type": "toolcall_start", "contentIndex": 2, "id": "c1", "toolName": "t"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"a\": \"x"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "yz\", \"b\": [1"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": ", 2]}"}),
        json!({"type": "text_end", "contentIndex": 0, "content": "Bye"}),
        json!({"type": "toolcall_end", "contentIndex": 2}),
        json!({"type": "text_start", "contentIndex": 0}),
    ];
    // (the values as delivered, their JSON at delivery)
    let mut delivered = Vec::new();
    let mut kept: Vec<(Json, Json)> = Vec::new();
    for event in events {
        let StreamOutput::Update { event } = a.accept(event) else {
            panic!("expected an update")
        };
        let partial = a.snapshot();
        kept.push((event.to_json(&partial), partial.to_json()));
        delivered.push((event, partial));
        // Rebuilding from the delivered values later gives the JSON they had at delivery.
        for ((event, partial), (event_then, partial_then)) in delivered.iter().zip(&kept) {
            assert_eq!(&event.to_json(partial), event_then);
            assert_eq!(&partial.to_json(), partial_then);
        }
    }
    let contents: Vec<String> = kept.iter().map(|(_, p)| content(p)).collect();
    assert_eq!(contents[2], r#"[{"type":"text","text":"Hello"}]"#);
    assert_eq!(
        contents[5],
        r#"[{"type":"text","text":"Hello!"},{"type":"thinking","thinking":"hmm"}]"#
    );
    assert_eq!(
        contents[9],
        r#"[{"type":"text","text":"Hello!"},{"type":"thinking","thinking":"replaced","thinkingSignature":"s"},{"type":"toolCall","id":"c1","name":"t","arguments":{"a":"xyz","b":[1]}}]"#
    );
    assert_eq!(kept[11].0["content"], "Bye");
    assert_eq!(
        kept[12].0["toolCall"]["arguments"],
        json!({"a": "xyz", "b": [1, 2]})
    );
    assert_eq!(
        contents[13],
        r#"[{"type":"text","text":""},{"type":"thinking","thinking":"replaced","thinkingSignature":"s"},{"type":"toolCall","id":"c1","name":"t","arguments":{"a":"xyz","b":[1,2]}}]"#
    );
}

/// Every `StreamOp` gives what the delta-form JSON event it stands for gives: the same forwarded
/// events, the same partials, the same failures (the typed pushes and the built-in providers
/// rely on it).
#[test]
fn stream_ops_match_their_delta_form_events() {
    use agent::json::JsonMap;
    use agent::stream::{BlockKind, StreamOp};

    fn block(value: Json) -> Box<JsonMap> {
        Box::new(value.as_object().cloned().unwrap())
    }
    // (op, the JSON event it stands for)
    let steps: Vec<(StreamOp, Json)> = vec![
        (
            StreamOp::StartBlock {
                index: 0,
                block: block(json!({"type": "thinking", "thinking": ""})),
            },
            json!({"type": "thinking_start", "contentIndex": 0}),
        ),
        (
            StreamOp::Delta {
                index: 0,
                delta: "Hm".into(),
            },
            json!({"type": "thinking_delta", "contentIndex": 0, "delta": "Hm"}),
        ),
        (
            StreamOp::EndBlock { index: 0 },
            json!({"type": "thinking_end", "contentIndex": 0}),
        ),
        (
            StreamOp::StartBlock {
                index: 1,
                block: block(json!({"type": "text", "text": ""})),
            },
            json!({"type": "text_start", "contentIndex": 1}),
        ),
        (
            StreamOp::KindDelta {
                kind: BlockKind::Text,
                index: 1,
                delta: "a\"b".into(),
            },
            json!({"type": "text_delta", "contentIndex": 1, "delta": "a\"b"}),
        ),
        (
            StreamOp::KindEnd {
                kind: BlockKind::Text,
                index: 1,
            },
            json!({"type": "text_end", "contentIndex": 1}),
        ),
        (
            StreamOp::StartBlock {
                index: 2,
                block: block(json!({"type": "toolCall", "id": "c1", "name": "f", "arguments": {}})),
            },
            json!({"type": "toolcall_start", "contentIndex": 2, "id": "c1", "toolName": "f"}),
        ),
        (
            StreamOp::KindDelta {
                kind: BlockKind::ToolCall,
                index: 2,
                delta: "{\"x\":[1,".into(),
            },
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"x\":[1,"}),
        ),
        (
            StreamOp::Delta {
                index: 2,
                delta: "2]}".into(),
            },
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "2]}"}),
        ),
        (
            StreamOp::EndBlock { index: 2 },
            json!({"type": "toolcall_end", "contentIndex": 2}),
        ),
    ];
    // The two partials were started at (possibly) different milliseconds.
    fn untimed(mut value: Json) -> String {
        if let Some(map) = value.as_object_mut() {
            map.shift_remove("timestamp");
            if let Some(partial) = map.get_mut("partial").and_then(Json::as_object_mut) {
                partial.shift_remove("timestamp");
            }
        }
        to_string(&value)
    }
    let (mut typed, mut json) = (started(), started());
    for (op, event) in steps {
        let (expected_event, expected_partial) = accepted(&mut json, event);
        let (event, partial) = update(&mut typed, |s| s.apply(op));
        assert_eq!(untimed(event), untimed(expected_event));
        assert_eq!(untimed(partial), untimed(expected_partial));
    }
    // A typed text delta into the thinking block fails the stream as the JSON event does.
    let op = StreamOp::KindDelta {
        kind: BlockKind::Text,
        index: 0,
        delta: "x".into(),
    };
    let event = json!({"type": "text_delta", "contentIndex": 0, "delta": "x"});
    let (message, _) = final_message(typed.apply(op));
    let (expected, _) = final_message(json.accept(event));
    assert_eq!(
        message["errorMessage"],
        "Received text_delta for non-text content"
    );
    assert_eq!(untimed(message), untimed(expected));
}

/// The base partial is copied from the last one built on the thread when the model's `api`,
/// `provider` and `id` are the same: streams of different models, one after the other, each get
/// their own, and every one its own timestamp, last.
#[test]
fn base_partials_follow_their_model_and_time() {
    let other = json!({"id": "m2", "api": "other-api"});
    let start = |model: &Json| {
        let mut a = Assembler::new(model);
        start_partial(a.accept(json!({"type": "start"})))
    };
    let first = start(&model());
    let second = start(&other);
    let third = start(&model());
    for (partial, api, provider, id) in [
        (&first, json!("test-api"), json!("test-prov"), json!("m1")),
        (&second, json!("other-api"), Json::Null, json!("m2")),
        (&third, json!("test-api"), json!("test-prov"), json!("m1")),
    ] {
        assert_eq!(partial["api"], api);
        assert_eq!(partial["model"], id);
        // A model field the host left out stays absent.
        assert_eq!(
            partial.get("provider").cloned().unwrap_or(Json::Null),
            provider
        );
        let keys: Vec<&String> = partial.as_object().unwrap().keys().collect();
        assert_eq!(keys.last().map(|k| k.as_str()), Some("timestamp"));
        assert!(partial["timestamp"].as_f64().is_some_and(|t| t > 1.7e12));
    }
    assert_eq!(first["usage"], zero_usage());
    assert_eq!(to_string(&first), {
        let mut same = third.clone();
        same["timestamp"] = first["timestamp"].clone();
        to_string(&same)
    });
}

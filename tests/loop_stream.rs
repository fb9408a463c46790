//! Stream consumption by the loop (SPEC §3.3–§3.5, §3.10; checklist items 10–12, 14, 15,
//! 18, 20–24): a fixed stream function pushes events without lock step.
mod common;

use agent::agent_loop::{LoopConfig, LoopContext};
use agent::host::StreamFn;
use agent::json::{json, now_ms, to_string, Json};
use common::loops::{run_with, Outcome};
use common::*;

fn p(content: Json, extra: Json) -> Json {
    let mut m = json!({"role": "assistant", "content": content, "api": "a", "provider": "p", "model": "m1",
        "usage": zero(), "stopReason": "pending", "timestamp": now_ms()});
    if let Some(fields) = extra.as_object() {
        for (k, v) in fields {
            m[k] = v.clone();
        }
    }
    m
}

/// Runs one prompt; the first request pushes `pushes`, a possible second one ends at once.
async fn run_pushes(pushes: Vec<Push>, config: LoopConfig) -> Outcome {
    let second = vec![Push::Event(json!({"type": "done", "reason": "stop"}))];
    run_with(
        vec![umsg("u")],
        LoopContext::default(),
        config,
        fixed_stream_fn(vec![pushes, second]),
    )
    .await
}

fn assistant_events(events: &[Json]) -> Vec<Json> {
    events
        .iter()
        .filter(|e| e["message"]["role"] == "assistant" && e["type"] != "turn_end")
        .cloned()
        .collect()
}

#[tokio::test]
async fn c010_start_produces_pending_empty_message_start() {
    let start = p(json!([]), json!({}));
    let done = p(json!([]), json!({"stopReason": "stop"}));
    let out = run_pushes(
        vec![
            Push::Event(json!({"type": "start", "partial": start})),
            Push::Event(json!({"type": "done", "reason": "stop", "message": done})),
        ],
        loop_config(),
    )
    .await;
    let first = &assistant_events(&out.events)[0];
    assert_eq!(first["type"], "message_start");
    assert_eq!(first["message"]["content"], json!([]));
    assert_eq!(first["message"]["stopReason"], "pending");
}

#[tokio::test]
async fn c011_c012_each_update_produces_one_matching_message_update() {
    let pieces = [
        json!({"type": "thinking_start", "contentIndex": 0}),
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": "hm"}),
        json!({"type": "thinking_end", "contentIndex": 0}),
        json!({"type": "text_start", "contentIndex": 1}),
        json!({"type": "text_delta", "contentIndex": 1, "delta": "x"}),
        json!({"type": "text_end", "contentIndex": 1}),
        json!({"type": "toolcall_start", "contentIndex": 2, "id": "c1", "toolName": "t"}),
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{}"}),
        json!({"type": "toolcall_end", "contentIndex": 2}),
    ];
    let mut pushes = vec![Push::Event(json!({"type": "start"}))];
    pushes.extend(pieces.iter().cloned().map(Push::Event));
    pushes.push(Push::Event(json!({"type": "done", "reason": "stop"})));
    let out = run_pushes(pushes, loop_config()).await;
    let updates: Vec<Json> = out
        .events
        .iter()
        .filter(|e| e["type"] == "message_update")
        .cloned()
        .collect();
    let kinds: Vec<&str> = updates
        .iter()
        .map(|u| u["assistantMessageEvent"]["type"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = pieces.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, expected);
    for u in &updates {
        assert_eq!(
            to_string(&u["message"]),
            to_string(&u["assistantMessageEvent"]["partial"])
        );
    }
}

#[tokio::test]
async fn c011_forwarded_update_events_have_reference_shape() {
    // Delta-form extras (`id`, `toolName`, `contentSignature`, `redacted`) are input only: the
    // forwarded events have the reference's keys (SPEC §3.2, §3.7 last paragraph).
    let pushes = vec![
        Push::Event(json!({"type": "start"})),
        Push::Event(
            json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "t"}),
        ),
        Push::Event(json!({"type": "text_start", "contentIndex": 1})),
        Push::Event(
            json!({"type": "text_end", "contentIndex": 1, "content": "x", "contentSignature": "sig"}),
        ),
        Push::Event(json!({"type": "thinking_start", "contentIndex": 2})),
        Push::Event(
            json!({"type": "thinking_end", "contentIndex": 2, "contentSignature": "s2", "redacted": true}),
        ),
        Push::Event(json!({"type": "done", "reason": "stop"})),
    ];
    let out = run_pushes(pushes, loop_config()).await;
    let keys: Vec<Vec<String>> = out
        .events
        .iter()
        .filter(|e| e["type"] == "message_update")
        .map(|u| {
            u["assistantMessageEvent"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        })
        .collect();
    let short = ["type", "contentIndex", "partial"];
    let end = ["type", "contentIndex", "content", "partial"];
    assert_eq!(
        keys,
        [&short[..], &short[..], &end[..], &short[..], &end[..]]
    );
}

#[tokio::test]
async fn c014_only_done_gives_start_and_end_with_final_message() {
    let done = p(
        json!([{"type": "text", "text": "x"}]),
        json!({"stopReason": "stop"}),
    );
    let out = run_pushes(
        vec![Push::Event(
            json!({"type": "done", "reason": "stop", "message": done}),
        )],
        loop_config(),
    )
    .await;
    let events = assistant_events(&out.events);
    assert_eq!(types_of(&events), ["message_start", "message_end"]);
    assert_eq!(events[0]["message"], events[1]["message"]);
    assert_eq!(
        events[1]["message"]["content"],
        json!([{"type": "text", "text": "x"}])
    );
    assert_eq!(events[1]["message"]["thinkingLevel"], "off");
}

#[tokio::test]
async fn c015_only_error_gives_start_and_end_with_error_message() {
    let error = p(
        json!([]),
        json!({"stopReason": "error", "errorMessage": "bad"}),
    );
    let out = run_pushes(
        vec![Push::Event(
            json!({"type": "error", "reason": "error", "error": error}),
        )],
        loop_config(),
    )
    .await;
    let events = assistant_events(&out.events);
    assert_eq!(types_of(&events), ["message_start", "message_end"]);
    assert_eq!(events[0]["message"], events[1]["message"]);
    assert_eq!(events[1]["message"]["errorMessage"], "bad");
    assert_eq!(types_of(&out.events).last().unwrap(), "agent_end");
}

#[tokio::test]
async fn c018_explicit_final_message_without_terminal_event() {
    let last = p(
        json!([{"type": "text", "text": "final"}]),
        json!({"stopReason": "stop"}),
    );
    let pushes = vec![Push::Event(json!({"type": "start"})), Push::End(Some(last))];
    let out = run_pushes(pushes, loop_config()).await;
    let events = assistant_events(&out.events);
    assert_eq!(types_of(&events), ["message_start", "message_end"]);
    assert_eq!(
        events[1]["message"]["content"],
        json!([{"type": "text", "text": "final"}])
    );
    assert_eq!(events[1]["message"]["stopReason"], "stop");
}

async fn final_of(message: Json, config: LoopConfig) -> Json {
    let out = run_pushes(
        vec![Push::Event(
            json!({"type": "done", "reason": "stop", "message": message}),
        )],
        config,
    )
    .await;
    assistant_events(&out.events)[1]["message"].clone()
}

#[tokio::test]
async fn c020_duration_when_timestamp_not_older_than_stream() {
    // The final message is stamped inside the stream function, after the stream was created.
    let f: StreamFn = std::sync::Arc::new(|_request, sender: agent::stream::StreamSender| {
        let message = p(json!([]), json!({"stopReason": "stop"}));
        let _ = sender.push(json!({"type": "done", "reason": "stop", "message": message}));
    });
    let (f, requests) = recording(f);
    let out = run_with(
        vec![umsg("u")],
        LoopContext::default(),
        loop_config(),
        (f, requests),
    )
    .await;
    let message = assistant_events(&out.events)[1]["message"].clone();
    assert!(message["durationMs"].is_u64(), "{message}");
}

#[tokio::test]
async fn c021_no_duration_for_an_older_timestamp() {
    let message = final_of(
        p(json!([]), json!({"stopReason": "stop", "timestamp": 5})),
        loop_config(),
    )
    .await;
    assert!(message.get("durationMs").is_none(), "{message}");
}

#[tokio::test]
async fn c022_existing_duration_is_kept() {
    let message = final_of(
        p(json!([]), json!({"stopReason": "stop", "durationMs": 1234})),
        loop_config(),
    )
    .await;
    assert_eq!(message["durationMs"], 1234);
}

#[tokio::test]
async fn c023_thinking_level_is_the_requested_level_or_off() {
    let message = final_of(p(json!([]), json!({"stopReason": "stop"})), loop_config()).await;
    assert_eq!(message["thinkingLevel"], "off");
    let config = LoopConfig {
        reasoning: Some("high".into()),
        ..loop_config()
    };
    let message = final_of(p(json!([]), json!({"stopReason": "stop"})), config).await;
    assert_eq!(message["thinkingLevel"], "high");
}

#[tokio::test]
async fn c024_thinking_level_from_the_stream_is_overwritten() {
    let config = LoopConfig {
        reasoning: Some("high".into()),
        ..loop_config()
    };
    let message = final_of(
        p(
            json!([]),
            json!({"stopReason": "stop", "thinkingLevel": "low", "durationMs": 7}),
        ),
        config,
    )
    .await;
    assert_eq!(message["thinkingLevel"], "high");
    assert_eq!(message["durationMs"], 7);
    let message = final_of(
        p(
            json!([]),
            json!({"stopReason": "stop", "thinkingLevel": "low"}),
        ),
        loop_config(),
    )
    .await;
    assert_eq!(message["thinkingLevel"], "off");
}

#[tokio::test]
async fn stream_dropped_without_terminal_event_ends_with_error() {
    // The sender is dropped after `start`; the receiver keeps its own sender alive, so the run
    // never ends. A timeout turns the hang into a failure.
    let run = run_pushes(vec![Push::Event(json!({"type": "start"}))], loop_config());
    let out = tokio::time::timeout(std::time::Duration::from_secs(5), run)
        .await
        .expect("the run hangs");
    let end = &assistant_events(&out.events)[1];
    assert_eq!(end["message"]["stopReason"], "error");
    assert_eq!(
        end["message"]["errorMessage"],
        "Stream ended without a done or error event"
    );
}

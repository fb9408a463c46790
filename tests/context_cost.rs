//! Compaction's own cost is linear in the transcript (issue 27): the messages it estimates
//! grow with the transcript, not with its square. Alone in its process: the count is global.

use std::sync::Arc;

use agent::agent::{Agent, AgentOptions, HookKind, InitialState, Settings};
use agent::context::estimate::messages_estimated;
use agent::faux::scripted_stream_fn;
use agent::host::{Hook, HostFuture};
use agent::json::{json, Json};

fn transcript(pairs: usize) -> Vec<Json> {
    let mut messages = Vec::new();
    for i in 0..pairs {
        messages.push(json!({"role": "user", "content": format!("question {i} {}", "q ".repeat(50)), "timestamp": 1}));
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {i}")}],
            "provider": "test-prov", "model": "m1", "stopReason": "stop", "timestamp": 1}));
    }
    messages
}

/// Messages estimated by one manual compaction of a transcript of `pairs` exchanges.
fn cost_of_compacting(pairs: usize) -> u64 {
    let summary: Hook = Arc::new(|_input, _signal| {
        Box::pin(async { Ok(Some(json!({"summary": "Questions were answered."}))) })
            as HostFuture<_>
    });
    let mut settings = Settings::default();
    let patch = json!({"compaction": {"enabled": true, "keepRecentTokens": 200}});
    settings.apply(patch.as_object().unwrap());
    let _ = settings.hooks.set(HookKind::Compact, Some(summary));
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            model: Some(json!({"id": "m1", "api": "test-api", "provider": "test-prov", "contextWindow": 1_000_000})),
            messages: transcript(pairs),
            ..Default::default()
        },
        stream_fn: Some(scripted_stream_fn(Vec::new())),
        settings,
        ..Default::default()
    })
    .unwrap();
    let before = messages_estimated();
    futures::executor::block_on(agent.compact(None)).unwrap();
    let cost = messages_estimated() - before;
    assert!(agent.messages().len() < 20, "compacted");
    cost
}

#[test]
fn one_compaction_is_linear_in_the_transcript() {
    let small = cost_of_compacting(250);
    let large = cost_of_compacting(1000);
    // Four times the messages: about four times the work (sixteen if it were quadratic).
    assert!(
        small >= 500,
        "every message is estimated at least once ({small})"
    );
    assert!(
        large <= 5 * small,
        "{small} messages estimated for 500, {large} for 2000"
    );
    assert!(large <= 3 * 2000, "{large} estimates for 2000 messages");
}

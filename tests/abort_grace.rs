//! `abortGraceMs` (ARCHITECTURE "deferred-reply rule"): after an abort and the grace period the
//! run stops waiting for host callbacks that never answer.
mod common;

use std::sync::Arc;

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::error::{Error, ErrorKind};
use agent::faux::scripted_stream_fn;
use agent::host::{AgentTool, FnTool, HostFuture, Listener, StreamFn, ToolInvocation};
use agent::json::{json, Json};
use common::*;

/// A tool that aborts its run once it executes, then never answers.
fn never_tool() -> AgentTool {
    FnTool::tool(
        json!({"name": "hang", "label": "hang", "description": "never answers", "parameters": {"type": "object"}}),
        |invocation: ToolInvocation| {
            invocation.signal.abort();
            Box::pin(std::future::pending()) as HostFuture<_>
        },
    )
}

fn agent_with_grace(stream_fn: StreamFn, tools: Vec<AgentTool>, grace: Option<u64>) -> Agent {
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            model: Some(model()),
            tools,
            ..Default::default()
        },
        stream_fn: Some(stream_fn),
        ..Default::default()
    })
    .unwrap();
    if let Some(ms) = grace {
        agent.configure(&json!({"abortGraceMs": ms})).unwrap();
    }
    agent
}

/// Aborts the run when the first event of `event_type` is delivered.
fn abort_on(agent: &Agent, event_type: &'static str) {
    let target = agent.clone();
    let listener: Listener = Arc::new(move |event, _signal| {
        if event.type_name() == event_type {
            target.abort();
        }
        Box::pin(async { Ok(()) }) as HostFuture<_>
    });
    agent.subscribe(listener);
}

#[tokio::test]
async fn a_tool_that_never_answers_is_given_up_after_the_grace_period() {
    let responses = vec![
        tool_response(&[("c1", "hang", json!({}))]),
        text_response("done", 1),
    ];
    let agent = agent_with_grace(scripted_stream_fn(responses), vec![never_tool()], Some(20));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::Aborted,
    );
    let end = recorder
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Operation aborted");
    assert_eq!(end["isError"], true);
    assert!(end.get("durationMs").is_some(), "the tool did run: {end}");
    // The next request is still made (with the aborted signal) and ends the run aborted.
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(last["stopReason"], "aborted");
}

#[tokio::test]
async fn a_stream_that_never_ends_is_given_up_with_its_partial() {
    let stream_fn: StreamFn = Arc::new(|_request, sender| {
        let _ = sender.push(json!({"type": "start"}));
        let _ = sender.push(json!({"type": "text_start", "contentIndex": 0}));
        let _ = sender.push(json!({"type": "text_delta", "contentIndex": 0, "delta": "par"}));
        // Never ends: the sender is kept alive forever.
        std::mem::forget(sender);
    });
    let agent = agent_with_grace(stream_fn, vec![], Some(10));
    abort_on(&agent, "message_update");
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::Aborted,
    );
    let last: Json = agent.messages().last().cloned().unwrap();
    assert_eq!(last["stopReason"], "aborted");
    assert_eq!(last["errorMessage"], "Request was aborted");
    assert_eq!(last["content"], json!([{"type": "text", "text": "par"}]));
}

#[tokio::test]
async fn a_listener_that_never_answers_fails_the_run_after_the_grace_period() {
    let agent = agent_with_grace(
        scripted_stream_fn(vec![text_response("hi", 1)]),
        vec![],
        Some(10),
    );
    let target = agent.clone();
    let listener: Listener = Arc::new(move |event, _signal| {
        if event.type_name() == "turn_end" {
            target.abort();
            return Box::pin(std::future::pending()) as HostFuture<_>;
        }
        Box::pin(async { Ok(()) }) as HostFuture<_>
    });
    agent.subscribe(listener);
    let outcome = agent.prompt_text("go").await;
    // The failure path's events reach the listener again: it stalls on the second turn_end too,
    // so the run rejects with the listener's failure text.
    assert_eq!(
        outcome,
        Err(Error::new(ErrorKind::RunFailed, "Operation aborted"))
    );
    assert_eq!(agent.error_message().as_deref(), Some("Operation aborted"));
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn without_grace_an_unanswered_tool_keeps_the_run_waiting() {
    let responses = vec![tool_response(&[("c1", "hang", json!({}))])];
    let agent = agent_with_grace(scripted_stream_fn(responses), vec![never_tool()], None);
    let completion = agent
        .start_prompt(
            agent::agent::PromptInput::Message(
                json!({"role": "user", "content": "go", "timestamp": 1}),
            ),
            None,
        )
        .unwrap();
    let waited =
        tokio::time::timeout(std::time::Duration::from_millis(100), completion.wait()).await;
    assert!(
        waited.is_err(),
        "the run must still wait for the tool, like the reference"
    );
    assert!(agent.is_streaming());
    agent.shutdown("test over");
}

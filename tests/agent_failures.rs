//! The failure path and failures that escape the loop (SPEC §6.12, §7.8, §7.9, §8.1;
//! checklist items 201–204, 220).
mod common;

use std::sync::{Arc, Mutex};

use agent::agent::{PromptInput, Settings};
use agent::error::{Error, ErrorKind};
use agent::host::{HostFuture, Listener};
use agent::json::{json, to_string};
use common::*;

fn failing_listener(on: &'static str, message: &'static str) -> Listener {
    listener(move |e| {
        if e["type"] == on {
            Err(message.to_string())
        } else {
            Ok(())
        }
    })
}

#[tokio::test]
async fn c201_listener_failure_stops_the_event_and_fails_the_run() {
    let (f, requests) = scripted(many_texts(1));
    let agent = agent_from(f, vec![], None, Settings::default());
    agent.subscribe(failing_listener("agent_start", "L1 broke"));
    let l2 = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    // The failure path supplies a turn_end without a turn_start.
    assert_eq!(
        l2.types(),
        ["message_start", "message_end", "turn_end", "agent_end"]
    );
    assert_eq!(agent.error_message().as_deref(), Some("L1 broke"));
    assert!(requests.lock().unwrap().is_empty());
}

#[tokio::test]
async fn c202_failure_path_events_and_messages() {
    let agent = agent_with(vec![json!({"throw": "boom"})], vec![], None);
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    let events = recorder.events();
    let failure = events.last().unwrap()["messages"][0].clone();
    assert_eq!(
        events.last().unwrap()["messages"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        recorder.types()[4..],
        ["message_start", "message_end", "turn_end", "agent_end"]
    );
    for e in &events[4..7] {
        assert_eq!(e["message"], failure);
    }
    assert_eq!(contents(&agent.messages()), ["hi", ""]);
}

#[tokio::test]
async fn c203_failure_message_fields() {
    let agent = agent_with(vec![json!({"throw": "boom"})], vec![], None);
    let handle = agent.clone();
    agent.subscribe(listener(move |e| {
        if e["type"] == "message_end" && e["message"]["role"] == "user" {
            handle
                .set_model(json!({"id": "m2", "api": "api2", "provider": "prov2"}))
                .unwrap();
            handle.abort();
        }
        Ok(())
    }));
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::Aborted,
    );
    let failure = agent.messages().last().unwrap().clone();
    assert_eq!(
        to_string(&normalize(&failure)),
        to_string(
            &json!({"role": "assistant", "content": [{"type": "text", "text": ""}],
        "api": "api2", "provider": "prov2", "model": "m2", "usage": zero(), "stopReason": "aborted", "errorMessage": "boom",
        "timestamp": 0})
        )
    );
}

#[tokio::test]
async fn c204_listener_failing_during_failure_path_fails_prompt() {
    let agent = agent_with(many_texts(1), vec![], None);
    let recorder = Recorder::attach(&agent);
    agent.subscribe(listener(|_| Err("always".to_string())));
    assert_eq!(
        agent.prompt_text("hi").await,
        Err(Error::new(ErrorKind::RunFailed, "always"))
    );
    assert!(!agent.is_streaming());
    assert_eq!(recorder.types(), ["agent_start", "message_start"]);
}

#[tokio::test]
async fn c220_late_parallel_tool_events_after_failure_are_dropped() {
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = release.clone();
    let slow = agent::host::FnTool::tool(def("slow"), move |inv: agent::host::ToolInvocation| {
        let gate = gate.clone();
        Box::pin(async move {
            gate.notified().await;
            (inv.on_update)(json!({"content": [], "details": "late"}));
            Ok(Some(text_result("late", json!({}))))
        }) as HostFuture<_>
    });
    let fast = result_tool("fast", text_result("fast", json!({})), 0);
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "slow", json!({})), ("c2", "fast", json!({}))]),
        text_response("never", 1),
    ]);
    let agent = agent_from(f, vec![slow, fast], None, Settings::default());
    let recorder = Recorder::attach(&agent);
    agent.subscribe(listener(|e| {
        if e["type"] == "tool_execution_end" && e["toolCallId"] == "c2" {
            Err("listener broke".to_string())
        } else {
            Ok(())
        }
    }));
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::ModelError,
    );
    let count = recorder.events().len();
    let messages = agent.messages().len();
    release.notify_waiters();
    // Nothing can be awaited for an event that must not happen: give a late one time to show.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(recorder.events().len(), count);
    assert_eq!(recorder.types().last().unwrap(), "agent_end");
    assert_eq!(agent.messages().len(), messages);
    assert!(agent.pending_tool_calls().is_empty());
    assert!(!agent.messages().iter().any(|m| m["role"] == "toolResult"));
}

#[tokio::test]
async fn listener_failing_on_agent_end_adds_a_second_turn_end_and_agent_end() {
    let agent = agent_with(many_texts(1), vec![], None);
    let failed = Arc::new(Mutex::new(false));
    let once = failed.clone();
    agent.subscribe(listener(move |e| {
        let mut failed = once.lock().unwrap();
        if e["type"] == "agent_end" && !*failed {
            *failed = true;
            return Err("end broke".into());
        }
        Ok(())
    }));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    let types = recorder.types();
    // The recorder was subscribed after the failing listener: it misses the first agent_end.
    assert_eq!(
        types[types.len() - 5..],
        [
            "turn_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(agent.error_message().as_deref(), Some("end broke"));
    assert_eq!(contents(&agent.messages()), ["hi", "a1", ""]);
}

#[tokio::test]
async fn failing_hooks_escape_the_loop_into_the_failure_path() {
    type Install = fn(&mut Settings, agent::host::Hook);
    let cases: [(&str, Install); 5] = [
        ("finishTurn", |s, h| s.hooks.finish_turn = Some(h)),
        ("prepareRequest", |s, h| s.hooks.prepare_request = Some(h)),
        ("convertToLlm", |s, h| s.hooks.convert_to_llm = Some(h)),
        ("transformContext", |s, h| {
            s.hooks.transform_context = Some(h)
        }),
        ("getApiKey", |s, h| s.hooks.get_api_key = Some(h)),
    ];
    for (name, install) in cases {
        let mut settings = Settings::default();
        let message = format!("{name} broke");
        install(&mut settings, hook(move |_, _| Err(message.clone())));
        let (f, _) = scripted(many_texts(1));
        let agent = agent_from(f, vec![], None, settings);
        let recorder = Recorder::attach(&agent);
        common::failure(
            agent.prompt_text("hi").await,
            agent::error::ErrorKind::ModelError,
        );
        assert_eq!(
            agent.error_message(),
            Some(format!("{name} broke")),
            "{name}"
        );
        let end = recorder.events().last().unwrap().clone();
        assert_eq!(end["messages"].as_array().unwrap().len(), 1, "{name}");
        assert_eq!(end["messages"][0]["errorMessage"], format!("{name} broke"));
    }
}

#[tokio::test]
async fn failing_update_emission_fails_the_run_after_execute() {
    let finished = Arc::new(Mutex::new(false));
    let flag = finished.clone();
    let tool = tool_fn(def("t"), move |inv| {
        (inv.on_update)(json!({"content": [], "details": {}}));
        *flag.lock().unwrap() = true;
        Ok(Some(text_result("ok", json!({}))))
    });
    let (f, requests) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        text_response("never", 1),
    ]);
    let agent = agent_from(f, vec![tool], None, Settings::default());
    agent.subscribe(failing_listener("tool_execution_update", "update broke"));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::ModelError,
    );
    assert!(*finished.lock().unwrap());
    assert_eq!(agent.error_message().as_deref(), Some("update broke"));
    assert!(!recorder.types().contains(&"tool_execution_end".to_string()));
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert!(agent.pending_tool_calls().is_empty());
}

#[tokio::test]
async fn an_ordinary_run_failure_resolves_the_promise_and_fails_prompt() {
    let agent = agent_with(
        vec![json!({"throw": "boom"}), json!({"throw": "again"})],
        vec![],
        None,
    );
    let listener_called: Listener = Arc::new(|_e, _s| Box::pin(async { Ok(()) }) as HostFuture<_>);
    agent.subscribe(listener_called);
    // The reference's promise resolves (what `done` and `waitForIdle` see)...
    let input = PromptInput::Text {
        text: "hi".into(),
        images: Vec::new(),
    };
    let run = agent.start_prompt(input, None).unwrap();
    assert_eq!(run.wait().await, Ok(()));
    assert_eq!(to_string(&json!(agent.error_message())), "\"boom\"");
    let ended = Err(Error::new(ErrorKind::ModelError, "boom"));
    assert_eq!(run.result(), Some(ended.clone()));
    assert_eq!(agent.last_run_result(), Some(ended));
    // ...and the Rust `prompt` fails with the error message.
    assert_eq!(
        agent.prompt_text("hi").await,
        Err(Error::new(ErrorKind::ModelError, "again"))
    );
}

#[tokio::test]
async fn a_streaming_partial_is_never_committed_by_the_failure_path() {
    let agent = agent_with(vec![text_response("Hello", 3)], vec![], None);
    agent.subscribe(failing_listener("message_update", "update listener broke"));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    assert_eq!(contents(&agent.messages()), ["hi", ""]);
    assert_eq!(agent.messages()[1]["errorMessage"], "update listener broke");
    assert!(agent.streaming_message().is_none());
    // The failure message starts while the assistant message is still open.
    let types = recorder.types();
    assert_eq!(
        types[types.len() - 5..],
        [
            "message_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
}

//! The canonical sequences S7–S14 of SPEC §8.2 (how runs end: abort, failures, length stops,
//! turn decisions, termination, listener failure), event by event with full JSON.
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agent::agent::{Agent, Settings};
use agent::host::{FnTool, HostFuture, ToolInvocation};
use agent::json::{json, Json};
use common::sequences::*;
use common::*;

#[tokio::test]
async fn s7_abort_during_streaming() {
    let agent = agent_with(vec![deltas_response(&["a", "b"])], vec![], None);
    let handle = agent.clone();
    agent.subscribe(listener(move |e| {
        if e["assistantMessageEvent"]["type"] == "text_delta" {
            handle.abort();
        }
        Ok(())
    }));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::Aborted,
    );
    let u = user_text("hi");
    let a = json!({"role": "assistant", "content": text("a"), "api": "test-api", "provider": "test-prov", "model": "m1",
        "usage": zero(), "stopReason": "aborted", "timestamp": 0, "errorMessage": "Request was aborted",
        "durationMs": "<ms>", "thinkingLevel": "off"});
    let mut expected = prompt_start(&u);
    expected.push(msg_start(&partial(json!([]))));
    expected.push(update(
        json!({"type": "text_start", "contentIndex": 0}),
        text(""),
    ));
    expected.push(update(
        json!({"type": "text_delta", "contentIndex": 0, "delta": "a"}),
        text("a"),
    ));
    expected.push(msg_end(&a));
    expected.push(turn_end(&a, &[]));
    expected.push(agent_end(&[u, a]));
    assert_events(&recorder.events(), &expected);
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
}

/// A tool that fails with "tool aborted!" when its signal fires; the second execution aborts
/// the agent (both calls are then running).
fn abort_aware_tool(
    agent: Arc<OnceLock<Agent>>,
    started: Arc<AtomicUsize>,
) -> agent::host::AgentTool {
    FnTool::tool(def("work"), move |inv: ToolInvocation| {
        let agent = agent.clone();
        let started = started.clone();
        Box::pin(async move {
            if started.fetch_add(1, Ordering::SeqCst) == 1 {
                // Abort once both executions are waiting on the signal.
                if let Some(agent) = agent.get().cloned() {
                    tokio::spawn(async move { agent.abort() });
                }
            }
            inv.signal.aborted().await;
            Err("tool aborted!".to_string())
        }) as HostFuture<_>
    })
}

#[tokio::test]
async fn s8_abort_during_tool_execution() {
    let cell = Arc::new(OnceLock::new());
    let tool = abort_aware_tool(cell.clone(), Arc::new(AtomicUsize::new(0)));
    let responses = vec![
        tool_response(&[("c1", "work", json!({})), ("c2", "work", json!({}))]),
        text_response("never", 1),
    ];
    let (f, requests) = scripted(responses);
    let agent = agent_from(f, vec![tool], None, Settings::default());
    let _ = cell.set(agent.clone());
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::Aborted,
    );
    let (c1, c2) = (call("c1", "work", json!({})), call("c2", "work", json!({})));
    let u = user_text("go");
    let a1 = final_msg(json!([c1, c2]), "toolUse");
    let result = error_result("tool aborted!");
    let (tr1, tr2) = (
        tr("c1", "work", &result, true, true),
        tr("c2", "work", &result, true, true),
    );
    // The second request is made with the aborted signal; the scripted model answers at once.
    let a2 = json!({"role": "assistant", "stopReason": "aborted", "content": [], "api": "test-api", "provider": "test-prov",
        "model": "m1", "usage": zero(), "timestamp": 0, "errorMessage": "Request was aborted", "durationMs": "<ms>",
        "thinkingLevel": "off"});
    let mut expected = prompt_start(&u);
    expected.extend(tool_message_events(&[c1, c2], "toolUse"));
    expected.extend([
        tool_start("c1", "work", json!({})),
        tool_start("c2", "work", json!({})),
    ]);
    expected.extend([
        tool_end("c1", "work", result.clone(), true, true),
        tool_end("c2", "work", result, true, true),
    ]);
    expected.extend(committed(&tr1));
    expected.extend(committed(&tr2));
    expected.push(turn_end(&a1, &[tr1.clone(), tr2.clone()]));
    expected.push(ev("turn_start"));
    expected.extend(committed(&a2));
    expected.push(turn_end(&a2, &[]));
    expected.push(agent_end(&[u, a1, tr1, tr2, a2]));
    assert_events(&recorder.events(), &expected);
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].signal.is_aborted());
}

#[tokio::test]
async fn s8_sequential_calls_not_started_get_operation_aborted() {
    let cell: Arc<OnceLock<Agent>> = Arc::new(OnceLock::new());
    let handle = cell.clone();
    let tool = FnTool::tool(def("work"), move |inv: ToolInvocation| {
        let handle = handle.clone();
        Box::pin(async move {
            if let Some(agent) = handle.get() {
                agent.abort();
            }
            inv.signal.aborted().await;
            Err("tool aborted!".to_string())
        }) as HostFuture<_>
    });
    let settings = Settings {
        tool_execution: "sequential".into(),
        ..Default::default()
    };
    let responses = vec![
        tool_response(&[("c1", "work", json!({})), ("c2", "work", json!({}))]),
        text_response("never", 1),
    ];
    let (f, _) = scripted(responses);
    let agent = agent_from(f, vec![tool], None, settings);
    let _ = cell.set(agent.clone());
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::Aborted,
    );
    let ends: Vec<Json> = recorder
        .events()
        .into_iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| normalize(&e))
        .collect();
    assert_eq!(
        ends,
        vec![
            tool_end("c1", "work", error_result("tool aborted!"), true, true),
            tool_end("c2", "work", error_result("Operation aborted"), true, false)
        ]
    );
}

#[tokio::test]
async fn s9_stream_function_fails() {
    let agent = agent_with(vec![json!({"throw": "boom"})], vec![], None);
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    let u = user_text("hi");
    let f = json!({"role": "assistant", "content": [{"type": "text", "text": ""}], "api": "test-api", "provider": "test-prov",
        "model": "m1", "usage": zero(), "stopReason": "error", "errorMessage": "boom", "timestamp": 0});
    let mut expected = prompt_start(&u);
    expected.extend(committed(&f));
    expected.push(turn_end(&f, &[]));
    expected.push(agent_end(std::slice::from_ref(&f)));
    assert_events(&recorder.events(), &expected);
    let state: Vec<Json> = agent.messages().iter().map(normalize).collect();
    assert_eq!(state, vec![u, f]);
    assert_eq!(agent.error_message().as_deref(), Some("boom"));
}

#[tokio::test]
async fn s10_provider_error_encoded_in_stream() {
    let (finish, finish_inputs) = recording_hook(Some(json!({"action": "continue"})));
    let mut settings = Settings::default();
    settings.hooks.finish_turn = Some(finish);
    let response = json!({"content": [{"type": "text", "text": "partial"}], "stopReason": "error", "errorMessage": "429 rate limited"});
    let (f, requests) = scripted(vec![response, text_response("never", 1)]);
    let agent = agent_from(f, vec![], None, settings);
    agent.follow_up(umsg("queued"));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    let u = user_text("hi");
    let a = json!({"role": "assistant", "content": text("partial"), "api": "test-api", "provider": "test-prov", "model": "m1",
        "usage": zero(), "stopReason": "error", "timestamp": 0, "errorMessage": "429 rate limited", "durationMs": "<ms>",
        "thinkingLevel": "off"});
    let mut expected = prompt_start(&u);
    let mut stream = text_message_events(&["partial"], "stop");
    stream.pop();
    expected.extend(stream);
    expected.push(msg_end(&a));
    expected.push(turn_end(&a, &[]));
    expected.push(agent_end(&[u, a]));
    assert_events(&recorder.events(), &expected);
    assert_eq!(finish_inputs.lock().unwrap().len(), 1);
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert_eq!(agent.peek_queued_messages(), vec![umsg("queued")]);
}

#[tokio::test]
async fn s11_length_stop_with_tool_calls() {
    let raw = r#"{"path":"a.txt","content":"hel"#;
    let a1_script = json!({"content": [{"type": "text", "text": "Writing"},
        {"type": "toolCall", "id": "w1", "name": "write", "argsText": raw},
        {"type": "toolCall", "id": "w2", "name": "nope", "arguments": {}}], "stopReason": "length"});
    let (before, before_calls) = recording_hook(None);
    let mut settings = Settings::default();
    settings.hooks.before_tool_call = Some(before);
    let executed = Arc::new(Mutex::new(0));
    let count = executed.clone();
    let write = tool_fn(def("write"), move |_| {
        *count.lock().unwrap() += 1;
        Ok(Some(text_result("written", json!({}))))
    });
    let (f, _) = scripted(vec![a1_script, text_response("retry", 1)]);
    let agent = agent_from(f, vec![write], None, settings);
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let events = recorder.events();
    // The argumentsError text is implementation-defined (A12) apart from its tail.
    let a1_end = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap();
    let arguments_error = a1_end["message"]["content"][1]["argumentsError"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        arguments_error.ends_with(&format!("\n\nReceived arguments:\n{raw}")),
        "{arguments_error}"
    );
    let w1 = json!({"type": "toolCall", "id": "w1", "name": "write", "arguments": {}, "argumentsError": arguments_error});
    let w2 = call("w2", "nope", json!({}));
    let content_final = json!([{"type": "text", "text": "Writing"}, w1, w2]);
    let u = user_text("go");
    let a1 = final_msg(content_final, "length");
    let text_of = |name: &str| {
        format!("Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.")
    };
    let (r1, r2) = (
        error_result(&text_of("write")),
        error_result(&text_of("nope")),
    );
    let (tr1, tr2) = (
        tr("w1", "write", &r1, true, false),
        tr("w2", "nope", &r2, true, false),
    );
    let a2 = assistant_text("retry");
    let mut expected = prompt_start(&u);
    let w = json!({"type": "text", "text": "Writing"});
    let w1_open = json!({"type": "toolCall", "id": "w1", "name": "write", "arguments": {}});
    let w1_partial = json!({"type": "toolCall", "id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "hel"}});
    let w2_open = json!({"type": "toolCall", "id": "w2", "name": "nope", "arguments": {}});
    expected.push(msg_start(&partial(json!([]))));
    expected.push(update(
        json!({"type": "text_start", "contentIndex": 0}),
        json!([{"type": "text", "text": ""}]),
    ));
    expected.push(update(
        json!({"type": "text_delta", "contentIndex": 0, "delta": "Writing"}),
        json!([w]),
    ));
    expected.push(update(
        json!({"type": "text_end", "contentIndex": 0, "content": "Writing"}),
        json!([w]),
    ));
    expected.push(update(
        json!({"type": "toolcall_start", "contentIndex": 1}),
        json!([w, w1_open]),
    ));
    expected.push(update(
        json!({"type": "toolcall_delta", "contentIndex": 1, "delta": raw}),
        json!([w, w1_partial]),
    ));
    expected.push(update(
        json!({"type": "toolcall_end", "contentIndex": 1, "toolCall": w1}),
        json!([w, w1]),
    ));
    expected.push(update(
        json!({"type": "toolcall_start", "contentIndex": 2}),
        json!([w, w1, w2_open]),
    ));
    expected.push(update(
        json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{}"}),
        json!([w, w1, w2]),
    ));
    expected.push(update(
        json!({"type": "toolcall_end", "contentIndex": 2, "toolCall": w2}),
        json!([w, w1, w2]),
    ));
    expected.push(msg_end(&a1));
    expected.extend([
        tool_start("w1", "write", json!({})),
        tool_end("w1", "write", r1, true, false),
    ]);
    expected.extend(committed(&tr1));
    expected.extend([
        tool_start("w2", "nope", json!({})),
        tool_end("w2", "nope", r2, true, false),
    ]);
    expected.extend(committed(&tr2));
    expected.push(turn_end(&a1, &[tr1.clone(), tr2.clone()]));
    expected.push(ev("turn_start"));
    expected.extend(text_answer(&["retry"]));
    expected.push(agent_end(&[u, a1, tr1, tr2, a2]));
    assert_events(&events, &expected);
    assert!(before_calls.lock().unwrap().is_empty());
    assert_eq!(*executed.lock().unwrap(), 0);
}

fn finish_turn_agent(answers: Vec<Option<Json>>, responses: Vec<Json>) -> (Agent, Requests) {
    let mut settings = Settings::default();
    settings.hooks.finish_turn = Some(answering_hook(answers));
    let (f, requests) = scripted(responses);
    (
        agent_from(f, vec![text_tool("read", "R", 0)], None, settings),
        requests,
    )
}

/// An agent whose `finishTurn` asks to continue once; it answers `a1`, `a2`, then `never`.
fn continue_once_agent() -> (Agent, Requests) {
    finish_turn_agent(
        vec![Some(json!({"action": "continue"}))],
        vec![
            text_response("a1", 1),
            text_response("a2", 1),
            text_response("never", 1),
        ],
    )
}

#[tokio::test]
async fn s12a_finish_turn_end() {
    let (agent, requests) = finish_turn_agent(
        vec![Some(json!({"action": "end"}))],
        vec![
            tool_response(&[("c1", "read", json!({}))]),
            text_response("never", 1),
        ],
    );
    agent.follow_up(umsg("fu"));
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let result = text_result("R", json!({}));
    let (mut expected, u, a1, tr1) = read_turn(result, false, true);
    expected.push(agent_end(&[u, a1, tr1]));
    assert_events(&recorder.events(), &expected);
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert_eq!(agent.peek_queued_messages(), vec![umsg("fu")]);
}

#[tokio::test]
async fn s12b_finish_turn_continue_once() {
    let (agent, requests) = continue_once_agent();
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let u = user_text("go");
    let (a1, a2) = (assistant_text("a1"), assistant_text("a2"));
    let mut expected = prompt_start(&u);
    expected.extend(text_answer(&["a1"]));
    expected.push(ev("turn_start"));
    expected.extend(text_answer(&["a2"]));
    expected.push(agent_end(&[u.clone(), a1.clone(), a2]));
    assert_events(&recorder.events(), &expected);
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    // The extra request sees the unchanged context (the system message declares `read`).
    let second: Vec<Json> = request_messages(&requests[1])
        .iter()
        .map(normalize)
        .collect();
    assert_eq!(second[1..], [u, a1]);
}

#[tokio::test]
async fn s12b_follow_up_satisfies_continue() {
    let (agent, requests) = continue_once_agent();
    agent.follow_up(umsg("fu"));
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let u = user_text("go");
    let (a1, a2) = (assistant_text("a1"), assistant_text("a2"));
    let mut expected = prompt_start(&u);
    expected.extend(text_answer(&["a1"]));
    expected.push(ev("turn_start"));
    expected.extend(committed(&umsg("fu")));
    expected.extend(text_answer(&["a2"]));
    expected.push(agent_end(&[u, a1, umsg("fu"), a2]));
    assert_events(&recorder.events(), &expected);
    assert_eq!(requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn s13_every_result_terminates() {
    let r1 =
        json!({"content": [{"type": "text", "text": "one"}], "details": {}, "terminate": true});
    let r2 =
        json!({"content": [{"type": "text", "text": "two"}], "details": {}, "terminate": true});
    let tools = vec![
        result_tool("t1", r1.clone(), 30),
        result_tool("t2", r2.clone(), 0),
    ];
    let (f, requests) = scripted(vec![
        tool_response(&[("c1", "t1", json!({})), ("c2", "t2", json!({}))]),
        text_response("never", 1),
    ]);
    let agent = agent_from(f, tools, None, Settings::default());
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let (c1, c2) = (call("c1", "t1", json!({})), call("c2", "t2", json!({})));
    let u = user_text("go");
    let a1 = final_msg(json!([c1, c2]), "toolUse");
    let (tr1, tr2) = (
        tr("c1", "t1", &r1, false, true),
        tr("c2", "t2", &r2, false, true),
    );
    let mut expected = prompt_start(&u);
    expected.extend(tool_message_events(&[c1, c2], "toolUse"));
    expected.extend([
        tool_start("c1", "t1", json!({})),
        tool_start("c2", "t2", json!({})),
    ]);
    expected.extend([
        tool_end("c2", "t2", r2, false, true),
        tool_end("c1", "t1", r1, false, true),
    ]);
    expected.extend(committed(&tr1));
    expected.extend(committed(&tr2));
    expected.push(turn_end(&a1, &[tr1.clone(), tr2.clone()]));
    expected.push(agent_end(&[u, a1, tr1, tr2]));
    assert_events(&recorder.events(), &expected);
    assert_eq!(requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn s14_listener_failure() {
    let agent = agent_with(vec![text_response("never", 1)], vec![], None);
    let l1 = Recorder::default();
    let l1_events = l1.clone();
    let inner = l1.listener();
    agent.subscribe(Arc::new(
        move |event: Arc<agent::event::AgentEvent>, signal| {
            let json = event.to_json(agent::event::EventShape::Full);
            let fail = json["type"] == "message_end" && json["message"]["role"] == "user";
            let recorded = inner(event, signal);
            Box::pin(async move {
                recorded.await?;
                if fail {
                    Err("L1 failed".to_string())
                } else {
                    Ok(())
                }
            }) as HostFuture<_>
        },
    ));
    let l2 = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    let u = user_text("hi");
    let f = json!({"role": "assistant", "content": [{"type": "text", "text": ""}], "api": "test-api", "provider": "test-prov",
        "model": "m1", "usage": zero(), "stopReason": "error", "errorMessage": "L1 failed", "timestamp": 0});
    let mut failure = committed(&f);
    failure.push(turn_end(&f, &[]));
    failure.push(agent_end(std::slice::from_ref(&f)));
    let mut expected_l1 = vec![
        ev("agent_start"),
        ev("turn_start"),
        msg_start(&u),
        msg_end(&u),
    ];
    expected_l1.extend(failure.clone());
    let mut expected_l2 = vec![ev("agent_start"), ev("turn_start"), msg_start(&u)];
    expected_l2.extend(failure);
    assert_events(&l1_events.events(), &expected_l1);
    assert_events(&l2.events(), &expected_l2);
    let state: Vec<Json> = agent.messages().iter().map(normalize).collect();
    assert_eq!(state, vec![u, f]);
    assert_eq!(agent.error_message().as_deref(), Some("L1 failed"));
}

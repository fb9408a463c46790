//! An agent with a session: what it records as it runs, and what it resumes.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent::agent::{Agent, AgentOptions, InitialState, SharedSession};
use agent::error::ErrorKind;
use agent::event::AgentEvent;
use agent::host::{HostFuture, Listener};
use agent::json::{json, Json};
use agent::session::{Durability, Session};
use common::{model, scripted, text_response, text_tool, tool_response};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "libagent-session-agent-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn shared(session: Session) -> SharedSession {
    Arc::new(Mutex::new(session))
}

fn agent_on(session: &SharedSession, responses: Vec<Json>) -> (Agent, common::Requests) {
    let (stream_fn, requests) = scripted(responses);
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            system_prompt: Some("You are terse.".into()),
            model: Some(model()),
            tools: vec![text_tool("look", "a cat", 0)],
            ..Default::default()
        },
        stream_fn: Some(stream_fn),
        session: Some(session.clone()),
        ..Default::default()
    })
    .expect("agent");
    (agent, requests)
}

/// Every line of the file, parsed.
fn lines(path: &Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn types(lines: &[Json]) -> Vec<String> {
    lines
        .iter()
        .map(|line| match line["type"].as_str().unwrap() {
            "message" => format!("message:{}", line["message"]["role"].as_str().unwrap()),
            other => other.to_string(),
        })
        .collect()
}

fn file_of(session: &SharedSession) -> PathBuf {
    session.lock().unwrap().file_path().unwrap().to_path_buf()
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

#[test]
fn a_run_is_recorded_as_it_goes_and_resumed_after_a_restart() {
    let dir = temp_dir("resume");
    let session = shared(Session::create(&dir, "/work", Durability::Flush).unwrap());
    let (agent, _) = agent_on(
        &session,
        vec![
            tool_response(&[("c1", "look", json!({}))]),
            text_response("It is a cat.", 3),
        ],
    );
    // Nothing is written before the first user message (as the reference).
    assert!(!session.lock().unwrap().file_exists());
    block_on(agent.prompt_text("What is it?")).unwrap();
    let path = file_of(&session);
    assert_eq!(
        types(&lines(&path)),
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message:system",
            "message:user",
            "message:assistant",
            "message:toolResult",
            "message:assistant"
        ]
    );
    let transcript = agent.messages();
    drop(agent);
    drop(session);

    // A new process: the same file, the same transcript, and the next run appends to it.
    let session = shared(common::reopen_session(&path));
    let (agent, requests) = agent_on(&session, vec![text_response("Still a cat.", 1)]);
    assert_eq!(agent.messages(), transcript);
    block_on(agent.prompt_text("And now?")).unwrap();
    let request = &requests.lock().unwrap()[0];
    assert_eq!(request.messages.len(), transcript.len() + 1);
    let recorded = lines(&path);
    assert_eq!(recorded.len(), 10, "two more messages, nothing repeated");
    assert_eq!(recorded[8]["message"]["content"][0]["text"], "And now?");
    assert_eq!(recorded[8]["parentId"], recorded[7]["id"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_line_is_written_before_listeners_see_message_end() {
    let dir = temp_dir("before-listeners");
    let session = shared(Session::create(&dir, "/work", Durability::Flush).unwrap());
    let (agent, _) = agent_on(&session, vec![text_response("Hello there.", 2)]);
    let path_session = session.clone();
    let checked = Arc::new(Mutex::new(Vec::new()));
    let seen = checked.clone();
    let listener: Listener = Arc::new(move |event: Arc<AgentEvent>, _signal| {
        if let AgentEvent::MessageEnd { message } = &*event {
            let path = file_of(&path_session);
            let last = lines(&path).pop().unwrap();
            seen.lock()
                .unwrap()
                .push(last["message"] == *message.json());
        }
        Box::pin(async { Ok(()) }) as HostFuture<_>
    });
    agent.subscribe(listener);
    block_on(agent.prompt_text("Hi")).unwrap();
    assert_eq!(*checked.lock().unwrap(), [true, true], "user and assistant");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn model_and_thinking_changes_are_recorded_once_and_restored() {
    let dir = temp_dir("changes");
    let session = shared(Session::create(&dir, "/work", Durability::Flush).unwrap());
    let (agent, _) = agent_on(&session, vec![text_response("ok", 1)]);
    block_on(agent.prompt_text("Hi")).unwrap();
    agent
        .configure(&json!({"model": {"id": "m2", "api": "test-api", "provider": "other"}, "thinkingLevel": "high"}))
        .unwrap();
    // The same model and level again: nothing new.
    agent
        .configure(&json!({"model": {"id": "m2", "api": "test-api", "provider": "other"}, "thinkingLevel": "high"}))
        .unwrap();
    agent.set_thinking_level("low").unwrap();
    let path = file_of(&session);
    let recorded = lines(&path);
    let tail: Vec<&Json> = recorded.iter().rev().take(3).rev().collect();
    assert_eq!(tail[0]["type"], "model_change");
    assert_eq!(tail[0]["provider"], "other");
    assert_eq!(tail[0]["modelId"], "m2");
    assert_eq!(tail[1]["thinkingLevel"], "high");
    assert_eq!(tail[2]["thinkingLevel"], "low");
    drop(agent);
    drop(session);
    let session = shared(common::reopen_session(&path));
    let recorded = session.lock().unwrap().context().unwrap().model.unwrap();
    assert_eq!(recorded, json!({"provider": "other", "modelId": "m2"}));
    // The host resumes with its own model: recorded, so the file says what runs next.
    let (agent, _) = agent_on(&session, vec![]);
    assert_eq!(agent.thinking_level(), "low");
    let context = session.lock().unwrap().context().unwrap();
    assert_eq!(
        context.model.unwrap(),
        json!({"provider": "test-prov", "modelId": "m1"})
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn one_agent_per_session() {
    let session = shared(Session::in_memory("/work"));
    let (first, _) = agent_on(&session, vec![]);
    let (stream_fn, _) = scripted(vec![]);
    let second = Agent::new(AgentOptions {
        stream_fn: Some(stream_fn),
        session: Some(session.clone()),
        ..Default::default()
    });
    let error = second
        .err()
        .expect("a second agent on one session is refused");
    assert_eq!(error.kind, ErrorKind::InvalidState);
    assert!(
        error.message.contains("already used by another agent"),
        "{}",
        error.message
    );
    drop(first);
    let (_again, _) = agent_on(&session, vec![]);
}

#[test]
fn summaries_in_the_session_reach_the_model_as_user_messages() {
    let session = shared(Session::in_memory("/work"));
    {
        let mut store = session.lock().unwrap();
        store
            .append_message(&json!({"role": "user", "content": "old question", "timestamp": 1}))
            .unwrap();
        let old = store.leaf_id().unwrap().to_string();
        store
            .append_message(&json!({"role": "assistant", "content": [{"type": "text", "text": "old answer"}], "api": "test-api", "provider": "test-prov", "model": "m1", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": 2}))
            .unwrap();
        store
            .branch_with_summary(
                Some(&old),
                json!({"summary": "SUMMARY-OF-THE-OTHER-BRANCH"}),
            )
            .unwrap();
    }
    let (agent, requests) = agent_on(&session, vec![text_response("ok", 1)]);
    block_on(agent.prompt_text("go on")).unwrap();
    let request = &requests.lock().unwrap()[0];
    let sent: Vec<Json> = request.messages.iter().map(|m| m.json().clone()).collect();
    let summary = sent
        .iter()
        .find(|m| m.to_string().contains("SUMMARY-OF-THE-OTHER-BRANCH"))
        .expect("the branch summary is sent");
    assert_eq!(summary["role"], "user");
    assert!(sent.iter().all(|m| m["role"] != "branchSummary"));
}

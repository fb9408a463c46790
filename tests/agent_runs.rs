//! Agent runs: prompt/continue, listeners, the failure path, hooks captured per run, tool
//! declarations (SPEC §4.7, §7.2, §7.6–§7.9, §7.11–§7.15; checklist items 167, 172, 173,
//! 186–190, 198–204, 209–212, 214, 218–220).
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent::agent::{Agent, PromptInput, Settings};
use agent::error::{Error, ErrorKind};
use agent::event::{AgentEvent, EventShape};
use agent::host::{AbortSignal, Delivery, EventRef, HostFuture, Listener};
use agent::json::{json, to_string, Json};
use common::*;

fn assistant(text: &str) -> Json {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "api": "test-api", "provider": "test-prov",
        "model": "m1", "usage": zero(), "stopReason": "stop", "timestamp": 1})
}

fn last_agent_end(recorder: &Recorder) -> Vec<Json> {
    recorder
        .events()
        .iter()
        .rev()
        .find(|e| e["type"] == "agent_end")
        .unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn c167_finish_turn_end_leaves_follow_ups_queued() {
    let mut settings = Settings::default();
    settings.hooks.finish_turn = Some(hook(|_, _| Ok(Some(json!({"action": "end"})))));
    let (f, requests) = scripted(vec![
        tool_response(&[("c1", "read", json!({}))]),
        text_response("never", 1),
    ]);
    let agent = agent_from(f, vec![text_tool("read", "R", 0)], None, settings);
    agent.follow_up(umsg("fu"));
    agent.prompt_text("go").await.unwrap();
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert_eq!(agent.messages().last().unwrap()["role"], "toolResult");
    assert_eq!(agent.peek_queued_messages(), [umsg("fu")]);
}

#[tokio::test]
async fn c172_follow_up_all_mode_commits_every_follow_up_in_one_turn() {
    let settings = Settings {
        follow_up_mode: "all".into(),
        ..Default::default()
    };
    let (f, requests) = scripted(many_texts(3));
    let agent = agent_from(f, vec![], None, settings);
    agent.follow_up(umsg("f1"));
    agent.follow_up(umsg("f2"));
    agent.prompt_text("go").await.unwrap();
    assert_eq!(requests.lock().unwrap().len(), 2);
    assert_eq!(contents(&agent.messages()), ["go", "a1", "f1", "f2", "a2"]);
}

#[tokio::test]
async fn c173_abort_during_tools_still_makes_the_next_request() {
    let cell: Arc<Mutex<Option<Agent>>> = Arc::default();
    let handle = cell.clone();
    let tool = tool_fn(def("t"), move |_| {
        if let Some(agent) = handle.lock().unwrap().as_ref() {
            agent.abort();
        }
        Ok(Some(text_result("done anyway", json!({}))))
    });
    let (f, requests) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        text_response("never", 1),
    ]);
    let agent = agent_from(f, vec![tool], None, Settings::default());
    *cell.lock().unwrap() = Some(agent.clone());
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::Aborted,
    );
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].signal.is_aborted());
    let messages = agent.messages();
    assert_eq!(
        messages[messages.len() - 2]["content"],
        json!([{"type": "text", "text": "done anyway"}])
    );
    assert_eq!(messages.last().unwrap()["stopReason"], "aborted");
    *cell.lock().unwrap() = None;
}

#[tokio::test]
async fn c186_prompt_with_no_messages_runs_a_request() {
    let (f, requests) = scripted(many_texts(1));
    let agent = agent_from(f, vec![], None, Settings::default());
    agent.set_messages(vec![umsg("earlier")]);
    let recorder = Recorder::attach(&agent);
    agent.prompt(PromptInput::Messages(vec![])).await.unwrap();
    assert_eq!(
        recorder.types()[..3],
        ["agent_start", "turn_start", "message_start"]
    );
    assert_eq!(recorder.events()[2]["message"]["role"], "assistant");
    assert_eq!(
        request_messages(&requests.lock().unwrap()[0]),
        [umsg("earlier")]
    );
}

#[tokio::test]
async fn c187_prompt_or_continue_during_a_run_fails() {
    let agent = agent_with(many_texts(1), vec![], None);
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (handle, log) = (agent.clone(), answers.clone());
    agent.subscribe(listener(move |e| {
        if e["type"] == "turn_start" {
            log.lock().unwrap().push(
                handle
                    .start_prompt(text_prompt("again"), None)
                    .err()
                    .map(|e| (e.kind, e.message)),
            );
            log.lock().unwrap().push(
                handle
                    .start_continue(None)
                    .err()
                    .map(|e| (e.kind, e.message)),
            );
        }
        Ok(())
    }));
    agent.prompt_text("hi").await.unwrap();
    assert_eq!(*answers.lock().unwrap(), [
        Some((ErrorKind::Busy, "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.".to_string())),
        Some((ErrorKind::Busy, "Agent is already processing. Wait for completion before continuing.".to_string())),
    ]);
    assert_eq!(contents(&agent.messages()), ["hi", "a1"]);
}

#[tokio::test]
async fn c188_continue_without_messages_fails_and_keeps_queues() {
    let agent = agent_with(many_texts(1), vec![], Some("Base"));
    agent.steer(umsg("s"));
    agent.follow_up(umsg("f"));
    assert_eq!(
        agent.continue_run().await,
        Err(Error::new(
            ErrorKind::InvalidState,
            "No messages to continue from"
        ))
    );
    agent.set_messages(vec![]);
    assert_eq!(
        agent.continue_run().await,
        Err(Error::new(
            ErrorKind::InvalidState,
            "No messages to continue from"
        ))
    );
    assert_eq!(agent.peek_queued_messages(), [umsg("s")]);
    agent.clear_steering_queue();
    assert_eq!(agent.peek_queued_messages(), [umsg("f")]);
}

#[tokio::test]
async fn c189_continue_from_assistant_steering_then_follow_ups() {
    // §7.7 example 1: steering [s1, s2], follow-ups [f1, f2], one-at-a-time.
    let agent = agent_with(many_texts(4), vec![], None);
    agent.set_messages(vec![umsg("u"), assistant("a0")]);
    for m in ["s1", "s2"] {
        agent.steer(umsg(m));
    }
    for m in ["f1", "f2"] {
        agent.follow_up(umsg(m));
    }
    let recorder = Recorder::attach(&agent);
    agent.continue_run().await.unwrap();
    assert_eq!(
        contents(&last_agent_end(&recorder)),
        ["s1", "a1", "s2", "a2", "f1", "a3", "f2", "a4"]
    );
    // Both queues empty: the exact failure.
    assert_eq!(
        agent.continue_run().await,
        Err(Error::new(
            ErrorKind::InvalidState,
            "Cannot continue from message role: assistant"
        ))
    );
}

#[tokio::test]
async fn c189_continue_from_assistant_with_follow_ups_only() {
    // §7.7 example 2.
    let agent = agent_with(many_texts(2), vec![], None);
    agent.set_messages(vec![umsg("u"), assistant("a0")]);
    agent.follow_up(umsg("f1"));
    agent.follow_up(umsg("f2"));
    let recorder = Recorder::attach(&agent);
    agent.continue_run().await.unwrap();
    assert_eq!(
        contents(&last_agent_end(&recorder)),
        ["f1", "a1", "f2", "a2"]
    );
    assert_eq!(
        recorder
            .types()
            .iter()
            .filter(|t| *t == "turn_start")
            .count(),
        2
    );
}

#[tokio::test]
async fn c190_continue_from_user_tail() {
    // §7.7 example 3: steering is delivered by the initial poll, follow-ups when the run would stop.
    let (f, requests) = scripted(many_texts(2));
    let agent = agent_from(f, vec![], None, Settings::default());
    agent.set_messages(vec![umsg("u")]);
    agent.steer(umsg("s1"));
    agent.follow_up(umsg("f1"));
    let recorder = Recorder::attach(&agent);
    agent.continue_run().await.unwrap();
    assert_eq!(
        contents(&last_agent_end(&recorder)),
        ["s1", "a1", "f1", "a2"]
    );
    assert_eq!(
        request_messages(&requests.lock().unwrap()[0]),
        [umsg("u"), umsg("s1")]
    );
    assert_eq!(
        recorder.types()[..3],
        ["agent_start", "turn_start", "message_start"]
    );
}

#[tokio::test]
async fn c190_continue_from_tool_result_and_custom_tails() {
    for tail in [
        json!({"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": [], "isError": false, "timestamp": 1}),
        json!({"role": "note", "timestamp": 1}),
    ] {
        let agent = agent_with(many_texts(1), vec![], None);
        agent.set_messages(vec![umsg("u"), tail.clone()]);
        let recorder = Recorder::attach(&agent);
        agent.continue_run().await.unwrap();
        assert_eq!(contents(&last_agent_end(&recorder)), ["a1"]);
        assert_eq!(agent.messages()[1], tail);
    }
}

fn logging_listener(log: &Arc<Mutex<Vec<String>>>, name: &'static str, delay_ms: u64) -> Listener {
    let log = log.clone();
    Arc::new(move |event: Arc<AgentEvent>, _signal| {
        let log = log.clone();
        Box::pin(async move {
            if delay_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            }
            log.lock()
                .unwrap()
                .push(format!("{name}:{}", event.type_name()));
            Ok(())
        }) as HostFuture<_>
    })
}

#[tokio::test]
async fn c198_listeners_in_order_and_awaited() {
    let agent = agent_with(many_texts(1), vec![], None);
    let log = Arc::new(Mutex::new(Vec::new()));
    agent.subscribe(logging_listener(&log, "L1", 2));
    agent.subscribe(logging_listener(&log, "L2", 0));
    agent.prompt_text("hi").await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.len() % 2, 0);
    for pair in log.chunks(2) {
        assert!(
            pair[0].starts_with("L1:") && pair[1].starts_with("L2:"),
            "{pair:?}"
        );
        assert_eq!(pair[0][3..], pair[1][3..]);
    }
}

#[tokio::test]
async fn c199_listener_set_changes_during_dispatch() {
    let agent = agent_with(many_texts(1), vec![], None);
    let log = Arc::new(Mutex::new(Vec::new()));
    let l2_id: Arc<Mutex<Option<u64>>> = Arc::default();
    let (handle, ids, late_log) = (agent.clone(), l2_id.clone(), log.clone());
    let done = Arc::new(AtomicBool::new(false));
    agent.subscribe(listener(move |e| {
        if e["type"] == "agent_start" && !done.swap(true, Ordering::SeqCst) {
            handle.unsubscribe(ids.lock().unwrap().unwrap());
            handle.subscribe(logging_listener(&late_log, "L3", 0));
        }
        Ok(())
    }));
    *l2_id.lock().unwrap() = Some(agent.subscribe(logging_listener(&log, "L2", 0)));
    agent.prompt_text("hi").await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log[0], "L3:agent_start");
    assert!(log.iter().all(|l| l.starts_with("L3:")));
}

#[tokio::test]
async fn c200_subscribe_twice_registers_once() {
    let agent = agent_with(many_texts(2), vec![], None);
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = logging_listener(&log, "L", 0);
    let id = agent.subscribe(l.clone());
    assert_eq!(agent.subscribe(l), id);
    agent.prompt_text("hi").await.unwrap();
    assert_eq!(
        log.lock()
            .unwrap()
            .iter()
            .filter(|e| *e == "L:agent_start")
            .count(),
        1
    );
    assert!(agent.unsubscribe(id));
    let count = log.lock().unwrap().len();
    agent.prompt_text("again").await.unwrap();
    assert_eq!(log.lock().unwrap().len(), count);
}

#[tokio::test]
async fn c209_hooks_are_captured_at_run_start() {
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        text_response("a", 1),
        tool_response(&[("c2", "t", json!({}))]),
        text_response("b", 1),
    ]);
    let agent = agent_from(f, vec![text_tool("t", "R", 0)], None, Settings::default());
    let handle = agent.clone();
    agent.subscribe(listener(move |e| {
        if e["type"] == "message_end" && e["message"]["role"] == "assistant" {
            let (blocker, _) = recording_hook(Some(json!({"block": true})));
            handle.update_settings(|s| s.hooks.before_tool_call = Some(blocker));
        }
        Ok(())
    }));
    agent.prompt_text("one").await.unwrap();
    let first_result = agent
        .messages()
        .iter()
        .find(|m| m["role"] == "toolResult")
        .unwrap()
        .clone();
    assert_eq!(first_result["isError"], false);
    agent.prompt_text("two").await.unwrap();
    let last_result = agent
        .messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "toolResult")
        .unwrap()
        .clone();
    assert_eq!(
        last_result["content"][0]["text"],
        "Tool execution was blocked"
    );
}

fn tagging_hook(log: &Arc<Mutex<Vec<String>>>, tag: &'static str) -> agent::host::Hook {
    let log = log.clone();
    hook(move |input, signal| {
        log.lock()
            .unwrap()
            .push(format!("{tag}:{}:{}", input.is_null(), signal.is_aborted()));
        Ok(None)
    })
}

#[tokio::test]
async fn c210_prepare_next_turn_reassignment_applies_at_the_next_turn() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut settings = Settings::default();
    settings.hooks.prepare_next_turn = Some(tagging_hook(&log, "p1"));
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        tool_response(&[("c2", "t", json!({}))]),
        text_response("a", 1),
    ]);
    let agent = agent_from(f, vec![text_tool("t", "R", 0)], None, settings);
    let (handle, hook_log) = (agent.clone(), log.clone());
    agent.subscribe(listener(move |e| {
        if e["type"] == "turn_end" {
            let next = tagging_hook(&hook_log, "p2");
            handle.update_settings(|s| s.hooks.prepare_next_turn = Some(next));
        }
        Ok(())
    }));
    agent.prompt_text("go").await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["p2:true:false", "p2:true:false"]);
}

#[tokio::test]
async fn c210_prepare_next_turn_set_mid_run_without_one_at_start_is_ignored() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        text_response("a", 1),
    ]);
    let agent = agent_from(f, vec![text_tool("t", "R", 0)], None, Settings::default());
    let (handle, hook_log) = (agent.clone(), log.clone());
    agent.subscribe(listener(move |e| {
        if e["type"] == "agent_start" {
            let next = tagging_hook(&hook_log, "late");
            handle.update_settings(|s| s.hooks.prepare_next_turn = Some(next));
        }
        Ok(())
    }));
    agent.prompt_text("go").await.unwrap();
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn c211_c212_prepare_next_turn_forms() {
    let plain_log = Arc::new(Mutex::new(Vec::new()));
    let (with_context, inputs) = recording_hook(None);
    let mut settings = Settings::default();
    settings.hooks.prepare_next_turn = Some(tagging_hook(&plain_log, "plain"));
    settings.hooks.prepare_next_turn_with_context = Some(with_context);
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        text_response("a", 1),
        tool_response(&[("c2", "t", json!({}))]),
        text_response("b", 1),
    ]);
    let agent = agent_from(f, vec![text_tool("t", "R", 0)], None, settings);
    agent.prompt_text("go").await.unwrap();
    assert!(plain_log.lock().unwrap().is_empty());
    let inputs = inputs.lock().unwrap().clone();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0]["message"]["content"][0]["id"], "c1");
    assert_eq!(inputs[0]["toolResults"][0]["toolCallId"], "c1");
    assert_eq!(
        contents(inputs[0]["newMessages"].as_array().unwrap()),
        ["go", "", "R"]
    );
    assert!(inputs[0]["context"]["messages"].is_array());
    // Without the context form, the Agent-level form receives only the signal.
    agent.update_settings(|s| s.hooks.prepare_next_turn_with_context = None);
    agent.prompt_text("again").await.unwrap();
    assert_eq!(*plain_log.lock().unwrap(), ["plain:true:false"]);
}

/// Runs prompt `go` answered by a call of tool `read` then text `a`; `edit` runs on the agent when
/// the tool starts.
async fn run_editing_at_tool_start(
    edit: impl Fn(&Agent) + Send + Sync + 'static,
) -> (Agent, Requests) {
    let (agent, requests) = read_agent(vec![
        tool_response(&[("c1", "read", json!({}))]),
        text_response("a", 1),
    ]);
    on_tool_start(&agent, edit);
    agent.prompt_text("go").await.unwrap();
    (agent, requests)
}

#[tokio::test]
async fn c214_host_edits_during_a_run_do_not_reach_its_requests() {
    let (agent, requests) = run_editing_at_tool_start(|a| a.push_message(umsg("host edit"))).await;
    let second = request_messages(&requests.lock().unwrap()[1]);
    assert!(!second.contains(&umsg("host edit")));
    assert!(agent.messages().contains(&umsg("host edit")));
}

#[tokio::test]
async fn a_list_assigned_during_a_run_receives_its_later_messages() {
    let (agent, _) = run_editing_at_tool_start(|a| a.set_messages(vec![umsg("replaced")])).await;
    assert_eq!(contents(&agent.messages()), ["replaced", "R", "a"]);
}

#[tokio::test]
async fn c218_parallel_tool_events_are_serialised() {
    let chatty = |name: &str| {
        agent::host::FnTool::tool(def(name), |inv: agent::host::ToolInvocation| {
            Box::pin(async move {
                for i in 0..5 {
                    (inv.on_update)(json!({"content": [], "details": i}));
                    tokio::task::yield_now().await;
                }
                Ok(Some(text_result("ok", json!({}))))
            }) as HostFuture<_>
        })
    };
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "a", json!({})), ("c2", "b", json!({}))]),
        text_response("end", 1),
    ]);
    let agent = agent_from(f, vec![chatty("a"), chatty("b")], None, Settings::default());
    let busy = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(Mutex::new(0));
    let (flag, count) = (busy.clone(), overlaps.clone());
    agent.subscribe(Arc::new(move |_event, _signal| {
        let (flag, count) = (flag.clone(), count.clone());
        Box::pin(async move {
            if flag.swap(true, Ordering::SeqCst) {
                *count.lock().unwrap() += 1;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            flag.store(false, Ordering::SeqCst);
            Ok(())
        }) as HostFuture<_>
    }));
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    assert_eq!(
        recorder
            .types()
            .iter()
            .filter(|t| *t == "tool_execution_update")
            .count(),
        10
    );
    assert_eq!(*overlaps.lock().unwrap(), 0);
}

#[tokio::test]
async fn c219_events_are_snapshots() {
    let agent = agent_with(vec![text_response("Hello", 3)], vec![], None);
    let kept: Arc<Mutex<Vec<Arc<AgentEvent>>>> = Arc::default();
    let store = kept.clone();
    agent.subscribe(Arc::new(move |event: Arc<AgentEvent>, _signal| {
        store.lock().unwrap().push(event);
        Box::pin(async { Ok(()) }) as HostFuture<_>
    }));
    agent.prompt_text("hi").await.unwrap();
    let kept = kept.lock().unwrap();
    let texts: Vec<Json> = kept
        .iter()
        .filter(|e| e.type_name() == "message_update")
        .map(|e| e.to_json(EventShape::Full)["message"]["content"][0]["text"].clone())
        .collect();
    assert_eq!(texts.first().unwrap(), "");
    assert_eq!(texts.last().unwrap(), "Hello");
    assert!(texts.len() >= 4);
}

#[tokio::test]
async fn tool_declaration_examples_at_the_agent_level() {
    // SPEC §4.7 examples 1–5, in order, on one Agent (prompt "Base", tools [read, write]).
    let read = text_tool("read", "R", 0);
    let write = text_tool("write", "W", 0);
    let grep = text_tool("grep", "G", 0);
    let mut changed_def = def("write");
    changed_def["description"] = json!("changed");
    let write2 = tool_fn(changed_def, |_| Ok(None));
    let write2_decl =
        json!({"name": "write", "description": "changed", "parameters": {"type": "object"}});
    let agent = agent_with(many_texts(6), vec![read.clone(), write], Some("Base"));
    agent.prompt_text("one").await.unwrap();
    // 1. Changed write, new grep.
    agent.set_tools(vec![read.clone(), write2, grep.clone()]);
    let before = agent.messages().len();
    agent.prompt_text("two").await.unwrap();
    let added: Vec<Json> = agent.messages()[before..].iter().map(normalize).collect();
    assert_eq!(
        to_string(&added[0]),
        to_string(&json!({"role": "system", "content": "", "timestamp": 0,
        "toolsAdded": [write2_decl, decl("grep")], "toolsRemoved": [{"name": "write"}]}))
    );
    assert_eq!(added[1], user_text("two"));
    // 2. Intent fields on a pending system message are replaced by the exact delta.
    agent.set_tools(vec![read.clone()]);
    let before = agent.messages().len();
    let note = json!({"role": "system", "content": "note", "toolsAdded": [decl("bogus")], "timestamp": 99});
    agent
        .prompt(PromptInput::Messages(vec![
            note,
            json!({"role": "user", "content": "three", "timestamp": 100}),
        ]))
        .await
        .unwrap();
    assert_eq!(
        to_string(&agent.messages()[before]),
        to_string(
            &json!({"role": "system", "content": "note", "timestamp": 99,
        "toolsRemoved": [{"name": "write"}, {"name": "grep"}]})
        )
    );
    // 3. Unchanged tools: the system message is kept as given.
    let keep = json!({"role": "system", "content": "keep", "timestamp": 101});
    let before = agent.messages().len();
    agent
        .prompt(PromptInput::Messages(vec![keep.clone(), umsg("u")]))
        .await
        .unwrap();
    assert_eq!(agent.messages()[before], keep);
    // 4. The last pending system message receives the delta.
    agent.set_tools(vec![grep.clone()]);
    let s1 = json!({"role": "system", "content": "s1", "timestamp": 1});
    let s2 = json!({"role": "system", "content": "s2", "toolsRemoved": [{"name": "zzz"}], "timestamp": 3});
    let before = agent.messages().len();
    agent
        .prompt(PromptInput::Messages(vec![
            s1.clone(),
            umsg("u"),
            s2,
            umsg("u2"),
        ]))
        .await
        .unwrap();
    let added = agent.messages()[before..before + 4].to_vec();
    assert_eq!(added[0], s1);
    assert_eq!(
        to_string(&added[2]),
        to_string(&json!({"role": "system", "content": "s2", "timestamp": 3,
        "toolsAdded": [decl("grep")], "toolsRemoved": [{"name": "read"}]}))
    );
    // 5. Clearing the tools.
    agent.set_tools(vec![]);
    let before = agent.messages().len();
    agent.prompt_text("x").await.unwrap();
    let added: Vec<Json> = agent.messages()[before..].iter().map(normalize).collect();
    assert_eq!(
        to_string(&added[0]),
        to_string(
            &json!({"role": "system", "content": "", "timestamp": 0, "toolsRemoved": [{"name": "grep"}]})
        )
    );
    assert_eq!(added[1], user_text("x"));
    assert!(agent.messages()[before]["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
}

#[tokio::test]
async fn tool_declaration_example_6_mid_run_change() {
    let read = text_tool("read", "R", 0);
    let grep = text_tool("grep", "G", 0);
    let mut settings = Settings::default();
    settings.hooks.prepare_next_turn_with_context = Some(hook(|input, _| {
        let mut context = input["context"].clone();
        context["tools"] = json!(["read", "grep"]);
        Ok(Some(json!({"context": context})))
    }));
    let (f, requests) = scripted(vec![
        tool_response(&[("c1", "read", json!({}))]),
        text_response("a", 1),
    ]);
    let agent = agent_from(f, vec![read.clone()], Some("Base"), settings);
    // Make grep known to the agent (hook results name tools, SPEC A17) without declaring it.
    agent.set_tools(vec![read.clone(), grep]);
    agent.set_tools(vec![read]);
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let events = recorder.events();
    let second_turn = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "turn_start")
        .nth(1)
        .unwrap()
        .0;
    let declared =
        json!({"role": "system", "content": "", "timestamp": 0, "toolsAdded": [decl("grep")]});
    assert_eq!(normalize(&events[second_turn + 1]), msg_start(&declared));
    assert_eq!(normalize(&events[second_turn + 2]), msg_end(&declared));
    assert_eq!(
        normalize(
            request_messages(&requests.lock().unwrap()[1])
                .last()
                .unwrap()
        ),
        declared
    );
    assert_eq!(tool_names(&agent), ["read"]);
}

#[tokio::test]
async fn before_tool_call_runs_after_listeners_saw_the_assistant_message() {
    // The barrier guarantee (SPEC §1.3 item 4).
    let cell: Arc<Mutex<Option<Agent>>> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (handle, log) = (cell.clone(), seen.clone());
    let mut settings = Settings::default();
    settings.hooks.before_tool_call = Some(hook(move |_, _| {
        if let Some(agent) = handle.lock().unwrap().as_ref() {
            log.lock()
                .unwrap()
                .push(agent.messages().last().map(|m| m["role"].clone()));
        }
        Ok(None)
    }));
    let (f, _) = scripted(vec![
        tool_response(&[("c1", "t", json!({}))]),
        text_response("a", 1),
    ]);
    let agent = agent_from(f, vec![text_tool("t", "R", 0)], None, settings);
    *cell.lock().unwrap() = Some(agent.clone());
    let listener_done = Arc::new(AtomicBool::new(false));
    let flag = listener_done.clone();
    agent.subscribe(Arc::new(move |event: Arc<AgentEvent>, _signal| {
        let flag = flag.clone();
        let is_assistant_end = event.type_name() == "message_end"
            && event.message().is_some_and(|m| m["role"] == "assistant");
        Box::pin(async move {
            if is_assistant_end {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                flag.store(true, Ordering::SeqCst);
            }
            Ok(())
        }) as HostFuture<_>
    }));
    agent.prompt_text("go").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [Some(json!("assistant"))]);
    assert!(listener_done.load(Ordering::SeqCst));
    *cell.lock().unwrap() = None;
}

#[tokio::test]
async fn agent_forwards_its_stream_options() {
    let settings = Settings {
        session_id: Some(json!("session-1")),
        thinking_budgets: Some(json!({"low": 100})),
        max_retry_delay_ms: Some(json!(500)),
        identity: Some(json!({"userAgent": "short"})),
        ..Default::default()
    };
    let (f, requests) = scripted(many_texts(1));
    let agent = agent_from(f, vec![], None, settings);
    agent.set_thinking_level("minimal").unwrap();
    agent.prompt_text("hi").await.unwrap();
    let options = requests.lock().unwrap()[0].options.clone();
    assert_eq!(options["sessionId"], "session-1");
    assert_eq!(options["transport"], "auto");
    assert_eq!(options["thinkingBudgets"], json!({"low": 100}));
    assert_eq!(options["maxRetryDelayMs"], 500);
    assert_eq!(options["reasoning"], "minimal");
    assert_eq!(options["identity"]["userAgent"], "short");
    assert_eq!(options["identity"]["attribution"]["name"], "pi");
    assert!(options.get("apiKey").is_none());
}

#[tokio::test]
async fn a_listener_resubscribing_itself_during_dispatch_gets_the_event_twice() {
    let agent = agent_with(many_texts(1), vec![], None);
    let log = Arc::new(Mutex::new(Vec::new()));
    let me: Arc<Mutex<Option<(u64, Listener)>>> = Arc::default();
    let (handle, slot, events) = (agent.clone(), me.clone(), log.clone());
    let done = Arc::new(AtomicBool::new(false));
    let l: Listener = Arc::new(move |event: Arc<AgentEvent>, _signal| {
        events.lock().unwrap().push(event.type_name().to_string());
        if event.type_name() == "agent_start" && !done.swap(true, Ordering::SeqCst) {
            let current = slot.lock().unwrap().clone();
            if let Some((id, listener)) = current {
                handle.unsubscribe(id);
                let new_id = handle.subscribe(listener.clone());
                *slot.lock().unwrap() = Some((new_id, listener));
            }
        }
        Box::pin(async { Ok(()) }) as HostFuture<_>
    });
    let id = agent.subscribe(l.clone());
    *me.lock().unwrap() = Some((id, l));
    agent.prompt_text("hi").await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log[..3], ["agent_start", "agent_start", "turn_start"]);
    assert_eq!(log.iter().filter(|t| *t == "agent_end").count(), 1);
}

/// The loop delivers each `message_update` from one event it updates in place: a listener that
/// keeps a copy of every update reads, after the run, each partial as it was at its delta.
#[tokio::test]
async fn kept_update_events_keep_their_moment() {
    let agent = agent_with(
        vec![text_response("one two three four five six", 6)],
        vec![],
        None,
    );
    type Kept = Vec<(AgentEvent, String)>;
    let kept: Arc<Mutex<Kept>> = Arc::new(Mutex::new(Vec::new()));
    let log = kept.clone();
    agent.subscribe_immediate(Arc::new(
        move |delivered: EventRef, _signal: &AbortSignal| {
            if let AgentEvent::MessageUpdate { .. } = delivered.event {
                let then = to_string(&delivered.event.to_json(EventShape::Full));
                log.lock().unwrap().push((delivered.event.clone(), then));
            }
            Delivery::Now(Ok(()))
        },
    ));
    agent.prompt_text("hi").await.unwrap();
    let kept = kept.lock().unwrap();
    assert!(kept.len() >= 6, "{} updates", kept.len());
    let texts: Vec<String> = kept
        .iter()
        .map(|(event, _)| to_string(&event.to_json(EventShape::Full)["message"]["content"]))
        .collect();
    for (event, then) in kept.iter() {
        assert_eq!(&to_string(&event.to_json(EventShape::Full)), then);
    }
    // The partial grows from update to update: the first one does not read the last moment.
    assert!(
        texts.windows(2).all(|w| w[0].len() <= w[1].len()),
        "{texts:?}"
    );
    assert!(texts[0].len() < texts[texts.len() - 1].len(), "{texts:?}");
}

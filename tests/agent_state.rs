//! Agent construction, state, queues and reset (SPEC §7.1–§7.4, §7.10–§7.13, §7.16; checklist
//! items 2, 3, 6, 7, 8, 178–185, 191–197, 205–208, 213, 215–217).
mod common;

use std::sync::{Arc, Mutex};

use agent::agent::{Agent, AgentOptions, InitialState, PromptInput, Settings};
use agent::error::{Error, ErrorKind};
use agent::faux::scripted_stream_fn;
use agent::host::{set_default_stream_fn, NO_DEFAULT_STREAM_FN};
use agent::json::{json, parse, to_string, Json};
use common::*;

fn texts(messages: &[Json]) -> Vec<String> {
    messages.iter().map(|m| to_string(&normalize(m))).collect()
}

#[tokio::test]
async fn c002_custom_messages_round_trip() {
    let custom = parse(
        r#"{"role":"notification","z":1,"a":{"b":[1,{"y":null}],"a":"x"},"10":true,"timestamp":3}"#,
    )
    .unwrap();
    let text = to_string(&custom);
    let (f, requests) = scripted(vec![text_response("a", 1)]);
    let agent = agent_from(f, vec![], None, Settings::default());
    let recorder = Recorder::attach(&agent);
    agent
        .prompt(PromptInput::Messages(vec![custom.clone(), umsg("u")]))
        .await
        .unwrap();
    let events = recorder.events();
    assert_eq!(to_string(&events[2]["message"]), text);
    assert_eq!(to_string(&events[3]["message"]), text);
    assert_eq!(to_string(&agent.messages()[0]), text);
    assert_eq!(to_string(&events.last().unwrap()["messages"][0]), text);
    // The default convertToLlm drops it from the request.
    assert_eq!(request_messages(&requests.lock().unwrap()[0]), [umsg("u")]);
}

#[tokio::test]
async fn c003_integer_like_keys_first() {
    let custom = parse(r#"{"role":"x","b":1,"10":2,"2":3,"timestamp":1}"#).unwrap();
    assert_eq!(
        to_string(&custom),
        r#"{"2":3,"10":2,"role":"x","b":1,"timestamp":1}"#
    );
    let agent = agent_with(vec![text_response("a", 1)], vec![], None);
    let recorder = Recorder::attach(&agent);
    agent.prompt(PromptInput::Message(custom)).await.unwrap();
    assert_eq!(
        to_string(&recorder.events()[2]["message"]),
        r#"{"2":3,"10":2,"role":"x","b":1,"timestamp":1}"#
    );
}

#[tokio::test]
async fn c006_zero_usage_on_failure_messages() {
    let agent = agent_with(vec![json!({"throw": "boom"})], vec![], None);
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    let failure = agent.messages().last().unwrap().clone();
    assert_eq!(
        to_string(&failure["usage"]),
        r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#
    );
}

#[tokio::test]
async fn c007_placeholder_model() {
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(scripted_stream_fn(vec![])),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        to_string(&agent.model()),
        r#"{"id":"unknown","name":"unknown","api":"unknown","provider":"unknown","baseUrl":"","reasoning":false,"input":[],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":0,"maxTokens":0}"#
    );
}

#[tokio::test]
async fn c008_declarations_keep_only_declared_keys() {
    let definition = json!({"label": "R", "constrainedSampling": false, "parameters": {"type": "object"}, "name": "read",
        "executionMode": "sequential", "outputSchema": {}, "replay": "safe", "extra": 1, "description": "d"});
    let bare = json!({"name": "bare", "label": "B", "parameters": {}});
    let tools = vec![
        tool_fn(definition, |_| Ok(None)),
        tool_fn(bare, |_| Ok(None)),
    ];
    let agent = agent_with(vec![], tools, Some("Base"));
    assert_eq!(
        to_string(&agent.messages()[0]["toolsAdded"]),
        r#"[{"name":"read","description":"d","parameters":{"type":"object"},"constrainedSampling":false},{"name":"bare","parameters":{}}]"#
    );
}

#[tokio::test]
async fn c178_c179_default_stream_function_required_and_captured() {
    // The only test of this binary that touches the process-global default.
    set_default_stream_fn(None);
    let failed = Agent::new(AgentOptions::default()).err();
    assert_eq!(
        failed,
        Some(Error::new(ErrorKind::NoStreamFn, NO_DEFAULT_STREAM_FN))
    );
    assert_eq!(NO_DEFAULT_STREAM_FN, "No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn().");
    let (first, first_requests) = scripted(vec![text_response("one", 1)]);
    set_default_stream_fn(Some(first));
    let captured = Agent::new(AgentOptions::default()).unwrap();
    let (second, second_requests) = scripted(vec![text_response("two", 1)]);
    set_default_stream_fn(Some(second));
    captured.prompt_text("hi").await.unwrap();
    assert_eq!(first_requests.lock().unwrap().len(), 1);
    assert_eq!(second_requests.lock().unwrap().len(), 0);
    // A cleared streamFunction looks the default up when the run's main loop starts.
    set_default_stream_fn(None);
    captured.set_stream_fn(None);
    let recorder = Recorder::attach(&captured);
    common::failure(
        captured.prompt_text("again").await,
        agent::error::ErrorKind::ModelError,
    );
    let types: Vec<String> = recorder.types();
    assert_eq!(
        types,
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(
        captured.error_message().as_deref(),
        Some(NO_DEFAULT_STREAM_FN)
    );
}

#[tokio::test]
async fn c180_default_options() {
    let (f, requests) = scripted(vec![text_response("a", 1)]);
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(f),
        ..Default::default()
    })
    .unwrap();
    let settings = agent.settings();
    assert_eq!(settings.steering_mode, "one-at-a-time");
    assert_eq!(settings.follow_up_mode, "one-at-a-time");
    assert_eq!(settings.tool_execution, "parallel");
    assert_eq!(agent.thinking_level(), "off");
    agent.steer(umsg("s1"));
    agent.steer(umsg("s2"));
    assert_eq!(agent.peek_queued_messages(), [umsg("s1")]);
    agent.clear_all_queues();
    agent.prompt_text("hi").await.unwrap();
    let options = requests.lock().unwrap()[0].options.clone();
    assert_eq!(options["transport"], "auto");
    assert!(options.get("reasoning").is_none());
}

#[tokio::test]
async fn c181_initial_system_message_examples() {
    let new = |state: InitialState| {
        Agent::new(AgentOptions {
            initial_state: state,
            stream_fn: Some(scripted_stream_fn(vec![])),
            ..Default::default()
        })
        .unwrap()
    };
    let a = new(InitialState {
        system_prompt: Some("Base".into()),
        tools: vec![text_tool("read", "R", 0), text_tool("write", "W", 0)],
        ..Default::default()
    });
    assert_eq!(
        texts(&a.messages()),
        [to_string(
            &json!({"role": "system", "content": "Base", "toolsAdded": [decl("read"), decl("write")], "timestamp": 0})
        )]
    );
    assert_eq!(a.messages()[0]["timestamp"], 0);
    assert_eq!(a.system_prompt(), "Base");
    let user = json!({"role": "user", "content": "u", "timestamp": 5});
    let b = new(InitialState {
        system_prompt: Some("Base".into()),
        messages: vec![user.clone()],
        ..Default::default()
    });
    assert_eq!(
        b.messages(),
        [
            json!({"role": "system", "content": "Base", "timestamp": 0}),
            user
        ]
    );
    let c = new(InitialState {
        system_prompt: Some(String::new()),
        ..Default::default()
    });
    assert!(c.messages().is_empty());
    assert_eq!(c.system_prompt(), "");
    let existing = json!({"role": "system", "content": "Existing", "timestamp": 5});
    let d = new(InitialState {
        system_prompt: Some("Base".into()),
        messages: vec![existing.clone()],
        tools: vec![text_tool("read", "R", 0)],
        ..Default::default()
    });
    assert_eq!(d.messages(), [existing]);
    assert_eq!(d.system_prompt(), "Existing");
}

#[tokio::test]
async fn c182_system_prompt_follows_appended_system_messages() {
    let agent = agent_with(vec![text_response("a", 1)], vec![], Some("Base"));
    agent.push_message(json!({"role": "system", "content": "More", "timestamp": 1}));
    assert_eq!(agent.system_prompt(), "Base\n\nMore");
    let system =
        json!({"role": "system", "content": "", "sections": {"skills": "<s/>"}, "timestamp": 2});
    agent
        .prompt(PromptInput::Messages(vec![system, umsg("go")]))
        .await
        .unwrap();
    assert_eq!(agent.system_prompt(), "Base\n\nMore\n\n<s/>");
}

#[tokio::test]
async fn c183_setting_lists_copies_them() {
    let agent = agent_with(vec![], vec![], None);
    let mut list = vec![umsg("a")];
    agent.set_messages(list.clone());
    list.push(umsg("b"));
    assert_eq!(agent.messages(), [umsg("a")]);
    agent.push_message(umsg("c"));
    assert_eq!(agent.messages(), [umsg("a"), umsg("c")]);
    let mut tools = vec![text_tool("read", "R", 0)];
    agent.set_tools(tools.clone());
    tools.push(text_tool("write", "W", 0));
    assert_eq!(agent.tools().len(), 1);
}

#[tokio::test]
async fn c184_prompt_text_creates_array_content() {
    let agent = agent_with(
        vec![text_response("a", 1), text_response("b", 1)],
        vec![],
        None,
    );
    agent.prompt_text("plain").await.unwrap();
    let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    agent
        .prompt(PromptInput::Text {
            text: "pic".into(),
            images: vec![image.clone()],
        })
        .await
        .unwrap();
    let messages = agent.messages();
    assert_eq!(normalize(&messages[0]), user_text("plain"));
    assert_eq!(
        normalize(&messages[2]),
        json!({"role": "user", "content": [{"type": "text", "text": "pic"}, image], "timestamp": 0})
    );
    assert!(messages[0]["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
}

#[tokio::test]
async fn c185_prompt_message_and_messages_commit_exactly_those() {
    let agent = agent_with(
        vec![text_response("a", 1), text_response("b", 1)],
        vec![],
        None,
    );
    let one = json!({"role": "user", "content": "one", "timestamp": 7, "extra": true});
    agent
        .prompt(PromptInput::Message(one.clone()))
        .await
        .unwrap();
    let two = vec![umsg("x"), json!({"role": "note", "timestamp": 8})];
    agent
        .prompt(PromptInput::Messages(two.clone()))
        .await
        .unwrap();
    let messages = agent.messages();
    assert_eq!(messages[0], one);
    assert_eq!(messages[2..4], two[..]);
}

#[tokio::test]
async fn c191_is_streaming_spans_the_whole_run() {
    // The model stalls until the run is aborted, so the run is certainly still active below.
    let stalled = json!({"content": [{"type": "text", "text": "a"}], "waitForAbort": true});
    let agent = agent_with(vec![stalled], vec![], None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (handle, log) = (agent.clone(), seen.clone());
    agent.subscribe(listener(move |e| {
        if e["type"] == "agent_end" {
            log.lock().unwrap().push(handle.is_streaming());
        }
        Ok(())
    }));
    let run = agent.start_prompt(text_prompt("hi"), None).unwrap();
    assert!(agent.is_streaming());
    agent.abort();
    run.wait().await.unwrap();
    assert!(!agent.is_streaming());
    assert_eq!(*seen.lock().unwrap(), [true]);
}

#[tokio::test]
async fn c192_error_and_streaming_message_cleared_at_run_start() {
    let agent = agent_with(
        vec![json!({"throw": "boom"}), text_response("a", 1)],
        vec![],
        None,
    );
    common::failure(
        agent.prompt_text("one").await,
        agent::error::ErrorKind::ModelError,
    );
    assert_eq!(agent.error_message().as_deref(), Some("boom"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (handle, log) = (agent.clone(), seen.clone());
    agent.subscribe(listener(move |e| {
        if e["type"] == "agent_start" {
            log.lock()
                .unwrap()
                .push((handle.error_message(), handle.streaming_message()));
        }
        Ok(())
    }));
    agent.prompt_text("two").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [(None, None)]);
}

#[tokio::test]
async fn c193_signal_only_during_a_run() {
    let agent = agent_with(vec![text_response("a", 1)], vec![], None);
    assert!(agent.signal().is_none());
    agent.abort();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (handle, log) = (agent.clone(), seen.clone());
    agent.subscribe(Arc::new(move |_event, signal| {
        let same = handle
            .signal()
            .is_some_and(|s| s.same(&signal) && !s.is_aborted());
        log.lock().unwrap().push(same);
        Box::pin(async { Ok(()) }) as agent::host::HostFuture<_>
    }));
    agent.prompt_text("hi").await.unwrap();
    assert!(seen.lock().unwrap().iter().all(|s| *s));
    assert!(agent.signal().is_none());
    assert_eq!(agent.messages().last().unwrap()["stopReason"], "stop");
}

#[tokio::test]
async fn c194_wait_for_idle() {
    let stalled = json!({"content": [{"type": "text", "text": "a"}], "waitForAbort": true});
    let agent = agent_with(vec![stalled], vec![], None);
    agent.wait_for_idle().await;
    let ended = Arc::new(Mutex::new(false));
    let flag = ended.clone();
    agent.subscribe(listener(move |e| {
        if e["type"] == "agent_end" {
            *flag.lock().unwrap() = true;
        }
        Ok(())
    }));
    agent.start_prompt(text_prompt("hi"), None).unwrap();
    // The waiter is registered while the run is active; the abort then lets the run finish.
    tokio::join!(agent.wait_for_idle(), async { agent.abort() });
    assert!(*ended.lock().unwrap());
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn c195_c196_c197_state_reduction_per_event() {
    let tools = vec![
        result_tool("slow", text_result("s", json!({})), 30),
        result_tool("fast", text_result("f", json!({})), 0),
    ];
    let agent = agent_with(
        vec![
            tool_response(&[("c1", "slow", json!({})), ("c2", "fast", json!({}))]),
            json!({"content": [], "stopReason": "error", "errorMessage": "late failure"}),
        ],
        tools,
        None,
    );
    let problems = Arc::new(Mutex::new(Vec::<String>::new()));
    let pending = Arc::new(Mutex::new(Vec::new()));
    let (handle, log, pend) = (agent.clone(), problems.clone(), pending.clone());
    agent.subscribe(listener(move |e| {
        let kind = e["type"].as_str().unwrap();
        let check = |ok: bool, what: &str| {
            if !ok {
                log.lock().unwrap().push(format!("{kind}: {what}"))
            }
        };
        match kind {
            "message_start" | "message_update" => check(
                handle.streaming_message().as_ref() == Some(&e["message"]),
                "streamingMessage",
            ),
            "message_end" => {
                check(
                    handle.streaming_message().is_none(),
                    "streamingMessage cleared",
                );
                check(handle.messages().last() == Some(&e["message"]), "appended");
            }
            "tool_execution_start" | "tool_execution_end" => {
                pend.lock().unwrap().push(handle.pending_tool_calls())
            }
            "turn_end" if e["message"]["errorMessage"].is_string() => check(
                handle.error_message().as_deref() == Some("late failure"),
                "errorMessage",
            ),
            _ => {}
        }
        Ok(())
    }));
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    assert!(
        problems.lock().unwrap().is_empty(),
        "{:?}",
        problems.lock().unwrap()
    );
    let s = |ids: &[&str]| ids.iter().map(|i| i.to_string()).collect::<Vec<_>>();
    assert_eq!(
        *pending.lock().unwrap(),
        [s(&["c1"]), s(&["c1", "c2"]), s(&["c1"]), s(&[])]
    );
}

#[tokio::test]
async fn c205_cleanup_keeps_error_message() {
    let agent = agent_with(
        vec![json!({"content": [], "stopReason": "error", "errorMessage": "bad"})],
        vec![],
        None,
    );
    common::failure(
        agent.prompt_text("hi").await,
        agent::error::ErrorKind::ModelError,
    );
    assert!(!agent.is_streaming());
    assert!(agent.streaming_message().is_none());
    assert!(agent.pending_tool_calls().is_empty());
    assert_eq!(agent.error_message().as_deref(), Some("bad"));
}

#[tokio::test]
async fn c206_c207_c208_queues() {
    let agent = agent_with(vec![], vec![], None);
    assert!(!agent.has_queued_messages());
    assert!(agent.peek_queued_messages().is_empty());
    for m in ["f1", "f2"] {
        agent.follow_up(umsg(m));
    }
    assert_eq!(agent.peek_queued_messages(), [umsg("f1")]);
    for m in ["s1", "s2"] {
        agent.steer(umsg(m));
    }
    assert!(agent.has_queued_messages());
    assert_eq!(agent.peek_queued_messages(), [umsg("s1")]);
    assert_eq!(
        agent.peek_queued_messages(),
        [umsg("s1")],
        "peek does not consume"
    );
    agent.update_settings(|s| s.steering_mode = "all".into());
    assert_eq!(agent.peek_queued_messages(), [umsg("s1"), umsg("s2")]);
    agent.clear_steering_queue();
    assert_eq!(agent.peek_queued_messages(), [umsg("f1")]);
    agent.update_settings(|s| s.follow_up_mode = "all".into());
    assert_eq!(agent.peek_queued_messages(), [umsg("f1"), umsg("f2")]);
    agent.clear_follow_up_queue();
    assert!(!agent.has_queued_messages());
    agent.steer(umsg("s"));
    agent.follow_up(umsg("f"));
    agent.clear_all_queues();
    assert!(!agent.has_queued_messages());
}

#[tokio::test]
async fn c206_drains_follow_the_mode() {
    // One-at-a-time drains one follow-up per turn; "all" drains the rest at once.
    let (f, requests) = scripted(many_texts(3));
    let agent = agent_from(f, vec![], None, Settings::default());
    for m in ["f1", "f2", "f3"] {
        agent.follow_up(umsg(m));
    }
    let handle = agent.clone();
    agent.subscribe(listener(move |e| {
        if e["type"] == "message_end" && e["message"] == umsg("f1") {
            handle.update_settings(|s| s.follow_up_mode = "all".into());
        }
        Ok(())
    }));
    agent.prompt_text("go").await.unwrap();
    assert_eq!(requests.lock().unwrap().len(), 3);
    let last = request_messages(&requests.lock().unwrap()[2]);
    assert_eq!(last[last.len() - 2..], [umsg("f2"), umsg("f3")]);
}

#[tokio::test]
async fn c213_model_and_thinking_changes_apply_to_later_runs() {
    let (agent, requests) = read_agent(vec![
        tool_response(&[("c1", "read", json!({}))]),
        text_response("a", 1),
        text_response("b", 1),
    ]);
    on_tool_start(&agent, |handle| {
        handle.set_thinking_level("high").unwrap();
        handle
            .set_model(json!({"id": "m2", "api": "a2", "provider": "p2"}))
            .unwrap();
    });
    agent.prompt_text("one").await.unwrap();
    agent.prompt_text("two").await.unwrap();
    let requests = requests.lock().unwrap();
    assert_eq!(*requests[1].model, model());
    assert!(requests[1].options.get("reasoning").is_none());
    assert_eq!(requests[2].model["id"], "m2");
    assert_eq!(requests[2].options["reasoning"], "high");
}

#[tokio::test]
async fn c215_reset_example() {
    let agent = agent_with(
        vec![json!({"content": [], "stopReason": "error", "errorMessage": "bad"})],
        vec![text_tool("read", "R", 0)],
        Some("Base"),
    );
    let system =
        json!({"role": "system", "content": "More", "sections": {"s": "S"}, "timestamp": 4});
    agent
        .prompt(PromptInput::Messages(vec![system, umsg("u")]))
        .await
        .unwrap_err();
    agent.steer(umsg("s"));
    agent.follow_up(umsg("f"));
    assert!(agent.error_message().is_some());
    agent.reset().unwrap();
    assert_eq!(
        to_string(&json!(agent.messages())),
        to_string(&json!([{"role": "system", "content": "Base\n\nMore",
        "sections": {"s": "S"}, "toolsAdded": [decl("read")], "timestamp": 0}]))
    );
    assert!(!agent.has_queued_messages());
    assert!(agent.error_message().is_none());
    assert!(agent.pending_tool_calls().is_empty());
    assert!(agent.streaming_message().is_none());
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn c216_reset_during_a_run_fails() {
    let agent = agent_with(vec![text_response("a", 1)], vec![], None);
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (handle, log) = (agent.clone(), answers.clone());
    agent.subscribe(listener(move |e| {
        if e["type"] == "agent_start" {
            log.lock().unwrap().push(handle.reset());
        }
        Ok(())
    }));
    agent.prompt_text("hi").await.unwrap();
    assert_eq!(
        *answers.lock().unwrap(),
        [Err(Error::new(
            ErrorKind::Busy,
            "Agent is already processing. Wait for completion before resetting."
        ))]
    );
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test]
async fn c217_reset_keeps_tools_model_level_and_listeners() {
    let agent = agent_with(
        vec![text_response("a", 1), text_response("b", 1)],
        vec![text_tool("read", "R", 0)],
        Some("Base"),
    );
    agent.set_thinking_level("low").unwrap();
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("one").await.unwrap();
    agent.reset().unwrap();
    assert_eq!(tool_names(&agent), ["read"]);
    assert_eq!(agent.model(), model());
    assert_eq!(agent.thinking_level(), "low");
    let before = recorder.events().len();
    agent.prompt_text("two").await.unwrap();
    assert!(recorder.events().len() > before);
}

/// Each request carries exactly the default conversion of the transcript as it is then, while
/// a run's requests and an agent's runs build their message lists on the last one: across
/// prompts, with a custom message the conversion drops, after the transcript is replaced, and
/// while the recorder still holds every earlier request (whose lists must not change).
#[tokio::test]
async fn requests_carry_the_transcript_as_it_is_then() {
    let responses = ["a", "b", "c", "d"].map(|t| text_response(t, 1)).to_vec();
    let (f, requests) = scripted(responses);
    let agent = agent_from(f, vec![], None, Settings::default());
    let expected = |agent: &Agent| -> Vec<Json> {
        let keeps = |m: &Json| {
            let role = m["role"].as_str().unwrap_or("");
            matches!(role, "system" | "user" | "assistant" | "toolResult")
        };
        agent.messages().into_iter().filter(keeps).collect()
    };
    let mut seen = Vec::new();
    for prompt in [
        vec![umsg("one")],
        vec![json!({"role": "note", "timestamp": 1}), umsg("two")],
    ] {
        agent.prompt(PromptInput::Messages(prompt)).await.unwrap();
        // The request held the transcript up to the prompt (the answer came after it).
        let mut now = expected(&agent);
        now.pop();
        seen.push(now);
    }
    agent.set_messages(vec![umsg("fresh")]);
    for prompt in ["three", "four"] {
        agent
            .prompt(PromptInput::Messages(vec![umsg(prompt)]))
            .await
            .unwrap();
        let mut now = expected(&agent);
        now.pop();
        seen.push(now);
    }
    let requests = requests.lock().unwrap();
    let got: Vec<Vec<Json>> = requests.iter().map(request_messages).collect();
    assert_eq!(got, seen);
    assert_eq!(
        got[2][0],
        umsg("fresh"),
        "the replaced transcript is not reused"
    );
    assert!(!got[1].iter().any(|m| m["role"] == "note"));
}

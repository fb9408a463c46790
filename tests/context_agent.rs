//! Context management in the agent (issue 27): threshold compaction, overflow recovery,
//! automatic retries with backoff, manual compaction, and their events and faults.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::agent::{
    Agent, AgentOptions, InitialState, RetrySleep, Settings, SharedSession, COMPACTION_CANCELLED,
    NO_CONTEXT_WINDOW, OVERFLOW_RECOVERY_FAILED, RETRY_CANCELLED,
};
use agent::context::estimate_message;
use agent::error::ErrorKind;
use agent::faux::scripted_stream_fn;
use agent::host::{HostFuture, StreamFn, StreamRequest};
use agent::json::{json, Json};
use agent::message::zero_usage;
use agent::session::{Durability, Session};
use agent::stream::StreamSender;
use common::{hook, text_tool, Recorder};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

fn windowed_model(window: u64) -> Json {
    json!({"id": "m1", "api": "test-api", "provider": "test-prov",
           "contextWindow": window, "maxTokens": 4096})
}

fn usage(input: u64, output: u64) -> Json {
    let mut usage = zero_usage();
    usage["input"] = json!(input);
    usage["output"] = json!(output);
    usage["totalTokens"] = json!(input + output);
    usage
}

/// The estimated tokens of a request's messages.
fn request_tokens(request: &StreamRequest) -> u64 {
    request
        .messages
        .iter()
        .map(|m| estimate_message(m.json()))
        .sum()
}

/// A stream function answering each request with `answer(request)`.
fn answering(answer: impl Fn(&StreamRequest) -> Json + Send + Sync + 'static) -> StreamFn {
    Arc::new(move |request: StreamRequest, sender: StreamSender| {
        let response = answer(&request);
        scripted_stream_fn(vec![response])(request, sender)
    })
}

fn error_response(text: &str) -> Json {
    json!({"content": [], "stopReason": "error", "errorMessage": text})
}

fn text_answer(text: &str, usage_json: Json) -> Json {
    json!({"content": [{"type": "text", "text": text}], "usage": usage_json})
}

/// A compact hook answering a short summary, counting its calls.
fn summary_hook() -> (agent::host::Hook, Arc<Mutex<Vec<Json>>>) {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let seen = inputs.clone();
    let hook = hook(move |input, _| {
        let mut seen = seen.lock().unwrap();
        seen.push(input);
        Ok(Some(
            json!({"summary": format!("Summary number {}.", seen.len())}),
        ))
    });
    (hook, inputs)
}

/// A sleeper that records each delay and returns at once.
fn recording_sleep() -> (RetrySleep, Arc<Mutex<Vec<u64>>>) {
    let delays = Arc::new(Mutex::new(Vec::new()));
    let seen = delays.clone();
    let sleep: RetrySleep = Arc::new(move |delay: Duration| {
        seen.lock().unwrap().push(delay.as_millis() as u64);
        Box::pin(async {}) as HostFuture<()>
    });
    (sleep, delays)
}

fn settings_with(patch: Json) -> Settings {
    let mut settings = Settings::default();
    let patch = patch.as_object().unwrap().clone();
    Settings::check(&patch).unwrap();
    settings.apply(&patch);
    settings
}

fn agent(
    model: Json,
    stream_fn: StreamFn,
    settings: Settings,
    messages: Vec<Json>,
    session: Option<SharedSession>,
) -> Agent {
    Agent::new(AgentOptions {
        initial_state: InitialState {
            system_prompt: Some("You are terse.".into()),
            model: Some(model),
            tools: vec![text_tool("read", big_text(), 0)],
            messages,
            ..Default::default()
        },
        stream_fn: Some(stream_fn),
        settings,
        session,
        ..Default::default()
    })
    .expect("agent")
}

/// About 2,000 tokens of tool output.
fn big_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| "word ".repeat(1600))
}

fn of_type<'a>(events: &'a [Json], kind: &str) -> Vec<&'a Json> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The context events and agent_start/agent_end in order.
fn outline(events: &[Json]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| {
            let kind = e["type"].as_str().unwrap();
            match kind {
                "agent_start" | "agent_end" | "compaction_start" => Some(kind.to_string()),
                "compaction_end" => Some(format!("{kind}:{}", e["reason"].as_str().unwrap())),
                "auto_retry_start" => Some(format!("{kind}:{}", e["attempt"])),
                "auto_retry_end" => Some(format!("{kind}:{}", e["success"])),
                _ => None,
            }
        })
        .collect()
}

/// Earlier conversation of about `tokens` tokens, in user/assistant pairs.
fn history(pairs: usize) -> Vec<Json> {
    let mut messages = Vec::new();
    for i in 0..pairs {
        messages.push(json!({"role": "user", "content": format!("question {i} {}", "q ".repeat(400)), "timestamp": 1}));
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {i} {}", "a ".repeat(400))}],
            "api": "test-api", "provider": "test-prov", "model": "m1", "usage": zero_usage(), "stopReason": "stop", "timestamp": 1}));
    }
    messages
}

// ----- the long conversation ------------------------------------------------------------------

/// The scripted model of the long conversation: a tool call after a prompt, a short answer
/// after a tool result, usage = the request's estimate. Records the largest request.
fn long_conversation_model(largest: Arc<Mutex<u64>>) -> StreamFn {
    answering(move |request| {
        if is_summary_request(request) {
            return text_answer("## Goal\nRead the file at every step.", usage(900, 12));
        }
        let tokens = request_tokens(request);
        {
            let mut largest = largest.lock().unwrap();
            *largest = (*largest).max(tokens);
        }
        let last = request.messages.last().unwrap();
        if last.json()["role"] == "toolResult" {
            text_answer("Read it.", usage(tokens, 3))
        } else {
            json!({"content": [{"type": "toolCall", "id": format!("c{tokens}"), "name": "read", "arguments": {}}],
                   "stopReason": "toolUse", "usage": usage(tokens, 10)})
        }
    })
}

/// The summarizer's requests carry an output budget; the agent loop's do not.
fn is_summary_request(request: &StreamRequest) -> bool {
    request.options.get("maxTokens").is_some()
}

/// 200 prompts, each reading a 2,000-token file. Summaries from the hook, or (`use_hook`
/// false) from the model itself.
fn run_long_conversation(session: Option<SharedSession>, use_hook: bool) -> Vec<Json> {
    let largest = Arc::new(Mutex::new(0));
    let (compact_hook, summaries) = summary_hook();
    let mut settings = settings_with(json!({
        "compaction": {"enabled": true, "reserveTokens": 3000, "keepRecentTokens": 2500}
    }));
    if use_hook {
        let _ = settings
            .hooks
            .set(agent::agent::HookKind::Compact, Some(compact_hook));
    }
    let agent = agent(
        windowed_model(8000),
        long_conversation_model(largest.clone()),
        settings,
        Vec::new(),
        session,
    );
    let recorder = Recorder::attach(&agent);
    for turn in 0..200 {
        block_on(agent.prompt_text(&format!("Step {turn}: read the file.")))
            .unwrap_or_else(|e| panic!("turn {turn} failed: {e:?}"));
    }
    let largest = *largest.lock().unwrap();
    assert!(largest <= 8000, "a request of {largest} tokens");
    assert!(
        largest > 5000,
        "the conversation filled the window ({largest})"
    );
    let events = recorder.events();
    let ends = of_type(&events, "compaction_end");
    assert!(ends.len() >= 20, "{} compactions", ends.len());
    if use_hook {
        assert_eq!(summaries.lock().unwrap().len(), ends.len());
    }
    for end in &ends {
        assert_eq!(end["reason"], "threshold");
        assert_eq!(end["aborted"], false);
        assert!(end.get("errorMessage").is_none(), "{end}");
        let result = &end["result"];
        assert!(result["estimatedTokensAfter"].as_u64().unwrap() < 5000);
        assert!(result["tokensBefore"].as_u64().unwrap() > 5000);
        assert!(result["details"]["readFiles"].is_array());
    }
    assert!(of_type(&events, "auto_retry_start").is_empty());
    // The transcript stays short: a summary and the recent turns.
    let messages = agent.messages();
    assert!(messages.len() < 20, "{} messages", messages.len());
    assert_eq!(messages[1]["role"], "compactionSummary");
    events
}

#[test]
fn a_long_conversation_never_exceeds_the_window() {
    run_long_conversation(None, true);
}

#[test]
fn a_long_conversation_summarized_by_its_own_model_never_exceeds_the_window() {
    let events = run_long_conversation(None, false);
    let end = of_type(&events, "compaction_end")[0];
    let summary = end["result"]["summary"].as_str().unwrap();
    assert!(summary.contains("## Goal\nRead the file"), "{summary}");
    assert!(end["result"]["usage"].is_object());
}

#[test]
fn a_long_conversation_on_a_session_writes_compactions_that_reopen() {
    let dir = std::env::temp_dir().join(format!("libagent-context-agent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let session = Session::create(&dir, "/work", Durability::Flush).unwrap();
    let path = session.file_path().unwrap().to_path_buf();
    let shared: SharedSession = Arc::new(Mutex::new(session));
    let events = run_long_conversation(Some(shared.clone()), true);
    let compactions = of_type(&events, "compaction_end").len();
    let in_memory = shared.lock().unwrap().context().unwrap().messages;
    drop(shared); // closes the file
    let reopened = common::reopen_session(&path);
    assert!(reopened.skipped_lines().is_empty());
    let entries: Vec<&Json> = reopened
        .entries()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert_eq!(entries.len(), compactions);
    for entry in &entries {
        assert!(entry["summary"]
            .as_str()
            .unwrap()
            .starts_with("Summary number"));
        assert!(reopened
            .entry(entry["firstKeptEntryId"].as_str().unwrap())
            .unwrap()
            .is_some());
        assert!(entry["tokensBefore"].as_u64().unwrap() > 0);
    }
    let context = reopened.context().unwrap().messages;
    assert_eq!(context[1]["role"], "compactionSummary");
    assert_eq!(context, in_memory);
    let _ = std::fs::remove_dir_all(&dir);
}

// ----- overflow and retries -------------------------------------------------------------------

/// Answers `script` in order, then the text "done" with small usage.
fn script_model(script: Vec<Json>) -> (StreamFn, common::Requests) {
    let next = Arc::new(Mutex::new(script.into_iter()));
    common::recording(answering(move |_| {
        next.lock()
            .unwrap()
            .next()
            .unwrap_or_else(|| text_answer("done", usage(900, 2)))
    }))
}

#[test]
fn an_overflow_and_two_overloads_recover_with_one_compaction_and_two_retries() {
    let (stream_fn, requests) = script_model(vec![
        error_response("prompt is too long: 213462 tokens > 200000 maximum"),
        error_response("529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"),
        error_response("529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"),
    ]);
    let (compact_hook, summaries) = summary_hook();
    let (sleep, delays) = recording_sleep();
    let mut settings = settings_with(
        json!({"compaction": {"enabled": true, "keepRecentTokens": 300}, "retry": {"enabled": true}}),
    );
    let _ = settings
        .hooks
        .set(agent::agent::HookKind::Compact, Some(compact_hook));
    settings.retry_sleep = Some(sleep);
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        settings,
        history(6),
        None,
    );
    let recorder = Recorder::attach(&agent);
    block_on(agent.prompt_text("And now?")).expect("the run recovers");
    let events = recorder.events();
    assert_eq!(
        outline(&events),
        [
            "agent_start",
            "agent_end",
            "compaction_start",
            "compaction_end:overflow",
            "agent_start",
            "agent_end",
            "auto_retry_start:1",
            "agent_start",
            "agent_end",
            "auto_retry_start:2",
            "agent_start",
            "agent_end",
            "auto_retry_end:true",
        ]
    );
    assert_eq!(*delays.lock().unwrap(), [2000, 4000]);
    let starts = of_type(&events, "auto_retry_start");
    assert_eq!(starts[0]["maxAttempts"], 3);
    assert_eq!(starts[0]["delayMs"], 2000);
    assert_eq!(starts[1]["delayMs"], 4000);
    assert!(starts[0]["errorMessage"]
        .as_str()
        .unwrap()
        .starts_with("529"));
    assert_eq!(of_type(&events, "auto_retry_end")[0]["attempt"], 2);
    let end = of_type(&events, "compaction_end")[0];
    assert_eq!(end["willRetry"], true);
    assert_eq!(summaries.lock().unwrap().len(), 1);
    assert_eq!(summaries.lock().unwrap()[0]["reason"], "overflow");
    // Four requests; none after the first carries a failed attempt.
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 4);
    for request in &requests[1..] {
        assert!(request
            .messages
            .iter()
            .all(|m| m.json()["stopReason"] != "error"));
        assert_eq!(request.messages.last().unwrap().json()["role"], "user");
    }
    assert!(requests[1].messages.len() < requests[0].messages.len());
    // The transcript: system, summary, what was kept, the prompt and the answer.
    let messages = agent.messages();
    assert_eq!(messages[1]["role"], "compactionSummary");
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "done");
    assert!(messages.iter().all(|m| m["stopReason"] != "error"));
    assert!(agent
        .state_json()
        .get("errorMessage")
        .is_none_or(Json::is_null));
}

#[test]
fn retries_run_out_and_the_run_ends_with_the_last_error() {
    let overloaded = error_response("503 Service Unavailable");
    let (stream_fn, requests) = script_model(vec![overloaded.clone(); 4]);
    let (sleep, delays) = recording_sleep();
    let mut settings = settings_with(
        json!({"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 100, "maxDelayMs": 250}}),
    );
    settings.retry_sleep = Some(sleep);
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        settings,
        Vec::new(),
        None,
    );
    let recorder = Recorder::attach(&agent);
    let error = block_on(agent.prompt_text("hi")).unwrap_err();
    assert_eq!(error.kind, ErrorKind::ModelError);
    assert_eq!(error.message, "503 Service Unavailable");
    assert_eq!(*delays.lock().unwrap(), [100, 200, 250]);
    assert_eq!(requests.lock().unwrap().len(), 4);
    let events = recorder.events();
    let end = of_type(&events, "auto_retry_end");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["success"], false);
    assert_eq!(end[0]["attempt"], 3);
    assert_eq!(end[0]["finalError"], "503 Service Unavailable");
    // The failed attempts are hidden; the last one stays.
    let errors = agent
        .messages()
        .iter()
        .filter(|m| m["stopReason"] == "error")
        .count();
    assert_eq!(errors, 1);
}

#[test]
fn an_account_limit_is_not_retried() {
    let (stream_fn, requests) = script_model(vec![error_response(
        "429 You exceeded your current quota, please check your plan and billing details.",
    )]);
    let settings = settings_with(json!({"retry": {"enabled": true}}));
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        settings,
        Vec::new(),
        None,
    );
    let recorder = Recorder::attach(&agent);
    assert!(block_on(agent.prompt_text("hi")).is_err());
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert!(of_type(&recorder.events(), "auto_retry_start").is_empty());
}

#[test]
fn by_default_nothing_is_retried_or_compacted() {
    let (stream_fn, requests) = script_model(vec![
        error_response("529 overloaded"),
        error_response("prompt is too long: 213462 tokens > 200000 maximum"),
        json!({"content": [{"type": "text", "text": "cut"}], "stopReason": "length", "usage": usage(199_000, 5)}),
    ]);
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        Settings::default(),
        history(6),
        None,
    );
    let recorder = Recorder::attach(&agent);
    for prompt in ["one", "two", "three"] {
        let _ = block_on(agent.prompt_text(prompt));
    }
    assert_eq!(requests.lock().unwrap().len(), 3);
    let events = recorder.events();
    assert_eq!(outline(&events).len(), 6, "{:?}", outline(&events));
    assert_eq!(agent.messages().len(), 1 + 12 + 6);
}

#[test]
fn a_second_overflow_fails_the_run_clearly() {
    let overflow = error_response("prompt is too long: 213462 tokens > 200000 maximum");
    let (stream_fn, requests) = script_model(vec![overflow.clone(), overflow]);
    let (compact_hook, summaries) = summary_hook();
    let (agent, recorder) = hooked_agent(stream_fn, compact_hook);
    let error = block_on(agent.prompt_text("And now?")).unwrap_err();
    assert_eq!(error.kind, ErrorKind::ModelError);
    assert_eq!(error.message, OVERFLOW_RECOVERY_FAILED);
    assert_eq!(requests.lock().unwrap().len(), 2);
    assert_eq!(summaries.lock().unwrap().len(), 1);
    let ends = of_type(&recorder.events(), "compaction_end")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(ends.len(), 2);
    assert!(ends[0]["result"].is_object());
    assert_eq!(ends[1]["errorMessage"], OVERFLOW_RECOVERY_FAILED);
    assert_eq!(ends[1]["willRetry"], false);
}

// ----- aborts and faults ----------------------------------------------------------------------

fn wait_with_timeout<T: Send + 'static>(seconds: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(seconds))
        .expect("finished in time")
}

#[test]
fn an_abort_during_a_backoff_wait_ends_the_run_at_once() {
    let (stream_fn, requests) = script_model(vec![error_response("529 overloaded")]);
    // Never wakes: only the abort ends the wait.
    let never: RetrySleep = Arc::new(|_| Box::pin(futures::future::pending()) as HostFuture<()>);
    let mut settings = settings_with(json!({"retry": {"enabled": true}}));
    settings.retry_sleep = Some(never);
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        settings,
        Vec::new(),
        None,
    );
    let recorder = Recorder::attach(&agent);
    let aborter = agent.clone();
    agent.subscribe(common::listener(move |event| {
        if event["type"] == "auto_retry_start" {
            aborter.abort();
        }
        Ok(())
    }));
    let runner = agent.clone();
    let error = wait_with_timeout(10, move || block_on(runner.prompt_text("hi")).unwrap_err());
    assert_eq!(error.kind, ErrorKind::Aborted);
    assert_eq!(error.message, RETRY_CANCELLED);
    assert_eq!(requests.lock().unwrap().len(), 1);
    let events = recorder.events();
    assert_eq!(
        outline(&events),
        [
            "agent_start",
            "agent_end",
            "auto_retry_start:1",
            "auto_retry_end:false"
        ]
    );
    assert_eq!(
        of_type(&events, "auto_retry_end")[0]["finalError"],
        RETRY_CANCELLED
    );
}

fn manual_agent(compact_hook: agent::host::Hook) -> (Agent, Recorder) {
    hooked_agent(script_model(Vec::new()).0, compact_hook)
}

/// An agent with compaction (300 recent tokens kept) and retries on, a 200,000-token window, six
/// turns of history and `compact_hook` writing its summaries; its events recorded.
fn hooked_agent(stream_fn: StreamFn, compact_hook: agent::host::Hook) -> (Agent, Recorder) {
    let mut settings = settings_with(
        json!({"compaction": {"enabled": true, "keepRecentTokens": 300}, "retry": {"enabled": true}}),
    );
    let _ = settings
        .hooks
        .set(agent::agent::HookKind::Compact, Some(compact_hook));
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        settings,
        history(6),
        None,
    );
    let recorder = Recorder::attach(&agent);
    (agent, recorder)
}

#[test]
fn an_abort_during_summarisation_leaves_the_transcript_intact() {
    let stalled = Arc::new(|_input: Json, _signal| {
        Box::pin(futures::future::pending()) as HostFuture<agent::host::HookResult>
    });
    let (agent, recorder) = manual_agent(stalled);
    let before = agent.messages();
    let aborter = agent.clone();
    agent.subscribe(common::listener(move |event| {
        if event["type"] == "compaction_start" {
            aborter.abort();
        }
        Ok(())
    }));
    let runner = agent.clone();
    let error = wait_with_timeout(10, move || block_on(runner.compact(None)).unwrap_err());
    assert_eq!(error.kind, ErrorKind::Aborted);
    assert_eq!(error.message, COMPACTION_CANCELLED);
    assert_eq!(agent.messages(), before);
    let events = recorder.events();
    let end = of_type(&events, "compaction_end")[0];
    assert_eq!(end["aborted"], true);
    assert_eq!(end["reason"], "manual");
    assert!(end.get("result").is_none());
}

#[test]
fn a_failing_or_cancelling_hook_leaves_the_transcript_intact() {
    let (agent, recorder) = manual_agent(hook(|_, _| Err("hook exploded".into())));
    let before = agent.messages();
    let error = block_on(agent.compact(Some("keep the API"))).unwrap_err();
    assert_eq!(error.kind, ErrorKind::RunFailed);
    assert!(error.message.contains("hook exploded"), "{}", error.message);
    assert_eq!(agent.messages(), before);
    let end = of_type(&recorder.events(), "compaction_end")[0].clone();
    assert_eq!(end["aborted"], false);
    assert!(end["errorMessage"]
        .as_str()
        .unwrap()
        .contains("hook exploded"));

    let (agent, recorder) = manual_agent(hook(|_, _| Ok(Some(json!({"cancel": true})))));
    let before = agent.messages();
    let error = block_on(agent.compact(None)).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Aborted);
    assert_eq!(agent.messages(), before);
    assert_eq!(
        of_type(&recorder.events(), "compaction_end")[0]["aborted"],
        true
    );

    let (agent, _) = manual_agent(hook(|_, _| Ok(Some(json!({"summary": 3})))));
    let error = block_on(agent.compact(None)).unwrap_err();
    assert!(error.message.contains("\"summary\""), "{}", error.message);
}

#[test]
fn a_manual_compaction_passes_the_focus_and_replaces_the_older_messages() {
    let (compact_hook, inputs) = summary_hook();
    let (agent, recorder) = manual_agent(compact_hook);
    let before = agent.messages();
    block_on(agent.compact(Some("keep the API design"))).unwrap();
    let input = inputs.lock().unwrap()[0].clone();
    assert_eq!(input["reason"], "manual");
    assert_eq!(input["focus"], "keep the API design");
    assert!(!input["preparation"]["messagesToSummarize"]
        .as_array()
        .unwrap()
        .is_empty());
    let after = agent.messages();
    assert!(after.len() < before.len());
    assert_eq!(after[0]["role"], "system", "the system message stays first");
    assert_eq!(after[0]["content"], before[0]["content"]);
    assert_eq!(after[1]["role"], "compactionSummary");
    assert_eq!(after[1]["summary"], "Summary number 1.");
    assert_eq!(after.last(), before.last());
    let events = recorder.events();
    assert_eq!(
        outline(&events),
        ["compaction_start", "compaction_end:manual"]
    );
    // A second compaction updates the first: the hook sees the previous summary.
    block_on(agent.compact(None)).unwrap_or(());
    // Nothing older than the kept part is left to summarize, or it was summarized again.
    let inputs = inputs.lock().unwrap();
    if inputs.len() == 2 {
        assert_eq!(
            inputs[1]["preparation"]["previousSummary"],
            "Summary number 1."
        );
    }
}

#[test]
fn compaction_without_a_context_window_stays_off_and_says_so_once() {
    let (stream_fn, _) = script_model(Vec::new());
    let settings = settings_with(json!({"compaction": {"enabled": true, "reserveTokens": 1}}));
    let model = json!({"id": "m1", "api": "test-api", "provider": "test-prov"});
    let agent = agent(model, stream_fn, settings, history(6), None);
    let recorder = Recorder::attach(&agent);
    block_on(agent.prompt_text("one")).unwrap();
    block_on(agent.prompt_text("two")).unwrap();
    let events = recorder.events();
    let ends = of_type(&events, "compaction_end");
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["errorMessage"], NO_CONTEXT_WINDOW);
    assert!(of_type(&events, "compaction_start").is_empty());
    assert_eq!(agent.messages().len(), 1 + 12 + 4);
}

#[test]
fn settings_are_checked_by_member() {
    let agent = agent(
        windowed_model(1000),
        script_model(Vec::new()).0,
        Settings::default(),
        Vec::new(),
        None,
    );
    let error = agent
        .configure(&json!({"compaction": {"reserveTokens": -5}}))
        .unwrap_err();
    assert!(error.message.contains("reserveTokens"), "{}", error.message);
    let error = agent
        .configure(&json!({"retry": {"delay": 1}}))
        .unwrap_err();
    assert_eq!(
        error.message,
        "Unknown option \"retry.delay\" (known: enabled, maxRetries, baseDelayMs, maxDelayMs)."
    );
    let error = agent.configure(&json!({"retry": 3})).unwrap_err();
    assert!(error.message.contains("\"retry\""), "{}", error.message);
    agent
        .configure(&json!({"compaction": {"enabled": false}, "retry": {"maxRetries": 1}}))
        .unwrap();
    let state = agent.state_json();
    assert_eq!(state["compaction"], json!({"enabled": false}));
    assert_eq!(state["retry"], json!({"maxRetries": 1}));
}

// ----- the summary written by the agent's own model ------------------------------------------

/// A manual compaction whose summary request is answered with `summary_answer`.
fn compact_with_model_answer(
    summary_answer: Json,
) -> (Agent, Recorder, Vec<Json>, common::Requests) {
    let answer = Arc::new(summary_answer);
    let (stream_fn, requests) = common::recording(answering(move |request| {
        assert!(is_summary_request(request));
        (*answer).clone()
    }));
    let settings = settings_with(json!({"compaction": {"enabled": true, "keepRecentTokens": 300}}));
    let agent = agent(
        windowed_model(200_000),
        stream_fn,
        settings,
        history(6),
        None,
    );
    let recorder = Recorder::attach(&agent);
    let before = agent.messages();
    (agent, recorder, before, requests)
}

#[test]
fn the_agents_model_writes_the_summary_with_no_tools() {
    let (agent, recorder, before, requests) =
        compact_with_model_answer(text_answer("## Goal\nAnswer questions.", usage(800, 20)));
    block_on(agent.compact(Some("keep the answers"))).unwrap();
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let text = requests[0].json_text();
    assert!(text.contains("keep the answers"), "the focus is sent");
    assert!(text.contains("question 0"), "the history is sent");
    assert!(!text.contains("\"tools\""), "no tools are offered");
    let after = agent.messages();
    assert!(after.len() < before.len());
    assert!(after[1]["summary"]
        .as_str()
        .unwrap()
        .starts_with("## Goal\nAnswer questions."));
    let end = of_type(&recorder.events(), "compaction_end")[0].clone();
    assert_eq!(end["result"]["usage"]["output"], 20);
}

#[test]
fn a_failing_summary_leaves_the_transcript_intact() {
    let cases = [
        (error_response("500 internal error"), "500 internal error"),
        (
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}], "stopReason": "toolUse"}),
            "tool call",
        ),
        (
            json!({"content": [{"type": "text", "text": "## Goal\nAns"}], "stopReason": "length"}),
            "",
        ),
    ];
    for (answer, text) in cases {
        let (agent, recorder, before, _) = compact_with_model_answer(answer.clone());
        let error = block_on(agent.compact(None)).unwrap_err();
        assert_eq!(error.kind, ErrorKind::RunFailed, "{answer}");
        assert!(
            error.message.starts_with("Compaction failed: "),
            "{}",
            error.message
        );
        assert!(
            error.message.contains(text),
            "{} lacks {text}",
            error.message
        );
        assert_eq!(agent.messages(), before, "{answer}");
        let end = of_type(&recorder.events(), "compaction_end")[0].clone();
        assert_eq!(end["errorMessage"], error.message.as_str());
        assert_eq!(end["aborted"], false);
        assert!(end.get("result").is_none());
    }
}

#[test]
fn an_abort_stops_a_stalled_summary_request() {
    // The summary request never answers: only the abort ends it.
    let stalled: StreamFn = Arc::new(|_request: StreamRequest, sender: StreamSender| {
        std::mem::forget(sender);
    });
    let settings = settings_with(json!({"compaction": {"enabled": true, "keepRecentTokens": 300}}));
    let agent = agent(windowed_model(200_000), stalled, settings, history(6), None);
    let recorder = Recorder::attach(&agent);
    let before = agent.messages();
    let aborter = agent.clone();
    agent.subscribe(common::listener(move |event| {
        if event["type"] == "compaction_start" {
            aborter.abort();
        }
        Ok(())
    }));
    let runner = agent.clone();
    let error = wait_with_timeout(10, move || block_on(runner.compact(None)).unwrap_err());
    assert_eq!(error.kind, ErrorKind::Aborted);
    assert_eq!(agent.messages(), before);
    assert_eq!(
        of_type(&recorder.events(), "compaction_end")[0]["aborted"],
        true
    );
}

#[test]
fn before_a_prompt_the_last_response_past_the_threshold_compacts_first() {
    let (stream_fn, requests) = script_model(vec![text_answer("a long answer", usage(9000, 50))]);
    let (compact_hook, summaries) = summary_hook();
    let mut settings = settings_with(json!({
        "compaction": {"enabled": false, "reserveTokens": 2000, "keepRecentTokens": 300}
    }));
    let _ = settings
        .hooks
        .set(agent::agent::HookKind::Compact, Some(compact_hook));
    let agent = agent(
        windowed_model(10_000),
        stream_fn,
        settings,
        history(6),
        None,
    );
    let recorder = Recorder::attach(&agent);
    block_on(agent.prompt_text("first")).unwrap();
    assert!(of_type(&recorder.events(), "compaction_start").is_empty());
    agent
        .configure(&json!({"compaction": {"enabled": true}}))
        .unwrap();
    block_on(agent.prompt_text("second")).unwrap();
    let events = recorder.events();
    assert_eq!(
        outline(&events),
        [
            "agent_start",
            "agent_end",
            "compaction_start",
            "compaction_end:threshold",
            "agent_start",
            "agent_end",
        ]
    );
    assert_eq!(summaries.lock().unwrap()[0]["reason"], "threshold");
    let requests = requests.lock().unwrap();
    assert!(requests[1].messages.len() < requests[0].messages.len());
    let sent = requests[1].json_text();
    assert!(
        sent.contains("Summary number 1."),
        "the summary is sent as user text"
    );
    assert!(sent.contains("second"));
    assert_eq!(requests[1].messages.last().unwrap().json()["role"], "user");
}

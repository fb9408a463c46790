//! Shared helpers for the Rust integration tests: scripted models, tools and a recorder.
#![allow(dead_code)]

pub mod calls;
pub mod loops;
pub mod sequences;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::event::{AgentEvent, EventShape};
use agent::faux::scripted_stream_fn;
use agent::host::{AgentTool, FnTool, Hook, HostFuture, Listener, ToolInvocation};
use agent::json::{json, Json};

/// A test model: `{"id":"m1","api":"test-api","provider":"test-prov"}`.
pub fn model() -> Json {
    json!({"id": "m1", "api": "test-api", "provider": "test-prov"})
}

/// An agent answering from `responses`, with `tools` and an optional system prompt.
pub fn agent_with(
    responses: Vec<Json>,
    tools: Vec<AgentTool>,
    system_prompt: Option<&str>,
) -> Agent {
    agent_from(
        scripted_stream_fn(responses),
        tools,
        system_prompt,
        Default::default(),
    )
}

/// Records every event as full JSON.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Json>>>);

impl Recorder {
    pub fn attach(agent: &Agent) -> Recorder {
        let recorder = Recorder::default();
        agent.subscribe(recorder.listener());
        recorder
    }

    pub fn listener(&self) -> Listener {
        let events = self.0.clone();
        Arc::new(move |event: Arc<AgentEvent>, _signal| {
            events.lock().unwrap().push(event.to_json(EventShape::Full));
            Box::pin(async { Ok(()) }) as HostFuture<_>
        })
    }

    pub fn events(&self) -> Vec<Json> {
        self.0.lock().unwrap().clone()
    }

    /// Event types, with the stream event type for message_update (`message_update:text_delta`).
    pub fn types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| {
                let t = e["type"].as_str().unwrap().to_string();
                match e.get("assistantMessageEvent") {
                    Some(ev) => format!("{t}:{}", ev["type"].as_str().unwrap()),
                    None => t,
                }
            })
            .collect()
    }
}

/// A response of one text block streamed in `chunks` deltas.
pub fn text_response(text: &str, chunks: u64) -> Json {
    json!({"content": [{"type": "text", "text": text, "chunks": chunks}]})
}

/// A response calling tools: `calls` = [(id, name, arguments)].
pub fn tool_response(calls: &[(&str, &str, Json)]) -> Json {
    let content: Vec<Json> = calls
        .iter()
        .map(|(id, name, args)| json!({"type": "toolCall", "id": id, "name": name, "arguments": args}))
        .collect();
    json!({"content": content})
}

/// A tool answering `text` after `delay_ms`.
pub fn text_tool(name: &str, text: &'static str, delay_ms: u64) -> AgentTool {
    FnTool::tool(
        json!({"name": name, "label": name, "description": format!("{name} tool"), "parameters": {"type": "object"}}),
        move |_invocation: ToolInvocation| {
            Box::pin(async move {
                if delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                }
                Ok(Some(
                    json!({"content": [{"type": "text", "text": text}], "details": {}}),
                ))
            }) as HostFuture<_>
        },
    )
}

/// A hook answering `answer` every time and recording its inputs.
pub fn recording_hook(answer: Option<Json>) -> (Hook, Arc<Mutex<Vec<Json>>>) {
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let seen = inputs.clone();
    let hook: Hook = Arc::new(move |input: Json, _signal| {
        seen.lock().unwrap().push(input);
        let answer = answer.clone();
        Box::pin(async move { Ok(answer) }) as HostFuture<_>
    });
    (hook, inputs)
}

/// Replaces every `timestamp` number with 0 and every `durationMs` with "<ms>".
pub fn normalize(value: &Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("timestamp", Json::Number(_)) => json!(0),
                        ("durationMs", _) => json!("<ms>"),
                        _ => normalize(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

// ----- more helpers (loop and agent tests) --------------------------------------------------

use agent::agent::Settings;
use agent::agent_loop::{Emit, LoopConfig};
use agent::host::{AbortSignal, HookResult, StreamFn, StreamRequest};
use agent::json::to_string;
use agent::stream::StreamSender;

/// The zero usage of SPEC §2.2.
pub fn zero() -> Json {
    json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

/// The user message `prompt_text(text)` creates, normalized.
pub fn user_text(text: &str) -> Json {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
}

/// A plain user message with string content.
pub fn umsg(text: &str) -> Json {
    json!({"role": "user", "content": text, "timestamp": 0})
}

/// A normalized assistant partial with `content` (faux key order).
pub fn partial(content: Json) -> Json {
    json!({"role": "assistant", "content": content, "api": "test-api", "provider": "test-prov", "model": "m1",
        "usage": zero(), "stopReason": "pending", "timestamp": 0})
}

/// A normalized final assistant message: timed, stamped `thinkingLevel: "off"`.
pub fn final_msg(content: Json, stop: &str) -> Json {
    json!({"role": "assistant", "content": content, "api": "test-api", "provider": "test-prov", "model": "m1",
        "usage": zero(), "stopReason": stop, "timestamp": 0, "durationMs": "<ms>", "thinkingLevel": "off"})
}

pub fn ev(kind: &str) -> Json {
    json!({"type": kind})
}

pub fn msg_start(message: &Json) -> Json {
    json!({"type": "message_start", "message": message})
}

pub fn msg_end(message: &Json) -> Json {
    json!({"type": "message_end", "message": message})
}

/// Both events of a committed message.
pub fn committed(message: &Json) -> Vec<Json> {
    vec![msg_start(message), msg_end(message)]
}

/// A `message_update`: the stream event gets `fields` then `partial`.
pub fn update(fields: Json, content: Json) -> Json {
    let p = partial(content);
    let mut event = fields;
    event["partial"] = p.clone();
    json!({"type": "message_update", "message": p, "assistantMessageEvent": event})
}

/// The events of one streamed text-only assistant message (one text block, `deltas`).
pub fn text_message_events(deltas: &[&str], stop: &str) -> Vec<Json> {
    let text: String = deltas.concat();
    let mut out = vec![msg_start(&partial(json!([])))];
    out.push(update(
        json!({"type": "text_start", "contentIndex": 0}),
        json!([{"type": "text", "text": ""}]),
    ));
    let mut so_far = String::new();
    for delta in deltas {
        so_far.push_str(delta);
        out.push(update(
            json!({"type": "text_delta", "contentIndex": 0, "delta": delta}),
            json!([{"type": "text", "text": so_far}]),
        ));
    }
    out.push(update(
        json!({"type": "text_end", "contentIndex": 0, "content": text}),
        json!([{"type": "text", "text": text}]),
    ));
    out.push(msg_end(&final_msg(
        json!([{"type": "text", "text": text}]),
        stop,
    )));
    out
}

/// A tool call block.
pub fn call(id: &str, name: &str, args: Json) -> Json {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": args})
}

/// The events of one streamed assistant message made of tool calls (each sent in one delta).
/// `toolcall_start` events carry only `type`, `contentIndex`, `partial` (SPEC §3.2).
pub fn tool_message_events(calls: &[Json], stop: &str) -> Vec<Json> {
    let mut out = vec![msg_start(&partial(json!([])))];
    let mut content: Vec<Json> = Vec::new();
    for (index, block) in calls.iter().enumerate() {
        content.push(
            json!({"type": "toolCall", "id": block["id"], "name": block["name"], "arguments": {}}),
        );
        out.push(update(
            json!({"type": "toolcall_start", "contentIndex": index}),
            json!(content),
        ));
        let text = agent::faux::canonical_json(&block["arguments"]);
        content[index] = block.clone();
        out.push(update(
            json!({"type": "toolcall_delta", "contentIndex": index, "delta": text}),
            json!(content),
        ));
        out.push(update(
            json!({"type": "toolcall_end", "contentIndex": index, "toolCall": block}),
            json!(content),
        ));
    }
    out.push(msg_end(&final_msg(json!(content), stop)));
    out
}

pub fn tool_start(id: &str, name: &str, args: Json) -> Json {
    json!({"type": "tool_execution_start", "toolCallId": id, "toolName": name, "args": args})
}

/// `tool_execution_end`; `timed` adds the normalized `durationMs`.
pub fn tool_end(id: &str, name: &str, result: Json, is_error: bool, timed: bool) -> Json {
    let mut e = json!({"type": "tool_execution_end", "toolCallId": id, "toolName": name, "result": result,
        "isError": is_error});
    if timed {
        e["durationMs"] = json!("<ms>");
    }
    e
}

/// `{ content: [text], details }`.
pub fn text_result(text: &str, details: Json) -> Json {
    json!({"content": [{"type": "text", "text": text}], "details": details})
}

/// A loop-made error result.
pub fn error_result(text: &str) -> Json {
    text_result(text, json!({}))
}

/// A normalized tool result message (`details` given as is; `timed` adds durationMs).
pub fn tr(id: &str, name: &str, result: &Json, is_error: bool, timed: bool) -> Json {
    let mut m = json!({"role": "toolResult", "toolCallId": id, "toolName": name,
        "content": result.get("content").cloned().unwrap_or(json!([]))});
    if let Some(details) = result.get("details") {
        m["details"] = details.clone();
    }
    m["isError"] = json!(is_error);
    if timed {
        m["durationMs"] = json!("<ms>");
    }
    m["timestamp"] = json!(0);
    m
}

pub fn turn_end(message: &Json, results: &[Json]) -> Json {
    json!({"type": "turn_end", "message": message, "toolResults": results})
}

pub fn agent_end(messages: &[Json]) -> Json {
    json!({"type": "agent_end", "messages": messages})
}

/// Normalizes an event for comparison with the SPEC shapes: timestamps/durations, and the
/// delta-form `id`/`toolName` the host put on `toolcall_start` (reported separately as a bug).
pub fn canon(event: &Json) -> Json {
    normalize(event)
}

/// Asserts two event lists are equal event by event (full JSON text).
pub fn assert_events(actual: &[Json], expected: &[Json]) {
    let actual: Vec<String> = actual.iter().map(|e| to_string(&canon(e))).collect();
    let expected: Vec<String> = expected.iter().map(|e| to_string(&normalize(e))).collect();
    for (i, (a, e)) in actual.iter().zip(expected.iter()).enumerate() {
        assert_eq!(a, e, "event {i} differs");
    }
    assert_eq!(
        actual.len(),
        expected.len(),
        "event count differs: {actual:#?}"
    );
}

/// Builds an agent with a stream function, tools, an optional prompt and settings.
pub fn agent_from(
    stream_fn: StreamFn,
    tools: Vec<AgentTool>,
    system_prompt: Option<&str>,
    settings: Settings,
) -> Agent {
    Agent::new(AgentOptions {
        initial_state: InitialState {
            system_prompt: system_prompt.map(String::from),
            model: Some(model()),
            tools,
            ..Default::default()
        },
        stream_fn: Some(stream_fn),
        settings,
        ..Default::default()
    })
    .expect("agent")
}

/// The requests a stream function received.
pub type Requests = Arc<Mutex<Vec<StreamRequest>>>;

/// Wraps a stream function to record its requests.
pub fn recording(inner: StreamFn) -> (StreamFn, Requests) {
    let requests: Requests = Arc::default();
    let seen = requests.clone();
    let f: StreamFn = Arc::new(move |request: StreamRequest, sender: StreamSender| {
        seen.lock().unwrap().push(request.clone());
        inner(request, sender)
    });
    (f, requests)
}

/// A scripted stream function that records its requests.
pub fn scripted(responses: Vec<Json>) -> (StreamFn, Requests) {
    recording(scripted_stream_fn(responses))
}

/// What a fixed stream function does for one request.
#[derive(Clone)]
pub enum Push {
    Event(Json),
    End(Option<Json>),
    Fail(String),
}

/// A stream function that pushes a fixed list per request, all at once (no lock step).
pub fn fixed_stream_fn(script: Vec<Vec<Push>>) -> (StreamFn, Requests) {
    let next = Arc::new(Mutex::new(0usize));
    let script = Arc::new(script);
    recording(Arc::new(
        move |_request: StreamRequest, sender: StreamSender| {
            let index = {
                let mut n = next.lock().unwrap();
                *n += 1;
                *n - 1
            };
            for push in script.get(index).cloned().unwrap_or_default() {
                let _ = match push {
                    Push::Event(e) => sender.push(e),
                    Push::End(m) => sender.end(m),
                    Push::Fail(m) => sender.fail(&m),
                };
            }
        },
    ))
}

/// A hook from a synchronous closure.
pub fn hook(f: impl Fn(Json, AbortSignal) -> HookResult + Send + Sync + 'static) -> Hook {
    Arc::new(move |input: Json, signal: AbortSignal| {
        let answer = f(input, signal);
        Box::pin(async move { answer }) as HostFuture<_>
    })
}

/// A hook answering each of `answers` once, in order, then nothing.
pub fn answering_hook(answers: Vec<Option<Json>>) -> Hook {
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    hook(move |_, _| Ok(answers.lock().unwrap().next().flatten()))
}

/// A listener from a synchronous closure over the event JSON.
pub fn listener(f: impl Fn(&Json) -> Result<(), String> + Send + Sync + 'static) -> Listener {
    Arc::new(move |event: Arc<AgentEvent>, _signal| {
        let answer = f(&event.to_json(EventShape::Full));
        Box::pin(async move { answer }) as HostFuture<_>
    })
}

/// A tool definition with an object schema.
pub fn def(name: &str) -> Json {
    json!({"name": name, "label": name, "description": format!("{name} tool"), "parameters": {"type": "object"}})
}

/// The declaration of `def(name)`.
pub fn decl(name: &str) -> Json {
    json!({"name": name, "description": format!("{name} tool"), "parameters": {"type": "object"}})
}

/// A tool from a definition and an async-free closure answering the result.
pub fn tool_fn(
    definition: Json,
    f: impl Fn(ToolInvocation) -> Result<Option<Json>, String> + Send + Sync + 'static,
) -> AgentTool {
    FnTool::tool(definition, move |invocation: ToolInvocation| {
        let answer = f(invocation);
        Box::pin(async move { answer }) as HostFuture<_>
    })
}

/// A tool answering `result` after `delay_ms`.
pub fn result_tool(name: &str, result: Json, delay_ms: u64) -> AgentTool {
    FnTool::tool(def(name), move |_invocation: ToolInvocation| {
        let result = result.clone();
        Box::pin(async move {
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            Ok(Some(result))
        }) as HostFuture<_>
    })
}

/// An emit sink recording full event JSON.
pub fn collect_emit() -> (Emit, Arc<Mutex<Vec<Json>>>) {
    let events: Arc<Mutex<Vec<Json>>> = Arc::default();
    let seen = events.clone();
    let emit: Emit = Arc::new(move |event: &AgentEvent| {
        seen.lock().unwrap().push(event.to_json(EventShape::Full));
        agent::host::Delivery::Now(Ok(()))
    });
    (emit, events)
}

/// A loop config with the test model and nothing else.
pub fn loop_config() -> LoopConfig {
    LoopConfig {
        model: model().into(),
        ..Default::default()
    }
}

/// The event types of a list of event JSON values.
pub fn types_of(events: &[Json]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The messages of a request's context.
pub fn request_messages(request: &StreamRequest) -> Vec<Json> {
    request.messages.iter().map(|m| m.json().clone()).collect()
}

/// A queue source answering the given batches in order, then `[]`; counts its calls.
pub fn queue_source(
    batches: Vec<Vec<Json>>,
) -> (agent::agent_loop::QueueSource, Arc<Mutex<usize>>) {
    let calls = Arc::new(Mutex::new(0usize));
    let seen = calls.clone();
    let batches = Arc::new(batches);
    let source: agent::agent_loop::QueueSource = Arc::new(move || {
        let n = {
            let mut c = seen.lock().unwrap();
            *c += 1;
            *c - 1
        };
        let batch = batches.get(n).cloned().unwrap_or_default();
        Box::pin(async move { Ok(batch) }) as HostFuture<_>
    });
    (source, calls)
}

/// The text of each message: string content as is, text blocks joined.
pub fn contents(messages: &[Json]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match &m["content"] {
            Json::String(s) => s.clone(),
            Json::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        })
        .collect()
}

/// `n` one-chunk text responses `a1` … `an`.
pub fn many_texts(n: usize) -> Vec<Json> {
    (1..=n)
        .map(|i| text_response(&format!("a{i}"), 1))
        .collect()
}

/// A text prompt without images.
pub fn text_prompt(text: &str) -> agent::agent::PromptInput {
    agent::agent::PromptInput::Text {
        text: text.into(),
        images: vec![],
    }
}

/// The names of the agent's tools, in order.
pub fn tool_names(agent: &Agent) -> Vec<String> {
    agent.tools().iter().map(|t| t.name().to_string()).collect()
}

/// An agent with the tool `read` (answering `R`) answering from `responses`, and its requests.
pub fn read_agent(responses: Vec<Json>) -> (Agent, Requests) {
    let (f, requests) = scripted(responses);
    let agent = agent_from(
        f,
        vec![text_tool("read", "R", 0)],
        None,
        agent::agent::Settings::default(),
    );
    (agent, requests)
}

/// Subscribes a listener running `f` on the agent each time a tool execution starts.
pub fn on_tool_start(agent: &Agent, f: impl Fn(&Agent) + Send + Sync + 'static) {
    let handle = agent.clone();
    agent.subscribe(listener(move |e| {
        if e["type"] == "tool_execution_start" {
            f(&handle);
        }
        Ok(())
    }));
}

/// The error of a run that must have ended as `kind` (a failed request or stream function:
/// `ModelError`; an abort: `Aborted`), for the assertions that follow.
pub fn failure<T: std::fmt::Debug>(
    result: Result<T, agent::error::Error>,
    kind: agent::error::ErrorKind,
) -> agent::error::Error {
    let error = result.expect_err("the run must fail");
    assert_eq!(error.kind, kind, "{}", error.message);
    error
}

/// Opens a session file an agent just used: a finished run's task lets go of the agent (and so of
/// the file's lock) a moment after the run settled, so a `Locked` open is retried for up to 2 s.
pub fn reopen_session(path: &std::path::Path) -> agent::session::Session {
    use agent::session::{Durability, Session, SessionErrorKind};
    let mut opened = Session::open(path, "/work", Durability::Flush);
    for _ in 0..200 {
        match &opened {
            Err(e) if e.kind == SessionErrorKind::Locked => {
                std::thread::sleep(Duration::from_millis(10));
                opened = Session::open(path, "/work", Durability::Flush);
            }
            _ => break,
        }
    }
    opened.expect("the session file opens once the agent let go of it")
}

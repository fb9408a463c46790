//! Shared helpers for the Rust integration tests: scripted models, tools and a recorder.
#![allow(dead_code)]

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
    Agent::new(AgentOptions {
        initial_state: InitialState {
            system_prompt: system_prompt.map(String::from),
            model: Some(model()),
            tools,
            ..Default::default()
        },
        stream_fn: Some(scripted_stream_fn(responses)),
        ..Default::default()
    })
    .expect("agent")
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

//! Helpers of the provider tests: SSE chunks, a mock server, an agent using the providers.

use std::sync::Arc;

use agent::agent::{Agent, AgentOptions, HookKind, InitialState};
use agent::host::{text_result, typed_tool, Hook};
use agent::json::{json, Json};
use schemars::JsonSchema;
use serde::Deserialize;

use super::mock::{End, Mock, Response};

pub fn chunk(delta: Json, finish: Option<&str>) -> String {
    let chunk = json!({"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {}\n\n", agent::json::to_string(&chunk))
}

pub fn sse(pieces: Vec<String>) -> Response {
    Response {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        pieces: pieces.into_iter().map(String::into_bytes).collect(),
        end: End::Normal,
        no_headers: false,
    }
}

pub fn model(port: u16, api: &str) -> Json {
    let base = if api.starts_with("openai-") {
        format!("http://127.0.0.1:{port}/v1")
    } else {
        format!("http://127.0.0.1:{port}")
    };
    json!({"id": "m", "name": "m", "api": api, "provider": "local-test", "baseUrl": base,
        "reasoning": false, "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 32000, "maxTokens": 1000})
}

pub fn key_hook(key: &'static str) -> Hook {
    Arc::new(move |_provider, _signal| Box::pin(async move { Ok(Some(Json::String(key.into()))) }))
}

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// File to read.
    path: String,
}

pub fn agent_for(model: Json) -> Agent {
    let read = typed_tool("read", "Read a file", |args: ReadArgs, _ctx| async move {
        Ok(text_result(&format!("contents of {}", args.path)))
    });
    let mut options = AgentOptions {
        initial_state: InitialState {
            system_prompt: Some("You read files.".into()),
            model: Some(model),
            tools: vec![read],
            ..Default::default()
        },
        stream_fn: Some(agent::providers::stream_fn()),
        ..Default::default()
    };
    let _ = options
        .settings
        .hooks
        .set(HookKind::GetApiKey, Some(key_hook("sk-test-1")));
    Agent::new(options).unwrap()
}

pub async fn server(responses: Vec<Response>) -> Mock {
    Mock::start(responses).await.unwrap()
}

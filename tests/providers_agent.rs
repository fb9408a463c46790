//! The built-in providers inside a real `Agent`: a tool-using conversation over loopback HTTP
//! (the kit's mock server), the API key from the getApiKey hook, and request failures.
#![cfg(all(feature = "providers", feature = "typed"))]

#[path = "providers/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "providers/mock.rs"]
#[allow(dead_code)]
mod mock;

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::json::json;
use common::{agent_for, chunk, model, server, sse};
use mock::{End, Response};

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_using_conversation_over_openai_completions() {
    let mock = server(vec![
        sse(vec![
            chunk(json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "read", "arguments": "{\"pa"}}]}), None),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"a.txt\"}"}}]}), None),
            chunk(json!({}), Some("tool_calls")),
            "data: [DONE]\n\n".into(),
        ]),
        sse(vec![chunk(json!({"content": "It says hi."}), None), chunk(json!({}), Some("stop")), "data: [DONE]\n\n".into()]),
    ])
    .await;
    let agent = agent_for(model(mock.port, "openai-completions"));
    agent.prompt_text("What is in a.txt?").await.unwrap();
    let messages = agent.messages();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(
        messages[2]["content"][0]["arguments"],
        json!({"path": "a.txt"})
    );
    assert_eq!(messages[2]["stopReason"], "toolUse");
    assert_eq!(messages[3]["content"][0]["text"], "contents of a.txt");
    assert_eq!(messages[4]["content"][0]["text"], "It says hi.");
    let requests = mock.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let first = &requests[0]["request"];
    assert_eq!(first["path"], "/v1/chat/completions");
    assert_eq!(first["headers"]["authorization"], "Bearer sk-test-1");
    assert_eq!(first["body"]["tools"][0]["function"]["name"], "read");
    assert_eq!(
        first["body"]["messages"][0],
        json!({"role": "system", "content": "You read files."})
    );
    let second = &requests[1]["request"]["body"]["messages"];
    let tool_message = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_message["content"], "contents of a.txt");
    assert_eq!(tool_message["tool_call_id"], "call_1");
}

#[tokio::test(flavor = "multi_thread")]
async fn request_failures_become_error_messages() {
    let mock = server(vec![Response {
        status: 401,
        headers: vec![("content-type".into(), "application/json".into())],
        pieces: vec![br#"{"error":{"message":"bad key"}}"#.to_vec()],
        end: End::Normal,
        no_headers: false,
    }])
    .await;
    let agent = agent_for(model(mock.port, "openai-completions"));
    let failed = agent.prompt_text("hi").await.unwrap_err();
    assert_eq!(
        failed.kind,
        agent::error::ErrorKind::ModelError,
        "{}",
        failed.message
    );
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(last["stopReason"], "error");
    assert_eq!(last["errorMessage"], r#"401: {"message":"bad key"}"#);
    // An unknown api fails the stream function the way pi-ai throws.
    let mut unknown = model(mock.port, "openai-completions");
    unknown["api"] = json!("bedrock-converse-stream");
    let agent = agent_for(unknown);
    let failed = agent.prompt_text("hi").await.unwrap_err();
    assert_eq!(failed.kind, agent::error::ErrorKind::ModelError);
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(
        last["errorMessage"],
        "No API provider registered for api: bedrock-converse-stream"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_any_key_the_stream_function_fails() {
    let mut options = AgentOptions {
        initial_state: InitialState {
            model: Some(model(9, "openai-completions")),
            ..Default::default()
        },
        stream_fn: Some(agent::providers::stream_fn()),
        ..Default::default()
    };
    options.initial_state.model.as_mut().unwrap()["provider"] = json!("no-such-provider");
    let agent = Agent::new(options).unwrap();
    let failed = agent.prompt_text("hi").await.unwrap_err();
    assert_eq!(
        failed.kind,
        agent::error::ErrorKind::ModelError,
        "{}",
        failed.message
    );
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(
        last["errorMessage"],
        "No API key for provider: no-such-provider"
    );
}

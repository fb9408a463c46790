//! A tool result message is created once: `message_end`, `turn_end.toolResults`,
//! `agent_end.messages` and the transcript carry the same message (same timestamp).
mod common;

use agent::json::{json, Json};
use common::*;

async fn check(sequential: bool) {
    let names: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, Json)> = names
        .iter()
        .map(|id| (id.as_str(), "t", json!({})))
        .collect();
    let agent = agent_with(
        vec![tool_response(&calls), text_response("done", 1)],
        vec![text_tool("t", "ok", 0)],
        None,
    );
    if sequential {
        agent
            .configure(&json!({"toolExecution": "sequential"}))
            .unwrap();
    }
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let events = recorder.events();
    let ended: Vec<Json> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .map(|e| e["message"].clone())
        .collect();
    let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    let agent_end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    let in_agent_end: Vec<Json> = agent_end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .cloned()
        .collect();
    let in_state: Vec<Json> = agent
        .messages()
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    assert_eq!(ended.len(), 30);
    assert_eq!(&ended, turn_end["toolResults"].as_array().unwrap());
    assert_eq!(ended, in_agent_end);
    assert_eq!(ended, in_state);
}

#[tokio::test]
async fn parallel_tool_results_are_one_message_everywhere() {
    check(false).await;
}

#[tokio::test]
async fn sequential_tool_results_are_one_message_everywhere() {
    check(true).await;
}

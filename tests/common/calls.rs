//! Running the low-level loop on a prompt whose answer calls tools (tools.rs, tool_hooks.rs).

use std::sync::{Arc, Mutex};

use agent::agent_loop::{run_agent_loop, Emit, LoopConfig, LoopContext};
use agent::host::{AbortSignal, AgentTool, StreamFn};
use agent::json::{json, Json};
use agent::message::to_json_vec;

use super::*;

/// What a `run_calls` run left behind.
pub struct Outcome {
    pub events: Vec<Json>,
    pub messages: Vec<Json>,
    pub requests: Requests,
}

/// Runs the prompt `go` on a fresh context holding `tools`, with the test model set on
/// `config`; answers the loop's new messages.
pub async fn run_go(
    tools: Vec<AgentTool>,
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
    f: StreamFn,
) -> Vec<Json> {
    let context = LoopContext {
        messages: Default::default(),
        tools,
    };
    let config = LoopConfig {
        model: model().into(),
        ..config
    };
    let messages = run_agent_loop(vec![umsg("go")], context, config, emit, signal, Some(f))
        .await
        .expect("run");
    to_json_vec(&messages)
}

/// Runs a prompt whose first answer calls `calls`, then answers text `end` (as often as needed).
pub async fn run_calls(tools: Vec<AgentTool>, calls: Vec<Json>, config: LoopConfig) -> Outcome {
    let responses = vec![
        json!({"content": calls}),
        text_response("end", 1),
        text_response("end", 1),
        text_response("end", 1),
    ];
    let (f, requests) = scripted(responses);
    let (emit, events) = collect_emit();
    let messages = run_go(tools, config, emit, AbortSignal::new(), f).await;
    let events = events.lock().unwrap().clone();
    Outcome {
        events,
        messages,
        requests,
    }
}

/// Runs a prompt answered by `responses` on `tools`, recording the events.
pub async fn run_scripted(tools: Vec<AgentTool>, responses: Vec<Json>) -> Outcome {
    let (f, requests) = scripted(responses);
    let (emit, events) = collect_emit();
    let messages = run_go(tools, loop_config(), emit, AbortSignal::new(), f).await;
    let events = events.lock().unwrap().clone();
    Outcome {
        events,
        messages,
        requests,
    }
}

/// One call `c1` of tool `t` (no arguments) under `config`: the `tool_execution_end` events.
pub async fn t_call_ends(tool: AgentTool, config: LoopConfig) -> Vec<Json> {
    let out = run_calls(vec![tool], vec![call("c1", "t", json!({}))], config).await;
    of_type(&out.events, "tool_execution_end")
}

/// A tool `name` answering `ok`, and the count of its executions.
pub fn counting_tool(name: &str) -> (AgentTool, Arc<Mutex<usize>>) {
    let executed = Arc::new(Mutex::new(0));
    let count = executed.clone();
    let tool = tool_fn(def(name), move |_| {
        *count.lock().unwrap() += 1;
        Ok(Some(text_result("ok", json!({}))))
    });
    (tool, executed)
}

/// The events of type `kind`, normalized.
pub fn of_type(events: &[Json], kind: &str) -> Vec<Json> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(normalize)
        .collect()
}

/// The tool result messages, normalized.
pub fn results(messages: &[Json]) -> Vec<Json> {
    messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(normalize)
        .collect()
}

/// Event types with the tool call id (`tool_execution_start:c1`, `message_end:c1`).
pub fn tool_trace(events: &[Json]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| {
            let t = e["type"].as_str().unwrap();
            if t.starts_with("tool_execution") {
                Some(format!("{t}:{}", e["toolCallId"].as_str().unwrap()))
            } else if e["message"]["role"] == "toolResult" && t != "turn_end" {
                Some(format!(
                    "{t}:{}",
                    e["message"]["toolCallId"].as_str().unwrap()
                ))
            } else {
                None
            }
        })
        .collect()
}

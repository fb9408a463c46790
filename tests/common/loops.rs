//! Running the low-level loop from prompts, and logs of its events and hooks (loop*.rs).

use std::sync::{Arc, Mutex};

use agent::agent_loop::{run_agent_loop, Emit, LoopConfig, LoopContext};
use agent::host::{AbortSignal, Hook, StreamFn};
use agent::json::{json, Json};
use agent::message::to_json_vec;

use super::*;

/// What a loop run answered, emitted and requested.
pub struct Outcome {
    pub result: Result<Vec<Json>, String>,
    pub events: Vec<Json>,
    pub requests: Requests,
}

/// Runs `prompts` on `context` with a (recording) stream function, recording the events.
pub async fn run_with(
    prompts: Vec<Json>,
    context: LoopContext,
    config: LoopConfig,
    stream_fn: (StreamFn, Requests),
) -> Outcome {
    let (emit, events) = collect_emit();
    let (f, requests) = stream_fn;
    let result = run_agent_loop(prompts, context, config, emit, AbortSignal::new(), Some(f))
        .await
        .map(|messages| to_json_vec(&messages));
    let events = events.lock().unwrap().clone();
    Outcome {
        result,
        events,
        requests,
    }
}

/// Runs `prompts` on an empty context, answered by scripted `responses`.
pub async fn run(prompts: Vec<Json>, config: LoopConfig, responses: Vec<Json>) -> Outcome {
    run_with(prompts, LoopContext::default(), config, scripted(responses)).await
}

/// The roles of `messages`, in order.
pub fn roles(messages: &[Json]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A shared log of event types and hook calls, in order.
pub type Log = Arc<Mutex<Vec<String>>>;

/// An emit sink logging each event's type.
pub fn logging_emit(log: &Log) -> Emit {
    let log = log.clone();
    Arc::new(move |event: &agent::event::AgentEvent| {
        log.lock().unwrap().push(event.type_name().to_string());
        agent::host::Delivery::Now(Ok(()))
    })
}

/// A hook logging `name` on each call and answering `answer`.
pub fn logging_hook(log: &Log, name: &'static str, answer: Option<Json>) -> Hook {
    let log = log.clone();
    hook(move |_, _| {
        log.lock().unwrap().push(name.to_string());
        Ok(answer.clone())
    })
}

/// A context holding only the tool `read` (answering `R`).
pub fn read_context() -> LoopContext {
    LoopContext {
        messages: Default::default(),
        tools: vec![text_tool("read", "R", 0)],
    }
}

/// Responses: a call `c1` of `read`, then one-chunk text answers `texts`.
pub fn read_then(texts: &[&str]) -> Vec<Json> {
    let mut responses = vec![tool_response(&[("c1", "read", json!({}))])];
    responses.extend(texts.iter().map(|t| text_response(t, 1)));
    responses
}

/// Runs prompt `p` on `read_context()` answered by `responses`, logging event types into `log`.
pub async fn run_logged(config: LoopConfig, responses: Vec<Json>, log: &Log) -> Vec<Json> {
    let (f, _) = scripted(responses);
    run_agent_loop(
        vec![umsg("p")],
        read_context(),
        config,
        logging_emit(log),
        AbortSignal::new(),
        Some(f),
    )
    .await
    .map(|messages| to_json_vec(&messages))
    .expect("run")
}

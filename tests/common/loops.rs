//! Running the low-level loop from prompts, and logs of its events and hooks (loop*.rs).

use std::sync::{Arc, Mutex};

use agent::agent_loop::{run_agent_loop, Emit, LoopConfig, LoopContext};
use agent::host::{AbortSignal, Hook, HostFuture, StreamFn};
use agent::json::Json;

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
    let result = run_agent_loop(prompts, context, config, emit, AbortSignal::new(), Some(f)).await;
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
    Arc::new(move |event: agent::event::AgentEvent| {
        log.lock().unwrap().push(event.type_name().to_string());
        Box::pin(async { Ok(()) }) as HostFuture<_>
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

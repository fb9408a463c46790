//! Issue 18: an idle agent costs fewer bytes than the reference's (5.5 KB per agent in W4 of
//! `../shared/bench`, measured on Node). Counted, not timed: a counting global allocator records
//! the live heap bytes while 500 agents are built as W4 builds them (a system prompt, the two
//! shared tools, a `hi`/`hello` transcript and the same model object), so the figure is the
//! agents' own bytes, whatever the allocator's page habits.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::host::{FnTool, StreamFn, StreamRequest};
use agent::json::{json, Json};
use agent::stream::StreamSender;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The reference's RSS per idle W4 agent (BENCHMARKS.md; pi-agent-core 1.6.0 on Node 20).
const REFERENCE_BYTES_PER_AGENT: i64 = 5_500;

fn model() -> Json {
    json!({"id": "bench-model", "name": "bench-model", "api": "bench", "provider": "bench",
        "baseUrl": "", "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000000, "maxTokens": 100000})
}

fn transcript() -> Vec<Json> {
    let usage = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    vec![
        json!({"role": "user", "content": "hi", "timestamp": 1}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "hello"}], "api": "bench",
            "provider": "bench", "model": "bench-model", "usage": usage, "stopReason": "stop",
            "timestamp": 2}),
    ]
}

fn tool(name: &str, parameters: Json) -> agent::host::AgentTool {
    FnTool::tool(
        json!({"name": name, "label": name, "description": "A benchmark tool.", "parameters": parameters}),
        |_| Box::pin(async { Ok(None) }),
    )
}

#[test]
fn an_idle_agent_costs_fewer_bytes_than_the_reference() {
    let never_called: StreamFn = Arc::new(|_: StreamRequest, _: StreamSender| {});
    let tools = [
        tool(
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        tool(
            "add",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        ),
    ];
    let build = |i: usize| {
        Agent::new(AgentOptions {
            initial_state: InitialState {
                system_prompt: Some(format!("You are agent {i}.")),
                model: Some(model()),
                tools: tools.to_vec(),
                messages: transcript(),
                ..Default::default()
            },
            stream_fn: Some(never_called.clone()),
            ..Default::default()
        })
        .unwrap()
    };
    // One agent first: one-time costs (the runtime, interned values) are not per agent.
    let first = build(0);
    const AGENTS: usize = 500;
    let before = LIVE.load(Ordering::Relaxed);
    let agents: Vec<Agent> = (1..=AGENTS).map(build).collect();
    let per_agent = (LIVE.load(Ordering::Relaxed) - before) / AGENTS as i64;
    eprintln!("{per_agent} live bytes per idle agent");
    assert!(
        per_agent < REFERENCE_BYTES_PER_AGENT * 3 / 4,
        "{per_agent} live bytes per idle agent"
    );
    // Nothing was lost by keeping the transcript in text form.
    let last = agents.last().unwrap();
    assert_eq!(last.messages()[1..], transcript()[..]);
    assert_eq!(last.model(), model());
    assert_eq!(first.messages()[0]["toolsAdded"][1]["name"], "add");
}

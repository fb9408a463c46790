//! Reading a provider response costs O(its size): counted allocations while a real `Agent` reads
//! N and 4N text deltas sent in one write (a parser copying its buffer per line, as the SSE crates
//! do, grows ~16x). Counted, not timed.
#![cfg(feature = "providers")]

#[path = "providers/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "providers/mock.rs"]
#[allow(dead_code)]
mod mock;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use agent::json::json;
use common::{agent_for, chunk, model, server, sse};

struct Counting;
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated while an agent reads one response of `n` text deltas sent in one write.
fn response_cost(n: usize) -> u64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&chunk(json!({"content": format!("d{i:07}")}), None));
    }
    body.push_str(&chunk(json!({}), Some("stop")));
    body.push_str("data: [DONE]\n\n");
    let mock = runtime.block_on(server(vec![sse(vec![body])]));
    let agent = agent_for(model(mock.port, "openai-completions"));
    let before = BYTES.load(Ordering::SeqCst);
    runtime.block_on(agent.prompt_text("go")).unwrap();
    let cost = BYTES.load(Ordering::SeqCst) - before;
    let text = agent.messages().last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .len();
    assert_eq!(text, 8 * n);
    cost
}

#[test]
fn reading_a_response_costs_linear_in_its_size() {
    response_cost(200);
    let small = response_cost(2000);
    let large = response_cost(8000);
    let ratio = large as f64 / small as f64;
    eprintln!("2000 deltas: {small} B; 8000 deltas: {large} B; ratio {ratio:.2}");
    assert!(
        ratio < 5.0,
        "4x the deltas cost {ratio:.1}x the bytes (linear ~4x, quadratic ~16x)"
    );
}

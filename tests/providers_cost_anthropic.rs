//! Reading an anthropic-messages response costs O(its size): counted allocations while a real
//! `Agent` reads N and 4N text deltas and as many signature pieces (each piece is appended to
//! the block's signature, never the whole signature re-sent). Counted, not timed.
#![cfg(feature = "providers")]

#[path = "providers/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "providers/mock.rs"]
#[allow(dead_code)]
mod mock;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use agent::json::{json, Json};
use common::{agent_for, model, server, sse};

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

fn event(name: &str, data: Json) -> String {
    format!("event: {name}\ndata: {}\n\n", agent::json::to_string(&data))
}

fn delta(index: u32, delta: Json) -> String {
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

/// Bytes allocated while an agent reads one response of `n` signature pieces and `n` text
/// deltas sent in one write.
fn response_cost(n: usize) -> u64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut body = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "m",
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    );
    let start = |index: u32, block: Json| {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    };
    let stop = |index: u32| {
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    };
    body.push_str(&start(
        0,
        json!({"type": "thinking", "thinking": "", "signature": ""}),
    ));
    body.push_str(&delta(
        0,
        json!({"type": "thinking_delta", "thinking": "hm"}),
    ));
    for i in 0..n {
        body.push_str(&delta(
            0,
            json!({"type": "signature_delta", "signature": format!("s{i:07}")}),
        ));
    }
    body.push_str(&stop(0));
    body.push_str(&start(1, json!({"type": "text", "text": ""})));
    for i in 0..n {
        body.push_str(&delta(
            1,
            json!({"type": "text_delta", "text": format!("d{i:07}")}),
        ));
    }
    body.push_str(&stop(1));
    body.push_str(&event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    ));
    body.push_str(&event("message_stop", json!({"type": "message_stop"})));
    let mock = runtime.block_on(server(vec![sse(vec![body])]));
    let agent = agent_for(model(mock.port, "anthropic-messages"));
    let before = BYTES.load(Ordering::SeqCst);
    runtime.block_on(agent.prompt_text("go")).unwrap();
    let cost = BYTES.load(Ordering::SeqCst) - before;
    let message = agent.messages().last().unwrap().clone();
    assert_eq!(message["content"][1]["text"].as_str().unwrap().len(), 8 * n);
    let signature = message["content"][0]["thinkingSignature"].as_str().unwrap();
    assert_eq!(signature.len(), 8 * n);
    cost
}

#[test]
fn reading_a_response_costs_linear_in_its_size() {
    response_cost(200);
    let small = response_cost(2000);
    let large = response_cost(8000);
    let ratio = large as f64 / small as f64;
    eprintln!("2000 deltas each: {small} B; 8000: {large} B; ratio {ratio:.2}");
    assert!(
        ratio < 5.0,
        "4x the deltas cost {ratio:.1}x the bytes (linear ~4x, quadratic ~16x)"
    );
}

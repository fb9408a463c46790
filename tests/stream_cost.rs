//! ARCHITECTURE principle 5: streaming a response of N events costs O(N) in total for a subscriber
//! that reads only the event type and delta (no JSON) — for every event kind.
//!
//! Counted, not timed: a counting global allocator records the bytes and the number of
//! allocations made while the real `Agent` consumes a delta-form stream of N events and of 4N
//! events. Linear work grows ~4×; the quadratic behaviour this guards against (each delta
//! deep-copying the arguments or the message parsed so far) grows ~16×. Every measured test holds
//! one lock, so the counts are not mixed with another test's work.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::event::{AgentEvent, EventShape};
use agent::host::{HostFuture, Listener, StreamFn, StreamRequest};
use agent::json::{json, Json};
use agent::stream::{BlockKind, StreamOp, StreamSender};

struct Counting;

static BYTES: AtomicU64 = AtomicU64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

static MEASURING: Mutex<()> = Mutex::new(());

#[derive(Debug, Clone, Copy)]
struct Cost {
    bytes: u64,
    allocations: u64,
}

/// Runs one prompt whose response is `events` (pushed all at once, delta form; an object
/// `{"typedText": d}` is pushed as a typed text delta of block 0) with a listener reading only the
/// type, the update type and the delta, and with `lean` also the lean JSON text; returns what the
/// run allocated.
fn run_cost(events: Vec<Json>, lean: bool) -> Cost {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let script = Arc::new(Mutex::new(Some(events)));
    let stream_fn: StreamFn = Arc::new(move |_request: StreamRequest, sender: StreamSender| {
        let events = script.lock().unwrap().take().unwrap_or_else(|| {
            vec![
                json!({"type": "start"}),
                json!({"type": "done", "reason": "stop"}),
            ]
        });
        for event in events {
            let _ = match event.get("typedText").and_then(Json::as_str) {
                Some(delta) => sender.push_op(StreamOp::KindDelta {
                    kind: BlockKind::Text,
                    index: 0,
                    delta: delta.into(),
                }),
                None => sender.push(event),
            };
        }
    });
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            model: Some(json!({"id": "m1", "api": "test-api", "provider": "test-prov"})),
            ..Default::default()
        },
        stream_fn: Some(stream_fn),
        ..Default::default()
    })
    .unwrap();
    let counter = seen.clone();
    let listener: Listener = Arc::new(move |event: Arc<AgentEvent>, _signal| {
        // What a C listener using agent_event_type / _update_type / _delta reads.
        let mut n = event.type_name().len();
        n += event.update_type().map_or(0, str::len);
        n += event.delta().map_or(0, str::len);
        if lean {
            n += event.to_json_text(EventShape::Lean).len();
        }
        counter.fetch_add(n, Ordering::Relaxed);
        Box::pin(async { Ok(()) }) as HostFuture<_>
    });
    agent.subscribe(listener);
    let bytes = BYTES.load(Ordering::SeqCst);
    let allocations = ALLOCATIONS.load(Ordering::SeqCst);
    // Every workload ends its stream with an error (see `ended`): the run fails with it.
    let failed = runtime.block_on(agent.prompt_text("go")).unwrap_err();
    assert_eq!(failed.message, "stop here");
    let cost = Cost {
        bytes: BYTES.load(Ordering::SeqCst) - bytes,
        allocations: ALLOCATIONS.load(Ordering::SeqCst) - allocations,
    };
    assert!(seen.load(Ordering::Relaxed) > 0);
    cost
}

/// Measures `script(n)` and `script(4n)` and fails when the cost grows superlinearly.
fn assert_linear(name: &str, n: usize, script: impl Fn(usize) -> Vec<Json>) {
    assert_linear_reading(name, n, false, script)
}

/// `assert_linear` with a listener that also reads each event's lean JSON when `lean`.
fn assert_linear_reading(name: &str, n: usize, lean: bool, script: impl Fn(usize) -> Vec<Json>) {
    let _guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    // A warm-up run so that one-time initialisation is not counted at N only.
    run_cost(script(n / 4), lean);
    let small = run_cost(script(n), lean);
    let large = run_cost(script(4 * n), lean);
    let bytes = large.bytes as f64 / small.bytes as f64;
    let allocations = large.allocations as f64 / small.allocations as f64;
    eprintln!(
        "{name}: N={n}: {} B in {} allocations; 4N: {} B in {} allocations; ratios {bytes:.2} / {allocations:.2}",
        small.bytes, small.allocations, large.bytes, large.allocations
    );
    assert!(
        bytes < 5.0 && allocations < 5.0,
        "{name}: 4× the events cost {bytes:.1}× the bytes and {allocations:.1}× the allocations \
         (linear: ~4×, quadratic: ~16×)"
    );
}

fn start() -> Json {
    json!({"type": "start"})
}

fn ended(mut events: Vec<Json>, reason: &str) -> Vec<Json> {
    events.insert(0, start());
    // `error` ends the run without executing tool calls: only the stream is measured.
    events.push(json!({"type": "error", "reason": "error", "errorMessage": reason}));
    events
}

/// One tool call whose arguments are one long string, in 10-byte deltas.
#[test]
fn tool_call_string_argument_deltas_are_linear() {
    assert_linear("toolcall string deltas", 1000, |n| {
        let mut events = vec![
            json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "write"}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"content\": \""}),
        ];
        for _ in 0..n {
            events
                .push(json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "abcdefghij"}));
        }
        events.push(json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "\"}"}));
        events.push(json!({"type": "toolcall_end", "contentIndex": 0}));
        ended(events, "stop here")
    });
}

/// One tool call whose arguments are a long array of numbers and small objects, in 10-byte
/// deltas. (The snapshot of an open array copies its element list, shallowly; SPEC §3.8.4's credit
/// bounds how often: amortized O(256 + 8 × delta length) per delta. Short arrays are refreshed at
/// every delta, so the sizes are chosen where that bound applies at N already.)
#[test]
fn tool_call_structured_argument_deltas_are_linear() {
    assert_linear("toolcall structured deltas", 1000, |n| {
        let mut text = String::from("{\"items\": [");
        let mut i = 0;
        while text.len() < n * 10 {
            if i % 10 == 0 {
                text.push_str(&format!("{{\"n\": {i}, \"s\": \"item {i}\"}}, "));
            } else {
                text.push_str(&format!("{}, ", i % 10));
            }
            i += 1;
        }
        text.push_str("{}]}");
        let mut events = vec![
            json!({"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "write"}),
        ];
        for chunk in text.as_bytes().chunks(10) {
            let delta = std::str::from_utf8(chunk).unwrap();
            events.push(json!({"type": "toolcall_delta", "contentIndex": 0, "delta": delta}));
        }
        events.push(json!({"type": "toolcall_end", "contentIndex": 0}));
        ended(events, "stop here")
    });
}

/// N tool-call blocks, each with one delta.
#[test]
fn many_tool_call_blocks_are_linear() {
    assert_linear("toolcall blocks", 500, |n| {
        let mut events = Vec::new();
        for i in 0..n {
            events.push(json!({"type": "toolcall_start", "contentIndex": i, "id": format!("c{i}"), "toolName": "write"}));
            events
                .push(json!({"type": "toolcall_delta", "contentIndex": i, "delta": "{\"a\": 1}"}));
            events.push(json!({"type": "toolcall_end", "contentIndex": i}));
        }
        ended(events, "stop here")
    });
}

/// N text blocks, each with one delta.
#[test]
fn many_text_blocks_are_linear() {
    assert_linear("text blocks", 500, |n| {
        let mut events = Vec::new();
        for i in 0..n {
            events.push(json!({"type": "text_start", "contentIndex": i}));
            events.push(json!({"type": "text_delta", "contentIndex": i, "delta": "hello"}));
            events.push(json!({"type": "text_end", "contentIndex": i}));
        }
        ended(events, "stop here")
    });
}

/// N thinking blocks, each with one delta, then one thinking block of N deltas.
#[test]
fn thinking_is_linear() {
    assert_linear("thinking blocks and deltas", 500, |n| {
        let mut events = Vec::new();
        for i in 0..n {
            events.push(json!({"type": "thinking_start", "contentIndex": i}));
            events.push(json!({"type": "thinking_delta", "contentIndex": i, "delta": "hmm"}));
            events
                .push(json!({"type": "thinking_end", "contentIndex": i, "contentSignature": "s"}));
        }
        events.push(json!({"type": "thinking_start", "contentIndex": n}));
        for _ in 0..n {
            events
                .push(json!({"type": "thinking_delta", "contentIndex": n, "delta": "0123456789"}));
        }
        events.push(json!({"type": "thinking_end", "contentIndex": n}));
        ended(events, "stop here")
    });
}

/// One text block of N deltas (already linear before; kept so it stays so).
#[test]
fn text_deltas_are_linear() {
    assert_linear("text deltas", 1000, |n| {
        let mut events = vec![json!({"type": "text_start", "contentIndex": 0})];
        for _ in 0..n {
            events.push(json!({"type": "text_delta", "contentIndex": 0, "delta": "0123456789"}));
        }
        events.push(json!({"type": "text_end", "contentIndex": 0}));
        ended(events, "stop here")
    });
}

/// A listener reading the lean JSON of every event pays O(delta) per text delta, whether the
/// delta was pushed as JSON or typed.
#[test]
fn lean_json_of_text_deltas_is_linear() {
    for typed in [false, true] {
        assert_linear_reading("lean JSON of text deltas", 1000, true, |n| {
            let mut events = vec![json!({"type": "text_start", "contentIndex": 0})];
            for _ in 0..n {
                events.push(if typed {
                    json!({"typedText": "0123456789"})
                } else {
                    json!({"type": "text_delta", "contentIndex": 0, "delta": "0123456789"})
                });
            }
            events.push(json!({"type": "text_end", "contentIndex": 0}));
            ended(events, "stop here")
        });
    }
}

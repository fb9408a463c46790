//! Reading a provider response costs O(its size): counted allocations while a real `Agent` reads
//! N and 4N text deltas, the body sent in one write (a parser copying its buffer per line, as the
//! SSE crates do, grows ~16x) and in many small writes (a parser re-copying what it holds of an
//! unfinished line on every read grows ~16x; one long line in small pieces shows it most), and for
//! anthropic-messages as many signature pieces (each appended to the block's signature, never the
//! whole signature re-sent); openai-responses reasoning, text and argument deltas;
//! google-generative-ai the same with signed thinking parts and one long event in small writes (the
//! Google SDK's event splitter). Counted, not timed; one measurement at a time.
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
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How the mock server writes a body.
#[derive(Clone, Copy)]
enum Writes {
    Whole,
    /// Writes of this many bytes (the mock pauses between writes, so reads see them apart).
    Pieces(usize),
}

fn written(body: String, writes: Writes) -> Vec<String> {
    match writes {
        Writes::Whole => vec![body],
        Writes::Pieces(size) => body
            .as_bytes()
            .chunks(size)
            .map(|piece| String::from_utf8(piece.to_vec()).unwrap())
            .collect(),
    }
}

/// Bytes allocated while an agent reads one response of `n` text deltas sent as `writes`.
fn openai_response_cost(n: usize, writes: Writes) -> u64 {
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&chunk(json!({"content": format!("d{i:07}")}), None));
    }
    openai_body_cost(body, writes, 8 * n)
}

/// Bytes allocated while an agent reads one delta of `8n` bytes: one SSE line, sent as `writes`.
fn openai_long_line_cost(n: usize, writes: Writes) -> u64 {
    let text: String = (0..n).map(|i| format!("d{i:07}")).collect();
    openai_body_cost(chunk(json!({"content": text}), None), writes, 8 * n)
}

/// Bytes allocated while an agent reads `deltas` (then the stop chunk and `[DONE]`), whose text
/// adds up to `text_len` bytes.
fn openai_body_cost(mut body: String, writes: Writes, text_len: usize) -> u64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    body.push_str(&chunk(json!({}), Some("stop")));
    body.push_str("data: [DONE]\n\n");
    let mock = runtime.block_on(server(vec![sse(written(body, writes))]));
    let agent = agent_for(model(mock.port, "openai-completions"));
    let before = BYTES.load(Ordering::SeqCst);
    runtime.block_on(agent.prompt_text("go")).unwrap();
    let cost = BYTES.load(Ordering::SeqCst) - before;
    let text = agent.messages().last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .len();
    assert_eq!(text, text_len);
    cost
}

/// One Gemini stream chunk holding `parts`, with the SDK's `\r\n\r\n` delimiter.
fn gemini_chunk(parts: Json, finish: Option<&str>) -> String {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    let chunk = json!({"candidates": [candidate], "responseId": "r"});
    format!("data: {}\r\n\r\n", agent::json::to_string(&chunk))
}

/// Bytes allocated while an agent reads a google-generative-ai response: `n` signed thinking
/// parts and `n` text parts as one chunk each, or (with `one_part`) the same text as one part of
/// one event; sent as `writes`.
fn gemini_response_cost(n: usize, writes: Writes, one_part: bool) -> u64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut body = String::new();
    if one_part {
        let text: String = (0..n).map(|i| format!("d{i:07}")).collect();
        body.push_str(&gemini_chunk(json!([{"text": text}]), None));
    } else {
        for i in 0..n {
            let part =
                json!({"text": "t", "thought": true, "thoughtSignature": format!("s{i:07}")});
            body.push_str(&gemini_chunk(json!([part]), None));
        }
        for i in 0..n {
            body.push_str(&gemini_chunk(json!([{"text": format!("d{i:07}")}]), None));
        }
    }
    body.push_str(&gemini_chunk(json!([{"text": ""}]), Some("STOP")));
    let mock = runtime.block_on(server(vec![sse(written(body, writes))]));
    let agent = agent_for(model(mock.port, "google-generative-ai"));
    let before = BYTES.load(Ordering::SeqCst);
    runtime.block_on(agent.prompt_text("go")).unwrap();
    let cost = BYTES.load(Ordering::SeqCst) - before;
    let message = agent.messages().last().unwrap().clone();
    let text = message["content"].as_array().unwrap().last().unwrap()["text"]
        .as_str()
        .unwrap()
        .len();
    assert_eq!(text, 8 * n, "{message}");
    cost
}

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
fn anthropic_response_cost(n: usize) -> u64 {
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
    let mock = runtime.block_on(server(vec![sse(written(body, Writes::Pieces(4096)))]));
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

/// Bytes allocated while an agent reads an openai-responses answer of `n` reasoning-summary
/// deltas, `n` text deltas and one function call of `n` argument deltas (then its complete
/// arguments twice, in `arguments.done` and the done item), sent in 4 KB writes.
fn responses_cost(n: usize) -> u64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ev = |data: Json| {
        let name = data["type"].as_str().unwrap().to_string();
        event(&name, data)
    };
    let mut body = ev(json!({"type": "response.created", "response": {"id": "resp_1"}}));
    body.push_str(&ev(
        json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
    ));
    for i in 0..n {
        body.push_str(&ev(json!({"type": "response.reasoning_summary_text.delta",
            "output_index": 0, "delta": format!("t{i:07}")})));
    }
    body.push_str(&ev(
        json!({"type": "response.output_item.done", "output_index": 0,
        "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
    ));
    body.push_str(&ev(
        json!({"type": "response.output_item.added", "output_index": 1,
        "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
    ));
    let mut text = String::new();
    for i in 0..n {
        let piece = format!("d{i:07}");
        body.push_str(&ev(json!({"type": "response.output_text.delta",
            "output_index": 1, "delta": piece.clone()})));
        text.push_str(&piece);
    }
    body.push_str(&ev(json!({"type": "response.output_item.done", "output_index": 1,
        "item": {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": text}]}})));
    body.push_str(&ev(json!({"type": "response.output_item.added", "output_index": 2,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read", "arguments": ""}})));
    let mut arguments = String::from("{\"path\":\"");
    body.push_str(&ev(
        json!({"type": "response.function_call_arguments.delta",
        "output_index": 2, "delta": arguments.clone()}),
    ));
    for i in 0..n {
        let piece = format!("p{i:07}");
        body.push_str(&ev(
            json!({"type": "response.function_call_arguments.delta",
            "output_index": 2, "delta": piece.clone()}),
        ));
        arguments.push_str(&piece);
    }
    arguments.push_str("\"}");
    body.push_str(&ev(json!({"type": "response.function_call_arguments.done",
        "output_index": 2, "arguments": arguments.clone()})));
    body.push_str(&ev(
        json!({"type": "response.output_item.done", "output_index": 2,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read",
            "arguments": arguments}}),
    ));
    body.push_str(&ev(json!({"type": "response.completed",
        "response": {"id": "resp_1", "status": "completed"}})));
    // The second request (after the tool ran) gets a short answer.
    let mut answer = ev(
        json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "msg_2", "type": "message", "role": "assistant", "content": []}}),
    );
    answer.push_str(&ev(json!({"type": "response.completed",
        "response": {"id": "resp_2", "status": "completed"}})));
    let mock = runtime.block_on(server(vec![
        sse(written(body, Writes::Pieces(4096))),
        sse(vec![answer]),
    ]));
    let agent = agent_for(model(mock.port, "openai-responses"));
    let before = BYTES.load(Ordering::SeqCst);
    runtime.block_on(agent.prompt_text("go")).unwrap();
    let cost = BYTES.load(Ordering::SeqCst) - before;
    let messages = agent.messages();
    let reply = &messages[messages.len() - 3];
    assert_eq!(
        reply["content"][0]["thinking"].as_str().unwrap().len(),
        8 * n
    );
    assert_eq!(reply["content"][1]["text"].as_str().unwrap().len(), 8 * n);
    let path = reply["content"][2]["arguments"]["path"].as_str().unwrap();
    assert_eq!(path.len(), 8 * n);
    cost
}

/// Measures `cost(2000)` and `cost(8000)` (after a warm-up) and fails on superlinear growth.
fn assert_linear(name: &str, cost: impl Fn(usize) -> u64) {
    let _guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    cost(200);
    let small = cost(2000);
    let large = cost(8000);
    let ratio = large as f64 / small as f64;
    eprintln!("{name}: 2000 deltas: {small} B; 8000 deltas: {large} B; ratio {ratio:.2}");
    assert!(
        ratio < 5.0,
        "{name}: 4x the deltas cost {ratio:.1}x the bytes (linear ~4x, quadratic ~16x)"
    );
}

#[test]
fn reading_an_openai_completions_response_costs_linear_in_its_size() {
    assert_linear("openai-completions, one write", |n| {
        openai_response_cost(n, Writes::Whole)
    });
    assert_linear("openai-completions, 4 KB writes", |n| {
        openai_response_cost(n, Writes::Pieces(4096))
    });
}

#[test]
fn reading_one_long_line_in_small_writes_costs_linear_in_its_length() {
    assert_linear("openai-completions, one long line, 1 KB writes", |n| {
        openai_long_line_cost(n, Writes::Pieces(1024))
    });
    assert_linear("openai-completions, one long line, one write", |n| {
        openai_long_line_cost(n, Writes::Whole)
    });
}

#[test]
fn reading_an_anthropic_messages_response_costs_linear_in_its_size() {
    assert_linear("anthropic-messages", anthropic_response_cost);
}

#[test]
fn reading_a_google_generative_ai_response_costs_linear_in_its_size() {
    assert_linear("google-generative-ai, 4 KB writes", |n| {
        gemini_response_cost(n, Writes::Pieces(4096), false)
    });
    assert_linear("google-generative-ai, one write", |n| {
        gemini_response_cost(n, Writes::Whole, false)
    });
    assert_linear("google-generative-ai, one long event, 1 KB writes", |n| {
        gemini_response_cost(n, Writes::Pieces(1024), true)
    });
}

#[test]
fn reading_an_openai_responses_response_costs_linear_in_its_size() {
    assert_linear("openai-responses", responses_cost);
}

/// A transcript of `n` exchanges: a user question and an assistant answer of ~1 KB each.
fn long_transcript(n: usize) -> Vec<Json> {
    let text = |who: &str, i: usize| format!("{who} {i}: {}", "lorem ipsum dolor ".repeat(56));
    (0..n)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": [{"type": "text", "text": text("question", i)}],
                    "timestamp": 1}),
                json!({"role": "assistant", "content": [{"type": "text", "text": text("answer", i)}],
                    "api": "openai-completions", "provider": "local-test", "model": "m",
                    "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                        "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                        "cacheWrite": 0, "total": 0}},
                    "stopReason": "stop", "timestamp": 2}),
            ]
        })
        .collect()
}

/// Bytes allocated while an agent whose transcript holds `n` exchanges sends a request to `api`
/// (a one-delta answer) after a first one, and the transcript's size as JSON text.
fn request_cost(api: &str, n: usize) -> (u64, usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let body = match api {
        "anthropic-messages" => [
            event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1",
                "model": "m", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
            delta(0, json!({"type": "text_delta", "text": "ok"})),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            event(
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": "end_turn"}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]
        .concat(),
        _ => [
            chunk(json!({"content": "ok"}), None),
            chunk(json!({}), Some("stop")),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat(),
    };
    let mock = runtime.block_on(server(vec![sse(vec![body.clone()]), sse(vec![body])]));
    let agent = agent_for(model(mock.port, api));
    let transcript = long_transcript(n);
    let size = agent::json::to_string(&Json::Array(transcript.clone())).len();
    agent.set_messages(transcript);
    // The first request reads the stored messages' trees once; the second is what every later
    // request costs.
    runtime.block_on(agent.prompt_text("first")).unwrap();
    let before = BYTES.load(Ordering::SeqCst);
    runtime.block_on(agent.prompt_text("go")).unwrap();
    let cost = BYTES.load(Ordering::SeqCst) - before;
    let answer = agent.messages().last().unwrap().clone();
    assert_eq!(answer["content"][0]["text"], "ok", "{api}: {answer}");
    (cost, size)
}

/// A request is built from the shared transcript: the providers read the messages in place, so
/// what a request allocates is the one converted copy pi-ai's `transformMessages` makes, the wire
/// form and the request body; and 4x the transcript costs ~4x.
#[test]
fn a_request_copies_the_transcript_once() {
    let _guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    for api in ["openai-completions", "anthropic-messages"] {
        request_cost(api, 10);
        let (small, small_size) = request_cost(api, 100);
        let (large, large_size) = request_cost(api, 400);
        let per_byte = large as f64 / large_size as f64;
        eprintln!(
            "{api}: {small} B for {small_size} B of transcript, {large} B for {large_size} B: \
             {per_byte:.2} B per transcript byte"
        );
        assert!((large as f64 / small as f64) < 5.0, "{api}: superlinear");
        // 18.5 (openai-completions) and 20.8 (anthropic-messages) when last measured; 22.5 and
        // 24.8 when the call and the resolved transcript each held a deep copy.
        assert!(
            per_byte < 21.0,
            "{api}: {per_byte:.2} B allocated per transcript byte"
        );
    }
}

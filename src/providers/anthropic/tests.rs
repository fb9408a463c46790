//! Unit tests of the anthropic-messages provider. The conformance fixtures
//! (`tests/providers/fixtures/*-am-*`, `make provider-conformance-extra`) check whole requests
//! and streams against pi-ai; these pin the pieces.

use super::request::{build, Built};
use super::response::read_body_with;
use super::*;
use crate::host::AbortSignal;
use crate::providers::output::openrouter_total;
use crate::stream::{channel, StreamOutput};

fn model() -> Json {
    json!({"id": "claude-sonnet-4-5", "api": "anthropic-messages", "provider": "anthropic",
        "baseUrl": "http://127.0.0.1:9", "reasoning": true, "input": ["text"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000, "maxTokens": 64000})
}

fn call(model: Json, messages: Vec<Json>, options: Json) -> Call {
    let api_key = options
        .get("apiKey")
        .and_then(Json::as_str)
        .map(str::to_string);
    Call {
        model: model.into(),
        messages: crate::message::from_json_vec(messages).into(),
        options,
        signal: AbortSignal::new(),
        api_key,
        transport: Default::default(),
    }
}

fn user(text: &str) -> Json {
    json!({"role": "user", "content": text, "timestamp": 1})
}

fn body(built: &Built) -> Json {
    crate::json::parse(&built.request.body).unwrap()
}

fn header<'a>(built: &'a Built, name: &str) -> Option<&'a str> {
    built
        .request
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn http_error_texts_follow_the_sdk() {
    let body = r#"{"type":"error","error":{"type":"x","message":"m"}}"#;
    assert_eq!(describe_http_error(401, body), format!("401 {body}"));
    assert_eq!(describe_http_error(400, r#"{"message":"bad"}"#), "400 bad");
    assert_eq!(
        describe_http_error(400, r#"{"message":{"a":1}}"#),
        r#"400 {"a":1}"#
    );
    assert_eq!(describe_http_error(500, "oops"), "500 oops");
    assert_eq!(describe_http_error(404, ""), "404 status code (no body)");
    // Falsy JSON is not an error object: the text itself is the message.
    assert_eq!(describe_http_error(500, "0"), "500 0");
    assert_eq!(describe_http_error(500, "null"), "500 null");
}

#[test]
fn missing_credentials_throw_and_auth_headers_count() {
    let no_key = call(model(), vec![user("hi")], json!({}));
    assert_eq!(
        check_auth(&no_key),
        Err("No API key for provider: anthropic".into())
    );
    let blank = call(model(), vec![], json!({"headers": {"Authorization": " "}}));
    assert!(check_auth(&blank).is_err());
    let header = call(model(), vec![], json!({"headers": {"X-Api-Key": "k"}}));
    assert_eq!(check_auth(&header), Ok(()));
}

#[test]
fn oauth_requests_use_claude_code_identity_and_tool_names() {
    let messages = vec![
        json!({"role": "system", "content": "Be nice.", "timestamp": 0,
            "toolsAdded": [{"name": "bash", "description": "Run.", "parameters": {"type": "object"}}]}),
        user("hi"),
    ];
    let built = build(
        &call(model(), messages, json!({"apiKey": "sk-ant-oat01-x"})),
        false,
    )
    .unwrap();
    assert!(built.oauth);
    assert_eq!(
        header(&built, "authorization"),
        Some("Bearer sk-ant-oat01-x")
    );
    assert_eq!(header(&built, "x-api-key"), None);
    assert_eq!(header(&built, "x-app"), Some("cli"));
    assert_eq!(
        header(&built, "anthropic-beta"),
        Some("claude-code-20250219,oauth-2025-04-20")
    );
    let body = body(&built);
    assert_eq!(body["tools"][0]["name"], "Bash");
    assert_eq!(
        body["system"][0]["text"],
        "You are Claude Code, Anthropic's official CLI for Claude."
    );
    assert_eq!(body["system"][1]["text"], "Be nice.");
    assert_eq!(request::from_claude_code_name("Bash", &built.tools), "bash");
}

#[test]
fn headers_merge_case_insensitively_and_null_removes() {
    let mut model = model();
    model["headers"] = json!({"X-Test-A": "model", "x-test-b": "model"});
    let options = json!({"apiKey": "k", "headers": {"x-test-a": "option", "X-TEST-B": null,
        "Anthropic-Beta": "one, two ,one"}});
    let built = build(&call(model, vec![user("hi")], options), false).unwrap();
    assert_eq!(header(&built, "x-test-a"), Some("option"));
    assert_eq!(header(&built, "x-test-b"), None);
    // A configured beta header replaces the computed list (deduplicated).
    assert_eq!(header(&built, "anthropic-beta"), Some("one,two"));
    assert_eq!(header(&built, "x-api-key"), Some("k"));
}

#[test]
fn thinking_budget_is_capped_to_leave_answer_room() {
    let mut model = model();
    model["maxTokens"] = json!(8000);
    let options = json!({"apiKey": "k", "reasoning": "xhigh", "maxTokens": 3000,
        "temperature": 0.5, "thinkingBudgets": {"high": 7500}});
    let body = body(&build(&call(model, vec![user("hi")], options), false).unwrap());
    // min(3000 + 7500, 8000) = 8000; budget min(7500, 8000 - 1024) = 6976.
    assert_eq!(body["max_tokens"], json!(8000));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 6976, "display": "summarized"})
    );
    assert!(body.get("temperature").is_none());
}

#[test]
fn cache_retention_none_sends_no_cache_control() {
    let messages = vec![
        json!({"role": "system", "content": "S", "timestamp": 0}),
        user("hi"),
    ];
    let options = json!({"apiKey": "k", "cacheRetention": "none"});
    let text = build(&call(model(), messages, options), false)
        .unwrap()
        .request
        .body;
    assert!(!text.contains("cache_control"), "{text}");
    assert!(text.contains(r#""content":"hi""#), "{text}");
}

#[test]
fn tool_call_ids_are_normalized_for_anthropic() {
    let messages = vec![
        user("hi"),
        json!({"role": "assistant", "api": "openai-completions", "provider": "openai", "model": "gpt",
            "stopReason": "toolUse", "timestamp": 2,
            "content": [{"type": "toolCall", "id": "call|é.x", "name": "t", "arguments": {"a": 1}}]}),
        json!({"role": "toolResult", "toolCallId": "call|é.x", "toolName": "t",
            "content": [{"type": "text", "text": "r"}], "isError": false, "timestamp": 3}),
    ];
    let body = body(&build(&call(model(), messages, json!({"apiKey": "k"})), false).unwrap());
    assert_eq!(body["messages"][1]["content"][0]["id"], "call___x");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call___x");
}

/// Feeds `body` to a reader the way `run` does, one byte per read, and returns the events'
/// types and the final message.
fn read(body: &str) -> (Vec<String>, Json) {
    read_in_pieces(body, 1)
}

/// [`read`] with reads of `size` bytes.
fn read_in_pieces(body: &str, size: usize) -> (Vec<String>, Json) {
    let mut events = read_events(body, size, true);
    let message = events.pop().unwrap();
    let kinds = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("start").to_string());
    (kinds.collect(), message)
}

/// What the receiver got from a reader fed `body` in reads of `size` bytes (views on or off).
fn read_events(body: &str, size: usize, views: bool) -> Vec<Json> {
    let c = call(model(), vec![user("hi")], json!({"apiKey": "k"}));
    read_body_with(&c, body.as_bytes(), size, views)
}

fn sse(name: &str, data: Json) -> String {
    format!("event: {name}\ndata: {}\n\n", to_string(&data))
}

fn message_start() -> String {
    sse(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

#[test]
fn signature_pieces_join_without_events_and_redacted_thinking_is_marked() {
    let body = [
        message_start(),
        sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "RED"}}),
        ),
        sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "thinking_delta", "thinking": "hm"}}),
        ),
        sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "signature_delta", "signature": "AB"}}),
        ),
        sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "signature_delta", "signature": "CD"}}),
        ),
        sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        sse(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
            "usage": {"output_tokens": 7, "output_tokens_details": {"thinking_tokens": 3}}}),
        ),
        sse("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    let (kinds, message) = read(&body);
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking_end",
            "thinking_start",
            "thinking_delta",
            "thinking_end"
        ]
    );
    assert_eq!(message["stopReason"], "length");
    assert_eq!(
        message["content"],
        json!([
            {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "RED", "redacted": true},
            {"type": "thinking", "thinking": "hm", "thinkingSignature": "ABCD"}
        ])
    );
    assert_eq!(message["usage"]["reasoning"], json!(3));
    assert_eq!(message["usage"]["totalTokens"], json!(17));
}

#[test]
fn stop_reasons_map_to_errors_and_unknown_ones_fail_at_once() {
    let delta = |reason: &str, details: Json| {
        sse(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_details": details}}),
        )
    };
    let stop = sse("message_stop", json!({"type": "message_stop"}));
    let (_, refused) =
        read(&[message_start(), delta("refusal", Json::Null), stop.clone()].concat());
    assert_eq!(refused["stopReason"], "error");
    assert_eq!(
        refused["errorMessage"],
        "The model refused to complete the request"
    );
    assert_eq!(refused["rawStopReason"], "refusal");
    let (_, unknown) = read(&[message_start(), delta("odd", Json::Null), stop].concat());
    assert_eq!(unknown["errorMessage"], "Unhandled stop reason: odd");
}

#[test]
fn stream_end_checks_run_in_pi_ai_order() {
    let (_, cut) = read(&message_start());
    assert_eq!(
        cut["errorMessage"],
        "Anthropic stream ended before message_stop"
    );
    let (kinds, empty) = read(": only a comment\n\nevent: ping\ndata: {}\n\n");
    assert_eq!(kinds, ["start"]);
    assert_eq!(
        empty["errorMessage"],
        "Anthropic stream ended without a stop reason"
    );
    let (_, failed) = read(&[message_start(), "event: error\ndata: raw text\n\n".into()].concat());
    assert_eq!(failed["errorMessage"], "raw text");
}

#[test]
fn openrouter_reported_cost_needs_complete_accounting() {
    assert_eq!(
        openrouter_total(&json!({"cost": 0.5, "is_byok": false})),
        Some(0.5)
    );
    assert_eq!(
        openrouter_total(&json!({"cost": 0.5, "is_byok": true,
            "cost_details": {"upstream_inference_cost": null,
                "upstream_inference_prompt_cost": 0.25, "upstream_inference_completions_cost": 0.25}})),
        Some(1.0)
    );
    assert_eq!(
        openrouter_total(&json!({"cost": 0.5, "is_byok": true, "cost_details": {}})),
        None
    );
    assert_eq!(
        openrouter_total(&json!({"cost": -1, "is_byok": false})),
        None
    );
}

/// A loopback server answering each request with the next SSE body; returns its base URL and
/// the request bodies it received.
fn serve(
    runtime: &tokio::runtime::Runtime,
    bodies: Vec<String>,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Json>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = received.clone();
    runtime.spawn(async move {
        for body in bodies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            // Headers, then `content-length` bytes of body.
            let body_start = loop {
                let n = socket.read(&mut buffer).await.unwrap();
                request.extend_from_slice(&buffer[..n]);
                if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&request[..body_start]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while request.len() < body_start + length {
                let n = socket.read(&mut buffer).await.unwrap();
                request.extend_from_slice(&buffer[..n]);
            }
            let text = String::from_utf8_lossy(&request[body_start..]).into_owned();
            seen.lock().unwrap().push(crate::json::parse(&text).unwrap());
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    (url, received)
}

/// One `streamSimple` call through `start`; the final message.
fn stream_once(runtime: &tokio::runtime::Runtime, call: Call) -> Json {
    let (sender, mut receiver) = channel(&call.model);
    start(call, &sender).unwrap();
    drop(sender);
    runtime.block_on(async {
        loop {
            if let StreamOutput::Final { message, .. } = receiver.next().await {
                return message;
            }
        }
    })
}

fn answer(id: &str, text: &str) -> String {
    [
        sse(
            "message_start",
            json!({"type": "message_start", "message": {"id": id,
            "model": "claude-sonnet-4-5", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}}),
        ),
        sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        sse(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ),
        sse("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

#[test]
fn a_session_continues_its_thread_with_only_the_new_messages() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (url, received) = serve(&runtime, vec![answer("msg_A", "yo"), answer("msg_B", "ok")]);
    let mut model = model();
    model["baseUrl"] = url.into();
    model["compat"] = json!({"supportsMessageThreads": true});
    let options = json!({"apiKey": "k", "sessionId": "unit-thread-session"});
    let system = json!({"role": "system", "content": "S", "timestamp": 0});
    let first = vec![system.clone(), user("hi")];
    let reply = stream_once(&runtime, call(model.clone(), first, options.clone()));
    assert_eq!(reply["stopReason"], "stop", "{reply}");
    let second = vec![system, user("hi"), reply, user("more")];
    let done = stream_once(&runtime, call(model, second, options));
    assert_eq!(done["stopReason"], "stop", "{done}");

    let bodies = received.lock().unwrap().clone();
    assert_eq!(bodies[0]["thread"], json!({"type": "create"}));
    assert_eq!(
        bodies[1]["thread"],
        json!({"type": "continue", "previous_message_id": "msg_A"})
    );
    // Only the new user turn; system and tools stay with the thread.
    assert_eq!(
        bodies[1]["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "more",
            "cache_control": {"type": "ephemeral"}}]}])
    );
    assert!(bodies[1].get("system").is_none());
}

#[test]
fn a_crlf_cut_between_reads_ends_the_line_as_in_pi_ai() {
    let c = call(model(), vec![user("hi")], json!({"apiKey": "k"}));
    let (sender, _receiver) = channel(&c.model);
    let mut out = Output::new(sender, &c.model);
    out.start().unwrap();
    let mut reader = Reader::new(&c, false, Vec::new());
    let mut parser = SseParser::split_crlf_across_reads();
    // The `\n` of the first CRLF arrives with the next read: pi-ai sees an empty line there, so
    // `message_start` is dispatched without data.
    let mut events = parser.feed(b"event: message_start\r");
    events.extend(parser.feed(b"\ndata: {\"type\":\"message_start\"}\r\n\r\n"));
    let failure = events
        .iter()
        .map(|event| reader.handle(event, &mut out))
        .find_map(|result| match result {
            Err(Stop::Fail(message)) => Some(message),
            _ => None,
        });
    assert_eq!(
        failure.as_deref(),
        Some("Could not parse Anthropic SSE event message_start: Unexpected end of JSON input; data=; raw=event: message_start")
    );
}

fn tool_use(index: usize, input: &[String]) -> String {
    let mut events = sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("toolu_{index}"), "name": "read", "input": {}}}),
    );
    for piece in input {
        events += &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    events
        + &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
}

#[test]
fn tool_calls_past_the_cap_fail_the_stream() {
    use crate::providers::output::MAX_TOOL_CALLS;
    let blocks: String = (0..=MAX_TOOL_CALLS)
        .map(|i| tool_use(i, &["{}".to_string()]))
        .collect();
    let (_, message) = read_in_pieces(&(message_start() + &blocks), 4096);
    assert_eq!(message["stopReason"], "error");
    assert_eq!(
        message["errorMessage"],
        "The model sent more than 1000 tool calls in one response (limit for tool calls per response)."
    );
    assert_eq!(
        message["content"].as_array().map(Vec::len),
        Some(MAX_TOOL_CALLS)
    );
}

#[test]
fn arguments_past_the_cap_fail_the_stream() {
    use crate::providers::output::MAX_TOOL_CALL_ARGUMENT_BYTES;
    let piece = "x".repeat(512 << 10);
    let pieces = vec![piece; MAX_TOOL_CALL_ARGUMENT_BYTES / (512 << 10) + 1];
    let (_, message) = read_in_pieces(&(message_start() + &tool_use(0, &pieces)), 1 << 16);
    assert_eq!(message["stopReason"], "error");
    assert_eq!(
        message["errorMessage"],
        "The model sent more than 8388608 bytes of arguments for one tool call (limit for one tool call's arguments)."
    );
}

#[test]
fn deltas_read_through_views_give_what_the_general_path_gives() {
    let start = |index: usize, block: Json| {
        sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    };
    let delta = |raw: &str| format!("event: content_block_delta\ndata: {raw}\n\n");
    let opening = [
        message_start(),
        start(0, json!({"type": "text", "text": ""})),
        start(
            1,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        start(
            2,
            json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}),
        ),
    ]
    .concat();
    let deltas = [
        // Usual: each kind into its block, escapes, a repeated key, spaces.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \u00e9\n"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"AB"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
        r#" { "type" : "content_block_delta" , "index" : 0 , "delta" : { "type" : "text_delta" , "text" : "a" , "text" : "b" } } "#,
        // Ignored: a kind that does not match its block, a block not open.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}"#,
        r#"{"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"x"}}"#,
        // Unusual: the general path decides.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#,
        r#"{"type":"content_block_delta","index":0.0,"delta":{"type":"text_delta","text":"f"}}"#,
        r#"{"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":"s"}}"#,
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"u"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":["text_delta"]}"#,
        r#"{"type":"content_block_delta","index":0}"#,
        r#"{"type":"content_block_delta","index":0,"delta":null}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"text":"t"}}"#,
        // Near the fixed form the view reads without a scan: the general path or the scan.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} "#,
        r#"{"type":"content_block_delta","index":00,"delta":{"type":"text_delta","text":"z"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"t	ab"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"q\"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"k"},"x":1}"#,
        r#"{"type":"content_block_delta","index":12,"delta":{"type":"thinking_delta","thinking":"n"}}"#,
        // Malformed JSON: pi-ai's repair, else its parse failure.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"r"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"r"}}}"#,
    ];
    let closing = [
        sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        sse(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ),
        sse("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    let compare = |picked: &[&str]| {
        let body =
            opening.clone() + &picked.iter().map(|d| delta(d)).collect::<String>() + &closing;
        let (views, general) = (
            read_events(&body, 1 << 20, true),
            read_events(&body, 1 << 20, false),
        );
        assert_eq!(views, general, "{picked:?}");
    };
    for first in &deltas {
        for second in &deltas {
            compare(&[first, second]);
        }
    }
    compare(&deltas);
}

/// A long answer the server sends at once is not decoded far ahead of the run: the provider
/// lets the run's task take what it pushed once the run is 128 items behind (both tasks on
/// libagent's runtime thread, as in an agent). Decoded as fast as it was read, 3 500 of the
/// 5 000 deltas were queued at once.
#[test]
fn a_long_answer_sent_at_once_is_not_decoded_far_ahead_of_the_run() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let deltas: String = (0..5000)
        .map(|n| {
            sse(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": format!("delta {n:07} ")}}),
            )
        })
        .collect();
    let body = answer("msg_A", "first ").replacen(
        "event: content_block_stop",
        &format!("{deltas}event: content_block_stop"),
        1,
    );
    let (url, _) = serve(&runtime, vec![body]);
    let mut model = model();
    model["baseUrl"] = url.into();
    let c = call(model, vec![user("hi")], json!({"apiKey": "k"}));
    let (sender, mut receiver) = channel(&c.model);
    let watch = sender.clone();
    start(c, &sender).unwrap();
    drop(sender);
    let (done, most_queued) = std::sync::mpsc::channel();
    crate::runtime::spawn(async move {
        let mut most = 0;
        loop {
            most = most.max(watch.backlog());
            if let StreamOutput::Final { message, .. } = receiver.next().await {
                let _ = done.send((most, message));
                return;
            }
        }
    });
    let (most, message) = most_queued
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap();
    assert_eq!(message["stopReason"], "stop", "{message}");
    let text = message["content"][0]["text"].as_str().unwrap();
    assert!(
        text.ends_with("delta 0004999 "),
        "{}",
        &text[text.len() - 40..]
    );
    assert!(most <= 256, "{most} events were queued at once");
}

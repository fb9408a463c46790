//! The built-in providers against hostile model servers on loopback: each misbehaviour ends the
//! run with its own text, within the configured limits, without unbounded reading, without the
//! key reaching another host, and without stalling other agents.
//!
//! Limits are small (idleTimeoutMs 300 and the like) so every case ends quickly; the only wall
//! clock is a generous watchdog per run that turns a hang into a failure.
#![cfg(feature = "providers")]

#[path = "providers/support.rs"]
mod support;

use support::common;
use support::loopback::*;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent::agent::{Agent, AgentOptions};
use agent::json::{json, Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_server_ends_at_the_idle_timeout() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        hold(socket).await;
    })
    .await;
    let text = error_of(openai(server.addr), json!({"idleTimeoutMs": 300})).await;
    assert_eq!(text, "No data from the server for 300 ms (idleTimeoutMs).");
}

#[tokio::test(flavor = "multi_thread")]
async fn headers_then_silence_ends_at_the_idle_timeout() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        socket.write_all(SSE_HEAD.as_bytes()).await.unwrap();
        socket.write_all(b": hello\n\n").await.unwrap();
        hold(socket).await;
    })
    .await;
    let text = error_of(openai(server.addr), json!({"idleTimeoutMs": 300})).await;
    assert_eq!(text, "No data from the server for 300 ms (idleTimeoutMs).");
}

#[tokio::test(flavor = "multi_thread")]
async fn data_then_silence_ends_at_the_idle_timeout_counted_from_the_last_data() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        socket.write_all(SSE_HEAD.as_bytes()).await.unwrap();
        // A byte every 30 ms for 2.5 idle periods (the idle timer fires and moves on; a margin
        // of 20 gaps for a loaded machine), then nothing.
        for _ in 0..50 {
            socket.write_all(b":").await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        hold(socket).await;
    })
    .await;
    let started = std::time::Instant::now();
    let text = error_of(openai(server.addr), json!({"idleTimeoutMs": 600})).await;
    assert_eq!(text, "No data from the server for 600 ms (idleTimeoutMs).");
    // 49 gaps of at least 30 ms, then the 600 ms of silence.
    assert!(
        started.elapsed() >= Duration::from_millis(1470 + 600),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trickling_server_ends_at_the_total_timeout() {
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    let server = serve("127.0.0.1", move |mut socket| {
        let count = count.clone();
        async move {
            read_request(&mut socket).await;
            socket.write_all(SSE_HEAD.as_bytes()).await.unwrap();
            // One comment byte every 50 ms: never idle for 1500 ms (a margin of 30 gaps, which
            // holds on a loaded machine), never done.
            while socket.write_all(b":").await.is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    })
    .await;
    let text = error_of(
        openai(server.addr),
        json!({"idleTimeoutMs": 1500, "timeoutMs": 4000}),
    )
    .await;
    assert_eq!(text, "Request timed out after 4000 ms (timeoutMs).");
    // The bytes did keep coming past more than one idle period (1500 ms is 30 bytes).
    assert!(written.load(Ordering::SeqCst) > 30);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_tls_handshake_ends_at_the_connect_timeout() {
    let server = serve("127.0.0.1", hold).await;
    let base = format!("https://{}/v1", server.addr);
    let text = error_of(
        model(&base, "openai-completions"),
        json!({"connectTimeoutMs": 300}),
    )
    .await;
    assert_eq!(
        text,
        format!(
            "Could not connect to {} within 300 ms (connectTimeoutMs).",
            server.addr
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_http_port_addressed_with_https_names_tls() {
    let server = serve("127.0.0.1", |mut socket| async move {
        let mut buf = [0u8; 1024];
        let _ = socket.read(&mut buf).await;
        let _ = socket
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await;
    })
    .await;
    let base = format!("https://{}/v1", server.addr);
    let text = error_of(model(&base, "openai-completions"), json!({})).await;
    assert_eq!(
        text,
        format!(
            "TLS handshake with {} failed: the server does not speak TLS (is it a plain-HTTP port? Then use http://).",
            server.addr
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_host_names_dns() {
    // `.invalid` never resolves (RFC 6761); on a machine without DNS the connect timeout bounds it.
    let text = error_of(
        model("http://nonexistent.invalid/v1", "openai-completions"),
        json!({"connectTimeoutMs": 5000}),
    )
    .await;
    assert!(
        text.starts_with("Could not resolve the host name nonexistent.invalid (DNS lookup failed")
            || text
                == "Could not connect to nonexistent.invalid:80 within 5000 ms (connectTimeoutMs).",
        "{text}"
    );
}

/// Writes `head`, then 64 KB pieces of `byte` until the client goes away; counts the bytes.
async fn endless(mut socket: TcpStream, head: &'static str, byte: u8, written: Arc<AtomicUsize>) {
    read_request(&mut socket).await;
    socket.write_all(head.as_bytes()).await.unwrap();
    let piece = vec![byte; 64 * 1024];
    while socket.write_all(&piece).await.is_ok() {
        if written.fetch_add(piece.len(), Ordering::SeqCst) > (1 << 30) {
            break;
        }
    }
}

/// Far above what the client may read (its limits are 1–2 MiB) plus socket buffers, far below
/// what an unbounded reader takes in before the watchdog.
const READ_BOUND: usize = 32 << 20;

/// A server that sends `head` and then one endless line: the run fails at the line limit, having
/// read a bounded amount.
async fn assert_an_endless_line_fails(head: &'static str, model: fn(SocketAddr) -> Json) {
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    let server = serve("127.0.0.1", move |socket| {
        endless(socket, head, b'a', count.clone())
    })
    .await;
    let text = error_of(model(server.addr), json!({})).await;
    assert_eq!(
        text,
        "The server sent an event-stream line longer than 1048576 bytes (limit for one SSE line)."
    );
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_sse_line_fails_at_the_line_limit() {
    assert_an_endless_line_fails(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: ",
        openai,
    )
    .await;
}

fn gemini(addr: SocketAddr) -> Json {
    model(&format!("http://{addr}/v1beta"), "google-generative-ai")
}

/// A Gemini stream chunk with one text part.
fn gemini_text(text: &str) -> String {
    format!(
        "data: {}\r\n\r\n",
        json!({"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}]})
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_an_endless_line_fails_at_the_line_limit() {
    assert_an_endless_line_fails(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: ",
        gemini,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_an_endless_event_of_short_lines_fails_at_the_event_limit() {
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    let server = serve("127.0.0.1", move |socket| {
        endless_lines(
            socket,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\n",
            count.clone(),
        )
    })
    .await;
    let text = error_of(gemini(server.addr), json!({})).await;
    assert_eq!(
        text,
        "The server sent an event larger than 2097152 bytes (limit for one SSE event)."
    );
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

/// Writes `head`, then the line `x\n` over and over until the client goes away (no blank line:
/// one endless event); counts the bytes.
async fn endless_lines(mut socket: TcpStream, head: &'static str, written: Arc<AtomicUsize>) {
    read_request(&mut socket).await;
    socket.write_all(head.as_bytes()).await.unwrap();
    let piece = b"x\n".repeat(32 * 1024);
    while socket.write_all(&piece).await.is_ok() {
        if written.fetch_add(piece.len(), Ordering::SeqCst) > (1 << 30) {
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_a_malformed_event_ends_the_run_keeping_the_text() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let body = format!(
            "{SSE_HEAD}{}data: {{\"candidates\": [}}\n\n",
            gemini_text("Hel")
        );
        socket.write_all(body.as_bytes()).await.unwrap();
        hold(socket).await;
    })
    .await;
    let last = run(&agent(gemini(server.addr), json!({}))).await;
    assert_eq!(last["stopReason"], "error", "{last}");
    assert_eq!(last["content"], json!([{"type": "text", "text": "Hel"}]));
    let text = last["errorMessage"].as_str().unwrap();
    assert!(
        text.starts_with("The server sent a stream event that is not valid JSON ("),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_a_dropped_connection_ends_the_run_keeping_the_text() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        // No content-length and no chunked end: closing the socket cuts the body short.
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let event = gemini_text("Hello");
        let body = format!("{head}{:x}\r\n{event}\r\n", event.len());
        socket.write_all(body.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    })
    .await;
    let last = run(&agent(gemini(server.addr), json!({}))).await;
    assert_eq!(last["stopReason"], "error", "{last}");
    assert_eq!(last["content"], json!([{"type": "text", "text": "Hello"}]));
    assert_eq!(
        last["errorMessage"],
        "terminated: other side closed (UND_ERR_SOCKET)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_a_flood_of_function_calls_stops_at_the_tool_call_cap() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let call = json!({"functionCall": {"name": "t", "args": {}}});
        let parts = Json::Array(vec![call; 1001]);
        let chunk = json!({"candidates": [{"content": {"parts": parts}, "index": 0}]});
        let body = format!("{SSE_HEAD}data: {chunk}\n\n");
        let _ = socket.write_all(body.as_bytes()).await;
        hold(socket).await;
    })
    .await;
    let last = run(&agent(gemini(server.addr), json!({}))).await;
    assert_eq!(
        last["errorMessage"],
        "The model sent more than 1000 tool calls in one response (limit for tool calls per response)."
    );
    // Fallback ids (no wire ids) are distinct: `t_1` … `t_1000`.
    let content = last["content"].as_array().unwrap();
    assert_eq!(content.len(), 1000);
    assert_eq!(content[999]["id"], "t_1000");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_error_body_is_cut_and_not_read_further() {
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    let server = serve("127.0.0.1", move |socket| {
        endless(
            socket,
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\r\n",
            b'e',
            count.clone(),
        )
    })
    .await;
    let text = error_of(openai(server.addr), json!({})).await;
    assert!(text.starts_with("503 eeee"), "{}", &text[..40]);
    assert!(
        text.ends_with("... [errorMessage cut at 16384 bytes]"),
        "{}",
        &text[text.len() - 60..]
    );
    assert!(text.len() < 16384 + 100);
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2xx_that_is_not_an_event_stream_fails_at_once() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n\r\n<html>";
        socket.write_all(head.as_bytes()).await.unwrap();
        hold(socket).await;
    })
    .await;
    let text = error_of(openai(server.addr), json!({})).await;
    assert_eq!(
        text,
        "The server answered with content type \"text/html; charset=utf-8\" instead of an event stream (text/event-stream)."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_host_is_refused_and_the_key_stays_home() {
    let target = serve("127.0.0.2", |mut socket| async move {
        read_request(&mut socket).await;
    })
    .await;
    let location = format!("http://{}/v1/messages?beta=true", target.addr);
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    let origin = serve("127.0.0.1", move |mut socket| {
        let location = location.clone();
        let seen = seen.clone();
        async move {
            let head = read_request(&mut socket).await;
            seen.lock().unwrap().push(head);
            let head = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
            );
            let _ = socket.write_all(head.as_bytes()).await;
            hold(socket).await;
        }
    })
    .await;
    let mut anthropic = model(&format!("http://{}", origin.addr), "anthropic-messages");
    anthropic["headers"] = json!({"x-custom-auth": "custom-secret"});
    let text = error_of(anthropic, json!({"maxRetries": 2})).await;
    assert_eq!(
        text,
        format!(
            "The server redirected the request (307 to http://{}/v1/messages?beta=true); provider requests do not follow redirects. Set the model's baseUrl to the final address.",
            target.addr
        )
    );
    // The configured host got the key; the redirect target got nothing at all (not retried).
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1);
    assert!(heads[0].contains(KEY));
    assert_eq!(target.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_is_honoured_with_max_retries() {
    let requests = Arc::new(AtomicUsize::new(0));
    let count = requests.clone();
    let server = serve("127.0.0.1", move |mut socket| {
        let count = count.clone();
        async move {
            loop {
                read_request(&mut socket).await;
                let reply = if count.fetch_add(1, Ordering::SeqCst) == 0 {
                    "HTTP/1.1 429 Too Many Requests\r\nretry-after: 0.05\r\ncontent-length: 4\r\n\r\nslow"
                        .to_string()
                } else {
                    answer()
                };
                if socket.write_all(reply.as_bytes()).await.is_err() || !reply.starts_with("HTTP/1.1 429") {
                    break;
                }
            }
        }
    })
    .await;
    // Without maxRetries the 429 is the answer (pi-ai's default: no retries).
    let text = error_of(openai(server.addr), json!({})).await;
    assert_eq!(text, "429 slow");
    requests.store(0, Ordering::SeqCst);
    let last = run(&agent(openai(server.addr), json!({"maxRetries": 1}))).await;
    assert_eq!(last["stopReason"], "stop", "{last}");
    assert_eq!(last["content"][0]["text"], "ok");
    assert_eq!(requests.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_retry_after_is_bounded_even_without_a_cap() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let reply = "HTTP/1.1 503 Service Unavailable\r\nretry-after: 1000000000\r\ncontent-length: 4\r\n\r\nbusy";
        let _ = socket.write_all(reply.as_bytes()).await;
        hold(socket).await;
    })
    .await;
    let text = error_of(
        openai(server.addr),
        json!({"maxRetries": 3, "maxRetryDelayMs": 0}),
    )
    .await;
    assert_eq!(
        text,
        "Server requested 1000000000s retry delay (max: 600s). 503 busy"
    );
}

/// Starts a prompt on `agent` and returns once `server` saw a connection.
fn start_prompt(agent: &Agent) {
    agent
        .start_prompt(
            agent::agent::PromptInput::Text {
                text: "hi".into(),
                images: Vec::new(),
            },
            None,
        )
        .unwrap();
}

async fn start_and_wait_for(agent: &Agent, server: &Server) {
    start_prompt(agent);
    tokio::time::timeout(WATCHDOG, async {
        while server.connections.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the request never arrived");
}

/// A server answering every request with `head` (status line and headers, without the blank
/// line or a length) and a 1 MB body, reporting on the channel the number of each reply once the
/// client has dropped its connection. The client reads only the first 64 KB of an error body,
/// then drops the response and, with no await in between, decides to retry and begins the pause
/// (whose first check is the abort signal). So the server seeing the connection dropped means an
/// abort from then on lands in the pause (or after it, which the request count would show).
async fn serve_replies(
    head: &'static str,
) -> (Server, Arc<AtomicUsize>, mpsc::UnboundedReceiver<usize>) {
    let (read_tx, read_rx) = mpsc::unbounded_channel();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = requests.clone();
    let server = serve("127.0.0.1", move |mut socket| {
        let (read_tx, count) = (read_tx.clone(), count.clone());
        async move {
            // The client may open a connection it never uses: only requests count.
            if read_request(&mut socket).await.is_empty() {
                return;
            }
            let number = count.fetch_add(1, Ordering::SeqCst) + 1;
            let body = "x".repeat(1 << 20);
            let reply = format!("{head}content-length: {}\r\n\r\n{body}", body.len());
            // Fails once the client drops the connection (it stops reading at 64 KB).
            let _ = socket.write_all(reply.as_bytes()).await;
            hold(socket).await;
            let _ = read_tx.send(number);
        }
    })
    .await;
    (server, requests, read_rx)
}

/// The number of the next reply whose connection the client dropped (under the watchdog).
async fn next_reply_read(replies_read: &mut mpsc::UnboundedReceiver<usize>) -> usize {
    tokio::time::timeout(WATCHDOG, replies_read.recv())
        .await
        .expect("the client never dropped the reply's connection")
        .unwrap()
}

/// Aborts `agent`'s run and checks that it ends as aborted.
async fn abort_ends(agent: &Agent) {
    agent.abort();
    tokio::time::timeout(WATCHDOG, agent.wait_for_idle())
        .await
        .expect("abort did not end the run");
    let last = agent.messages().last().cloned().unwrap();
    assert_eq!(last["stopReason"], "aborted", "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bystander_keeps_running_and_abort_ends_a_stalled_run() {
    let silent = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        hold(socket).await;
    })
    .await;
    let hostile = agent(openai(silent.addr), json!({}));
    start_and_wait_for(&hostile, &silent).await;
    // While the hostile run waits (default limits: minutes), another agent completes a run.
    let healthy = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let _ = socket.write_all(answer().as_bytes()).await;
    })
    .await;
    let events = Arc::new(AtomicUsize::new(0));
    let bystander = agent(openai(healthy.addr), json!({}));
    let count = events.clone();
    bystander.subscribe(Arc::new(move |_event, _signal| {
        count.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }));
    let last = run(&bystander).await;
    assert_eq!(last["content"][0]["text"], "ok");
    assert!(events.load(Ordering::SeqCst) >= 5);
    assert!(
        hostile.active_run().is_some(),
        "the hostile run is still waiting"
    );
    abort_ends(&hostile).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_ends_a_run_while_connecting_and_while_waiting_to_retry() {
    // A TLS handshake that never completes, without a connect timeout.
    let stalled = serve("127.0.0.1", hold).await;
    let tls = agent(
        model(
            &format!("https://{}/v1", stalled.addr),
            "openai-completions",
        ),
        json!({"connectTimeoutMs": 0}),
    );
    start_and_wait_for(&tls, &stalled).await;
    abort_ends(&tls).await;
    // A server asking for a 500 s pause before the retry. The abort comes once the client has
    // dropped the reply (so it is pausing), and must end the run long before the retry.
    let (busy, requests, mut replies_read) =
        serve_replies("HTTP/1.1 429 Too Many Requests\r\nretry-after: 500\r\n").await;
    let waiting = agent(
        openai(busy.addr),
        json!({"maxRetries": 1, "maxRetryDelayMs": 0}),
    );
    start_prompt(&waiting);
    assert_eq!(next_reply_read(&mut replies_read).await, 1);
    let aborted_at = Instant::now();
    abort_ends(&waiting).await;
    assert!(
        aborted_at.elapsed() < Duration::from_secs(20),
        "the abort waited for the pause"
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "the aborted pause still retried"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_abort_before_the_response_and_while_backing_off_is_request_aborted() {
    // No answer at all: the abort comes while the response head is awaited.
    let silent = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        hold(socket).await;
    })
    .await;
    let waiting = agent(gemini(silent.addr), json!({}));
    start_and_wait_for(&waiting, &silent).await;
    abort_ends(&waiting).await;
    let last = waiting.messages().last().cloned().unwrap();
    assert_eq!(last["errorMessage"], "Request aborted");
    // A 503 retried after pi-ai's backoff (Gemini ignores retry-after: 0.5 s, 1 s, 2 s, less up
    // to a quarter). The abort comes once the client has dropped the third reply, so it is in the
    // third pause (at least 1.5 s): the run ends aborted with the same text and no fourth request.
    let (busy, requests, mut replies_read) =
        serve_replies("HTTP/1.1 503 Service Unavailable\r\nretry-after: 500\r\n").await;
    let backing_off = agent(gemini(busy.addr), json!({"maxRetries": 5}));
    start_prompt(&backing_off);
    for expected in 1..=3 {
        assert_eq!(next_reply_read(&mut replies_read).await, expected);
    }
    let aborted_at = Instant::now();
    abort_ends(&backing_off).await;
    // The abort ends the pause itself, not the check after it (the pause lasts 1.5 s or more;
    // the abort takes milliseconds).
    assert!(
        aborted_at.elapsed() < Duration::from_millis(1500),
        "the abort waited for the pause ({:?})",
        aborted_at.elapsed()
    );
    let last = backing_off.messages().last().cloned().unwrap();
    assert_eq!(last["errorMessage"], "Request aborted");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        3,
        "the aborted pause still retried"
    );
}

/// The error of a run whose stream function is the providers' `stream_simple` behind a host
/// stream function (so the agent does not check the model when it is set).
async fn stream_time_error(model: Json) -> String {
    let mut options = AgentOptions::default();
    options.initial_state.model = Some(model);
    options.stream_fn = Some(Arc::new(agent::providers::stream_simple));
    let last = run(&Agent::new(options).unwrap()).await;
    last["errorMessage"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn models_are_checked_when_set_and_when_streamed() {
    let mut no_id = model("http://127.0.0.1:9/v1", "openai-completions");
    no_id.as_object_mut().unwrap().shift_remove("id");
    let no_id_text =
        "The model has no \"id\" (the built-in providers need the model name the API expects).";
    assert_eq!(stream_time_error(no_id.clone()).await, no_id_text);
    // An agent on the providers checks the model when it is given or configured.
    let mut options = AgentOptions::default();
    options.initial_state.model = Some(no_id.clone());
    options.stream_fn = Some(agent::providers::stream_fn());
    let error = Agent::new(options).err().unwrap();
    assert_eq!(error.message, no_id_text);
    let configured = agent(openai("127.0.0.1:9".parse().unwrap()), json!({}));
    let error = configured
        .configure(&json!({"model": no_id, "maxRetries": 1}))
        .unwrap_err();
    assert_eq!(error.message, no_id_text);
    assert!(!configured
        .settings()
        .stream_options()
        .contains_key("maxRetries"));
    let mut no_provider = model("http://127.0.0.1:9/v1", "openai-completions");
    no_provider["provider"] = json!("");
    assert!(stream_time_error(no_provider)
        .await
        .starts_with("The model has no \"provider\""));
    assert_eq!(
        stream_time_error(model("", "openai-completions")).await,
        "The model has no \"baseUrl\" (the built-in providers need the API's base URL, such as https://api.openai.com/v1)."
    );
    assert_eq!(
        stream_time_error(model("localhost:8080/v1", "openai-completions")).await,
        "The model's baseUrl \"localhost:8080/v1\" must be an http:// or https:// URL (got scheme \"localhost\")."
    );
    assert!(stream_time_error(model("http://", "openai-completions"))
        .await
        .starts_with("The model's baseUrl \"http://\" is not a valid URL"));
    // An api the providers do not speak is left to the run (pi-ai's text).
    let other = agent(
        model("http://127.0.0.1:9", "bedrock-converse-stream"),
        json!({}),
    );
    assert_eq!(
        run(&other).await["errorMessage"],
        "No API provider registered for api: bedrock-converse-stream"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_key_names_the_variable_and_bad_options_name_the_field() {
    let mut groq = model("http://127.0.0.1:9/v1", "openai-completions");
    groq["provider"] = json!("groq");
    let mut options = AgentOptions::default();
    options.initial_state.model = Some(groq);
    options.stream_fn = Some(agent::providers::stream_fn());
    let last = run(&Agent::new(options).unwrap()).await;
    if std::env::var_os("GROQ_API_KEY").is_none() {
        assert_eq!(
            last["errorMessage"],
            "No API key for provider: groq (set the environment variable GROQ_API_KEY or give an API key)"
        );
    }
    let error = AgentOptions::from_json(json!({"idleTimeoutMs": -5}))
        .err()
        .unwrap();
    assert_eq!(
        error.message,
        "Option \"idleTimeoutMs\" must not be negative."
    );
    // Bad transport options given straight to the stream function fail it, naming the option.
    let mut options = AgentOptions::default();
    options.initial_state.model = Some(model("http://127.0.0.1:9/v1", "openai-completions"));
    options.stream_fn = Some(Arc::new(
        |mut request: agent::host::StreamRequest, sender| {
            request.options = json!({"apiKey": "k", "timeoutMs": "soon"});
            agent::providers::stream_simple(request, sender)
        },
    ));
    let last = run(&Agent::new(options).unwrap()).await;
    assert_eq!(
        last["errorMessage"],
        "Option \"timeoutMs\" must be a non-negative number."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_names_an_unknown_ca_and_a_host_name_mismatch_and_takes_an_added_ca() {
    let server = tls_server("127.0.0.1").await;
    let https = model(&format!("https://{}/v1", server.addr), "openai-completions");
    assert_eq!(
        error_of(https.clone(), json!({})).await,
        format!(
            "TLS handshake with {} failed: its certificate is signed by an unknown authority (trust that CA with caCertificates or caCertificateFile).",
            server.addr
        )
    );
    // The CA added as a file, or as PEM text: the same server is trusted.
    let ca_file = json!({"caCertificateFile": tls_path("ca.pem")});
    let last = run(&agent(https.clone(), ca_file.clone())).await;
    assert_eq!(last["content"][0]["text"], "ok", "{last}");
    let pem = std::fs::read_to_string(tls_path("ca.pem")).unwrap();
    let last = run(&agent(https, json!({"caCertificates": pem}))).await;
    assert_eq!(last["content"][0]["text"], "ok", "{last}");
    // A trusted certificate for another name.
    let other = tls_server("127.0.0.2").await;
    let wrong_name = model(&format!("https://{}/v1", other.addr), "openai-completions");
    assert_eq!(
        error_of(wrong_name, ca_file).await,
        format!(
            "TLS handshake with {} failed: its certificate is not valid for that host name.",
            other.addr
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_response_head_is_named() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let mut head = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n");
        // 160 KB in 40 headers: over the connection's 64 KB read buffer, under the header count.
        for i in 0..40 {
            head.push_str(&format!("x-filler-{i}: {}\r\n", "f".repeat(4000)));
        }
        head.push_str("\r\n");
        let _ = socket.write_all(head.as_bytes()).await;
        hold(socket).await;
    })
    .await;
    assert_eq!(
        error_of(openai(server.addr), json!({})).await,
        format!(
            "The response head from {} is too large (more than 64 KB or 100 headers).",
            server.addr
        )
    );
}

// ---- openai-responses: the same limits on its stream parser ----------------------------------

fn responses(addr: SocketAddr) -> Json {
    model(&format!("http://{addr}/v1"), "openai-responses")
}

/// One Responses SSE event (named, as OpenAI sends them).
fn responses_event(data: Json) -> String {
    let name = data["type"].as_str().unwrap().to_string();
    format!("event: {name}\ndata: {data}\n\n")
}

/// The created event and an open message item with some text.
fn responses_text_start() -> String {
    [
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "partial"}),
    ]
    .into_iter()
    .map(responses_event)
    .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_an_endless_sse_line_fails_at_the_line_limit() {
    assert_an_endless_line_fails(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: response.output_text.delta\ndata: ",
        responses,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_a_malformed_event_fails_at_once_keeping_the_text() {
    // The connection stays open: the run must end on the malformed event, not at a timeout.
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let body = format!(
            "{SSE_HEAD}{}event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"delta\n\n",
            responses_text_start()
        );
        socket.write_all(body.as_bytes()).await.unwrap();
        hold(socket).await;
    })
    .await;
    let agent = agent(responses(server.addr), json!({"idleTimeoutMs": 20000}));
    let last = run(&agent).await;
    assert_eq!(last["stopReason"], "error", "{last}");
    assert_eq!(
        last["errorMessage"],
        "Error reading response: malformed server-sent event JSON."
    );
    assert_eq!(
        last["content"],
        json!([{"type": "text", "text": "partial"}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_a_dropped_connection_ends_with_the_text_so_far() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        // Chunked, so that closing inside the body is a cut, not the body's end.
        let events = format!(
            "{}event: response.output_text.delta\ndata: {{\"type\":\"resp",
            responses_text_start()
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let body = format!("{head}{:x}\r\n{events}\r\n", events.len());
        socket.write_all(body.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    })
    .await;
    let last = run(&agent(responses(server.addr), json!({}))).await;
    assert_eq!(last["stopReason"], "error", "{last}");
    assert_eq!(
        last["errorMessage"],
        "terminated: other side closed (UND_ERR_SOCKET)"
    );
    assert_eq!(
        last["content"],
        json!([{"type": "text", "text": "partial"}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_a_body_ending_without_a_terminal_event_is_named() {
    let server = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let body = format!("{SSE_HEAD}{}", responses_text_start());
        socket.write_all(body.as_bytes()).await.unwrap();
    })
    .await;
    let text = error_of(responses(server.addr), json!({})).await;
    assert_eq!(
        text,
        "OpenAI Responses stream ended before a terminal response event"
    );
}

/// Serves `events` after the SSE head, then closes (each event is generated on the fly, so a
/// huge stream costs the server nothing).
async fn responses_stream(events: impl Iterator<Item = String> + Send + 'static) -> Server {
    let events = Arc::new(Mutex::new(Some(events)));
    serve("127.0.0.1", move |mut socket| {
        let events = events.lock().unwrap().take();
        async move {
            read_request(&mut socket).await;
            socket.write_all(SSE_HEAD.as_bytes()).await.unwrap();
            for event in events.into_iter().flatten() {
                if socket.write_all(event.as_bytes()).await.is_err() {
                    break;
                }
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_endless_function_calls_stop_at_the_tool_call_cap() {
    let calls = (0..5000).map(|i| {
        responses_event(json!({"type": "response.output_item.added", "output_index": i,
            "item": {"id": format!("fc_{i}"), "type": "function_call", "call_id": format!("call_{i}"),
                "name": "t", "arguments": ""}}))
    });
    let server = responses_stream(calls).await;
    let text = error_of(responses(server.addr), json!({})).await;
    assert_eq!(
        text,
        "The model sent more than 1000 tool calls in one response (limit for tool calls per response)."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_endless_arguments_stop_at_the_argument_cap() {
    let piece = "a".repeat(512 * 1024);
    let opening = responses_event(
        json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "t", "arguments": ""}}),
    );
    let deltas = (0..40).map(move |_| {
        responses_event(
            json!({"type": "response.function_call_arguments.delta", "output_index": 0,
            "delta": piece.clone()}),
        )
    });
    let server = responses_stream(std::iter::once(opening).chain(deltas)).await;
    let text = error_of(responses(server.addr), json!({})).await;
    assert_eq!(
        text,
        "The model sent more than 8388608 bytes of arguments for one tool call (limit for one tool call's arguments)."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_that_cannot_be_sent_fails_at_once_without_showing_it() {
    let server = serve("127.0.0.1", |socket| async move { hold(socket).await }).await;
    let mut options = AgentOptions::from_json(json!({"maxRetries": 3})).unwrap();
    options.initial_state.model = Some(openai(server.addr));
    options.stream_fn = Some(agent::providers::stream_fn());
    let _ = options.settings.hooks.set(
        agent::agent::HookKind::GetApiKey,
        Some(common::key_hook("sk-secret\nrest")),
    );
    let started = Instant::now();
    let last = run(&Agent::new(options).unwrap()).await;
    assert_eq!(
        last["errorMessage"],
        "The request could not be built: the value of header \"authorization\" is invalid.",
        "{last}"
    );
    // Not retried (three retries would wait 3.5 s) and never sent.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}

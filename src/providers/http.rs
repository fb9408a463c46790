//! The HTTP side of a provider request: one POST with pi-ai's retry policy (pi-ai 1.6.0
//! `retryProviderRequest`, SPEC-kit README §8.7), abortable at every await, bounded in time by the
//! transport options (`transport`), and the response body read chunk by chunk within the SSE size
//! limits. Transport failures that pi-ai's fixtures pin keep the texts of its runtime (Node's
//! `fetch`); the others name their cause (`errors`).

use std::pin::Pin;
use std::time::Duration;

use futures::FutureExt;
use tokio::time::{Instant, Sleep};

use hyper::header::HeaderMap;

use super::errors;
use super::sse::SseLimits;
pub use super::transport::Transport;
use crate::host::AbortSignal;
use crate::http_client::{Body, BodyError, Client, SendError};

/// Node's text for a connection closed before the response headers.
pub const CLOSED_BEFORE_HEADERS: &str = "Connection error.: other side closed (UND_ERR_SOCKET)";
/// Node's text for a connection closed inside the response body.
pub const CLOSED_IN_BODY: &str = "terminated: other side closed (UND_ERR_SOCKET)";
/// The most bytes of a non-2xx body read (the rest is not read: the connection is dropped).
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A request ready to send.
#[derive(Clone)]
pub struct HttpRequest {
    pub url: String,
    /// Header names and values, in sending order (later duplicates already resolved).
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Timeouts, retries, extra CAs.
    pub transport: Transport,
}

/// Why no response stream exists.
#[derive(Debug)]
pub enum Failure {
    /// The signal aborted before the response arrived (or during a retry's sleep).
    Aborted,
    /// The server answered with a non-2xx status.
    Status { status: u16, body: String },
    /// Any other failure, with its final text (transport errors, a retry delay above the cap).
    Message(String),
}

/// An open response whose body is read with [`Response::next_chunk`].
pub struct Response {
    body: Body,
    /// The end of the attempt's `timeoutMs`, and its timer.
    deadline: Option<Instant>,
    total: Option<Pin<Box<Sleep>>>,
    /// Fires `idleTimeoutMs` after a read began, at the earliest: the timer is set once and, when
    /// it fires before the open read's own deadline, moved on to it (so a read costs no timer
    /// registration, only a clock read).
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    /// When the open read began.
    read_began: Instant,
    transport: Transport,
    limits: SseLimits,
    /// The wait for the signal's abort, made by the first read that has to wait and kept for
    /// the next ones: a wait made per read registered with the signal and left it again each
    /// time (a lock each way, per SSE event).
    abort_wait: Option<Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

/// What one read of the body gave.
pub enum Chunk {
    Data(bytes::Bytes),
    End,
    Failed(String),
    Aborted,
}

/// Sleeps until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

impl Response {
    /// The next piece of the body; an abort drops the connection at once. Fails past the
    /// total or idle timeout and past the SSE size limits.
    pub async fn next_chunk(&mut self, signal: &AbortSignal) -> Chunk {
        let now = Instant::now();
        self.read_began = now;
        // Body already received is taken without arming the waits below (an abort and the total
        // timeout still come first).
        if signal.is_aborted() {
            return Chunk::Aborted;
        }
        if self.deadline.is_some_and(|deadline| now >= deadline) {
            return Chunk::Failed(errors::total_timeout(&self.transport));
        }
        if let Some(chunk) = self.body.data().now_or_never() {
            return self.take(chunk);
        }
        let mut abort_wait = self.abort_wait.take().unwrap_or_else(|| {
            let signal = signal.clone();
            Box::pin(async move { signal.aborted().await })
        });
        let chunk = loop {
            tokio::select! {
                biased;
                _ = abort_wait.as_mut() => return Chunk::Aborted,
                chunk = self.body.data() => break chunk,
                _ = fired(&mut self.total) => {
                    return Chunk::Failed(errors::total_timeout(&self.transport))
                }
                _ = fired_idle(&mut self.idle) => {
                    if let Some((after, timer)) = &mut self.idle {
                        let due = self.read_began + *after;
                        if Instant::now() >= due {
                            return Chunk::Failed(errors::idle_timeout(&self.transport));
                        }
                        timer.as_mut().reset(due);
                    }
                }
            }
        };
        self.abort_wait = Some(abort_wait);
        self.take(chunk)
    }
}

impl Response {
    fn take(&mut self, chunk: Option<Result<bytes::Bytes, BodyError>>) -> Chunk {
        match chunk {
            Some(Ok(bytes)) => match self.limits.check(&bytes) {
                Ok(()) => Chunk::Data(bytes),
                Err(text) => Chunk::Failed(text),
            },
            None => Chunk::End,
            Some(Err(_)) => Chunk::Failed(CLOSED_IN_BODY.to_string()),
        }
    }
}

/// Waits for the timer, or for ever without one.
async fn fired(timer: &mut Option<Pin<Box<Sleep>>>) {
    match timer {
        Some(timer) => timer.as_mut().await,
        None => std::future::pending().await,
    }
}

/// [`fired`] for the idle timer.
async fn fired_idle(timer: &mut Option<(Duration, Pin<Box<Sleep>>)>) {
    match timer {
        Some((_, timer)) => timer.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Which failures an SDK retries and how long it waits: the OpenAI and Anthropic SDKs honour the
/// server's `x-should-retry` and `retry-after(-ms)` headers and retry connection errors; the
/// Google SDK's errors carry neither headers nor (for connection errors) a status, so pi-ai
/// retries only its retryable statuses, always with its own backoff.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub server_headers: bool,
    pub connection_errors: bool,
}

impl RetryPolicy {
    /// The OpenAI and Anthropic SDKs' policy.
    pub fn sdk() -> Self {
        RetryPolicy {
            server_headers: true,
            connection_errors: true,
        }
    }

    /// Retryable statuses only, with pi-ai's backoff (the Google SDK).
    pub fn status_only() -> Self {
        RetryPolicy {
            server_headers: false,
            connection_errors: false,
        }
    }
}

/// The head of an HTTP error response, for APIs whose error text depends on it.
#[derive(Debug, Clone, Default)]
pub struct ErrorHead {
    /// The canonical reason phrase of the status (`Service Unavailable`), empty if none.
    pub reason: String,
    pub content_type: Option<String>,
}

/// Sends `request`, retrying what pi-ai retries. `describe` renders an HTTP error the API's way
/// (used in the "retry delay above the cap" text).
pub async fn send(
    request: &HttpRequest,
    signal: &AbortSignal,
    describe: impl Fn(u16, &str) -> String,
) -> Result<Response, Failure> {
    send_with(request, signal, RetryPolicy::sdk(), describe)
        .await
        .map_err(|(failure, _)| failure)
}

/// [`send`] with an explicit retry policy; a status failure comes with its response head.
pub async fn send_with(
    request: &HttpRequest,
    signal: &AbortSignal,
    policy: RetryPolicy,
    describe: impl Fn(u16, &str) -> String,
) -> Result<Response, (Failure, Option<ErrorHead>)> {
    if signal.is_aborted() {
        return Err((Failure::Aborted, None));
    }
    let client = super::transport::client(&request.url, &request.transport)
        .map_err(|text| (Failure::Message(text), None))?;
    let mut attempt = 0;
    loop {
        if signal.is_aborted() {
            return Err((Failure::Aborted, None));
        }
        let failure = match send_once(&client, request, signal).await {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        let (retryable, delay) = match &failure {
            Attempt::Aborted => return Err((Failure::Aborted, None)),
            Attempt::Final(_) => (false, None),
            Attempt::Connection(_) => (policy.connection_errors, None),
            Attempt::Status {
                status, headers, ..
            } if policy.server_headers => (is_retryable(*status, headers), Some(headers)),
            Attempt::Status { status, .. } => (is_retryable_status(*status), None),
        };
        if attempt >= request.transport.max_retries || !retryable {
            return Err(failure.into_failure());
        }
        let delay_ms = match delay.and_then(server_delay_ms) {
            Some(ms) => {
                let cap = request.transport.retry_delay_cap_ms();
                if ms > cap {
                    let Attempt::Status { status, body, .. } = &failure else {
                        unreachable!("server delays come with a status");
                    };
                    return Err((
                        Failure::Message(format!(
                            "Server requested {}s retry delay (max: {}s). {}",
                            (ms / 1000.0).ceil(),
                            (cap / 1000.0).ceil(),
                            describe(*status, body)
                        )),
                        None,
                    ));
                }
                ms
            }
            None => {
                let exponential = (0.5 * 2f64.powi(attempt as i32)).min(8.0) * 1000.0;
                exponential * (1.0 - fastrand::f64() * 0.25)
            }
        };
        attempt += 1;
        tokio::select! {
            biased;
            _ = signal.aborted() => return Err((Failure::Aborted, None)),
            _ = tokio::time::sleep(Duration::from_micros((delay_ms.max(0.0) * 1000.0) as u64)) => {}
        }
    }
}

/// One attempt's failure, before the retry decision.
enum Attempt {
    Aborted,
    /// No response (retryable, as pi-ai retries connection errors).
    Connection(String),
    /// A response that is not retried (a redirect, a 2xx that is not an event stream).
    Final(String),
    Status {
        status: u16,
        headers: HeaderMap,
        body: String,
    },
}

impl Attempt {
    fn into_failure(self) -> (Failure, Option<ErrorHead>) {
        match self {
            Attempt::Aborted => (Failure::Aborted, None),
            Attempt::Connection(text) | Attempt::Final(text) => (Failure::Message(text), None),
            Attempt::Status {
                status,
                headers,
                body,
            } => {
                let head = ErrorHead {
                    reason: hyper::StatusCode::from_u16(status)
                        .ok()
                        .and_then(|s| s.canonical_reason())
                        .unwrap_or("")
                        .to_string(),
                    content_type: headers
                        .get(hyper::header::CONTENT_TYPE)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
                };
                (Failure::Status { status, body }, Some(head))
            }
        }
    }
}

async fn send_once(
    client: &Client,
    request: &HttpRequest,
    signal: &AbortSignal,
) -> Result<Response, Attempt> {
    let transport = &request.transport;
    let now = Instant::now();
    let deadline = transport.timeout().map(|d| now + d);
    // Until the head arrives the idle timer runs from the start (connecting included).
    let idle = transport.idle_timeout().map(|d| now + d);
    let sent = client.post(&request.url, &request.headers, request.body.clone());
    let response = tokio::select! {
        biased;
        _ = signal.aborted() => return Err(Attempt::Aborted),
        response = sent => response.map_err(|e| {
            let text = errors::describe(&e, &request.url, transport);
            // A request that cannot be made fails the same way on every attempt.
            match e {
                SendError::Build(_) => Attempt::Final(text),
                SendError::Connect(_) | SendError::Exchange(_) => Attempt::Connection(text),
            }
        })?,
        _ = until(deadline) => return Err(Attempt::Connection(errors::total_timeout(transport))),
        _ = until(idle) => return Err(Attempt::Connection(errors::idle_timeout(transport))),
    };
    let (head, mut body) = response.into_parts();
    let status = head.status.as_u16();
    if (200..300).contains(&status) {
        if let Some(text) = errors::unexpected_content_type(&head.headers) {
            return Err(Attempt::Final(text));
        }
        let now = Instant::now();
        return Ok(Response {
            body,
            deadline,
            total: deadline.map(|at| Box::pin(tokio::time::sleep_until(at))),
            idle: transport
                .idle_timeout()
                .map(|after| (after, Box::pin(tokio::time::sleep_until(now + after)))),
            read_began: now,
            transport: transport.clone(),
            limits: SseLimits::default(),
            abort_wait: None,
        });
    }
    if (300..400).contains(&status) {
        return Err(Attempt::Final(errors::redirect_refused(
            status,
            &head.headers,
        )));
    }
    let body = read_error_body(&mut body, signal, deadline, transport).await?;
    Err(Attempt::Status {
        status,
        headers: head.headers,
        body,
    })
}

/// At most [`MAX_ERROR_BODY_BYTES`] of an error body, as text (a cut body ends with a note
/// naming the limit). A body that stops arriving (idle or total timeout, a dropped connection)
/// gives what came so far.
async fn read_error_body(
    response: &mut Body,
    signal: &AbortSignal,
    deadline: Option<Instant>,
    transport: &Transport,
) -> Result<String, Attempt> {
    let mut body: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let idle = transport.idle_timeout().map(|d| Instant::now() + d);
        let chunk = tokio::select! {
            biased;
            _ = signal.aborted() => return Err(Attempt::Aborted),
            chunk = response.data() => chunk,
            _ = until(deadline) => break,
            _ = until(idle) => break,
        };
        match chunk {
            Some(Ok(bytes)) => {
                let room = MAX_ERROR_BODY_BYTES - body.len();
                body.extend_from_slice(&bytes[..bytes.len().min(room)]);
                if bytes.len() > room {
                    cut = true;
                    break;
                }
            }
            None | Some(Err(_)) => break,
        }
    }
    if !cut {
        return Ok(String::from_utf8_lossy(&body).into_owned());
    }
    // Cut at a character boundary.
    let valid = match std::str::from_utf8(&body) {
        Ok(text) => text.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => body.len(),
    };
    let mut text = String::from_utf8_lossy(&body[..valid]).into_owned();
    text.push_str(&format!(
        "... [error body cut at {MAX_ERROR_BODY_BYTES} bytes]"
    ));
    Ok(text)
}

/// `x-should-retry` decides when present; otherwise 408, 409, 429 and 5xx are retried.
fn is_retryable(status: u16, headers: &HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => true,
        Some("false") => false,
        _ => is_retryable_status(status),
    }
}

/// 408, 409, 429 and 5xx.
fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The delay the server asked for: `retry-after-ms`, else `retry-after` (seconds or a date).
fn server_delay_ms(headers: &HeaderMap) -> Option<f64> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(parse_float) {
        return Some(ms);
    }
    let after = header("retry-after")?;
    match parse_float(after) {
        Some(seconds) => Some(seconds * 1000.0),
        None => {
            let date = httpdate::parse_http_date(after).ok()?;
            let now = std::time::SystemTime::now();
            Some(match date.duration_since(now) {
                Ok(ahead) => ahead.as_secs_f64() * 1000.0,
                Err(behind) => -behind.duration().as_secs_f64() * 1000.0,
            })
        }
    }
}

/// JavaScript's `Number.parseFloat` for the forms servers send (a leading number), finite only.
fn parse_float(text: &str) -> Option<f64> {
    let text = text.trim_start();
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+') && i == 0)
                || c == 'e'
                || c == 'E')
        })
        .map_or(text.len(), |(i, _)| i);
    (0..=end)
        .rev()
        .find_map(|n| text[..n].parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn what_is_retried() {
        assert!(is_retryable(429, &headers(&[])));
        assert!(is_retryable(503, &headers(&[])));
        assert!(is_retryable(408, &headers(&[])));
        assert!(!is_retryable(400, &headers(&[])));
        assert!(!is_retryable(500, &headers(&[("x-should-retry", "false")])));
        assert!(is_retryable(400, &headers(&[("x-should-retry", "true")])));
    }

    #[test]
    fn server_delays() {
        assert_eq!(
            server_delay_ms(&headers(&[("retry-after-ms", "25.5")])),
            Some(25.5)
        );
        assert_eq!(
            server_delay_ms(&headers(&[("retry-after", "2")])),
            Some(2000.0)
        );
        // retry-after-ms wins; a non-numeric value falls through to retry-after.
        let both = headers(&[("retry-after-ms", "x"), ("retry-after", "1.5")]);
        assert_eq!(server_delay_ms(&both), Some(1500.0));
        let past = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
        assert!(server_delay_ms(&past).unwrap() < 0.0);
        assert_eq!(server_delay_ms(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(parse_float("12abc"), Some(12.0));
        assert_eq!(parse_float("abc"), None);
    }
}

//! The HTTP side of a provider request: one POST with pi-ai's retry policy (pi-ai 1.6.0
//! `retryProviderRequest`, SPEC-kit README §8.7), abortable at every await, and the response body
//! read chunk by chunk. Transport failures are reported with the texts pi-ai's runtime (Node's
//! `fetch`) produces, since those texts reach `errorMessage`.

use std::sync::OnceLock;
use std::time::Duration;

use crate::host::AbortSignal;

/// pi-ai's default cap on a server-requested retry delay.
const DEFAULT_MAX_RETRY_DELAY_MS: f64 = 60_000.0;

/// Node's text for a connection closed before the response headers.
pub const CLOSED_BEFORE_HEADERS: &str = "Connection error.: other side closed (UND_ERR_SOCKET)";
/// Node's text for a connection closed inside the response body.
pub const CLOSED_IN_BODY: &str = "terminated: other side closed (UND_ERR_SOCKET)";

/// A request ready to send.
#[derive(Clone)]
pub struct HttpRequest {
    pub url: String,
    /// Header names and values, in sending order (later duplicates already resolved).
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub max_retries: u32,
    /// `options.maxRetryDelayMs` (0 disables the cap).
    pub max_retry_delay_ms: Option<f64>,
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
    inner: reqwest::Response,
}

/// What one read of the body gave.
pub enum Chunk {
    Data(bytes::Bytes),
    End,
    Failed(String),
    Aborted,
}

impl Response {
    /// The next piece of the body; an abort drops the connection at once.
    pub async fn next_chunk(&mut self, signal: &AbortSignal) -> Chunk {
        tokio::select! {
            biased;
            _ = signal.aborted() => Chunk::Aborted,
            chunk = self.inner.chunk() => match chunk {
                Ok(Some(bytes)) => Chunk::Data(bytes),
                Ok(None) => Chunk::End,
                Err(_) => Chunk::Failed(CLOSED_IN_BODY.to_string()),
            },
        }
    }
}

/// One client per process (connection pools are per client); loopback never goes through a proxy.
fn client(url: &str) -> &'static reqwest::Client {
    static PROXIED: OnceLock<reqwest::Client> = OnceLock::new();
    static DIRECT: OnceLock<reqwest::Client> = OnceLock::new();
    let loopback = reqwest::Url::parse(url).ok().is_some_and(|u| {
        matches!(
            u.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        )
    });
    let build = |direct: bool| {
        let builder = reqwest::Client::builder();
        let builder = if direct { builder.no_proxy() } else { builder };
        builder.build().unwrap_or_default()
    };
    if loopback {
        DIRECT.get_or_init(|| build(true))
    } else {
        PROXIED.get_or_init(|| build(false))
    }
}

/// Sends `request`, retrying what pi-ai retries. `describe` renders an HTTP error the API's way
/// (used in the "retry delay above the cap" text).
pub async fn send(
    request: &HttpRequest,
    signal: &AbortSignal,
    describe: impl Fn(u16, &str) -> String,
) -> Result<Response, Failure> {
    let mut attempt = 0;
    loop {
        if signal.is_aborted() {
            return Err(Failure::Aborted);
        }
        let failure = match send_once(request, signal).await {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        let (retryable, delay) = match &failure {
            Attempt::Aborted => return Err(Failure::Aborted),
            Attempt::Connection(_) => (true, None),
            Attempt::Status {
                status, headers, ..
            } => (is_retryable(*status, headers), Some(headers)),
        };
        if attempt >= request.max_retries || !retryable {
            return Err(failure.into_failure());
        }
        let delay_ms = match delay.and_then(server_delay_ms) {
            Some(ms) => {
                let cap = request
                    .max_retry_delay_ms
                    .unwrap_or(DEFAULT_MAX_RETRY_DELAY_MS);
                if cap > 0.0 && ms > cap {
                    let Attempt::Status { status, body, .. } = &failure else {
                        unreachable!("server delays come with a status");
                    };
                    return Err(Failure::Message(format!(
                        "Server requested {}s retry delay (max: {}s). {}",
                        (ms / 1000.0).ceil(),
                        (cap / 1000.0).ceil(),
                        describe(*status, body)
                    )));
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
            _ = signal.aborted() => return Err(Failure::Aborted),
            _ = tokio::time::sleep(Duration::from_micros((delay_ms.max(0.0) * 1000.0) as u64)) => {}
        }
    }
}

/// One attempt's failure, before the retry decision.
enum Attempt {
    Aborted,
    Connection(String),
    Status {
        status: u16,
        headers: reqwest::header::HeaderMap,
        body: String,
    },
}

impl Attempt {
    fn into_failure(self) -> Failure {
        match self {
            Attempt::Aborted => Failure::Aborted,
            Attempt::Connection(text) => Failure::Message(text),
            Attempt::Status { status, body, .. } => Failure::Status { status, body },
        }
    }
}

async fn send_once(request: &HttpRequest, signal: &AbortSignal) -> Result<Response, Attempt> {
    let mut builder = client(&request.url).post(&request.url);
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let sent = builder.body(request.body.clone()).send();
    let response = tokio::select! {
        biased;
        _ = signal.aborted() => return Err(Attempt::Aborted),
        response = sent => response.map_err(|e| Attempt::Connection(connection_error_text(&e)))?,
    };
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(Response { inner: response });
    }
    let headers = response.headers().clone();
    let body = tokio::select! {
        biased;
        _ = signal.aborted() => return Err(Attempt::Aborted),
        body = response.text() => body.unwrap_or_default(),
    };
    Err(Attempt::Status {
        status,
        headers,
        body,
    })
}

/// Node's wording for a request that got no response.
fn connection_error_text(error: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                let host = error.url().and_then(|u| {
                    Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?))
                });
                return format!(
                    "Connection error.: connect ECONNREFUSED {}",
                    host.unwrap_or_default()
                );
            }
        }
        source = e.source();
    }
    CLOSED_BEFORE_HEADERS.to_string()
}

/// `x-should-retry` decides when present; otherwise 408, 409, 429 and 5xx are retried.
fn is_retryable(status: u16, headers: &reqwest::header::HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// The delay the server asked for: `retry-after-ms`, else `retry-after` (seconds or a date).
fn server_delay_ms(headers: &reqwest::header::HeaderMap) -> Option<f64> {
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
    use reqwest::header::{HeaderMap, HeaderValue};

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

//! A streamable-HTTP server: rmcp's client transport over libagent's reqwest, with the server's
//! configured headers on every request, redirects refused (they could carry the headers
//! elsewhere), transient failures (408, 429, 5xx) retried twice, and every message capped at
//! `MAX_MESSAGE_BYTES` (a JSON body, or a line of an event stream).

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use rmcp::transport::StreamableHttpClientTransport;
use sse_stream::{Sse, SseStream};

use super::stdio::MAX_MESSAGE_BYTES;

const SESSION_HEADER: &str = "Mcp-Session-Id";
const LAST_EVENT_HEADER: &str = "Last-Event-Id";
const ACCEPT: &str = "text/event-stream, application/json";
/// Attempts of a request that failed with a transient status: the first and two retries.
const ATTEMPTS: u32 = 3;

/// The reqwest client of one server (its headers are default headers).
#[derive(Clone)]
pub struct HttpClient(reqwest::Client);

/// The transport to `url`.
pub fn transport(
    url: &str,
    headers: &[(String, String)],
) -> Result<StreamableHttpClientTransport<HttpClient>, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("The header name \"{name}\" is not valid."))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("The value of header \"{name}\" is not valid."))?;
        map.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .default_headers(map)
        .build()
        .map_err(|e| format!("The HTTP client could not be built: {e}."))?;
    Ok(StreamableHttpClientTransport::with_client(
        HttpClient(client),
        StreamableHttpClientTransportConfig::with_uri(url),
    ))
}

type Error = StreamableHttpError<reqwest::Error>;

fn transient(status: reqwest::StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429 | 500..=599)
}

fn status_error(status: reqwest::StatusCode) -> Error {
    StreamableHttpError::UnexpectedServerResponse(format!("HTTP status {status}").into())
}

impl HttpClient {
    /// Sends the request built by `build`, again after 0.5 s and 1 s when the status is transient.
    async fn send(
        &self,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Error> {
        let mut attempt = 1;
        loop {
            let response = build(&self.0)
                .send()
                .await
                .map_err(StreamableHttpError::Client)?;
            if !transient(response.status()) || attempt == ATTEMPTS {
                return Ok(response);
            }
            tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
            attempt += 1;
        }
    }
}

/// An event stream whose lines are capped.
fn events(response: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut since_newline = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        since_newline = match memchr::memrchr(b'\n', &chunk) {
            Some(index) => chunk.len() - index - 1,
            None => since_newline + chunk.len(),
        };
        if since_newline > MAX_MESSAGE_BYTES {
            return Err(std::io::Error::other(format!(
                "the server sent a message longer than {} MiB, the limit",
                MAX_MESSAGE_BYTES >> 20
            )));
        }
        Ok(chunk)
    });
    // A stream that ended with an error stops there.
    let bytes = bytes.scan(false, |failed, item| {
        let out = (!*failed).then_some(item);
        *failed |= matches!(out, Some(Err(_)));
        futures::future::ready(out)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// A JSON body of at most `MAX_MESSAGE_BYTES`.
async fn json_body(response: reqwest::Response) -> Result<ServerJsonRpcMessage, Error> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if body.len() + chunk.len() > MAX_MESSAGE_BYTES {
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!(
                    "a message longer than {} MiB, the limit",
                    MAX_MESSAGE_BYTES >> 20
                )
                .into(),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(serde_json::from_slice(&body)?)
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message)?;
        let response = self
            .send(|client| {
                let mut request = client
                    .post(uri.as_ref())
                    .header(reqwest::header::ACCEPT, ACCEPT)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
                if let Some(session) = &session_id {
                    request = request.header(SESSION_HEADER, session.as_ref());
                }
                if let Some(token) = &auth_header {
                    request = request.bearer_auth(token);
                }
                request
            })
            .await?;
        let status = response.status();
        if matches!(status.as_u16(), 202 | 204) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            return Err(status_error(status));
        }
        let session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let kind = content_type(&response);
        if kind.starts_with("text/event-stream") {
            Ok(StreamableHttpPostResponse::Sse(events(response), session))
        } else if kind.starts_with("application/json") {
            Ok(StreamableHttpPostResponse::Json(
                json_body(response).await?,
                session,
            ))
        } else {
            Err(StreamableHttpError::UnexpectedContentType(Some(kind)))
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
    ) -> Result<(), Error> {
        let mut request = self
            .0
            .delete(uri.as_ref())
            .header(SESSION_HEADER, session_id.as_ref());
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        // A server that keeps no sessions answers 405; either way the session is over for us.
        let _ = request.send().await;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let response = self
            .send(|client| {
                let mut request = client
                    .get(uri.as_ref())
                    .header(reqwest::header::ACCEPT, ACCEPT)
                    .header(SESSION_HEADER, session_id.as_ref());
                if let Some(id) = &last_event_id {
                    request = request.header(LAST_EVENT_HEADER, id);
                }
                if let Some(token) = &auth_header {
                    request = request.bearer_auth(token);
                }
                request
            })
            .await?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(status_error(response.status()));
        }
        if !content_type(&response).starts_with("text/event-stream") {
            return Err(StreamableHttpError::UnexpectedContentType(Some(
                content_type(&response),
            )));
        }
        Ok(events(response))
    }
}

//! A streamable-HTTP server: rmcp's client transport over libagent's HTTP client, with the server's
//! configured headers on every request, redirects refused (they could carry the headers
//! elsewhere), transient failures (408, 429, 5xx) retried twice, and every message capped at
//! `MAX_MESSAGE_BYTES` (a JSON body, or a line of an event stream).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use rmcp::transport::StreamableHttpClientTransport;
use sse_stream::{Sse, SseStream};

use super::stdio::MAX_MESSAGE_BYTES;
use crate::http_client::{self, body_stream, Body, Client, SendError};

const SESSION_HEADER: &str = "Mcp-Session-Id";
const LAST_EVENT_HEADER: &str = "Last-Event-Id";
const ACCEPT: &str = "text/event-stream, application/json";
/// Attempts of a request that failed with a transient status: the first and two retries.
const ATTEMPTS: u32 = 3;
/// Connecting (TCP, a proxy's tunnel, TLS) to a server.
const CONNECT_TIMEOUT_MS: u64 = 10_000;

/// The HTTP client of one server, with the headers its configuration gives every request.
#[derive(Clone)]
pub struct HttpClient {
    client: Client,
    headers: Arc<Vec<(String, String)>>,
}

/// The transport to `url`.
pub async fn transport(
    url: &str,
    headers: &[(String, String)],
) -> Result<StreamableHttpClientTransport<HttpClient>, String> {
    for (name, value) in headers {
        HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("The header name \"{name}\" is not valid."))?;
        HeaderValue::from_str(value)
            .map_err(|_| format!("The value of header \"{name}\" is not valid."))?;
    }
    let client = http_client::shared(http_client::is_loopback(url), CONNECT_TIMEOUT_MS, None)?;
    Ok(StreamableHttpClientTransport::with_client(
        HttpClient {
            client,
            headers: Arc::new(headers.to_vec()),
        },
        StreamableHttpClientTransportConfig::with_uri(url),
    ))
}

type Error = StreamableHttpError<SendError>;

fn transient(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429 | 500..=599)
}

fn status_error(status: StatusCode) -> Error {
    StreamableHttpError::UnexpectedServerResponse(format!("HTTP status {status}").into())
}

impl HttpClient {
    /// Sends a request with the configured headers (a header of `own` replaces a configured one
    /// of the same name), again after 0.5 s and 1 s when the status is transient.
    async fn send(
        &self,
        method: Method,
        uri: &str,
        own: &[(String, String)],
        body: Bytes,
    ) -> Result<Response<Body>, Error> {
        let headers = self.with_configured(own);
        let mut attempt = 1;
        loop {
            let response = self
                .client
                .send(method.clone(), uri, &headers, body.clone())
                .await
                .map_err(StreamableHttpError::Client)?;
            if !transient(response.status()) || attempt == ATTEMPTS {
                return Ok(response);
            }
            tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
            attempt += 1;
        }
    }

    /// The configured headers, less those `own` sets, then `own`.
    fn with_configured(&self, own: &[(String, String)]) -> Vec<(String, String)> {
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(name, _)| !own.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
            .cloned()
            .collect();
        headers.extend_from_slice(own);
        headers
    }
}

/// `Authorization: Bearer <token>` when there is a token.
fn bearer(headers: &mut Vec<(String, String)>, token: Option<&str>) {
    if let Some(token) = token {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
}

/// An event stream whose lines are capped.
fn events(response: Response<Body>) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut since_newline = 0usize;
    let bytes = body_stream(response.into_body()).map(move |chunk| {
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
async fn json_body(response: Response<Body>) -> Result<ServerJsonRpcMessage, Error> {
    let mut body = Vec::new();
    let mut incoming = response.into_body();
    while let Some(chunk) = incoming.data().await {
        let chunk = chunk.map_err(|e| {
            StreamableHttpError::UnexpectedServerResponse(
                format!("the body could not be read: {e}").into(),
            )
        })?;
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

fn content_type(response: &Response<Body>) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

impl StreamableHttpClient for HttpClient {
    type Error = SendError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = Bytes::from(serde_json::to_vec(&message)?);
        let mut headers = vec![
            ("accept".to_string(), ACCEPT.to_string()),
            ("content-type".to_string(), "application/json".to_string()),
        ];
        if let Some(session) = &session_id {
            headers.push((SESSION_HEADER.into(), session.to_string()));
        }
        bearer(&mut headers, auth_header.as_deref());
        let response = self.send(Method::POST, &uri, &headers, body).await?;
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
        let mut headers = vec![(SESSION_HEADER.to_string(), session_id.to_string())];
        bearer(&mut headers, auth_header.as_deref());
        // A server that keeps no sessions answers 405; either way the session is over for us.
        let headers = self.with_configured(&headers);
        let _ = self
            .client
            .send(Method::DELETE, &uri, &headers, Bytes::new())
            .await;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut headers = vec![
            ("accept".to_string(), ACCEPT.to_string()),
            (SESSION_HEADER.to_string(), session_id.to_string()),
        ];
        if let Some(id) = &last_event_id {
            headers.push((LAST_EVENT_HEADER.into(), id.clone()));
        }
        bearer(&mut headers, auth_header.as_deref());
        let response = self.send(Method::GET, &uri, &headers, Bytes::new()).await?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// A request's own header replaces a configured one of the same name, whatever its case.
    #[test]
    fn configured_headers_go_on_every_request_unless_the_request_sets_them() {
        let client = HttpClient {
            client: Client::new(true, None, None).unwrap(),
            headers: Arc::new(pairs(&[("Authorization", "Bearer a"), ("X-Test", "1")])),
        };
        assert_eq!(
            client.with_configured(&pairs(&[("authorization", "Bearer b")])),
            pairs(&[("X-Test", "1"), ("authorization", "Bearer b")])
        );
        assert_eq!(
            client.with_configured(&[]),
            pairs(&[("Authorization", "Bearer a"), ("X-Test", "1")])
        );
    }
}

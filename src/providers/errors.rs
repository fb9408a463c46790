//! Texts for transport failures. Where pi-ai's fixtures pin a text (a connection refused or
//! closed), it is Node's `fetch` wording; every other failure gets a short sentence naming its
//! cause and, for limits, the option that sets it.

use std::error::Error as StdError;

use hyper::header::{HeaderMap, CONTENT_TYPE, LOCATION};

use super::http::CLOSED_BEFORE_HEADERS;
use super::transport::Transport;
use crate::http_client::{
    ConnectTimedOut, ExchangeError, ProxyFailed, SendError, READ_BUFFER_BYTES,
};

pub fn total_timeout(transport: &Transport) -> String {
    format!(
        "Request timed out after {} ms (timeoutMs).",
        transport.timeout_ms
    )
}

pub fn idle_timeout(transport: &Transport) -> String {
    format!(
        "No data from the server for {} ms (idleTimeoutMs).",
        transport.idle_timeout_ms
    )
}

/// The text for a request to `url` that got no response.
pub fn describe(error: &SendError, url: &str, transport: &Transport) -> String {
    let url = url::Url::parse(url).ok();
    let url = url.as_ref();
    let host = url
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_default();
    let error = match error {
        SendError::Build(why) => return format!("The request could not be built: {why}."),
        SendError::Exchange(ExchangeError::HeadTooLarge) => {
            return format!(
                "The response head from {host} is too large (more than {} KB or 100 headers).",
                READ_BUFFER_BYTES / 1024
            )
        }
        SendError::Exchange(_) => return CLOSED_BEFORE_HEADERS.to_string(),
        SendError::Connect(error) => &**error,
    };
    let https = url.is_some_and(|u| u.scheme() == "https");
    let chain = causes(error);
    for cause in &chain {
        if let Some(proxy) = cause.downcast_ref::<ProxyFailed>() {
            let detail = chain.last().map(|c| c.to_string()).unwrap_or_default();
            return format!(
                "Could not reach {host} through the proxy {} (named by HTTPS_PROXY, HTTP_PROXY or ALL_PROXY): {detail}.",
                proxy.proxy
            );
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return format!("Connection error.: connect ECONNREFUSED {host}");
            }
        }
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return tls_failure(tls, &host);
        }
        if cause.is::<ConnectTimedOut>() {
            return format!(
                "Could not connect to {host} within {} ms (connectTimeoutMs).",
                transport.connect_timeout_ms
            );
        }
        let text = cause.to_string();
        if text.starts_with("dns error") {
            let detail = chain.last().map(|c| c.to_string()).unwrap_or_default();
            let name = url.and_then(|u| u.host_str()).unwrap_or("");
            return format!(
                "Could not resolve the host name {name} (DNS lookup failed: {detail})."
            );
        }
    }
    let eof = chain.iter().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
    });
    if https && eof {
        return format!(
            "TLS handshake with {host} failed: the server closed the connection (is it a plain-HTTP port? Then use http://)."
        );
    }
    CLOSED_BEFORE_HEADERS.to_string()
}

/// The error and its causes, including the errors inside `io::Error`s (whose `source` skips them).
fn causes<'a>(error: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut chain = Vec::new();
    let mut next = Some(error);
    while let Some(cause) = next {
        chain.push(cause);
        next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn StdError + 'static))
                .or_else(|| cause.source()),
            None => cause.source(),
        };
    }
    chain
}

fn tls_failure(error: &rustls::Error, host: &str) -> String {
    use rustls::CertificateError as C;
    let cause = match error {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "its certificate is signed by an unknown authority (trust that CA with caCertificates or caCertificateFile)".to_string()
        }
        rustls::Error::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            "its certificate is not valid for that host name".to_string()
        }
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "its certificate has expired".to_string()
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the server does not speak TLS (is it a plain-HTTP port? Then use http://)".to_string()
        }
        other => other.to_string(),
    };
    format!("TLS handshake with {host} failed: {cause}.")
}

/// A 2xx response that is not an event stream fails at once instead of being read to its end.
/// No content type, `text/event-stream` and `text/plain` (which some proxies put on streams) pass.
pub fn unexpected_content_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?;
    let text = String::from_utf8_lossy(value.as_bytes());
    let essence = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if matches!(essence.as_str(), "text/event-stream" | "text/plain" | "") {
        return None;
    }
    Some(format!(
        "The server answered with content type \"{}\" instead of an event stream (text/event-stream).",
        cut(&text, 100)
    ))
}

/// A redirect is refused: following it could carry the key and the conversation elsewhere.
pub fn redirect_refused(status: u16, headers: &HeaderMap) -> String {
    let location = headers
        .get(LOCATION)
        .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
    let to = location.map_or(String::new(), |l| format!(" to {}", cut(&l, 200)));
    format!(
        "The server redirected the request ({}{to}); provider requests do not follow redirects. Set the model's baseUrl to the final address.",
        status
    )
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

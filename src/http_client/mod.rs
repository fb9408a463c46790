//! The HTTP client of the providers and of MCP servers reached over HTTP: HTTP/1.1 with pooled
//! keep-alive connections, TLS by rustls (the bundled Mozilla roots, the system's roots and any
//! CAs the options add), proxies from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
//! `NO_PROXY`; never for a loopback URL), redirects never followed, and a read buffer bounded at
//! [`READ_BUFFER_BYTES`] per connection.
//!
//! Connecting is hyper-util's and hyper-rustls's (`connect`); the exchange itself is ours
//! (`exchange`: httparse reads the head): a response body is read from its socket by the task
//! that reads the body, where hyper's client passed each piece from a connection task of its
//! own, two task polls and a wake per SSE event (BENCHMARKS.md, issue 30).

mod connect;
mod exchange;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod pool;

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use hyper::{Method, Response, Uri};
use hyper_util::client::proxy::matcher::Matcher;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::sync::lock;
use connect::{BoxError, Connector};
pub use connect::{ConnectTimedOut, ProxyFailed};
pub use exchange::{Body, BodyError, ExchangeError};
use pool::{Pool, PoolKey};

/// The most a connection's read buffer holds. A response head must fit in it; SSE events of any
/// size still stream through it (the SSE limits bound those). When the buffer must grow to take
/// a read while a piece handed out still shares it, the bytes crate may allocate anew, so a
/// body piece can exceed this, though never twice it.
pub(crate) const READ_BUFFER_BYTES: usize = 64 * 1024;

/// A pooled HTTP/1.1 client; clones share the pool.
#[derive(Clone)]
pub struct Client {
    connector: Connector,
    pool: Arc<Pool>,
    proxies: Option<Arc<Matcher>>,
}

/// Why a request got no response.
#[derive(Debug)]
pub enum SendError {
    /// The request could not be made from the URL and headers given.
    Build(String),
    /// Connecting (TCP, a proxy, TLS) failed.
    Connect(BoxError),
    /// Sending the request or reading the response head failed.
    Exchange(ExchangeError),
}

impl Client {
    /// A client; `direct` bypasses proxies. The extra CAs are checked now; TLS itself (the
    /// system's roots, read from files) is set up on the first connection that needs it.
    pub fn new(
        direct: bool,
        connect_timeout: Option<Duration>,
        extra_ca_pem: Option<&str>,
    ) -> Result<Client, String> {
        let extra_ca = match extra_ca_pem {
            Some(pem) => {
                let certificates = pem_certificates(pem)?;
                let mut store = rustls::RootCertStore::empty();
                for certificate in &certificates {
                    store.add(certificate.clone()).map_err(unusable_ca)?;
                }
                Some(Arc::new(certificates))
            }
            None => None,
        };
        let proxies = (!direct).then(|| Arc::new(Matcher::from_env()));
        Ok(Client {
            connector: Connector::new(proxies.clone(), extra_ca, connect_timeout),
            pool: Arc::default(),
            proxies,
        })
    }

    /// POSTs `body` to `url` with `headers` (in order); the response once its head arrived.
    #[cfg(feature = "providers")]
    pub async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: String,
    ) -> Result<Response<Body>, SendError> {
        self.send(Method::POST, url, headers, Bytes::from(body))
            .await
    }

    /// Sends a `method` request; the response once its head arrived. A kept connection the
    /// server closed before answering (nothing of a response came) is replaced by a new one,
    /// once.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Result<Response<Body>, SendError> {
        let (uri, headers) = self.request(url, headers)?;
        let key = PoolKey::of(&uri);
        let mut kept = self.pool.take(&key);
        loop {
            let reused = kept.is_some();
            let connection = match kept.take() {
                Some(connection) => connection,
                None => exchange::Connection::new(
                    self.connector
                        .connect(&uri)
                        .await
                        .map_err(SendError::Connect)?,
                ),
            };
            let head =
                exchange::request_head(&method, &uri, connection.forwarded(), &headers, body.len());
            let pool = Some((self.pool.clone(), key.clone()));
            match exchange::exchange(connection, head, &body, &method, pool).await {
                Ok(response) => return Ok(response),
                Err(error) if reused && error.stale() => continue,
                Err(error) => return Err(SendError::Exchange(error)),
            }
        }
    }

    /// The URL and headers checked, with a proxy's credentials added where it reads them.
    fn request(
        &self,
        url: &str,
        headers: &[(String, String)],
    ) -> Result<(Uri, HeaderMap), SendError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| SendError::Build(format!("the URL {url} cannot be used ({e})")))?;
        match uri.scheme_str() {
            Some("http" | "https") if uri.host().is_some() => {}
            _ => {
                return Err(SendError::Build(format!(
                    "the URL {url} is not an http:// or https:// address"
                )))
            }
        }
        let mut map = HeaderMap::with_capacity(headers.len() + 1);
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| SendError::Build(format!("the header name \"{name}\" is invalid")))?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                SendError::Build(format!("the value of header \"{name}\" is invalid"))
            })?;
            map.append(name, value);
        }
        // Plain HTTP through a proxy: the proxy reads the credentials from the request itself
        // (an HTTPS request gives them to the proxy's tunnel instead).
        if uri.scheme() == Some(&hyper::http::uri::Scheme::HTTP)
            && !map.contains_key(PROXY_AUTHORIZATION)
        {
            let auth = self.proxies.as_ref().and_then(|m| m.intercept(&uri));
            if let Some(auth) = auth.as_ref().and_then(|p| p.basic_auth()) {
                map.insert(PROXY_AUTHORIZATION, auth.clone());
            }
        }
        Ok((uri, map))
    }

    /// Whether TLS was set up (tests check it is set up only when needed).
    #[cfg(test)]
    fn tls_ready(&self) -> bool {
        self.connector.tls.initialized()
    }
}

/// The text of an error: the error and its causes from the outside in ("tcp connect error:
/// Connection refused (os error 111)").
impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let error: &(dyn StdError + 'static) = match self {
            SendError::Build(why) => return write!(f, "the request could not be built: {why}"),
            SendError::Connect(error) => &**error,
            SendError::Exchange(error) => error,
        };
        write!(f, "{error}")?;
        let mut cause = error.source();
        while let Some(inner) = cause {
            write!(f, ": {inner}")?;
            cause = inner.source();
        }
        Ok(())
    }
}

impl StdError for SendError {}

/// What makes two clients differ (everything else is set per request).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    /// Loopback: never through a proxy.
    direct: bool,
    connect_timeout_ms: u64,
    extra_ca_pem: Option<Arc<String>>,
}

/// The shared client for these settings (kept: each has its connection pool); `connect_timeout_ms`
/// 0 is no limit.
pub fn shared(
    direct: bool,
    connect_timeout_ms: u64,
    extra_ca_pem: Option<Arc<String>>,
) -> Result<Client, String> {
    static CLIENTS: OnceLock<Mutex<HashMap<ClientKey, Client>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Default::default);
    let key = ClientKey {
        direct,
        connect_timeout_ms,
        extra_ca_pem,
    };
    if let Some(client) = lock(clients).get(&key) {
        return Ok(client.clone());
    }
    let connect_timeout =
        (key.connect_timeout_ms > 0).then(|| Duration::from_millis(key.connect_timeout_ms));
    let client = Client::new(
        key.direct,
        connect_timeout,
        key.extra_ca_pem.as_deref().map(|p| p.as_str()),
    )?;
    Ok(lock(clients).entry(key).or_insert(client).clone())
}

/// Whether `url` names this machine: `localhost` or a loopback address (127.0.0.0/8, `::1`),
/// which is never reached through a proxy.
pub fn is_loopback(url: &str) -> bool {
    match url::Url::parse(url)
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
    {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A response body as a stream of its pieces.
#[cfg(feature = "mcp")]
pub fn body_stream(
    body: Body,
) -> impl futures::Stream<Item = Result<Bytes, BodyError>> + Send + 'static {
    futures::stream::unfold(body, |mut body| async move {
        body.data().await.map(|piece| (piece, body))
    })
}

/// Why the extra CAs cannot be used.
fn unusable_ca(cause: impl std::fmt::Display) -> String {
    format!("The extra CA certificates cannot be used: {cause}.")
}

/// The certificates of a PEM bundle (other PEM sections are ignored).
pub fn pem_certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(unusable_ca)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn loopback_urls_are_told_apart() {
        for url in [
            "http://localhost:8080/v1",
            "http://LOCALHOST/v1",
            "http://127.0.0.1:1234",
            "http://127.0.0.2/v1",
            "https://[::1]:8443/v1",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "http://localhost.example/v1",
            "http://10.0.0.1/v1",
            "https://api.openai.com/v1",
            "http://[::2]/",
            "not a url",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }

    /// A header the request cannot carry is named, without its value (it may be a key).
    #[tokio::test]
    async fn a_header_that_cannot_be_sent_is_named_without_its_value() {
        let client = Client::new(true, None, None).unwrap();
        let refused = |name: &str, value: &str| {
            let headers = [(name.to_string(), value.to_string())];
            let client = client.clone();
            async move {
                let url = "http://127.0.0.1:9/v1";
                match client.send(Method::POST, url, &headers, Bytes::new()).await {
                    Err(SendError::Build(text)) => text,
                    other => panic!("{other:?}"),
                }
            }
        };
        assert_eq!(
            refused("authorization", "Bearer sk-1\nx").await,
            "the value of header \"authorization\" is invalid"
        );
        assert_eq!(
            refused("bad name", "v").await,
            "the header name \"bad name\" is invalid"
        );
    }

    /// A failure's text is its causes (what MCP servers' errors show), not the wrapper alone.
    #[tokio::test]
    async fn a_failed_request_names_its_cause() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", closed.local_addr().unwrap());
        drop(closed);
        let client = Client::new(true, None, None).unwrap();
        let error = client
            .send(Method::POST, &url, &[], Bytes::new())
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "tcp connect error: Connection refused (os error 111)"
        );
        // A client that reached only http:// addresses never loaded TLS roots; one https://
        // address sets TLS up (then its connection is refused as the other was).
        assert!(!client.tls_ready());
        let error = client
            .send(
                Method::POST,
                &url.replace("http:", "https:"),
                &[],
                Bytes::new(),
            )
            .await
            .unwrap_err();
        assert!(client.tls_ready());
        assert_eq!(
            error.to_string(),
            "tcp connect error: Connection refused (os error 111)"
        );
        // A TLS handshake that never gets an answer (the kernel takes the connection, nothing
        // reads it): the connect timeout, which covers TLS, ends it.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/", silent.local_addr().unwrap());
        let timed_out = Client::new(true, Some(Duration::from_millis(200)), None).unwrap();
        let error = timed_out
            .send(Method::GET, &url, &[], Bytes::new())
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), "connect timed out");
    }

    /// An exchange's failure reads as its cause once, after what failed.
    #[test]
    fn an_exchange_failure_names_its_cause_once() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let error = SendError::Exchange(ExchangeError::Io(reset));
        assert_eq!(error.to_string(), "the connection failed: connection reset");
        let error = SendError::Exchange(ExchangeError::Closed { began: false });
        assert_eq!(
            error.to_string(),
            "the connection closed before the response head"
        );
    }

    /// Extra CAs are checked when the client is made, though TLS is set up only when first
    /// needed: a bundle rustls cannot use fails at once, naming the cause.
    #[test]
    fn unusable_extra_cas_fail_when_the_client_is_made() {
        // A PEM certificate block whose bytes are not a certificate ("hello").
        let not_der = "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n";
        let error = Client::new(true, None, Some(not_der)).err().unwrap();
        assert!(
            error.starts_with("The extra CA certificates cannot be used: "),
            "{error}"
        );
        let bad_base64 = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        let error = Client::new(true, None, Some(bad_base64)).err().unwrap();
        assert!(
            error.starts_with("The extra CA certificates cannot be used: "),
            "{error}"
        );
        // Text without any PEM section adds nothing (the options reject it before this).
        let client = Client::new(true, None, Some("no certificates here")).unwrap();
        assert!(!client.tls_ready());
    }

    /// A body far larger than the buffer, read slowly so the socket always has more waiting:
    /// every piece hyper hands out is under twice the bound (bytes doubles a buffer it must grow,
    /// rarely: once in ~20 loaded runs a piece exceeded the bound itself); with hyper's default
    /// they grow to hundreds of KB.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_connection_reads_through_a_bounded_buffer() {
        const BODY: usize = 8 << 20;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\n\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&vec![b'x'; BODY]).await;
        });
        let client = Client::new(true, None, None).unwrap();
        let mut body = client
            .send(Method::POST, &url, &[], Bytes::new())
            .await
            .unwrap()
            .into_body();
        let (mut total, mut largest) = (0, 0);
        while let Some(piece) = body.data().await {
            let piece = piece.unwrap();
            total += piece.len();
            largest = largest.max(piece.len());
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        assert_eq!(total, BODY);
        assert!(
            largest < 2 * READ_BUFFER_BYTES,
            "a piece of {largest} bytes was read at once"
        );
    }

    /// What the test server does with the `n`th request (from 0) on a connection.
    #[derive(Clone, Copy, PartialEq)]
    enum Answer {
        /// `ok` in one chunk, the connection kept.
        Chunked,
        /// `ok`, then the connection closed (no `connection: close`).
        ThenClose,
        /// `ok` with `connection: close`.
        Close,
        /// Nothing: the connection closed once the request is read.
        Hangup,
        /// `100 Continue`, then as `Chunked`.
        Interim,
        /// An HTTP/1.0 answer, the connection left open.
        Http10,
        /// `204 No Content`, the connection kept.
        NoContent,
        /// Bytes that are not HTTP.
        NotHttp,
    }

    /// A server answering each connection's requests as `plan(connection, request)` says; the
    /// number of connections it accepted.
    async fn server(plan: fn(usize, usize) -> Answer) -> (String, Arc<Mutex<usize>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let accepted = Arc::new(Mutex::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let connection = {
                    let mut count = lock(&count);
                    *count += 1;
                    *count - 1
                };
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    for n in 0.. {
                        // A request: its head, then its content-length's bytes.
                        let mut buf = [0u8; 4096];
                        let complete = loop {
                            if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                                let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                                let length: usize = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length: "))
                                    .map_or(0, |v| v.trim().parse().unwrap());
                                if request.len() >= end + 4 + length {
                                    break end + 4 + length;
                                }
                            }
                            match socket.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(read) => request.extend_from_slice(&buf[..read]),
                            }
                        };
                        request.drain(..complete);
                        let answer = plan(connection, n);
                        let text: &[u8] = match answer {
                            Answer::Chunked => b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                            Answer::ThenClose => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
                            Answer::Close => b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
                            Answer::Hangup => b"",
                            Answer::Interim => b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                            Answer::Http10 => b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok",
                            Answer::NoContent => b"HTTP/1.1 204 No Content\r\n\r\n",
                            Answer::NotHttp => b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
                        };
                        let _ = socket.write_all(text).await;
                        if matches!(
                            answer,
                            Answer::ThenClose | Answer::Close | Answer::Hangup | Answer::NotHttp
                        ) {
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    /// A request's whole body, as text.
    async fn fetch(client: &Client, url: &str) -> String {
        let mut body = client
            .send(Method::POST, url, &[], Bytes::from_static(b"{}"))
            .await
            .unwrap()
            .into_body();
        let mut text = Vec::new();
        while let Some(piece) = body.data().await {
            text.extend_from_slice(&piece.unwrap());
        }
        String::from_utf8(text).unwrap()
    }

    #[tokio::test]
    async fn a_connection_serves_request_after_request() {
        let (url, accepted) = server(|_, _| Answer::Chunked).await;
        let client = Client::new(true, None, None).unwrap();
        for _ in 0..3 {
            assert_eq!(fetch(&client, &url).await, "ok");
            assert_eq!(client.pool.idle_count(), 1);
        }
        assert_eq!(*lock(&accepted), 1);
        // A body dropped before its end takes its connection with it.
        let body = client
            .send(Method::POST, &url, &[], Bytes::new())
            .await
            .unwrap();
        drop(body);
        assert_eq!(client.pool.idle_count(), 0);
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(*lock(&accepted), 2);
    }

    #[tokio::test]
    async fn interim_answers_are_skipped_and_http_1_0_connections_not_kept() {
        let client = Client::new(true, None, None).unwrap();
        // A response without a body frees its connection at once, its body unread.
        let (url, accepted) = server(|_, _| Answer::NoContent).await;
        for _ in 0..2 {
            let response = client
                .send(Method::POST, &url, &[], Bytes::new())
                .await
                .unwrap();
            assert_eq!(response.status(), 204);
            assert_eq!(client.pool.idle_count(), 1);
        }
        assert_eq!(*lock(&accepted), 1);
        let client = Client::new(true, None, None).unwrap();
        let (url, _) = server(|_, _| Answer::Interim).await;
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(client.pool.idle_count(), 1);
        let (url, accepted) = server(|_, _| Answer::Http10).await;
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(*lock(&accepted), 2);
        assert_eq!(client.pool.idle_count(), 1);
    }

    /// Idle connections go after the pool's keeping time: the one taken, and the others when
    /// a connection is kept.
    #[tokio::test]
    async fn idle_connections_are_kept_for_a_time_only() {
        let mut client = Client::new(true, None, None).unwrap();
        client.pool = Arc::new(Pool::keeping_for(Duration::from_millis(50)));
        let (first, accepted) = server(|_, _| Answer::Chunked).await;
        let (second, _) = server(|_, _| Answer::Chunked).await;
        assert_eq!(fetch(&client, &first).await, "ok");
        tokio::time::sleep(Duration::from_millis(80)).await;
        // Too old when taken: a new connection.
        assert_eq!(fetch(&client, &first).await, "ok");
        assert_eq!(*lock(&accepted), 2);
        assert_eq!(client.pool.idle_count(), 1);
        tokio::time::sleep(Duration::from_millis(80)).await;
        // Keeping one to the second server lets the first's expired one go.
        assert_eq!(fetch(&client, &second).await, "ok");
        assert_eq!(client.pool.idle_count(), 1);
    }

    /// An answer that is not HTTP is named as such (a provider reports it as a closed
    /// connection, as Node's fetch does).
    #[tokio::test]
    async fn an_answer_that_is_not_http_is_named() {
        let (url, _) = server(|_, _| Answer::NotHttp).await;
        let client = Client::new(true, None, None).unwrap();
        let error = client
            .send(Method::POST, &url, &[], Bytes::new())
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("the response head is invalid: "),
            "{error}"
        );
        assert_eq!(client.pool.idle_count(), 0);
    }

    #[tokio::test]
    async fn a_connection_the_server_ends_is_not_used_again() {
        // `connection: close`: never kept.
        let (url, accepted) = server(|_, _| Answer::Close).await;
        let client = Client::new(true, None, None).unwrap();
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(client.pool.idle_count(), 0);
        // Closed while idle: found closed when taken, and a new one serves the request.
        let (url, accepted_closing) = server(|_, _| Answer::ThenClose).await;
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(client.pool.idle_count(), 1);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(*lock(&accepted_closing), 2);
        assert_eq!(*lock(&accepted), 1);
        // Closed on receiving the next request, unanswered: the request goes again, once, on a
        // new connection; a new connection that fails so is not retried.
        let (url, accepted) = server(|connection, request| match (connection, request) {
            (0, 0) | (1, 0) => Answer::Chunked,
            _ => Answer::Hangup,
        })
        .await;
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(fetch(&client, &url).await, "ok");
        assert_eq!(*lock(&accepted), 2);
        let error = client
            .send(Method::POST, &url, &[], Bytes::new())
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                SendError::Exchange(ExchangeError::Closed { began: false })
            ),
            "{error}"
        );
        assert_eq!(*lock(&accepted), 3);
    }
}

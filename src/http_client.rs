//! The HTTP client of the providers and of MCP servers reached over HTTP: HTTP/1.1 on hyper's
//! pooled client, TLS by rustls (the bundled Mozilla roots, the system's roots and any CAs the
//! options add), proxies from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
//! `NO_PROXY`; never for a loopback URL), redirects never followed, and a read buffer bounded at
//! [`READ_BUFFER_BYTES`] of data per connection: hyper's default lets each buffer grow to ~400 KB (200
//! streaming agents peaked ~55 MB higher with it, BENCHMARKS.md), and reqwest does not expose
//! the bound.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::{Method, Request, Response, Uri};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tower_service::Service;

use crate::sync::lock;

/// The most a connection's read buffer holds (hyper's `max_buf_size`). A response head must fit
/// in it; SSE events of any size still stream through it (the SSE limits bound those). When the
/// buffer must grow to take a read, the bytes crate may double its allocation, so a body piece
/// can exceed this, though never twice it (hyper's default is ~400 KB).
pub(crate) const READ_BUFFER_BYTES: usize = 64 * 1024;

type BoxError = Box<dyn StdError + Send + Sync>;

/// A pooled HTTP/1.1 client; clones share the pool.
#[derive(Clone)]
pub struct Client {
    http: hyper_util::client::legacy::Client<Connector, Full<Bytes>>,
    proxies: Option<Arc<Matcher>>,
    /// The connector's TLS side (tests check when it is set up).
    #[cfg(test)]
    tls: Arc<tokio::sync::OnceCell<Tls>>,
}

/// Why a request got no response.
#[derive(Debug)]
pub enum SendError {
    /// The request could not be made from the URL and headers given.
    Build(String),
    /// Connecting, the TLS handshake, sending or reading the response head failed.
    Failed(hyper_util::client::legacy::Error),
}

/// Connecting (TCP, a proxy's tunnel, TLS) took longer than the client's connect timeout.
#[derive(Debug)]
pub struct ConnectTimedOut;

impl std::fmt::Display for ConnectTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connect timed out")
    }
}

impl StdError for ConnectTimedOut {}

/// Reaching the proxy the environment names, or opening its tunnel, failed.
#[derive(Debug)]
pub struct ProxyFailed {
    /// The proxy's address (credentials are never part of it).
    pub proxy: String,
    source: BoxError,
}

impl std::fmt::Display for ProxyFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "proxy {}", self.proxy)
    }
}

impl StdError for ProxyFailed {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
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
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        let proxies = (!direct).then(|| Arc::new(Matcher::from_env()));
        let tls = Arc::<tokio::sync::OnceCell<Tls>>::default();
        let connector = Connector {
            tcp,
            tls: tls.clone(),
            extra_ca,
            proxies: proxies.clone(),
            timeout: connect_timeout,
        };
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .http1_max_buf_size(READ_BUFFER_BYTES)
            .build(connector);
        Ok(Client {
            http,
            proxies,
            #[cfg(test)]
            tls,
        })
    }

    /// POSTs `body` to `url` with `headers` (in order); the response once its head arrived.
    #[cfg(feature = "providers")]
    pub async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: String,
    ) -> Result<Response<Incoming>, SendError> {
        self.send(Method::POST, url, headers, Bytes::from(body))
            .await
    }

    /// Sends a `method` request; the response once its head arrived.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Result<Response<Incoming>, SendError> {
        let request = self.request(method, url, headers, body)?;
        self.http.request(request).await.map_err(SendError::Failed)
    }

    fn request(
        &self,
        method: Method,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, SendError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| SendError::Build(format!("the URL {url} cannot be used ({e})")))?;
        let mut request = Request::builder()
            .method(method)
            .uri(uri.clone())
            .body(Full::new(body))
            .map_err(|e| SendError::Build(e.to_string()))?;
        let map = request.headers_mut();
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
        Ok(request)
    }
}

/// The text of an error: its causes from the outside in ("tcp connect error: Connection refused
/// (os error 111)"); the client's own wrapper ("client error (Connect)") only when it has none.
impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Build(why) => write!(f, "the request could not be built: {why}"),
            SendError::Failed(error) => {
                let Some(first) = error.source() else {
                    return write!(f, "{error}");
                };
                write!(f, "{first}")?;
                let mut cause = first.source();
                while let Some(inner) = cause {
                    write!(f, ": {inner}")?;
                    cause = inner.source();
                }
                Ok(())
            }
        }
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
    body: Incoming,
) -> impl futures::Stream<Item = Result<Bytes, hyper::Error>> + Send + 'static {
    futures::stream::unfold(body, |mut body| async move {
        next_data(&mut body).await.map(|piece| (piece, body))
    })
}

/// The next piece of a response body (trailers skipped); `None` at its end.
pub async fn next_data(body: &mut Incoming) -> Option<Result<Bytes, hyper::Error>> {
    loop {
        match body.frame().await? {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    return Some(Ok(data));
                }
            }
            Err(e) => return Some(Err(e)),
        }
    }
}

/// TLS 1.2 and 1.3 with ring; the bundled roots, the system's, then the extra CAs (checked when
/// the client was made).
fn tls_config(extra_ca: &[CertificateDer<'static>]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    // A system root rustls cannot use is skipped, as browsers do.
    for certificate in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(certificate);
    }
    for certificate in extra_ca {
        roots.add(certificate.clone()).map_err(unusable_ca)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("The TLS configuration cannot be built: {e}."))?
        .with_root_certificates(roots)
        .with_no_client_auth())
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

/// Opens connections: to the destination, or through the proxy the environment names for it
/// (HTTPS through a CONNECT tunnel, plain HTTP forwarded by the proxy), within the connect timeout.
#[derive(Clone)]
struct Connector {
    tcp: HttpConnector,
    /// TLS, set up on the first connection that needs it: loading the system's roots reads files
    /// and parses every certificate (~14 M instructions), which a client that only reaches
    /// http:// addresses (a model on this machine) never needs.
    tls: Arc<tokio::sync::OnceCell<Tls>>,
    extra_ca: Option<Arc<Vec<CertificateDer<'static>>>>,
    proxies: Option<Arc<Matcher>>,
    timeout: Option<Duration>,
}

/// The TLS side of a connector.
#[derive(Clone)]
struct Tls {
    /// TCP, then TLS for an https:// address (a destination or an HTTPS proxy).
    https: HttpsConnector<HttpConnector>,
    /// TLS to the destination inside a proxy's tunnel.
    tunnel: tokio_rustls::TlsConnector,
}

impl Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        let connector = self.clone();
        Box::pin(async move {
            let timeout = connector.timeout;
            let connecting = connector.connect(destination);
            match timeout {
                Some(limit) => tokio::time::timeout(limit, connecting)
                    .await
                    .map_err(|_| Box::new(ConnectTimedOut) as BoxError)?,
                None => connecting.await,
            }
        })
    }
}

impl Connector {
    async fn connect(mut self, destination: Uri) -> Result<Conn, BoxError> {
        let proxy = self
            .proxies
            .as_ref()
            .and_then(|m| m.intercept(&destination));
        let Some(proxy) = proxy else {
            return Ok(Conn::Direct(self.open(destination).await?));
        };
        let failed = |source: BoxError| -> BoxError {
            Box::new(ProxyFailed {
                proxy: proxy.uri().to_string(),
                source,
            })
        };
        if destination.scheme() != Some(&hyper::http::uri::Scheme::HTTPS) {
            let forwarding = self.open(proxy.uri().clone()).await.map_err(failed)?;
            return Ok(Conn::Forwarded(forwarding));
        }
        let tls = self.tls().await?;
        let mut tunnel = Tunnel::new(proxy.uri().clone(), tls.https);
        if let Some(auth) = proxy.basic_auth() {
            tunnel = tunnel.with_auth(auth.clone());
        }
        let tunneled = tunnel
            .call(destination.clone())
            .await
            .map_err(|e| failed(Box::new(e)))?;
        let host = destination.host().ok_or("the URL has no host")?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())?;
        let tls = tls.tunnel.connect(name, TokioIo::new(tunneled)).await?;
        Ok(Conn::Tunneled(Box::new(TokioIo::new(tls))))
    }

    /// A connection to `address`: TCP, then TLS for https://.
    async fn open(&mut self, address: Uri) -> Result<Stream, BoxError> {
        if address.scheme() == Some(&hyper::http::uri::Scheme::HTTPS) {
            self.tls().await?.https.call(address).await
        } else {
            Ok(MaybeHttpsStream::Http(self.tcp.call(address).await?))
        }
    }

    /// The TLS side, set up (off the runtime thread: it reads files) on first use.
    async fn tls(&self) -> Result<Tls, BoxError> {
        let tls = self
            .tls
            .get_or_try_init(|| {
                let tcp = self.tcp.clone();
                let extra_ca = self.extra_ca.clone();
                async move {
                    let built = tokio::task::spawn_blocking(move || {
                        let extra_ca = extra_ca.as_deref().map_or(&[][..], Vec::as_slice);
                        let tls = tls_config(extra_ca)?;
                        // hyper-rustls sets the ALPN protocol itself (http/1.1); the tunnel's TLS
                        // is ours to set.
                        let mut tunnel = tls.clone();
                        tunnel.alpn_protocols = vec![b"http/1.1".to_vec()];
                        let https = hyper_rustls::HttpsConnectorBuilder::new()
                            .with_tls_config(tls)
                            .https_or_http()
                            .enable_http1()
                            .wrap_connector(tcp);
                        Ok::<_, String>(Tls {
                            https,
                            tunnel: tokio_rustls::TlsConnector::from(Arc::new(tunnel)),
                        })
                    })
                    .await;
                    match built {
                        Ok(tls) => tls,
                        Err(_) => Err("The TLS configuration could not be built.".to_string()),
                    }
                }
            })
            .await?;
        Ok(tls.clone())
    }
}

type Stream = MaybeHttpsStream<TokioIo<TcpStream>>;

/// An open connection.
enum Conn {
    /// To the destination (TLS for https://).
    Direct(Stream),
    /// To a proxy that forwards plain-HTTP requests (sent in absolute form).
    Forwarded(Stream),
    /// TLS to the destination through a proxy's CONNECT tunnel (boxed: ~1 KB of TLS state).
    Tunneled(Box<TokioIo<tokio_rustls::client::TlsStream<TokioIo<Stream>>>>),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match self {
            Conn::Direct(stream) => stream.connected(),
            Conn::Forwarded(stream) => stream.connected().proxy(true),
            Conn::Tunneled(_) => Connected::new(),
        }
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Direct(s) | Conn::Forwarded(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tunneled(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Direct(s) | Conn::Forwarded(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tunneled(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Direct(s) | Conn::Forwarded(s) => Pin::new(s).poll_flush(cx),
            Conn::Tunneled(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Direct(s) | Conn::Forwarded(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tunneled(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
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
        assert!(!client.tls.initialized());
        let error = client
            .send(
                Method::POST,
                &url.replace("http:", "https:"),
                &[],
                Bytes::new(),
            )
            .await
            .unwrap_err();
        assert!(client.tls.initialized());
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
        assert!(!client.tls.initialized());
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
        while let Some(piece) = next_data(&mut body).await {
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
}

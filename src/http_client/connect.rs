//! Opening connections: TCP, a proxy's CONNECT tunnel or a forwarding proxy (from the
//! environment, never for a loopback URL), TLS by rustls, all within the connect timeout.

use std::error::Error as StdError;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tower_service::Service;

pub(super) type BoxError = Box<dyn StdError + Send + Sync>;

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

/// Opens connections: to the destination, or through the proxy the environment names for it
/// (HTTPS through a CONNECT tunnel, plain HTTP forwarded by the proxy), within the connect timeout.
#[derive(Clone)]
pub(super) struct Connector {
    tcp: HttpConnector,
    /// TLS, set up on the first connection that needs it: loading the system's roots reads files
    /// and parses every certificate (~14 M instructions), which a client that only reaches
    /// http:// addresses (a model on this machine) never needs.
    pub(super) tls: Arc<tokio::sync::OnceCell<Tls>>,
    extra_ca: Option<Arc<Vec<CertificateDer<'static>>>>,
    pub(super) proxies: Option<Arc<Matcher>>,
    timeout: Option<Duration>,
}

/// The TLS side of a connector.
#[derive(Clone)]
pub(super) struct Tls {
    /// TCP, then TLS for an https:// address (a destination or an HTTPS proxy).
    https: HttpsConnector<HttpConnector>,
    /// TLS to the destination inside a proxy's tunnel.
    tunnel: tokio_rustls::TlsConnector,
}

impl Connector {
    pub(super) fn new(
        proxies: Option<Arc<Matcher>>,
        extra_ca: Option<Arc<Vec<CertificateDer<'static>>>>,
        timeout: Option<Duration>,
    ) -> Connector {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        Connector {
            tcp,
            tls: Default::default(),
            extra_ca,
            proxies,
            timeout,
        }
    }

    /// A connection to `destination`, within the connect timeout.
    pub(super) async fn connect(&self, destination: &Uri) -> Result<Conn, BoxError> {
        let connecting = self.clone().open_to(destination.clone());
        match self.timeout {
            Some(limit) => tokio::time::timeout(limit, connecting)
                .await
                .map_err(|_| Box::new(ConnectTimedOut) as BoxError)?,
            None => connecting.await,
        }
    }

    async fn open_to(mut self, destination: Uri) -> Result<Conn, BoxError> {
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
        roots.add(certificate.clone()).map_err(super::unusable_ca)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("The TLS configuration cannot be built: {e}."))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

type Stream = MaybeHttpsStream<TokioIo<TcpStream>>;

/// An open connection.
pub(super) enum Conn {
    /// To the destination (TLS for https://).
    Direct(Stream),
    /// To a proxy that forwards plain-HTTP requests (sent in absolute form).
    Forwarded(Stream),
    /// TLS to the destination through a proxy's CONNECT tunnel (boxed: ~1 KB of TLS state).
    Tunneled(Box<TokioIo<tokio_rustls::client::TlsStream<TokioIo<Stream>>>>),
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

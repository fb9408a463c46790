//! Loopback model servers for the transport tests: a handler per connection, the request read
//! by hand, and agents on the built-in providers pointed at them.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent::agent::{Agent, AgentOptions, HookKind};
use agent::json::{json, Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::common;

pub const KEY: &str = "sk-hostile-secret-key";
/// Catches hangs only: every case ends far sooner.
pub const WATCHDOG: Duration = Duration::from_secs(30);

/// A loopback server running `handler` for each connection; counts connections.
pub struct Server {
    pub addr: SocketAddr,
    pub connections: Arc<AtomicUsize>,
}

pub async fn serve<F, Fut>(ip: &str, handler: F) -> Server
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handler(socket));
        }
    });
    Server { addr, connections }
}

/// Reads one request (head and content-length body); returns the head text.
pub async fn read_request(socket: &mut TcpStream) -> String {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return String::from_utf8_lossy(&data).into_owned();
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let n = socket.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
            }
            return String::from_utf8_lossy(&data[..end]).into_owned();
        }
    }
}

/// Keeps the socket open until the client closes it.
pub async fn hold(mut socket: TcpStream) {
    let mut buf = [0u8; 1024];
    while socket.read(&mut buf).await.unwrap_or(0) > 0 {}
}

pub const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";

pub fn model(base_url: &str, api: &str) -> Json {
    json!({"id": "m", "name": "m", "api": api, "provider": "local-test", "baseUrl": base_url,
        "reasoning": false, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 32000, "maxTokens": 1000})
}

pub fn openai(addr: SocketAddr) -> Json {
    model(&format!("http://{addr}/v1"), "openai-completions")
}

/// An agent on the built-in providers with `options` (AgentOptions JSON) and the key from the
/// getApiKey hook.
pub fn agent(model: Json, options: Json) -> Agent {
    let mut options = AgentOptions::from_json(options).unwrap();
    options.initial_state.model = Some(model);
    options.stream_fn = Some(agent::providers::stream_fn());
    let _ = options
        .settings
        .hooks
        .set(HookKind::GetApiKey, Some(common::key_hook(KEY)));
    Agent::new(options).unwrap()
}

/// Runs one prompt (under the watchdog) and returns the last message, which tells how the run
/// ended (the prompt's own result for a failed run is tested elsewhere).
pub async fn run(agent: &Agent) -> Json {
    let _ = tokio::time::timeout(WATCHDOG, agent.prompt_text("hi"))
        .await
        .expect("the run hung");
    agent.messages().last().cloned().unwrap()
}

pub async fn error_of(model: Json, options: Json) -> String {
    let last = run(&agent(model, options)).await;
    assert_eq!(last["stopReason"], "error", "{last}");
    last["errorMessage"].as_str().unwrap().to_string()
}

/// An SSE answer "ok" for openai-completions.
pub fn answer() -> String {
    format!(
        "{SSE_HEAD}{}{}data: [DONE]\n\n",
        common::chunk(json!({"content": "ok"}), None),
        common::chunk(json!({}), Some("stop"))
    )
}

/// The test CA and a server certificate it signed for 127.0.0.1 and localhost (valid to 2126).
pub fn tls_path(name: &str) -> String {
    format!("{}/tests/providers/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A TLS server on `ip` with the test certificate, answering one request with `answer()`.
pub async fn tls_server(ip: &str) -> Server {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(tls_path("server.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(tls_path("server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    serve(ip, move |socket| {
        let acceptor = acceptor.clone();
        async move {
            let Ok(mut tls) = acceptor.accept(socket).await else {
                return;
            };
            let mut buf = vec![0u8; 65536];
            let mut seen = Vec::new();
            // The request's head and body arrive in a few reads; answer once the JSON body ended.
            while !seen.ends_with(b"}") {
                match tls.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = tls.write_all(answer().as_bytes()).await;
            let _ = tls.shutdown().await;
        }
    })
    .await
}

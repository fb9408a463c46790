//! The mock HTTP/1.1 server of the provider conformance kit (`../shared/providers/README.md`
//! §3.1): answers the n-th request with the fixture's n-th response, paced writes, and the
//! endings `normal`, `disconnect` and `stall`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::json::{Json, JsonMap};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CHUNK_DELAY: Duration = Duration::from_millis(2);
const DISCONNECT_DELAY: Duration = Duration::from_millis(100);
const NO_RESPONSE_LEFT: &str = r#"{"error":{"message":"conformance mock: no response left for this request","type":"mock_error"}}"#;

/// Recorded request headers (lowercase); `x-test-*` too.
const RECORDED: [&str; 17] = [
    "accept",
    "anthropic-beta",
    "anthropic-dangerous-direct-browser-access",
    "anthropic-version",
    "authorization",
    "content-type",
    "http-referer",
    "session-id",
    "session_id",
    "x-api-key",
    "x-app",
    "x-client-request-id",
    "x-openrouter-categories",
    "x-openrouter-title",
    "x-session-affinity",
    "x-session-id",
    "x-goog-api-key",
];

/// One planned answer.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body's writes, in order.
    pub pieces: Vec<Vec<u8>>,
    pub end: End,
    pub no_headers: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Normal,
    Disconnect,
    Stall,
}

/// The server: its port and the requests it received (as trace lines).
pub struct Mock {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Json>>>,
}

struct Plan {
    responses: Vec<Response>,
    next: usize,
}

impl Mock {
    /// Starts listening on 127.0.0.1 (port from the OS) on the current tokio runtime.
    pub async fn start(responses: Vec<Response>) -> std::io::Result<Mock> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let plan = Arc::new(Mutex::new(Plan { responses, next: 0 }));
        let recorded = requests.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, plan.clone(), recorded.clone()));
            }
        });
        Ok(Mock { port, requests })
    }
}

/// Serves requests on one connection until it closes (keep-alive).
async fn serve(mut socket: TcpStream, plan: Arc<Mutex<Plan>>, requests: Arc<Mutex<Vec<Json>>>) {
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut socket, &mut buffer).await else {
            return;
        };
        requests.lock().unwrap().push(request);
        let response = {
            let mut plan = plan.lock().unwrap();
            let response = plan.responses.get(plan.next).cloned();
            plan.next += 1;
            response
        };
        let response = response.unwrap_or_else(|| Response {
            status: 500,
            headers: vec![("content-type".into(), "application/json".into())],
            pieces: vec![NO_RESPONSE_LEFT.as_bytes().to_vec()],
            end: End::Normal,
            no_headers: false,
        });
        if !respond(&mut socket, &response).await {
            return;
        }
    }
}

/// Writes one response; false when the connection is over.
async fn respond(socket: &mut TcpStream, response: &Response) -> bool {
    if response.no_headers {
        if response.end == End::Stall {
            wait_for_close(socket).await;
        }
        return false;
    }
    let chunked = !response
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"));
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for (i, piece) in response.pieces.iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(CHUNK_DELAY).await;
        }
        if piece.is_empty() {
            continue;
        }
        let mut bytes = Vec::with_capacity(piece.len() + 16);
        if chunked {
            bytes.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            bytes.extend_from_slice(piece);
            bytes.extend_from_slice(b"\r\n");
        } else {
            bytes.extend_from_slice(piece);
        }
        if socket.write_all(&bytes).await.is_err() || socket.flush().await.is_err() {
            return false;
        }
    }
    match response.end {
        End::Normal => {
            if chunked && socket.write_all(b"0\r\n\r\n").await.is_err() {
                return false;
            }
            true
        }
        End::Disconnect => {
            tokio::time::sleep(DISCONNECT_DELAY).await;
            let _ = socket.shutdown().await;
            false
        }
        End::Stall => {
            wait_for_close(socket).await;
            false
        }
    }
}

async fn wait_for_close(socket: &mut TcpStream) {
    let mut sink = [0u8; 1024];
    while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

/// Reads one request (head + `content-length` body) as its trace line; `None` at EOF.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Json> {
    let head_end = loop {
        if let Some(i) = find(buffer, b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let mut headers = JsonMap::new();
    let mut length = 0usize;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if name == "content-length" {
            length = value.parse().unwrap_or(0);
        }
        if RECORDED.contains(&name.as_str()) || name.starts_with("x-test-") {
            headers.insert(name, Json::String(value));
        }
    }
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 65536];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buffer[body_start..body_start + length]).into_owned();
    buffer.drain(..body_start + length);
    let mut request = JsonMap::new();
    request.insert("method".into(), Json::String(method));
    request.insert("path".into(), Json::String(path));
    request.insert("headers".into(), Json::Object(headers));
    match agent::json::parse(&body) {
        Ok(json) => request.insert("body".into(), json),
        Err(_) => request.insert("bodyText".into(), Json::String(body)),
    };
    let mut line = JsonMap::new();
    line.insert("request".into(), Json::Object(request));
    Some(Json::Object(line))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

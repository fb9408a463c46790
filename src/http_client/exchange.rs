//! One HTTP/1.1 exchange on an open connection: the request written at once, the response head
//! read (at most [`READ_BUFFER_BYTES`], 100 headers), and the body read by the task that reads
//! it, through the connection's own buffer. No second task and no channel stand between the
//! socket and the reader: hyper's client handed every chunk from its connection task to the
//! reading task, a wake and two task polls per SSE event (BENCHMARKS.md).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::TRANSFER_ENCODING;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH};
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::connect::Conn;
use super::pool::{Pool, PoolKey};
use super::READ_BUFFER_BYTES;

/// The most headers a response head may have.
const MAX_HEADERS: usize = 100;
/// The first read buffer of a connection; it doubles while reads fill it, up to
/// [`READ_BUFFER_BYTES`].
const FIRST_READ_BYTES: usize = 8 * 1024;
/// The most bytes of chunk extensions, and of trailers, a body may carry.
const MAX_CHUNK_EXTRAS: usize = 16 * 1024;

/// An open connection with its read buffer.
pub(super) struct Connection {
    pub(super) io: TokioIo<Conn>,
    buffer: BytesMut,
    read_size: usize,
}

impl Connection {
    pub(super) fn new(conn: Conn) -> Connection {
        Connection {
            io: TokioIo::new(conn),
            buffer: BytesMut::new(),
            read_size: FIRST_READ_BYTES,
        }
    }

    /// The connection without its read buffer (an idle connection holds no memory of its
    /// last response; the next one starts a buffer of its size).
    fn idle(mut self) -> Connection {
        self.buffer = BytesMut::new();
        self
    }

    /// Whether the request target must be the absolute URL (a forwarding proxy).
    pub(super) fn forwarded(&self) -> bool {
        matches!(self.io.inner(), Conn::Forwarded(_))
    }

    /// Reads what the socket has into the buffer; `Ok(0)` at its end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        let room = self.buffer.capacity() - self.buffer.len();
        if room < 1024 || room < self.read_size / 4 {
            self.buffer.reserve(self.read_size);
        }
        let room = self.buffer.capacity() - self.buffer.len();
        let read = ready!(pin!(self.io.read_buf(&mut self.buffer)).poll(cx))?;
        if read == room && self.read_size < READ_BUFFER_BYTES {
            self.read_size *= 2;
        }
        Poll::Ready(Ok(read))
    }
}

/// Why an exchange gave no response.
#[derive(Debug)]
pub enum ExchangeError {
    /// The connection closed before the whole response head arrived.
    Closed {
        /// Whether any byte of the head had arrived.
        began: bool,
    },
    /// Writing the request or reading the head failed.
    Io(std::io::Error),
    /// The head is larger than [`READ_BUFFER_BYTES`] or has more than 100 headers.
    HeadTooLarge,
    /// The head is not HTTP/1.x.
    InvalidHead(String),
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::Closed { .. } => {
                f.write_str("the connection closed before the response head")
            }
            // The error itself follows as the source.
            ExchangeError::Io(_) => f.write_str("the connection failed"),
            ExchangeError::HeadTooLarge => write!(
                f,
                "the response head is too large (more than {} KB or {MAX_HEADERS} headers)",
                READ_BUFFER_BYTES / 1024
            ),
            ExchangeError::InvalidHead(why) => write!(f, "the response head is invalid: {why}"),
        }
    }
}

impl std::error::Error for ExchangeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExchangeError::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl ExchangeError {
    /// A connection taken from the pool that the server had closed: nothing of a response
    /// came, so the request was not acted on and may go on a new connection.
    pub(super) fn stale(&self) -> bool {
        match self {
            ExchangeError::Closed { began } => !began,
            ExchangeError::Io(error) => matches!(
                error.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            ),
            _ => false,
        }
    }
}

/// The request's head: request line, `host`, the headers, `content-length`.
pub(super) fn request_head(
    method: &Method,
    uri: &hyper::Uri,
    absolute: bool,
    headers: &HeaderMap,
    body_len: usize,
) -> Vec<u8> {
    let mut head = Vec::with_capacity(256 + headers.len() * 64);
    head.extend_from_slice(method.as_str().as_bytes());
    head.push(b' ');
    if absolute {
        head.extend_from_slice(uri.to_string().as_bytes());
    } else {
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        head.extend_from_slice(if target.is_empty() { "/" } else { target }.as_bytes());
    }
    head.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.contains_key(hyper::header::HOST) {
        if let Some(host) = uri.host() {
            head.extend_from_slice(b"host: ");
            head.extend_from_slice(host.as_bytes());
            let default_port = match uri.scheme_str() {
                Some("https") => 443,
                _ => 80,
            };
            if let Some(port) = uri.port_u16().filter(|&p| p != default_port) {
                head.extend_from_slice(format!(":{port}").as_bytes());
            }
            head.extend_from_slice(b"\r\n");
        }
    }
    for (name, value) in headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    let bodiless = matches!(*method, Method::GET | Method::HEAD | Method::DELETE);
    if body_len > 0 || !bodiless {
        head.extend_from_slice(format!("content-length: {body_len}\r\n").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Writes the request and reads the response head; the response's body reads on from the
/// connection, which goes back to `pool` when the body ended and the server keeps it open.
pub(super) async fn exchange(
    mut connection: Connection,
    head: Vec<u8>,
    body: &[u8],
    method: &Method,
    pool: Option<(Arc<Pool>, PoolKey)>,
) -> Result<hyper::Response<Body>, ExchangeError> {
    let mut request = head;
    request.extend_from_slice(body);
    connection
        .io
        .write_all(&request)
        .await
        .map_err(ExchangeError::Io)?;
    connection.io.flush().await.map_err(ExchangeError::Io)?;
    drop(request);
    {
        let Head {
            status,
            headers,
            http10,
            ..
        } = read_head(&mut connection, &mut HeadReader::default()).await?;
        let framing = Framing::of(method, status, &headers)?;
        let keep_alive = !http10
            && !matches!(framing, Framing::UntilClose)
            && !headers
                .get_all(CONNECTION)
                .iter()
                .any(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        let mut body = Body {
            open: Some(connection),
            framing,
            extras: 0,
            pool: pool.filter(|_| keep_alive),
        };
        // No body to read (202, 204, HEAD): the connection is free already.
        if let Framing::Length(0) = body.framing {
            body.finish();
        }
        let mut response = hyper::Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

/// Reads until the final head (past any interim ones) is buffered.
async fn read_head(
    connection: &mut Connection,
    heads: &mut HeadReader,
) -> Result<Head, ExchangeError> {
    loop {
        if let Some(head) = heads.take(&mut connection.buffer)? {
            return Ok(head);
        }
        let read = std::future::poll_fn(|cx| connection.poll_fill(cx))
            .await
            .map_err(ExchangeError::Io)?;
        if read == 0 {
            return Err(ExchangeError::Closed {
                began: heads.interim || !connection.buffer.is_empty(),
            });
        }
    }
}

/// Takes the response heads at the front of a connection's buffer as they arrive: interim ones
/// (100 Continue, 103 Early Hints) are skipped, the final one is returned once all of it is
/// there. A head is parsed only when a blank line (its end) has come, so one sent a byte at a
/// time is scanned once rather than parsed again at every read; a head longer than
/// [`READ_BUFFER_BYTES`] is refused whatever the reads that brought it.
#[derive(Default)]
pub(super) struct HeadReader {
    /// How much of the buffer was searched for a blank line.
    scanned: usize,
    /// Whether an interim head came.
    pub(super) interim: bool,
}

impl HeadReader {
    pub(super) fn take(&mut self, buffer: &mut BytesMut) -> Result<Option<Head>, ExchangeError> {
        loop {
            // Empty lines before a status line are ignored (RFC 9112 §2.2).
            let blank = buffer
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            if blank > 0 {
                buffer.advance(blank);
                self.scanned = 0;
            }
            // Where the first blank line ends (the head's end), once it came.
            let from = self.scanned.saturating_sub(2);
            let window = &buffer[from..];
            let crlf = memchr::memmem::find(window, b"\n\r\n").map(|at| at + 3);
            let lf = memchr::memmem::find(window, b"\n\n").map(|at| at + 2);
            let end = crlf.into_iter().chain(lf).min().map(|at| from + at);
            self.scanned = buffer.len();
            // The bound first: what a longer head holds is not looked at.
            if end.unwrap_or(buffer.len()) > READ_BUFFER_BYTES
                || (end.is_none() && buffer.len() >= READ_BUFFER_BYTES)
            {
                return Err(ExchangeError::HeadTooLarge);
            }
            let head = if end.is_some() {
                parse_head(buffer)?
            } else {
                None
            };
            let Some(head) = head else {
                return Ok(None);
            };
            if head.length > READ_BUFFER_BYTES {
                return Err(ExchangeError::HeadTooLarge);
            }
            buffer.advance(head.length);
            self.scanned = 0;
            if head.status.is_informational() && head.status != StatusCode::SWITCHING_PROTOCOLS {
                self.interim = true;
                continue;
            }
            return Ok(Some(head));
        }
    }
}

#[cfg(test)]
thread_local! {
    /// How many times this thread parsed a head (tests count the work a trickled head costs).
    static HEAD_PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The head at the front of `bytes`, if it is all there.
fn parse_head(bytes: &[u8]) -> Result<Option<Head>, ExchangeError> {
    #[cfg(test)]
    HEAD_PARSES.with(|parses| parses.set(parses.get() + 1));
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut slots);
    let length = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ExchangeError::HeadTooLarge),
        Err(e) => return Err(ExchangeError::InvalidHead(e.to_string())),
    };
    let code = parsed.code.unwrap_or(0);
    let status = StatusCode::from_u16(code)
        .map_err(|_| ExchangeError::InvalidHead(format!("status {code}")))?;
    let mut headers = HeaderMap::with_capacity(parsed.headers.len());
    for header in parsed.headers.iter() {
        let name = HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|_| ExchangeError::InvalidHead(format!("header name {:?}", header.name)))?;
        let value = HeaderValue::from_bytes(header.value).map_err(|_| {
            ExchangeError::InvalidHead(format!("the value of header {:?}", header.name))
        })?;
        headers.append(name, value);
    }
    Ok(Some(Head {
        status,
        headers,
        length,
        http10: parsed.version == Some(0),
    }))
}

/// A response head.
pub(super) struct Head {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    /// Its length in bytes.
    length: usize,
    /// An HTTP/1.0 response (its connection is not kept).
    http10: bool,
}

/// How a response body's end is known (RFC 9112 §6.3).
#[derive(Debug)]
pub(super) enum Framing {
    /// `content-length`: this many bytes are left.
    Length(u64),
    Chunked(Chunked),
    /// Neither: the body ends when the server closes the connection.
    UntilClose,
}

impl Framing {
    pub(super) fn of(
        method: &Method,
        status: StatusCode,
        headers: &HeaderMap,
    ) -> Result<Framing, ExchangeError> {
        if *method == Method::HEAD
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            return Ok(Framing::Length(0));
        }
        if let Some(last) = headers.get_all(TRANSFER_ENCODING).iter().next_back() {
            let chunked = last
                .as_bytes()
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            return Ok(if chunked {
                Framing::Chunked(Chunked::default())
            } else {
                Framing::UntilClose
            });
        }
        let mut length = None;
        for value in headers.get_all(CONTENT_LENGTH) {
            let parsed = std::str::from_utf8(value.as_bytes())
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| ExchangeError::InvalidHead("content-length".into()))?;
            if length.is_some_and(|l| l != parsed) {
                return Err(ExchangeError::InvalidHead("two content-lengths".into()));
            }
            length = Some(parsed);
        }
        Ok(length.map_or(Framing::UntilClose, Framing::Length))
    }
}

impl Framing {
    /// The next piece of the body from the front of `buffer` (`extras`: the bytes of chunk
    /// extensions and trailers so far).
    pub(super) fn next(
        &mut self,
        buffer: &mut BytesMut,
        extras: &mut usize,
    ) -> Result<Piece, &'static str> {
        Ok(match self {
            Framing::Length(0) => Piece::End,
            Framing::Length(_) | Framing::UntilClose if buffer.is_empty() => Piece::More,
            Framing::Length(left) => {
                let take = (*left).min(buffer.len() as u64);
                *left -= take;
                Piece::Data(buffer.split_to(take as usize).freeze())
            }
            Framing::UntilClose => Piece::Data(buffer.split().freeze()),
            Framing::Chunked(state) => return state.decode(buffer, extras),
        })
    }

    /// Whether the connection's end is the body's end (rather than a cut).
    pub(super) fn ends_at_close(&self) -> bool {
        matches!(self, Framing::UntilClose)
    }
}

/// Where a chunked body's decoding is.
#[derive(Debug, Default)]
pub(super) enum Chunked {
    /// Reading a chunk's size (hex digits so far, and their value).
    #[default]
    Start,
    Size {
        value: u64,
        digits: u8,
    },
    /// Spaces after the size.
    SizeSpace(u64),
    /// A chunk extension (ignored), `seen` bytes of extensions in this body.
    Extension(u64),
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    /// Trailer fields after the last chunk: `line` bytes of the current one.
    Trailer {
        line: usize,
    },
    TrailerLf {
        line: usize,
    },
    End,
}

/// What the buffered bytes of a body gave.
#[derive(Debug, PartialEq)]
pub(super) enum Piece {
    Data(Bytes),
    End,
    /// More bytes are needed.
    More,
}

impl Chunked {
    /// Decodes the front of `buffer`: the next piece of data, the end, or a need for more.
    fn decode(&mut self, buffer: &mut BytesMut, extras: &mut usize) -> Result<Piece, &'static str> {
        loop {
            if let Chunked::Data(left) = *self {
                if buffer.is_empty() {
                    return Ok(Piece::More);
                }
                let take = (left as usize).min(buffer.len());
                let left = left - take as u64;
                *self = if left == 0 {
                    Chunked::DataCr
                } else {
                    Chunked::Data(left)
                };
                return Ok(Piece::Data(buffer.split_to(take).freeze()));
            }
            if let Chunked::End = self {
                return Ok(Piece::End);
            }
            let Some(&byte) = buffer.first() else {
                return Ok(Piece::More);
            };
            buffer.advance(1);
            *self = match (std::mem::take(self), byte) {
                (Chunked::Start, _) => match hex(byte) {
                    Some(digit) => Chunked::Size {
                        value: digit,
                        digits: 1,
                    },
                    None => return Err("a chunk size is not hexadecimal"),
                },
                (Chunked::Size { value, digits }, _) => match hex(byte) {
                    Some(_) if digits == 16 => return Err("a chunk size is too large"),
                    Some(digit) => Chunked::Size {
                        value: value << 4 | digit,
                        digits: digits + 1,
                    },
                    None => Chunked::after_size(value, byte)?,
                },
                (Chunked::SizeSpace(value), _) => Chunked::after_size(value, byte)?,
                (Chunked::Extension(value), b'\r') => Chunked::SizeLf(value),
                (Chunked::Extension(_), b'\n') => {
                    return Err("a chunk extension has a bare line feed")
                }
                (Chunked::Extension(value), _) => {
                    *extras += 1;
                    if *extras > MAX_CHUNK_EXTRAS {
                        return Err("the chunk extensions are too long");
                    }
                    Chunked::Extension(value)
                }
                (Chunked::SizeLf(0), b'\n') => Chunked::Trailer { line: 0 },
                (Chunked::SizeLf(value), b'\n') => Chunked::Data(value),
                (Chunked::DataCr, b'\r') => Chunked::DataLf,
                (Chunked::DataLf, b'\n') => Chunked::Start,
                (Chunked::Trailer { line }, b'\r') => Chunked::TrailerLf { line },
                (Chunked::Trailer { line }, _) => {
                    *extras += 1;
                    if *extras > MAX_CHUNK_EXTRAS {
                        return Err("the trailers are too long");
                    }
                    Chunked::Trailer { line: line + 1 }
                }
                (Chunked::TrailerLf { line: 0 }, b'\n') => Chunked::End,
                (Chunked::TrailerLf { .. }, b'\n') => Chunked::Trailer { line: 0 },
                (Chunked::SizeLf(_), _) | (Chunked::TrailerLf { .. }, _) => {
                    return Err("a carriage return is not followed by a line feed")
                }
                (Chunked::DataCr | Chunked::DataLf, _) => {
                    return Err("a chunk is longer than its size")
                }
                (Chunked::Data(_) | Chunked::End, _) => unreachable!("handled above"),
            };
        }
    }

    /// The state after a chunk size's last digit.
    fn after_size(value: u64, byte: u8) -> Result<Chunked, &'static str> {
        match byte {
            b' ' | b'\t' => Ok(Chunked::SizeSpace(value)),
            b';' => Ok(Chunked::Extension(value)),
            b'\r' => Ok(Chunked::SizeLf(value)),
            _ => Err("a chunk size is not hexadecimal"),
        }
    }
}

fn hex(byte: u8) -> Option<u64> {
    (byte as char).to_digit(16).map(u64::from)
}

/// Why a body could not be read to its end.
#[derive(Debug)]
pub enum BodyError {
    /// The connection closed before the body's end.
    Closed,
    /// The body's chunked encoding is broken.
    Invalid(&'static str),
    Io(std::io::Error),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Closed => f.write_str("the connection closed inside the response body"),
            BodyError::Invalid(why) => {
                write!(f, "the response body's chunked encoding is broken: {why}")
            }
            BodyError::Io(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for BodyError {}

/// A response body, read from its connection by whoever polls it.
pub struct Body {
    /// `None` once the body ended or failed (the connection then went back to the pool, or
    /// was closed).
    open: Option<Connection>,
    framing: Framing,
    /// Bytes of chunk extensions and trailers so far.
    extras: usize,
    /// Where the connection goes when the body ended (`None`: the server closes it).
    pool: Option<(Arc<Pool>, PoolKey)>,
}

impl Body {
    /// The next piece of the body; `None` at its end (and after a failure).
    pub fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BodyError>>> {
        loop {
            let Some(connection) = self.open.as_mut() else {
                return Poll::Ready(None);
            };
            match self.framing.next(&mut connection.buffer, &mut self.extras) {
                Ok(Piece::Data(data)) => return Poll::Ready(Some(Ok(data))),
                Ok(Piece::End) => {
                    self.finish();
                    return Poll::Ready(None);
                }
                Ok(Piece::More) => {}
                Err(why) => {
                    self.open = None;
                    return Poll::Ready(Some(Err(BodyError::Invalid(why))));
                }
            }
            match ready!(connection.poll_fill(cx)) {
                Ok(0) if self.framing.ends_at_close() => {
                    self.open = None;
                    return Poll::Ready(None);
                }
                Ok(0) => {
                    self.open = None;
                    return Poll::Ready(Some(Err(BodyError::Closed)));
                }
                Ok(_) => {}
                Err(error) => {
                    self.open = None;
                    return Poll::Ready(Some(Err(BodyError::Io(error))));
                }
            }
        }
    }

    /// The next piece of the body; `None` at its end (and after a failure).
    pub fn data(&mut self) -> impl Future<Output = Option<Result<Bytes, BodyError>>> + '_ {
        std::future::poll_fn(|cx| self.poll_data(cx))
    }

    /// The body ended: its connection goes back to the pool if the server keeps it and sent
    /// nothing past the body.
    fn finish(&mut self) {
        let connection = self.open.take();
        if let (Some(connection), Some((pool, key))) = (connection, self.pool.take()) {
            if connection.buffer.is_empty() {
                pool.put(key, connection.idle());
            }
        }
    }
}

impl Unpin for Body {}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("framing", &self.framing)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `wire` fed in pieces of `step` bytes: the data and whether the end came.
    fn decode_in_steps(wire: &[u8], step: usize) -> Result<(Vec<u8>, bool), &'static str> {
        let (data, end) = decode_outcome(wire, step);
        end.map(|ended| (data, ended))
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_reads() {
        let wire =
            b"5\r\nhello\r\n1;name=value\r\n \r\nA  \r\n0123456789\r\n0\r\nx-trailer: 1\r\n\r\n";
        for step in 1..=wire.len() {
            let (data, ended) = decode_in_steps(wire, step).unwrap();
            assert_eq!(data, b"hello 0123456789", "step {step}");
            assert!(ended, "step {step}");
        }
        // Upper-case hex, no trailers.
        assert_eq!(
            decode_in_steps(b"1F\r\n0123456789012345678901234567890\r\n0\r\n\r\n", 3).unwrap(),
            (b"0123456789012345678901234567890".to_vec(), true)
        );
        // A body cut before its last chunk has not ended.
        assert_eq!(
            decode_in_steps(b"3\r\nabc\r\n", 4).unwrap(),
            (b"abc".to_vec(), false)
        );
    }

    /// A small deterministic generator (xorshift).
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    /// Any encoding of a body (chunk sizes, hex case, extensions, trailers) decodes to it, and
    /// any bytes at all decode the same whatever the reads: the data, then the same end or error.
    #[test]
    fn decoding_does_not_depend_on_the_reads() {
        let mut random = Random(0x9e37_79b9_7f4a_7c15);
        for _ in 0..500 {
            let body: Vec<u8> = (0..random.below(300)).map(|i| i as u8).collect();
            let mut wire = Vec::new();
            let mut rest = &body[..];
            while !rest.is_empty() {
                let size = (1 + random.below(40) as usize).min(rest.len());
                let hex = if random.below(2) == 0 {
                    format!("{size:x}")
                } else {
                    format!("{size:X}")
                };
                wire.extend_from_slice(hex.as_bytes());
                if random.below(4) == 0 {
                    wire.extend_from_slice(b" ;ext=1");
                }
                wire.extend_from_slice(b"\r\n");
                wire.extend_from_slice(&rest[..size]);
                wire.extend_from_slice(b"\r\n");
                rest = &rest[size..];
            }
            wire.extend_from_slice(b"0\r\n");
            if random.below(2) == 0 {
                wire.extend_from_slice(b"x-checksum: 1\r\n");
            }
            wire.extend_from_slice(b"\r\n");
            let step = 1 + random.below(wire.len() as u64) as usize;
            assert_eq!(decode_in_steps(&wire, step), Ok((body, true)));
            // The same bytes mangled: one byte changed, or cut short.
            let mut mangled = wire.clone();
            let at = random.below(mangled.len() as u64) as usize;
            if random.below(2) == 0 {
                mangled[at] = random.below(256) as u8;
            } else {
                mangled.truncate(at);
            }
            let whole = decode_outcome(&mangled, mangled.len().max(1));
            for step in [1, 2, 7, 64] {
                assert_eq!(
                    decode_outcome(&mangled, step),
                    whole,
                    "{:?}",
                    String::from_utf8_lossy(&mangled)
                );
            }
        }
    }

    /// The data decoded before an error or the end, and how decoding stopped.
    fn decode_outcome(wire: &[u8], step: usize) -> (Vec<u8>, Result<bool, &'static str>) {
        let mut state = Chunked::default();
        let mut buffer = BytesMut::new();
        let mut data = Vec::new();
        let mut extras = 0;
        for piece in wire.chunks(step) {
            buffer.extend_from_slice(piece);
            loop {
                match state.decode(&mut buffer, &mut extras) {
                    Ok(Piece::Data(bytes)) => data.extend_from_slice(&bytes),
                    Ok(Piece::End) => return (data, Ok(true)),
                    Ok(Piece::More) => break,
                    Err(why) => return (data, Err(why)),
                }
            }
        }
        (data, Ok(false))
    }

    #[test]
    fn broken_chunked_bodies_are_named() {
        for (wire, why) in [
            (&b"x\r\n"[..], "a chunk size is not hexadecimal"),
            (b"\r\n", "a chunk size is not hexadecimal"),
            (b"3\nabc", "a chunk size is not hexadecimal"),
            (b"3\r\nabcd\r\n", "a chunk is longer than its size"),
            (b"3\r\nabc\n", "a chunk is longer than its size"),
            (
                b"3\rabc",
                "a carriage return is not followed by a line feed",
            ),
            (b"11111111111111111\r\n", "a chunk size is too large"),
            (b"1;a\nb", "a chunk extension has a bare line feed"),
        ] {
            assert_eq!(
                decode_in_steps(wire, 1),
                Err(why),
                "{:?}",
                String::from_utf8_lossy(wire)
            );
        }
        let mut long_extension = b"1;".to_vec();
        long_extension.extend(std::iter::repeat_n(b'x', MAX_CHUNK_EXTRAS + 1));
        assert_eq!(
            decode_in_steps(&long_extension, 4096),
            Err("the chunk extensions are too long")
        );
        let mut long_trailer = b"0\r\n".to_vec();
        long_trailer.extend(std::iter::repeat_n(b'x', MAX_CHUNK_EXTRAS + 1));
        assert_eq!(
            decode_in_steps(&long_trailer, 4096),
            Err("the trailers are too long")
        );
    }

    /// A head sent a byte at a time is parsed once (its blank line), not at every read: the
    /// work stays linear in its length.
    #[test]
    fn a_trickled_head_is_parsed_once() {
        let mut wire = b"\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n".to_vec();
        for n in 0..90 {
            wire.extend_from_slice(format!("x-header-{n}: {}\r\n", "v".repeat(100)).as_bytes());
        }
        wire.extend_from_slice(b"\r\nbody");
        let mut heads = HeadReader::default();
        let mut buffer = BytesMut::new();
        let mut found = None;
        let parses_before = HEAD_PARSES.with(|parses| parses.get());
        for byte in &wire {
            buffer.extend_from_slice(&[*byte]);
            if let Some(head) = heads
                .take(&mut buffer)
                .map_err(|e| e.to_string())
                .ok()
                .flatten()
            {
                found = Some(head);
            }
        }
        let head = found.expect("the head");
        assert_eq!((head.status, head.headers.len()), (StatusCode::OK, 90));
        assert!(heads.interim);
        assert_eq!(&buffer[..], b"body");
        // The interim head's blank line, then the final head's.
        assert_eq!(HEAD_PARSES.with(|parses| parses.get()) - parses_before, 2);
    }

    #[test]
    fn a_response_is_framed_by_its_head() {
        let head = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.append(*name, HeaderValue::from_static(value));
            }
            map
        };
        let framing = |method: Method, status: u16, pairs: &[(&'static str, &'static str)]| {
            Framing::of(&method, StatusCode::from_u16(status).unwrap(), &head(pairs))
                .map(|f| format!("{f:?}"))
                .map_err(|e| e.to_string())
        };
        let ok = |text: &str| Ok(text.to_string());
        assert_eq!(
            framing(Method::POST, 200, &[("content-length", "12")]),
            ok("Length(12)")
        );
        assert_eq!(
            framing(
                Method::POST,
                200,
                &[
                    ("transfer-encoding", "gzip, chunked"),
                    ("content-length", "3")
                ]
            ),
            ok("Chunked(Start)")
        );
        assert_eq!(
            framing(Method::POST, 200, &[("transfer-encoding", "gzip")]),
            ok("UntilClose")
        );
        assert_eq!(framing(Method::POST, 200, &[]), ok("UntilClose"));
        assert_eq!(
            framing(Method::HEAD, 200, &[("content-length", "12")]),
            ok("Length(0)")
        );
        assert_eq!(framing(Method::POST, 204, &[]), ok("Length(0)"));
        assert_eq!(
            framing(
                Method::POST,
                200,
                &[("content-length", "1"), ("content-length", "2")]
            ),
            Err("the response head is invalid: two content-lengths".to_string())
        );
        assert_eq!(
            framing(Method::POST, 200, &[("content-length", "-1")]),
            Err("the response head is invalid: content-length".to_string())
        );
    }

    #[test]
    fn request_heads_carry_host_and_length() {
        let mut headers = HeaderMap::new();
        headers.append("x-test-a", HeaderValue::from_static("1"));
        let uri: hyper::Uri = "http://example.com:8080/v1/messages?beta=true"
            .parse()
            .unwrap();
        let head = request_head(&Method::POST, &uri, false, &headers, 12);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "POST /v1/messages?beta=true HTTP/1.1\r\nhost: example.com:8080\r\nx-test-a: 1\r\ncontent-length: 12\r\n\r\n"
        );
        let uri: hyper::Uri = "http://example.com/".parse().unwrap();
        let head = request_head(&Method::GET, &uri, true, &HeaderMap::new(), 0);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET http://example.com/ HTTP/1.1\r\nhost: example.com\r\n\r\n"
        );
    }
}

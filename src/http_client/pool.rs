//! Idle connections kept for the next request to the same place, for [`IDLE_TIMEOUT`]. An idle
//! connection is not read by anyone: one the server closed meanwhile is found (and dropped)
//! when it is taken.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, ReadBuf};

use super::exchange::Connection;
use crate::sync::lock;

/// How long an idle connection is kept.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Where a connection leads: scheme, host and port of its requests' URLs.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(super) struct PoolKey {
    scheme: String,
    host: String,
    port: u16,
}

impl PoolKey {
    pub(super) fn of(uri: &hyper::Uri) -> PoolKey {
        let https = uri.scheme_str() == Some("https");
        PoolKey {
            scheme: if https { "https" } else { "http" }.to_string(),
            host: uri.host().unwrap_or_default().to_ascii_lowercase(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
        }
    }
}

/// The idle connections of a client.
pub(super) struct Pool {
    idle: Mutex<HashMap<PoolKey, Vec<(Connection, Instant)>>>,
    /// How long an idle connection is kept ([`IDLE_TIMEOUT`]; tests shorten it).
    keep_for: Duration,
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::keeping_for(IDLE_TIMEOUT)
    }
}

impl Pool {
    pub(super) fn keeping_for(keep_for: Duration) -> Pool {
        Pool {
            idle: Mutex::default(),
            keep_for,
        }
    }

    /// The most recently used idle connection to `key` that is still open.
    pub(super) fn take(&self, key: &PoolKey) -> Option<Connection> {
        loop {
            let (mut connection, since) = lock(&self.idle).get_mut(key)?.pop()?;
            // Checked outside the lock; a closed one is dropped outside it too.
            if since.elapsed() < self.keep_for && still_open(&mut connection) {
                return Some(connection);
            }
        }
    }

    /// Keeps `connection` for the next request to `key`; connections idle too long go.
    pub(super) fn put(&self, key: PoolKey, connection: Connection) {
        let now = Instant::now();
        let mut expired = Vec::new();
        {
            let mut idle = lock(&self.idle);
            for connections in idle.values_mut() {
                let now_expired = connections
                    .extract_if(.., |(_, since)| now.duration_since(*since) >= self.keep_for);
                expired.extend(now_expired);
            }
            idle.retain(|_, connections| !connections.is_empty());
            idle.entry(key).or_default().push((connection, now));
        }
        drop(expired);
    }

    /// How many idle connections are kept.
    #[cfg(test)]
    pub(super) fn idle_count(&self) -> usize {
        lock(&self.idle).values().map(Vec::len).sum()
    }
}

/// Whether an idle connection is still open: reading it now finds nothing (had the server
/// closed it or sent anything, a read would return at once).
fn still_open(connection: &mut Connection) -> bool {
    let mut context = Context::from_waker(Waker::noop());
    let mut byte = [0u8; 1];
    let mut buf = ReadBuf::new(&mut byte);
    matches!(
        Pin::new(&mut connection.io).poll_read(&mut context, &mut buf),
        Poll::Pending
    )
}

//! Counts work in flight (run tasks, abort-callback batches) so that a caller can wait, blocking
//! or async, until none is left: how `done`, `agent_wait_for_idle` and `agent_free` keep their
//! ordering promises.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::sync::lock;

#[derive(Default)]
struct Inner {
    count: Mutex<usize>,
    idle: crate::sync::Signal,
    notify: tokio::sync::Notify,
}

/// A shared counter of work in flight. Cheap to clone.
#[derive(Clone, Default)]
pub struct Pending(Arc<Inner>);

/// One unit of work in flight: counted until dropped.
pub struct PendingGuard(Pending);

impl Pending {
    /// Counts one more unit until the returned guard is dropped.
    pub fn enter(&self) -> PendingGuard {
        *lock(&self.0.count) += 1;
        PendingGuard(self.clone())
    }

    /// Counts `future` until it is dropped, after everything it holds (completed or cancelled).
    pub fn track<F: Future + Send + 'static>(&self, future: F) -> Tracked<F> {
        Tracked {
            future: Box::pin(future),
            _guard: self.enter(),
        }
    }

    pub fn is_idle(&self) -> bool {
        *lock(&self.0.count) == 0
    }

    /// Completes once nothing is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_idle() {
                return;
            }
            notified.await;
        }
    }

    /// Blocks the calling thread until nothing is in flight.
    pub fn wait_idle_blocking(&self) {
        let count = lock(&self.0.count);
        drop(
            self.0
                .idle
                .wait_while(count, |n| *n > 0)
                .unwrap_or_else(|e| e.into_inner()),
        );
    }
}

/// A future counted until dropped. Fields drop in declaration order: the future (and all it
/// holds) before the guard.
pub struct Tracked<F> {
    future: Pin<Box<F>>,
    _guard: PendingGuard,
}

impl<F: Future> Future for Tracked<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.future.as_mut().poll(cx)
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let mut count = lock(&self.0 .0.count);
        *count -= 1;
        if *count == 0 {
            drop(count);
            self.0 .0.idle.notify_all();
            self.0 .0.notify.notify_waiters();
        }
    }
}

//! Completion of a run: what `prompt()`/`continue()` and `waitForIdle()` wait for.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::host::lock;

/// Completion of one run: released after the cleanup of SPEC §7.10.
#[derive(Default)]
pub struct RunCompletion {
    outcome: Mutex<Option<Result<(), String>>>,
    condvar: Condvar,
    notify: tokio::sync::Notify,
}

impl RunCompletion {
    pub(super) fn complete(&self, outcome: Result<(), String>) {
        *lock(&self.outcome) = Some(outcome);
        self.condvar.notify_all();
        self.notify.notify_waiters();
    }

    /// The run's outcome once it settled.
    pub fn outcome(&self) -> Option<Result<(), String>> {
        lock(&self.outcome).clone()
    }

    /// Waits (async) until the run settled; returns its outcome.
    pub async fn wait(&self) -> Result<(), String> {
        loop {
            let notified = self.notify.notified();
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            notified.await;
        }
    }

    /// Blocks the calling thread until the run settled or `timeout` passed (`false`).
    pub fn wait_blocking(&self, timeout: Option<Duration>) -> bool {
        let guard = lock(&self.outcome);
        let settled = |o: &mut Option<Result<(), String>>| o.is_none();
        match timeout {
            None => self
                .condvar
                .wait_while(guard, settled)
                .map(|g| g.is_some())
                .unwrap_or(true),
            Some(t) => self
                .condvar
                .wait_timeout_while(guard, t, settled)
                .map(|(g, _)| g.is_some())
                .unwrap_or(true),
        }
    }
}

/// Called after a run's cleanup, before `waitForIdle` waiters are released.
pub type DoneFn = Box<dyn FnOnce(Result<(), String>) + Send>;

//! Completion of a run: what `prompt()`/`continue()` and `waitForIdle()` wait for.

use crate::json::Field;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::dispatch::Executor;
use crate::error::{Error, ErrorKind};
use crate::host::AbortSignal;
use crate::json::Json;
use crate::message::Message;
use crate::sync::lock;

/// Completion of one run: released after the cleanup of SPEC §7.10. It also names the run: its
/// signal aborts this run only (a settled run's abort reaches nothing).
#[derive(Default)]
pub struct RunCompletion {
    signal: AbortSignal,
    /// Host-pumped runs progress only when dispatched: a blocking wait dispatches.
    executor: Executor,
    outcome: Mutex<Option<Result<(), String>>>,
    /// How the run ended, set before `outcome` (see [`RunCompletion::result`]).
    ending: Mutex<Option<Result<(), Error>>>,
    /// The messages the run added to the transcript (its `message_end` messages), in order.
    added: Mutex<Vec<Message>>,
    condvar: crate::sync::Signal,
    notify: tokio::sync::Notify,
}

impl RunCompletion {
    pub(super) fn new(signal: AbortSignal, executor: Executor) -> Self {
        RunCompletion {
            signal,
            executor,
            ..Default::default()
        }
    }

    /// Aborts this run (nothing once it settled).
    pub fn abort(&self) {
        if self.outcome().is_none() {
            self.signal.abort();
        }
    }

    /// Records how the run ended; set before its `done` is called.
    pub(super) fn set_ending(&self, ending: Result<(), Error>) {
        *lock(&self.ending) = Some(ending);
    }

    pub(super) fn record_message(&self, message: &Message) {
        lock(&self.added).push(message.clone());
    }

    /// The messages the run added so far (shared, not copied).
    pub fn added_messages(&self) -> Vec<Message> {
        lock(&self.added).clone()
    }

    /// Settles the run with its promise's outcome and releases the waiters.
    pub(super) fn complete(&self, outcome: Result<(), String>) {
        *lock(&self.outcome) = Some(outcome);
        self.condvar.notify_all();
        self.notify.notify_waiters();
    }

    /// The run's outcome once it settled.
    pub fn outcome(&self) -> Option<Result<(), String>> {
        lock(&self.outcome).clone()
    }

    /// How the run ended, beyond its promise (`outcome`; set just before `done`): `Ok` when it completed,
    /// `ModelError` / `Aborted` (carrying the `errorMessage`) when its last assistant message
    /// stopped with "error" / "aborted", `RunFailed` when the promise rejected. `None` until it
    /// settled.
    pub fn result(&self) -> Option<Result<(), Error>> {
        lock(&self.ending).clone()
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

    /// True where a blocking wait for this run could never end (see `Agent`).
    pub fn blocking_would_deadlock(&self) -> bool {
        self.executor.blocking_would_deadlock()
    }

    /// Blocks the calling thread until the run settled or `timeout` passed (`false`). A
    /// host-pumped run is dispatched on the calling thread meanwhile.
    pub fn wait_blocking(&self, timeout: Option<Duration>) -> bool {
        if let Executor::Dispatcher(dispatcher) = &self.executor {
            if self.outcome().is_none() {
                return dispatcher.run_until(|| self.outcome().is_some(), timeout);
            }
            return true;
        }
        self.wait_settled(timeout)
    }

    /// Blocks until the run settled or `timeout` passed (`false`), without dispatching: for a
    /// run whose `done` another thread is running (a dispatch here would run host callbacks of
    /// a host-pumped agent on a thread that did not ask for them).
    pub fn wait_settled(&self, timeout: Option<Duration>) -> bool {
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

/// Called after a run's cleanup, before `waitForIdle` waiters are released, with the run (its
/// ending is recorded) and the outcome of its promise.
pub type DoneFn = Box<dyn FnOnce(&Arc<RunCompletion>, Result<(), String>) + Send>;

/// What a turn's assistant message says about the run's outcome: `Err(ModelError)` for
/// stopReason "error", `Err(Aborted)` for "aborted" (with the `errorMessage`), else `Ok`.
pub(super) fn turn_result(message: &Json) -> Result<(), Error> {
    let error_message = || {
        message
            .field("errorMessage")
            .and_then(Json::as_str)
            .filter(|text| !text.is_empty())
    };
    match message.field("stopReason").and_then(Json::as_str) {
        Some("error") => Err(Error::new(
            ErrorKind::ModelError,
            error_message().unwrap_or("The model request failed."),
        )),
        Some("aborted") => Err(Error::new(
            ErrorKind::Aborted,
            error_message().unwrap_or("The run was aborted."),
        )),
        _ => Ok(()),
    }
}

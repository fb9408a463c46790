//! Errors of the public API, by kind. Each kind is one status code at the C ABI, so neither the
//! FFI nor a Rust host ever has to recognise an error by its text.

use std::fmt;

/// What went wrong, as a category a host can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A run is active: prompt, continue and reset fail with the reference's texts (SPEC §7.18).
    Busy,
    /// The agent's state does not allow it: nothing to continue from, the agent was shut
    /// down, or this is a child process made by `fork()`.
    InvalidState,
    /// An input had the wrong shape or an unknown value (options, patches, messages).
    InvalidInput,
    /// No stream function was given and no process-wide default is configured.
    NoStreamFn,
    /// The run failed: the reference's `prompt()`/`continue()` promise rejected.
    RunFailed,
    /// The run ended with an assistant message whose stopReason is "error": the model request
    /// failed (or the stream function or a hook did); the message is its `errorMessage`.
    ModelError,
    /// The run was aborted (its last assistant message's stopReason is "aborted").
    Aborted,
    /// The event queue is closed and empty.
    Closed,
    /// A wait ran out of time.
    Timeout,
    /// A blocking wait was called on the runtime thread, where it could never finish.
    WouldDeadlock,
    /// A session file could not be written (or read): the message names the file and the
    /// system's error.
    Io,
}

/// An error with its kind and the message (the reference's exact text where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// A closure turning a message into an error of `kind` (for `map_err`).
    pub fn of(kind: ErrorKind) -> impl Fn(String) -> Error {
        move |message| Error::new(kind, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's `Error`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

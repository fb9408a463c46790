//! Run handles: one prompt or continue, named so that a host aborts, waits for and reads exactly
//! that run (never a later one).

use crate::json::Field;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::handles::Registry;
use super::*;
use crate::agent::RunCompletion;
use crate::error::ErrorKind;

/// A run started by `agent_prompt` or `agent_continue`: a generation-checked value; `{0}` is the
/// null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentRun {
    pub id: u64,
}

/// How a run ended: one of the `AGENT_RUN_*` values.
pub type AgentRunStatus = i32;

/// The run has not settled yet.
pub const AGENT_RUN_RUNNING: AgentRunStatus = 0;
/// The run completed (its last assistant message did not stop with "error" or "aborted").
pub const AGENT_RUN_COMPLETED: AgentRunStatus = 1;
/// The run ended with stopReason "error": the model request, the stream function or a hook
/// failed; `error_message` is the message's `errorMessage`.
pub const AGENT_RUN_MODEL_ERROR: AgentRunStatus = 2;
/// The run was aborted (stopReason "aborted").
pub const AGENT_RUN_ABORTED: AgentRunStatus = 3;
/// The run failed: a listener failed while the run was failing (the reference's promise
/// rejected); `error_message` says why.
pub const AGENT_RUN_FAILED: AgentRunStatus = 4;
/// The agent was freed while the run was active.
pub const AGENT_RUN_FREED: AgentRunStatus = 5;

/// What a run did. Its texts belong to the run handle (valid until `agent_run_free`; inside
/// `done`, for the callback).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AgentRunOutcome {
    pub status: AgentRunStatus,
    /// The `stopReason` of the last assistant message the run added ("" when none).
    pub stop_reason: AgentStr,
    /// Why the run did not complete ("" when it did).
    pub error_message: AgentStr,
    /// How many messages the run added to the transcript (`agent_run_messages` returns them).
    pub message_count: usize,
}

/// Called once when a run settled (after its cleanup, before waiters are released), with the
/// run and its outcome (both valid for the call). Runs on the runtime thread, or inside
/// `agent_dispatch` for an agent built with a dispatcher (a host-pumped run ended by `agent_free`
/// outside a dispatch: inside the next dispatch, after waiters were released).
pub type AgentDoneFn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, run: AgentRun, outcome: *const AgentRunOutcome),
>;

/// The outcome of a settled run, computed once.
struct Recorded {
    status: AgentRunStatus,
    stop_reason: CString,
    error_message: CString,
    message_count: usize,
}

impl Recorded {
    fn of(completion: &RunCompletion, freed: bool) -> Option<Recorded> {
        let ending = completion.result()?;
        let messages = completion.added_messages();
        let stop_reason = messages
            .iter()
            .rev()
            .map(|m| m.json())
            .find(|m| crate::message::role(m) == "assistant")
            .and_then(|m| m.field("stopReason"))
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let (status, error_message) = match ending {
            Ok(()) => (AGENT_RUN_COMPLETED, String::new()),
            Err(e) => match e.kind {
                ErrorKind::ModelError => (AGENT_RUN_MODEL_ERROR, e.message),
                ErrorKind::Aborted => (AGENT_RUN_ABORTED, e.message),
                _ if freed => (AGENT_RUN_FREED, e.message),
                _ => (AGENT_RUN_FAILED, e.message),
            },
        };
        let c = |text: String| CString::new(text.replace('\0', " ")).unwrap_or_default();
        Some(Recorded {
            status,
            stop_reason: c(stop_reason),
            error_message: c(error_message),
            message_count: messages.len(),
        })
    }

    fn outcome(&self) -> AgentRunOutcome {
        let text = |s: &CString| AgentStr {
            ptr: s.as_ptr(),
            len: s.as_bytes().len(),
        };
        AgentRunOutcome {
            status: self.status,
            stop_reason: text(&self.stop_reason),
            error_message: text(&self.error_message),
            message_count: self.message_count,
        }
    }
}

const RUNNING: AgentRunOutcome = AgentRunOutcome {
    status: AGENT_RUN_RUNNING,
    stop_reason: AgentStr::EMPTY,
    error_message: AgentStr::EMPTY,
    message_count: 0,
};

pub(crate) struct FfiRun {
    /// Set once the run started (the handle exists before, so `done` can name it).
    completion: OnceLock<Arc<RunCompletion>>,
    freed: Arc<AtomicBool>,
    recorded: OnceLock<Recorded>,
}

impl FfiRun {
    fn completion(&self) -> FfiResult<&Arc<RunCompletion>> {
        self.completion.get().ok_or_else(|| FfiError {
            status: AGENT_ERR_INVALID_HANDLE,
            message: "run is not a started run.".into(),
        })
    }

    fn recorded(&self, completion: &RunCompletion) -> Option<&Recorded> {
        if let Some(recorded) = self.recorded.get() {
            return Some(recorded);
        }
        let recorded = Recorded::of(completion, self.freed.load(Ordering::SeqCst))?;
        Some(self.recorded.get_or_init(|| recorded))
    }
}

static RUNS: Registry<Arc<FfiRun>> = Registry::new("run", 0x7a11_7a11_0000_0000);

fn run_arg(run: AgentRun) -> FfiResult<Arc<FfiRun>> {
    RUNS.get(run.id, "run")
}

/// Starts a run through `start`, with its handle and `done` wired up. `out_run` NULL: the host
/// does not keep the handle (it is valid inside `done` only).
pub(crate) fn start_run(
    freed: &Arc<AtomicBool>,
    done: AgentDoneFn,
    user_data: *mut c_void,
    out_run: *mut AgentRun,
    start: impl FnOnce(crate::agent::DoneFn) -> Result<Arc<RunCompletion>, crate::error::Error>,
) -> FfiResult {
    let ffi_run = Arc::new(FfiRun {
        completion: OnceLock::new(),
        freed: freed.clone(),
        recorded: OnceLock::new(),
    });
    let token = RUNS.insert(ffi_run.clone());
    let keep = !out_run.is_null();
    let data = HostData::new(user_data, None);
    let this = ffi_run.clone();
    let on_done: crate::agent::DoneFn = Box::new(move |completion, _promise| {
        // A run may settle before `start` returned: its handle gets the completion here.
        let _ = this.completion.set(completion.clone());
        let outcome = this.recorded(completion).map_or(RUNNING, Recorded::outcome);
        if let Some(callback) = done {
            // SAFETY: the host registered this callback for this user_data.
            guard_callback(|| unsafe {
                callback(data.user_data, AgentRun { id: token }, &outcome)
            });
        }
        if !keep {
            RUNS.remove(token);
        }
    });
    match start(on_done) {
        Ok(completion) => {
            let _ = ffi_run.completion.set(completion);
            if keep {
                write_out(out_run, AgentRun { id: token });
            }
            Ok(())
        }
        Err(error) => {
            RUNS.remove(token);
            if freed.load(Ordering::SeqCst) {
                return err(AGENT_ERR_INVALID_HANDLE, "agent is a freed agent.");
            }
            Err(error.into())
        }
    }
}

/// Aborts this run's signal. A settled run's abort does nothing (it never reaches a later run).
/// Abort callbacks run later, never inside this call.
#[no_mangle]
pub extern "C" fn agent_run_abort(run: AgentRun) -> *mut AgentError {
    boundary(|| {
        let ffi_run = run_arg(run)?;
        if ffi_run.recorded.get().is_some() {
            return Ok(()); // settled: nothing to abort (also inside `done` of a run that settled at once)
        }
        ffi_run.completion()?.abort();
        Ok(())
    })
}

/// What a wait saw: one of the `AGENT_WAIT_*` values.
pub type AgentWaitResult = i32;
/// The awaited thing happened.
pub const AGENT_WAIT_DONE: AgentWaitResult = 0;
/// The time ran out first.
pub const AGENT_WAIT_TIMEOUT: AgentWaitResult = 1;

/// Blocks until the run settled and its `done` returned (at once when it has), or `timeout_ms`
/// passed (< 0: no limit); writes `AGENT_WAIT_DONE` or `AGENT_WAIT_TIMEOUT`. A host-pumped run is
/// dispatched on the calling thread while it waits. Fails with `AGENT_ERR_WOULD_DEADLOCK` for a run
/// that has not settled when called inside a callback: on the runtime thread, or (for a
/// host-pumped run) inside any `agent_dispatch` on this thread.
#[no_mangle]
pub unsafe extern "C" fn agent_run_wait(
    run: AgentRun,
    timeout_ms: i64,
    out_result: *mut AgentWaitResult,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_result, "out_result")?;
        let ffi_run = run_arg(run)?;
        let completion = ffi_run.completion()?;
        if completion.outcome().is_none() && completion.blocking_would_deadlock() {
            return err(
                AGENT_ERR_WOULD_DEADLOCK,
                "agent_run_wait was called inside a callback (on the runtime thread, or inside agent_dispatch), where the run cannot finish.",
            );
        }
        let timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        let settled = completion.wait_blocking(timeout);
        write_out(
            out_result,
            if settled {
                AGENT_WAIT_DONE
            } else {
                AGENT_WAIT_TIMEOUT
            },
        );
        Ok(())
    })
}

/// Writes the run's outcome (`status` `AGENT_RUN_RUNNING` until it settled). O(1) once settled:
/// no state is copied; the texts belong to the run handle.
#[no_mangle]
pub unsafe extern "C" fn agent_run_outcome(
    run: AgentRun,
    out_outcome: *mut AgentRunOutcome,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_outcome, "out_outcome")?;
        let ffi_run = run_arg(run)?;
        // Recorded before `done` runs, which may be before `start_run` stored the completion
        // (a run that settles at once): inside `done` the outcome is already there.
        let outcome = match ffi_run.recorded.get() {
            Some(recorded) => recorded.outcome(),
            None => ffi_run
                .recorded(ffi_run.completion()?)
                .map_or(RUNNING, Recorded::outcome),
        };
        write_out(out_outcome, outcome);
        Ok(())
    })
}

/// Writes `*out_json` (free with `agent_string_free`; its length to `*out_len` when not NULL): a
/// JSON array of the messages the run added to the transcript so far, in order. Costs the size of
/// those messages only.
#[no_mangle]
pub unsafe extern "C" fn agent_run_messages(
    run: AgentRun,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_json, "out_json")?;
        let ffi_run = run_arg(run)?;
        let messages = ffi_run.completion()?.added_messages();
        let mut text = String::new();
        crate::message::write_json_array(&mut text, &messages);
        write_owned_text(out_json, out_len, &text);
        Ok(())
    })
}

/// Drops the host's handle to a run. The run goes on; its `done` is still called.
#[no_mangle]
pub extern "C" fn agent_run_free(run: AgentRun) -> *mut AgentError {
    boundary(|| {
        run_arg(run)?;
        RUNS.remove(run.id);
        Ok(())
    })
}

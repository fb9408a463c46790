//! Host-pumped mode from C: a dispatcher, agents built with it, and the dispatch call that runs
//! their callbacks on the host's thread (see `crate::dispatch`).

use std::time::Duration;

use super::handles::Registry;
use super::options::{with_options, AgentOptions};
use super::run::{AgentWaitResult, AGENT_WAIT_DONE, AGENT_WAIT_TIMEOUT};
use super::*;
use crate::dispatch::Dispatcher;

/// A dispatcher: agents built with it call host code only inside `agent_dispatch` (a
/// generation-checked value; `{0}` is the null handle).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentDispatcher {
    pub id: u64,
}

static DISPATCHERS: Registry<Dispatcher> = Registry::new("dispatcher", 0xd15b_d15b_0000_0000);

fn millis(ms: i64) -> Option<Duration> {
    (ms >= 0).then(|| Duration::from_millis(ms as u64))
}

/// Creates a dispatcher. Writes `*out_dispatcher`; free it with `agent_dispatcher_free`.
#[no_mangle]
pub unsafe extern "C" fn agent_dispatcher_new(
    out_dispatcher: *mut AgentDispatcher,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_dispatcher, "out_dispatcher")?;
        let id = DISPATCHERS.insert(Dispatcher::new());
        write_out(out_dispatcher, AgentDispatcher { id });
        Ok(())
    })
}

/// Builds the agent in host-pumped mode: its listeners, tools, hooks, stream function, `done`,
/// abort and consumed notifications run only inside `agent_dispatch(dispatcher, ...)` (and inside
/// `agent_run_wait` / `agent_wait_for_idle`, which dispatch while they wait), on the calling
/// thread, never on libagent's runtime thread. Network and timers keep running there. Several
/// agents may share one dispatcher.
#[no_mangle]
pub extern "C" fn agent_options_set_dispatcher(
    options: AgentOptions,
    dispatcher: AgentDispatcher,
) -> *mut AgentError {
    boundary(|| {
        let dispatcher = DISPATCHERS.get(dispatcher.id, "dispatcher")?;
        with_options(options, |o| {
            o.dispatcher = Some(dispatcher);
            Ok(())
        })
    })
}

/// Runs the callbacks that are ready, on the calling thread, until none is ready or `budget_ms`
/// has passed (< 0: no limit; checked between callbacks, after at least one, so a frame budget
/// holds as long as each callback is short). Writes how many tasks ran to `*out_ran` when not
/// NULL. Returns at once when nothing is ready.
#[no_mangle]
pub unsafe extern "C" fn agent_dispatch(
    dispatcher: AgentDispatcher,
    budget_ms: i64,
    out_ran: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        let dispatcher = DISPATCHERS.get(dispatcher.id, "dispatcher")?;
        let ran = dispatcher.dispatch(millis(budget_ms));
        if !out_ran.is_null() {
            write_out(out_ran, ran);
        }
        Ok(())
    })
}

/// Blocks until a callback is ready to dispatch or `timeout_ms` passed (< 0: no limit); writes
/// `AGENT_WAIT_DONE` (something is ready: call `agent_dispatch`) or `AGENT_WAIT_TIMEOUT`. For a
/// host that waits for "a run finished or a tool call is waiting" besides its own work.
#[no_mangle]
pub unsafe extern "C" fn agent_dispatcher_wait(
    dispatcher: AgentDispatcher,
    timeout_ms: i64,
    out_result: *mut AgentWaitResult,
) -> *mut AgentError {
    boundary(|| {
        check_out(out_result, "out_result")?;
        let dispatcher = DISPATCHERS.get(dispatcher.id, "dispatcher")?;
        let ready = dispatcher.wait(millis(timeout_ms));
        write_out(
            out_result,
            if ready {
                AGENT_WAIT_DONE
            } else {
                AGENT_WAIT_TIMEOUT
            },
        );
        Ok(())
    })
}

/// Drops the host's handle. Agents built with the dispatcher keep it (their callbacks still run
/// only inside dispatch calls, so free it after them).
#[no_mangle]
pub extern "C" fn agent_dispatcher_free(dispatcher: AgentDispatcher) -> *mut AgentError {
    boundary(|| {
        DISPATCHERS.get(dispatcher.id, "dispatcher")?;
        DISPATCHERS.remove(dispatcher.id);
        Ok(())
    })
}

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
/// abort and consumed notifications and the finalizers of everything it was given run only
/// inside `agent_dispatch(dispatcher, ...)` (and inside `agent_run_wait` /
/// `agent_wait_for_idle`, which dispatch while they wait), on the calling thread, never on
/// libagent's runtime thread nor on a thread that frees, unsubscribes or replaces something: a
/// finalizer (or a freed run's `done`) whose last reference drops elsewhere is queued for the
/// next dispatch. Network and timers keep running on the runtime thread. Several agents may
/// share one dispatcher. A tool (or coding tool pack) given to several host-pumped agents has its
/// finalizers confined to the dispatcher of the first; the process-wide default stream
/// function's finalizer is not confined.
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
/// has passed (< 0: no limit). The budget is checked before every callback after the first, so
/// a dispatch overruns it by at most one callback: a frame budget holds as long as each callback
/// is short. Writes how many task steps ran to `*out_ran` when not NULL (one step may run several
/// callbacks). Returns at once when nothing is ready.
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

/// Frees the dispatcher: first runs, on the calling thread, the finalizers and `done` calls still
/// queued (those of agents freed before it, for instance), so nothing is left waiting for a
/// dispatch that can no longer come. Free it after the agents built with it: an agent still alive
/// keeps its queue, its run progresses only inside `agent_run_wait` / `agent_wait_for_idle`, and
/// its later finalizers and `done` run on the thread where they are released.
#[no_mangle]
pub extern "C" fn agent_dispatcher_free(dispatcher: AgentDispatcher) -> *mut AgentError {
    boundary(|| {
        DISPATCHERS.get(dispatcher.id, "dispatcher")?;
        if let Some(dispatcher) = DISPATCHERS.remove(dispatcher.id) {
            dispatcher.close();
        }
        Ok(())
    })
}

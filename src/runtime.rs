//! The process-wide runtime: one dedicated thread (`libagent-rt`) running a current-thread tokio
//! runtime, started lazily. Every agent run is a task on it and every host callback runs on it.

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use tokio::runtime::Handle;

static RUNTIME: OnceLock<Handle> = OnceLock::new();
static WORKERS: OnceLock<usize> = OnceLock::new();
/// Set in a child made by `fork()` after the runtime started (a handler registered then): the
/// child has no runtime thread. A flag, not a process id compared at every run: `getpid` is a
/// system call.
static FORKED_CHILD: AtomicBool = AtomicBool::new(false);

/// The text of every call that needs the runtime in a forked child.
pub const FORKED: &str =
    "libagent cannot run agents in a child process made by fork(): its runtime thread exists only in the parent.";

/// Fails in a child process made by `fork()` after the runtime started in the parent (the
/// child has no runtime thread, so a run would never progress).
pub fn check_not_forked() -> Result<(), String> {
    match FORKED_CHILD.load(Ordering::Relaxed) {
        true => Err(FORKED.into()),
        false => Ok(()),
    }
}

/// Marks the children `fork()` makes from now on.
fn watch_forks() {
    #[cfg(unix)]
    {
        extern "C" fn in_child() {
            // Async-signal-safe: one atomic store.
            FORKED_CHILD.store(true, Ordering::Relaxed);
        }
        // SAFETY: registers a handler that only stores to an atomic; it stays valid for the
        // process's life (a static function).
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    }
}

thread_local! {
    static ON_RUNTIME: Cell<bool> = const { Cell::new(false) };
}

/// Chooses the runtime flavour before first use: 0 or 1 = one current-thread runtime thread
/// (the default), N > 1 = a multi-thread runtime with N workers. Fails once the runtime started.
pub fn configure(workers: usize) -> Result<(), String> {
    if RUNTIME.get().is_some() {
        return Err("The runtime is already running; configure it before first use.".into());
    }
    WORKERS
        .set(workers)
        .map_err(|_| "The runtime was already configured.".to_string())
}

/// The runtime's handle, starting the runtime on first use.
pub fn handle() -> &'static Handle {
    RUNTIME.get_or_init(start)
}

fn start() -> Handle {
    watch_forks();
    let workers = WORKERS.get().copied().unwrap_or(1);
    if workers > 1 {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("libagent-rt")
            .on_thread_start(|| ON_RUNTIME.with(|f| f.set(true)))
            .enable_all()
            .build()
            .expect("libagent: cannot start the runtime");
        let handle = runtime.handle().clone();
        // The runtime lives for the whole process.
        std::mem::forget(runtime);
        return handle;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("libagent-rt".into())
        .spawn(move || {
            ON_RUNTIME.with(|f| f.set(true));
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("libagent: cannot start the runtime");
            let _ = tx.send(runtime.handle().clone());
            runtime.block_on(std::future::pending::<()>());
        })
        .expect("libagent: cannot start the runtime thread");
    rx.recv()
        .expect("libagent: the runtime thread did not start")
}

/// Spawns a task on the runtime.
pub fn spawn<F>(future: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    handle().spawn(future);
}

/// True on a runtime thread (where blocking waits would deadlock).
pub fn is_runtime_thread() -> bool {
    ON_RUNTIME.with(Cell::get)
}

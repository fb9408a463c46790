//! Host-pumped execution. An agent built with a [`Dispatcher`] runs its loop, and so every host
//! callback of that agent, only inside [`Dispatcher::dispatch`], on the thread that calls it (a
//! game engine's main thread, once per frame). Network and timers keep running on the runtime
//! thread: they only wake the agent's task, which waits in the dispatcher's ready queue.

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use crate::sync::lock;

type BoxedTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A queue of agent tasks (and plain callbacks) that run only when the host dispatches.
#[derive(Clone, Default)]
pub struct Dispatcher(Arc<Inner>);

#[derive(Default)]
struct Inner {
    ready: Mutex<VecDeque<Arc<Task>>>,
    wakeup: crate::sync::Signal,
    /// Set by `close` (the host freed its handle): confined callbacks then run where they are
    /// posted, since no dispatch may come any more.
    closed: AtomicBool,
}

/// A dispatcher that does not keep its queue alive (host data refers to its home this way, so
/// that no cycle runs through the queue's tasks).
#[derive(Clone)]
pub struct WeakDispatcher(Weak<Inner>);

impl WeakDispatcher {
    /// Runs `callback` confined to the dispatcher (see [`Dispatcher::run_confined`]); at once
    /// when the dispatcher is gone.
    pub fn run_confined(&self, callback: impl FnOnce() + Send + 'static) {
        match self.0.upgrade() {
            Some(inner) => Dispatcher(inner).run_confined(callback),
            None => callback(),
        }
    }
}

// Task states: in the ready queue at most once, and never polled by two threads at a time.
const IDLE: u8 = 0;
const QUEUED: u8 = 1;
const RUNNING: u8 = 2;
/// Woken while running: queued again once the poll returns.
const RUNNING_WOKEN: u8 = 3;

struct Task {
    future: Mutex<Option<BoxedTask>>,
    state: AtomicU8,
    cancelled: AtomicBool,
    dispatcher: Weak<Inner>,
    /// A posted host callback (a finalizer, a `done`), not an agent's task: `close` runs it.
    confined_callback: bool,
}

impl Task {
    fn queue(self: &Arc<Self>) {
        if let Some(inner) = self.dispatcher.upgrade() {
            lock(&inner.ready).push_back(self.clone());
            inner.wakeup.notify_all();
        }
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let next = match state {
                IDLE => QUEUED,
                RUNNING => RUNNING_WOKEN,
                _ => return,
            };
            match self
                .state
                .compare_exchange(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == QUEUED => return self.queue(),
                Ok(_) => return,
                Err(actual) => state = actual,
            }
        }
    }
}

/// A spawned task: cancelling it drops its future at once unless a dispatch is polling it (then
/// right after that poll).
#[derive(Clone)]
pub struct DispatchedTask(Arc<Task>);

impl DispatchedTask {
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let future = lock(&self.0.future).take();
        drop(future);
    }
}

thread_local! {
    /// How many dispatches are running on this thread (callbacks inside one must not block on
    /// the agent's progress: only this thread could make it).
    static DISPATCHING: Cell<usize> = const { Cell::new(0) };
    /// When the innermost dispatch on this thread must give the thread back.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The dispatcher of the innermost dispatch on this thread (its address; 0: none).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    /// Whether a host callback started in the innermost dispatch on this thread.
    static CALLBACK_STARTED: Cell<bool> = const { Cell::new(false) };
}

/// Dispatches running on any thread: while none is, no thread is inside one, and the checks
/// before every callback read no thread-local (a thread sees its own increment).
static ANY_DISPATCHING: AtomicUsize = AtomicUsize::new(0);

/// True inside `dispatch` (in a callback of a host-pumped agent).
pub fn is_dispatching() -> bool {
    ANY_DISPATCHING.load(Ordering::Relaxed) > 0 && dispatching_here()
}

/// Out of line: the thread-local's address is then not computed where no dispatch runs.
#[inline(never)]
fn dispatching_here() -> bool {
    DISPATCHING.with(Cell::get) > 0
}

/// True inside a dispatch whose budget is spent: a task should yield before its next host
/// callback, so the host gets its frame back.
pub fn budget_spent() -> bool {
    DEADLINE
        .with(Cell::get)
        .is_some_and(|deadline| Instant::now() >= deadline)
}

/// Called right before a host callback starts. False inside a dispatch whose budget is spent
/// and that already started a callback: the task must give the thread back first. Otherwise
/// true, and the callback counts as started.
pub fn may_start_callback() -> bool {
    !is_dispatching() || may_start_in_dispatch()
}

/// `may_start_callback` inside a dispatch (out of line, as `dispatching_here`).
#[inline(never)]
fn may_start_in_dispatch() -> bool {
    // The flag first: the first callback of a dispatch reads no clock.
    if CALLBACK_STARTED.with(Cell::get) && budget_spent() {
        return false;
    }
    CALLBACK_STARTED.with(|started| started.set(true));
    true
}

/// Awaited before every host callback of an agent: inside a dispatch whose budget is spent, the
/// task gives the thread back first (it resumes at the next dispatch, where its callback is
/// the first), so a dispatch runs at least one callback and overruns its budget by at most one.
/// Ready at once anywhere else.
pub async fn before_callback() {
    while !may_start_callback() {
        yield_now().await;
    }
}

/// Returns `Pending` once (waking itself at once), then `Ready`: the task goes back to the end
/// of its executor's queue.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

impl Dispatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `future`; it first runs at the next dispatch.
    pub fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) -> DispatchedTask {
        let task = self.new_task(Box::pin(future), false);
        task.queue();
        DispatchedTask(task)
    }

    fn new_task(&self, future: BoxedTask, confined_callback: bool) -> Arc<Task> {
        Arc::new(Task {
            future: Mutex::new(Some(future)),
            state: AtomicU8::new(QUEUED),
            cancelled: AtomicBool::new(false),
            dispatcher: Arc::downgrade(&self.0),
            confined_callback,
        })
    }

    /// A reference that does not keep the dispatcher alive.
    pub fn downgrade(&self) -> WeakDispatcher {
        WeakDispatcher(Arc::downgrade(&self.0))
    }

    /// True inside a dispatch of this dispatcher on the calling thread.
    pub fn is_dispatching_here(&self) -> bool {
        CURRENT.with(Cell::get) == Arc::as_ptr(&self.0) as usize
    }

    /// Runs a host callback of a host-pumped agent (a finalizer, a `done`) only inside a
    /// dispatch of this dispatcher: at once when the calling thread is inside one, else queued
    /// for the next. Once the dispatcher was closed it runs at once (no dispatch may come).
    pub fn run_confined(&self, callback: impl FnOnce() + Send + 'static) {
        if self.is_dispatching_here() {
            return callback();
        }
        let task = self.new_task(Box::pin(async move { callback() }), true);
        {
            let mut ready = lock(&self.0.ready);
            if !self.0.closed.load(Ordering::SeqCst) {
                ready.push_back(task);
                self.0.wakeup.notify_all();
                return;
            }
        }
        // Closed: run here, outside the queue's lock.
        let future = lock(&task.future).take();
        if let Some(future) = future {
            poll_once(future);
        }
    }

    /// The host freed its handle: runs the confined callbacks still queued on the calling
    /// thread (as a dispatch would), and from now on runs later ones where they are posted.
    /// Agents' tasks stay queued (their runs' waits still dispatch them).
    pub fn close(&self) {
        let callbacks: VecDeque<Arc<Task>> = {
            let mut ready = lock(&self.0.ready);
            self.0.closed.store(true, Ordering::SeqCst);
            let (callbacks, tasks) = std::mem::take(&mut *ready)
                .into_iter()
                .partition(|task| task.confined_callback);
            *ready = tasks;
            callbacks
        };
        let _scope = DispatchScope::enter(self, None);
        for task in callbacks {
            let future = lock(&task.future).take();
            if let Some(future) = future {
                poll_once(future);
            }
        }
    }

    /// Runs ready tasks on the calling thread until none is ready or `budget` has passed
    /// (checked between tasks, after at least one; an agent run yields after the event it is
    /// delivering once the budget is spent). Returns how many task steps it ran.
    pub fn dispatch(&self, budget: Option<Duration>) -> usize {
        // Timers and sockets created inside the tasks belong to the runtime, which drives them.
        let _context = crate::runtime::handle().enter();
        // No budget, no clock.
        let deadline = budget.and_then(|b| Instant::now().checked_add(b));
        let _scope = DispatchScope::enter(self, deadline);
        let mut ran = 0;
        loop {
            if ran > 0 && deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                break;
            }
            let Some(task) = lock(&self.0.ready).pop_front() else {
                break;
            };
            task.state.store(RUNNING, Ordering::Release);
            ran += 1;
            let future = lock(&task.future).take();
            let Some(mut future) = future else {
                // Finished or cancelled.
                task.state.store(IDLE, Ordering::Release);
                continue;
            };
            let waker = Waker::from(task.clone());
            let mut context = Context::from_waker(&waker);
            let poll = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut context)));
            if matches!(poll, Ok(Poll::Pending)) && !task.cancelled.load(Ordering::SeqCst) {
                *lock(&task.future) = Some(future);
            } else {
                // Done, panicked or cancelled: dropped here, outside every lock.
                drop(future);
            }
            if task
                .state
                .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                task.state.store(QUEUED, Ordering::Release);
                task.queue();
            }
        }
        ran
    }

    /// Blocks until a task is ready or `timeout` passed; true when one is ready.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let ready = lock(&self.0.ready);
        let empty = |queue: &mut VecDeque<Arc<Task>>| queue.is_empty();
        match timeout {
            None => self
                .0
                .wakeup
                .wait_while(ready, empty)
                .map(|q| !q.is_empty())
                .unwrap_or(false),
            Some(timeout) => self
                .0
                .wakeup
                .wait_timeout_while(ready, timeout, empty)
                .map(|(q, _)| !q.is_empty())
                .unwrap_or(false),
        }
    }

    /// Dispatches on the calling thread until `done()` or `timeout` passed; true when done.
    pub fn run_until(&self, done: impl Fn() -> bool, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.dispatch(None);
            if done() {
                return true;
            }
            let remaining = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(remaining) => remaining,
                    None => return false,
                },
                None => Duration::MAX,
            };
            // Another thread may finish the work: look again at least every 10 ms.
            self.wait(Some(remaining.min(Duration::from_millis(10))));
        }
    }
}

/// Marks the calling thread as dispatching `dispatcher` (with `deadline`) until dropped; the
/// outer dispatch's marks come back then (a callback may dispatch another dispatcher).
struct DispatchScope {
    outer_deadline: Option<Instant>,
    outer_current: usize,
    outer_started: bool,
}

impl DispatchScope {
    fn enter(dispatcher: &Dispatcher, deadline: Option<Instant>) -> Self {
        ANY_DISPATCHING.fetch_add(1, Ordering::Relaxed);
        DISPATCHING.with(|d| d.set(d.get() + 1));
        DispatchScope {
            outer_deadline: DEADLINE.with(|d| d.replace(deadline)),
            outer_current: CURRENT.with(|c| c.replace(Arc::as_ptr(&dispatcher.0) as usize)),
            outer_started: CALLBACK_STARTED.with(|s| s.replace(false)),
        }
    }
}

impl Drop for DispatchScope {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.outer_deadline));
        CURRENT.with(|c| c.set(self.outer_current));
        CALLBACK_STARTED.with(|s| s.set(self.outer_started));
        DISPATCHING.with(|d| d.set(d.get() - 1));
        ANY_DISPATCHING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Polls a posted callback's future, which completes in one poll (it awaits nothing).
fn poll_once(mut future: BoxedTask) {
    let mut context = Context::from_waker(Waker::noop());
    let _ = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut context)));
}

/// Where an agent's tasks and abort callbacks run.
#[derive(Clone, Default)]
pub enum Executor {
    /// On the runtime thread (the default).
    #[default]
    Runtime,
    /// Inside the host's dispatch calls.
    Dispatcher(Dispatcher),
}

/// A task of either executor, for cancelling.
pub enum TaskHandle {
    Runtime(tokio::task::AbortHandle),
    Dispatched(DispatchedTask),
}

impl TaskHandle {
    pub fn abort(&self) {
        match self {
            TaskHandle::Runtime(handle) => handle.abort(),
            TaskHandle::Dispatched(task) => task.cancel(),
        }
    }
}

impl Executor {
    pub fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) -> TaskHandle {
        match self {
            Executor::Runtime => {
                TaskHandle::Runtime(crate::runtime::handle().spawn(future).abort_handle())
            }
            Executor::Dispatcher(dispatcher) => TaskHandle::Dispatched(dispatcher.spawn(future)),
        }
    }

    pub fn is_dispatcher(&self) -> bool {
        matches!(self, Executor::Dispatcher(_))
    }

    /// True where a blocking wait for this executor's work could never end: on the runtime
    /// thread, or, for a dispatcher, inside a dispatch (the work progresses only there).
    pub fn blocking_would_deadlock(&self) -> bool {
        match self {
            Executor::Runtime => crate::runtime::is_runtime_thread(),
            Executor::Dispatcher(_) => is_dispatching(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task runs only inside dispatch, on the dispatching thread; a wake from another thread
    /// queues it again; a budget stops between tasks.
    #[test]
    fn tasks_run_only_inside_dispatch() {
        let dispatcher = Dispatcher::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let ran_on = Arc::new(Mutex::new(Vec::new()));
        let seen = ran_on.clone();
        dispatcher.spawn(async move {
            lock(&seen).push(std::thread::current().id());
            let _ = rx.await;
            lock(&seen).push(std::thread::current().id());
        });
        assert!(lock(&ran_on).is_empty(), "nothing runs before a dispatch");
        assert_eq!(dispatcher.dispatch(None), 1);
        assert_eq!(lock(&ran_on).len(), 1);
        std::thread::spawn(move || tx.send(()).unwrap())
            .join()
            .unwrap();
        assert!(dispatcher.wait(Some(Duration::from_secs(10))));
        assert_eq!(lock(&ran_on).len(), 1, "a wake only queues the task");
        assert_eq!(dispatcher.dispatch(None), 1);
        let here = std::thread::current().id();
        assert_eq!(*lock(&ran_on), vec![here, here]);

        let count = Arc::new(AtomicUsize::new(0));
        for _ in 0..3 {
            let count = count.clone();
            dispatcher.spawn(async move {
                count.fetch_add(1, Ordering::SeqCst);
            });
        }
        assert_eq!(
            dispatcher.dispatch(Some(Duration::ZERO)),
            1,
            "the budget is checked between tasks"
        );
        assert_eq!(dispatcher.dispatch(None), 2);
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }

    /// Cancelling drops a queued task's future at once, on the cancelling thread.
    #[test]
    fn cancel_drops_a_waiting_future_now() {
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dispatcher = Dispatcher::new();
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = Flag(dropped.clone());
        let task = dispatcher.spawn(async move {
            let _flag = flag;
            std::future::pending::<()>().await;
        });
        task.cancel();
        assert!(dropped.load(Ordering::SeqCst));
        assert_eq!(dispatcher.dispatch(None), 1, "the queued entry is skipped");
    }
}

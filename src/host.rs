//! What the host plugs in: the abort signal, stream functions, tools, hooks and listeners.
//!
//! Everything here is expressed with Rust closures and futures; the C ABI (`ffi/`) implements
//! these types on top of C callbacks and the deferred-reply rule.

#[cfg(feature = "typed")]
mod typed;

#[cfg(feature = "typed")]
pub use typed::{parameters_schema, text_result, typed_tool, ToolContext};

use crate::json::Field;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use crate::event::AgentEvent;
use crate::json::Json;
use crate::message::Message;
use crate::stream::StreamSender;
use crate::sync::lock;

/// A boxed future returned by host callbacks.
pub type HostFuture<T> = BoxFuture<'static, T>;

/// A hook's answer: `Ok(None)` is "returns nothing", `Err(message)` is a failure (a JS throw).
pub type HookResult = Result<Option<Json>, String>;

type AbortCallback = Box<dyn FnOnce() + Send>;

/// The abort signal of a run. Cheap to clone; every clone observes the same signal.
#[derive(Clone, Default)]
pub struct AbortSignal(Arc<SignalInner>);

#[derive(Default)]
struct SignalInner {
    aborted: AtomicBool,
    cancelled: AtomicBool,
    /// `abortGraceMs`: how long to keep waiting for host callbacks after an abort.
    grace: Option<std::time::Duration>,
    notify: tokio::sync::Notify,
    callbacks: Mutex<Vec<AbortCallback>>,
    /// Batches of abort callbacks scheduled on the runtime and not yet run: a run settles only
    /// after them, and a free waits for them.
    batches: crate::pending::Pending,
    /// Where abort callbacks run (the agent's executor).
    executor: crate::dispatch::Executor,
    /// Batches queued on a dispatcher: cancelling the run drops them (nobody may be dispatching
    /// any more, and a free waits for the batches).
    queued_batches: Mutex<Vec<crate::dispatch::TaskHandle>>,
}

impl AbortSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// A signal whose runs stop waiting for unanswered host callbacks `grace` after an abort.
    pub fn with_grace(grace: Option<std::time::Duration>) -> Self {
        Self::for_run(grace, crate::dispatch::Executor::Runtime)
    }

    /// A run's signal: `with_grace`, with abort callbacks run by `executor`.
    pub fn for_run(
        grace: Option<std::time::Duration>,
        executor: crate::dispatch::Executor,
    ) -> Self {
        AbortSignal(Arc::new(SignalInner {
            grace,
            executor,
            ..Default::default()
        }))
    }

    /// Waits for `future`, unless the signal aborted and its grace period passed first
    /// (`Err(())`). Without a grace period this is just `future`.
    pub async fn within_grace<T>(
        &self,
        future: impl std::future::Future<Output = T>,
    ) -> Result<T, ()> {
        let Some(grace) = self.0.grace else {
            return Ok(future.await);
        };
        tokio::select! {
            value = future => Ok(value),
            _ = async {
                self.aborted().await;
                tokio::time::sleep(grace).await;
            } => Err(()),
        }
    }

    /// Aborts the signal. Idempotent. Registered callbacks run on the runtime thread, never
    /// inside this call.
    pub fn abort(&self) {
        if self.0.aborted.swap(true, Ordering::SeqCst) {
            return;
        }
        self.0.notify.notify_waiters();
        let callbacks = std::mem::take(&mut *lock(&self.0.callbacks));
        if self.is_cancelled() {
            // The agent is being freed: no host callback may start any more (just drop them).
            return;
        }
        self.run_batch(callbacks);
    }

    /// Aborts the signal and cancels the run: the loop makes no further host call (the agent
    /// is being freed).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.abort();
        let queued = std::mem::take(&mut *lock(&self.0.queued_batches));
        for batch in queued {
            batch.abort();
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    pub fn is_aborted(&self) -> bool {
        self.0.aborted.load(Ordering::SeqCst)
    }

    /// Completes once the signal is aborted.
    pub async fn aborted(&self) {
        loop {
            let notified = self.0.notify.notified();
            if self.is_aborted() {
                return;
            }
            notified.await;
        }
    }

    /// Calls `callback` on the runtime thread when the signal aborts (soon, if it already has).
    pub fn on_abort(&self, callback: impl FnOnce() + Send + 'static) {
        let mut callbacks = lock(&self.0.callbacks);
        if self.is_cancelled() {
            drop(callbacks);
            drop(callback);
        } else if self.is_aborted() {
            drop(callbacks);
            self.run_batch(vec![Box::new(callback)]);
        } else {
            callbacks.push(Box::new(callback));
        }
    }

    /// Runs abort callbacks on the runtime thread, counted until they ran. Once the run is
    /// cancelled (the agent is being freed) they are dropped instead of called.
    fn run_batch(&self, callbacks: Vec<AbortCallback>) {
        if callbacks.is_empty() {
            return;
        }
        let batch = self.0.batches.enter();
        let signal = self.clone();
        let task = self.0.executor.spawn(async move {
            for callback in callbacks {
                crate::dispatch::before_callback().await;
                if signal.is_cancelled() {
                    drop(callback);
                } else {
                    callback();
                }
            }
            drop(batch);
        });
        if self.0.executor.is_dispatcher() {
            let mut queued = lock(&self.0.queued_batches);
            queued.push(task);
            if self.is_cancelled() {
                // Cancelled meanwhile: `cancel` may have taken the list already.
                for batch in std::mem::take(&mut *queued) {
                    batch.abort();
                }
            }
        }
    }

    /// Where the run's host callbacks run.
    pub fn executor(&self) -> &crate::dispatch::Executor {
        &self.0.executor
    }

    /// Abort-callback batches not yet run.
    pub fn abort_callbacks(&self) -> &crate::pending::Pending {
        &self.0.batches
    }

    /// True when both values are the same signal.
    pub fn same(&self, other: &AbortSignal) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for AbortSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AbortSignal(aborted={})", self.is_aborted())
    }
}

/// One request to a stream function (SPEC §3.1, §6.5).
#[derive(Debug, Clone)]
pub struct StreamRequest {
    /// The run's model, shared (a stream function reads it; nothing copies it per request).
    pub model: Arc<Json>,
    /// The context's messages: exactly the `convertToLlm` output. Shared: a run's requests
    /// build each list on the last one's, so a request costs no reference count per message.
    pub messages: Arc<Vec<Message>>,
    /// reasoning, sessionId, transport, thinkingBudgets, maxRetryDelayMs, apiKey, identity, ...
    pub options: Json,
    pub signal: AbortSignal,
    /// The agent's last request text, for [`Self::lend_json_text`] to build on.
    pub text_cache: Option<Arc<crate::request_text::RequestTextCache>>,
}

impl StreamRequest {
    /// The request's context as JSON: `{ "messages": [...] }` (a copy).
    pub fn context(&self) -> Json {
        let messages = self.messages.iter().map(|m| m.json().clone()).collect();
        crate::json::object([("messages", Json::Array(messages))])
    }

    /// `{"model","context":{"messages"},"options"}` as JSON text, byte-identical to rendering the
    /// whole object with `crate::json::to_string`, but built by concatenation: each committed
    /// message renders its text once and keeps it.
    pub fn json_text(&self) -> String {
        crate::request_text::json_text(self)
    }

    /// Lends [`Self::json_text`], NUL-terminated, to `lend`: built on the agent's last request
    /// when it has a [`Self::text_cache`] (only the messages added since are copied).
    pub fn lend_json_text<R>(&self, lend: impl FnOnce(&[u8]) -> R) -> R {
        match &self.text_cache {
            Some(cache) => cache.lend(self, lend),
            None => {
                let mut text = self.json_text();
                text.push('\0');
                lend(text.as_bytes())
            }
        }
    }
}

/// A stream function: performs one request by pushing assistant stream events into `sink`
/// (from any thread, now or later). Failing before any push (`sink.fail`) means the stream
/// function itself failed (SPEC §6.12).
pub type StreamFn = Arc<dyn Fn(StreamRequest, StreamSender) + Send + Sync>;

/// A hook: receives the reference's argument object (SPEC §2.8) and the run's signal.
pub type Hook = Arc<dyn Fn(Json, AbortSignal) -> HostFuture<HookResult> + Send + Sync>;

/// The error a cancelled run fails with.
pub const CANCELLED: &str = "The agent was freed.";

/// Calls a hook unless the run was cancelled (then it fails with `CANCELLED`).
/// With `abortGraceMs`, a hook still unanswered when the grace period after an abort ends fails
/// with `Operation aborted`.
pub fn call_hook(hook: &Hook, input: Json, signal: &AbortSignal) -> HostFuture<HookResult> {
    if signal.is_cancelled() {
        return Box::pin(async { Err(CANCELLED.to_string()) });
    }
    let signal = signal.clone();
    if !crate::dispatch::may_start_callback() {
        // A host-pumped run gives the host its frame back before calling the hook.
        let hook = hook.clone();
        return Box::pin(async move {
            crate::dispatch::before_callback().await;
            if signal.is_cancelled() {
                return Err(CANCELLED.to_string());
            }
            let answer = hook(input, signal.clone());
            signal
                .within_grace(answer)
                .await
                .unwrap_or_else(|()| Err(OPERATION_ABORTED.into()))
        });
    }
    let answer = hook(input, signal.clone());
    Box::pin(async move {
        signal
            .within_grace(answer)
            .await
            .unwrap_or_else(|()| Err(OPERATION_ABORTED.into()))
    })
}

/// The text of a tool or hook given up on after an abort.
pub const OPERATION_ABORTED: &str = "Operation aborted";

/// A listener: awaited for every event; an `Err` fails the run (SPEC §7.11). It receives its own
/// shared copy of the event (made once per event, for every such listener).
pub type Listener =
    Arc<dyn Fn(Arc<AgentEvent>, AbortSignal) -> HostFuture<Result<(), String>> + Send + Sync>;

/// What a listener call gives back: its result at once, or a future of it (which may borrow the
/// event being delivered).
pub enum Delivery<'a> {
    Now(Result<(), String>),
    Later(BoxFuture<'a, Result<(), String>>),
}

impl Delivery<'_> {
    /// The result, waiting for it when it comes later.
    pub async fn resolve(self) -> Result<(), String> {
        match self {
            Delivery::Now(result) => result,
            Delivery::Later(future) => future.await,
        }
    }
}

/// An event on its way to the listeners, borrowed: the run keeps it in place until every listener
/// answered, so a listener that keeps it past its call clones it.
#[derive(Clone, Copy)]
pub struct EventRef<'a> {
    pub event: &'a AgentEvent,
    /// Tells this event apart from the agent's other events: one number per event, the same for
    /// every listener.
    pub sequence: u64,
}

/// A listener that may answer at once without allocating a future or copying the event (the C
/// ABI's listeners, which usually answer before their callback returns). Same rules as
/// [`Listener`].
pub type ImmediateListener =
    Arc<dyn Fn(EventRef<'_>, &AbortSignal) -> Delivery<'static> + Send + Sync>;

/// Receives a tool's progress updates (`onUpdate`). Never blocks.
pub type UpdateFn = Arc<dyn Fn(Json) + Send + Sync>;

/// One `execute` call of a tool.
pub struct ToolInvocation {
    pub tool_call_id: String,
    /// The validated, coerced arguments.
    pub args: Json,
    pub signal: AbortSignal,
    /// `onUpdate(partialResult)`; calls after the execution completed are ignored.
    pub on_update: UpdateFn,
}

/// The behaviour of a tool. `execute` answers with the AgentToolResult JSON (`Ok(None)` or a
/// non-object is "returned nothing", SPEC A15) or fails with a message.
pub trait ToolBehavior: Send + Sync {
    fn execute(&self, invocation: ToolInvocation) -> HostFuture<Result<Option<Json>, String>>;

    /// Whether the tool has a `prepareArguments` shim.
    fn has_prepare_arguments(&self) -> bool {
        false
    }

    /// The synchronous `prepareArguments(args)` shim (SPEC §5.2).
    fn prepare_arguments(&self, args: Json) -> Result<Json, String> {
        Ok(args)
    }
}

/// An executable tool: its definition JSON (`name`, `label`, `description`, `parameters`,
/// `executionMode`, ...) plus its behaviour.
#[derive(Clone)]
pub struct AgentTool {
    pub definition: Arc<Json>,
    pub behavior: Arc<dyn ToolBehavior>,
}

impl AgentTool {
    pub fn new(definition: Json, behavior: Arc<dyn ToolBehavior>) -> Self {
        Self {
            definition: Arc::new(definition),
            behavior,
        }
    }

    pub fn name(&self) -> &str {
        self.definition
            .field("name")
            .and_then(Json::as_str)
            .unwrap_or("")
    }

    /// `executionMode: "sequential"` forces its batch to run sequentially (SPEC §6.6.1).
    pub fn is_sequential(&self) -> bool {
        self.definition
            .field("executionMode")
            .and_then(Json::as_str)
            == Some("sequential")
    }
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AgentTool({})", self.name())
    }
}

/// Tools that change while an agent holds them (an MCP server set): the loop takes them at the
/// start of each turn, after waiting (with the set's own bound) for tools still coming before
/// its first request. They are added to the context's tools, not to the agent's tool list.
pub trait ToolSet: Send + Sync {
    /// Resolves once tools still coming have come (servers connected), or the set's bound passed.
    fn ready(&self) -> HostFuture<()>;
    /// Changes whenever `tools()` does (cheap: compared between turns).
    fn generation(&self) -> u64;
    fn tools(&self) -> Arc<Vec<AgentTool>>;
}

/// A synchronous `prepareArguments` shim.
pub type PrepareFn = Box<dyn Fn(Json) -> Result<Json, String> + Send + Sync>;

/// A tool built from closures (handy for Rust hosts and tests).
pub struct FnTool<E> {
    execute: E,
    prepare: Option<PrepareFn>,
}

impl<E> FnTool<E>
where
    E: Fn(ToolInvocation) -> HostFuture<Result<Option<Json>, String>> + Send + Sync + 'static,
{
    pub fn tool(definition: Json, execute: E) -> AgentTool {
        AgentTool::new(
            definition,
            Arc::new(FnTool {
                execute,
                prepare: None,
            }),
        )
    }

    pub fn with_prepare(
        definition: Json,
        execute: E,
        prepare: impl Fn(Json) -> Result<Json, String> + Send + Sync + 'static,
    ) -> AgentTool {
        AgentTool::new(
            definition,
            Arc::new(FnTool {
                execute,
                prepare: Some(Box::new(prepare)),
            }),
        )
    }
}

impl<E> ToolBehavior for FnTool<E>
where
    E: Fn(ToolInvocation) -> HostFuture<Result<Option<Json>, String>> + Send + Sync + 'static,
{
    fn execute(&self, invocation: ToolInvocation) -> HostFuture<Result<Option<Json>, String>> {
        (self.execute)(invocation)
    }

    fn has_prepare_arguments(&self) -> bool {
        self.prepare.is_some()
    }

    fn prepare_arguments(&self, args: Json) -> Result<Json, String> {
        match &self.prepare {
            Some(prepare) => prepare(args),
            None => Ok(args),
        }
    }
}

static DEFAULT_STREAM_FN: Mutex<Option<StreamFn>> = Mutex::new(None);

/// The text of every "no stream function" failure (SPEC §6.1, §7.17).
pub const NO_DEFAULT_STREAM_FN: &str =
    "No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn().";

/// `setDefaultStreamFn`: sets or clears the process-global default stream function.
pub fn set_default_stream_fn(stream_fn: Option<StreamFn>) {
    let old = std::mem::replace(&mut *lock(&DEFAULT_STREAM_FN), stream_fn);
    // Dropped after the lock was released: its finalizer is host code.
    drop(old);
}

/// `getDefaultStreamFn`: the process-global default, or the reference's error text.
pub fn default_stream_fn() -> Result<StreamFn, String> {
    lock(&DEFAULT_STREAM_FN)
        .clone()
        .ok_or_else(|| NO_DEFAULT_STREAM_FN.to_string())
}

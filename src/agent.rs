//! The stateful Agent (SPEC §7): transcript, tools, queues, run lifecycle, listeners, abort.

mod compaction;
mod completion;
mod context_policy;
mod listeners;
mod options;
mod queue;
mod recovery;
mod session_link;
mod settings;
mod state;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use std::time::Duration;

use crate::agent_loop::{
    self, check_continue, DeclaredTools, Emit, LoopConfig, LoopContext, QueueSource,
};
use crate::cost_canary::{cost_canary_on, Canary};
use crate::dispatch::{Executor, TaskHandle};
use crate::error::{Error, ErrorKind};
use crate::event::AgentEvent;
use crate::host::{
    default_stream_fn, AbortSignal, AgentTool, Delivery, EventRef, Hook, HostFuture,
    ImmediateListener, Listener, StreamFn,
};
use crate::json::{intern::intern, Json};
use crate::message::{
    failure_message, placeholder_model, role, stored_vec, tool_declaration, user_text_message,
    Message, MessageList,
};
use crate::pending::Pending;
use crate::request_text::RequestTextCache;
use crate::sync::lock;
use crate::transcript::{create_initial_system_message, current_system_message};

use compaction::CompactOutcome;
use context_policy::CompactReason;

pub use compaction::{COMPACTION_CANCELLED, NOTHING_TO_COMPACT};
pub use completion::{DoneFn, RunCompletion};
use listeners::{ListenerSet, Subscriber};
pub use queue::EventQueue;
pub use recovery::{
    LENGTH_RECOVERY_FAILED, NO_CONTEXT_WINDOW, OVERFLOW_RECOVERY_FAILED, RETRY_CANCELLED,
};
pub use session_link::SharedSession;
pub use settings::{HookKind, Hooks, RetrySleep, Settings, THINKING_LEVELS};
use state::{reduce, Queue, Streaming};

/// Exact error texts of SPEC §7.18.
pub mod errors {
    pub const PROMPT_WHILE_RUNNING: &str =
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.";
    pub const CONTINUE_WHILE_RUNNING: &str =
        "Agent is already processing. Wait for completion before continuing.";
    pub const RESET_WHILE_RUNNING: &str =
        "Agent is already processing. Wait for completion before resetting.";
    pub const NO_MESSAGES: &str = "No messages to continue from";
    pub const CONTINUE_FROM_ASSISTANT: &str = "Cannot continue from message role: assistant";
    pub const OUTSIDE_RUN: &str = "Agent listener invoked outside active run";
}

/// `initialState` (SPEC §7.4).
#[derive(Clone, Default)]
pub struct InitialState {
    pub system_prompt: Option<String>,
    pub model: Option<Json>,
    pub thinking_level: Option<String>,
    pub tools: Vec<AgentTool>,
    pub messages: Vec<Json>,
}

/// `AgentOptions` (SPEC §7.1).
#[derive(Clone, Default)]
pub struct AgentOptions {
    pub initial_state: InitialState,
    /// `None` = the process-wide default, resolved now (SPEC §7.1).
    pub stream_fn: Option<StreamFn>,
    pub settings: Settings,
    /// Host-pumped mode: the agent's runs (and every host callback) run only inside this
    /// dispatcher's `dispatch` calls. `None`: on the runtime thread.
    pub dispatcher: Option<crate::dispatch::Dispatcher>,
    /// A session the agent resumes and records to: it starts from the session's context, and
    /// every message it commits, model and thinking-level change is appended before listeners
    /// see the event. One agent per session.
    pub session: Option<SharedSession>,
}

/// What `prompt()` accepts (SPEC §7.6).
#[derive(Debug, Clone)]
pub enum PromptInput {
    Text { text: String, images: Vec<Json> },
    Message(Json),
    Messages(Vec<Json>),
}

impl PromptInput {
    fn into_messages(self) -> Vec<Json> {
        match self {
            PromptInput::Text { text, images } => vec![user_text_message(&text, &images)],
            PromptInput::Message(message) => vec![message],
            PromptInput::Messages(messages) => messages,
        }
    }
}

struct ActiveRun {
    id: u64,
    signal: AbortSignal,
    completion: Arc<RunCompletion>,
    task: Option<TaskHandle>,
    done: Option<DoneFn>,
}

/// A finished run between its cleanup and the return of its `done` callback.
struct Settling {
    completion: Arc<RunCompletion>,
    /// The thread calling `done` (a free from inside that callback must not wait for it).
    thread: std::thread::ThreadId,
}

struct State {
    /// Shared committed messages: a run's snapshot copies references, not messages.
    messages: MessageList,
    tools: Vec<AgentTool>,
    /// Every tool ever given to the agent: hook results may name them (SPEC A17).
    tool_registry: Vec<AgentTool>,
    /// Interned: agents given the same model share it.
    model: Arc<Json>,
    /// The tools the initial system message declares (`None` once the transcript is replaced).
    declared_tools: Option<DeclaredTools>,
    thinking_level: String,
    streaming_message: Option<Streaming>,
    pending_tool_calls: Vec<String>,
    error_message: Option<String>,
    /// How the active run is ending so far: its latest assistant turn's stop (see
    /// `completion::turn_result`).
    run_ending: Result<(), Error>,
    /// How the most recent settled run ended (`None` before the first, during a run, after
    /// `reset`).
    last_run: Option<Result<(), Error>>,
    settings: Settings,
    stream_fn: Option<StreamFn>,
    steering: Queue,
    follow_up: Queue,
    run: Option<ActiveRun>,
    /// Runs taken out of `run` whose `done` callback is still being called: waits and frees
    /// return only after it returned (SPEC §7.10 ordering, under every interleaving).
    settling: Vec<Settling>,
    /// Open pull queues, closed by `shutdown`.
    queues: Vec<std::sync::Weak<queue::Shared>>,
    /// Set by `shutdown`: no run starts any more.
    shut_down: Option<Box<str>>,
    /// The transcript's length right after the latest compaction: the messages before it were
    /// there when it was made (their usage describes a context that is gone).
    compacted_len: Option<usize>,
    /// "Compaction stays off: no context window" was said (once per agent).
    said_no_window: bool,
}

impl State {
    /// The message at `index` was in the transcript when the latest compaction was made.
    fn kept_by_compaction(&self, index: usize) -> bool {
        self.compacted_len.is_some_and(|len| index < len)
    }
}

struct Inner {
    state: Mutex<State>,
    listeners: ListenerSet,
    next_id: AtomicU64,
    /// Numbers the events delivered to listeners (`EventRef::sequence`).
    event_sequence: AtomicU64,
    /// Run tasks not yet dropped.
    tasks: Pending,
    /// Where runs and abort callbacks run.
    executor: Executor,
    /// Boxed: most agents have none, and every agent's `Inner` must fit its size class.
    session: Option<Box<session_link::SessionLink>>,
    /// The text of the last request to a host stream function, which the next one builds on
    /// (made at the first run: an idle agent holds none).
    request_text: std::sync::OnceLock<Arc<RequestTextCache>>,
}

/// The stateful agent. Cheap to clone; clones share the same agent.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

/// A JSON snapshot of the state (SPEC §7.3 plus queues and modes).
pub type StateSnapshot = Json;

impl Agent {
    /// Builds an agent (SPEC §7.1, §7.4). Fails when no stream function is given and no
    /// default is configured.
    pub fn new(options: AgentOptions) -> Result<Agent, Error> {
        let stream_fn = match options.stream_fn {
            Some(stream_fn) => stream_fn,
            None => default_stream_fn().map_err(Error::of(ErrorKind::NoStreamFn))?,
        };
        let initial = options.initial_state;
        if let Some(model) = &initial.model {
            state::check_model_for(Some(&stream_fn), model)
                .map_err(Error::of(ErrorKind::InvalidInput))?;
        }
        let mut messages = initial.messages;
        let mut thinking_level = initial.thinking_level;
        let session = options
            .session
            .map(session_link::SessionLink::attach)
            .transpose()?
            .map(Box::new);
        let mut from_session = 0;
        if let Some(link) = &session {
            let resumed = link.resume(&mut messages, initial.model.as_ref(), thinking_level)?;
            thinking_level = Some(resumed.0);
            from_session = resumed.1;
        }
        let declarations: Vec<Json> = initial
            .tools
            .iter()
            .map(|t| tool_declaration(&t.definition))
            .collect();
        let starts_with_system = messages.first().is_some_and(|m| role(m) == "system");
        let mut created_system = false;
        if !starts_with_system {
            if let Some(system) =
                create_initial_system_message(initial.system_prompt.as_deref(), &declarations)
            {
                messages.insert(0, system);
                created_system = true;
            }
        }
        if let Some(link) = &session {
            link.record_initial(from_session, &messages)?;
        }
        let model = intern(initial.model.unwrap_or_else(placeholder_model));
        let messages = stored_vec(messages);
        let declared_tools = messages
            .first()
            .filter(|_| created_system)
            .and_then(|system| {
                let definitions = initial.tools.iter().map(|t| t.definition.clone()).collect();
                DeclaredTools::new(system.clone(), definitions)
            });
        let state = State {
            messages: messages.into(),
            declared_tools,
            tool_registry: initial.tools.clone(),
            tools: initial.tools,
            model,
            thinking_level: thinking_level.unwrap_or_else(|| "off".into()),
            streaming_message: None,
            pending_tool_calls: Vec::new(),
            error_message: None,
            run_ending: Ok(()),
            last_run: None,
            settings: options.settings,
            stream_fn: Some(stream_fn),
            steering: Queue::default(),
            follow_up: Queue::default(),
            run: None,
            settling: Vec::new(),
            queues: Vec::new(),
            shut_down: None,
            compacted_len: None,
            said_no_window: false,
        };
        let inner = Inner {
            state: Mutex::new(state),
            listeners: ListenerSet::default(),
            next_id: AtomicU64::new(1),
            event_sequence: AtomicU64::new(0),
            tasks: Pending::default(),
            executor: options
                .dispatcher
                .map_or(Executor::Runtime, Executor::Dispatcher),
            session,
            request_text: std::sync::OnceLock::new(),
        };
        Ok(Agent {
            inner: Arc::new(inner),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    // ----- runs -------------------------------------------------------------------------------

    /// Starts `prompt(input)` (SPEC §7.6). On `Ok` the run is active; the completion settles
    /// after cleanup.
    pub fn start_prompt(
        &self,
        input: PromptInput,
        done: Option<DoneFn>,
    ) -> Result<Arc<RunCompletion>, Error> {
        let mut state = self.startable_state()?;
        if state.run.is_some() {
            return Err(Error::new(ErrorKind::Busy, errors::PROMPT_WHILE_RUNNING));
        }
        Ok(self.start_run(
            &mut state,
            RunKind::Prompt(input.into_messages()),
            false,
            done,
        ))
    }

    /// Starts `continue()` (SPEC §7.7).
    pub fn start_continue(&self, done: Option<DoneFn>) -> Result<Arc<RunCompletion>, Error> {
        let invalid = Error::of(ErrorKind::InvalidState);
        let mut state = self.startable_state()?;
        if state.run.is_some() {
            return Err(Error::new(ErrorKind::Busy, errors::CONTINUE_WHILE_RUNNING));
        }
        if state.messages.iter().all(Message::is_system) {
            return Err(invalid(errors::NO_MESSAGES.into()));
        }
        if state
            .messages
            .last()
            .is_some_and(|m| role(m.json()) == "assistant")
        {
            let steering_mode = state.settings.steering_mode.clone();
            let steering = state.steering.drain(&steering_mode);
            if !steering.is_empty() {
                return Ok(self.start_run(&mut state, RunKind::Prompt(steering), true, done));
            }
            let follow_up_mode = state.settings.follow_up_mode.clone();
            let follow_ups = state.follow_up.drain(&follow_up_mode);
            if !follow_ups.is_empty() {
                return Ok(self.start_run(&mut state, RunKind::Prompt(follow_ups), false, done));
            }
            return Err(invalid(errors::CONTINUE_FROM_ASSISTANT.into()));
        }
        check_continue(&state.messages).map_err(invalid)?;
        Ok(self.start_run(&mut state, RunKind::Continue, false, done))
    }

    /// The state, unless no run may start: the agent was shut down, or this is a forked child.
    fn startable_state(&self) -> Result<std::sync::MutexGuard<'_, State>, Error> {
        crate::runtime::check_not_forked().map_err(Error::of(ErrorKind::InvalidState))?;
        let state = self.state();
        match &state.shut_down {
            Some(reason) => Err(Error::new(ErrorKind::InvalidState, reason.clone())),
            None => Ok(state),
        }
    }

    /// `prompt(input)`: starts a run and waits until it settled. Unlike the reference's promise,
    /// a run that ended with stopReason "error" fails with `ModelError` and an aborted one with
    /// `Aborted`, each carrying the `errorMessage`.
    pub async fn prompt(&self, input: PromptInput) -> Result<(), Error> {
        let run = self.start_prompt(input, None)?;
        Self::settled(&run).await
    }

    /// Waits for a started run; its result (see [`RunCompletion::result`]).
    async fn settled(run: &RunCompletion) -> Result<(), Error> {
        run.wait().await.map_err(Error::of(ErrorKind::RunFailed))?;
        run.result().unwrap_or(Ok(()))
    }

    /// `prompt(text)` with no images.
    pub async fn prompt_text(&self, text: &str) -> Result<(), Error> {
        self.prompt(PromptInput::Text {
            text: text.into(),
            images: Vec::new(),
        })
        .await
    }

    /// `continue()`: starts a continuation and waits until it settled; fails like `prompt`.
    pub async fn continue_run(&self) -> Result<(), Error> {
        let run = self.start_continue(None)?;
        Self::settled(&run).await
    }

    /// Starts a manual compaction (a run: `Busy` while another run is active). It emits
    /// `compaction_start` and `compaction_end` with reason "manual"; `focus` is passed to the
    /// summary (what to keep in particular). The run fails when there is nothing to compact,
    /// the summary failed, or it was aborted or cancelled by the `compact` hook.
    pub fn start_compact(
        &self,
        focus: Option<String>,
        done: Option<DoneFn>,
    ) -> Result<Arc<RunCompletion>, Error> {
        let mut state = self.startable_state()?;
        if state.run.is_some() {
            return Err(Error::new(
                ErrorKind::Busy,
                "Agent is already processing. Wait for completion before compacting.",
            ));
        }
        Ok(self.start_run(&mut state, RunKind::Compact(focus), false, done))
    }

    /// `compact(focus)`: starts a manual compaction and waits until it settled.
    pub async fn compact(&self, focus: Option<&str>) -> Result<(), Error> {
        let run = self.start_compact(focus.map(str::to_string), None)?;
        Self::settled(&run).await
    }

    /// The run lifecycle of SPEC §7.8 (the caller holds the state lock and checked for a run).
    fn start_run(
        &self,
        state: &mut State,
        kind: RunKind,
        skip_initial_steering: bool,
        done: Option<DoneFn>,
    ) -> Arc<RunCompletion> {
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst);
        let grace = state.settings.abort_grace_ms.map(Duration::from_millis);
        let signal = AbortSignal::for_run(grace, self.inner.executor.clone());
        let completion = Arc::new(RunCompletion::new(
            signal.clone(),
            self.inner.executor.clone(),
        ));
        state.streaming_message = None;
        state.error_message = None;
        state.run_ending = Ok(());
        state.last_run = None;
        let config = self.loop_config(state, skip_initial_steering);
        let context = LoopContext {
            messages: self.working_transcript(state),
            tools: state.tools.clone(),
        };
        let stream_fn = state.stream_fn.clone();
        let emit = self.emitter(id, signal.clone());
        let first = FirstPass { context, config };
        let future = self
            .clone()
            .run_passes(id, kind, first, emit, signal.clone(), stream_fn);
        state.run = Some(ActiveRun {
            id,
            signal: signal.clone(),
            completion: completion.clone(),
            task: None,
            done,
        });
        let agent = self.clone();
        let body = async move {
            // A panic inside the loop (a libagent bug) fails the run instead of leaving it
            // hanging with waiters that are never released.
            let result = match std::panic::AssertUnwindSafe(future).catch_unwind().await {
                Ok(result) => result,
                Err(_) => Err("Internal error in libagent: the run panicked".to_string()),
            };
            let outcome = match result {
                Ok(_) => Ok(()),
                Err(error) => Box::pin(agent.handle_run_failure(id, &error, &signal)).await,
            };
            // Abort callbacks scheduled during the run have run before it settles (the reference
            // calls abort listeners inside abort()).
            signal.abort_callbacks().idle().await;
            crate::dispatch::before_callback().await; // `done`
            agent.finish_run(id, outcome);
        };
        // Counted until the task is dropped, with everything it holds (tools, hooks): a free
        // waits for that, so no finalizer runs after it returned.
        // Spawned under the state lock: the task's first step waits for it, so the run is still
        // active when the call that started it returns (a later call gets `Busy`), however fast
        // the run is.
        let task = self.inner.executor.spawn(self.inner.tasks.track(body));
        if let Some(run) = state.run.as_mut().filter(|run| run.id == id) {
            run.task = Some(task);
        }
        completion
    }

    /// A copy of the transcript for a run to work on: the last run's, when the transcript still
    /// begins with it, with what the transcript gained since (O(new messages), where a copy of
    /// the transcript costs O(its length) and so would every prompt of a long conversation).
    fn working_transcript(&self, state: &State) -> MessageList {
        let last = self
            .inner
            .request_text
            .get()
            .and_then(|cache| cache.take_context());
        match last {
            _ if cost_canary_on(Canary::Transcript) => state.messages.clone(),
            Some(mut last) if state.messages.begins_with(&last.mark()) => {
                last.extend(state.messages[last.len()..].iter().cloned());
                last
            }
            _ => state.messages.clone(),
        }
    }

    /// A run's passes of the low-level loop: the first with the context taken when the run
    /// started, then (after a retry or an overflow recovery) continuations from the transcript.
    /// Between them the context is managed (see `recovery`). A manual compaction runs no loop.
    async fn run_passes(
        self,
        id: u64,
        kind: RunKind,
        first: FirstPass,
        emit: Emit,
        signal: AbortSignal,
        stream_fn: Option<StreamFn>,
    ) -> Result<(), String> {
        let mut recovery = recovery::Recovery::default();
        let mut first = Some(first);
        let mut prompt = match kind {
            RunKind::Compact(focus) => {
                // Boxed, as the other rare steps here: a run's future, moved as a whole when it is
                // spawned, holds inline only the state of the loop it always runs.
                return match Box::pin(self.run_compaction(
                    id,
                    CompactReason::Manual,
                    false,
                    focus,
                    &signal,
                ))
                .await?
                {
                    CompactOutcome::Applied => Ok(()),
                    CompactOutcome::NothingToCompact => {
                        let nothing = Error::new(ErrorKind::RunFailed, NOTHING_TO_COMPACT);
                        self.state().run_ending = Err(nothing);
                        Ok(())
                    }
                    CompactOutcome::Aborted => {
                        let cancelled = Error::new(ErrorKind::Aborted, COMPACTION_CANCELLED);
                        self.state().run_ending = Err(cancelled);
                        Ok(())
                    }
                    // Settled, not rejected: no failure message joins the transcript.
                    CompactOutcome::Failed(error) => {
                        self.state().run_ending = Err(Error::new(ErrorKind::RunFailed, error));
                        Ok(())
                    }
                };
            }
            RunKind::Prompt(messages) => {
                let transcript = |agent: &Agent| {
                    let state = agent.state();
                    (state.messages.len(), state.messages.first().cloned())
                };
                let before = transcript(&self);
                self.before_prompt(id, &mut recovery, &signal).await?;
                let after = transcript(&self);
                let same = before.0 == after.0
                    && match (&before.1, &after.1) {
                        (Some(a), Some(b)) => a.ptr_eq(b),
                        (a, b) => a.is_none() && b.is_none(),
                    };
                if let (false, Some(pass)) = (same, first.as_mut()) {
                    // Compacted (or a failed attempt hidden): the prompt goes on the new
                    // transcript, with the configuration taken at the start.
                    pass.context.messages = self.state().messages.clone();
                }
                Some(messages)
            }
            RunKind::Continue => None,
        };
        loop {
            let FirstPass { context, config } = match first.take() {
                Some(pass) => pass,
                None => {
                    let mut state = self.state();
                    // A new pass, as the reference's `continue()` starts one: the failed
                    // attempt's error is no longer the state's.
                    state.error_message = None;
                    FirstPass {
                        context: LoopContext {
                            messages: self.working_transcript(&state),
                            tools: state.tools.clone(),
                        },
                        config: self.loop_config(&state, false),
                    }
                }
            };
            let (emit, pass_signal, stream_fn) = (emit.clone(), signal.clone(), stream_fn.clone());
            // Boxed: the loop's state is large, and held inline it would be copied twice with
            // the run's whole future when that is spawned (5-11 KB).
            let pass: HostFuture<Result<Vec<Message>, String>> = match prompt.take() {
                Some(messages) => Box::pin(agent_loop::run_agent_loop(
                    messages,
                    context,
                    config,
                    emit,
                    pass_signal,
                    stream_fn,
                )),
                None => Box::pin(agent_loop::run_agent_loop_continue(
                    context,
                    config,
                    emit,
                    pass_signal,
                    stream_fn,
                )),
            };
            pass.await?;
            let next = self.after_attempt(id, &mut recovery, &signal).await?;
            if next == recovery::Next::Done {
                return Ok(());
            }
        }
    }

    /// `createLoopConfig` (SPEC §7.14).
    fn loop_config(&self, state: &State, skip_initial_steering: bool) -> LoopConfig {
        let settings = &state.settings;
        let hooks = &settings.hooks;
        let prepare_next_turn = (hooks.prepare_next_turn.is_some()
            || hooks.prepare_next_turn_with_context.is_some())
        .then(|| self.prepare_next_turn_wrapper());
        let skip = Arc::new(AtomicBool::new(skip_initial_steering));
        let agent = self.clone();
        let steering: QueueSource = Arc::new(move || {
            let skip_this = skip.swap(false, Ordering::SeqCst);
            let messages = if skip_this {
                Vec::new()
            } else {
                agent.drain_steering()
            };
            Box::pin(async move { Ok(messages) }) as HostFuture<_>
        });
        let agent = self.clone();
        let follow_up: QueueSource = Arc::new(move || {
            let messages = agent.drain_follow_up();
            Box::pin(async move { Ok(messages) }) as HostFuture<_>
        });
        LoopConfig {
            model: Arc::clone(&state.model),
            reasoning: (state.thinking_level != "off").then(|| state.thinking_level.clone()),
            tool_execution: Some(settings.tool_execution.clone()),
            convert_to_llm: hooks.convert_to_llm.clone(),
            transform_context: hooks.transform_context.clone(),
            get_api_key: hooks.get_api_key.clone(),
            api_key: None,
            before_tool_call: hooks.before_tool_call.clone(),
            after_tool_call: hooks.after_tool_call.clone(),
            finish_turn: hooks.finish_turn.clone(),
            prepare_request: hooks.prepare_request.clone(),
            prepare_next_turn,
            get_steering_messages: Some(steering),
            get_follow_up_messages: Some(follow_up),
            identity: settings.identity.clone(),
            stream_options: settings.stream_options(),
            tool_registry: state.tool_registry.clone(),
            tool_sets: settings.tool_sets.clone(),
            declared_tools: state.declared_tools.clone(),
            request_text: Some(Arc::clone(
                self.inner.request_text.get_or_init(Arc::default),
            )),
            // A session's messages (summaries among them) become user messages; so does a
            // compaction's summary in an agent without a session.
            session_messages: self.inner.session.is_some()
                || state.compacted_len.is_some()
                || context_policy::ContextPolicy::of(
                    &settings.compaction,
                    &settings.retry,
                    &state.model,
                )
                .compaction
                .enabled,
        }
    }

    /// Reads the current `prepareNextTurnWithContext` / `prepareNextTurn` at every call.
    fn prepare_next_turn_wrapper(&self) -> Hook {
        let agent = self.clone();
        Arc::new(move |turn_context: Json, signal: AbortSignal| {
            let hooks = agent.state().settings.hooks.clone();
            match (
                hooks.prepare_next_turn_with_context,
                hooks.prepare_next_turn,
            ) {
                (Some(hook), _) => hook(turn_context, signal),
                // The Agent-level form receives only the signal.
                (None, Some(hook)) => hook(Json::Null, signal),
                (None, None) => Box::pin(async { Ok(None) }),
            }
        })
    }

    fn drain_steering(&self) -> Vec<Json> {
        let mut state = self.state();
        let mode = state.settings.steering_mode.clone();
        state.steering.drain(&mode)
    }

    fn drain_follow_up(&self) -> Vec<Json> {
        let mut state = self.state();
        let mode = state.settings.follow_up_mode.clone();
        state.follow_up.drain(&mode)
    }

    /// The emit sink of run `id`: `processEvents` (SPEC §7.11). Synchronous while every
    /// listener answers at once: no future per event.
    /// The emit of run `id`, whose signal is `signal` (held here: an event does not clone it).
    fn emitter(&self, id: u64, signal: AbortSignal) -> Emit {
        let agent = self.clone();
        Arc::new(move |event: &AgentEvent| agent.process_event(id, &signal, event))
    }

    #[inline]
    fn process_event<'a>(
        &self,
        run_id: u64,
        signal: &AbortSignal,
        event: &'a AgentEvent,
    ) -> Delivery<'a> {
        {
            let mut state = self.state();
            reduce(&mut state, event);
            match state.run.as_ref().filter(|run| run.id == run_id) {
                Some(run) => {
                    if let AgentEvent::MessageEnd { message } = event {
                        run.completion.record_message(message);
                    }
                }
                None => return Delivery::Now(Err(errors::OUTSIDE_RUN.into())),
            }
        }
        // The session line is written before any listener sees the message committed.
        if let (Some(link), AgentEvent::MessageEnd { message }) = (&self.inner.session, event) {
            if let Err(error) = link.record_message(message.json()) {
                return Delivery::Now(Err(error));
            }
        }
        let event = EventRef {
            event,
            sequence: self.inner.event_sequence.fetch_add(1, Ordering::Relaxed) + 1,
        };
        self.dispatch(event, signal, 0, false)
    }

    /// Calls every listener subscribed after id `after`, in subscription order over the live set
    /// (SPEC §7.11 step 3): one walk of the set, walked again from the last listener called only
    /// when a listener changed it. The first listener that answers later turns the rest into a
    /// future. `may_start`: the next listener may start without checking the dispatch budget
    /// (the task just gave the thread back for it).
    fn dispatch<'a>(
        &self,
        event: EventRef<'a>,
        signal: &AbortSignal,
        after: u64,
        mut may_start: bool,
    ) -> Delivery<'a> {
        let (mut set, mut generation) = self.inner.listeners.current();
        let mut next = set.iter().position(|(id, _)| *id > after);
        // The copy async listeners share, made for the first of them.
        let mut shared: Option<Arc<AgentEvent>> = None;
        let mut last = after;
        loop {
            let Some((id, listener)) = next.and_then(|i| set.get(i)) else {
                return Delivery::Now(Ok(()));
            };
            if signal.is_cancelled() {
                return Delivery::Now(Err(crate::host::CANCELLED.into()));
            }
            if !std::mem::take(&mut may_start) && !crate::dispatch::may_start_callback() {
                // A host-pumped run gives the host its frame back before the next listener.
                let (agent, signal) = (self.clone(), signal.clone());
                return Delivery::Later(Box::pin(async move {
                    crate::dispatch::before_callback().await;
                    agent.dispatch(event, &signal, last, true).resolve().await
                }));
            }
            last = *id;
            let delivery = match listener {
                Subscriber::Async(listener) => {
                    let shared = shared.get_or_insert_with(|| Arc::new(event.event.clone()));
                    Delivery::Later(listener(shared.clone(), signal.clone()))
                }
                Subscriber::Immediate(listener) => listener(event, signal),
            };
            match delivery {
                Delivery::Now(Ok(())) => {}
                Delivery::Now(Err(error)) => return Delivery::Now(Err(error)),
                Delivery::Later(delivery) => {
                    let (agent, signal) = (self.clone(), signal.clone());
                    return Delivery::Later(Box::pin(async move {
                        signal
                            .within_grace(delivery)
                            .await
                            .unwrap_or_else(|()| Err(crate::host::OPERATION_ABORTED.into()))?;
                        agent.dispatch(event, &signal, last, false).resolve().await
                    }));
                }
            }
            if self.inner.listeners.changed_since(generation) {
                (set, generation) = self.inner.listeners.current();
                next = set.iter().position(|(id, _)| *id > last);
            } else {
                next = next.map(|i| i + 1);
            }
        }
    }

    /// The failure path (SPEC §7.9). `Err` when a listener failed during it.
    async fn handle_run_failure(
        &self,
        run_id: u64,
        error: &str,
        signal: &AbortSignal,
    ) -> Result<(), String> {
        let aborted = signal.is_aborted();
        let model = Arc::clone(&self.state().model);
        let failure = failure_message(&model, error, aborted);
        let failure = Message::new(failure);
        let events = [
            AgentEvent::MessageStart {
                message: failure.clone(),
            },
            AgentEvent::MessageEnd {
                message: failure.clone(),
            },
            AgentEvent::TurnEnd {
                message: failure.clone(),
                tool_results: Vec::new(),
            },
            AgentEvent::AgentEnd {
                messages: vec![failure],
            },
        ];
        for event in events {
            self.process_event(run_id, signal, &event).resolve().await?;
        }
        Ok(())
    }

    /// Cleanup (SPEC §7.10), then the done callback, then the waiters. The run stays visible
    /// to waiters and to `shutdown` (as settling) until `done` returned.
    fn finish_run(&self, run_id: u64, outcome: Result<(), String>) {
        let run = {
            let mut state = self.state();
            if state.run.as_ref().is_none_or(|run| run.id != run_id) {
                return;
            }
            state.streaming_message = None;
            state.pending_tool_calls = Vec::new();
            let ending = std::mem::replace(&mut state.run_ending, Ok(()));
            let result = match &outcome {
                Ok(()) => ending,
                Err(message) => Err(Error::new(ErrorKind::RunFailed, message.clone())),
            };
            state.last_run = Some(result.clone());
            let run = state.run.take().map(|run| (run, result));
            if let Some((run, _)) = &run {
                state.settling.push(Settling {
                    completion: run.completion.clone(),
                    thread: std::thread::current().id(),
                });
            }
            run
        };
        if let Some((mut run, result)) = run {
            run.completion.set_ending(result);
            if let Some(done) = run.done.take() {
                call_done(done, &run.completion, outcome.clone());
            }
            run.completion.complete(outcome);
            self.state()
                .settling
                .retain(|s| !Arc::ptr_eq(&s.completion, &run.completion));
        }
    }

    /// Stops the active run at once (the agent is being freed): the run's task is dropped, its
    /// done callback gets `Err(reason)`, waiters are released. A `done` of a finished run that
    /// another thread is calling right now has returned before this returns, unless this is
    /// called from inside a `done` callback (waiting there could deadlock two frees).
    pub fn shutdown(&self, reason: &str) {
        let mut signal = None;
        let (run, settling, queues) = {
            let mut state = self.state();
            state.shut_down = Some(reason.into());
            let queues = std::mem::take(&mut state.queues);
            let settling: Vec<Arc<RunCompletion>> = state
                .settling
                .iter()
                .filter(|s| s.thread != std::thread::current().id())
                .map(|s| s.completion.clone())
                .collect();
            (state.run.take(), settling, queues)
        };
        for queue in queues.iter().filter_map(std::sync::Weak::upgrade) {
            queue.close();
        }
        if let Some(mut run) = run {
            run.signal.cancel();
            signal = Some(run.signal.clone());
            if let Some(task) = run.task.take() {
                task.abort();
            }
            let failed = Error::new(ErrorKind::RunFailed, reason);
            run.completion.set_ending(Err(failed));
            if let Some(done) = run.done.take() {
                let failed = Err(reason.to_string());
                match &self.inner.executor {
                    // A host-pumped agent's `done` runs only inside its dispatcher's dispatch
                    // (queued for the next one when freed elsewhere).
                    Executor::Dispatcher(dispatcher) => {
                        let completion = run.completion.clone();
                        dispatcher.run_confined(move || call_done(done, &completion, failed));
                    }
                    Executor::Runtime => call_done(done, &run.completion, failed),
                }
            }
            run.completion.complete(Err(reason.to_string()));
        }
        // Inside a done callback, waiting could deadlock two frees; on the runtime thread (or in
        // a dispatch), the run's task may be the caller itself.
        let in_done = IN_DONE.with(Cell::get);
        if !in_done {
            for completion in settling {
                completion.wait_settled(None);
            }
        }
        if !in_done && !self.blocking_would_deadlock() {
            if let Some(signal) = signal {
                signal.abort_callbacks().wait_idle_blocking();
            }
            self.inner.tasks.wait_idle_blocking();
        }
        // Dropped outside the lock: a listener's finalizer may call back into this agent.
        self.inner.listeners.clear();
    }

    /// `abort()`: aborts the active run's signal; nothing when idle.
    pub fn abort(&self) {
        let signal = self.state().run.as_ref().map(|run| run.signal.clone());
        if let Some(signal) = signal {
            signal.abort();
        }
    }

    /// The active run's signal, or `None` when idle.
    pub fn signal(&self) -> Option<AbortSignal> {
        self.state().run.as_ref().map(|run| run.signal.clone())
    }

    /// The active run's completion, or `None` when idle.
    pub fn active_run(&self) -> Option<Arc<RunCompletion>> {
        self.state().run.as_ref().map(|run| run.completion.clone())
    }

    /// What `waitForIdle()` waits for: the active run and runs whose `done` is still running.
    pub fn unsettled_runs(&self) -> Vec<Arc<RunCompletion>> {
        let state = self.state();
        let settling = state.settling.iter().map(|s| s.completion.clone());
        let active = state.run.as_ref().map(|run| run.completion.clone());
        settling.chain(active).collect()
    }

    /// Blocks until the active run finished its cleanup and its `done` returned (at once when
    /// idle), up to `timeout` (`None`: forever). Fails with `Timeout`, with `WouldDeadlock` on
    /// the runtime thread, and with `InvalidState` in a forked child.
    pub fn wait_for_idle_blocking(&self, timeout: Option<Duration>) -> Result<(), Error> {
        let pending: Vec<_> = self
            .unsettled_runs()
            .into_iter()
            .filter(|run| run.outcome().is_none())
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        crate::runtime::check_not_forked().map_err(Error::of(ErrorKind::InvalidState))?;
        if self.blocking_would_deadlock() {
            return Err(Error::new(
                ErrorKind::WouldDeadlock,
                "wait_for_idle was called inside a callback (on the runtime thread, or inside a dispatch), where the run cannot finish.",
            ));
        }
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        for run in pending {
            let left = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
            if !run.wait_blocking(left) {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    "The run did not finish in time.",
                ));
            }
        }
        Ok(())
    }

    /// True where a blocking wait for this agent's run could never end: on the runtime thread,
    /// or, for a host-pumped agent, inside a dispatch (the run progresses only there).
    pub fn blocking_would_deadlock(&self) -> bool {
        self.inner.executor.blocking_would_deadlock()
    }

    /// `waitForIdle()`: completes when the active run finished its cleanup and its `done`
    /// returned; at once when idle.
    pub async fn wait_for_idle(&self) {
        for completion in self.unsettled_runs() {
            let _ = completion.wait().await;
        }
    }

    /// `reset()` (SPEC §7.16).
    pub fn reset(&self) -> Result<(), Error> {
        let mut state = self.state();
        if state.run.is_some() {
            return Err(Error::new(ErrorKind::Busy, errors::RESET_WHILE_RUNNING));
        }
        // Only system messages are read (a stored message is parsed when read).
        let systems = state.messages.system_messages();
        state.messages = current_system_message(systems.map(Message::json))
            .map(Message::stored)
            .into_iter()
            .collect();
        state.declared_tools = None;
        state.compacted_len = None;
        state.streaming_message = None;
        state.pending_tool_calls = Vec::new();
        state.error_message = None;
        state.last_run = None;
        state.steering.0.clear();
        state.follow_up.0.clear();
        drop(state);
        self.forget_replaced_messages();
        Ok(())
    }

    // ----- listeners ----------------------------------------------------------------------------

    /// `subscribe(listener)`: returns the subscription id. Subscribing the same listener (the
    /// same `Arc`) again changes nothing and returns its existing id.
    pub fn subscribe(&self, listener: Listener) -> u64 {
        self.inner.listeners.add_async(listener, || {
            self.inner.next_id.fetch_add(1, Ordering::SeqCst)
        })
    }

    /// Subscribes a listener that may answer at once (see [`ImmediateListener`]); every call
    /// creates a distinct subscription.
    pub fn subscribe_immediate(&self, listener: ImmediateListener) -> u64 {
        self.inner
            .listeners
            .add(Subscriber::Immediate(listener), || {
                self.inner.next_id.fetch_add(1, Ordering::SeqCst)
            })
    }

    /// Removes a subscription; `false` when there was none with that id.
    pub fn unsubscribe(&self, id: u64) -> bool {
        self.inner.listeners.remove(id)
    }
}

thread_local! {
    /// Set while this thread runs a `done` callback.
    static IN_DONE: Cell<bool> = const { Cell::new(false) };
}

/// Calls a run's `done` callback, marking the thread as inside it.
fn call_done(done: DoneFn, run: &Arc<RunCompletion>, outcome: Result<(), String>) {
    let outer = IN_DONE.with(|flag| flag.replace(true));
    // A panicking Rust callback must not leave the run settling forever.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| done(run, outcome)));
    IN_DONE.with(|flag| flag.set(outer));
}

enum RunKind {
    Prompt(Vec<Json>),
    Continue,
    /// A manual compaction, with the host's focus.
    Compact(Option<String>),
}

/// The first pass of a run: the transcript and configuration taken when it started.
struct FirstPass {
    context: LoopContext,
    config: LoopConfig,
}
#[cfg(test)]
mod size {
    /// An agent's shared part is one allocation (with the `Arc`'s two counts); mimalloc rounds
    /// it up to its size class, 1 536 bytes. A field that pushes it past that moves every agent
    /// to the 1 792-byte class: +256 bytes per idle agent, which `bench IDLE` shows and the idle
    /// memory bound of issue 30 (4 280 B) does not leave room for.
    #[test]
    fn an_agent_fits_the_allocator_size_class_it_has() {
        let size = std::mem::size_of::<super::Inner>() + 2 * std::mem::size_of::<usize>();
        assert!(size <= 1536, "Inner is {size} bytes with the Arc's counts");
    }
}

#[cfg(test)]
mod declarations {
    use super::*;
    use crate::agent_loop::tests::tool;
    use crate::faux::scripted_stream_fn;
    use crate::json::json;

    fn agent(tools: Vec<AgentTool>) -> Agent {
        let answer = json!({"content": [{"type": "text", "text": "ok"}]});
        Agent::new(AgentOptions {
            initial_state: InitialState {
                system_prompt: Some("Be brief.".into()),
                tools,
                ..Default::default()
            },
            stream_fn: Some(scripted_stream_fn(vec![answer.clone(), answer])),
            ..Default::default()
        })
        .unwrap()
    }

    /// Runs with the agent's own tools leave its stored initial system message unparsed and
    /// declare nothing; other tools are declared as before.
    #[test]
    fn runs_with_the_initial_tools_do_not_parse_the_initial_system_message() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let agent = agent(vec![tool("a"), tool("b")]);
        runtime.block_on(agent.prompt_text("one")).unwrap();
        runtime.block_on(agent.prompt_text("two")).unwrap();
        let messages = agent.state().messages.clone();
        assert!(messages[0].is_system() && !messages[0].has_tree());
        assert_eq!(messages.iter().filter(|m| m.is_system()).count(), 1);

        let agent = self::agent(vec![tool("a")]);
        agent.set_tools(vec![tool("a"), tool("c")]);
        runtime.block_on(agent.prompt_text("one")).unwrap();
        let messages = agent.messages();
        let declared = messages
            .iter()
            .filter(|m| role(m) == "system")
            .nth(1)
            .unwrap();
        assert_eq!(declared["toolsAdded"][0]["name"], "c");
    }
}

#[cfg(test)]
mod kept_requests {
    use super::*;
    use crate::faux::scripted_stream_fn;
    use crate::json::json;

    /// The last request's message list (kept for the next request) lets go of a transcript the
    /// host replaced: the old messages do not outlive the replacement.
    #[test]
    fn a_replaced_transcript_is_not_kept_alive() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let answer = json!({"content": [{"type": "text", "text": "ok"}]});
        let agent = Agent::new(AgentOptions {
            stream_fn: Some(scripted_stream_fn(vec![answer.clone(), answer])),
            ..Default::default()
        })
        .unwrap();
        runtime.block_on(agent.prompt_text("one")).unwrap();
        // The run's completion holds the run's messages until its task is dropped, which may
        // be just after the waiter was released.
        agent.inner.tasks.wait_idle_blocking();
        let old = agent.state().messages[0].identity();
        assert!(old.is_alive(), "the transcript holds it");
        agent.set_messages(vec![
            json!({"role": "user", "content": "fresh", "timestamp": 1}),
        ]);
        assert!(!old.is_alive(), "kept after the transcript was replaced");
        runtime.block_on(agent.prompt_text("two")).unwrap();
        agent.inner.tasks.wait_idle_blocking();
        let old = agent.state().messages[0].identity();
        assert!(old.is_alive(), "the transcript holds it");
        agent.reset().unwrap();
        assert!(!old.is_alive(), "kept after a reset");
    }

    /// Each run works on the transcript as it is when the run starts, however it changed since
    /// the last run (a run builds on the last run's working copy when the transcript still
    /// begins with it): its requests carry exactly the transcript's messages, as text too.
    #[test]
    fn every_run_works_on_the_transcript_as_it_is() {
        use std::sync::Mutex;
        type Seen = Arc<Mutex<Vec<(Vec<String>, String, String)>>>;
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let seen: Seen = Arc::default();
        let during_run: Arc<Mutex<Option<Agent>>> = Arc::default();
        let answer = json!({"content": [{"type": "text", "text": "ok"}]});
        let (record, push_from) = (seen.clone(), during_run.clone());
        let stream_fn: crate::host::StreamFn = Arc::new(move |request, sender| {
            let texts = request
                .messages
                .iter()
                .map(|m| m.text().to_string())
                .collect();
            let lent = request.lend_json_text(|text| String::from_utf8_lossy(text).into_owned());
            record
                .lock()
                .unwrap()
                .push((texts, lent, request.json_text() + "\0"));
            if let Some(agent) = push_from.lock().unwrap().take() {
                // The transcript gains a message the run's working copy does not have.
                agent.push_message(json!({"role": "user", "content": "during", "timestamp": 2}));
            }
            crate::faux::respond(Some(&answer), request, sender);
        });
        let agent = Agent::new(AgentOptions {
            stream_fn: Some(stream_fn),
            ..Default::default()
        })
        .unwrap();
        let texts = |agent: &Agent| -> Vec<String> {
            let messages = agent.state().messages.to_vec();
            messages.iter().map(|m| m.text().to_string()).collect()
        };
        let check = |agent: &Agent, step: &str| {
            agent.inner.tasks.wait_idle_blocking();
            let (sent, lent, whole) = seen.lock().unwrap().pop().unwrap();
            let transcript = texts(agent);
            // The request came before the answer the transcript ends with.
            assert_eq!(sent[..], transcript[..transcript.len() - 1], "{step}");
            assert_eq!(lent, whole, "{step}: the kept request text");
        };
        runtime.block_on(agent.prompt_text("one")).unwrap();
        check(&agent, "first run");
        runtime.block_on(agent.prompt_text("two")).unwrap();
        check(&agent, "second run");
        agent.push_message(json!({"role": "user", "content": "between", "timestamp": 1}));
        runtime.block_on(agent.prompt_text("three")).unwrap();
        check(&agent, "after a message pushed between runs");
        *during_run.lock().unwrap() = Some(agent.clone());
        runtime.block_on(agent.prompt_text("four")).unwrap();
        agent.inner.tasks.wait_idle_blocking();
        let (sent, _, _) = seen.lock().unwrap().pop().unwrap();
        assert!(
            !sent.iter().any(|m| m.contains("during")),
            "pushed after the request"
        );
        assert!(texts(&agent).iter().any(|m| m.contains("during")));
        runtime.block_on(agent.prompt_text("five")).unwrap();
        check(&agent, "after a message pushed during a run");
        agent.set_messages(vec![
            json!({"role": "user", "content": "fresh", "timestamp": 3}),
        ]);
        runtime.block_on(agent.prompt_text("six")).unwrap();
        check(&agent, "after the transcript was replaced");
        let mut state = agent.state();
        state
            .messages
            .edit(|m| m.insert(0, Message::new(json!({"role": "user", "content": "0"}))));
        drop(state);
        runtime.block_on(agent.prompt_text("seven")).unwrap();
        check(&agent, "after a message was inserted");
    }
}

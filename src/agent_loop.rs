//! The low-level loop (SPEC §6): stateless runs over a context, turns, requests, tool batches,
//! queues and hooks. The stateful owner is `agent.rs`.

mod tools;

use crate::json::Field;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::event::AgentEvent;
use crate::host::{
    call_hook, default_stream_fn, AbortSignal, AgentTool, Delivery, Hook, HostFuture, StreamFn,
    StreamRequest, ToolSet, CANCELLED,
};
use crate::json::{json, object, set_key, Json, JsonMap};
use crate::message::{
    default_identity, from_json_vec, role, to_json_vec, tool_calls, Message, MessageList,
};
use crate::request_text::KeptList;
use crate::request_text::RequestTextCache;
use crate::stream::{self, StreamOutput};
use crate::transcript::declare_tool_changes_in;

pub use tools::{run_tool_call, RunToolCallOptions, ToolCallOutcome};

/// A queue source (`getSteeringMessages` / `getFollowUpMessages`).
pub type QueueSource = Arc<dyn Fn() -> HostFuture<Result<Vec<Json>, String>> + Send + Sync>;

/// The emit sink: called for every event, its delivery awaited before the next; an `Err` fails
/// the run (SPEC §6.12). `Delivery::Now` when the event was delivered during the call. The event
/// is borrowed: it stays in place (in the run's pinned future) until delivered.
pub type Emit = Arc<dyn for<'a> Fn(&'a AgentEvent) -> Delivery<'a> + Send + Sync>;

/// `AgentLoopConfig` (SPEC §6.1).
#[derive(Clone, Default)]
pub struct LoopConfig {
    /// Shared with the agent's state and each request: never deep-copied per run or request.
    pub model: Arc<Json>,
    /// The requested reasoning level; `None` = off.
    pub reasoning: Option<String>,
    /// `"sequential"` runs every batch sequentially; anything else is parallel.
    pub tool_execution: Option<String>,
    pub convert_to_llm: Option<Hook>,
    /// The transcript holds a session's messages (custom, bash executions, branch and
    /// compaction summaries): the default conversion turns them into user messages as
    /// pi-coding-agent does instead of dropping them.
    pub session_messages: bool,
    pub transform_context: Option<Hook>,
    pub get_api_key: Option<Hook>,
    pub api_key: Option<String>,
    pub before_tool_call: Option<Hook>,
    pub after_tool_call: Option<Hook>,
    pub finish_turn: Option<Hook>,
    pub prepare_request: Option<Hook>,
    /// Receives the turn context (SPEC §2.8) and the run's signal.
    pub prepare_next_turn: Option<Hook>,
    pub get_steering_messages: Option<QueueSource>,
    pub get_follow_up_messages: Option<QueueSource>,
    pub identity: Option<Json>,
    /// Forwarded stream options besides reasoning/apiKey/identity (sessionId, transport,
    /// thinkingBudgets, maxRetryDelayMs, and any pass-through option), in order.
    pub stream_options: JsonMap,
    /// Tools that hook results may name in `context.tools` besides the context's own tools.
    pub tool_registry: Vec<AgentTool>,
    /// Sets whose current tools join the context's tools at the start of each turn.
    pub tool_sets: Vec<Arc<dyn ToolSet>>,
    /// What the agent's own initial system message declares, known without parsing it.
    pub declared_tools: Option<DeclaredTools>,
    /// The agent's last request text, which each request's text builds on.
    pub request_text: Option<Arc<RequestTextCache>>,
}

/// A system message whose tool declarations are known without reading it: the one an agent
/// creates from its tools declares exactly their definitions, in order. While a run's context
/// holds that message as its only system message and the same definitions (the same `Arc`s)
/// as its tools, there is no tool change to declare, and the stored message is not parsed.
#[derive(Clone)]
pub struct DeclaredTools(Arc<Declared>);

/// One pointer in the agent's state (whose size class an idle agent pays).
struct Declared {
    message: Message,
    definitions: Box<[Arc<Json>]>,
}

impl DeclaredTools {
    /// `message` declares exactly `definitions` (as `create_initial_system_message` writes
    /// them); `None` when a name is missing or repeated, which replaying would not keep as is.
    pub fn new(message: Message, definitions: Vec<Arc<Json>>) -> Option<DeclaredTools> {
        let mut names = std::collections::HashSet::new();
        let distinct = definitions.iter().all(|definition| {
            definition
                .field("name")
                .and_then(Json::as_str)
                .is_some_and(|name| names.insert(name))
        });
        distinct.then(|| {
            DeclaredTools(Arc::new(Declared {
                message,
                definitions: definitions.into(),
            }))
        })
    }

    /// Nothing to declare: `context`'s only system message is this one, its tools are these
    /// definitions, and `pending` brings no system message.
    fn unchanged(&self, context: &LoopContext, pending: &[Json]) -> bool {
        let Declared {
            message,
            definitions,
        } = &*self.0;
        let only_this = context
            .messages
            .only_system_message()
            .is_some_and(|m| m.ptr_eq(message));
        only_this
            && context.tools.len() == definitions.len()
            && context
                .tools
                .iter()
                .zip(definitions.iter())
                .all(|(tool, definition)| Arc::ptr_eq(&tool.definition, definition))
            && !pending.iter().any(|m| role(m) == "system")
    }
}

impl std::fmt::Debug for DeclaredTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredTools")
            .field("definitions", &self.0.definitions.len())
            .finish()
    }
}

/// `{ messages, tools }`: the transcript the loop works on plus the executable tools.
#[derive(Clone, Default, Debug)]
pub struct LoopContext {
    /// Shared committed messages: copying the context copies references, not messages.
    pub messages: MessageList,
    pub tools: Vec<AgentTool>,
}

impl LoopContext {
    /// The tools' definitions as hooks see them (SPEC §2.8).
    pub fn tool_definitions(&self) -> Vec<Json> {
        self.tools.iter().map(|t| (*t.definition).clone()).collect()
    }

    /// The tools' definitions, borrowed.
    fn tool_definition_refs(&self) -> Vec<&Json> {
        self.tools.iter().map(|t| &*t.definition).collect()
    }

    /// `{ "messages": [...], "tools": [definitions] }`.
    pub fn to_json(&self) -> Json {
        object([
            ("messages", Json::Array(to_json_vec(&self.messages))),
            ("tools", Json::Array(self.tool_definitions())),
        ])
    }
}

/// `runAgentLoop` (SPEC §6.2): starts a run with new prompt messages; returns the new messages.
pub async fn run_agent_loop(
    prompts: Vec<Json>,
    context: LoopContext,
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
    stream_fn: Option<StreamFn>,
) -> Result<Vec<Message>, String> {
    let initial = from_json_vec(declare_changes(&context, &config, prompts));
    let mut run = Run::new(context, config, emit, signal, stream_fn);
    run.new_messages = initial.clone();
    run.context.messages.extend(initial.iter().cloned());
    run.emit(AgentEvent::AgentStart).await?;
    run.emit(AgentEvent::TurnStart).await?;
    for message in &initial {
        run.emitter.emit_message(message).await?;
    }
    run.main_loop().await?;
    Ok(std::mem::take(&mut run.new_messages))
}

/// The two checks `runAgentLoopContinue` makes before any event (SPEC §6.3).
pub fn check_continue<M: std::borrow::Borrow<Json>>(messages: &[M]) -> Result<(), String> {
    match messages.last().map(M::borrow) {
        None => Err("Cannot continue: no messages in context".into()),
        Some(last) if role(last) == "assistant" => {
            Err("Cannot continue from message role: assistant".into())
        }
        Some(_) => Ok(()),
    }
}

/// `runAgentLoopContinue` (SPEC §6.3): continues from the context without new messages.
pub async fn run_agent_loop_continue(
    context: LoopContext,
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
    stream_fn: Option<StreamFn>,
) -> Result<Vec<Message>, String> {
    check_continue(&context.messages)?;
    let mut run = Run::new(context, config, emit, signal, stream_fn);
    run.emit(AgentEvent::AgentStart).await?;
    run.emit(AgentEvent::TurnStart).await?;
    run.main_loop().await?;
    Ok(std::mem::take(&mut run.new_messages))
}

/// Serialises event delivery: parallel tools never overlap two emits (SPEC §1.3 item 2).
pub(crate) struct Emitter {
    emit: Emit,
    /// Emits holding or waiting for `gate`. Every emit of a run comes from the run's one task, so
    /// when none is in flight an emit answered during the call cannot overlap another and skips
    /// the gate.
    in_flight: AtomicUsize,
    gate: tokio::sync::Mutex<()>,
}

/// Counts one emit in flight until dropped (also when its future is dropped).
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Emitter {
    fn new(emit: Emit) -> Self {
        Emitter {
            emit,
            in_flight: AtomicUsize::new(0),
            gate: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) async fn emit(&self, event: AgentEvent) -> Result<(), String> {
        self.emit_ref(&event).await
    }

    /// `emit` of an event the caller keeps in place until delivered.
    pub(crate) async fn emit_ref(&self, event: &AgentEvent) -> Result<(), String> {
        self.deliver(event).resolve().await
    }

    /// Starts delivering `event`: when nothing is in flight and every listener answers at once
    /// (a delta's usual case) it is delivered here, with no future built; otherwise what is left
    /// to wait for.
    pub(crate) fn deliver<'a>(&'a self, event: &'a AgentEvent) -> Delivery<'a> {
        if self.in_flight.load(Ordering::Relaxed) == 0 {
            return match (self.emit)(event) {
                Delivery::Now(result) => Delivery::Now(result),
                Delivery::Later(rest) => {
                    let in_flight = InFlight::enter(&self.in_flight);
                    // Free: nothing was in flight, and no await came between.
                    let turn = self.gate.try_lock();
                    Delivery::Later(Box::pin(async move {
                        let _held = (in_flight, turn);
                        rest.await
                    }))
                }
            };
        }
        Delivery::Later(Box::pin(async move {
            let _in_flight = InFlight::enter(&self.in_flight);
            let _turn = self.gate.lock().await;
            (self.emit)(event).resolve().await
        }))
    }

    /// `message_start` then `message_end` for a message committed whole.
    pub(crate) async fn emit_message(&self, message: &Message) -> Result<(), String> {
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await?;
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        })
        .await
    }
}

/// The state of one run: the working context `W`, the private config copy and `newMessages`.
struct Run {
    context: LoopContext,
    config: LoopConfig,
    emitter: Emitter,
    signal: AbortSignal,
    stream_fn: Option<StreamFn>,
    new_messages: Vec<Message>,
    /// The generations of `config.tool_sets` whose tools the context holds (`None`: not yet
    /// taken), and those tools' definitions (to tell them from the others when they change).
    tool_set_generations: Option<Vec<u64>>,
    tool_set_tools: Vec<Arc<Json>>,
    /// The last request's messages under the default conversion, the next one's start.
    llm_messages: KeptList,
}

impl Drop for Run {
    /// An agent's next run starts from the transcript this one worked on, plus what the agent's
    /// transcript gained since: no copy of the whole.
    fn drop(&mut self) {
        if let Some(cache) = &self.config.request_text {
            cache.keep_context(std::mem::take(&mut self.context.messages));
        }
    }
}

/// The assistant message and tool results of the last turn (`lastTurn`).
struct Turn {
    message: Message,
    tool_results: Vec<Message>,
}

/// The continue/end decision of `finishTurn`.
#[derive(PartialEq)]
enum Decision {
    None,
    Continue,
    End,
}

impl Run {
    fn new(
        context: LoopContext,
        config: LoopConfig,
        emit: Emit,
        signal: AbortSignal,
        stream_fn: Option<StreamFn>,
    ) -> Self {
        let emitter = Emitter::new(emit);
        Self {
            context,
            config,
            emitter,
            signal,
            stream_fn,
            new_messages: Vec::new(),
            tool_set_generations: None,
            tool_set_tools: Vec::new(),
            llm_messages: KeptList::default(),
        }
    }

    /// Takes the tool sets' current tools into the context when they changed; before the
    /// first request, first waits for tools still coming (each set's own bound, or an abort).
    async fn refresh_tool_sets(&mut self) {
        if self.config.tool_sets.is_empty() {
            return;
        }
        if self.tool_set_generations.is_none() {
            let ready = futures::future::join_all(self.config.tool_sets.iter().map(|s| s.ready()));
            tokio::select! {
                _ = ready => {}
                _ = self.signal.aborted() => {}
            }
        }
        let generations: Vec<u64> = self
            .config
            .tool_sets
            .iter()
            .map(|s| s.generation())
            .collect();
        if self.tool_set_generations.as_ref() == Some(&generations) {
            return;
        }
        let previous = std::mem::take(&mut self.tool_set_tools);
        self.context
            .tools
            .retain(|tool| !previous.iter().any(|p| Arc::ptr_eq(p, &tool.definition)));
        for set in &self.config.tool_sets {
            for tool in set.tools().iter() {
                self.tool_set_tools.push(tool.definition.clone());
                self.context.tools.push(tool.clone());
            }
        }
        self.tool_set_generations = Some(generations);
    }

    async fn emit(&self, event: AgentEvent) -> Result<(), String> {
        self.emitter.emit(event).await
    }

    async fn poll(source: &Option<QueueSource>) -> Result<Vec<Json>, String> {
        match source {
            Some(source) => source().await,
            None => Ok(Vec::new()),
        }
    }

    /// The main loop (SPEC §6.4).
    async fn main_loop(&mut self) -> Result<(), String> {
        // The default stream function is looked up only now (SPEC §6.1).
        if self.stream_fn.is_none() {
            self.stream_fn = Some(default_stream_fn()?);
        }
        let mut pending = Self::poll(&self.config.get_steering_messages).await?;
        let mut last_turn: Option<Turn> = None;
        let mut explicit_continuation = false;
        loop {
            let mut has_more_tool_calls = true;
            while has_more_tool_calls || !pending.is_empty() {
                self.refresh_tool_sets().await;
                let mut prepared = Vec::new();
                if let Some(turn) = &last_turn {
                    if let Some(hook) = self.config.prepare_next_turn.clone() {
                        let update = call_hook(&hook, self.turn_json(turn), &self.signal).await?;
                        if let Some(update) = update.filter(Json::is_object) {
                            if let Some(messages) =
                                update.field("messages").and_then(Json::as_array)
                            {
                                prepared = messages.clone();
                            }
                            self.apply_update(&update);
                        }
                    }
                    if pending.is_empty() {
                        pending = Self::poll(&self.config.get_steering_messages).await?;
                    }
                    self.emit(AgentEvent::TurnStart).await?;
                }
                prepared.append(&mut pending);
                let batch = declare_changes(&self.context, &self.config, prepared);
                for message in from_json_vec(batch) {
                    self.emitter.emit_message(&message).await?;
                    self.context.messages.push(message.clone());
                    self.new_messages.push(message);
                }

                if let Some(hook) = self.config.prepare_request.clone() {
                    let input = object([
                        ("context", self.context.to_json()),
                        ("model", (*self.config.model).clone()),
                        ("thinkingLevel", Json::String(self.thinking_level())),
                    ]);
                    if let Some(update) = call_hook(&hook, input, &self.signal)
                        .await?
                        .filter(Json::is_object)
                    {
                        self.apply_update(&update);
                    }
                }

                let message = self.stream_assistant_response().await?;
                self.new_messages.push(message.clone());

                let stop_reason = message
                    .json()
                    .field("stopReason")
                    .and_then(Json::as_str)
                    .unwrap_or("");
                if stop_reason == "error" || stop_reason == "aborted" {
                    let turn = Turn {
                        message,
                        tool_results: Vec::new(),
                    };
                    if let Some(hook) = self.config.finish_turn.clone() {
                        call_hook(&hook, self.turn_json(&turn), &self.signal).await?;
                    }
                    self.emit(AgentEvent::TurnEnd {
                        message: turn.message,
                        tool_results: Vec::new(),
                    })
                    .await?;
                    return self
                        .emit(AgentEvent::AgentEnd {
                            messages: self.new_messages.clone(),
                        })
                        .await;
                }

                let calls = tool_calls(message.json());
                let mut tool_results = Vec::new();
                has_more_tool_calls = false;
                if !calls.is_empty() {
                    let batch = if stop_reason == "length" {
                        tools::fail_truncated_tool_calls(&self.emitter, calls).await?
                    } else {
                        let config = &self.config;
                        let context = &self.context;
                        tools::execute_tool_calls(
                            context,
                            message.json(),
                            calls,
                            config,
                            &self.emitter,
                            &self.signal,
                        )
                        .await?
                    };
                    tool_results = batch.messages;
                    has_more_tool_calls = !batch.terminate;
                    self.context.messages.extend(tool_results.iter().cloned());
                    self.new_messages.extend(tool_results.iter().cloned());
                }

                let turn = Turn {
                    message,
                    tool_results,
                };
                let decision = match self.config.finish_turn.clone() {
                    Some(hook) => {
                        decision_of(call_hook(&hook, self.turn_json(&turn), &self.signal).await?)
                    }
                    None => Decision::None,
                };
                self.emit(AgentEvent::TurnEnd {
                    message: turn.message.clone(),
                    tool_results: turn.tool_results.clone(),
                })
                .await?;
                last_turn = Some(turn);
                if decision == Decision::End {
                    return self
                        .emit(AgentEvent::AgentEnd {
                            messages: self.new_messages.clone(),
                        })
                        .await;
                }
                explicit_continuation = decision == Decision::Continue;
                pending = Self::poll(&self.config.get_steering_messages).await?;
                if has_more_tool_calls || !pending.is_empty() {
                    explicit_continuation = false;
                }
            }
            let follow_ups = Self::poll(&self.config.get_follow_up_messages).await?;
            if !follow_ups.is_empty() {
                explicit_continuation = false;
                pending = follow_ups;
                continue;
            }
            if explicit_continuation {
                explicit_continuation = false;
                continue;
            }
            break;
        }
        self.emit(AgentEvent::AgentEnd {
            messages: self.new_messages.clone(),
        })
        .await
    }

    fn thinking_level(&self) -> String {
        self.config
            .reasoning
            .clone()
            .unwrap_or_else(|| "off".into())
    }

    /// `AgentTurnContext` (SPEC §2.8) for `finishTurn` and `prepareNextTurn`.
    fn turn_json(&self, turn: &Turn) -> Json {
        object([
            ("message", turn.message.json().clone()),
            ("toolResults", Json::Array(to_json_vec(&turn.tool_results))),
            ("context", self.context.to_json()),
            ("newMessages", Json::Array(to_json_vec(&self.new_messages))),
        ])
    }

    /// Applies `context`, `model` and `thinkingLevel` of a hook update (SPEC §6.4 steps 4.2, 7).
    fn apply_update(&mut self, update: &Json) {
        if let Some(context) = update.field("context").filter(|c| c.is_object()) {
            if let Some(messages) = context.field("messages").and_then(Json::as_array) {
                self.context.messages = from_json_vec(messages.clone()).into();
            }
            let names = context
                .field("tools")
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            self.context.tools = self.resolve_tools(&names);
        }
        if let Some(model) = update.field("model").filter(|m| !m.is_null()) {
            self.config.model = Arc::new(model.clone());
        }
        match update.field("thinkingLevel").and_then(Json::as_str) {
            Some("off") => self.config.reasoning = None,
            Some(level) => self.config.reasoning = Some(level.to_string()),
            None => {}
        }
    }

    /// Hook results name tools (SPEC A17): by name string, or by an object with a `name`.
    fn resolve_tools(&self, names: &[Json]) -> Vec<AgentTool> {
        names
            .iter()
            .filter_map(|entry| {
                entry
                    .as_str()
                    .or_else(|| entry.field("name").and_then(Json::as_str))
            })
            .filter_map(|name| {
                self.context
                    .tools
                    .iter()
                    .chain(self.config.tool_registry.iter())
                    .find(|tool| tool.name() == name)
                    .cloned()
            })
            .collect()
    }

    fn default_conversion(&self, messages: &[Message]) -> Vec<Message> {
        let mut converted = Vec::with_capacity(messages.len());
        self.convert_into(messages, &mut converted);
        converted
    }

    /// Appends the default conversion of `messages` to `into`: message by message, so the
    /// conversion of a transcript is its start's followed by the rest's.
    fn convert_into(&self, messages: &[Message], into: &mut Vec<Message>) {
        if !self.config.session_messages {
            into.extend(messages.iter().filter(|m| m.is_llm()).cloned());
            return;
        }
        for message in messages {
            match message.is_llm() {
                true => into.push(message.clone()),
                false => into.extend(
                    crate::session::convert_to_llm(std::slice::from_ref(message.json()))
                        .into_iter()
                        .map(Message::new),
                ),
            }
        }
    }

    /// The default conversion of the working context, built on the last request's list: a
    /// run's next request sees the same transcript and a few messages more, so only those are
    /// converted, and the list is shared with the request, not copied (no reference count taken
    /// per message per request). The last list continues when the transcript it was converted
    /// from begins this one (`MessageList::begins_with`, O(1)).
    fn shared_conversion(&mut self) -> Arc<Vec<Message>> {
        // An agent keeps the list between runs (its next run's context starts with the same
        // messages); a bare loop keeps it for its own run.
        let agent_kept = self.config.request_text.clone();
        if let Some(cache) = &agent_kept {
            self.llm_messages = cache.take_messages();
        }
        let shared = self.convert_on_kept();
        if let Some(cache) = &agent_kept {
            cache.keep_messages(std::mem::take(&mut self.llm_messages));
        }
        shared
    }

    /// `shared_conversion` on the run's kept list.
    fn convert_on_kept(&mut self) -> Arc<Vec<Message>> {
        let messages = &self.context.messages;
        let kept = std::mem::take(&mut self.llm_messages);
        let (mut list, new) = match &kept.source {
            Some(source) if messages.begins_with(source) => {
                (kept.messages, &messages[source.len()..])
            }
            _ => (Arc::default(), &messages[..]),
        };
        // Copied only when the last request still holds the list (a stream still running).
        self.convert_into(new, Arc::make_mut(&mut list));
        self.llm_messages = KeptList {
            messages: list.clone(),
            source: Some(messages.mark()),
        };
        list
    }

    /// `streamAssistantResponse` (SPEC §6.5) and the stream consumption of SPEC §3.10.
    async fn stream_assistant_response(&mut self) -> Result<Message, String> {
        // The working transcript is copied only where a hook needs its own value.
        let mut transformed = None;
        if let Some(hook) = self.config.transform_context.clone() {
            let input = Json::Array(to_json_vec(&self.context.messages));
            // A13: answering nothing leaves the messages unchanged.
            if let Some(Json::Array(messages)) = call_hook(&hook, input, &self.signal).await? {
                transformed = Some(from_json_vec(messages));
            }
        }
        let messages = transformed.as_deref().unwrap_or(&self.context.messages);
        let llm_messages = match self.config.convert_to_llm.clone() {
            Some(hook) => {
                let input = Json::Array(to_json_vec(messages));
                Arc::new(match call_hook(&hook, input, &self.signal).await? {
                    Some(Json::Array(converted)) => from_json_vec(converted),
                    // A14: answering nothing applies the default conversion.
                    _ => self.default_conversion(messages),
                })
            }
            None if transformed.is_some() => Arc::new(self.default_conversion(messages)),
            None => self.shared_conversion(),
        };
        let mut api_key = None;
        if let Some(hook) = self.config.get_api_key.clone() {
            let provider = self
                .config
                .model
                .field("provider")
                .cloned()
                .unwrap_or(Json::Null);
            if let Some(Json::String(key)) = call_hook(&hook, provider, &self.signal).await? {
                api_key = Some(key).filter(|k| !k.is_empty());
            }
        }
        let api_key = api_key.or_else(|| self.config.api_key.clone());
        let request = StreamRequest {
            model: self.config.model.clone(),
            messages: llm_messages,
            options: self.stream_options(api_key),
            signal: self.signal.clone(),
            text_cache: self.config.request_text.clone(),
        };
        let stream_fn = match &self.stream_fn {
            Some(stream_fn) => stream_fn.clone(),
            None => default_stream_fn()?,
        };
        crate::dispatch::before_callback().await;
        if self.signal.is_cancelled() {
            return Err(CANCELLED.into());
        }
        let (sender, mut receiver) = stream::channel(&self.config.model);
        stream_fn(request, sender);
        let mut last_update: Option<AgentEvent> = None;

        loop {
            // An item pushed already is taken without building a future.
            let output = match receiver.try_next() {
                Some(output) => output,
                None => match self.signal.within_grace(receiver.next()).await {
                    Ok(output) => output,
                    Err(()) => receiver.give_up(),
                },
            };
            match output {
                StreamOutput::Ignored => receiver.notify_consumed().await,
                StreamOutput::Start { partial } => {
                    // The working context gets the final message only: nothing reads it before
                    // (the transcript then takes the same messages in the same order as the
                    // agent's: see `MessageList`).
                    self.emit(AgentEvent::MessageStart {
                        message: Message::assembled(partial),
                    })
                    .await?;
                    receiver.notify_consumed().await;
                }
                StreamOutput::Update { event } => {
                    // The last update's event becomes this one in place and is lent: its
                    // snapshot takes the newer length of what it shares with the partial (no
                    // snapshot made and dropped per delta, nothing moved into a future).
                    if let Some(AgentEvent::MessageUpdate {
                        event: slot,
                        partial,
                    }) = &mut last_update
                    {
                        *slot = event;
                        partial.assign(receiver.partial());
                    } else {
                        last_update = Some(AgentEvent::MessageUpdate {
                            event,
                            partial: receiver.partial().snapshot(),
                        });
                    }
                    if let Some(update) = &last_update {
                        match self.emitter.deliver(update) {
                            Delivery::Now(result) => result?,
                            Delivery::Later(rest) => rest.await?,
                        }
                    }
                    receiver.notify_consumed().await;
                }
                StreamOutput::Final {
                    mut message,
                    started,
                } => {
                    if let Some(object) = message.as_object_mut() {
                        set_key(object, "thinkingLevel", json!(self.thinking_level()));
                    }
                    let message = Message::new(message);
                    self.context.messages.push(message.clone());
                    if !started {
                        self.emit(AgentEvent::MessageStart {
                            message: message.clone(),
                        })
                        .await?;
                    }
                    self.emit(AgentEvent::MessageEnd {
                        message: message.clone(),
                    })
                    .await?;
                    receiver.notify_consumed().await;
                    return Ok(message);
                }
                StreamOutput::FunctionFailed(error) => return Err(error),
            }
        }
    }

    /// The stream options of SPEC §6.5 step 5.
    fn stream_options(&self, api_key: Option<String>) -> Json {
        let mut options = JsonMap::with_capacity(self.config.stream_options.len() + 3);
        if let Some(reasoning) = &self.config.reasoning {
            options.insert("reasoning".into(), json!(reasoning));
        }
        for (key, value) in &self.config.stream_options {
            options.insert(key.clone(), value.clone());
        }
        if let Some(key) = api_key {
            options.insert("apiKey".into(), json!(key));
        }
        options.insert(
            "identity".into(),
            merged_identity(self.config.identity.as_ref()),
        );
        Json::Object(options)
    }
}

/// The default identity with the configured one merged over it field by field (SPEC §6.5).
/// Only the ClientIdentity fields (§2.5) are merged: the reference drops any other field
/// [verified with the conformance oracle].
pub fn merged_identity(identity: Option<&Json>) -> Json {
    const FIELDS: [&str; 3] = ["userAgent", "attribution", "version"];
    let mut merged = default_identity();
    if let (Some(Json::Object(fields)), Some(target)) = (identity, merged.as_object_mut()) {
        for (key, value) in fields {
            if FIELDS.contains(&key.as_str()) {
                set_key(target, key, value.clone());
            }
        }
    }
    merged
}

/// `pending` with the context's tool changes declared (SPEC §4.7), read from the context's
/// system messages unless the agent's own initial declarations still stand.
fn declare_changes(context: &LoopContext, config: &LoopConfig, pending: Vec<Json>) -> Vec<Json> {
    let unchanged = config
        .declared_tools
        .as_ref()
        .is_some_and(|declared| declared.unchanged(context, &pending));
    if unchanged {
        return pending;
    }
    declare_tool_changes_in(
        context.messages.system_messages().map(Message::json),
        &context.tool_definition_refs(),
        pending,
    )
}

/// The default `convertToLlm`: keep system, user, assistant and toolResult messages (SPEC §7.14).
pub fn default_convert_to_llm(messages: &[Message]) -> Vec<Message> {
    messages.iter().filter(|m| m.is_llm()).cloned().collect()
}

fn decision_of(answer: Option<Json>) -> Decision {
    match answer
        .as_ref()
        .and_then(|a| a.field("action"))
        .and_then(Json::as_str)
    {
        Some("continue") => Decision::Continue,
        Some("end") => Decision::End,
        _ => Decision::None,
    }
}

/// JavaScript truthiness of a JSON value.
pub(crate) fn truthy(value: Option<&Json>) -> bool {
    match value {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(Json::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Json::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::host::{ToolBehavior, ToolInvocation};

    struct Idle;
    impl ToolBehavior for Idle {
        fn execute(&self, _: ToolInvocation) -> HostFuture<Result<Option<Json>, String>> {
            Box::pin(async { Ok(None) })
        }
    }

    /// A tool that answers nothing, named `name`.
    pub(crate) fn tool(name: &str) -> AgentTool {
        AgentTool::new(
            json!({"name": name, "description": "d", "parameters": {"type": "object"}}),
            Arc::new(Idle),
        )
    }

    #[test]
    fn declared_tools_stand_only_while_the_context_keeps_that_message_and_those_tools() {
        let tools = vec![tool("a"), tool("b")];
        let definitions: Vec<Arc<Json>> = tools.iter().map(|t| t.definition.clone()).collect();
        let system = Message::stored(json!({"role": "system", "content": "p", "timestamp": 0}));
        let declared = DeclaredTools::new(system.clone(), definitions.clone()).unwrap();
        let user = Message::new(json!({"role": "user", "content": "hi", "timestamp": 1}));
        let context = |messages: Vec<Message>, tools: Vec<AgentTool>| LoopContext {
            messages: messages.into(),
            tools,
        };
        let prompt = [json!({"role": "user", "content": "go", "timestamp": 2})];

        let same = context(vec![system.clone(), user.clone()], tools.clone());
        assert!(declared.unchanged(&same, &prompt));
        // A system message among the new ones, another one in the transcript, an equal copy
        // of the message (not the same value), a tool with equal JSON but another definition,
        // a missing or an extra tool: each is left to the general path.
        let pending_system = [json!({"role": "system", "content": "x", "timestamp": 2})];
        assert!(!declared.unchanged(&same, &pending_system));
        let second = Message::new(json!({"role": "system", "content": "q", "timestamp": 3}));
        assert!(!declared.unchanged(
            &context(vec![system.clone(), second], tools.clone()),
            &prompt
        ));
        let copy = Message::stored(system.json().clone());
        assert!(!declared.unchanged(&context(vec![copy], tools.clone()), &prompt));
        let equal = vec![tools[0].clone(), tool("b")];
        assert!(!declared.unchanged(&context(vec![system.clone()], equal), &prompt));
        assert!(!declared.unchanged(&context(vec![system.clone()], tools[..1].to_vec()), &prompt));
        let extra = vec![tools[0].clone(), tools[1].clone(), tool("c")];
        assert!(!declared.unchanged(&context(vec![system.clone()], extra), &prompt));

        // A repeated or missing name is never taken as known.
        let twice = vec![definitions[0].clone(), definitions[0].clone()];
        assert!(DeclaredTools::new(system.clone(), twice).is_none());
        let nameless = vec![Arc::new(json!({"description": "d"}))];
        assert!(DeclaredTools::new(system, nameless).is_none());
    }

    /// A session agent's requests convert its transcript (a summary becomes a user message)
    /// on the last request's list: the next request holds exactly the whole transcript's
    /// conversion, and the messages converted before are the same values, not converted again.
    #[test]
    fn a_session_transcript_is_converted_on_the_last_requests_list() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let cache = Arc::new(RequestTextCache::default());
        let seen: Arc<std::sync::Mutex<Vec<Arc<Vec<Message>>>>> = Arc::default();
        let record = seen.clone();
        let answer = json!({"content": [{"type": "text", "text": "ok"}]});
        let stream_fn: StreamFn = Arc::new(move |request: StreamRequest, sender| {
            record.lock().unwrap().push(request.messages.clone());
            crate::faux::respond(Some(&answer), request, sender);
        });
        let config = LoopConfig {
            model: Arc::new(json!({"id": "m", "api": "a", "provider": "p"})),
            session_messages: true,
            request_text: Some(cache.clone()),
            ..Default::default()
        };
        let emit: Emit = Arc::new(|_: &AgentEvent| Delivery::Now(Ok(())));
        let summary = json!({"role": "compactionSummary", "summary": "before", "tokensBefore": 9,
            "timestamp": 0});
        let context = LoopContext {
            messages: vec![Message::new(summary)].into(),
            tools: Vec::new(),
        };
        let prompt = |text: &str| vec![json!({"role": "user", "content": text, "timestamp": 1})];
        let run = |context, text| {
            let loop_run = run_agent_loop(
                prompt(text),
                context,
                config.clone(),
                emit.clone(),
                AbortSignal::new(),
                Some(stream_fn.clone()),
            );
            runtime.block_on(loop_run).unwrap();
            // What the run worked on, kept for the next one.
            cache.take_context().unwrap()
        };
        let after_first = run(context, "one");
        let after_second = run(
            LoopContext {
                messages: after_first,
                tools: Vec::new(),
            },
            "two",
        );
        let requests = seen.lock().unwrap().clone();
        assert_eq!(requests.len(), 2);
        let whole = crate::session::convert_to_llm(&to_json_vec(&after_second[..4]));
        assert_eq!(to_json_vec(&requests[1]), whole);
        assert_eq!(
            role(requests[1][0].json()),
            "user",
            "the summary, converted"
        );
        assert!(
            requests[1][0].ptr_eq(&requests[0][0]),
            "the summary was converted again"
        );
    }
}

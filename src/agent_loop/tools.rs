//! Tool batches (SPEC §6.6–§6.10) and `runToolCall` (SPEC §6.13).

use crate::json::Field;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures::future::{try_join_all, BoxFuture};
use tokio::sync::mpsc;

use super::{truthy, Emitter, LoopConfig, LoopContext};
use crate::args::validate_tool_call;
use crate::event::AgentEvent;
use crate::host::{
    call_hook, AbortSignal, AgentTool, Hook, HostFuture, ToolInvocation, UpdateFn, CANCELLED,
    OPERATION_ABORTED,
};
use crate::json::{json, object, set_key, Json};
use crate::message::{error_tool_result, tool_result_message, Message};

/// `AgentToolCallOutcome` (SPEC §2.7).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallOutcome {
    pub tool_call: Json,
    pub result: Json,
    pub is_error: bool,
    /// Present only when `execute` ran.
    pub duration_ms: Option<u64>,
}

impl ToolCallOutcome {
    fn immediate(tool_call: Json, result: Json) -> Self {
        Self {
            tool_call,
            result,
            is_error: true,
            duration_ms: None,
        }
    }

    pub fn to_json(&self) -> Json {
        let mut out = object([
            ("toolCall", self.tool_call.clone()),
            ("result", self.result.clone()),
            ("isError", Json::from(self.is_error)),
        ]);
        if let (Some(ms), Some(object)) = (self.duration_ms, out.as_object_mut()) {
            object.insert("durationMs".into(), json!(ms));
        }
        out
    }

    /// Emits `tool_execution_end`. The result is lent to the event (events are delivered by
    /// reference; a listener keeping one copies it) and taken back: not copied per call.
    async fn emit_end(&mut self, emitter: &Emitter) -> Result<(), String> {
        let event = AgentEvent::ToolExecutionEnd {
            tool_call_id: field(&self.tool_call, "id"),
            tool_name: field(&self.tool_call, "name"),
            result: std::mem::take(&mut self.result),
            is_error: self.is_error,
            duration_ms: self.duration_ms,
        };
        let delivered = emitter.emit_ref(&event).await;
        if let AgentEvent::ToolExecutionEnd { result, .. } = event {
            self.result = result;
        }
        delivered
    }

    /// The result message, made from the outcome (its result's content and details are moved,
    /// not copied), and whether the result asks to end the batch's continuation.
    fn into_message(self) -> (Message, bool) {
        let terminates = self.terminates();
        let message = tool_result_message(
            &self.tool_call,
            self.result,
            self.is_error,
            self.duration_ms,
        );
        (Message::new(message), terminates)
    }

    fn terminates(&self) -> bool {
        self.result.field("terminate") == Some(&Json::Bool(true))
    }
}

fn field(value: &Json, key: &str) -> Json {
    value.field(key).cloned().unwrap_or(Json::Null)
}

/// Emits `tool_execution_start`, the call's arguments lent to the event and put back.
async fn emit_start(emitter: &Emitter, tool_call: &mut Json) -> Result<(), String> {
    let args = arguments_of(tool_call).map(std::mem::take);
    let event = AgentEvent::ToolExecutionStart {
        tool_call_id: field(tool_call, "id"),
        tool_name: field(tool_call, "name"),
        args: args.unwrap_or(Json::Null),
    };
    let delivered = emitter.emit_ref(&event).await;
    if let (AgentEvent::ToolExecutionStart { args, .. }, Some(slot)) =
        (event, arguments_of(tool_call))
    {
        *slot = args;
    }
    delivered
}

/// The call's `arguments` (found without hashing: a call has a handful of fields).
fn arguments_of(tool_call: &mut Json) -> Option<&mut Json> {
    let call = tool_call.as_object_mut()?;
    call.iter_mut()
        .find_map(|(key, value)| (key == "arguments").then_some(value))
}

/// The tool result messages of a batch and whether it terminates the automatic continuation.
pub(super) struct Batch {
    pub messages: Vec<Message>,
    pub terminate: bool,
}

/// What the hooks see of the situation around one call.
struct CallSite<'a> {
    context: &'a LoopContext,
    assistant_message: &'a Json,
    before: Option<&'a Hook>,
    after: Option<&'a Hook>,
    signal: &'a AbortSignal,
}

/// A call that passed preparation.
struct Prepared {
    tool_call: Json,
    tool: AgentTool,
    args: Json,
}

enum Preparation {
    Immediate(ToolCallOutcome),
    Ready(Prepared),
}

/// `failTruncatedToolCalls` (SPEC §6.6.4).
pub(super) async fn fail_truncated_tool_calls(
    emitter: &Emitter,
    calls: Vec<Json>,
) -> Result<Batch, String> {
    let mut messages = Vec::new();
    for mut call in calls {
        emit_start(emitter, &mut call).await?;
        let name = call.field("name").and_then(Json::as_str).unwrap_or("");
        let text = format!(
            "Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
        );
        let mut outcome = ToolCallOutcome::immediate(call, error_tool_result(&text));
        outcome.emit_end(emitter).await?;
        let (message, _) = emit_result_message(emitter, outcome).await?;
        messages.push(message);
    }
    Ok(Batch {
        messages,
        terminate: false,
    })
}

/// `executeToolCalls` (SPEC §6.6).
pub(super) async fn execute_tool_calls(
    context: &LoopContext,
    assistant_message: &Json,
    calls: Vec<Json>,
    config: &LoopConfig,
    emitter: &Emitter,
    signal: &AbortSignal,
) -> Result<Batch, String> {
    let site = CallSite {
        context,
        assistant_message,
        before: config.before_tool_call.as_ref(),
        after: config.after_tool_call.as_ref(),
        signal,
    };
    let forced = calls.iter().any(|call| {
        let name = call.field("name").and_then(Json::as_str).unwrap_or("");
        context
            .tools
            .iter()
            .find(|t| t.name() == name)
            .is_some_and(AgentTool::is_sequential)
    });
    let outcomes = if config.tool_execution.as_deref() == Some("sequential") || forced {
        run_sequential(&site, calls, emitter).await?
    } else {
        run_parallel(&site, calls, emitter).await?
    };
    let terminate = !outcomes.is_empty() && outcomes.iter().all(|(_, terminates)| *terminates);
    Ok(Batch {
        messages: outcomes.into_iter().map(|(message, _)| message).collect(),
        terminate,
    })
}

/// Emits an outcome's result message; the same shared message goes into the transcript (with
/// whether the outcome ends the batch's continuation).
async fn emit_result_message(
    emitter: &Emitter,
    outcome: ToolCallOutcome,
) -> Result<(Message, bool), String> {
    let (message, terminates) = outcome.into_message();
    emitter.emit_message(&message).await?;
    Ok((message, terminates))
}

async fn run_sequential(
    site: &CallSite<'_>,
    calls: Vec<Json>,
    emitter: &Emitter,
) -> Result<Vec<(Message, bool)>, String> {
    let mut outcomes = Vec::new();
    for mut call in calls {
        emit_start(emitter, &mut call).await?;
        let mut outcome = match prepare_tool_call(site, call).await {
            Preparation::Immediate(outcome) => outcome,
            Preparation::Ready(prepared) => {
                crate::dispatch::before_callback().await;
                let running = start_execution(prepared, site.signal, site.after.is_some());
                let executed = running.finish(&UpdateSink::Emit(emitter)).await?;
                finalize(site, executed).await
            }
        };
        outcome.emit_end(emitter).await?;
        outcomes.push(emit_result_message(emitter, outcome).await?);
    }
    Ok(outcomes)
}

async fn run_parallel(
    site: &CallSite<'_>,
    calls: Vec<Json>,
    emitter: &Emitter,
) -> Result<Vec<(Message, bool)>, String> {
    // Preparation is sequential, in source order (SPEC §6.6.3 step 1).
    let mut slots: Vec<Result<ToolCallOutcome, Prepared>> = Vec::with_capacity(calls.len());
    for mut call in calls {
        emit_start(emitter, &mut call).await?;
        match prepare_tool_call(site, call).await {
            Preparation::Immediate(mut outcome) => {
                outcome.emit_end(emitter).await?;
                slots.push(Ok(outcome));
            }
            Preparation::Ready(prepared) => slots.push(Err(prepared)),
        }
    }
    // Every runnable `execute` is invoked, in source order, before any completion is processed.
    let sink = UpdateSink::Emit(emitter);
    let mut runs: Vec<BoxFuture<'_, Result<(usize, ToolCallOutcome), String>>> = Vec::new();
    let mut outcomes = Vec::new();
    for (index, slot) in slots.into_iter().enumerate() {
        match slot {
            Ok(outcome) => outcomes.push((index, outcome)),
            Err(prepared) if site.signal.is_aborted() => {
                let mut outcome = ToolCallOutcome::immediate(
                    prepared.tool_call,
                    error_tool_result(OPERATION_ABORTED),
                );
                runs.push(Box::pin(async move {
                    outcome.emit_end(emitter).await?;
                    Ok((index, outcome))
                }));
            }
            Err(prepared) => {
                crate::dispatch::before_callback().await;
                let running = start_execution(prepared, site.signal, site.after.is_some());
                let sink = &sink;
                runs.push(Box::pin(async move {
                    let executed = running.finish(sink).await?;
                    let mut outcome = finalize(site, executed).await;
                    outcome.emit_end(emitter).await?;
                    Ok((index, outcome))
                }));
            }
        }
    }
    outcomes.extend(try_join_all(runs).await?);
    outcomes.sort_by_key(|(index, _)| *index);
    let outcomes: Vec<ToolCallOutcome> = outcomes.into_iter().map(|(_, outcome)| outcome).collect();
    let mut done = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        done.push(emit_result_message(emitter, outcome).await?);
    }
    Ok(done)
}

/// `prepareToolCall` (SPEC §6.7). The call moves into what it returns.
async fn prepare_tool_call(site: &CallSite<'_>, tool_call: Json) -> Preparation {
    let immediate = |tool_call: Json, text: &str| {
        Preparation::Immediate(ToolCallOutcome::immediate(
            tool_call,
            error_tool_result(text),
        ))
    };
    if site.signal.is_aborted() {
        return immediate(tool_call, OPERATION_ABORTED);
    }
    let name = tool_call.field("name").and_then(Json::as_str).unwrap_or("");
    let Some(tool) = site.context.tools.iter().find(|t| t.name() == name) else {
        let text = format!("Tool {name} not found");
        return immediate(tool_call, &text);
    };
    match guarded_preparation(site, tool, &tool_call).await {
        Ok(Ok(args)) => Preparation::Ready(Prepared {
            tool_call,
            tool: tool.clone(),
            args,
        }),
        Ok(Err(blocked)) => Preparation::Immediate(ToolCallOutcome::immediate(tool_call, blocked)),
        Err(message) => immediate(tool_call, &message),
    }
}

/// Steps 4–8 of `prepareToolCall` under one failure guard: `Ok(Ok(args))` when the call may
/// run, `Ok(Err(result))` for an abort/block result, `Err(message)` for a failure.
async fn guarded_preparation(
    site: &CallSite<'_>,
    tool: &AgentTool,
    tool_call: &Json,
) -> Result<Result<Json, Json>, String> {
    // The call as validated: a copy only when `prepareArguments` changes its arguments.
    let mut prepared_call = std::borrow::Cow::Borrowed(tool_call);
    if tool.behavior.has_prepare_arguments() {
        crate::dispatch::before_callback().await;
        let raw = tool_call.field("arguments").cloned().unwrap_or(Json::Null);
        let prepared = tool.behavior.prepare_arguments(raw)?;
        if let Some(object) = prepared_call.to_mut().as_object_mut() {
            set_key(object, "arguments", prepared);
        }
    }
    let args = validate_tool_call(tool.name(), &tool.definition, &prepared_call)?;
    let mut decision = None;
    if let Some(hook) = site.before {
        let input = object([
            ("assistantMessage", site.assistant_message.clone()),
            ("toolCall", tool_call.clone()),
            ("args", args.clone()),
            ("context", site.context.to_json()),
        ]);
        decision = call_hook(hook, input, site.signal).await?;
    }
    if site.signal.is_aborted() {
        return Ok(Err(error_tool_result(OPERATION_ABORTED)));
    }
    if let Some(decision) = decision.filter(|d| truthy(d.field("block"))) {
        let reason = decision
            .field("reason")
            .and_then(Json::as_str)
            .filter(|r| !r.is_empty());
        let mut result = error_tool_result(reason.unwrap_or("Tool execution was blocked"));
        if decision.field("terminate") == Some(&Json::Bool(true)) {
            if let Some(object) = result.as_object_mut() {
                object.insert("terminate".into(), Json::Bool(true));
            }
        }
        return Ok(Err(result));
    }
    Ok(Ok(args))
}

/// Where a running tool's progress updates go.
enum UpdateSink<'a> {
    /// `tool_execution_update` events (the loop).
    Emit(&'a Emitter),
    /// `runToolCall`'s `onUpdate` option.
    Callback(Option<UpdateFn>),
}

impl UpdateSink<'_> {
    async fn deliver(&self, tool_call: &Json, partial_result: Json) -> Result<(), String> {
        match self {
            UpdateSink::Emit(emitter) => {
                emitter
                    .emit(AgentEvent::ToolExecutionUpdate {
                        tool_call_id: field(tool_call, "id"),
                        tool_name: field(tool_call, "name"),
                        args: field(tool_call, "arguments"),
                        partial_result,
                    })
                    .await
            }
            UpdateSink::Callback(Some(on_update)) => {
                on_update(partial_result);
                Ok(())
            }
            UpdateSink::Callback(None) => Ok(()),
        }
    }
}

/// An `execute` call in flight.
struct Running {
    prepared: Prepared,
    execution: HostFuture<Result<Option<Json>, String>>,
    updates: mpsc::UnboundedReceiver<Json>,
    open: Arc<AtomicBool>,
    started: Instant,
}

/// The result of `execute` (SPEC §6.8 step 5), before `afterToolCall`.
struct Executed {
    prepared: Prepared,
    result: Json,
    is_error: bool,
    duration_ms: u64,
}

/// Invokes `execute` now (SPEC §6.8 steps 1–2). The arguments move to `execute` unless
/// `afterToolCall` will be shown them (`keep_args`).
fn start_execution(mut prepared: Prepared, signal: &AbortSignal, keep_args: bool) -> Running {
    let (tx, updates) = mpsc::unbounded_channel();
    let open = Arc::new(AtomicBool::new(true));
    let gate = open.clone();
    let on_update: UpdateFn = Arc::new(move |partial: Json| {
        if gate.load(Ordering::SeqCst) {
            let _ = tx.send(partial);
        }
    });
    let started = Instant::now();
    if signal.is_cancelled() {
        let execution: HostFuture<_> = Box::pin(async { Err(CANCELLED.to_string()) });
        return Running {
            prepared,
            execution,
            updates,
            open,
            started,
        };
    }
    let execution = prepared.tool.behavior.execute(ToolInvocation {
        tool_call_id: prepared
            .tool_call
            .field("id")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string(),
        args: match keep_args {
            true => prepared.args.clone(),
            false => std::mem::take(&mut prepared.args),
        },
        signal: signal.clone(),
        on_update,
    });
    // With `abortGraceMs`, a tool still running when the grace period after an abort ends is
    // given up on with `Operation aborted`.
    let grace_signal = signal.clone();
    let execution: HostFuture<_> = Box::pin(async move {
        grace_signal
            .within_grace(execution)
            .await
            .unwrap_or_else(|()| Err(OPERATION_ABORTED.into()))
    });
    Running {
        prepared,
        execution,
        updates,
        open,
        started,
    }
}

impl Running {
    /// Awaits `execute` while delivering its updates in call order (SPEC §6.8 steps 3–6).
    async fn finish(self, sink: &UpdateSink<'_>) -> Result<Executed, String> {
        let Running {
            prepared,
            mut execution,
            mut updates,
            open,
            started,
        } = self;
        let mut update_error = None;
        let answer = loop {
            tokio::select! {
                answer = &mut execution => break answer,
                Some(partial) = updates.recv(), if update_error.is_none() => {
                    if let Err(error) = sink.deliver(&prepared.tool_call, partial).await {
                        update_error = Some(error);
                    }
                }
            }
        };
        let duration_ms = (started.elapsed().as_secs_f64() * 1000.0 + 0.5).floor() as u64;
        // Updates after completion are ignored; the ones already made are still delivered.
        open.store(false, Ordering::SeqCst);
        while let Ok(partial) = updates.try_recv() {
            if update_error.is_none() {
                if let Err(error) = sink.deliver(&prepared.tool_call, partial).await {
                    update_error = Some(error);
                }
            }
        }
        if let Some(error) = update_error {
            return Err(error);
        }
        let (result, is_error) = match answer {
            Ok(Some(result)) if result.is_object() => {
                let is_error = result.field("isError") == Some(&Json::Bool(true));
                (result, is_error)
            }
            // A15: a tool that answers nothing fails the call.
            Ok(_) => (
                error_tool_result(&format!("Tool {} returned no result", prepared.tool.name())),
                true,
            ),
            Err(message) => (error_tool_result(&message), true),
        };
        Ok(Executed {
            prepared,
            result,
            is_error,
            duration_ms,
        })
    }
}

/// `finalizeExecutedToolCall` and the `afterToolCall` merge (SPEC §6.9).
async fn finalize(site: &CallSite<'_>, executed: Executed) -> ToolCallOutcome {
    let Executed {
        prepared,
        mut result,
        mut is_error,
        duration_ms,
    } = executed;
    if let Some(hook) = site.after {
        let input = object([
            ("assistantMessage", site.assistant_message.clone()),
            ("toolCall", prepared.tool_call.clone()),
            ("args", prepared.args.clone()),
            ("result", result.clone()),
            ("isError", Json::from(is_error)),
            ("context", site.context.to_json()),
        ]);
        match call_hook(hook, input, site.signal).await {
            Err(message) => {
                result = error_tool_result(&message);
                is_error = true;
            }
            Ok(Some(Json::Object(overrides))) => {
                let given = |key: &str| overrides.get(key).filter(|v| !v.is_null());
                if let Some(object) = result.as_object_mut() {
                    for key in ["content", "details", "usage", "terminate"] {
                        if let Some(value) = given(key) {
                            set_key(object, key, value.clone());
                        }
                    }
                    if let Some(value) = given("structuredContent") {
                        set_key(object, "structuredContent", value.clone());
                    } else if given("content").is_some() {
                        object.shift_remove("structuredContent");
                    }
                }
                if let Some(value) = given("isError") {
                    is_error = truthy(Some(value));
                }
            }
            Ok(_) => {}
        }
    }
    ToolCallOutcome {
        tool_call: prepared.tool_call,
        result,
        is_error,
        duration_ms: Some(duration_ms),
    }
}

/// Options of `runToolCall` (SPEC §6.13).
#[derive(Clone, Default)]
pub struct RunToolCallOptions {
    pub tools: Vec<AgentTool>,
    pub assistant_message: Json,
    pub context: LoopContext,
    pub signal: AbortSignal,
    pub on_update: Option<UpdateFn>,
    pub before_tool_call: Option<Hook>,
    pub after_tool_call: Option<Hook>,
}

/// `runToolCall`: one call through preparation, validation, hooks and execution, without
/// events or messages. Never fails for tool-level problems.
pub async fn run_tool_call(tool_call: Json, options: RunToolCallOptions) -> ToolCallOutcome {
    let lookup = LoopContext {
        messages: options.context.messages.clone(),
        tools: options.tools.clone(),
    };
    let site = CallSite {
        context: &lookup,
        assistant_message: &options.assistant_message,
        before: options.before_tool_call.as_ref(),
        after: options.after_tool_call.as_ref(),
        signal: &options.signal,
    };
    match prepare_tool_call(&site, tool_call.clone()).await {
        Preparation::Immediate(outcome) => outcome,
        Preparation::Ready(prepared) => {
            let running = start_execution(prepared, &options.signal, site.after.is_some());
            match running
                .finish(&UpdateSink::Callback(options.on_update.clone()))
                .await
            {
                Ok(executed) => finalize(&site, executed).await,
                // Callback delivery cannot fail.
                Err(message) => ToolCallOutcome::immediate(tool_call, error_tool_result(&message)),
            }
        }
    }
}

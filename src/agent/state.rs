//! The Agent's queues and state: reads, writes and the per-event reduction (SPEC §7.3, §7.11,
//! §7.13).

use crate::json::Field;
use std::collections::VecDeque;

use super::settings::{check_choice, THINKING_LEVELS};
use super::{Agent, Settings, State, StateSnapshot};
use crate::error::{Error, ErrorKind};
use crate::event::AgentEvent;
use crate::host::{AgentTool, StreamFn};
use crate::json::{intern::intern, json, Json, JsonMap};
use crate::message::{role, stored_vec, to_json_vec, Message};
use crate::stream::PartialSnapshot;
use crate::transcript::current_system_prompt;

/// A FIFO queue of messages (SPEC §7.13); the mode is read at every drain.
#[derive(Default, Debug, Clone)]
pub(super) struct Queue(pub(super) VecDeque<Json>);

impl Queue {
    pub(super) fn peek(&self, mode: &str) -> Vec<Json> {
        if mode == "all" {
            self.0.iter().cloned().collect()
        } else {
            self.0.front().cloned().into_iter().collect()
        }
    }

    pub(super) fn drain(&mut self, mode: &str) -> Vec<Json> {
        let count = if mode == "all" {
            self.0.len()
        } else {
            self.0.len().min(1)
        };
        self.0.drain(..count).collect()
    }
}

impl Agent {
    // ----- queues -------------------------------------------------------------------------------

    pub fn steer(&self, message: Json) {
        self.state().steering.0.push_back(message);
    }

    pub fn follow_up(&self, message: Json) {
        self.state().follow_up.0.push_back(message);
    }

    /// `peekQueuedMessages()`: steering's peek if non-empty, else the follow-ups' peek.
    pub fn peek_queued_messages(&self) -> Vec<Json> {
        let state = self.state();
        let steering = state.steering.peek(&state.settings.steering_mode);
        if steering.is_empty() {
            state.follow_up.peek(&state.settings.follow_up_mode)
        } else {
            steering
        }
    }

    pub fn has_queued_messages(&self) -> bool {
        let state = self.state();
        !state.steering.0.is_empty() || !state.follow_up.0.is_empty()
    }

    pub fn clear_steering_queue(&self) {
        self.state().steering.0.clear();
    }

    pub fn clear_follow_up_queue(&self) {
        self.state().follow_up.0.clear();
    }

    pub fn clear_all_queues(&self) {
        let mut state = self.state();
        state.steering.0.clear();
        state.follow_up.0.clear();
    }

    // ----- state --------------------------------------------------------------------------------

    pub fn messages(&self) -> Vec<Json> {
        to_json_vec(&self.state().messages)
    }

    /// The transcript's shared messages (no copy of any message).
    pub fn shared_messages(&self) -> Vec<Message> {
        self.state().messages.to_vec()
    }

    /// How many messages the transcript holds (O(1)).
    pub fn message_count(&self) -> usize {
        self.state().messages.len()
    }

    /// The shared messages `start..start + count`, clamped to the transcript (O(count)).
    pub fn message_range(&self, start: usize, count: usize) -> Vec<Message> {
        let state = self.state();
        let start = start.min(state.messages.len());
        let end = start.saturating_add(count).min(state.messages.len());
        state.messages[start..end].to_vec()
    }

    /// Replaces the transcript with a copy of `messages`.
    pub fn set_messages(&self, messages: Vec<Json>) {
        let mut state = self.state();
        state.messages = stored_vec(messages).into();
        state.declared_tools = None;
        state.compacted_len = None;
        drop(state);
        self.forget_replaced_messages();
    }

    /// Lets go of the last request's message list once the transcript was replaced: it would
    /// keep the old messages alive until the next request (an idle agent's whole transcript).
    pub(super) fn forget_replaced_messages(&self) {
        if let Some(cache) = self.inner.request_text.get() {
            drop(cache.take_messages());
            drop(cache.take_context());
        }
    }

    /// Appends to the live transcript (the reference's in-place edit of `state.messages`).
    pub fn push_message(&self, message: Json) {
        self.state().messages.push(Message::new(message));
    }

    pub fn tools(&self) -> Vec<AgentTool> {
        self.state().tools.clone()
    }

    /// Replaces the executable tools with a copy of `tools`. The agent keeps every tool it was
    /// given (the newest of each name) so that hook results can name them (SPEC A17).
    pub fn set_tools(&self, tools: Vec<AgentTool>) {
        let mut displaced = Vec::new();
        {
            let mut state = self.state();
            for tool in &tools {
                if let Some(i) = state
                    .tool_registry
                    .iter()
                    .position(|known| known.name() == tool.name())
                {
                    displaced.push(state.tool_registry.remove(i));
                }
                state.tool_registry.push(tool.clone());
            }
            displaced.extend(std::mem::replace(&mut state.tools, tools));
        }
        // Dropped outside the lock: a tool's finalizer may call back into this agent.
        drop(displaced);
    }

    pub fn model(&self) -> Json {
        (*self.state().model).clone()
    }

    /// Replaces the model as given (the built-in providers check it when a run streams;
    /// `configure` checks it at once for an agent on them). With a session, a model of another
    /// provider or id is recorded first; `Io` when that fails (the model is then unchanged).
    pub fn set_model(&self, model: Json) -> Result<(), Error> {
        let mut state = self.state();
        if let Some(link) = &self.inner.session {
            link.record_model(&state.model, &model)?;
        }
        state.model = intern(model);
        Ok(())
    }

    pub fn thinking_level(&self) -> String {
        self.state().thinking_level.clone()
    }

    /// Sets the thinking level as given. With a session, a new level is recorded first; `Io`
    /// when that fails (the level is then unchanged).
    pub fn set_thinking_level(&self, level: &str) -> Result<(), Error> {
        let mut state = self.state();
        if let Some(link) = &self.inner.session {
            link.record_thinking_level(&state.thinking_level, level)?;
        }
        state.thinking_level = level.to_string();
        Ok(())
    }

    pub fn system_prompt(&self) -> String {
        current_system_prompt(self.state().messages.iter().map(Message::json))
    }

    pub fn is_streaming(&self) -> bool {
        self.state().run.is_some()
    }

    pub fn streaming_message(&self) -> Option<Json> {
        self.state()
            .streaming_message
            .as_ref()
            .map(Streaming::to_json)
    }

    pub fn pending_tool_calls(&self) -> Vec<String> {
        self.state().pending_tool_calls.clone()
    }

    pub fn error_message(&self) -> Option<String> {
        self.state().error_message.clone()
    }

    /// How the most recent settled run ended (see [`super::RunCompletion::result`]); `None`
    /// before the first run, while a run is active and after `reset`. Set before the run's
    /// `done` callback is called.
    pub fn last_run_result(&self) -> Option<Result<(), Error>> {
        self.state().last_run.clone()
    }

    /// The reassignable settings (hooks, modes, forwarded options).
    pub fn settings(&self) -> Settings {
        self.state().settings.clone()
    }

    /// Changes settings in place; hooks and options are captured when a run starts (SPEC §7.2).
    /// Returns what `change` returns (e.g. a replaced hook), which the caller drops after the
    /// state lock was released.
    pub fn update_settings<R>(&self, change: impl FnOnce(&mut Settings) -> R) -> R {
        change(&mut self.state().settings)
    }

    /// Applies a patch of reassignable fields atomically: `model` (an object), `thinkingLevel`
    /// (a string) and the option fields of `Settings::check`. Nothing changes on error.
    pub fn configure(&self, patch: &Json) -> Result<(), Error> {
        self.check_configuration(patch)
            .map_err(Error::of(ErrorKind::InvalidInput))
    }

    fn check_configuration(&self, patch: &Json) -> Result<(), String> {
        let Json::Object(patch) = patch else {
            return Err("The configuration patch must be a JSON object.".into());
        };
        let mut options = patch.clone();
        let model = options.shift_remove("model");
        let thinking_level = options.shift_remove("thinkingLevel");
        if model.as_ref().is_some_and(|m| !m.is_object()) {
            return Err("Option \"model\" must be an object.".into());
        }
        match &thinking_level {
            Some(Json::String(level)) => check_choice("thinkingLevel", level, &THINKING_LEVELS)?,
            Some(_) => return Err("Option \"thinkingLevel\" must be a string.".into()),
            None => {}
        }
        Settings::check(&options)?;
        let mut state = self.state();
        if let Some(model) = &model {
            check_model_for(state.stream_fn.as_ref(), model)?;
        }
        // Recorded first: a change the session could not record is not made.
        if let Some(link) = &self.inner.session {
            if let Some(model) = &model {
                link.record_model(&state.model, model)
                    .map_err(|error| error.message)?;
            }
            if let Some(Json::String(level)) = &thinking_level {
                link.record_thinking_level(&state.thinking_level, level)
                    .map_err(|error| error.message)?;
            }
        }
        state.settings.apply(&options);
        if let Some(model) = model {
            state.model = intern(model);
        }
        if let Some(Json::String(level)) = thinking_level {
            state.thinking_level = level;
        }
        Ok(())
    }

    /// Reassigns `streamFunction` (`None` = look up the default when a run's main loop starts).
    pub fn set_stream_fn(&self, stream_fn: Option<StreamFn>) {
        let old = std::mem::replace(&mut self.state().stream_fn, stream_fn);
        // Dropped outside the lock: the host's finalizer may call back into this agent.
        drop(old);
    }

    /// The whole state as JSON (SPEC §7.3, plus queues and modes for introspection).
    pub fn state_json(&self) -> StateSnapshot {
        let state = self.state();
        let mut out = JsonMap::new();
        out.insert(
            "systemPrompt".into(),
            json!(current_system_prompt(
                state.messages.iter().map(Message::json)
            )),
        );
        out.insert("model".into(), (*state.model).clone());
        out.insert("thinkingLevel".into(), json!(state.thinking_level));
        let tools: Vec<Json> = state
            .tools
            .iter()
            .map(|t| (*t.definition).clone())
            .collect();
        out.insert("tools".into(), Json::Array(tools));
        out.insert("messages".into(), Json::Array(to_json_vec(&state.messages)));
        out.insert("isStreaming".into(), json!(state.run.is_some()));
        if let Some(message) = &state.streaming_message {
            out.insert("streamingMessage".into(), message.to_json());
        }
        out.insert("pendingToolCalls".into(), json!(state.pending_tool_calls));
        if let Some(error) = &state.error_message {
            out.insert("errorMessage".into(), json!(error));
        }
        out.insert("steeringMode".into(), json!(state.settings.steering_mode));
        out.insert("followUpMode".into(), json!(state.settings.follow_up_mode));
        out.insert(
            "steeringQueue".into(),
            Json::Array(state.steering.0.iter().cloned().collect()),
        );
        out.insert(
            "followUpQueue".into(),
            Json::Array(state.follow_up.0.iter().cloned().collect()),
        );
        state.settings.write_options(&mut out);
        Json::Object(out)
    }
}

/// `streamingMessage`: the message of the latest `message_start` or `message_update` (O(1) to
/// keep: a committed message or a partial-message snapshot).
#[derive(Clone)]
pub(super) enum Streaming {
    Message(Message),
    Partial(PartialSnapshot),
}

impl Streaming {
    fn to_json(&self) -> Json {
        match self {
            Streaming::Message(message) => message.json().clone(),
            Streaming::Partial(partial) => partial.to_json(),
        }
    }
}

/// The state reduction of SPEC §7.11 step 1.
#[inline(always)]
pub(super) fn reduce(state: &mut State, event: &AgentEvent) {
    // A delta's case first, inline: the previous delta's snapshot becomes this one in place.
    if let (AgentEvent::MessageUpdate { partial, .. }, Some(Streaming::Partial(streaming))) =
        (event, &mut state.streaming_message)
    {
        streaming.clone_from(partial);
        return;
    }
    reduce_other(state, event);
}

#[inline(never)]
fn reduce_other(state: &mut State, event: &AgentEvent) {
    match event {
        AgentEvent::MessageStart { message } => {
            state.streaming_message = Some(Streaming::Message(message.clone()));
        }
        AgentEvent::MessageUpdate { partial, .. } => {
            state.streaming_message = Some(Streaming::Partial(partial.clone()))
        }
        AgentEvent::MessageEnd { message } => {
            state.streaming_message = None;
            state.messages.push(message.clone());
        }
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
            let id = tool_call_id.as_str().unwrap_or("").to_string();
            if !state.pending_tool_calls.contains(&id) {
                state.pending_tool_calls.push(id);
            }
        }
        AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
            let id = tool_call_id.as_str().unwrap_or("");
            state.pending_tool_calls.retain(|pending| pending != id);
        }
        AgentEvent::TurnEnd { message, .. } => {
            let error = message
                .json()
                .field("errorMessage")
                .and_then(Json::as_str)
                .filter(|e| !e.is_empty());
            if let (Some(error), "assistant") = (error, role(message.json())) {
                state.error_message = Some(error.to_string());
            }
            if role(message.json()) == "assistant" {
                state.run_ending = super::completion::turn_result(message.json());
            }
        }
        AgentEvent::AgentEnd { .. } => state.streaming_message = None,
        _ => {}
    }
}

/// A model set on an agent that uses the built-in providers must have what they need (`api`,
/// `id`, `provider`, `baseUrl`); other stream functions accept any model object. An api the
/// providers do not speak is left to the run, which fails as pi-ai does (`No API provider
/// registered for api: X`).
pub(crate) fn check_model_for(
    stream_fn: Option<&crate::host::StreamFn>,
    model: &Json,
) -> Result<(), String> {
    #[cfg(feature = "providers")]
    if stream_fn.is_some_and(crate::providers::is_providers) {
        let other_api = match model.field("api") {
            Some(Json::String(api)) => {
                !api.is_empty() && !crate::providers::APIS.contains(&api.as_str())
            }
            _ => false,
        };
        if !other_api {
            return crate::providers::check_model(model);
        }
    }
    let _ = (stream_fn, model);
    Ok(())
}

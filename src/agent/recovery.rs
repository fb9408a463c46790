//! Keeping a conversation alive inside one run (pi-coding-agent's post-run handling): after
//! each pass of the low-level loop, a transient model error is retried after a backoff, a
//! context overflow is recovered by hiding the failed attempt, compacting and continuing once,
//! and a context past the threshold is compacted. Before a prompt, the last response is checked
//! against the threshold too. Each decision is made on the last assistant message.

use crate::json::Field;
use std::time::Duration;

use super::compaction::CompactOutcome;
use super::context_policy::{CompactReason, ContextPolicy};
use super::Agent;
use crate::context::{
    estimate_context, is_context_overflow, is_recoverable_length, is_retryable_error,
    retry_delay_ms, should_compact, usage_context_tokens,
};
use crate::error::{Error, ErrorKind};
use crate::event::AgentEvent;
use crate::host::AbortSignal;
use crate::json::Json;
use crate::message::{role, Message};

/// The run ends with this when a second overflow comes in one prompt.
pub const OVERFLOW_RECOVERY_FAILED: &str = "The context overflowed again after compacting and retrying once; compact with a narrower focus, start a new conversation, or use a model with a larger context window.";
/// The run ends with this when a response is cut short again after compacting.
pub const LENGTH_RECOVERY_FAILED: &str = "The response was cut short again after compacting and retrying once; raise the model's maxTokens or start a new conversation.";
/// `auto_retry_end.finalError` when the run is aborted during a backoff wait.
pub const RETRY_CANCELLED: &str = "Retry cancelled: the run was aborted while waiting to retry.";
/// Said once per agent (as a `compaction_end` errorMessage) when compaction was enabled for a
/// model without a context window.
pub const NO_CONTEXT_WINDOW: &str = "Compaction stays off: the model has no contextWindow to measure the context against. Give the model a contextWindow to enable it.";

/// What one run's recovery has done so far.
#[derive(Default)]
pub(super) struct Recovery {
    /// Retries of the current failing turn (0 when the last response succeeded).
    retry_attempt: u64,
    /// An overflow was already recovered by compacting in this run.
    overflow_attempted: bool,
}

/// What the run does after a pass of the loop.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Continue from the transcript (`run_agent_loop_continue`).
    Continue,
    Done,
}

fn stop_reason(message: &Json) -> &str {
    message
        .field("stopReason")
        .and_then(Json::as_str)
        .unwrap_or("")
}

fn error_text(message: &Json) -> Option<String> {
    message
        .field("errorMessage")
        .and_then(Json::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_string)
}

/// The message came from the agent's current model (a message without provider or model says
/// nothing against it). An overflow of another model's window is not this model's problem.
fn from_model(message: &Json, model: &Json) -> bool {
    let same = |message_key: &str, model_key: &str| match message.get(message_key) {
        Some(Json::String(value)) => model.get(model_key).and_then(Json::as_str) == Some(value),
        _ => true,
    };
    same("provider", "provider") && same("model", "id")
}

impl Agent {
    pub(super) fn context_policy(&self) -> ContextPolicy {
        let state = self.state();
        ContextPolicy::of(
            &state.settings.compaction,
            &state.settings.retry,
            &state.model,
        )
    }

    /// Delivers a context event of run `run_id` to the listeners.
    pub(super) async fn emit_run_event(
        &self,
        run_id: u64,
        event: AgentEvent,
    ) -> Result<(), String> {
        let signal = self
            .state()
            .run
            .as_ref()
            .filter(|run| run.id == run_id)
            .map(|run| run.signal.clone());
        let Some(signal) = signal else {
            return Err(super::errors::OUTSIDE_RUN.into());
        };
        self.process_event(run_id, &signal, &event).resolve().await
    }

    fn last_assistant(&self) -> Option<Message> {
        let state = self.state();
        state
            .messages
            .iter()
            .rev()
            .find(|m| role(m.json()) == "assistant")
            .cloned()
    }

    /// Says once per agent that compaction was asked for but the model has no window.
    async fn say_no_window_once(&self, run_id: u64, policy: &ContextPolicy) -> Result<(), String> {
        if !policy.compaction_needs_window {
            return Ok(());
        }
        if std::mem::replace(&mut self.state().said_no_window, true) {
            return Ok(());
        }
        let event = AgentEvent::CompactionEnd {
            reason: CompactReason::Threshold.name(),
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some(NO_CONTEXT_WINDOW.into()),
        };
        self.emit_run_event(run_id, event).await
    }

    /// Before a prompt's messages are added: compacts when the last response left the context
    /// past the threshold (or overflowed).
    pub(super) async fn before_prompt(
        &self,
        run_id: u64,
        recovery: &mut Recovery,
        signal: &AbortSignal,
    ) -> Result<(), String> {
        let policy = self.context_policy();
        self.say_no_window_once(run_id, &policy).await?;
        if !policy.compaction.enabled {
            return Ok(());
        }
        if let Some(message) = self.last_assistant() {
            // Boxed (as the retry and the check after an attempt): compaction's state is large
            // and rarely entered; inline, every run's future would carry it.
            Box::pin(self.check_compaction(run_id, &message, false, recovery, &policy, signal))
                .await?;
        }
        Ok(())
    }

    /// After the low-level loop returned (its `agent_end` delivered): retry, recover from an
    /// overflow, or compact past the threshold.
    pub(super) async fn after_attempt(
        &self,
        run_id: u64,
        recovery: &mut Recovery,
        signal: &AbortSignal,
    ) -> Result<Next, String> {
        let policy = self.context_policy();
        let last = self.state().messages.last().cloned();
        let Some(message) = last.filter(|m| role(m.json()) == "assistant") else {
            return Ok(Next::Done);
        };
        let stop = stop_reason(message.json());
        if stop == "aborted" || signal.is_aborted() {
            if recovery.retry_attempt > 0 {
                let end = AgentEvent::AutoRetryEnd {
                    success: false,
                    attempt: std::mem::take(&mut recovery.retry_attempt),
                    final_error: Some(RETRY_CANCELLED.into()),
                };
                self.emit_run_event(run_id, end).await?;
            }
            return Ok(Next::Done);
        }
        if stop != "error" && recovery.retry_attempt > 0 {
            let attempt = std::mem::take(&mut recovery.retry_attempt);
            let end = AgentEvent::AutoRetryEnd {
                success: true,
                attempt,
                final_error: None,
            };
            self.emit_run_event(run_id, end).await?;
        }
        if stop != "error" && stop != "length" {
            recovery.overflow_attempted = false;
        }
        let retryable = stop == "error"
            && policy.retry.enabled
            && is_retryable_error(message.json())
            && !is_context_overflow(message.json(), Some(policy.context_window));
        if retryable && recovery.retry_attempt < u64::from(policy.retry.max_retries) {
            return Box::pin(self.retry(run_id, &message, recovery, &policy, signal)).await;
        }
        if stop == "error" && recovery.retry_attempt > 0 {
            let end = AgentEvent::AutoRetryEnd {
                success: false,
                attempt: std::mem::take(&mut recovery.retry_attempt),
                final_error: Some(
                    error_text(message.json()).unwrap_or_else(|| "Unknown error".into()),
                ),
            };
            self.emit_run_event(run_id, end).await?;
        }
        self.say_no_window_once(run_id, &policy).await?;
        if !policy.compaction.enabled {
            return Ok(Next::Done);
        }
        Box::pin(self.check_compaction(run_id, &message, true, recovery, &policy, signal)).await
    }

    /// Announces the retry, hides the failed attempt and waits the backoff (an abort ends the
    /// wait at once and the run with it).
    async fn retry(
        &self,
        run_id: u64,
        message: &Message,
        recovery: &mut Recovery,
        policy: &ContextPolicy,
        signal: &AbortSignal,
    ) -> Result<Next, String> {
        recovery.retry_attempt += 1;
        let attempt = recovery.retry_attempt;
        let settings = &policy.retry;
        let delay_ms = retry_delay_ms(
            settings.base_delay_ms,
            settings.max_delay_ms,
            attempt as i64,
        );
        let start = AgentEvent::AutoRetryStart {
            attempt,
            max_attempts: u64::from(settings.max_retries),
            delay_ms,
            error_message: error_text(message.json()).unwrap_or_else(|| "Unknown error".into()),
        };
        self.emit_run_event(run_id, start).await?;
        self.hide_attempt(message)?;
        if self.wait_retry_delay(delay_ms, signal).await {
            return Ok(Next::Continue);
        }
        recovery.retry_attempt = 0;
        self.state().run_ending = Err(Error::new(ErrorKind::Aborted, RETRY_CANCELLED));
        let end = AgentEvent::AutoRetryEnd {
            success: false,
            attempt,
            final_error: Some(RETRY_CANCELLED.into()),
        };
        self.emit_run_event(run_id, end).await?;
        Ok(Next::Done)
    }

    /// Waits `delay_ms` (with the injected sleeper when there is one); `false` when the run was
    /// aborted first.
    async fn wait_retry_delay(&self, delay_ms: u64, signal: &AbortSignal) -> bool {
        let delay = Duration::from_millis(delay_ms);
        let sleeper = self.state().settings.retry_sleep.clone();
        let wait = match sleeper {
            Some(sleep) => sleep(delay),
            None => Box::pin(tokio::time::sleep(delay)),
        };
        tokio::select! {
            _ = wait => !signal.is_aborted(),
            _ = signal.aborted() => false,
        }
    }

    /// Hides a failed attempt from what the model is sent: removed from the transcript and,
    /// with a session, omitted by a `context_edit` (the file keeps it).
    /// Returns where it was in the transcript.
    fn hide_attempt(&self, message: &Message) -> Result<Option<usize>, String> {
        if let Some(link) = &self.inner.session {
            link.omit_last_assistant()?;
        }
        let mut state = self.state();
        let index = state.messages.iter().rposition(|m| m.ptr_eq(message));
        if let Some(index) = index {
            state.messages.edit(|messages| messages.remove(index));
        }
        Ok(index)
    }

    /// pi's compaction check on one response: overflow recovery, then the threshold.
    async fn check_compaction(
        &self,
        run_id: u64,
        message: &Message,
        skip_aborted: bool,
        recovery: &mut Recovery,
        policy: &ContextPolicy,
        signal: &AbortSignal,
    ) -> Result<Next, String> {
        let stop = stop_reason(message.json());
        if skip_aborted && stop == "aborted" {
            return Ok(Next::Done);
        }
        let (stale, same_model) = {
            let state = self.state();
            let index = state.messages.iter().rposition(|m| m.ptr_eq(message));
            let stale = index.is_some_and(|i| state.kept_by_compaction(i));
            (stale, from_model(message.json(), &state.model))
        };
        // A response from before the latest compaction describes a context that is gone.
        if stale {
            return Ok(Next::Done);
        }
        let overflow =
            same_model && is_context_overflow(message.json(), Some(policy.context_window));
        let cut_short = same_model && is_recoverable_length(message.json(), policy.max_tokens);
        if overflow || cut_short {
            if stop == "stop" {
                // The response is complete: compact, nothing to retry.
                self.run_compaction(run_id, CompactReason::Overflow, false, None, signal)
                    .await?;
                return Ok(Next::Done);
            }
            if recovery.overflow_attempted {
                let text = if overflow {
                    OVERFLOW_RECOVERY_FAILED
                } else {
                    LENGTH_RECOVERY_FAILED
                };
                self.state().run_ending = Err(Error::new(ErrorKind::ModelError, text));
                let end = AgentEvent::CompactionEnd {
                    reason: CompactReason::Overflow.name(),
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(text.into()),
                };
                self.emit_run_event(run_id, end).await?;
                return Ok(Next::Done);
            }
            recovery.overflow_attempted = true;
            let hidden_at = self.hide_attempt(message)?;
            let outcome = self
                .run_compaction(run_id, CompactReason::Overflow, true, None, signal)
                .await?;
            return Ok(match outcome {
                CompactOutcome::Applied => Next::Continue,
                CompactOutcome::NothingToCompact => {
                    // Nothing older to summarize: the attempt stays as it was (a session keeps
                    // its context edit, as pi-coding-agent's does).
                    if let (None, Some(index)) = (&self.inner.session, hidden_at) {
                        let mut state = self.state();
                        let index = index.min(state.messages.len());
                        state.messages.edit(|m| m.insert(index, message.clone()));
                    }
                    Next::Done
                }
                CompactOutcome::Failed(error) => {
                    self.state().run_ending = Err(Error::new(ErrorKind::ModelError, error));
                    Next::Done
                }
                _ => Next::Done,
            });
        }
        let reported = message
            .json()
            .field("usage")
            .map(usage_context_tokens)
            .filter(|tokens| tokens.is_finite())
            .unwrap_or(0.0);
        let tokens = if stop == "error" || reported == 0.0 {
            let state = self.state();
            let estimate = estimate_context(&state.messages);
            if estimate
                .last_usage_index
                .is_some_and(|i| state.kept_by_compaction(i))
            {
                return Ok(Next::Done);
            }
            estimate.tokens as f64
        } else {
            reported
        };
        if should_compact(tokens, policy.context_window, &policy.compaction) {
            self.run_compaction(run_id, CompactReason::Threshold, false, None, signal)
                .await?;
        }
        Ok(Next::Done)
    }
}

//! Compacting the agent's context: the older part of the conversation is replaced by a summary
//! and the recent part kept verbatim. The cut and what to summarize come from `crate::context`
//! on the session's branch (without a session, on an in-memory session built from the
//! transcript); the summary from the host's `compact` hook or the agent's own model. Applied as
//! a `compaction` entry, and the transcript becomes the session's context.

use super::context_policy::CompactReason;
use super::Agent;
use crate::context::{estimate_message, CompactionPreparation, CompactionSettings};
use crate::event::AgentEvent;
use crate::host::{call_hook, AbortSignal};
use crate::json::Field;
use crate::json::{json, Json};
use crate::message::{role, stored_vec, Message};
use crate::session::Session;

/// How a compaction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CompactOutcome {
    /// The summary replaced the older messages.
    Applied,
    /// Nothing to compact (no events were emitted).
    NothingToCompact,
    /// Aborted, or cancelled by the hook: transcript and session unchanged.
    Aborted,
    /// The summary could not be made: transcript and session unchanged.
    Failed(String),
}

/// A summary to apply.
struct Summary {
    text: String,
    details: Option<Json>,
    usage: Option<Json>,
    from_hook: bool,
}

/// Why summarizing did not give a summary.
enum NoSummary {
    Cancelled,
    Failed(String),
}

/// The text `agent_compact` / `Agent::compact` fail with when there is nothing to compact.
pub const NOTHING_TO_COMPACT: &str =
    "Nothing to compact: the conversation is shorter than what compaction keeps (compaction.keepRecentTokens).";

/// A manual compaction's run ends aborted with this when it was aborted or the hook cancelled.
pub const COMPACTION_CANCELLED: &str = "Compaction cancelled.";

impl Agent {
    /// Compacts now. Emits `compaction_start` and `compaction_end` (none when there is nothing
    /// to compact). `Err` only when a listener failed.
    pub(super) async fn run_compaction(
        &self,
        run_id: u64,
        reason: CompactReason,
        will_retry: bool,
        focus: Option<String>,
        signal: &AbortSignal,
    ) -> Result<CompactOutcome, String> {
        let settings = self.context_policy().compaction;
        // A session that cannot be read back fails the compaction (reported as any failure).
        let (preparation, in_memory) = match self.prepare_compaction(&settings) {
            Ok((None, _)) => return Ok(CompactOutcome::NothingToCompact),
            Ok((Some(preparation), in_memory)) => (Ok(preparation), in_memory),
            Err(error) => (Err(NoSummary::Failed(error)), None),
        };
        let start = AgentEvent::CompactionStart {
            reason: reason.name(),
        };
        self.emit_run_event(run_id, start).await?;
        let applied = match preparation {
            Ok(preparation) => {
                let summary = self
                    .summarize(reason, &preparation, focus.as_deref(), &settings, signal)
                    .await;
                match summary {
                    _ if signal.is_aborted() => Err(NoSummary::Cancelled),
                    Ok(summary) => self.apply_compaction(&preparation, summary, in_memory),
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        };
        let (outcome, result, error_message) = match applied {
            Ok(result) => (CompactOutcome::Applied, Some(result), None),
            Err(NoSummary::Cancelled) => (CompactOutcome::Aborted, None, None),
            Err(NoSummary::Failed(error)) => {
                let text = match reason {
                    CompactReason::Overflow => format!("Context overflow recovery failed: {error}"),
                    CompactReason::Threshold => format!("Auto-compaction failed: {error}"),
                    CompactReason::Manual => format!("Compaction failed: {error}"),
                };
                (CompactOutcome::Failed(text.clone()), None, Some(text))
            }
        };
        let end = AgentEvent::CompactionEnd {
            reason: reason.name(),
            aborted: outcome == CompactOutcome::Aborted,
            will_retry: will_retry && outcome == CompactOutcome::Applied,
            result,
            error_message,
        };
        self.emit_run_event(run_id, end).await?;
        Ok(outcome)
    }

    /// The preparation on the session's branch, or on an in-memory session made from the
    /// transcript (returned too: the compaction is applied to it).
    fn prepare_compaction(
        &self,
        settings: &CompactionSettings,
    ) -> Result<(Option<CompactionPreparation>, Option<Session>), String> {
        if let Some(link) = &self.inner.session {
            return Ok((link.prepare_compaction(settings)?, None));
        }
        let messages = self.state().messages.clone();
        let session = transcript_session(&messages);
        let branch = session.branch_path().map_err(|error| error.to_string())?;
        let preparation = crate::context::prepare_compaction(&branch, settings);
        drop(branch);
        Ok((preparation, Some(session)))
    }

    /// The summary from the `compact` hook, or from the agent's model when the hook answers
    /// nothing (or there is none).
    async fn summarize(
        &self,
        reason: CompactReason,
        preparation: &CompactionPreparation,
        focus: Option<&str>,
        settings: &CompactionSettings,
        signal: &AbortSignal,
    ) -> Result<Summary, NoSummary> {
        let preparation = preparation.to_json();
        let hook = self.state().settings.hooks.compact.clone();
        if let Some(hook) = hook {
            let mut input = json!({"reason": reason.name(), "preparation": preparation});
            if let Some(focus) = focus {
                input["focus"] = json!(focus);
            }
            let answer = tokio::select! {
                answer = call_hook(&hook, input, signal) => answer,
                _ = signal.aborted() => return Err(NoSummary::Cancelled),
            };
            if let Some(summary) = hook_summary(answer)? {
                return Ok(summary);
            }
        }
        let (text, usage) = self
            .model_summary(&preparation, focus, settings.reserve_tokens, signal)
            .await
            .map_err(NoSummary::Failed)?;
        Ok(Summary {
            text,
            details: None,
            usage,
            from_hook: false,
        })
    }

    /// Writes the `compaction` entry and makes the transcript the context after it; returns
    /// the `compaction_end` result.
    fn apply_compaction(
        &self,
        preparation: &CompactionPreparation,
        summary: Summary,
        in_memory: Option<Session>,
    ) -> Result<Json, NoSummary> {
        let lists = preparation.file_ops.lists();
        let details = summary.details.unwrap_or_else(
            || json!({"readFiles": lists.read_files, "modifiedFiles": lists.modified_files}),
        );
        let mut entry = json!({
            "type": "compaction",
            "summary": summary.text,
            "firstKeptEntryId": preparation.first_kept_entry_id,
            "tokensBefore": preparation.tokens_before,
            "details": details,
        });
        if summary.from_hook {
            entry["fromHook"] = json!(true);
        }
        if let Some(usage) = &summary.usage {
            entry["usage"] = usage.clone();
        }
        let failed = |error: String| NoSummary::Failed(error);
        let messages = match (&self.inner.session, in_memory) {
            (Some(link), _) => link.append_compaction(entry).map_err(failed)?,
            (None, Some(mut session)) => {
                session
                    .append(entry)
                    .map_err(|error| failed(error.to_string()))?;
                let mut messages = session
                    .context()
                    .map_err(|error| failed(error.to_string()))?
                    .messages;
                // The transcript's summary carries its file lists for the next compaction.
                if let Some(message) = messages.iter_mut().find(|m| role(m) == "compactionSummary")
                {
                    message["details"] = details.clone();
                }
                messages
            }
            (None, None) => return Err(failed("no session to compact".into())),
        };
        let estimated_after: u64 = messages.iter().map(estimate_message).sum();
        {
            let mut state = self.state();
            state.messages = stored_vec(messages).into();
            state.declared_tools = None;
            state.compacted_len = Some(state.messages.len());
        }
        self.forget_replaced_messages();
        let mut result = json!({
            "summary": summary.text,
            "firstKeptEntryId": preparation.first_kept_entry_id,
            "tokensBefore": preparation.tokens_before,
            "estimatedTokensAfter": estimated_after,
        });
        if let Some(usage) = summary.usage {
            result["usage"] = usage;
        }
        result["details"] = details;
        Ok(result)
    }

    /// The summary written by the agent's own model through its stream function.
    async fn model_summary(
        &self,
        preparation: &Json,
        focus: Option<&str>,
        reserve_tokens: u64,
        signal: &AbortSignal,
    ) -> Result<(String, Option<Json>), String> {
        let (stream_fn, model, mut options, identity, get_api_key) = {
            let state = self.state();
            let settings = &state.settings;
            (
                state.stream_fn.clone(),
                (*state.model).clone(),
                settings.stream_options(),
                settings.identity.clone(),
                settings.hooks.get_api_key.clone(),
            )
        };
        let Some(stream_fn) = stream_fn else {
            return Err("the agent has no stream function".into());
        };
        options.insert(
            "identity".into(),
            crate::agent_loop::merged_identity(identity.as_ref()),
        );
        if let Some(hook) = get_api_key {
            let provider = model.field("provider").cloned().unwrap_or(Json::Null);
            if let Ok(Some(Json::String(key))) = call_hook(&hook, provider, signal).await {
                if !key.is_empty() {
                    options.insert("apiKey".into(), json!(key));
                }
            }
        }
        let options = Json::Object(options);
        summarize_with_model(
            &stream_fn,
            &model,
            &options,
            preparation,
            focus,
            reserve_tokens,
            signal,
        )
        .await
    }
}

/// The hook's answer: a summary, `None` to let libagent write it, or why there is none.
fn hook_summary(answer: crate::host::HookResult) -> Result<Option<Summary>, NoSummary> {
    let answer = match answer {
        Err(error) => {
            return Err(NoSummary::Failed(format!(
                "the compact hook failed: {error}"
            )))
        }
        Ok(None | Some(Json::Null)) => return Ok(None),
        Ok(Some(answer)) => answer,
    };
    if answer.field("cancel") == Some(&Json::Bool(true)) {
        return Err(NoSummary::Cancelled);
    }
    match answer.field("summary") {
        Some(Json::String(text)) if !text.trim().is_empty() => Ok(Some(Summary {
            text: text.clone(),
            details: answer.field("details").filter(|d| !d.is_null()).cloned(),
            usage: None,
            from_hook: true,
        })),
        _ => Err(NoSummary::Failed(
            "the compact hook answered without a non-empty \"summary\" string; answer {\"summary\": ...}, {\"cancel\": true} or null.".into(),
        )),
    }
}

/// The summary written with the agent's model (`crate::context::summary`).
async fn summarize_with_model(
    stream_fn: &crate::host::StreamFn,
    model: &Json,
    options: &Json,
    preparation: &Json,
    focus: Option<&str>,
    reserve_tokens: u64,
    signal: &AbortSignal,
) -> Result<(String, Option<Json>), String> {
    let input = crate::context::SummaryInput {
        preparation,
        focus,
        reserve_tokens,
    };
    let summary = crate::context::summarize(stream_fn, model, options, input, signal).await?;
    Ok((summary.summary, summary.usage))
}

/// An in-memory session holding the transcript, one entry per message, so the session's cut
/// point applies. A `compactionSummary` message (left by an earlier in-memory compaction)
/// becomes the `compaction` entry it stands for, keeping what follows it. Linear.
fn transcript_session(messages: &[Message]) -> Session {
    let mut session = Session::in_memory("");
    let summary_at = messages
        .iter()
        .rposition(|m| role(m.json()) == "compactionSummary");
    let mut rest = messages;
    if let Some(at) = summary_at {
        let summary = &messages[at];
        let mut entry = json!({"type": "compaction"});
        for key in ["summary", "tokensBefore", "details"] {
            if let Some(value) = summary.json().get(key) {
                entry[key] = value.clone();
            }
        }
        // The entry keeps nothing before it; the system message goes with it.
        let system =
            crate::transcript::current_system_message(messages[..at].iter().map(Message::json));
        entry["systemMessage"] = system.unwrap_or(Json::Null);
        let _ = session.append(entry);
        rest = &messages[at + 1..];
    }
    for message in rest {
        let _ = session.append_message(message.json());
    }
    session
}

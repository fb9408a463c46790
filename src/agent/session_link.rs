//! An agent's link to its session file: one agent per session, the transcript resumed from the
//! session's context, and every committed message, model change and thinking-level change
//! appended as it happens (the way pi-coding-agent's session records a conversation).

use crate::json::Field;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind};
use crate::json::Json;
use crate::message::role;
use crate::session::Session;
use crate::sync::lock;

/// A session shared between its owner (a C handle, a binding object) and the agent using it.
pub type SharedSession = Arc<Mutex<Session>>;

/// Sessions attached to a live agent, by address: a second agent on one session would write
/// interleaved branches into one file.
static ATTACHED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// The attachment: detaches when the agent is gone.
pub(super) struct SessionLink {
    session: SharedSession,
    /// The entry id of the last assistant message recorded (a failed attempt is hidden by a
    /// context edit naming it).
    last_assistant: Mutex<Option<String>>,
}

pub(super) const ALREADY_ATTACHED: &str =
    "The session is already used by another agent; open a second session or free that agent first.";

impl SessionLink {
    pub(super) fn attach(session: SharedSession) -> Result<SessionLink, Error> {
        let key = Arc::as_ptr(&session) as usize;
        if !lock(&ATTACHED).get_or_insert_with(HashSet::new).insert(key) {
            return Err(Error::new(ErrorKind::InvalidState, ALREADY_ATTACHED));
        }
        Ok(SessionLink {
            session,
            last_assistant: Mutex::new(None),
        })
    }

    /// Turns the initial transcript into the session's: a session with a context resumes it
    /// (its messages, and its thinking level when one was recorded); a host-given model that
    /// differs from the session's is recorded. Returns the thinking level to start with and how
    /// many of `messages` came from the session.
    pub(super) fn resume(
        &self,
        messages: &mut Vec<Json>,
        model: Option<&Json>,
        thinking_level: Option<String>,
    ) -> Result<(String, usize), Error> {
        let mut session = lock(&self.session);
        let context = session.context().map_err(io)?;
        let resumed = !context.messages.is_empty();
        let recorded_level = session
            .branch_path()
            .map_err(io)?
            .iter()
            .any(|entry| {
                entry.field("type").and_then(Json::as_str) == Some("thinking_level_change")
            })
            .then(|| context.thinking_level.clone());
        let from_session = context.messages.len();
        if resumed {
            *messages = context.messages;
        }
        // As pi-coding-agent starts a session: the model, then the thinking level.
        if let Some((provider, id)) = model.and_then(provider_and_id) {
            let same = context.model.as_ref().is_some_and(|recorded| {
                recorded.field("provider").and_then(Json::as_str) == Some(provider)
                    && recorded.field("modelId").and_then(Json::as_str) == Some(id)
            });
            if !same {
                session.append_model_change(provider, id).map_err(io)?;
            }
        }
        let level = match recorded_level {
            Some(recorded) => recorded,
            None => {
                let level = thinking_level.unwrap_or_else(|| "off".into());
                session.append_thinking_level_change(&level).map_err(io)?;
                level
            }
        };
        Ok((level, from_session))
    }

    /// Appends the messages at the front of the initial transcript that the session does not
    /// hold: the host's initial messages on a new session, and the initial system message made
    /// from `systemPrompt` and the tools (§7.4 puts it first).
    pub(super) fn record_initial(
        &self,
        from_session: usize,
        messages: &[Json],
    ) -> Result<(), Error> {
        let mut session = lock(&self.session);
        let added = messages.len().saturating_sub(from_session);
        for message in &messages[..added] {
            session.append_message(message).map_err(io)?;
        }
        Ok(())
    }

    /// Records a committed message: `custom` messages as `custom_message` entries, the four
    /// model roles as `message` entries, other roles not at all (as pi-coding-agent does).
    pub(super) fn record_message(&self, message: &Json) -> Result<(), String> {
        let entry = match role(message) {
            "system" | "user" | "assistant" | "toolResult" => None,
            "custom" => Some(custom_message_entry(message)),
            _ => return Ok(()),
        };
        let mut session = lock(&self.session);
        let written = match entry {
            None => session.append_message(message),
            Some(entry) => session.append(entry),
        };
        let id = written.map_err(|error| error.to_string())?;
        if role(message) == "assistant" {
            *lock(&self.last_assistant) = Some(id);
        }
        Ok(())
    }

    /// Hides the last assistant message recorded from the context (a `context_edit` with
    /// `replacement: null`): a failed attempt stays in the file but is no longer sent.
    pub(super) fn omit_last_assistant(&self) -> Result<(), String> {
        let Some(target) = lock(&self.last_assistant).take() else {
            return Ok(());
        };
        let edit =
            crate::json::json!({"type": "context_edit", "targetId": target, "replacement": null});
        lock(&self.session)
            .append(edit)
            .map(drop)
            .map_err(|error| error.to_string())
    }

    /// Prepares compacting the session's current branch (None: nothing to compact).
    pub(super) fn prepare_compaction(
        &self,
        settings: &crate::context::CompactionSettings,
    ) -> Result<Option<crate::context::CompactionPreparation>, String> {
        let session = lock(&self.session);
        let branch = session.branch_path().map_err(|error| error.to_string())?;
        Ok(crate::context::prepare_compaction(&branch, settings))
    }

    /// Appends a `compaction` entry; returns the session's context messages after it.
    pub(super) fn append_compaction(&self, entry: Json) -> Result<Vec<Json>, String> {
        let mut session = lock(&self.session);
        session.append(entry).map_err(|error| error.to_string())?;
        Ok(session
            .context()
            .map_err(|error| error.to_string())?
            .messages)
    }

    /// Records a model change when the provider or id differ.
    pub(super) fn record_model(&self, old: &Json, new: &Json) -> Result<(), Error> {
        let Some((provider, id)) = provider_and_id(new) else {
            return Ok(());
        };
        if provider_and_id(old) == Some((provider, id)) {
            return Ok(());
        }
        let mut session = lock(&self.session);
        session
            .append_model_change(provider, id)
            .map(drop)
            .map_err(io)
    }

    /// Records a thinking-level change when the level differs.
    pub(super) fn record_thinking_level(&self, old: &str, new: &str) -> Result<(), Error> {
        if old == new {
            return Ok(());
        }
        let mut session = lock(&self.session);
        session
            .append_thinking_level_change(new)
            .map(drop)
            .map_err(io)
    }
}

impl Drop for SessionLink {
    fn drop(&mut self) {
        let key = Arc::as_ptr(&self.session) as usize;
        if let Some(attached) = lock(&ATTACHED).as_mut() {
            attached.remove(&key);
        }
    }
}

fn io(error: crate::session::SessionError) -> Error {
    Error::new(ErrorKind::Io, error.to_string())
}

fn provider_and_id(model: &Json) -> Option<(&str, &str)> {
    let provider = model.field("provider").and_then(Json::as_str)?;
    let id = model.field("id").and_then(Json::as_str)?;
    (!provider.is_empty() && !id.is_empty()).then_some((provider, id))
}

/// A `custom` message as the session stores it: its own entry type, without role and timestamp.
fn custom_message_entry(message: &Json) -> Json {
    let mut entry = crate::json::JsonMap::new();
    entry.insert("type".into(), Json::String("custom_message".into()));
    for key in ["customType", "content", "display", "details"] {
        if let Some(value) = message.get(key) {
            entry.insert(key.into(), value.clone());
        }
    }
    Json::Object(entry)
}

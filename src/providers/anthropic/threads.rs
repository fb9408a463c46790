//! Message threads (pi-ai 1.6.0, Anthropic's endpoint or `compat.supportsMessageThreads`): a
//! session's first request creates a thread; the next one, when it extends the conversation the
//! server already holds, continues it with only the new messages. The state is per process and
//! per `sessionId`, like pi-ai's module state.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::Hasher;
use std::sync::Mutex;

use crate::json::{json, to_string, Json, JsonMap};

/// Sessions kept at most (the least recently updated one is dropped beyond).
const MAX_SESSIONS: usize = 10_000;
/// Rejections of a `continue` that a new thread fixes.
const NEW_THREAD_ERRORS: [&str; 4] = [
    "thread_not_found",
    "thread_already_continued",
    "thread_continue_in_flight",
    "thread_fingerprint_mismatch",
];

#[derive(Debug, Clone, PartialEq)]
enum State {
    /// The endpoint rejected threads: send none for this session.
    Off,
    /// The next request may continue after `reply_id` if its first `prefix_count` messages
    /// (and settings) hash to `prefix_hash`.
    Reply {
        prefix_count: usize,
        prefix_hash: u64,
        reply_id: String,
    },
}

/// Insertion order (oldest first) and the states.
type Sessions = (VecDeque<String>, Option<HashMap<String, State>>);
static SESSIONS: Mutex<Sessions> = Mutex::new((VecDeque::new(), None));

fn get(session: &str) -> Option<State> {
    let sessions = crate::sync::lock(&SESSIONS);
    sessions.1.as_ref()?.get(session).cloned()
}

fn remove(session: &str) {
    let mut sessions = crate::sync::lock(&SESSIONS);
    let (order, states) = &mut *sessions;
    if states.as_mut().and_then(|s| s.remove(session)).is_some() {
        order.retain(|s| s != session);
    }
}

/// Sets a session's state as its newest entry, dropping the oldest beyond the cap.
fn set(session: &str, state: State) {
    let mut sessions = crate::sync::lock(&SESSIONS);
    let (order, states) = &mut *sessions;
    let states = states.get_or_insert_with(HashMap::new);
    if states.insert(session.to_string(), state).is_some() {
        order.retain(|s| s != session);
    }
    order.push_back(session.to_string());
    if order.len() > MAX_SESSIONS {
        if let Some(oldest) = order.pop_front() {
            states.remove(&oldest);
        }
    }
}

/// Hash of what a `continue` builds on: the fixed settings as sent and the messages the server
/// holds, normalized so that moving cache markers and string-vs-block content do not matter.
/// Only ever compared with another hash of this process.
fn prefix_hash(model: &Json, params: &JsonMap, betas: &[String], messages: &[Json]) -> u64 {
    let field = |key: &str| params.get(key).cloned().unwrap_or(Json::Null);
    let settings = json!([
        model.get("provider").cloned().unwrap_or(Json::Null),
        model.get("baseUrl").cloned().unwrap_or(Json::Null),
        field("model"),
        field("system"),
        field("tools"),
        field("thinking"),
        field("output_config"),
        field("tool_choice"),
        betas,
        field("fallbacks")
    ]);
    let conversation: Vec<Json> = messages.iter().map(normalize).collect();
    let mut hasher = DefaultHasher::new();
    hasher.write(to_string(&settings).as_bytes());
    hasher.write(to_string(&Json::Array(conversation)).as_bytes());
    hasher.finish()
}

/// Without `cache_control`, string `content` as one text block.
fn normalize(value: &Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| {
                    let value = match value {
                        Json::String(text) if key == "content" => {
                            json!([{"type": "text", "text": text}])
                        }
                        other => normalize(other),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// A request sent with a `thread` field.
#[derive(Debug, Clone)]
pub struct ThreadRequest {
    pub session: String,
    pub body: JsonMap,
}

/// `createThreadRequest`.
pub fn create(session: &str, params: &JsonMap) -> ThreadRequest {
    let mut body = params.clone();
    body.insert("thread".into(), json!({"type": "create"}));
    ThreadRequest {
        session: session.to_string(),
        body,
    }
}

/// `prepareThreadRequest`: `None` when threads are off for the session; a `continue` when the
/// request extends the last reply's conversation (each reply is continued once); else a new
/// thread.
pub fn prepare(
    model: &Json,
    session: &str,
    params: &JsonMap,
    betas: &[String],
) -> Option<ThreadRequest> {
    let messages: &[Json] = params
        .get("messages")
        .and_then(Json::as_array)
        .map_or(&[], Vec::as_slice);
    match get(session) {
        Some(State::Off) => None,
        Some(State::Reply {
            prefix_count,
            prefix_hash: hash,
            reply_id,
        }) if messages.len() > prefix_count
            && prefix_hash(model, params, betas, &messages[..prefix_count]) == hash =>
        {
            remove(session);
            let mut body = params.clone();
            body.shift_remove("system");
            body.shift_remove("tools");
            body.insert(
                "messages".into(),
                Json::Array(messages[prefix_count..].to_vec()),
            );
            body.insert(
                "thread".into(),
                json!({"type": "continue", "previous_message_id": reply_id}),
            );
            Some(ThreadRequest {
                session: session.to_string(),
                body,
            })
        }
        _ => Some(create(session, params)),
    }
}

/// How a rejected thread request is resent (`sendThreadRequest`).
pub enum Fallback {
    /// As a new thread.
    NewThread,
    /// Without `thread`; threads are then off for the session.
    WithoutThread,
}

/// The fallback for an HTTP error of a thread request, and the diagnostic's reason; `None` when
/// the error is not about the thread.
pub fn fallback(status: u16, body: &str, message: &str) -> Option<(Fallback, String)> {
    let code = crate::json::parse(body).ok().and_then(|b| {
        b.get("error")?
            .get("details")?
            .get("error_code")?
            .as_str()
            .map(str::to_string)
    });
    match code {
        Some(code) if NEW_THREAD_ERRORS.contains(&code.as_str()) => {
            Some((Fallback::NewThread, code))
        }
        Some(code) if code == "thread_unsupported_request" => Some((Fallback::WithoutThread, code)),
        None if status == 400 && message.contains("thread") => {
            Some((Fallback::WithoutThread, status.to_string()))
        }
        _ => None,
    }
}

/// The endpoint rejected threads for `session`.
pub fn turn_off(session: &str) {
    set(session, State::Off);
}

/// `recordThreadReply`: where the session's next request can continue, after `reply` (its wire
/// form), the clean answer to a thread request whose full body was `params`.
pub fn record(
    model: &Json,
    session: &str,
    params: &JsonMap,
    betas: &[String],
    reply_id: &str,
    reply: Vec<Json>,
) {
    let mut prefix: Vec<Json> = params
        .get("messages")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    prefix.extend(reply);
    set(
        session,
        State::Reply {
            prefix_count: prefix.len(),
            prefix_hash: prefix_hash(model, params, betas, &prefix),
            reply_id: reply_id.to_string(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(messages: Json) -> JsonMap {
        match json!({"model": "m", "system": [{"type": "text", "text": "S"}], "messages": messages})
        {
            Json::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_reply_is_continued_once_when_the_conversation_extends_it() {
        let model = json!({"provider": "anthropic", "baseUrl": "https://api.anthropic.com"});
        let session = "threads-test-session";
        let first = params(json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]));
        let created = prepare(&model, session, &first, &[]).unwrap();
        assert_eq!(created.body["thread"], json!({"type": "create"}));
        let reply = vec![json!({"role": "assistant", "content": [{"type": "text", "text": "yo"}]})];
        record(&model, session, &first, &[], "msg_1", reply);

        // The next request sends the old user turn as a string and the reply; cache markers moved.
        let second = params(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]}
        ]));
        let continued = prepare(&model, session, &second, &[]).unwrap();
        assert_eq!(
            continued.body["thread"],
            json!({"type": "continue", "previous_message_id": "msg_1"})
        );
        assert_eq!(continued.body["messages"].as_array().unwrap().len(), 1);
        assert!(continued.body.get("system").is_none());
        // Continued once: the same request again starts a new thread.
        let again = prepare(&model, session, &second, &[]).unwrap();
        assert_eq!(again.body["thread"], json!({"type": "create"}));

        // A changed system prompt cannot continue.
        record(&model, session, &first, &[], "msg_2", Vec::new());
        let mut changed = second.clone();
        changed.insert("system".into(), json!([{"type": "text", "text": "other"}]));
        let new = prepare(&model, session, &changed, &[]).unwrap();
        assert_eq!(new.body["thread"], json!({"type": "create"}));

        turn_off(session);
        assert!(prepare(&model, session, &second, &[]).is_none());
    }

    #[test]
    fn only_thread_errors_fall_back() {
        let body = |code: &str| format!(r#"{{"error":{{"details":{{"error_code":"{code}"}}}}}}"#);
        assert!(matches!(
            fallback(400, &body("thread_not_found"), ""),
            Some((Fallback::NewThread, _))
        ));
        assert!(matches!(
            fallback(400, &body("thread_unsupported_request"), ""),
            Some((Fallback::WithoutThread, _))
        ));
        assert!(matches!(
            fallback(400, "{}", "400 thread: Extra inputs are not permitted"),
            Some((Fallback::WithoutThread, reason)) if reason == "400"
        ));
        assert!(fallback(400, "{}", "400 prompt is too long").is_none());
        assert!(fallback(500, &body("other"), "thread").is_none());
    }
}

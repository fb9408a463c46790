//! The `anthropic-messages` API: pi-ai 1.6.0's `streamSimple` (kit README §8.1, §8.4–§8.7).
//!
//! `start` makes pi-ai's synchronous check (an API key or an auth header), then a task on the
//! runtime builds the request (`request`), sends it with pi-ai's retry policy, and maps the
//! server-sent events onto the stream (`Reader`).

mod request;
mod response;
#[cfg(any(test, feature = "fuzzing"))]
pub(super) use response::read_body;
pub(super) mod strict;
pub(super) use strict::resolve_with as strict_schema;
mod threads;

use crate::json::{json, now_ms, to_string, Json, JsonMap};
use crate::stream::{StreamClosed, StreamSender};

use super::http::{self, Chunk, Failure};
use super::limits::truthy;
use super::output::Output;
use super::sse::SseParser;
use super::{require_api_key, Call};
use response::Reader;

/// What ends the reading of a response early.
enum Stop {
    /// The stream fails with this `errorMessage`.
    Fail(String),
    /// The agent stopped consuming: give up quietly.
    Closed,
}

impl From<StreamClosed> for Stop {
    fn from(_: StreamClosed) -> Self {
        Stop::Closed
    }
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Fail(message)
    }
}

/// `streamSimple`: fails synchronously only without credentials (`assertRequestAuth`).
pub fn start(call: Call, sender: &StreamSender) -> Result<(), String> {
    check_auth(&call)?;
    crate::runtime::spawn(run(call, sender.clone()));
    Ok(())
}

/// An API key, or an `authorization`, `x-api-key` or `cf-aig-authorization` header with a
/// non-blank value in `options.headers`.
fn check_auth(call: &Call) -> Result<(), String> {
    require_api_key(
        call,
        &["authorization", "x-api-key", "cf-aig-authorization"],
    )
}

/// The Anthropic SDK's `APIError` message for an HTTP error: `<status> ` + the body's
/// `message` if truthy (stringified unless a string), else the whole JSON body, else the text.
pub(crate) fn describe_http_error(status: u16, body: &str) -> String {
    let parsed = crate::json::parse(body).ok().filter(truthy);
    let text = match &parsed {
        Some(error) => match error.get("message").filter(|m| truthy(m)) {
            Some(Json::String(message)) => message.clone(),
            Some(message) => to_string(message),
            None => to_string(error),
        },
        None => body.to_string(),
    };
    if text.is_empty() {
        format!("{status} status code (no body)")
    } else {
        format!("{status} {text}")
    }
}

async fn run(call: Call, sender: StreamSender) {
    let mut out = Output::new(sender, &call.model);
    let signal = call.signal.clone();
    // `signal.throwIfAborted()` before the request: the DOMException's text.
    if signal.is_aborted() {
        let _ = out.fail(true, "This operation was aborted");
        return;
    }
    let session = call.option("sessionId").and_then(Json::as_str);
    let mut disable_preferred_strict = strict_limits::exceeded(session);
    let mut diagnostics = Vec::new();
    let (built, mut response, thread) = loop {
        let built = match request::build(&call, disable_preferred_strict) {
            Ok(built) => built,
            Err(message) => {
                let _ = out.fail(signal.is_aborted(), &message);
                return;
            }
        };
        if let Some(level) = &built.provider_thinking_level {
            out.preset("providerThinkingLevel", level.as_str().into());
        }
        let prepared = match &built.thread_session {
            Some(session) if call.option("disableContinuation") != Some(&Json::Bool(true)) => {
                threads::prepare(&call.model, session, &built.params, &built.betas)
            }
            _ => None,
        };
        let sent = match prepared {
            Some(thread) => send_thread(thread, &built, &signal, &mut diagnostics, &mut out).await,
            None => http::send(&built.request, &signal, describe_http_error)
                .await
                .map(|response| (response, None)),
        };
        let failure = match sent {
            Ok((response, thread)) => break (built, response, thread),
            Err(failure) => failure,
        };
        let message = match failure {
            // pi-ai's retry wrapper replaces any failure after an abort.
            Failure::Aborted => "Request aborted".to_string(),
            Failure::Status { status, body } => {
                let message = describe_http_error(status, &body);
                // Strict tools over Claude's limits: once more with the preferring ones
                // non-strict, and the session remembers it.
                if status == 400
                    && !signal.is_aborted()
                    && !disable_preferred_strict
                    && built.has_preferred_strict_tools
                    && strict_limits::is_limit_error(&body, &message)
                {
                    disable_preferred_strict = true;
                    strict_limits::mark(session);
                    diagnostics.push(json!({"type": "anthropic_strict_tools_fallback",
                        "timestamp": now_ms(), "error": {"message": message},
                        "details": {"reason": "strict_tool_limits_exceeded"}}));
                    out.preset("diagnostics", Json::Array(diagnostics.clone()));
                    if signal.is_aborted() {
                        let _ = out.fail(true, "This operation was aborted");
                        return;
                    }
                    continue;
                }
                message
            }
            Failure::Message(message) => message,
        };
        let _ = out.fail(signal.is_aborted(), &message);
        return;
    };
    if out.start().is_err() {
        return;
    }
    let mut reader = Reader::new(&call, built.oauth, built.tools.clone());
    reader.diagnostics = diagnostics;
    if thread.is_some() {
        reader.reply = Some(Vec::new());
    }
    // pi-ai reads Anthropic's events with its own line splitter, which differs from the SDKs' on
    // a CRLF cut between two reads.
    let mut parser = SseParser::split_crlf_across_reads();
    let outcome: Result<(), Stop> = async {
        loop {
            if signal.is_aborted() {
                return Err(Stop::Fail("Request was aborted".into()));
            }
            match response.next_chunk(&signal).await {
                Chunk::Data(bytes) => {
                    for event in parser.feed(&bytes) {
                        reader.handle(&event, &mut out)?;
                        out.keep_pace().await;
                    }
                }
                Chunk::End => {
                    if let Some(event) = parser.finish() {
                        reader.handle(&event, &mut out)?;
                    }
                    return Ok(());
                }
                Chunk::Failed(text) => return Err(Stop::Fail(text)),
                Chunk::Aborted => return Err(Stop::Fail("Request was aborted".into())),
            }
        }
    }
    .await;
    // The connection is dropped before anything else is reported (as in openai-completions).
    drop(response);
    let ended = outcome.and_then(|()| reader.end(signal.is_aborted(), &mut out));
    let _ = match ended {
        Ok(reason) => {
            if let Some(thread) = &thread {
                reader.record_thread_reply(&call, &built, thread, &reason);
            }
            out.done(&reason)
        }
        Err(Stop::Fail(message)) => out.fail(signal.is_aborted(), &message),
        Err(Stop::Closed) => Ok(()),
    };
}

/// `sendThreadRequest`: a rejection about the thread is resent once in full, as a new thread
/// or (the endpoint cannot use threads) without `thread`, which turns threads off for the session.
async fn send_thread(
    thread: threads::ThreadRequest,
    built: &request::Built,
    signal: &crate::host::AbortSignal,
    diagnostics: &mut Vec<Json>,
    out: &mut Output,
) -> Result<(http::Response, Option<threads::ThreadRequest>), Failure> {
    let with_body = |body: &JsonMap| http::HttpRequest {
        body: to_string(&Json::Object(body.clone())),
        ..built.request.clone()
    };
    let failure = match http::send(&with_body(&thread.body), signal, describe_http_error).await {
        Ok(response) => return Ok((response, Some(thread))),
        Err(failure) => failure,
    };
    let Failure::Status { status, body } = &failure else {
        return Err(failure);
    };
    let message = describe_http_error(*status, body);
    let fallback = threads::fallback(*status, body, &message).filter(|_| !signal.is_aborted());
    let Some((fallback, reason)) = fallback else {
        return Err(failure);
    };
    diagnostics.push(
        json!({"type": "anthropic_thread_fallback", "timestamp": now_ms(),
        "error": {"message": message}, "details": {"reason": reason}}),
    );
    out.preset("diagnostics", Json::Array(diagnostics.clone()));
    match fallback {
        threads::Fallback::NewThread => {
            let created = threads::create(&thread.session, &built.params);
            let response =
                http::send(&with_body(&created.body), signal, describe_http_error).await?;
            Ok((response, Some(created)))
        }
        threads::Fallback::WithoutThread => {
            let response = http::send(&built.request, signal, describe_http_error).await?;
            threads::turn_off(&thread.session);
            Ok((response, None))
        }
    }
}

/// Sessions whose strict tools Claude rejected for exceeding its limits (pi-ai's
/// `strict-tool-limits`): their later requests send "prefer" tools non-strict at once.
mod strict_limits {
    use std::collections::{HashSet, VecDeque};
    use std::sync::Mutex;

    const MAX_SESSIONS: usize = 10_000;
    const LIMIT_MESSAGES: [&str; 3] = [
        "The compiled grammar is too large",
        "Too many strict tools (",
        "Schemas contains too many parameters with union types (",
    ];

    /// Insertion order (to drop the oldest beyond the cap) and membership.
    static SESSIONS: Mutex<(VecDeque<String>, Option<HashSet<String>>)> =
        Mutex::new((VecDeque::new(), None));

    pub fn exceeded(session: Option<&str>) -> bool {
        let Some(session) = session else {
            return false;
        };
        let sessions = crate::sync::lock(&SESSIONS);
        sessions.1.as_ref().is_some_and(|set| set.contains(session))
    }

    pub fn mark(session: Option<&str>) {
        let Some(session) = session else {
            return;
        };
        let mut sessions = crate::sync::lock(&SESSIONS);
        let (order, set) = &mut *sessions;
        if set
            .get_or_insert_with(HashSet::new)
            .insert(session.to_string())
        {
            order.push_back(session.to_string());
        }
        if order.len() > MAX_SESSIONS {
            if let (Some(oldest), Some(set)) = (order.pop_front(), set.as_mut()) {
                set.remove(&oldest);
            }
        }
    }

    /// A 400 `invalid_request_error` whose message names a strict-tool limit.
    pub fn is_limit_error(body: &str, message: &str) -> bool {
        let kind = crate::json::parse(body)
            .ok()
            .and_then(|b| b.get("error")?.get("type")?.as_str().map(str::to_string));
        kind.as_deref() == Some("invalid_request_error")
            && LIMIT_MESSAGES.iter().any(|m| message.contains(m))
    }
}

#[cfg(test)]
mod tests;

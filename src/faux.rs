//! The scripted ("faux") stream function: a model that answers from a JSON script, streaming
//! each response as delta-form events in lock step with the agent. It serves the demo, the
//! tests and hosts that want a deterministic model.
//!
//! A script is an array of responses, consumed one per request:
//! `{ "content": [Block...], "stopReason"?, "errorMessage"?, "usage"?, "delayMs"?,
//!    "waitForAbort"?, "stallAfter"?, "abortMessage"?, "throw"? }` where a Block is
//! `{"type":"text","text",("chunks"|"deltas")?,"signature"?}`,
//! `{"type":"thinking","thinking",...}` or
//! `{"type":"toolCall","id","name",("arguments"|"argsText")?,("chunks"|"deltas")?}`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::host::{AbortSignal, StreamFn, StreamRequest};
use crate::json::{json, now_ms, Json, JsonMap};
use crate::message::zero_usage;
use crate::stream::StreamSender;
use crate::sync::lock;

/// Parses and checks a script (a JSON array of responses).
pub fn parse_script(script: &Json) -> Result<Vec<Json>, String> {
    let responses = script
        .as_array()
        .ok_or("The script must be a JSON array of responses.")?;
    for (index, response) in responses.iter().enumerate() {
        expand(response, &json!({}), &json!(0))
            .map_err(|error| format!("Response {index} of the script is invalid: {error}"))?;
    }
    Ok(responses.clone())
}

/// A stream function answering request n with `responses[n]`; once they run out it answers
/// with an error message `Scripted model has no response left`.
pub fn scripted_stream_fn(responses: Vec<Json>) -> StreamFn {
    let next = Arc::new(AtomicUsize::new(0));
    let responses = Arc::new(responses);
    Arc::new(move |request: StreamRequest, sender: StreamSender| {
        let index = next.fetch_add(1, Ordering::SeqCst);
        respond(responses.get(index), request, sender);
    })
}

/// Answers one request with `response` (or the "no response left" error when `None`).
pub fn respond(response: Option<&Json>, request: StreamRequest, sender: StreamSender) {
    let Some(response) = response else {
        let mut message = base_partial(&request.model, zero_usage());
        message["stopReason"] = json!("error");
        message["errorMessage"] = json!("Scripted model has no response left");
        let _ = sender.push(json!({"type": "error", "reason": "error", "error": message}));
        return;
    };
    if let Some(error) = response.get("throw").and_then(Json::as_str) {
        let _ = sender.fail(error);
        return;
    }
    let events = match expand(response, &request.model, &now_ms()) {
        Ok(events) => events,
        Err(error) => {
            let _ = sender.fail(&format!("Invalid scripted response: {error}"));
            return;
        }
    };
    let wait_for_abort = response
        .get("waitForAbort")
        .and_then(Json::as_bool)
        .unwrap_or(false);
    let stall_after = if wait_for_abort {
        let all_but_terminal = events.len().saturating_sub(1);
        response
            .get("stallAfter")
            .and_then(Json::as_u64)
            .map_or(all_but_terminal, |n| n as usize)
    } else {
        usize::MAX
    };
    let producer = Arc::new(Producer {
        events,
        next: Mutex::new(0),
        stall_after,
        delay: response.get("delayMs").and_then(Json::as_u64).unwrap_or(0),
        abort_message: response
            .get("abortMessage")
            .and_then(Json::as_str)
            .unwrap_or("Request was aborted")
            .into(),
        signal: request.signal,
        sender,
    });
    let step = producer.clone();
    producer
        .sender
        .on_consumed(move || Producer::schedule(&step));
    Producer::schedule(&producer);
}

/// Delivers the events one at a time: each after the previous one was consumed.
struct Producer {
    events: Vec<Json>,
    next: Mutex<usize>,
    stall_after: usize,
    delay: u64,
    abort_message: String,
    signal: AbortSignal,
    sender: StreamSender,
}

impl Producer {
    fn schedule(this: &Arc<Self>) {
        if this.delay == 0 {
            this.step();
            return;
        }
        let this = this.clone();
        crate::runtime::spawn(async move {
            tokio::time::sleep(Duration::from_millis(this.delay)).await;
            this.step();
        });
    }

    fn step(self: &Arc<Self>) {
        let mut next = lock(&self.next);
        if *next >= self.events.len() || self.sender.is_closed() {
            return;
        }
        if self.signal.is_aborted() {
            *next = self.events.len();
            let _ = self.sender.push(self.aborted_event());
            return;
        }
        if *next >= self.stall_after {
            *next = self.events.len();
            let this = self.clone();
            self.signal.on_abort(move || {
                let _ = this.sender.push(this.aborted_event());
            });
            return;
        }
        let event = self.events[*next].clone();
        *next += 1;
        drop(next);
        let _ = self.sender.push(event);
    }

    fn aborted_event(&self) -> Json {
        json!({"type": "error", "reason": "aborted", "errorMessage": self.abort_message})
    }
}

fn base_partial(model: &Json, usage: Json) -> Json {
    json!({"role": "assistant", "content": [], "api": model.get("api").cloned().unwrap_or(Json::Null),
        "provider": model.get("provider").cloned().unwrap_or(Json::Null),
        "model": model.get("id").cloned().unwrap_or(Json::Null),
        "usage": usage, "stopReason": "pending", "timestamp": now_ms()})
}

/// Expands one response into delta-form stream events (conformance kit §4).
fn expand(response: &Json, model: &Json, timestamp: &Json) -> Result<Vec<Json>, String> {
    let response = response.as_object().ok_or("a response must be an object")?;
    let usage = response.get("usage").cloned().unwrap_or_else(zero_usage);
    let mut start = base_partial(model, usage.clone());
    start["timestamp"] = timestamp.clone();
    let mut events = vec![json!({"type": "start", "partial": start})];
    let blocks = match response.get("content") {
        None => Vec::new(),
        Some(Json::Array(blocks)) => blocks.clone(),
        Some(_) => return Err("content must be an array".into()),
    };
    let mut has_tool_call = false;
    for (index, block) in blocks.iter().enumerate() {
        let kind = block.get("type").and_then(Json::as_str).unwrap_or("");
        match kind {
            "text" | "thinking" => {
                let text = block
                    .get(kind)
                    .and_then(Json::as_str)
                    .ok_or(format!("a {kind} block needs a string \"{kind}\""))?;
                events.push(json!({"type": format!("{kind}_start"), "contentIndex": index}));
                for delta in deltas(block, text)? {
                    events.push(json!({"type": format!("{kind}_delta"), "contentIndex": index, "delta": delta}));
                }
                let mut end =
                    json!({"type": format!("{kind}_end"), "contentIndex": index, "content": text});
                if let Some(signature) = block.get("signature").and_then(Json::as_str) {
                    end["contentSignature"] = json!(signature);
                }
                events.push(end);
            }
            "toolCall" => {
                has_tool_call = true;
                let id = block
                    .get("id")
                    .and_then(Json::as_str)
                    .ok_or("a toolCall block needs a string \"id\"")?;
                let name = block
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or("a toolCall block needs a string \"name\"")?;
                let text = match (block.get("argsText"), block.get("arguments")) {
                    (Some(Json::String(text)), _) => text.clone(),
                    (_, Some(arguments)) => canonical_json(arguments),
                    _ => "{}".into(),
                };
                events.push(json!({"type": "toolcall_start", "contentIndex": index, "id": id, "toolName": name}));
                for delta in deltas(block, &text)? {
                    events.push(
                        json!({"type": "toolcall_delta", "contentIndex": index, "delta": delta}),
                    );
                }
                events.push(json!({"type": "toolcall_end", "contentIndex": index}));
            }
            _ => return Err(format!("unknown block type \"{kind}\"")),
        }
    }
    let default_reason = if has_tool_call { "toolUse" } else { "stop" };
    let reason = response
        .get("stopReason")
        .and_then(Json::as_str)
        .unwrap_or(default_reason);
    let kind = if matches!(reason, "error" | "aborted") {
        "error"
    } else {
        "done"
    };
    let mut end = json!({"type": kind, "reason": reason, "usage": usage});
    if let Some(message) = response.get("errorMessage") {
        end["errorMessage"] = message.clone();
    }
    events.push(end);
    Ok(events)
}

/// Splits a block's text into its deltas (`deltas` given, or `chunks` pieces by code point).
fn deltas(block: &Json, text: &str) -> Result<Vec<String>, String> {
    if let Some(given) = block.get("deltas") {
        let pieces: Vec<String> = given
            .as_array()
            .and_then(|items| items.iter().map(|d| d.as_str().map(String::from)).collect())
            .ok_or("deltas must be an array of strings")?;
        if pieces.concat() != text {
            return Err("deltas must join to exactly the block's text".into());
        }
        return Ok(pieces);
    }
    let chunks = block
        .get("chunks")
        .and_then(Json::as_u64)
        .unwrap_or(1)
        .max(1) as usize;
    let chars: Vec<char> = text.chars().collect();
    let count = chunks.min(chars.len());
    Ok((0..count)
        .map(|i| {
            chars[i * chars.len() / count..(i + 1) * chars.len() / count]
                .iter()
                .collect()
        })
        .collect())
}

/// Compact JSON with keys sorted by code point, at every depth.
pub fn canonical_json(value: &Json) -> String {
    crate::json::to_string(&sorted(value))
}

fn sorted(value: &Json) -> Json {
    match value {
        Json::Object(map) => {
            let mut entries: Vec<(&String, &Json)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let mut out = JsonMap::new();
            for (key, item) in entries {
                out.insert(key.clone(), sorted(item));
            }
            Json::Object(out)
        }
        Json::Array(items) => Json::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

//! The anthropic-messages response: pi-ai's loop over the server-sent events
//! (`iterateAnthropicEvents`, kit README §8.5) mapped onto the stream.

use super::super::output::js_string;
use std::collections::HashMap;
use std::sync::Arc;

use crate::json::{json, now_ms, str_field, to_string, Json, JsonMap};

use super::super::limits::truthy;
use super::super::output::{
    is_openrouter, openrouter_total, set_billed_total, BlockKind, Output, ToolCallLimits, Usage,
};
use super::super::sse::SseEvent;
use super::super::surrogates::SplitSurrogates;
use super::super::wire::{self, Members};
use super::super::Call;
use super::{request, threads, Stop};

/// JavaScript's property read `value.key`, failing like V8 on `undefined` and `null`.
fn prop<'a>(value: Option<&'a Json>, key: &str) -> Result<Option<&'a Json>, Stop> {
    match value {
        None => Err(Stop::Fail(format!(
            "Cannot read properties of undefined (reading '{key}')"
        ))),
        Some(Json::Null) => Err(Stop::Fail(format!(
            "Cannot read properties of null (reading '{key}')"
        ))),
        Some(value) => Ok(value.get(key)),
    }
}

/// A usage count read with `x || 0`.
fn count_or_zero(value: Option<&Json>) -> f64 {
    value
        .and_then(Json::as_f64)
        .filter(|n| *n != 0.0 && !n.is_nan())
        .unwrap_or(0.0)
}

/// A usage count read with `x != null` (numbers only).
fn count(value: Option<&Json>) -> Option<f64> {
    value.and_then(Json::as_f64)
}

/// The events of an `event:` name pi-ai processes.
const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

/// The exact text of the text and thinking deltas Anthropic's API sends (a plain text, no
/// escapes), before and after the block's index: read without a scan of the event's members.
const FIXED_DELTA_PREFIX: &str = r#"{"type":"content_block_delta","index":"#;
const FIXED_DELTAS: [(&str, &str); 2] = [
    ("text_delta", r#","delta":{"type":"text_delta","text":""#),
    (
        "thinking_delta",
        r#","delta":{"type":"thinking_delta","thinking":""#,
    ),
];

/// The state of one response: pi-ai's loop over `iterateAnthropicEvents`.
pub(super) struct Reader {
    /// Text deltas read through a borrowed view ([`Reader::view_block_delta`]); off only where a
    /// test compares the view with the general path.
    pub(super) views: bool,
    model: Arc<Json>,
    /// The model whose prices apply (a fallback model's, when it answered).
    usage_model: Arc<Json>,
    oauth: bool,
    tools: Vec<Json>,
    fallbacks: Vec<Json>,
    /// Content index of each open block, by the wire `index` (as JavaScript map keys compare).
    /// Looked up per delta: hashed with foldhash (seeded per map), a fraction of SipHash's cost.
    open: HashMap<String, usize, foldhash::fast::RandomState>,
    usage: Usage,
    saw_message_start: bool,
    saw_message_stop: bool,
    /// The message's stop reason once a `message_delta` set one.
    stop_reason: Option<String>,
    error_message: Option<String>,
    input_transformations: Option<Vec<Json>>,
    /// Diagnostics recorded before the response (the message's `diagnostics`).
    pub(super) diagnostics: Vec<Json>,
    /// The reply's blocks (and a tool call's argument text), kept only for a thread request:
    /// the next request continues after this reply.
    pub(super) reply: Option<Vec<(JsonMap, String)>>,
    response_id: Option<Json>,
    has_response_model: bool,
    /// Surrogate pairs split across two events are joined before parsing.
    surrogates: SplitSurrogates,
    limits: ToolCallLimits,
}

impl Reader {
    pub(super) fn new(call: &Call, oauth: bool, tools: Vec<Json>) -> Self {
        Reader {
            views: true,
            model: call.model.clone(),
            usage_model: call.model.clone(),
            oauth,
            tools,
            fallbacks: request::fallback_models(call).cloned().unwrap_or_default(),
            open: HashMap::default(),
            usage: Usage::default(),
            saw_message_start: false,
            saw_message_stop: false,
            stop_reason: None,
            error_message: None,
            input_transformations: None,
            diagnostics: Vec::new(),
            reply: None,
            response_id: None,
            has_response_model: false,
            surrogates: SplitSurrogates::default(),
            limits: ToolCallLimits::default(),
        }
    }

    /// One server-sent event.
    pub(super) fn handle(&mut self, sse: &SseEvent, out: &mut Output) -> Result<(), Stop> {
        let name = sse.event.as_deref().unwrap_or("");
        if name == "error" {
            return Err(Stop::Fail(sse.data.clone()));
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return Ok(());
        }
        let data = self.surrogates.rejoin(&sse.data);
        if self.views {
            if let Some(handled) = self.view_block_delta(&data, out) {
                return handled;
            }
        }
        let event = parse_event(name, sse, &data)?;
        match str_field(&event, "type") {
            Some("message_start") => {
                self.saw_message_start = true;
                self.message_start(&event, out)
            }
            Some("message_stop") => {
                self.saw_message_stop = true;
                Ok(())
            }
            Some("content_block_start") => self.block_start(&event, out),
            Some("content_block_delta") => self.block_delta(&event, out),
            Some("content_block_stop") => {
                if let Some(index) = self.open.remove(&wire_key(&event)) {
                    out.close(index)?;
                }
                Ok(())
            }
            Some("message_delta") => self.message_delta(&event, out),
            _ => Ok(()),
        }
    }

    fn message_start(&mut self, event: &Json, out: &mut Output) -> Result<(), Stop> {
        let message = prop(Some(event), "message")?;
        let id = prop(message, "id")?;
        self.response_id = id.cloned();
        if let Some(id) = id {
            out.set("responseId", id.clone())?;
        }
        if let Some(Json::Array(list)) = prop(message, "input_transformations")? {
            self.input_transformations = Some(list.clone());
        }
        let response_model = prop(message, "model")?;
        self.usage_model = self.model.clone();
        if response_model != self.model.get("id") {
            if let Some(response_model) = response_model {
                self.has_response_model = true;
                out.set("responseModel", response_model.clone())?;
                // A fallback model that answered is billed at its own prices.
                let fallback_cost = self.fallbacks.iter().find_map(|f| {
                    (f.get("provider") == self.model.get("provider")
                        && f.get("model") == Some(response_model))
                    .then(|| f.get("cost"))
                    .flatten()
                    .filter(|c| truthy(c))
                });
                if let Some(cost) = fallback_cost {
                    let usage_model = Arc::make_mut(&mut self.usage_model);
                    usage_model["id"] = response_model.clone();
                    usage_model["cost"] = cost.clone();
                }
            }
        }
        let usage = prop(message, "usage")?;
        self.usage.input = count_or_zero(prop(usage, "input_tokens")?);
        self.usage.output = count_or_zero(prop(usage, "output_tokens")?);
        self.usage.cache_read = count_or_zero(prop(usage, "cache_read_input_tokens")?);
        self.usage.cache_write = count_or_zero(prop(usage, "cache_creation_input_tokens")?);
        let creation = prop(usage, "cache_creation")?.filter(|c| !c.is_null());
        self.usage.cache_write_1h = Some(count_or_zero(
            creation.and_then(|c| c.get("ephemeral_1h_input_tokens")),
        ));
        self.set_usage(out, None)
    }

    /// `totalTokens` from the parts, the cost at the usage model's prices, and OpenRouter's
    /// billed total when the event reported one.
    fn set_usage(&mut self, out: &mut Output, reported: Option<&Json>) -> Result<(), Stop> {
        let u = &mut self.usage;
        u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
        let mut usage = u.to_json(&self.usage_model);
        if let Some(reported) = reported {
            if let Some(total) = openrouter_total(reported) {
                set_billed_total(&mut usage, total);
            }
        }
        out.set("usage", usage)?;
        Ok(())
    }

    fn block_start(&mut self, event: &Json, out: &mut Output) -> Result<(), Stop> {
        let block = prop(Some(event), "content_block")?;
        let kind = prop(block, "type")?;
        let field = |key: &str| block.and_then(|b| b.get(key)).filter(|v| !v.is_null());
        let mut map = JsonMap::new();
        let kind = match kind.and_then(Json::as_str) {
            Some("fallback") => {
                if out.block_count() > 0 {
                    return Err(Stop::Fail(
                        "Anthropic performed an unsupported mid-output model fallback".into(),
                    ));
                }
                return Ok(());
            }
            Some("text") => {
                map.insert("type".into(), "text".into());
                map.insert("text".into(), field("text").cloned().unwrap_or("".into()));
                BlockKind::Text
            }
            Some("thinking") => {
                map.insert("type".into(), "thinking".into());
                let thinking = field("thinking").cloned().unwrap_or("".into());
                map.insert("thinking".into(), thinking);
                let signature = field("signature").cloned().unwrap_or("".into());
                map.insert("thinkingSignature".into(), signature);
                BlockKind::Thinking
            }
            Some("redacted_thinking") => {
                map.insert("type".into(), "thinking".into());
                map.insert("thinking".into(), "[Reasoning redacted]".into());
                if let Some(data) = block.and_then(|b| b.get("data")) {
                    map.insert("thinkingSignature".into(), data.clone());
                }
                map.insert("redacted".into(), Json::Bool(true));
                BlockKind::Thinking
            }
            Some("tool_use") => {
                self.limits.open().map_err(Stop::Fail)?;
                map.insert("type".into(), "toolCall".into());
                if let Some(id) = block.and_then(|b| b.get("id")) {
                    map.insert("id".into(), id.clone());
                }
                if let Some(name) = block.and_then(|b| b.get("name")) {
                    let name = match (self.oauth, name.as_str()) {
                        (true, Some(name)) => {
                            request::from_claude_code_name(name, &self.tools).into()
                        }
                        _ => name.clone(),
                    };
                    map.insert("name".into(), name);
                }
                let input = field("input").cloned().unwrap_or_else(|| json!({}));
                map.insert("arguments".into(), input);
                BlockKind::ToolCall
            }
            // Server tools and anything newer: nothing to show.
            _ => return Ok(()),
        };
        if let Some(reply) = &mut self.reply {
            reply.push((map.clone(), String::new()));
        }
        let index = out.open(kind, map)?;
        self.open.insert(wire_key(event), index);
        Ok(())
    }

    fn block_delta(&mut self, event: &Json, out: &mut Output) -> Result<(), Stop> {
        let open = self.open.get(&wire_key(event)).copied();
        let delta = prop(Some(event), "delta")?;
        let kind = prop(delta, "type")?.and_then(Json::as_str);
        let Some((i, key, member)) = delta_target(open, kind, out) else {
            return Ok(());
        };
        let text = js_string(delta.and_then(|d| d.get(member)));
        self.append_delta(i, key, &text, out)
    }

    /// A `content_block_delta` read through a borrowed view ([`wire`]) when its `type`, its
    /// `index` (a plain integer), its `delta`'s `type` and, for an open block of the delta's
    /// kind, the member holding the text are all of the usual types; `None` (nothing done) for
    /// any other event.
    fn view_block_delta(&mut self, data: &str, out: &mut Output) -> Option<Result<(), Stop>> {
        for (kind, middle) in FIXED_DELTAS {
            if let Some((index, text)) = wire::fixed_form(data, FIXED_DELTA_PREFIX, middle, "}}") {
                let open = self.open.get(index).copied();
                return Some(match delta_target(open, Some(kind), out) {
                    Some((i, key, _)) => self.append_delta(i, key, text, out),
                    None => Ok(()),
                });
            }
        }
        let event = Members::parse(data)?;
        if wire::string(event.get("type")?)? != "content_block_delta" {
            return None;
        }
        let index = wire::plain_index(event.get("index")?)?;
        let delta = Members::of(event.get("delta")?)?;
        let kind = wire::string(delta.get("type")?)?;
        let open = self.open.get(index).copied();
        let Some((i, key, member)) = delta_target(open, Some(&kind), out) else {
            return Some(Ok(()));
        };
        let text = wire::string(delta.get(member)?)?;
        Some(self.append_delta(i, key, &text, out))
    }

    /// Appends a delta's text to field `key` of block `i` (the thread reply's copy too).
    fn append_delta(
        &mut self,
        i: usize,
        key: &'static str,
        text: &str,
        out: &mut Output,
    ) -> Result<(), Stop> {
        if key == "arguments" {
            self.limits.arguments(i, text).map_err(Stop::Fail)?;
        }
        if let Some((block, arguments)) = self.reply.as_mut().and_then(|r| r.get_mut(i)) {
            match (key, block.get_mut(key)) {
                ("arguments", _) => arguments.push_str(text),
                (_, Some(Json::String(value))) => value.push_str(text),
                _ => {
                    block.insert(key.into(), text.into());
                }
            }
        }
        if key == "thinkingSignature" {
            out.append_block_field(i, key, text)?;
        } else {
            out.delta(i, text)?;
        }
        Ok(())
    }

    fn message_delta(&mut self, event: &Json, out: &mut Output) -> Result<(), Stop> {
        if let Some(Json::Array(list)) = event.get("input_transformations") {
            self.input_transformations = Some(list.clone());
        }
        let delta = prop(Some(event), "delta")?;
        if let Some(reason) = prop(delta, "stop_reason")?.filter(|r| truthy(r)) {
            out.set("rawStopReason", reason.clone())?;
            let details = delta.and_then(|d| d.get("stop_details"));
            let (stop, error): (&str, Option<String>) = match reason.as_str().unwrap_or("") {
                "end_turn" | "pause_turn" | "stop_sequence" => ("stop", None),
                "max_tokens" => ("length", None),
                "tool_use" => ("toolUse", None),
                "refusal" => {
                    let explanation = details
                        .filter(|d| !d.is_null())
                        .and_then(|d| d.get("explanation"))
                        .filter(|e| truthy(e));
                    let text = match explanation {
                        Some(e) => js_string(Some(e)),
                        None => "The model refused to complete the request".into(),
                    };
                    ("error", Some(text))
                }
                "sensitive" => ("error", Some("Provider stopped with: sensitive".into())),
                _ => {
                    return Err(Stop::Fail(format!(
                        "Unhandled stop reason: {}",
                        js_string(Some(reason))
                    )))
                }
            };
            self.stop_reason = Some(stop.to_string());
            out.set("stopReason", stop.into())?;
            if let Some(error) = error {
                out.set("errorMessage", error.as_str().into())?;
                self.error_message = Some(error);
            }
        }
        let usage = event.get("usage").filter(|u| truthy(u));
        if let Some(usage) = usage {
            let u = &mut self.usage;
            let read = |key: &str| count(usage.get(key));
            if let Some(n) = read("input_tokens") {
                u.input = n;
            }
            if let Some(n) = read("output_tokens") {
                u.output = n;
            }
            if let Some(n) = read("cache_read_input_tokens") {
                u.cache_read = n;
            }
            if let Some(n) = read("cache_creation_input_tokens") {
                u.cache_write = n;
            }
            let nested = |outer: &str, inner: &str| {
                count(
                    usage
                        .get(outer)
                        .filter(|v| !v.is_null())
                        .and_then(|v| v.get(inner)),
                )
            };
            if let Some(n) = nested("cache_creation", "ephemeral_1h_input_tokens") {
                u.cache_write_1h = Some(n);
            }
            if let Some(n) = nested("output_tokens_details", "thinking_tokens") {
                u.reasoning = Some(n);
            }
        }
        self.set_usage(out, usage.filter(|_| is_openrouter(&self.model)))
    }

    /// `recordThreadReply` after a clean reply to a thread request.
    pub(super) fn record_thread_reply(
        &mut self,
        call: &Call,
        built: &request::Built,
        thread: &threads::ThreadRequest,
        reason: &str,
    ) {
        let Some(id) = self.response_id.as_ref().and_then(Json::as_str) else {
            return;
        };
        // A fallback model's reply is not stored by the server.
        if self.has_response_model {
            return;
        }
        let content: Vec<Json> = self
            .reply
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|(mut block, arguments)| {
                // The arguments as `toolcall_end` finalised them (`{}` without any text).
                if block.get("type").and_then(Json::as_str) == Some("toolCall") {
                    let parsed = crate::args::parse_tool_call_arguments(&arguments);
                    block.insert("arguments".into(), parsed.arguments);
                }
                Json::Object(block)
            })
            .collect();
        let reply = json!({"role": "assistant", "content": content, "stopReason": reason,
            "api": call.model.get("api").cloned().unwrap_or(Json::Null),
            "provider": call.model.get("provider").cloned().unwrap_or(Json::Null),
            "model": call.model.get("id").cloned().unwrap_or(Json::Null)});
        let reply = request::reply_messages(&reply, built.oauth, built.allow_empty_signature);
        threads::record(
            &call.model,
            &thread.session,
            &built.params,
            &built.betas,
            id,
            reply,
        );
    }

    /// After the body: pi-ai's checks, in its order; `Ok` is the `done` reason.
    pub(super) fn end(&mut self, aborted: bool, out: &mut Output) -> Result<String, Stop> {
        if self.saw_message_start && !self.saw_message_stop {
            return Err(Stop::Fail(
                "Anthropic stream ended before message_stop".into(),
            ));
        }
        if aborted {
            return Err(Stop::Fail("Request was aborted".into()));
        }
        let Some(reason) = self.stop_reason.clone() else {
            return Err(Stop::Fail(
                "Anthropic stream ended without a stop reason".into(),
            ));
        };
        if reason == "error" || reason == "aborted" {
            let message = self
                .error_message
                .clone()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "An unknown error occurred".into());
            return Err(Stop::Fail(message));
        }
        if let Some(list) = self.input_transformations.take().filter(|l| !l.is_empty()) {
            let transformations: Vec<Json> = list
                .iter()
                .map(|t| {
                    let mut entry = JsonMap::new();
                    for key in ["type", "path", "reason"] {
                        if let Some(value) = t.get(key).filter(|v| !v.is_null()) {
                            entry.insert(key.into(), value.clone());
                        }
                    }
                    Json::Object(entry)
                })
                .collect();
            let diagnostic = json!({"type": "anthropic_input_transformations",
                "timestamp": now_ms(), "details": {"transformations": transformations}});
            self.diagnostics.push(diagnostic);
            out.set("diagnostics", Json::Array(self.diagnostics.clone()))?;
        }
        Ok(reason)
    }
}

/// Where a delta of `kind` goes when the block open at its index is `open`: the block, the block
/// field it extends and the delta's member holding the text; `None` when pi-ai ignores it.
fn delta_target(
    open: Option<usize>,
    kind: Option<&str>,
    out: &Output,
) -> Option<(usize, &'static str, &'static str)> {
    let i = open?;
    match (kind?, out.kind(i)?) {
        ("text_delta", BlockKind::Text) => Some((i, "text", "text")),
        ("thinking_delta", BlockKind::Thinking) => Some((i, "thinking", "thinking")),
        ("input_json_delta", BlockKind::ToolCall) => Some((i, "arguments", "partial_json")),
        ("signature_delta", BlockKind::Thinking) => Some((i, "thinkingSignature", "signature")),
        _ => None,
    }
}

/// The wire `index` as a map key (`undefined` when absent).
fn wire_key(event: &Json) -> String {
    event
        .get("index")
        .map_or_else(|| "undefined".into(), to_string)
}

/// The event's JSON (`parseJsonWithRepair`), or pi-ai's parse-failure text. The message of a
/// failed parse is serde's, not V8's (kit README §9); the raw lines are rebuilt from the event.
/// `data` is the event's data with split surrogate pairs joined; the failure text quotes the
/// event as received.
fn parse_event(name: &str, sse: &SseEvent, data: &str) -> Result<Json, Stop> {
    let parsed = crate::json::parse(data).or_else(|error| {
        let repaired = crate::args::repair_json(data);
        if repaired != data {
            crate::json::parse(&repaired)
        } else {
            Err(error)
        }
    });
    let failure = |message: String| {
        // V8's text for input that ends where a value is due (stable across Node versions).
        let message = if message.starts_with("EOF while parsing a value") {
            "Unexpected end of JSON input".to_string()
        } else {
            message
        };
        let mut raw = vec![format!("event: {name}")];
        if !sse.data.is_empty() {
            raw.extend(sse.data.split('\n').map(|line| format!("data: {line}")));
        }
        Stop::Fail(format!(
            "Could not parse Anthropic SSE event {name}: {message}; data={}; raw={}",
            sse.data,
            raw.join("\\n")
        ))
    };
    match parsed {
        Ok(Json::Null) => Err(failure(
            "Cannot read properties of null (reading 'type')".into(),
        )),
        Ok(event) => Ok(event),
        Err(message) => Err(failure(message)),
    }
}

/// This API's reader fed `body` ([`crate::providers::fuzzing::read`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(in crate::providers) fn read_body(body: &[u8], piece: usize, views: bool) -> Vec<Json> {
    let call = super::super::fuzzing::call("anthropic-messages", "anthropic");
    read_body_with(&call, body, piece, views)
}

/// [`read_body`] for `call`'s model.
#[cfg(any(test, feature = "fuzzing"))]
pub(super) fn read_body_with(call: &Call, body: &[u8], piece: usize, views: bool) -> Vec<Json> {
    use std::ops::ControlFlow::{Break, Continue};
    let (sender, receiver) = crate::stream::channel(&call.model);
    let mut out = Output::new(sender, &call.model);
    out.start().unwrap();
    let mut reader = Reader::new(call, false, Vec::new());
    reader.views = views;
    let failure = super::super::fuzzing::each_sse_event(
        super::super::sse::SseParser::split_crlf_across_reads(),
        body,
        piece,
        |event| match reader.handle(&event, &mut out) {
            Ok(()) => Continue(()),
            Err(Stop::Fail(text)) => Break(Some(text)),
            Err(Stop::Closed) => unreachable!("the receiver is read after the body"),
        },
    );
    let _ = match failure.map_or_else(|| reader.end(false, &mut out), |text| Err(Stop::Fail(text)))
    {
        Ok(reason) => out.done(&reason),
        Err(Stop::Fail(text)) => out.fail(false, &text),
        Err(Stop::Closed) => unreachable!("the receiver is read after the body"),
    };
    super::super::output::received(receiver)
}

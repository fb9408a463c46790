//! The openai-completions response: HTTP error texts (kit README §8.6) and the mapping of the
//! server-sent chunks onto the stream (§8.3).

use super::super::output::Stop;
use std::borrow::Cow;
use std::collections::HashMap;

use super::super::http::{self, Chunk, Failure, HttpRequest};
use super::super::limits::truthy;
use super::super::output::{BlockKind, Output, Pushed, ToolCallLimits, Usage};
use super::super::sse::{SseEvent, SseParser};
use super::super::surrogates::SplitSurrogates;
use super::super::wire::{self, Members};
use super::super::Call;
use super::{is_reasoning_detail, Compat, REASONING_FIELDS};
use crate::json::{to_string, Json, JsonMap};
use crate::stream::StreamClosed;

/// The SDK's text for an SSE event whose data is not JSON.
const MALFORMED: &str = "Error reading response: malformed server-sent event JSON.";

/// `E.message` style text of an HTTP error (README §8.6).
pub(crate) fn describe_status(status: u16, body: &str) -> String {
    if body.is_empty() {
        return format!("{status} status code (no body)");
    }
    let Ok(json) = crate::json::parse(body) else {
        return format!("{status} {body}");
    };
    let error = match json.get("error") {
        Some(e) if !e.is_null() => e.clone(),
        _ => json.clone(),
    };
    let text = to_string(&error);
    match &error {
        Json::Object(map) if !map.is_empty() => {
            let units: Vec<u16> = text.encode_utf16().collect();
            if units.len() > 4000 {
                let cut = String::from_utf16_lossy(&units[..4000]);
                format!(
                    "{status}: {cut}... [truncated {} chars]",
                    units.len() - 4000
                )
            } else {
                format!("{status}: {text}")
            }
        }
        _ => format!("{status} {text}"),
    }
}

/// The OpenAI SDK's `APIError` message: `<status> <error.message>` (or the error object as JSON,
/// or the non-JSON body), `<status> status code (no body)` without any of them.
fn sdk_message(status: u16, body: &str) -> String {
    let message = match crate::json::parse(body) {
        Ok(json) => match json.get("error") {
            Some(error) if truthy(error) => match error.get("message").filter(|m| truthy(m)) {
                Some(Json::String(text)) => Some(text.clone()),
                Some(other) => Some(to_string(other)),
                None => Some(to_string(error)),
            },
            _ => None,
        },
        Err(_) => Some(body.to_string()).filter(|b| !b.is_empty()),
    };
    match message {
        Some(message) => format!("{status} {message}"),
        None => format!("{status} status code (no body)"),
    }
}

/// What a streamed tool call's block keeps of its wire keys.
struct ToolCallState {
    /// The first `index` the block saw (pi-ai assigns it once).
    stream_index: Option<i64>,
    id: String,
    name: String,
}

/// The members of a chunk of the usual shape, read through a borrowed view ([`wire`]): an
/// object whose `id` and `model` are strings or absent, without `error` or `usage`, whose first
/// choice has no `usage` or `finish_reason` and whose `delta` holds no reasoning and no tool
/// calls, only (at most) a string `content`. What the general path does with such a chunk is
/// exactly: keep the id and the model, append the content.
pub(super) struct TextChunk<'a> {
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    content: Option<Cow<'a, str>>,
}

impl<'a> TextChunk<'a> {
    pub(super) fn read(data: &'a str) -> Option<Self> {
        let chunk = Members::parse(data)?;
        let string_or_absent = |key| match chunk.get(key) {
            None => Some(None),
            Some(value) => wire::string(value).map(Some),
        };
        let id = string_or_absent("id")?;
        let model = string_or_absent("model")?;
        if !chunk.absent_or_null("error") || !chunk.absent_or_null("usage") {
            return None;
        }
        let mut content = None;
        if let Some(choices) = chunk.get("choices") {
            if let Some(choice) = Members::of_first(choices)? {
                if !choice.absent_or_null("usage") || !choice.absent_or_null("finish_reason") {
                    return None;
                }
                if let Some(delta) = choice.get("delta").filter(|d| !wire::is_null(*d)) {
                    let delta = Members::of(delta)?;
                    let quiet = REASONING_FIELDS
                        .iter()
                        .chain(&["reasoning_details", "tool_calls"])
                        .all(|key| delta.absent_or_null(key));
                    if !quiet {
                        return None;
                    }
                    if let Some(text) = delta.get("content").filter(|t| !wire::is_null(*t)) {
                        content = Some(wire::string(text)?);
                    }
                }
            }
        }
        Some(TextChunk { id, model, content })
    }
}

/// Per-request stream state.
pub(super) struct Reader {
    pub(super) out: Output,
    /// Chunks of the usual shape read through a borrowed view ([`TextChunk`]); off only where a
    /// test compares the view with the general path.
    pub(super) views: bool,
    text: Option<usize>,
    thinking: Option<usize>,
    /// Tool-call block by stream index and by id (pi-ai's keys), and each block's state.
    by_index: HashMap<i64, usize>,
    by_id: HashMap<String, usize>,
    tool_calls: HashMap<usize, ToolCallState>,
    limits: ToolCallLimits,
    details: Option<Vec<Json>>,
    /// Surrogate pairs split across two events are joined before parsing.
    surrogates: SplitSurrogates,
    response_id: bool,
    response_model: bool,
    /// `model.id` of the call, once a chunk named a model.
    asked_model: Option<Option<String>>,
    stop_reason: String,
    error_message: Option<String>,
    finished: bool,
}

pub(super) async fn run(call: Call, compat: Compat, request: HttpRequest, out: Output) -> Pushed {
    if call.signal.is_aborted() {
        return out.fail(true, "Request aborted");
    }
    let mut response = match http::send(&request, &call.signal, sdk_message).await {
        Ok(response) => response,
        Err(Failure::Aborted) => return out.fail(true, "Request aborted"),
        Err(Failure::Status { status, body }) => {
            return out.fail(call.signal.is_aborted(), &describe_status(status, &body))
        }
        Err(Failure::Message(text)) => return out.fail(call.signal.is_aborted(), &text),
    };
    let mut reader = Reader::new(out);
    reader.out.start()?;
    let mut parser = SseParser::new();
    let failure = 'read: loop {
        let (events, end) = match response.next_chunk(&call.signal).await {
            Chunk::Data(bytes) => (parser.feed(&bytes), false),
            Chunk::End => (parser.finish().into_iter().collect(), true),
            Chunk::Aborted => break None,
            Chunk::Failed(text) => break Some(text),
        };
        for event in events {
            match reader.event(&call, event)? {
                Step::Continue => reader.out.keep_pace().await,
                Step::Done => break 'read None,
                Step::Fail(text) => break 'read Some(text),
            }
        }
        if end {
            break None;
        }
    };
    // The connection is dropped before anything else is reported.
    drop(response);
    let aborted = call.signal.is_aborted();
    if let Some(text) = failure {
        reader.finish_thinking_details()?;
        return reader.out.fail(aborted, &text);
    }
    reader.finish_thinking_details()?;
    reader.out.close_all()?;
    if aborted {
        return reader.out.fail(true, "Request was aborted");
    }
    let has_tool_call =
        (0..reader.out.block_count()).any(|i| reader.out.kind(i) == Some(BlockKind::ToolCall));
    if !reader.finished && !compat.supports_finish_reason {
        reader.stop_reason = if has_tool_call {
            "toolUse".into()
        } else {
            "stop".into()
        };
        reader
            .out
            .set("stopReason", reader.stop_reason.clone().into())?;
    }
    if reader.stop_reason == "error" {
        let text = reader
            .error_message
            .clone()
            .unwrap_or_else(|| "Provider returned an error stop reason".into());
        return reader.out.fail(false, &text);
    }
    if (compat.supports_finish_reason && !reader.finished) || reader.stop_reason == "pending" {
        return reader.out.fail(false, "Stream ended without finish_reason");
    }
    let reason = reader.stop_reason.clone();
    reader.out.done(&reason)
}

pub(super) enum Step {
    Continue,
    /// `data: [DONE]`: stop reading.
    Done,
    Fail(String),
}

impl Reader {
    pub(super) fn new(out: Output) -> Self {
        Reader {
            out,
            views: true,
            text: None,
            thinking: None,
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            tool_calls: HashMap::new(),
            limits: ToolCallLimits::default(),
            details: None,
            surrogates: SplitSurrogates::default(),
            response_id: false,
            response_model: false,
            asked_model: None,
            stop_reason: "pending".into(),
            error_message: None,
            finished: false,
        }
    }

    /// One server-sent event.
    pub(super) fn event(&mut self, call: &Call, event: SseEvent) -> Result<Step, StreamClosed> {
        if event.data.starts_with("[DONE]") {
            return Ok(Step::Done);
        }
        let data = self.surrogates.rejoin(&event.data);
        if self.views && event.event.as_deref() != Some("error") && self.text_chunk(call, &data)? {
            return Ok(Step::Continue);
        }
        let Ok(chunk) = crate::json::parse(&data) else {
            return Ok(Step::Fail(MALFORMED.into()));
        };
        if event.event.as_deref() == Some("error") {
            return Ok(Step::Fail(stream_error_text(
                chunk.get("error").unwrap_or(&chunk),
            )));
        }
        if let Some(error) = chunk.get("error").filter(|e| truthy(e)) {
            return Ok(Step::Fail(stream_error_text(error)));
        }
        match self.chunk(call, &chunk) {
            Ok(()) => Ok(Step::Continue),
            Err(Stop::Fail(text)) => Ok(Step::Fail(text)),
            Err(Stop::Closed(closed)) => Err(closed),
        }
    }

    fn chunk(&mut self, call: &Call, chunk: &Json) -> Result<(), Stop> {
        if !chunk.is_object() {
            return Ok(());
        }
        if let Some(id) = chunk.get("id") {
            self.note_id(|| id.clone())?;
        }
        if let Some(model) = chunk.get("model").and_then(Json::as_str) {
            self.note_model(call, model)?;
        }
        if let Some(usage) = chunk.get("usage").filter(|u| truthy(u)) {
            self.out.set_usage(&parse_usage(usage), usage)?;
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Json::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if !chunk.get("usage").is_some_and(truthy) {
            if let Some(usage) = choice.get("usage").filter(|u| truthy(u)) {
                self.out.set_usage(&parse_usage(usage), usage)?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").filter(|r| truthy(r)) {
            self.out.set("rawStopReason", reason.clone())?;
            let reason_text = match reason {
                Json::String(s) => s.clone(),
                other => to_string(other),
            };
            let (stop, error) = match reason_text.as_str() {
                "stop" | "end" => ("stop", None),
                "length" => ("length", None),
                "function_call" | "tool_calls" => ("toolUse", None),
                other => ("error", Some(format!("Provider finish_reason: {other}"))),
            };
            self.stop_reason = stop.into();
            self.out.set("stopReason", stop.into())?;
            if let Some(error) = error {
                self.error_message = Some(error.clone());
                self.out.set("errorMessage", error.into())?;
            }
            self.finished = true;
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return Ok(());
        };
        let reasoning = REASONING_FIELDS.iter().find(|f| {
            delta
                .get(**f)
                .and_then(Json::as_str)
                .is_some_and(|s| !s.is_empty())
        });
        if let Some(field) = reasoning {
            let text = delta.get(*field).and_then(Json::as_str).unwrap_or("");
            let signature = if call.model_str("provider") == "opencode-go" && *field == "reasoning"
            {
                "reasoning_content"
            } else {
                field
            };
            let index = self.thinking_block(signature)?;
            self.out.delta(index, text)?;
        }
        if let Some(details) = delta.get("reasoning_details").and_then(Json::as_array) {
            for detail in details.iter().filter(|d| is_reasoning_detail(d)) {
                self.thinking_block("")?;
                append_detail(self.details.get_or_insert_with(Vec::new), detail);
            }
        }
        if let Some(text) = delta.get("content").and_then(Json::as_str) {
            self.text_delta(text)?;
        }
        for call_delta in delta
            .get("tool_calls")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            self.tool_call_delta(call_delta)?;
        }
        Ok(())
    }

    /// `responseId ||= chunk.id`: replaced while it is falsy (an empty id included).
    fn note_id(&mut self, id: impl FnOnce() -> Json) -> Result<(), StreamClosed> {
        if !self.response_id {
            let id = id();
            self.response_id = truthy(&id);
            self.out.set("responseId", id)?;
        }
        Ok(())
    }

    /// The chunk's `model`, kept once when it differs from the model asked for.
    fn note_model(&mut self, call: &Call, model: &str) -> Result<(), StreamClosed> {
        if self.response_model || model.is_empty() {
            return Ok(());
        }
        // The id asked for, looked up once (most chunks repeat the model).
        let asked = self
            .asked_model
            .get_or_insert_with(|| call.model.get("id").and_then(Json::as_str).map(Into::into));
        if Some(model) != asked.as_deref() {
            self.response_model = true;
            self.out.set("responseModel", model.into())?;
        }
        Ok(())
    }

    /// A `content` delta: appended to the text block, opened by the first non-empty one.
    fn text_delta(&mut self, text: &str) -> Result<(), StreamClosed> {
        if text.is_empty() {
            return Ok(());
        }
        let index = match self.text {
            Some(index) => index,
            None => {
                let mut block = JsonMap::new();
                block.insert("type".into(), "text".into());
                block.insert("text".into(), "".into());
                let index = self.out.open(BlockKind::Text, block)?;
                self.text = Some(index);
                index
            }
        };
        self.out.delta(index, text)
    }

    /// A chunk of the usual shape ([`TextChunk`]) handled without parsing it into a tree;
    /// `false` when it has another shape (nothing done then).
    fn text_chunk(&mut self, call: &Call, data: &str) -> Result<bool, StreamClosed> {
        let Some(chunk) = TextChunk::read(data) else {
            return Ok(false);
        };
        if let Some(id) = chunk.id {
            self.note_id(|| Json::String(id.into_owned()))?;
        }
        if let Some(model) = chunk.model {
            self.note_model(call, &model)?;
        }
        if let Some(text) = chunk.content {
            self.text_delta(&text)?;
        }
        Ok(true)
    }

    fn thinking_block(&mut self, signature: &str) -> Result<usize, crate::stream::StreamClosed> {
        if let Some(index) = self.thinking {
            return Ok(index);
        }
        let mut block = JsonMap::new();
        block.insert("type".into(), "thinking".into());
        block.insert("thinking".into(), "".into());
        block.insert("thinkingSignature".into(), signature.into());
        let index = self.out.open(BlockKind::Thinking, block)?;
        self.thinking = Some(index);
        Ok(index)
    }

    /// One `tool_calls` entry. As in pi-ai, an entry belongs to the block of its `index`, else
    /// to the block of its `id`, else opens a block; a block takes the first index and the first
    /// id it sees and keeps them (so a second call reusing an id at a new index lands in the
    /// first call's block, and its later index-only entries open a block of their own).
    fn tool_call_delta(&mut self, delta: &Json) -> Result<(), Stop> {
        let stream_index = delta.get("index").and_then(Json::as_i64);
        let id = delta
            .get("id")
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty());
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Json::as_str);
        let found = stream_index
            .and_then(|i| self.by_index.get(&i))
            .or_else(|| id.and_then(|id| self.by_id.get(id)))
            .copied();
        let index = match found {
            Some(index) => index,
            None => {
                self.limits.open().map_err(Stop::Fail)?;
                let mut block = JsonMap::new();
                block.insert("type".into(), "toolCall".into());
                block.insert("id".into(), id.unwrap_or("").into());
                block.insert("name".into(), name.unwrap_or("").into());
                block.insert("arguments".into(), Json::Object(JsonMap::new()));
                let index = self.out.open(BlockKind::ToolCall, block)?;
                let state = ToolCallState {
                    stream_index: None,
                    id: id.unwrap_or("").into(),
                    name: name.unwrap_or("").into(),
                };
                self.tool_calls.insert(index, state);
                if let Some(id) = id {
                    self.by_id.insert(id.to_string(), index);
                }
                index
            }
        };
        let Some(state) = self.tool_calls.get_mut(&index) else {
            return Ok(());
        };
        if let (Some(i), None) = (stream_index, state.stream_index) {
            state.stream_index = Some(i);
            self.by_index.insert(i, index);
        }
        if let Some(id) = id.filter(|_| state.id.is_empty()) {
            state.id = id.into();
            self.by_id.insert(id.to_string(), index);
            self.out.set_block_field(index, "id", id.into())?;
        }
        if let Some(name) = name.filter(|n| !n.is_empty() && state.name.is_empty()) {
            state.name = name.into();
            self.out.set_block_field(index, "name", name.into())?;
        }
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Json::as_str)
            .unwrap_or("");
        self.limits
            .arguments(index, arguments)
            .map_err(Stop::Fail)?;
        Ok(self.out.delta(index, arguments)?)
    }

    /// OpenRouter's accumulated `reasoning_details` become the thinking block's signature.
    fn finish_thinking_details(&mut self) -> Pushed {
        if let (Some(index), Some(details)) = (self.thinking, self.details.take()) {
            let signature = to_string(&Json::Array(details));
            self.out
                .set_block_field(index, "thinkingSignature", signature.into())?;
        }
        Ok(())
    }
}

/// Consecutive `reasoning.text` (or `reasoning.summary`) details merge into one entry, which
/// takes the first signature and the common fields it lacks.
fn append_detail(details: &mut Vec<Json>, detail: &Json) {
    let kind = detail.get("type").and_then(Json::as_str).unwrap_or("");
    let field = match kind {
        "reasoning.text" => "text",
        "reasoning.summary" => "summary",
        _ => {
            details.push(detail.clone());
            return;
        }
    };
    let Some(Json::Object(last)) = details
        .last_mut()
        .filter(|l| l.get("type") == detail.get("type"))
    else {
        details.push(detail.clone());
        return;
    };
    let addition = detail.get(field).and_then(Json::as_str).unwrap_or("");
    if let Some(Json::String(text)) = last.get_mut(field) {
        text.push_str(addition);
    }
    let absent = |v: Option<&Json>| v.is_none_or(Json::is_null);
    if field == "text" && !last.get("signature").is_some_and(truthy) {
        if let Some(signature) = detail.get("signature") {
            last.insert("signature".into(), signature.clone());
        }
    }
    for key in ["id", "format", "index"] {
        let missing = if key == "format" {
            !last.get(key).is_some_and(truthy)
        } else {
            absent(last.get(key))
        };
        if missing {
            if let Some(value) = detail.get(key) {
                last.insert(key.into(), value.clone());
            }
        }
    }
}

/// `E.message` of an error chunk, plus `metadata.raw` when present.
fn stream_error_text(error: &Json) -> String {
    let mut text = match error.get("message").and_then(Json::as_str) {
        Some(message) => message.to_string(),
        None => to_string(error),
    };
    if let Some(raw) = error
        .get("metadata")
        .and_then(|m| m.get("raw"))
        .filter(|r| truthy(r))
    {
        let raw = match raw {
            Json::String(s) => s.clone(),
            other => to_string(other),
        };
        if !text.contains(&raw) {
            text.push('\n');
            text.push_str(&raw);
        }
    }
    text
}

/// pi-ai's `parseChunkUsage`: cached tokens are taken out of the prompt tokens.
fn parse_usage(raw: &Json) -> Usage {
    let n = |v: Option<&Json>| {
        v.and_then(Json::as_f64)
            .filter(|f| *f != 0.0 && !f.is_nan())
    };
    let prompt = n(raw.get("prompt_tokens")).unwrap_or(0.0);
    let details = raw.get("prompt_tokens_details");
    let cache_read = details
        .and_then(|d| d.get("cached_tokens"))
        .filter(|v| !v.is_null())
        .or_else(|| raw.get("prompt_cache_hit_tokens").filter(|v| !v.is_null()))
        .or_else(|| raw.get("cached_tokens").filter(|v| !v.is_null()))
        .and_then(Json::as_f64)
        .unwrap_or(0.0);
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens"))).unwrap_or(0.0);
    let input = (prompt - cache_read - cache_write).max(0.0);
    let output = n(raw.get("completion_tokens")).unwrap_or(0.0);
    let reasoning = n(raw
        .get("completion_tokens_details")
        .and_then(|d| d.get("reasoning_tokens")))
    .or_else(|| n(raw.get("reasoning_tokens")))
    .unwrap_or(0.0);
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        cache_write_1h: None,
        reasoning: Some(reasoning),
        total_tokens: input + output + cache_read + cache_write,
    }
}

/// This API's reader fed `body` ([`crate::providers::fuzzing::read`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(in crate::providers) fn read_body(body: &[u8], piece: usize, views: bool) -> Vec<Json> {
    use super::super::fuzzing::{call, each_sse_event};
    use std::ops::ControlFlow::{Break, Continue};
    let call = call("openai-completions", "vllm");
    let (sender, receiver) = crate::stream::channel(&call.model);
    let mut reader = Reader::new(Output::new(sender, &call.model));
    reader.views = views;
    reader.out.start().unwrap();
    let failure = each_sse_event(SseParser::new(), body, piece, |event| {
        match reader.event(&call, event) {
            Ok(Step::Continue) => Continue(()),
            Ok(Step::Done) => Break(None),
            Ok(Step::Fail(text)) => Break(Some(text)),
            Err(StreamClosed) => unreachable!("the receiver is read after the body"),
        }
    });
    super::super::output::ended(reader.out, failure, receiver)
}

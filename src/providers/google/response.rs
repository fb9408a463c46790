//! The google-generative-ai response: HTTP error texts (kit README §8.12), the Google SDK's
//! splitting of the body into events, and the mapping of each chunk onto the stream (§8.11).

use std::borrow::Cow;

use super::super::http::{self, Chunk, ErrorHead, Failure, RetryPolicy};
use super::super::limits::truthy;
use super::super::output::Stop;
use super::super::output::{BlockKind, Output, Pushed, ToolCallLimits, Usage};
use super::super::surrogates::SplitSurrogates;
use super::super::wire::{self, Members};
use super::super::Call;
use super::request::{self, Thinking};
use crate::json::{is_js_whitespace, to_string, Json, JsonMap};
use crate::stream::StreamClosed;

/// The SDK's text for a body that ends inside an event.
const INCOMPLETE: &str = "Incomplete JSON segment at the end";
/// V8's text for JSON cut short (the same in every Node version).
const JSON_CUT_SHORT: &str = "Unexpected end of JSON input";

/// The Google SDK's error for an HTTP error response: the JSON body as it came (with a JSON
/// content type), else the body text wrapped in an error object with the status.
pub(super) fn describe_status(status: u16, body: &str, head: Option<&ErrorHead>) -> String {
    let json_type = head
        .and_then(|h| h.content_type.as_deref())
        .is_some_and(|t| t.contains("application/json"));
    if json_type {
        return match crate::json::parse(body) {
            Ok(json) => to_string(&json),
            Err(_) if body.trim_matches(is_js_whitespace).is_empty() => JSON_CUT_SHORT.into(),
            // V8's parse error texts differ between versions: the body itself says more.
            Err(_) => body.to_string(),
        };
    }
    let mut error = JsonMap::new();
    error.insert("message".into(), body.into());
    error.insert("code".into(), status.into());
    error.insert(
        "status".into(),
        head.map_or("", |h| h.reason.as_str()).into(),
    );
    let mut wrapper = JsonMap::new();
    wrapper.insert("error".into(), Json::Object(error));
    to_string(&Json::Object(wrapper))
}

/// Transport texts as Node's `fetch` words them when the Google SDK calls it (`fetch failed`
/// where the OpenAI SDK says `Connection error.`).
fn fetch_text(text: String) -> String {
    match text.strip_prefix("Connection error.: ") {
        Some(rest) => format!("fetch failed: {rest}"),
        None => text,
    }
}

/// `got status: <error.status>. <chunk>` for a chunk that is an error object with an HTTP code
/// (the SDK checks each read and each event this way).
pub(super) fn error_chunk(text: &str) -> Option<String> {
    let trimmed = text.trim_matches(is_js_whitespace);
    if !trimmed.starts_with('{') {
        return None;
    }
    error_text(&crate::json::parse(trimmed).ok()?)
}

/// Whether a read may be a JSON object once JavaScript's whitespace is trimmed: false when its
/// first byte is an ASCII character that is neither whitespace nor `{` (a `data:` event).
fn may_be_object(bytes: &[u8]) -> bool {
    match bytes.first() {
        Some(&b) if b.is_ascii() => matches!(b, b'{' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' '),
        _ => true,
    }
}

/// [`error_chunk`] of parsed JSON.
fn error_text(json: &Json) -> Option<String> {
    let error = json.get("error").filter(|e| e.is_object())?;
    let code = error.get("code").and_then(Json::as_f64)?;
    if !(400.0..600.0).contains(&code) {
        return None;
    }
    let status = match error.get("status") {
        None => "undefined".to_string(),
        Some(Json::String(s)) => s.clone(),
        Some(Json::Object(_)) => "[object Object]".to_string(),
        Some(other) => to_string(other),
    };
    Some(format!("got status: {status}. {}", to_string(json)))
}

/// The Google SDK's event splitter: an event ends at the first `\n\n`, `\r\r` or `\r\n\r\n`;
/// only events that, trimmed, start with `data:` count, and their rest (trimmed) is one JSON
/// document. Each byte is scanned once.
#[derive(Debug, Default)]
pub(super) struct Frames {
    buffer: Vec<u8>,
    /// Where the current event starts in `buffer`.
    start: usize,
    /// Where the search for its end resumes.
    scan: usize,
}

impl Frames {
    /// Feeds one read; returns the data of the events it completed.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, length)) = self.next_delimiter() {
            let event = String::from_utf8_lossy(&self.buffer[self.start..end]);
            if let Some(data) = event_data(&event) {
                events.push(data);
            }
            self.start = end + length;
            self.scan = self.start;
        }
        // Drop what was consumed once it is most of the buffer (amortized linear).
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        events
    }

    /// The earliest delimiter at or after `scan`; stops where the bytes so far could still
    /// become one.
    fn next_delimiter(&mut self) -> Option<(usize, usize)> {
        let bytes = &self.buffer;
        while let Some(offset) = memchr::memchr2(b'\n', b'\r', &bytes[self.scan..]) {
            let i = self.scan + offset;
            self.scan = i;
            let rest = &bytes[i..];
            match rest[0] {
                b'\n' => match rest.get(1) {
                    Some(b'\n') => return Some((i, 2)),
                    None => return None,
                    _ => {}
                },
                _ => match (rest.get(1), rest.get(2), rest.get(3)) {
                    (Some(b'\r'), _, _) => return Some((i, 2)),
                    (Some(b'\n'), Some(b'\r'), Some(b'\n')) => return Some((i, 4)),
                    (None, _, _) | (Some(b'\n'), None, _) | (Some(b'\n'), Some(b'\r'), None) => {
                        return None
                    }
                    _ => {}
                },
            }
            self.scan = i + 1;
        }
        self.scan = bytes.len();
        None
    }

    /// Whether non-blank text is left at the end of the body.
    pub(super) fn leftover(&self) -> bool {
        !String::from_utf8_lossy(&self.buffer[self.start..])
            .trim_matches(is_js_whitespace)
            .is_empty()
    }
}

/// The JSON text of an event, if it is a `data:` event.
fn event_data(event: &str) -> Option<String> {
    let trimmed = event.trim_matches(is_js_whitespace);
    let data = trimmed.strip_prefix("data:")?;
    Some(data.trim_matches(is_js_whitespace).to_string())
}

/// The id of a function call that came without one (or with one used earlier in the message):
/// `<name>_<responseId>_<n>` (`<name>_<n>` before any response id), `n` counting the response's
/// tool calls from 1, bumped past ids already taken. pi-ai uses the clock and a process-wide
/// counter instead; this one is reproducible and, with Gemini's per-response ids, unique within
/// a conversation.
pub(super) fn fallback_tool_call_id(
    name: &str,
    response_id: Option<&str>,
    ordinal: usize,
    taken: &[String],
) -> String {
    let mut n = ordinal;
    loop {
        let id = match response_id.filter(|r| !r.is_empty()) {
            Some(response) => format!("{name}_{response}_{n}"),
            None => format!("{name}_{n}"),
        };
        if !taken.contains(&id) {
            return id;
        }
        n += 1;
    }
}

/// The open text or thinking block.
struct Current {
    index: usize,
    kind: BlockKind,
    signature: Option<String>,
}

/// The members of a chunk of the usual shape, read through a borrowed view ([`wire`]): an
/// object without `error`, whose `responseId` is a string or absent, whose first candidate has no
/// `finishReason` and whose parts are text parts (a string `text`, `thought` a boolean or absent,
/// `thoughtSignature` a string or absent, no `functionCall`). What the general path does with such
/// a chunk is exactly: keep the id, append each part, take the usage.
pub(super) struct TextChunk<'a> {
    response_id: Option<Cow<'a, str>>,
    parts: Vec<TextPart<'a>>,
    /// `usageMetadata`, parsed (a few numbers).
    usage: Option<Json>,
}

struct TextPart<'a> {
    thought: bool,
    text: Cow<'a, str>,
    signature: Option<Cow<'a, str>>,
}

impl<'a> TextChunk<'a> {
    pub(super) fn read(data: &'a str) -> Option<Self> {
        let chunk = Members::parse(data)?;
        if !chunk.absent_or_null("error") {
            return None;
        }
        let string_or_absent = |members: &Members<'a>, key| match members.get(key) {
            None => Some(None),
            Some(value) => wire::string(value).map(Some),
        };
        let response_id = string_or_absent(&chunk, "responseId")?;
        let mut parts = Vec::new();
        if let Some(candidates) = chunk.get("candidates") {
            if let Some(candidate) = Members::of_first(candidates)? {
                if !candidate.absent_or_null("finishReason") {
                    return None;
                }
                let content = candidate.get("content").filter(|c| !wire::is_null(*c));
                let list = match content {
                    Some(content) => Members::of(content)?.get("parts"),
                    None => None,
                };
                let list = match list.filter(|l| !wire::is_null(*l)) {
                    Some(list) => wire::array(list)?,
                    None => Vec::new(),
                };
                for part in list {
                    let part = Members::of(part)?;
                    if !part.absent_or_null("functionCall") {
                        return None;
                    }
                    let Some(text) = part.get("text") else {
                        continue;
                    };
                    let thought = match part.get("thought").map(|t| t.get()) {
                        None | Some("false") => false,
                        Some("true") => true,
                        Some(_) => return None,
                    };
                    parts.push(TextPart {
                        thought,
                        text: wire::string(text)?,
                        signature: string_or_absent(&part, "thoughtSignature")?,
                    });
                }
            }
        }
        let usage = match chunk.get("usageMetadata") {
            Some(usage) if !wire::is_null(usage) => Some(crate::json::parse(usage.get()).ok()?),
            _ => None,
        };
        Some(TextChunk {
            response_id,
            parts,
            usage,
        })
    }
}

/// Per-response state: pi-ai's loop over the SDK's chunks.
pub(super) struct Reader {
    pub(super) out: Output,
    /// Chunks of the usual shape read through a borrowed view ([`TextChunk`]); off only where a
    /// test compares the view with the general path.
    pub(super) views: bool,
    current: Option<Current>,
    /// Tool-call ids of the message so far (searched per call: at most the tool-call cap, 1000).
    tool_call_ids: Vec<String>,
    limits: ToolCallLimits,
    response_id: Option<Json>,
    raw_stop_reason: Option<Json>,
    stop_reason: Option<&'static str>,
    surrogates: SplitSurrogates,
}

pub(super) async fn run(call: Call, thinking: Thinking, out: Output) -> Pushed {
    let request = match request::build(&call, &thinking) {
        Ok(request) => request,
        Err(text) => return out.fail(call.signal.is_aborted(), &text),
    };
    if call.signal.is_aborted() {
        return out.fail(true, "Request aborted");
    }
    if let Err(text) = request::check_model_id(super::model_id(&call.model)) {
        return out.fail(false, &text);
    }
    let sent = http::send_with(
        &request,
        &call.signal,
        RetryPolicy::status_only(),
        |_, body| body.to_string(),
    )
    .await;
    let mut response = match sent {
        Ok(response) => response,
        // pi-ai's retry wrapper replaces any failure after an abort.
        Err(_) if call.signal.is_aborted() => return out.fail(true, "Request aborted"),
        Err((Failure::Aborted, _)) => return out.fail(true, "Request aborted"),
        Err((Failure::Status { status, body }, head)) => {
            return out.fail(false, &describe_status(status, &body, head.as_ref()))
        }
        Err((Failure::Message(text), _)) => return out.fail(false, &fetch_text(text)),
    };
    let mut reader = Reader::new(out);
    reader.out.start()?;
    let mut frames = Frames::default();
    let failure = 'read: loop {
        let bytes = match response.next_chunk(&call.signal).await {
            Chunk::Data(bytes) => bytes,
            Chunk::End if frames.leftover() => break Some(INCOMPLETE.to_string()),
            Chunk::End => break None,
            Chunk::Aborted => break Some("This operation was aborted".to_string()),
            Chunk::Failed(text) => break Some(text),
        };
        // The SDK first checks the whole read for an error object.
        if let Some(text) = may_be_object(&bytes)
            .then(|| error_chunk(&String::from_utf8_lossy(&bytes)))
            .flatten()
        {
            break Some(text);
        }
        for data in frames.feed(&bytes) {
            match reader.event(&data) {
                Ok(()) => reader.out.keep_pace().await,
                Err(Stop::Fail(text)) => break 'read Some(text),
                Err(Stop::Closed(closed)) => return Err(closed),
            }
        }
    };
    // The connection is dropped before anything else is reported.
    drop(response);
    let aborted = call.signal.is_aborted();
    if let Some(text) = failure {
        return reader.out.fail(aborted, &text);
    }
    if let Some(current) = reader.current.take() {
        reader.out.close(current.index)?;
    }
    if aborted {
        return reader.out.fail(true, "Request was aborted");
    }
    match (reader.stop_reason, &reader.raw_stop_reason) {
        (None, _) => reader
            .out
            .fail(false, "Google stream ended without a finish reason"),
        (Some("error"), raw) => {
            let text = match raw {
                Some(Json::String(raw)) => format!("Provider stopped with: {raw}"),
                Some(raw) => format!("Provider stopped with: {}", to_string(raw)),
                None => "An unknown error occurred".into(),
            };
            reader.out.fail(false, &text)
        }
        (Some(reason), _) => reader.out.done(reason),
    }
}

/// pi-ai's stop reason for a Gemini `finishReason`.
fn map_finish_reason(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "STOP" => "stop",
        "MAX_TOKENS" | "CONTINUATION" => "length",
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => "error",
        _ => return None,
    })
}

/// A usage count read with `x || 0`.
fn count(value: Option<&Json>) -> f64 {
    value
        .and_then(Json::as_f64)
        .filter(|n| !n.is_nan())
        .unwrap_or(0.0)
}

impl Reader {
    pub(super) fn new(out: Output) -> Self {
        Reader {
            out,
            views: true,
            current: None,
            tool_call_ids: Vec::new(),
            limits: ToolCallLimits::default(),
            response_id: None,
            raw_stop_reason: None,
            stop_reason: None,
            surrogates: SplitSurrogates::default(),
        }
    }

    /// One event's JSON text.
    pub(super) fn event(&mut self, data: &str) -> Result<(), Stop> {
        let data = self.surrogates.rejoin(data);
        if self.views && self.text_chunk(&data)? {
            return Ok(());
        }
        let chunk = crate::json::parse(&data).map_err(|e| {
            Stop::Fail(if e.contains("EOF while parsing") {
                JSON_CUT_SHORT.into()
            } else {
                format!("The server sent a stream event that is not valid JSON ({e}).")
            })
        })?;
        if let Some(text) = error_text(&chunk) {
            return Err(Stop::Fail(text));
        }
        self.chunk(&chunk)
    }

    /// A chunk of the usual shape ([`TextChunk`]) handled without parsing it into a tree;
    /// `false` when it has another shape (nothing done then).
    fn text_chunk(&mut self, data: &str) -> Result<bool, Stop> {
        let Some(chunk) = TextChunk::read(data) else {
            return Ok(false);
        };
        if let Some(id) = chunk.response_id {
            self.note_response_id(|| Json::String(id.into_owned()))?;
        }
        for part in &chunk.parts {
            self.text_delta(part.thought, &part.text, part.signature.as_deref())?;
        }
        if let Some(usage) = chunk.usage.filter(truthy) {
            self.usage(&usage)?;
        }
        Ok(true)
    }

    /// `responseId ||= chunk.responseId`: replaced while it is falsy.
    fn note_response_id(&mut self, id: impl FnOnce() -> Json) -> Result<(), StreamClosed> {
        if !self.response_id.as_ref().is_some_and(truthy) {
            let id = id();
            self.response_id = Some(id.clone());
            self.out.set("responseId", id)?;
        }
        Ok(())
    }

    fn chunk(&mut self, chunk: &Json) -> Result<(), Stop> {
        if let Some(id) = chunk.get("responseId") {
            self.note_response_id(|| id.clone())?;
        }
        let candidate = chunk
            .get("candidates")
            .and_then(Json::as_array)
            .and_then(|c| c.first());
        let parts = candidate
            .and_then(|c| c.get("content"))
            .and_then(|c| c.get("parts"))
            .and_then(Json::as_array);
        for part in parts.into_iter().flatten() {
            if let Some(text) = part.get("text") {
                // pi-ai appends whatever came; only strings carry text.
                let signature = part.get("thoughtSignature").and_then(Json::as_str);
                let thought = part.get("thought") == Some(&Json::Bool(true));
                self.text_delta(thought, text.as_str().unwrap_or(""), signature)?;
            }
            if let Some(call) = part.get("functionCall").filter(|c| truthy(c)) {
                self.function_call(part, call)?;
            }
        }
        if let Some(reason) = candidate
            .and_then(|c| c.get("finishReason"))
            .filter(|r| truthy(r))
        {
            self.raw_stop_reason = Some(reason.clone());
            self.out.set("rawStopReason", reason.clone())?;
            let text = match reason {
                Json::String(text) => text.clone(),
                other => to_string(other),
            };
            let Some(mut stop) = map_finish_reason(&text) else {
                return Err(Stop::Fail(format!("Unhandled stop reason: {text}")));
            };
            if stop == "stop" && !self.tool_call_ids.is_empty() {
                stop = "toolUse";
            }
            self.stop_reason = Some(stop);
            self.out.set("stopReason", stop.into())?;
        }
        if let Some(usage) = chunk.get("usageMetadata").filter(|u| truthy(u)) {
            self.usage(usage)?;
        }
        Ok(())
    }

    /// The chunk's `usageMetadata` (truthy).
    fn usage(&mut self, usage: &Json) -> Result<(), StreamClosed> {
        let prompt = count(usage.get("promptTokenCount"));
        let cached = count(usage.get("cachedContentTokenCount"));
        let thoughts = count(usage.get("thoughtsTokenCount"));
        let parsed = Usage {
            input: prompt - cached,
            output: count(usage.get("candidatesTokenCount")) + thoughts,
            cache_read: cached,
            cache_write: 0.0,
            cache_write_1h: None,
            reasoning: Some(thoughts),
            total_tokens: count(usage.get("totalTokenCount")),
        };
        self.out.set_usage(&parsed, usage)
    }

    /// A text part (`thought: true` ones are thinking): a change of kind closes the open block.
    fn text_delta(
        &mut self,
        thought: bool,
        delta: &str,
        signature: Option<&str>,
    ) -> Result<(), Stop> {
        let kind = if thought {
            BlockKind::Thinking
        } else {
            BlockKind::Text
        };
        if self.current.as_ref().is_none_or(|c| c.kind != kind) {
            self.close_current()?;
            let field = if kind == BlockKind::Thinking {
                "thinking"
            } else {
                "text"
            };
            let mut block = JsonMap::new();
            block.insert("type".into(), field.into());
            block.insert(field.into(), "".into());
            let index = self.out.open(kind, block)?;
            self.current = Some(Current {
                index,
                kind,
                signature: None,
            });
        }
        let Some(current) = self.current.as_mut() else {
            return Ok(());
        };
        if let Some(signature) = signature.filter(|s| !s.is_empty()) {
            if current.signature.as_deref() != Some(signature) {
                current.signature = Some(signature.to_string());
                let key = if kind == BlockKind::Thinking {
                    "thinkingSignature"
                } else {
                    "textSignature"
                };
                self.out
                    .set_block_field(current.index, key, signature.into())?;
            }
        }
        let index = current.index;
        Ok(self.out.delta(index, delta)?)
    }

    fn close_current(&mut self) -> Result<(), StreamClosed> {
        match self.current.take() {
            Some(current) => self.out.close(current.index),
            None => Ok(()),
        }
    }

    /// A whole function call: its block opens, streams its arguments as one delta and closes.
    fn function_call(&mut self, part: &Json, call: &Json) -> Result<(), Stop> {
        self.close_current()?;
        self.limits.open().map_err(Stop::Fail)?;
        let name = call.get("name").and_then(Json::as_str).unwrap_or("");
        let id = match call.get("id").and_then(Json::as_str) {
            Some(id) if !id.is_empty() && !self.tool_call_ids.iter().any(|t| t == id) => {
                id.to_string()
            }
            // pi-ai's template spells a missing name `undefined`.
            _ => fallback_tool_call_id(
                call.get("name")
                    .and_then(Json::as_str)
                    .unwrap_or("undefined"),
                self.response_id.as_ref().and_then(Json::as_str),
                self.tool_call_ids.len() + 1,
                &self.tool_call_ids,
            ),
        };
        self.tool_call_ids.push(id.clone());
        let arguments = call
            .get("args")
            .filter(|a| !a.is_null())
            .cloned()
            .unwrap_or_else(|| Json::Object(JsonMap::new()));
        let text = to_string(&arguments);
        let mut block = JsonMap::new();
        block.insert("type".into(), "toolCall".into());
        block.insert("id".into(), id.into());
        block.insert("name".into(), name.into());
        block.insert("arguments".into(), arguments);
        if let Some(signature) = part.get("thoughtSignature").filter(|s| truthy(s)) {
            block.insert("thoughtSignature".into(), signature.clone());
        }
        let index = self.out.open(BlockKind::ToolCall, block)?;
        self.limits.arguments(index, &text).map_err(Stop::Fail)?;
        self.out.delta(index, &text)?;
        Ok(self.out.close(index)?)
    }
}

/// This API's reader fed `body` ([`crate::providers::fuzzing::read`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(in crate::providers) fn read_body(body: &[u8], piece: usize, views: bool) -> Vec<Json> {
    let call = super::super::fuzzing::call("google-generative-ai", "google");
    let (sender, receiver) = crate::stream::channel(&call.model);
    let mut reader = Reader::new(Output::new(sender, &call.model));
    reader.views = views;
    reader.out.start().unwrap();
    let mut frames = Frames::default();
    let mut failure = None;
    'read: for bytes in body.chunks(piece) {
        for data in frames.feed(bytes) {
            match reader.event(&data) {
                Ok(()) => {}
                Err(Stop::Fail(text)) => {
                    failure = Some(text);
                    break 'read;
                }
                Err(Stop::Closed(_)) => unreachable!("the receiver is read after the body"),
            }
        }
    }
    if failure.is_none() && frames.leftover() {
        failure = Some(INCOMPLETE.to_string());
    }
    super::super::output::ended(reader.out, failure, receiver)
}

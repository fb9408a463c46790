//! The openai-responses response: HTTP error texts (kit README §8.12) and the mapping of the
//! server-sent events onto the stream (§8.9).

use super::super::output::js_string;
use super::super::output::Stop;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use super::super::http::{self, Chunk, Failure, HttpRequest};
use super::super::limits::truthy;
use super::super::output::{BlockKind, Output, Pushed, ToolCallLimits, Usage};
use super::super::sse::{SseEvent, SseParser};
use super::super::surrogates::SplitSurrogates;
use super::super::wire::{self, Members};
use super::super::Call;
use super::grammar::{InputProperties, InputStream};
use crate::json::{json, now_ms, number, to_string, Json, JsonMap};

/// The SDK's text for an SSE event whose data is not JSON.
const MALFORMED: &str = "Error reading response: malformed server-sent event JSON.";
/// The longest error body kept in an error text (UTF-16 units), as pi-ai cuts it.
const MAX_BODY_CHARS: usize = 4000;
const ENDED_EARLY: &str = "OpenAI Responses stream ended before a terminal response event";

/// The error object the OpenAI SDK keeps for an HTTP error body: the body's `error` when it has
/// one, else the whole JSON object; `None` for an empty or non-JSON body (and JSON that is not
/// an object, which the SDK keeps no error for).
fn sdk_error(body: &str) -> Option<Json> {
    let json = crate::json::parse(body).ok()?;
    match &json {
        Json::Object(map) => match map.get("error") {
            Some(error) if !error.is_null() => Some(error.clone()),
            _ => Some(json),
        },
        Json::Array(_) => Some(json),
        _ => None,
    }
}

/// The SDK's `APIError` message: `<status> <error.message>` (or the error as JSON, or the
/// non-JSON body), `<status> status code (no body)` without any of them.
pub(super) fn sdk_message(status: u16, body: &str) -> String {
    let error = sdk_error(body);
    let message = match &error {
        Some(error) => match error.get("message").filter(|m| truthy(m)) {
            Some(Json::String(text)) => Some(text.clone()),
            Some(other) => Some(to_string(other)),
            None => truthy(error).then(|| to_string(error)),
        },
        None => crate::json::parse(body)
            .is_err()
            .then(|| body.to_string())
            .filter(|b| !b.is_empty()),
    };
    match message {
        Some(message) => format!("{status} {message}"),
        None => format!("{status} status code (no body)"),
    }
}

/// pi-ai's text for an HTTP error: `<Provider> API error (<status>): ` + the error object as
/// compact JSON (cut to 4000 UTF-16 units) unless the SDK message already carries it.
pub(super) fn describe_status(provider: &str, status: u16, body: &str) -> String {
    let prefix = if provider == "openai" {
        "OpenAI API error".to_string()
    } else {
        format!("{provider} API error")
    };
    let message = sdk_message(status, body);
    let body_text = sdk_error(body)
        .filter(|e| e.as_object().is_some_and(|m| !m.is_empty()))
        .map(|e| to_string(&e))
        .map(|text| text.trim_matches(crate::json::is_js_whitespace).to_string())
        .filter(|text| !text.is_empty());
    match body_text {
        Some(text) if !message.contains(&text) => {
            format!("{prefix} ({status}): {}", cut_units(&text, MAX_BODY_CHARS))
        }
        _ => format!("{prefix} ({status}): {message}"),
    }
}

/// `text` cut to `max` UTF-16 units with pi-ai's note of how many were dropped.
fn cut_units(text: &str, max: usize) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    if units.len() <= max {
        return text.to_string();
    }
    format!(
        "{}... [truncated {} chars]",
        String::from_utf16_lossy(&units[..max]),
        units.len() - max
    )
}

/// The SDK's message for an error inside the stream (no status): the error's `message`, else
/// the error as JSON.
fn stream_error_text(error: Option<&Json>) -> String {
    match error.filter(|e| truthy(e)) {
        Some(error) => match error.get("message").filter(|m| truthy(m)) {
            Some(Json::String(text)) => text.clone(),
            Some(other) => to_string(other),
            None => to_string(error),
        },
        None => "(no status code or body)".into(),
    }
}

pub(super) async fn run(
    call: Call,
    request: Result<(HttpRequest, InputProperties), String>,
    out: Output,
) -> Pushed {
    if call.signal.is_aborted() {
        return fail(out, true, "Request aborted");
    }
    let (request, properties) = match request {
        Ok(built) => built,
        Err(text) => return fail(out, false, &text),
    };
    let provider = call.model_str("provider").to_string();
    let mut response = match http::send(&request, &call.signal, sdk_message).await {
        Ok(response) => response,
        Err(Failure::Aborted) => return fail(out, true, "Request aborted"),
        Err(Failure::Status { status, body }) => {
            let text = describe_status(&provider, status, &body);
            return fail(out, call.signal.is_aborted(), &text);
        }
        Err(Failure::Message(text)) => return fail(out, call.signal.is_aborted(), &text),
    };
    let mut reader = Reader::new(out, &call, properties);
    reader.out.start()?;
    let mut parser = SseParser::new();
    let failure = 'read: loop {
        let (events, end) = match response.next_chunk(&call.signal).await {
            Chunk::Data(bytes) => (parser.feed(&bytes), false),
            Chunk::End => (parser.finish().into_iter().collect(), true),
            // The SDK ends its iteration quietly on an abort; the checks below name it.
            Chunk::Aborted => break None,
            Chunk::Failed(text) => break Some(text),
        };
        for event in events {
            match reader.event(event) {
                Ok(Step::Continue) => reader.out.keep_pace().await,
                Ok(Step::Done) => break 'read None,
                Err(Stop::Fail(text)) => break 'read Some(text),
                Err(Stop::Closed(closed)) => return Err(closed),
            }
        }
        if end {
            break None;
        }
    };
    // The connection is dropped before anything else is reported.
    drop(response);
    let aborted = call.signal.is_aborted();
    let text = match failure {
        Some(text) => Some(text),
        None => reader.after_body(aborted),
    };
    match text {
        Some(text) => fail(reader.out, aborted, &text),
        None => {
            let reason = reader.stop_reason.clone();
            reader.out.done(&reason)
        }
    }
}

/// Ends the stream with `text`; a ChatGPT subscription's usage-limit error gets pi-ai's hint of
/// where to look.
fn fail(out: Output, aborted: bool, text: &str) -> Pushed {
    let hint = if text.contains("subscription_sharing_usage_limit_exceeded") {
        "\nCheck your ChatGPT usage: https://chatgpt.com/settings/usage"
    } else if text.contains("subscription_sharing_workplace_individual_usage_limit_exceeded") {
        "\nYou've reached your ChatGPT workspace's usage limit. Ask your workspace admin to increase it at admin.openai.com → Workspace → Usage limits."
    } else {
        ""
    };
    out.fail(aborted, &format!("{text}{hint}"))
}

pub(super) enum Step {
    Continue,
    /// `data: [DONE]`: stop reading.
    Done,
}

/// An output item being streamed: its block and, for a function call, its argument text so far
/// (for a grammar tool's call, its input instead).
struct Slot {
    kind: BlockKind,
    index: usize,
    arguments: String,
    custom: Option<InputStream>,
}

/// A text, reasoning or argument delta of the usual shape, read through a borrowed view
/// ([`wire`]): an object without `error` whose `type` is one of those deltas', whose
/// `output_index` is a plain integer and whose `delta` is a string. What the general path does
/// with it is exactly: append the text to the item's block.
pub(super) struct Delta<'a> {
    output_index: &'a str,
    /// The block kind of a text or reasoning delta; `None` for function-call arguments.
    kind: Option<BlockKind>,
    text: Cow<'a, str>,
}

impl<'a> Delta<'a> {
    pub(super) fn read(data: &'a str) -> Option<Self> {
        let event = Members::parse(data)?;
        if !event.absent_or_null("error") {
            return None;
        }
        let kind = match &*wire::string(event.get("type")?)? {
            "response.output_text.delta" | "response.refusal.delta" => Some(BlockKind::Text),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                Some(BlockKind::Thinking)
            }
            "response.function_call_arguments.delta" => None,
            _ => return None,
        };
        Some(Delta {
            output_index: wire::plain_index(event.get("output_index")?)?,
            kind,
            text: wire::string(event.get("delta")?)?,
        })
    }
}

/// Per-request stream state.
pub(super) struct Reader {
    pub(super) out: Output,
    /// Deltas of the usual shape read through a borrowed view ([`Delta`]); off only where a test
    /// compares the view with the general path.
    pub(super) views: bool,
    model: Arc<Json>,
    /// Grammar tools' input properties, by tool name.
    properties: InputProperties,
    /// Open output items by `output_index` (its JSON text: the key as JavaScript's `Map` sees it).
    slots: HashMap<String, Slot>,
    /// Tool calls whose `output_item.done` has not come, in order: (content index, name, id).
    unfinished: Vec<(usize, String, String)>,
    /// Reasoning blocks by item id, with their signature (the done item), for the backfill of
    /// encrypted content from the terminal response.
    reasoning: HashMap<String, (usize, Json)>,
    limits: ToolCallLimits,
    /// Surrogate pairs split across two events are joined before parsing.
    surrogates: SplitSurrogates,
    stop_reason: String,
    error_message: Option<String>,
    terminal: bool,
    has_tool_call: bool,
}

fn item_type(item: &Json) -> &str {
    item.get("type").and_then(Json::as_str).unwrap_or("")
}

impl Reader {
    pub(super) fn new(out: Output, call: &Call, properties: InputProperties) -> Self {
        Reader {
            out,
            views: true,
            model: call.model.clone(),
            properties,
            slots: HashMap::new(),
            unfinished: Vec::new(),
            reasoning: HashMap::new(),
            limits: ToolCallLimits::default(),
            surrogates: SplitSurrogates::default(),
            stop_reason: "pending".into(),
            error_message: None,
            terminal: false,
            has_tool_call: false,
        }
    }

    /// One server-sent event: the SDK's checks, then pi-ai's dispatch on `type`.
    pub(super) fn event(&mut self, event: SseEvent) -> Result<Step, Stop> {
        if event.data.starts_with("[DONE]") {
            return Ok(Step::Done);
        }
        let data = self.surrogates.rejoin(&event.data);
        if self.views && event.event.as_deref() != Some("error") {
            if let Some(delta) = Delta::read(&data) {
                match delta.kind {
                    Some(kind) => self.delta(delta.output_index, kind, &delta.text)?,
                    None => self.arguments_delta(delta.output_index, &delta.text)?,
                }
                return Ok(Step::Continue);
            }
        }
        let Ok(data) = crate::json::parse(&data) else {
            return Err(Stop::Fail(MALFORMED.into()));
        };
        if event.event.as_deref() == Some("error") {
            let error = data.get("error").filter(|e| !e.is_null()).unwrap_or(&data);
            return Err(Stop::Fail(stream_error_text(Some(error))));
        }
        if let Some(error) = data.get("error").filter(|e| truthy(e)) {
            return Err(Stop::Fail(stream_error_text(Some(error))));
        }
        let output_index = data
            .get("output_index")
            .map_or("undefined".into(), to_string);
        match data.get("type").and_then(Json::as_str).unwrap_or("") {
            "response.created" => {
                if let Some(id) = data.get("response").and_then(|r| r.get("id")) {
                    self.out.set("responseId", id.clone())?;
                }
            }
            "response.output_item.added" => {
                if let Some(item) = data.get("item").filter(|i| i.is_object()) {
                    self.create_slot(&output_index, item)?;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.delta(
                    &output_index,
                    BlockKind::Thinking,
                    &js_string(data.get("delta")),
                )?;
            }
            "response.reasoning_summary_part.done" => {
                self.delta(&output_index, BlockKind::Thinking, "\n\n")?;
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                self.delta(
                    &output_index,
                    BlockKind::Text,
                    &js_string(data.get("delta")),
                )?;
            }
            "response.function_call_arguments.delta" => {
                self.arguments_delta(&output_index, &js_string(data.get("delta")))?;
            }
            "response.function_call_arguments.done" => {
                if let Some(text) = data.get("arguments").and_then(Json::as_str) {
                    self.arguments_done(&output_index, text)?;
                }
            }
            "response.custom_tool_call_input.delta" => {
                let delta = js_string(data.get("delta"));
                self.custom_input(&output_index, |input| input.append(&delta))?;
            }
            "response.custom_tool_call_input.done" => {
                let input = data.get("input").and_then(Json::as_str).map(str::to_string);
                self.custom_input(&output_index, |stream| stream.close(input.as_deref()))?;
            }
            "response.output_item.done" => {
                if let Some(item) = data.get("item").filter(|i| i.is_object()) {
                    self.item_done(&output_index, item)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = data.get("response").cloned().unwrap_or(Json::Null);
                self.finalize(&response)?;
            }
            "error" => {
                let field = |key: &str| js_string(data.get(key));
                return Err(Stop::Fail(format!(
                    "Error Code {}: {}",
                    field("code"),
                    field("message")
                )));
            }
            "response.failed" => {
                self.terminal = true;
                let response = data.get("response");
                if let Some(status) = response.and_then(|r| r.get("status")) {
                    self.out.set("rawStopReason", status.clone())?;
                }
                let error = response.and_then(|r| r.get("error")).filter(|e| truthy(e));
                let reason = response
                    .and_then(|r| r.get("incomplete_details"))
                    .and_then(|d| d.get("reason"))
                    .filter(|r| truthy(r));
                let text = match (error, reason) {
                    (Some(error), _) => {
                        let part =
                            |key: &str, default: &str| match error.get(key).filter(|v| truthy(v)) {
                                Some(value) => js_string(Some(value)),
                                None => default.to_string(),
                            };
                        format!(
                            "{}: {}",
                            part("code", "unknown"),
                            part("message", "no message")
                        )
                    }
                    (None, Some(reason)) => format!("incomplete: {}", js_string(Some(reason))),
                    (None, None) => "Unknown error (no error details in response)".into(),
                };
                return Err(Stop::Fail(text));
            }
            _ => {}
        }
        Ok(Step::Continue)
    }

    /// A block for a new output item (reasoning, message or function call; other items have
    /// none). A later item at the same `output_index` takes its place.
    fn create_slot(&mut self, output_index: &str, item: &Json) -> Result<Option<usize>, Stop> {
        let mut block = JsonMap::new();
        let mut custom = None;
        let kind = match item_type(item) {
            "reasoning" => {
                block.insert("type".into(), "thinking".into());
                block.insert("thinking".into(), "".into());
                BlockKind::Thinking
            }
            "message" => {
                self.apply_phase(item)?;
                block.insert("type".into(), "text".into());
                block.insert("text".into(), "".into());
                BlockKind::Text
            }
            "function_call" => {
                self.limits.open().map_err(Stop::Fail)?;
                let id = format!(
                    "{}|{}",
                    js_string(item.get("call_id")),
                    js_string(item.get("id"))
                );
                block.insert("type".into(), "toolCall".into());
                block.insert("id".into(), id.into());
                if let Some(name) = item.get("name") {
                    block.insert("name".into(), name.clone());
                }
                // Arguments the item already has show in the start event's partial.
                let arguments = match item.get("arguments").and_then(Json::as_str) {
                    Some(text) if !text.is_empty() => {
                        crate::args::ArgumentStream::new().append(text).to_json()
                    }
                    _ => Json::Object(JsonMap::new()),
                };
                block.insert("arguments".into(), arguments);
                if let Some(namespace) = item.get("namespace") {
                    block.insert("namespace".into(), namespace.clone());
                }
                BlockKind::ToolCall
            }
            "custom_tool_call" => {
                self.limits.open().map_err(Stop::Fail)?;
                let name = item.get("name").and_then(Json::as_str).unwrap_or("");
                let property = self
                    .properties
                    .get(name)
                    .map_or("input", String::as_str)
                    .to_string();
                let input = item.get("input").and_then(Json::as_str).unwrap_or("");
                let id = format!(
                    "{}|{}",
                    js_string(item.get("call_id")),
                    js_string(item.get("id"))
                );
                block.insert("type".into(), "toolCall".into());
                block.insert("id".into(), id.into());
                if let Some(name) = item.get("name") {
                    block.insert("name".into(), name.clone());
                }
                let mut arguments = JsonMap::new();
                arguments.insert(property.clone(), input.into());
                block.insert("arguments".into(), Json::Object(arguments));
                if let Some(namespace) = item.get("namespace") {
                    block.insert("namespace".into(), namespace.clone());
                }
                custom = Some(InputStream::new(&property, input));
                BlockKind::ToolCall
            }
            _ => return Ok(None),
        };
        let index = self.out.open(kind, block)?;
        let mut slot = Slot {
            kind,
            index,
            arguments: String::new(),
            custom,
        };
        if kind == BlockKind::ToolCall {
            self.has_tool_call = true;
            let name = js_string(item.get("name"));
            let id = format!(
                "{}|{}",
                js_string(item.get("call_id")),
                js_string(item.get("id"))
            );
            self.unfinished.push((index, name, id));
            // The assembler's argument text starts from the item's (no event).
            if let Some(text) = item
                .get("arguments")
                .filter(|_| slot.custom.is_none())
                .and_then(Json::as_str)
                .filter(|t| !t.is_empty())
            {
                self.limits.arguments(index, text).map_err(Stop::Fail)?;
                self.out.replace_arguments(index, text)?;
                slot.arguments = text.to_string();
            }
        }
        self.slots.insert(output_index.to_string(), slot);
        Ok(Some(index))
    }

    /// A message item in its final-answer phase sets the stop reason at once.
    fn apply_phase(&mut self, item: &Json) -> Result<(), Stop> {
        if item_type(item) == "message"
            && item.get("phase").and_then(Json::as_str) == Some("final_answer")
        {
            self.stop_reason = "stop".into();
            self.out.set("stopReason", "stop".into())?;
        }
        Ok(())
    }

    /// The open block of `kind` at `output_index`.
    fn slot(&mut self, output_index: &str, kind: BlockKind) -> Option<&mut Slot> {
        self.slots.get_mut(output_index).filter(|s| s.kind == kind)
    }

    fn delta(&mut self, output_index: &str, kind: BlockKind, delta: &str) -> Result<(), Stop> {
        if let Some(index) = self.slot(output_index, kind).map(|s| s.index) {
            self.out.delta(index, delta)?;
        }
        Ok(())
    }

    fn arguments_delta(&mut self, output_index: &str, delta: &str) -> Result<(), Stop> {
        let Some(slot) = self
            .slots
            .get_mut(output_index)
            .filter(|s| s.kind == BlockKind::ToolCall && s.custom.is_none())
        else {
            return Ok(());
        };
        self.limits
            .arguments(slot.index, delta)
            .map_err(Stop::Fail)?;
        slot.arguments.push_str(delta);
        let index = slot.index;
        Ok(self.out.delta(index, delta)?)
    }

    /// A grammar tool call's input changed (`change` gives the JSON text to stream, if any).
    fn custom_input(
        &mut self,
        output_index: &str,
        change: impl FnOnce(&mut InputStream) -> Result<Option<String>, String>,
    ) -> Result<(), Stop> {
        let Some(slot) = self.slots.get_mut(output_index) else {
            return Ok(());
        };
        let index = slot.index;
        let Some(input) = slot.custom.as_mut() else {
            return Ok(());
        };
        if let Some(json) = change(input).map_err(Stop::Fail)? {
            self.limits.arguments(index, &json).map_err(Stop::Fail)?;
            self.out.delta(index, &json)?;
        }
        Ok(())
    }

    /// The complete arguments: what continues the streamed text is streamed as one more delta;
    /// other text replaces the arguments without an event.
    fn arguments_done(&mut self, output_index: &str, text: &str) -> Result<(), Stop> {
        let Some(slot) = self
            .slots
            .get_mut(output_index)
            .filter(|s| s.kind == BlockKind::ToolCall && s.custom.is_none())
        else {
            return Ok(());
        };
        let index = slot.index;
        match text.strip_prefix(slot.arguments.as_str()) {
            Some(suffix) => {
                if suffix.is_empty() {
                    return Ok(());
                }
                let suffix = suffix.to_string();
                self.limits.arguments(index, &suffix).map_err(Stop::Fail)?;
                slot.arguments.push_str(&suffix);
                Ok(self.out.delta(index, &suffix)?)
            }
            None => {
                self.limits.arguments(index, text).map_err(Stop::Fail)?;
                slot.arguments = text.to_string();
                Ok(self.out.replace_arguments(index, text)?)
            }
        }
    }

    /// `response.output_item.done`: the item's final text, signature or arguments, then the
    /// block's `*_end` (a block is opened first when `added` never came).
    fn item_done(&mut self, output_index: &str, item: &Json) -> Result<(), Stop> {
        self.apply_phase(item)?;
        if !self.slots.contains_key(output_index) && self.create_slot(output_index, item)?.is_none()
        {
            return Ok(());
        }
        let Some(slot) = self.slots.get(output_index) else {
            return Ok(());
        };
        let (kind, index, custom) = (slot.kind, slot.index, slot.custom.is_some());
        let texts = |key: &str, field: &dyn Fn(&Json) -> Option<String>, separator: &str| {
            item.get(key)
                .and_then(Json::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .map(|p| field(p).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(separator)
                })
                .unwrap_or_default()
        };
        match (item_type(item), kind) {
            ("reasoning", BlockKind::Thinking) => {
                let text_of = |p: &Json| p.get("text").and_then(Json::as_str).map(str::to_string);
                let summary = texts("summary", &text_of, "\n\n");
                let content = texts("content", &text_of, "\n\n");
                if !summary.is_empty() || !content.is_empty() {
                    let text = if summary.is_empty() { content } else { summary };
                    self.out.set_block_field(index, "thinking", text.into())?;
                }
                self.out
                    .set_block_field(index, "thinkingSignature", to_string(item).into())?;
                if let Some(id) = item.get("id").and_then(Json::as_str) {
                    self.reasoning.insert(id.to_string(), (index, item.clone()));
                }
            }
            ("message", BlockKind::Text) => {
                let text_of = |p: &Json| {
                    let key = if item_type(p) == "output_text" {
                        "text"
                    } else {
                        "refusal"
                    };
                    p.get(key).and_then(Json::as_str).map(str::to_string)
                };
                let text = texts("content", &text_of, "");
                self.out.set_block_field(index, "text", text.into())?;
                let mut signature = JsonMap::new();
                signature.insert("v".into(), number(1.0));
                if let Some(id) = item.get("id") {
                    signature.insert("id".into(), id.clone());
                }
                if let Some(phase) = item.get("phase").filter(|p| truthy(p)) {
                    signature.insert("phase".into(), phase.clone());
                }
                self.out.set_block_field(
                    index,
                    "textSignature",
                    to_string(&Json::Object(signature)).into(),
                )?;
            }
            ("custom_tool_call", BlockKind::ToolCall) if custom => {
                let input = item.get("input").and_then(Json::as_str).map(str::to_string);
                self.custom_input(output_index, |stream| stream.close(input.as_deref()))?;
                if let Some(namespace) = item.get("namespace") {
                    self.out
                        .set_block_field(index, "namespace", namespace.clone())?;
                }
                self.unfinished.retain(|(i, _, _)| *i != index);
            }
            ("function_call", BlockKind::ToolCall) if !custom => {
                if let Some(text) = item
                    .get("arguments")
                    .and_then(Json::as_str)
                    .filter(|t| !t.is_empty())
                {
                    let streamed = self
                        .slots
                        .get(output_index)
                        .map_or("", |s| s.arguments.as_str());
                    if text != streamed {
                        self.limits.arguments(index, text).map_err(Stop::Fail)?;
                        self.out.replace_arguments(index, text)?;
                    }
                }
                if let Some(namespace) = item.get("namespace") {
                    self.out
                        .set_block_field(index, "namespace", namespace.clone())?;
                }
                self.unfinished.retain(|(i, _, _)| *i != index);
            }
            _ => return Ok(()),
        }
        self.out.close(index)?;
        self.slots.remove(output_index);
        Ok(())
    }

    /// `response.completed` / `response.incomplete`: encrypted reasoning backfilled, usage and
    /// cost (with the service tier's multiplier), the stop reason.
    fn finalize(&mut self, response: &Json) -> Result<(), Stop> {
        self.terminal = true;
        self.backfill_reasoning(response)?;
        self.append_reasoning_removals(response)?;
        if let Some(id) = response.get("id").filter(|id| truthy(id)) {
            self.out.set("responseId", id.clone())?;
        }
        let usage = match response.get("usage").filter(|u| truthy(u)) {
            Some(raw) => parse_usage(raw),
            None => Usage::default(),
        };
        let mut usage_json = usage.to_json(&self.model);
        // pi-ai's streamSimple does not pass `serviceTier` on: only the response's tier counts.
        let tier = response.get("service_tier");
        let multiplier = match tier.and_then(Json::as_str) {
            Some("flex") => 0.5,
            Some("priority" | "fast")
                if self.model.get("id").and_then(Json::as_str) == Some("gpt-5.5") =>
            {
                2.5
            }
            Some("priority" | "fast") => 2.0,
            _ => 1.0,
        };
        if multiplier != 1.0 {
            let cost = &mut usage_json["cost"];
            let mut total = 0.0;
            for key in ["input", "output", "cacheRead", "cacheWrite"] {
                let value = cost.get(key).and_then(Json::as_f64).unwrap_or(0.0) * multiplier;
                cost[key] = number(value);
                total += value;
            }
            cost["total"] = number(total);
        }
        self.out.set("usage", usage_json)?;
        let status = response.get("status").filter(|s| truthy(s));
        let reason = response
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Json::as_str);
        let status_text = status.map(|s| js_string(Some(s)));
        let raw = match (&status_text, reason) {
            (Some(status), Some(reason)) => Json::String(format!("{status}.{reason}")),
            (None, Some(reason)) => Json::String(format!("undefined.{reason}")),
            (_, None) => status.cloned().unwrap_or(Json::Null),
        };
        if raw.is_null() {
            self.out.set("rawStopReason", Json::Null)?;
        } else {
            self.out.set("rawStopReason", raw)?;
        }
        let (stop, error) = match status_text.as_deref() {
            None | Some("completed" | "in_progress" | "queued") => ("stop", None),
            Some("incomplete") if reason == Some("max_output_tokens") => ("length", None),
            Some("incomplete") => (
                "error",
                Some(match reason {
                    Some(reason) => format!("Response incomplete: {reason}"),
                    None => "Response incomplete without a provider reason".to_string(),
                }),
            ),
            Some("failed" | "cancelled") => ("error", None),
            Some(other) => return Err(Stop::Fail(format!("Unhandled stop reason: {other}"))),
        };
        let stop = if stop == "stop" && self.has_tool_call {
            "toolUse"
        } else {
            stop
        };
        self.stop_reason = stop.into();
        self.out.set("stopReason", stop.into())?;
        self.error_message = error.clone();
        if let Some(error) = error {
            self.out.set("errorMessage", error.into())?;
        }
        Ok(())
    }

    /// Encrypted reasoning the done items lacked, from the terminal response's output (Azure
    /// sends it only there).
    fn backfill_reasoning(&mut self, response: &Json) -> Result<(), Stop> {
        for item in response
            .get("output")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let Some(encrypted) = item
                .get("encrypted_content")
                .filter(|e| item_type(item) == "reasoning" && truthy(e))
            else {
                continue;
            };
            let Some(id) = item.get("id").and_then(Json::as_str) else {
                continue;
            };
            let Some((index, stored)) = self.reasoning.get_mut(id) else {
                continue;
            };
            if stored.get("encrypted_content").is_some_and(truthy) {
                continue;
            }
            if let Json::Object(map) = stored {
                map.insert("encrypted_content".into(), encrypted.clone());
            }
            let signature = to_string(stored);
            let index = *index;
            self.out
                .set_block_field(index, "thinkingSignature", signature.into())?;
        }
        Ok(())
    }

    /// Replayed reasoning the API withheld (other than at turn boundaries) becomes a diagnostic.
    fn append_reasoning_removals(&mut self, response: &Json) -> Result<(), Stop> {
        let Some(list) = response
            .get("input_transformations")
            .and_then(Json::as_array)
        else {
            return Ok(());
        };
        let removals: Vec<Json> = list
            .iter()
            .filter(|t| {
                t.get("type").and_then(Json::as_str) == Some("reasoning")
                    && t.get("action").and_then(Json::as_str) == Some("removed")
                    && t.get("reason").and_then(Json::as_str) != Some("turn_boundary")
            })
            .map(|t| {
                let mut kept = JsonMap::new();
                for key in ["type", "id", "action", "reason"] {
                    if let Some(value) = t.get(key) {
                        kept.insert(key.into(), value.clone());
                    }
                }
                Json::Object(kept)
            })
            .collect();
        if removals.is_empty() {
            return Ok(());
        }
        let diagnostic = json!({"type": "openai_input_transformations", "timestamp": now_ms(),
            "details": {"transformations": Json::Array(removals)}});
        self.out.set("diagnostics", json!([diagnostic]))?;
        Ok(())
    }

    /// The checks after the body: a terminal event must have come, tool calls must be complete,
    /// and an abort or an error stop fails the stream. `None`: the stream is done.
    pub(super) fn after_body(&mut self, aborted: bool) -> Option<String> {
        if !self.terminal {
            return Some(ENDED_EARLY.into());
        }
        if self.stop_reason == "toolUse" {
            if let Some((_, name, id)) = self.unfinished.first() {
                return Some(format!(
                    "OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"
                ));
            }
        }
        if aborted {
            return Some("Request was aborted".into());
        }
        match self.stop_reason.as_str() {
            "pending" => Some("OpenAI Responses stream ended without a stop reason".into()),
            "error" | "aborted" => Some(
                self.error_message
                    .clone()
                    .unwrap_or_else(|| "An unknown error occurred".into()),
            ),
            _ => None,
        }
    }
}

/// pi-ai's usage of a terminal response: cached and cache-write tokens are taken out of the
/// input tokens.
fn parse_usage(raw: &Json) -> Usage {
    let n = |v: Option<&Json>| {
        v.and_then(Json::as_f64)
            .filter(|f| *f != 0.0 && !f.is_nan())
            .unwrap_or(0.0)
    };
    let details = raw.get("input_tokens_details");
    let cache_read = n(details.and_then(|d| d.get("cached_tokens")));
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens")));
    Usage {
        input: (n(raw.get("input_tokens")) - cache_read - cache_write).max(0.0),
        output: n(raw.get("output_tokens")),
        cache_read,
        cache_write,
        cache_write_1h: None,
        reasoning: Some(n(raw
            .get("output_tokens_details")
            .and_then(|d| d.get("reasoning_tokens")))),
        total_tokens: n(raw.get("total_tokens")),
    }
}

/// This API's reader fed `body` ([`crate::providers::fuzzing::read`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(in crate::providers) fn read_body(body: &[u8], piece: usize, views: bool) -> Vec<Json> {
    use super::super::fuzzing::{call, each_sse_event};
    use std::ops::ControlFlow::{Break, Continue};
    let call = call("openai-responses", "openai");
    let (sender, receiver) = crate::stream::channel(&call.model);
    let mut reader = Reader::new(Output::new(sender, &call.model), &call, Default::default());
    reader.views = views;
    reader.out.start().unwrap();
    let failure = each_sse_event(SseParser::new(), body, piece, |event| {
        match reader.event(event) {
            Ok(Step::Continue) => Continue(()),
            Ok(Step::Done) => Break(None),
            Err(Stop::Fail(text)) => Break(Some(text)),
            Err(Stop::Closed(_)) => unreachable!("the receiver is read after the body"),
        }
    });
    let failure = failure.or_else(|| reader.after_body(false));
    let _ = match failure {
        Some(text) => reader.out.fail(false, &text),
        None => reader.out.done("stop"),
    };
    super::super::output::received(receiver)
}

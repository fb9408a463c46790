//! Turning host stream events (full or delta form) into full-form events and partial messages
//! (SPEC §3.3, §3.4, §3.7, §3.10 steps 1–3).
//!
//! Robustness choices for malformed input (the reference would throw or misbehave):
//! - a non-object event, or one without a string `type`, is ignored like an unknown type;
//! - `partial` counts as given only when it is an object (full form); otherwise delta form;
//! - a missing or invalid `contentIndex` (not a non-negative integer) means "no block there":
//!   deltas and `text_end`/`thinking_end` fail with the §3.7 text, `toolcall_end` is ignored,
//!   and a `*_start` without a usable index is ignored;
//! - a `*_start` beyond the end pads `content` with `null` (how the reference's sparse array
//!   serialises), but at most `MAX_PADDING` holes; further away the event is ignored;
//! - a non-string `delta` appends nothing; `content`/`contentSignature` count only as strings,
//!   `redacted` only as a boolean; `usage`/`providerThinkingLevel`/`errorMessage` count when present
//!   and not null; `message`/`error`/`toolCall` count only as objects;
//! - a terminal event without a string `reason` uses `"stop"` (`done`) or `"error"` (`error`);
//! - `toolcall_end` without `toolCall` on a block that has no argument stream keeps its arguments.

use crate::json::Field;
use std::collections::HashMap;

use compact_str::CompactString;

use super::partial::{BlockKind, Partial, PartialSnapshot};
use super::update::UpdateEvent;
use super::StreamOp;
use crate::args::ArgumentStream;
use crate::json::{now_ms, set_key, Json, JsonMap};
use crate::message::zero_usage;

/// What one pushed item means for the loop: what assembly makes of it, and the stream's own
/// failure. One type from the assembler to the loop: an update is not moved between two.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamOutput {
    /// Nothing to report (unknown type, update before `start`, second `start`, an ignored
    /// `toolcall_end` on a non-toolCall block, anything after the terminal event).
    Ignored,
    /// The first `start`: the partial message as of this event.
    Start { partial: PartialSnapshot },
    /// An update event in full form (`content`/`toolCall` of `*_end` read from the partial by
    /// `UpdateEvent::to_json`) without its `partial` value (a host's full-form event keeps a
    /// `null` placeholder at its key's position): `partial` goes at the key's place, or last.
    /// The partial message as of this event is the assembler's now (`partial`, `snapshot`), so
    /// a delta makes no snapshot the loop does not keep.
    Update { event: UpdateEvent },
    /// The stream is over (a terminal event, or a delta-form failure such as
    /// `Received text_delta for non-text content`): the final message, before the thinking-level
    /// stamp (the stream adds `durationMs` per SPEC §3.5). `started` tells whether a `start` had
    /// been seen.
    Final { message: Json, started: bool },
    /// The stream function failed before producing anything (the stream's, never assembly's).
    FunctionFailed(String),
}

/// The final error text of a stream ended with neither a terminal event nor a final message.
pub const ENDED_WITHOUT_TERMINAL: &str = "Stream ended without a done or error event";

/// Most `null` holes a `*_start` beyond the end may create.
const MAX_PADDING: usize = 1024;

/// The members of a base partial taken from the request's model: (partial's name, model's name).
const MODEL_FIELDS: [(&str, &str); 3] = [("api", "api"), ("provider", "provider"), ("model", "id")];

/// Assembles one request's stream. `model` is the request's model (for delta-form `start`).
#[derive(Debug)]
pub struct Assembler {
    /// The request model's `api`, `provider` and `id` (what a base partial copies), not the
    /// whole model: a model is a tree of a dozen members, cloned per request otherwise.
    model_fields: [Option<Json>; 3],
    /// The current partial message P (an object once started).
    partial: Partial,
    started: bool,
    complete: bool,
    /// Argument streams of open tool calls, by content index.
    streams: HashMap<usize, ArgumentStream>,
}

/// Outcome of applying one delta-form update to P.
enum Step {
    /// Forward the event, with this extra field read from the partial.
    Forward(Option<Extra>),
    Ignore,
    Fail(&'static str),
}

/// The extra field of a forwarded delta-form `*_end` event.
enum Extra {
    /// `content` = the text of block `index`'s `field`.
    Content { index: usize, field: &'static str },
    /// `toolCall` = block `index`.
    ToolCall { index: usize },
}

impl Assembler {
    pub fn new(model: &Json) -> Self {
        Self {
            model_fields: MODEL_FIELDS.map(|(_, source)| model.field(source).cloned()),
            partial: Partial::default(),
            started: false,
            complete: false,
            streams: HashMap::new(),
        }
    }

    /// Feeds one event pushed by the host.
    pub fn accept(&mut self, event: Json) -> StreamOutput {
        if self.complete {
            return StreamOutput::Ignored;
        }
        let Json::Object(mut event) = event else {
            return StreamOutput::Ignored;
        };
        let Some(kind) = event
            .field("type")
            .and_then(Json::as_str)
            .map(str::to_owned)
        else {
            return StreamOutput::Ignored;
        };
        let full_form = matches!(event.field("partial"), Some(Json::Object(_)));
        match kind.as_str() {
            "start" => {
                if self.started {
                    return StreamOutput::Ignored;
                }
                self.started = true;
                self.partial = Partial::from_map(match event.remove("partial") {
                    Some(Json::Object(partial)) => partial,
                    _ => self.base_partial(),
                });
                StreamOutput::Start {
                    partial: self.partial.snapshot(),
                }
            }
            "done" | "error" => self.terminal(&kind, event),
            "text_start" | "text_delta" | "text_end" | "thinking_start" | "thinking_delta"
            | "thinking_end" | "toolcall_start" | "toolcall_delta" | "toolcall_end" => {
                if !self.started {
                    return StreamOutput::Ignored;
                }
                if full_form {
                    self.full_form_update(&kind, event)
                } else {
                    self.delta_form_update(&kind, event)
                }
            }
            _ => StreamOutput::Ignored,
        }
    }

    /// Applies a typed change (see [`StreamOp`]); same rules as the matching delta-form event.
    pub fn apply(&mut self, op: StreamOp) -> StreamOutput {
        if self.complete || !self.started {
            return StreamOutput::Ignored;
        }
        match op {
            StreamOp::SetFields(fields) => {
                for (key, value) in fields {
                    self.partial.set_field(key, value);
                }
                StreamOutput::Ignored
            }
            StreamOp::SetBlockField { index, key, value } => {
                self.partial.set_block_field(index, key, *value);
                StreamOutput::Ignored
            }
            StreamOp::AppendBlockField { index, key, text } => {
                self.partial.append_text(index, key, &text);
                StreamOutput::Ignored
            }
            StreamOp::StartBlock { index, block } => {
                let Some(kind) = block
                    .field("type")
                    .and_then(Json::as_str)
                    .and_then(BlockKind::from_type)
                else {
                    return StreamOutput::Ignored;
                };
                if self.place_block_at(index, *block).is_none() {
                    return StreamOutput::Ignored;
                }
                if kind == BlockKind::ToolCall {
                    self.streams.insert(index, ArgumentStream::new());
                }
                StreamOutput::Update {
                    event: UpdateEvent::block_start(kind, index),
                }
            }
            StreamOp::Delta { index, delta } => match self.partial.block_kind(index) {
                Some(kind) => self.kind_delta(kind, index, delta),
                None => StreamOutput::Ignored,
            },
            StreamOp::EndBlock { index } => match self.partial.block_kind(index) {
                Some(kind) => self.kind_end(kind, index),
                None => StreamOutput::Ignored,
            },
            StreamOp::ReplaceArguments { index, text } => {
                if let Some(stream) = self.streams.get_mut(&index) {
                    if self.partial.block_kind(index) == Some(BlockKind::ToolCall) {
                        let arguments = stream.replace(&text);
                        self.partial.set_arguments(index, arguments);
                    }
                }
                StreamOutput::Ignored
            }
            StreamOp::KindDelta { kind, index, delta } => self.kind_delta(kind, index, delta),
            StreamOp::KindEnd { kind, index } => self.kind_end(kind, index),
        }
    }

    /// The delta-form `{kind}_delta` at `index` without building its JSON (the hot path of
    /// streaming): the same steps as `append_text`/`append_arguments`.
    #[inline]
    fn kind_delta(&mut self, kind: BlockKind, index: usize, delta: CompactString) -> StreamOutput {
        let step = match kind {
            BlockKind::Text | BlockKind::Thinking => {
                if self.partial.append_to_hot_text(kind, index, &delta) {
                    Step::Forward(None)
                } else if self.partial.block_kind(index) == Some(kind) {
                    self.partial.append_text(index, kind.block_type(), &delta);
                    Step::Forward(None)
                } else if kind == BlockKind::Text {
                    Step::Fail("Received text_delta for non-text content")
                } else {
                    Step::Fail("Received thinking_delta for non-thinking content")
                }
            }
            BlockKind::ToolCall => match self.streams.get_mut(&index) {
                Some(stream) if self.partial.block_kind(index) == Some(kind) => {
                    let arguments = stream.append(&delta);
                    self.partial.set_arguments(index, arguments);
                    Step::Forward(None)
                }
                _ => Step::Fail("Received toolcall_delta for non-toolCall content"),
            },
        };
        match step {
            Step::Forward(_) => StreamOutput::Update {
                event: UpdateEvent::delta(kind, index, delta),
            },
            Step::Fail(text) => {
                let message = self.failed(text);
                self.finish(message)
            }
            Step::Ignore => StreamOutput::Ignored,
        }
    }

    /// The delta-form `{kind}_end` at `index`, without building its JSON: the same steps as
    /// `end_text`/`end_tool_call` on an event with no other field.
    fn kind_end(&mut self, kind: BlockKind, index: usize) -> StreamOutput {
        let step = match kind {
            BlockKind::Text => self.end_text_at(Some(index), None, "text", TEXT_END_FAILURE),
            BlockKind::Thinking => {
                self.end_text_at(Some(index), None, "thinking", THINKING_END_FAILURE)
            }
            BlockKind::ToolCall => self.end_tool_call_at(Some(index), None),
        };
        match step {
            Step::Ignore => StreamOutput::Ignored,
            Step::Fail(text) => {
                let message = self.failed(text);
                self.finish(message)
            }
            // The end's extra field is the one its kind takes (`content`, `toolCall`).
            Step::Forward(_) => StreamOutput::Update {
                event: UpdateEvent::block_end(kind, index),
            },
        }
    }

    /// Ends the stream without a terminal event: `final_message` is the host's explicit final
    /// message, if any; otherwise the libagent rule of SPEC §3.5 applies
    /// (`Stream ended without a done or error event`). Returns `StreamOutput::Final`, or `Ignored`
    /// if the stream was already complete.
    pub fn end(&mut self, final_message: Option<Json>) -> StreamOutput {
        if self.complete {
            return StreamOutput::Ignored;
        }
        let message = match final_message {
            Some(message) => message,
            None => self.failed(ENDED_WITHOUT_TERMINAL),
        };
        self.finish(message)
    }

    /// The partial message now (as of the last update).
    pub fn partial(&self) -> &Partial {
        &self.partial
    }

    /// A snapshot of the partial message now (O(1)).
    pub fn snapshot(&self) -> PartialSnapshot {
        self.partial.snapshot()
    }

    /// True once a terminal event or `end` has been processed.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// True once the first `start` was accepted.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// The base partial of §3.7 step 1 (request's model, zero usage, pending, now).
    fn base_partial(&self) -> JsonMap {
        // The base is the same for every stream of a model but its timestamp: it is copied from
        // the last one built on this thread (a map's copy takes its hash index as it is; building
        // it hashes every key).
        thread_local! {
            static LAST: std::cell::RefCell<Option<([Option<Json>; 3], JsonMap)>> =
                const { std::cell::RefCell::new(None) };
        }
        let mut p = LAST.with(|last| {
            let mut last = last.borrow_mut();
            match last.as_ref() {
                Some((fields, base)) if *fields == self.model_fields => base.clone(),
                _ => {
                    let base = self.build_base_partial();
                    *last = Some((self.model_fields.clone(), base.clone()));
                    base
                }
            }
        });
        set_key(&mut p, "timestamp", now_ms());
        p
    }

    /// The base partial with a `null` timestamp.
    fn build_base_partial(&self) -> JsonMap {
        // Sized for its fields and the few the stream adds (no rehash while it is built).
        let mut p = JsonMap::with_capacity(12);
        p.insert("role".into(), "assistant".into());
        p.insert("stopReason".into(), "pending".into());
        p.insert("content".into(), Json::Array(Vec::new()));
        // A model field the host left out stays absent (JavaScript `undefined`).
        for ((target, _), value) in MODEL_FIELDS.iter().zip(&self.model_fields) {
            if let Some(value) = value {
                p.insert((*target).into(), value.clone());
            }
        }
        p.insert("usage".into(), zero_usage());
        p.insert("timestamp".into(), Json::Null);
        p
    }

    /// P, or a fresh base partial when no `start` was seen.
    fn current_or_base(&self) -> JsonMap {
        if self.started {
            match self.partial.to_json() {
                Json::Object(map) => map,
                _ => JsonMap::new(),
            }
        } else {
            self.base_partial()
        }
    }

    /// P with `stopReason: "error"` and `errorMessage` (rule 13 and the §3.5 end rule).
    fn failed(&self, error_message: &str) -> Json {
        let mut message = self.current_or_base();
        set_key(&mut message, "stopReason", "error".into());
        set_key(&mut message, "errorMessage", error_message.into());
        Json::Object(message)
    }

    fn finish(&mut self, message: Json) -> StreamOutput {
        self.complete = true;
        self.streams.clear();
        StreamOutput::Final {
            message,
            started: self.started,
        }
    }

    /// `done` / `error` (rules 11, 12 and 14).
    fn terminal(&mut self, kind: &str, mut event: JsonMap) -> StreamOutput {
        let carried = if kind == "done" { "message" } else { "error" };
        if let Some(message @ Json::Object(_)) = event.remove(carried) {
            return self.finish(message);
        }
        if let Some(Json::Object(partial)) = event.remove("partial") {
            if self.started {
                self.partial = Partial::from_map(partial);
            } else {
                // No `start`: the carried partial is still the best base for the final message.
                return self.finish_from(kind, &event, partial);
            }
        }
        let base = self.current_or_base();
        self.finish_from(kind, &event, base)
    }

    fn finish_from(&mut self, kind: &str, event: &JsonMap, mut message: JsonMap) -> StreamOutput {
        let default_reason = if kind == "done" { "stop" } else { "error" };
        let reason = event
            .field("reason")
            .and_then(Json::as_str)
            .unwrap_or(default_reason);
        set_key(&mut message, "stopReason", reason.into());
        let given = |key: &str| event.field(key).filter(|v| !v.is_null()).cloned();
        // [libagent] a delta-form `done` may carry `errorMessage` too (a finished response can
        // still report an error text, which the scripted model relies on).
        if let Some(text) = given("errorMessage") {
            set_key(&mut message, "errorMessage", text);
        }
        for key in ["usage", "providerThinkingLevel"] {
            if let Some(value) = given(key) {
                set_key(&mut message, key, value);
            }
        }
        self.finish(Json::Object(message))
    }

    /// An update carrying `partial`: P becomes a copy of it; the event is forwarded as given.
    /// Argument streams are still kept per index so later delta-form deltas work (rule 14).
    fn full_form_update(&mut self, kind: &str, mut event: JsonMap) -> StreamOutput {
        if let Some(Json::Object(partial)) = event.get_mut("partial").map(std::mem::take) {
            self.partial = Partial::from_map(partial);
        }
        if let Some(i) = content_index(&event) {
            match kind {
                "toolcall_start" => {
                    self.streams.insert(i, ArgumentStream::new());
                }
                "toolcall_delta" => {
                    if let (Some(stream), Some(delta)) = (
                        self.streams.get_mut(&i),
                        event.field("delta").and_then(Json::as_str),
                    ) {
                        stream.append(delta);
                    }
                }
                "toolcall_end" => {
                    self.streams.remove(&i);
                }
                _ => {}
            }
        }
        StreamOutput::Update {
            event: UpdateEvent::new(Json::Object(event)),
        }
    }

    /// Rules 2–10 of §3.7.
    fn delta_form_update(&mut self, kind: &str, event: JsonMap) -> StreamOutput {
        let step = match kind {
            "text_start" => self.start_block(&event, text_block("text", "text")),
            "thinking_start" => self.start_block(&event, text_block("thinking", "thinking")),
            "toolcall_start" => self.start_tool_call(&event),
            "text_delta" => self.append_text(
                &event,
                "text",
                "text",
                "Received text_delta for non-text content",
            ),
            "thinking_delta" => self.append_text(
                &event,
                "thinking",
                "thinking",
                "Received thinking_delta for non-thinking content",
            ),
            "text_end" => self.end_text_at(
                content_index(&event),
                Some(&event),
                "text",
                TEXT_END_FAILURE,
            ),
            "thinking_end" => self.end_text_at(
                content_index(&event),
                Some(&event),
                "thinking",
                THINKING_END_FAILURE,
            ),
            "toolcall_delta" => self.append_arguments(&event),
            _ => self.end_tool_call_at(content_index(&event), Some(&event)),
        };
        match step {
            Step::Ignore => StreamOutput::Ignored,
            Step::Fail(text) => {
                let message = self.failed(text);
                self.finish(message)
            }
            Step::Forward(extra) => self.delta_form_forward(kind, event, extra),
        }
    }

    /// The full-form event forwarded for an accepted delta-form update.
    fn delta_form_forward(
        &mut self,
        kind: &str,
        mut event: JsonMap,
        extra: Option<Extra>,
    ) -> StreamOutput {
        // The delta form's input-only fields are consumed here: the forwarded event has the
        // reference shape (§3.7, last paragraph).
        let input_only: &[&str] = match kind {
            "toolcall_start" => &["id", "toolName"],
            "text_end" | "thinking_end" => &["contentSignature", "redacted"],
            _ => &[],
        };
        for key in input_only {
            event.shift_remove(*key);
        }
        let event = Json::Object(event);
        let event = match extra {
            None => UpdateEvent::new(event),
            Some(Extra::Content { index, field }) => {
                UpdateEvent::with_text(event, "content", index, field)
            }
            Some(Extra::ToolCall { index }) => UpdateEvent::with_block(event, "toolCall", index),
        };
        StreamOutput::Update { event }
    }

    /// Whether the block at `contentIndex` is an object of type `kind`.
    fn block_is(&self, event: &JsonMap, kind: &str) -> bool {
        content_index(event).is_some_and(|i| self.partial.block_is(i, kind))
    }

    /// `P.content[i] = block` (rules 2, 5, 8); returns the index used.
    fn place_block(&mut self, event: &JsonMap, block: JsonMap) -> Option<usize> {
        self.place_block_at(content_index(event)?, block)
    }

    /// `place_block` at index `i`.
    fn place_block_at(&mut self, i: usize, block: JsonMap) -> Option<usize> {
        if i > self.partial.block_count() + MAX_PADDING {
            return None;
        }
        self.partial.place_block(i, block);
        Some(i)
    }

    fn start_block(&mut self, event: &JsonMap, block: JsonMap) -> Step {
        match self.place_block(event, block) {
            Some(_) => Step::Forward(None),
            None => Step::Ignore,
        }
    }

    fn start_tool_call(&mut self, event: &JsonMap) -> Step {
        let mut block = JsonMap::new();
        block.insert("type".into(), "toolCall".into());
        for (target, source) in [("id", "id"), ("name", "toolName")] {
            if let Some(value) = event.field(source) {
                block.insert(target.into(), value.clone());
            }
        }
        block.insert("arguments".into(), Json::Object(JsonMap::new()));
        match self.place_block(event, block) {
            Some(i) => {
                self.streams.insert(i, ArgumentStream::new());
                Step::Forward(None)
            }
            None => Step::Ignore,
        }
    }

    fn append_text(
        &mut self,
        event: &JsonMap,
        kind: &str,
        field: &'static str,
        failure: &'static str,
    ) -> Step {
        let delta = event.field("delta").and_then(Json::as_str).unwrap_or("");
        if !self.block_is(event, kind) {
            return Step::Fail(failure);
        }
        if let Some(i) = content_index(event) {
            self.partial.append_text(i, field, delta);
        }
        Step::Forward(None)
    }

    /// `text_end`/`thinking_end` at `index` (`None`: no usable `contentIndex`), with the
    /// fields of `event` when it is JSON.
    fn end_text_at(
        &mut self,
        index: Option<usize>,
        event: Option<&JsonMap>,
        kind: &'static str,
        failure: &'static str,
    ) -> Step {
        let Some(i) = index else {
            return Step::Fail(failure);
        };
        if !self.partial.block_is(i, kind) {
            return Step::Fail(failure);
        }
        if let Some(event) = event {
            self.end_text_fields(i, event, kind);
        }
        Step::Forward(Some(Extra::Content {
            index: i,
            field: kind,
        }))
    }

    fn append_arguments(&mut self, event: &JsonMap) -> Step {
        const FAILURE: &str = "Received toolcall_delta for non-toolCall content";
        let Some(i) = content_index(event) else {
            return Step::Fail(FAILURE);
        };
        if !self.partial.block_is(i, "toolCall") {
            return Step::Fail(FAILURE);
        }
        let Some(stream) = self.streams.get_mut(&i) else {
            return Step::Fail(FAILURE);
        };
        let delta = event.field("delta").and_then(Json::as_str).unwrap_or("");
        let arguments = stream.append(delta);
        self.partial.set_arguments(i, arguments);
        Step::Forward(None)
    }

    /// What a JSON `text_end`/`thinking_end` may carry: the whole text, a signature, and
    /// (thinking) whether it was redacted.
    fn end_text_fields(&mut self, i: usize, event: &JsonMap, kind: &'static str) {
        let signature = if kind == "text" {
            "textSignature"
        } else {
            "thinkingSignature"
        };
        if let Some(Json::String(content)) = event.field("content") {
            self.partial.set_text(i, kind, content);
        }
        if let Some(Json::String(sig)) = event.field("contentSignature") {
            self.partial
                .set_block_field(i, signature, sig.as_str().into());
        }
        if kind == "thinking" {
            if let Some(Json::Bool(redacted)) = event.field("redacted") {
                self.partial
                    .set_block_field(i, "redacted", (*redacted).into());
            }
        }
    }

    /// `toolcall_end` at `index` (`None`: no usable `contentIndex`), with the `toolCall` of
    /// `event` when it is JSON.
    fn end_tool_call_at(&mut self, index: Option<usize>, event: Option<&JsonMap>) -> Step {
        let Some(i) = index else {
            return Step::Ignore;
        };
        if !self.partial.block_is(i, "toolCall") {
            return Step::Ignore;
        }
        let stream = self.streams.remove(&i);
        match (event.and_then(|e| e.field("toolCall")), stream) {
            (Some(Json::Object(given)), _) => {
                for (key, value) in given {
                    self.partial.set_block_field(i, key, value.clone());
                }
            }
            (_, Some(stream)) => {
                let parsed = stream.finish();
                self.partial
                    .set_block_field(i, "arguments", parsed.arguments);
                if let Some(error) = parsed.error {
                    self.partial
                        .set_block_field(i, "argumentsError", error.into());
                }
            }
            (_, None) => {}
        }
        Step::Forward(Some(Extra::ToolCall { index: i }))
    }
}

const TEXT_END_FAILURE: &str = "Received text_end for non-text content";
const THINKING_END_FAILURE: &str = "Received thinking_end for non-thinking content";

/// `{ "type": kind, field: "" }`.
fn text_block(kind: &str, field: &str) -> JsonMap {
    let mut block = JsonMap::with_capacity(2);
    block.insert("type".into(), kind.into());
    block.insert(field.into(), "".into());
    block
}

/// `contentIndex` as a usable index: a non-negative integer (integral doubles included).
fn content_index(event: &JsonMap) -> Option<usize> {
    let n = event.field("contentIndex")?.as_number()?;
    if let Some(i) = n.as_u64() {
        return usize::try_from(i).ok();
    }
    let f = n.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0).then_some(f as usize)
}

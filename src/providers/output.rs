//! The provider's side of the stream protocol: pi-ai's `output` message, built through typed
//! pushes ([`StreamOp`]) so that every event costs O(its own size) and the partial of each event
//! is the one the agent assembles (SPEC §3.4).

use std::collections::HashMap;
use std::sync::Arc;

use crate::json::{json, now_ms, number, Json, JsonMap};
use crate::message::zero_usage;

use super::limits::truthy;
pub use crate::stream::BlockKind;
use crate::stream::{StreamClosed, StreamOp, StreamSender};

/// How far a provider may run ahead of the run's task (see [`Output::keep_pace`]): the items the
/// run takes before it gives its thread back.
const KEEP_PACE_ITEMS: usize = crate::stream::STREAK as usize;

/// The agent stopped consuming (run over, agent freed): the provider gives up the request.
pub type Pushed = Result<(), StreamClosed>;

/// Token counts of a response (pi-ai's `Usage` without cost, which [`Usage::to_json`] adds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// Anthropic's 1-hour share of `cache_write`.
    pub cache_write_1h: Option<f64>,
    /// Reasoning tokens, when the provider reports them.
    pub reasoning: Option<f64>,
    pub total_tokens: f64,
}

impl Usage {
    /// The usage JSON with pi-ai's cost (`calculateCost`) for `model`.
    pub fn to_json(&self, model: &Json) -> Json {
        let rates = cost_rates(model, self.input + self.cache_read + self.cache_write);
        let rate = |key: &str| rates.get(key).and_then(Json::as_f64).unwrap_or(0.0);
        let long_write = self.cache_write_1h.unwrap_or(0.0);
        let short_write = self.cache_write - long_write;
        let input = rate("input") / 1_000_000.0 * self.input;
        let output = rate("output") / 1_000_000.0 * self.output;
        let cache_read = rate("cacheRead") / 1_000_000.0 * self.cache_read;
        let cache_write =
            (rate("cacheWrite") * short_write + rate("input") * 2.0 * long_write) / 1_000_000.0;
        let total = input + output + cache_read + cache_write;
        let mut usage = JsonMap::new();
        usage.insert("input".into(), number(self.input));
        usage.insert("output".into(), number(self.output));
        usage.insert("cacheRead".into(), number(self.cache_read));
        usage.insert("cacheWrite".into(), number(self.cache_write));
        if let Some(long) = self.cache_write_1h {
            usage.insert("cacheWrite1h".into(), number(long));
        }
        if let Some(reasoning) = self.reasoning {
            usage.insert("reasoning".into(), number(reasoning));
        }
        usage.insert("totalTokens".into(), number(self.total_tokens));
        usage.insert(
            "cost".into(),
            json!({"input": number(input), "output": number(output),
                "cacheRead": number(cache_read), "cacheWrite": number(cache_write),
                "total": number(total), "totalFromProvider": false}),
        );
        Json::Object(usage)
    }
}

/// An OpenRouter model (provider `openrouter` or a base URL on openrouter.ai): its streamed
/// usage may carry the billed cost.
pub fn is_openrouter(model: &Json) -> bool {
    model.get("provider").and_then(Json::as_str) == Some("openrouter")
        || model
            .get("baseUrl")
            .and_then(Json::as_str)
            .is_some_and(|url| url.contains("openrouter.ai"))
}

/// OpenRouter's billed total (`applyOpenRouterReportedCost`) when the usage reports a complete,
/// valid one.
pub fn openrouter_total(reported: &Json) -> Option<f64> {
    let valid = |v: Option<&Json>| {
        v.and_then(Json::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0)
    };
    let cost = valid(reported.get("cost"))?;
    match reported.get("is_byok") {
        Some(Json::Bool(false)) => Some(cost),
        Some(Json::Bool(true)) => {
            let details = reported.get("cost_details").filter(|d| truthy(d))?;
            let upstream = match details.get("upstream_inference_cost") {
                Some(Json::Null) => {
                    valid(details.get("upstream_inference_prompt_cost"))?
                        + valid(details.get("upstream_inference_completions_cost"))?
                }
                other => valid(other)?,
            };
            Some(cost + upstream)
        }
        _ => None,
    }
}

/// Replaces the catalog total of a usage JSON (from [`Usage::to_json`]) by a billed one.
pub fn set_billed_total(usage: &mut Json, total: f64) {
    usage["cost"]["total"] = number(total);
    usage["cost"]["totalFromProvider"] = Json::Bool(true);
}

/// `model.cost`, or the tier with the highest threshold below the input size.
fn cost_rates(model: &Json, input_tokens: f64) -> JsonMap {
    let base = model
        .get("cost")
        .and_then(Json::as_object)
        .cloned()
        .unwrap_or_default();
    let mut rates = base.clone();
    let mut matched = -1.0;
    for tier in base
        .get("tiers")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let above = tier
            .get("inputTokensAbove")
            .and_then(Json::as_f64)
            .unwrap_or(f64::NAN);
        if input_tokens > above && above > matched {
            if let Some(tier) = tier.as_object() {
                rates = tier.clone();
                matched = above;
            }
        }
    }
    rates
}

/// Most tool calls one response may hold. Models emit a handful per turn (tens at the very most:
/// OpenAI takes at most 128 tools per request), so a thousand is never reached by a real answer,
/// while a hostile stream cannot open millions of blocks, each an event, a message block and
/// later a tool run.
pub(crate) const MAX_TOOL_CALLS: usize = 1_000;

/// Most argument text one tool call may stream (bytes). The largest real arguments are whole
/// files written through a tool (tens to hundreds of KB); 8 MiB leaves room for those many
/// times over while bounding what a stream can pin in one block (the SSE layer caps one event,
/// not the sum of a call's events).
pub(crate) const MAX_TOOL_CALL_ARGUMENT_BYTES: usize = 8 << 20;

/// Counts a response's tool calls and each one's argument text against the caps above; a
/// failure is the stream's error text, naming the limit.
#[derive(Debug, Default)]
pub struct ToolCallLimits {
    calls: usize,
    /// Argument bytes so far, by content index.
    argument_bytes: HashMap<usize, usize>,
}

impl ToolCallLimits {
    /// Before a tool-call block opens.
    pub fn open(&mut self) -> Result<(), String> {
        if self.calls >= MAX_TOOL_CALLS {
            return Err(format!(
                "The model sent more than {MAX_TOOL_CALLS} tool calls in one response (limit for tool calls per response)."
            ));
        }
        self.calls += 1;
        Ok(())
    }

    /// Before `text` is appended to the arguments of the tool call at `index`.
    pub fn arguments(&mut self, index: usize, text: &str) -> Result<(), String> {
        let bytes = self.argument_bytes.entry(index).or_default();
        *bytes += text.len();
        if *bytes > MAX_TOOL_CALL_ARGUMENT_BYTES {
            return Err(format!(
                "The model sent more than {MAX_TOOL_CALL_ARGUMENT_BYTES} bytes of arguments for one tool call (limit for one tool call's arguments)."
            ));
        }
        Ok(())
    }
}

/// The message being streamed to the agent.
pub struct Output {
    sender: StreamSender,
    model: Arc<Json>,
    started: bool,
    /// Kind of each block, and whether its `*_end` is still due.
    blocks: Vec<(BlockKind, bool)>,
    /// Top-level fields the message has from the start (see [`Output::preset`]).
    preset: Vec<(&'static str, Json)>,
}

impl Output {
    pub fn new(sender: StreamSender, model: &Arc<Json>) -> Self {
        Output {
            sender,
            model: Arc::clone(model),
            started: false,
            blocks: Vec::new(),
            preset: Vec::new(),
        }
    }

    /// A top-level field set before `start` (pi-ai sets some on its output message before the
    /// request is sent): part of the `start` partial, and of the message of a failure before it.
    pub fn preset(&mut self, key: &'static str, value: Json) {
        match self.preset.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.preset.push((key, value)),
        }
    }

    /// Lets the run's task take what was pushed once it is [`KEEP_PACE_ITEMS`] behind. Body
    /// already received is read without waiting, so a server that sends a long answer at once
    /// would otherwise have all of it decoded and queued before the run took the first event;
    /// the run takes at most that many items before it lets this task on again.
    pub async fn keep_pace(&self) {
        if self.sender.backlog() >= KEEP_PACE_ITEMS {
            tokio::task::yield_now().await;
        }
    }

    /// `start`: the empty message of pi-ai (`stopReason: "pending"`, zero usage, now).
    pub fn start(&mut self) -> Pushed {
        let partial = self.base_message();
        self.started = true;
        self.sender
            .push(json!({"type": "start", "partial": Json::Object(partial)}))
    }

    /// pi-ai's initial output message, with the preset fields.
    fn base_message(&self) -> JsonMap {
        let mut partial = JsonMap::new();
        partial.insert("role".into(), "assistant".into());
        partial.insert("content".into(), Json::Array(Vec::new()));
        for (target, source) in [("api", "api"), ("provider", "provider"), ("model", "id")] {
            if let Some(value) = self.model.get(source) {
                partial.insert(target.into(), value.clone());
            }
        }
        partial.insert("usage".into(), zero_usage());
        partial.insert("stopReason".into(), "pending".into());
        partial.insert("timestamp".into(), now_ms());
        for (key, value) in &self.preset {
            partial.insert((*key).into(), value.clone());
        }
        partial
    }

    /// Sets a top-level field of the message (no event).
    pub fn set(&mut self, key: &'static str, value: Json) -> Pushed {
        self.sender.push_op(StreamOp::SetFields(vec![(key, value)]))
    }

    /// Sets the usage with pi-ai's cost, and OpenRouter's billed total when the model is
    /// OpenRouter's and `reported` (the raw usage) has complete accounting.
    pub fn set_usage(&mut self, usage: &Usage, reported: &Json) -> Pushed {
        let mut json = usage.to_json(&self.model);
        if let Some(total) = Some(reported)
            .filter(|_| is_openrouter(&self.model))
            .and_then(openrouter_total)
        {
            set_billed_total(&mut json, total);
        }
        self.set("usage", json)
    }

    /// Appends `text` to the string field `key` of block `index` (no event).
    pub fn append_block_field(&mut self, index: usize, key: &'static str, text: &str) -> Pushed {
        self.sender.push_op(StreamOp::AppendBlockField {
            index,
            key,
            text: text.into(),
        })
    }

    /// Adds `block` at the end of the content and emits its `*_start`; returns its index.
    pub fn open(&mut self, kind: BlockKind, block: JsonMap) -> Result<usize, StreamClosed> {
        let index = self.blocks.len();
        self.blocks.push((kind, true));
        self.sender.push_op(StreamOp::StartBlock {
            index,
            block: Box::new(block),
        })?;
        Ok(index)
    }

    pub fn kind(&self, index: usize) -> Option<BlockKind> {
        self.blocks.get(index).map(|(kind, _)| *kind)
    }

    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Appends to block `index` (text, thinking or tool-call argument text) with its `*_delta`;
    /// the block's kind is known here, so the agent does not look it up per delta.
    pub fn delta(&mut self, index: usize, delta: &str) -> Pushed {
        let delta = delta.into();
        match self.kind(index) {
            Some(kind) => self
                .sender
                .push_op(StreamOp::KindDelta { kind, index, delta }),
            None => self.sender.push_op(StreamOp::Delta { index, delta }),
        }
    }

    /// Replaces the argument text of tool-call block `index` (no event): the partial arguments
    /// and the final parse then come from `text`.
    pub fn replace_arguments(&mut self, index: usize, text: &str) -> Pushed {
        self.sender.push_op(StreamOp::ReplaceArguments {
            index,
            text: text.into(),
        })
    }

    /// Sets a field of block `index` (no event).
    pub fn set_block_field(&mut self, index: usize, key: &'static str, value: Json) -> Pushed {
        self.sender.push_op(StreamOp::SetBlockField {
            index,
            key,
            value: Box::new(value),
        })
    }

    /// Emits block `index`'s `*_end` (once).
    pub fn close(&mut self, index: usize) -> Pushed {
        match self.blocks.get_mut(index) {
            Some((_, open)) if *open => {
                *open = false;
                self.sender.push_op(StreamOp::EndBlock { index })
            }
            _ => Ok(()),
        }
    }

    /// Emits the `*_end` of every block still open, in content order.
    pub fn close_all(&mut self) -> Pushed {
        for index in 0..self.blocks.len() {
            self.close(index)?;
        }
        Ok(())
    }

    /// `done` with `reason` (the message's stop reason).
    pub fn done(self, reason: &str) -> Pushed {
        self.sender.push(json!({"type": "done", "reason": reason}))
    }

    /// `error` with reason `aborted` or `error` and the message's `errorMessage`.
    pub fn fail(self, aborted: bool, message: &str) -> Pushed {
        let reason = if aborted { "aborted" } else { "error" };
        let capped = cap_error_message(message);
        let message: &str = &capped;
        if !self.started && !self.preset.is_empty() {
            // No partial to finish from: the whole message, so that the preset fields are kept.
            let mut error = self.base_message();
            error.insert("stopReason".into(), reason.into());
            error.insert("errorMessage".into(), message.into());
            let event = json!({"type": "error", "reason": reason, "error": Json::Object(error)});
            return self.sender.push(event);
        }
        self.sender
            .push(json!({"type": "error", "reason": reason, "errorMessage": message}))
    }
}

/// The longest `errorMessage` kept (bytes); a server's text beyond it is cut.
pub(crate) const MAX_ERROR_MESSAGE_BYTES: usize = 16 * 1024;

/// `message`, cut at a character boundary past [`MAX_ERROR_MESSAGE_BYTES`] with a note naming
/// the limit.
pub fn cap_error_message(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_ERROR_MESSAGE_BYTES {
        return message.into();
    }
    let mut end = MAX_ERROR_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}... [errorMessage cut at {MAX_ERROR_MESSAGE_BYTES} bytes]",
        &message[..end]
    )
    .into()
}

/// What ends the handling of a chunk early (every provider's response reader).
pub(super) enum Stop {
    /// The stream fails with this text.
    Fail(String),
    /// The agent stopped consuming.
    Closed(StreamClosed),
}

impl From<StreamClosed> for Stop {
    fn from(closed: StreamClosed) -> Self {
        Stop::Closed(closed)
    }
}

/// JavaScript's `String(value)` for the values a delta or error field can hold (`undefined` when
/// absent), as pi-ai's texts render them.
pub(super) fn js_string(value: Option<&Json>) -> String {
    match value {
        None => "undefined".into(),
        Some(Json::String(text)) => text.clone(),
        Some(Json::Object(_)) => "[object Object]".into(),
        Some(Json::Array(items)) => items
            .iter()
            .map(|item| match item {
                Json::Null => String::new(),
                other => js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => crate::json::to_string(other),
    }
}

/// Ends a reader's stream as `run` does (with `failure`, else closing the open blocks and done
/// with `stop`) and returns what the receiver got ([`received`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn ended(
    out: Output,
    failure: Option<String>,
    receiver: crate::stream::StreamReceiver,
) -> Vec<Json> {
    let mut out = out;
    let _ = match failure {
        Some(text) => out.fail(false, &text),
        None => out.close_all().and_then(|()| out.done("stop")),
    };
    received(receiver)
}

/// Everything a stream's receiver got, for the readers' tests: the start's partial and the final
/// message without their clock fields (`timestamp`, `durationMs`), each update as its JSON.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn received(mut receiver: crate::stream::StreamReceiver) -> Vec<Json> {
    use crate::stream::StreamOutput;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut seen = Vec::new();
        loop {
            match receiver.next().await {
                StreamOutput::Start { partial } => {
                    let mut partial = partial.to_json();
                    partial.as_object_mut().unwrap().remove("timestamp");
                    seen.push(partial)
                }
                StreamOutput::Update { event } => {
                    seen.push(event.to_json(&receiver.partial().snapshot()))
                }
                StreamOutput::Final { mut message, .. } => {
                    let fields = message.as_object_mut().unwrap();
                    fields.remove("timestamp");
                    fields.remove("durationMs");
                    seen.push(message);
                    return seen;
                }
                StreamOutput::Ignored => {}
                StreamOutput::FunctionFailed(error) => panic!("{error}"),
            }
        }
    })
}

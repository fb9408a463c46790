//! Agent events (SPEC §8.1) and their JSON shapes.
//!
//! Events are immutable snapshots (SPEC §0.4.8): messages are shared committed values. Their JSON is built only on request, in the
//! reference's `full` shape or the `lean` shape (no whole partial message on `message_update`).

use std::borrow::Cow;
use std::fmt::Write;

use crate::json::{json, set_key, to_string, write_json, write_string, Json, JsonMap};
use crate::message::{to_json_vec, write_json_array, Message};
use crate::stream::{BlockKind, PartialSnapshot, UpdateEvent};

#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart,
    TurnStart,
    MessageStart {
        message: Message,
    },
    /// `event` is the full-form assistant stream event whose `partial` key is a placeholder;
    /// `partial` is the message as of this event (JSON built on demand). Both are O(1) to keep.
    MessageUpdate {
        event: UpdateEvent,
        partial: PartialSnapshot,
    },
    MessageEnd {
        message: Message,
    },
    ToolExecutionStart {
        tool_call_id: Json,
        tool_name: Json,
        args: Json,
    },
    ToolExecutionUpdate {
        tool_call_id: Json,
        tool_name: Json,
        args: Json,
        partial_result: Json,
    },
    ToolExecutionEnd {
        tool_call_id: Json,
        tool_name: Json,
        result: Json,
        is_error: bool,
        duration_ms: Option<u64>,
    },
    TurnEnd {
        message: Message,
        tool_results: Vec<Message>,
    },
    AgentEnd {
        messages: Vec<Message>,
    },
    /// A compaction began (`reason`: "manual", "threshold" or "overflow").
    CompactionStart {
        reason: &'static str,
    },
    /// A compaction ended: `result` (`{summary, firstKeptEntryId, tokensBefore,
    /// estimatedTokensAfter, details}`) when it was applied; else `errorMessage` when it failed,
    /// or `aborted` when it was aborted or cancelled (transcript and session unchanged).
    CompactionEnd {
        reason: &'static str,
        result: Option<Json>,
        aborted: bool,
        will_retry: bool,
        error_message: Option<String>,
    },
    /// A retryable model error: the failed attempt is hidden and retried after `delay_ms`.
    AutoRetryStart {
        attempt: u64,
        max_attempts: u64,
        delay_ms: u64,
        error_message: String,
    },
    /// Retrying ended: a later attempt succeeded, retries ran out (`final_error`), or the wait
    /// was aborted.
    AutoRetryEnd {
        success: bool,
        attempt: u64,
        final_error: Option<String>,
    },
}

/// Which JSON shape to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventShape {
    /// The reference's event object.
    Full,
    /// `message_update` without `message` and without the event's `partial`.
    Lean,
}

impl AgentEvent {
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::CompactionStart { .. } => "compaction_start",
            AgentEvent::CompactionEnd { .. } => "compaction_end",
            AgentEvent::AutoRetryStart { .. } => "auto_retry_start",
            AgentEvent::AutoRetryEnd { .. } => "auto_retry_end",
        }
    }

    /// The message carried by `message_start`/`message_update`/`message_end`/`turn_end`.
    pub fn message(&self) -> Option<Cow<'_, Json>> {
        match self {
            AgentEvent::MessageStart { message }
            | AgentEvent::MessageEnd { message }
            | AgentEvent::TurnEnd { message, .. } => Some(Cow::Borrowed(message.json())),
            AgentEvent::MessageUpdate { partial, .. } => Some(Cow::Owned(partial.to_json())),
            _ => None,
        }
    }

    /// The `delta` text of a `message_update` whose stream event is a `*_delta`.
    pub fn delta(&self) -> Option<&str> {
        match self {
            AgentEvent::MessageUpdate { event, .. } => event.delta_text(),
            _ => None,
        }
    }

    /// The `assistantMessageEvent.type` of a `message_update`.
    pub fn update_type(&self) -> Option<&str> {
        match self {
            AgentEvent::MessageUpdate { event, .. } => event.kind(),
            _ => None,
        }
    }

    /// `to_json(shape)` as text, written without building the event's JSON where that is
    /// simple: committed messages use their cached text, a `message_update` renders its partial
    /// message once (the full shape holds it twice), and the lean shape of a typed text or
    /// thinking delta (the most frequent event of a stream) is a few string pushes.
    pub fn to_json_text(&self, shape: EventShape) -> String {
        let text = self.write_text(shape);
        debug_assert_eq!(text, to_string(&self.to_json(shape)));
        text
    }

    fn write_text(&self, shape: EventShape) -> String {
        let mut out = String::with_capacity(128);
        out.push_str(r#"{"type":""#);
        out.push_str(self.type_name());
        out.push('"');
        match (self, shape) {
            (AgentEvent::MessageUpdate { event, partial }, EventShape::Full) => {
                let mut message = String::with_capacity(256);
                partial.write_text(&mut message);
                out.reserve(2 * message.len() + 64);
                out.push_str(r#","message":"#);
                out.push_str(&message);
                out.push_str(r#","assistantMessageEvent":"#);
                event.write_full_text(&mut out, partial, &message);
            }
            (AgentEvent::MessageUpdate { event, .. }, EventShape::Lean) => {
                match event.typed_delta() {
                    Some((kind @ (BlockKind::Text | BlockKind::Thinking), index, delta)) => {
                        out.push_str(r#","assistantMessageEvent":{"type":""#);
                        out.push_str(kind.delta_event());
                        let _ = write!(out, r#"","contentIndex":{index},"delta":"#);
                        write_string(&mut out, delta);
                        out.push('}');
                    }
                    _ => {
                        out.clear();
                        write_json(&mut out, &self.to_json(shape));
                        return out;
                    }
                }
            }
            _ => self.for_each_field(|key, field| {
                out.push(',');
                write_string(&mut out, key);
                out.push(':');
                field.write_text(&mut out);
            }),
        }
        out.push('}');
        out
    }

    /// The fields after `type` of every event but `message_update`, in the reference's order.
    fn for_each_field<'a>(&'a self, mut f: impl FnMut(&'static str, Field<'a>)) {
        match self {
            AgentEvent::AgentStart | AgentEvent::TurnStart | AgentEvent::MessageUpdate { .. } => {}
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                f("message", Field::Message(message));
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                f("toolCallId", Field::Value(tool_call_id));
                f("toolName", Field::Value(tool_name));
                f("args", Field::Value(args));
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => {
                f("toolCallId", Field::Value(tool_call_id));
                f("toolName", Field::Value(tool_name));
                f("args", Field::Value(args));
                f("partialResult", Field::Value(partial_result));
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => {
                f("toolCallId", Field::Value(tool_call_id));
                f("toolName", Field::Value(tool_name));
                f("result", Field::Value(result));
                f("isError", Field::Bool(*is_error));
                if let Some(ms) = duration_ms {
                    f("durationMs", Field::Number(*ms));
                }
            }
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => {
                f("message", Field::Message(message));
                f("toolResults", Field::Messages(tool_results));
            }
            AgentEvent::AgentEnd { messages } => f("messages", Field::Messages(messages)),
            AgentEvent::CompactionStart { reason } => f("reason", Field::Text(reason)),
            AgentEvent::CompactionEnd {
                reason,
                result,
                aborted,
                will_retry,
                error_message,
            } => {
                f("reason", Field::Text(reason));
                if let Some(result) = result {
                    f("result", Field::Value(result));
                }
                f("aborted", Field::Bool(*aborted));
                f("willRetry", Field::Bool(*will_retry));
                if let Some(error) = error_message {
                    f("errorMessage", Field::Text(error));
                }
            }
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                f("attempt", Field::Number(*attempt));
                f("maxAttempts", Field::Number(*max_attempts));
                f("delayMs", Field::Number(*delay_ms));
                f("errorMessage", Field::Text(error_message));
            }
            AgentEvent::AutoRetryEnd {
                success,
                attempt,
                final_error,
            } => {
                f("success", Field::Bool(*success));
                f("attempt", Field::Number(*attempt));
                if let Some(error) = final_error {
                    f("finalError", Field::Text(error));
                }
            }
        }
    }

    pub fn to_json(&self, shape: EventShape) -> Json {
        let mut m = JsonMap::new();
        m.insert("type".into(), json!(self.type_name()));
        if let AgentEvent::MessageUpdate { event, partial } = self {
            let mut assistant_event = event.to_json(partial);
            match shape {
                EventShape::Full => {
                    let message = partial.to_json();
                    if let Some(object) = assistant_event.as_object_mut() {
                        set_key(object, "partial", message.clone());
                    }
                    m.insert("message".into(), message);
                }
                EventShape::Lean => {
                    if let Some(object) = assistant_event.as_object_mut() {
                        object.shift_remove("partial");
                    }
                    if let Some(arguments) = lean_tool_arguments(event, partial) {
                        m.insert("arguments".into(), arguments);
                    }
                }
            }
            m.insert("assistantMessageEvent".into(), assistant_event);
        }
        self.for_each_field(|key, field| {
            m.insert(key.into(), field.to_json());
        });
        Json::Object(m)
    }
}

/// A field value of an event, borrowed.
enum Field<'a> {
    Value(&'a Json),
    Message(&'a Message),
    Messages(&'a [Message]),
    Bool(bool),
    Number(u64),
    Text(&'a str),
}

impl Field<'_> {
    fn to_json(&self) -> Json {
        match self {
            Field::Value(value) => (*value).clone(),
            Field::Message(message) => message.json().clone(),
            Field::Messages(messages) => Json::Array(to_json_vec(messages)),
            Field::Bool(b) => json!(b),
            Field::Number(n) => json!(n),
            Field::Text(text) => json!(text),
        }
    }

    /// Appends the text of `to_json()`; messages from their cached texts.
    fn write_text(&self, out: &mut String) {
        match self {
            Field::Value(value) => write_json(out, value),
            Field::Message(message) => out.push_str(message.text()),
            Field::Messages(messages) => write_json_array(out, messages),
            Field::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Field::Number(n) => {
                let _ = write!(out, "{n}");
            }
            Field::Text(text) => write_string(out, text),
        }
    }
}

/// A `toolcall_delta`'s block arguments, kept in the lean shape: built from the block's parsed
/// arguments, so O(size of the arguments) per event (the text itself is that long).
fn lean_tool_arguments(event: &UpdateEvent, partial: &PartialSnapshot) -> Option<Json> {
    if event.kind() != Some("toolcall_delta") {
        return None;
    }
    partial.block_field(event.content_index()?, "arguments")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::assemble::{Assembler, StreamOutput};
    use crate::stream::StreamOp;

    /// Every event's text, in both shapes, is the rendering of its JSON: messages from their
    /// cached texts, tool fields with escapes, optional and boolean fields.
    #[test]
    fn text_of_every_event_is_its_rendered_json() {
        let user = Message::new(json!({"role": "user", "content": "a \"q\"\n", "timestamp": 1}));
        let result = Message::new(json!({"role": "toolResult", "toolCallId": "c", "content": []}));
        let id = json!("c\u{1}");
        let name = json!("t");
        let args = json!({"x": [1, 2.5, null], "y": "é"});
        let events = [
            AgentEvent::AgentStart,
            AgentEvent::TurnStart,
            AgentEvent::MessageStart {
                message: user.clone(),
            },
            AgentEvent::MessageEnd {
                message: user.clone(),
            },
            AgentEvent::ToolExecutionStart {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: args.clone(),
            },
            AgentEvent::ToolExecutionUpdate {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: args.clone(),
                partial_result: json!({"details": 1}),
            },
            AgentEvent::ToolExecutionEnd {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                result: json!({"content": []}),
                is_error: true,
                duration_ms: Some(12),
            },
            AgentEvent::ToolExecutionEnd {
                tool_call_id: id,
                tool_name: name,
                result: Json::Null,
                is_error: false,
                duration_ms: None,
            },
            AgentEvent::TurnEnd {
                message: user.clone(),
                tool_results: vec![result.clone(), result.clone()],
            },
            AgentEvent::TurnEnd {
                message: user.clone(),
                tool_results: vec![],
            },
            AgentEvent::AgentEnd {
                messages: vec![user, result],
            },
            AgentEvent::CompactionStart { reason: "manual" },
            AgentEvent::CompactionEnd {
                reason: "overflow",
                result: Some(json!({"summary": "s \"q\"", "tokensBefore": 3})),
                aborted: false,
                will_retry: true,
                error_message: None,
            },
            AgentEvent::CompactionEnd {
                reason: "threshold",
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some("failed\n".into()),
            },
            AgentEvent::AutoRetryStart {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 2000,
                error_message: "529 \"overloaded\"".into(),
            },
            AgentEvent::AutoRetryEnd {
                success: false,
                attempt: 2,
                final_error: Some("x".into()),
            },
            AgentEvent::AutoRetryEnd {
                success: true,
                attempt: 1,
                final_error: None,
            },
        ];
        for event in events {
            for shape in [EventShape::Lean, EventShape::Full] {
                assert_eq!(event.write_text(shape), to_string(&event.to_json(shape)));
            }
        }
    }

    /// The directly written lean text of a typed delta is the generic rendering's, escapes
    /// included; other shapes and kinds take the generic path.
    #[test]
    fn lean_text_of_a_typed_delta_is_the_rendered_json() {
        let mut assembler = Assembler::new(&json!({"api": "a", "provider": "p", "id": "m"}));
        assembler.accept(json!({"type": "start"}));
        let start = |kind: BlockKind, index| StreamOp::StartBlock {
            index,
            block: Box::new(
                match kind {
                    BlockKind::Text => json!({"type": "text", "text": ""}),
                    _ => json!({"type": "thinking", "thinking": ""}),
                }
                .as_object()
                .unwrap()
                .clone(),
            ),
        };
        assembler.apply(start(BlockKind::Text, 0));
        assembler.apply(start(BlockKind::Thinking, 1));
        let deltas = [
            "plain",
            "",
            "quote \" and \\ slash",
            "line\nfeed\ttab\r\u{8}\u{c}",
            "\u{1}\u{1f}\u{7f}",
            "é✓😀 \u{2028}",
        ];
        for (kind, index) in [(BlockKind::Text, 0), (BlockKind::Thinking, 1)] {
            for delta in deltas {
                let op = StreamOp::KindDelta {
                    kind,
                    index,
                    delta: delta.into(),
                };
                let StreamOutput::Update { event } = assembler.apply(op) else {
                    panic!("a delta is an update");
                };
                let partial = assembler.snapshot();
                assert!(event.typed_delta().is_some(), "the direct path applies");
                let event = AgentEvent::MessageUpdate { event, partial };
                assert!(event
                    .to_json_text(EventShape::Lean)
                    .starts_with(r#"{"type":"message_update","#));
                for shape in [EventShape::Lean, EventShape::Full] {
                    assert_eq!(event.to_json_text(shape), to_string(&event.to_json(shape)));
                }
            }
        }
    }
}

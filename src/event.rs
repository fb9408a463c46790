//! Agent events (SPEC §8.1) and their JSON shapes.
//!
//! Events are immutable snapshots (SPEC §0.4.8): messages are shared committed values. Their JSON is built only on request, in the
//! reference's `full` shape or the `lean` shape (no whole partial message on `message_update`).

use std::borrow::Cow;
use std::fmt::Write;

use crate::json::{json, set_key, to_string, write_json, write_string, Json, JsonMap};
use crate::message::{to_json_vec, write_json_array, Message};
use crate::stream::partial::{PartialSnapshot, UpdateEvent};

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
        let head = |out: &mut String| {
            out.push_str(r#"{"type":""#);
            out.push_str(self.type_name());
            out.push('"');
        };
        match (self, shape) {
            (AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message }, _) => {
                head(&mut out);
                out.push_str(r#","message":"#);
                out.push_str(message.text());
                out.push('}');
            }
            (AgentEvent::MessageUpdate { event, partial }, EventShape::Full) => {
                let mut message = String::with_capacity(256);
                partial.write_text(&mut message);
                out.reserve(2 * message.len() + 64);
                head(&mut out);
                out.push_str(r#","message":"#);
                out.push_str(&message);
                out.push_str(r#","assistantMessageEvent":"#);
                event.write_full_text(&mut out, partial, &message);
                out.push('}');
            }
            (AgentEvent::MessageUpdate { event, .. }, EventShape::Lean) => {
                match event.typed_delta() {
                    Some((kind @ ("text_delta" | "thinking_delta"), index, delta)) => {
                        head(&mut out);
                        out.push_str(r#","assistantMessageEvent":{"type":""#);
                        out.push_str(kind);
                        let _ = write!(out, r#"","contentIndex":{index},"delta":"#);
                        write_string(&mut out, delta);
                        out.push_str("}}");
                    }
                    _ => write_json(&mut out, &self.to_json(shape)),
                }
            }
            (
                AgentEvent::TurnEnd {
                    message,
                    tool_results,
                },
                _,
            ) => {
                head(&mut out);
                out.push_str(r#","message":"#);
                out.push_str(message.text());
                out.push_str(r#","toolResults":"#);
                write_json_array(&mut out, tool_results);
                out.push('}');
            }
            (AgentEvent::AgentEnd { messages }, _) => {
                head(&mut out);
                out.push_str(r#","messages":"#);
                write_json_array(&mut out, messages);
                out.push('}');
            }
            (AgentEvent::AgentStart | AgentEvent::TurnStart, _) => {
                head(&mut out);
                out.push('}');
            }
            (
                AgentEvent::ToolExecutionStart {
                    tool_call_id,
                    tool_name,
                    args,
                },
                _,
            ) => {
                head(&mut out);
                write_fields(
                    &mut out,
                    &[
                        ("toolCallId", tool_call_id),
                        ("toolName", tool_name),
                        ("args", args),
                    ],
                );
                out.push('}');
            }
            (
                AgentEvent::ToolExecutionUpdate {
                    tool_call_id,
                    tool_name,
                    args,
                    partial_result,
                },
                _,
            ) => {
                head(&mut out);
                write_fields(
                    &mut out,
                    &[
                        ("toolCallId", tool_call_id),
                        ("toolName", tool_name),
                        ("args", args),
                        ("partialResult", partial_result),
                    ],
                );
                out.push('}');
            }
            (
                AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    tool_name,
                    result,
                    is_error,
                    duration_ms,
                },
                _,
            ) => {
                head(&mut out);
                write_fields(
                    &mut out,
                    &[
                        ("toolCallId", tool_call_id),
                        ("toolName", tool_name),
                        ("result", result),
                    ],
                );
                let _ = write!(out, r#","isError":{is_error}"#);
                if let Some(ms) = duration_ms {
                    let _ = write!(out, r#","durationMs":{ms}"#);
                }
                out.push('}');
            }
        }
        out
    }

    pub fn to_json(&self, shape: EventShape) -> Json {
        let mut m = JsonMap::new();
        m.insert("type".into(), json!(self.type_name()));
        match self {
            AgentEvent::AgentStart | AgentEvent::TurnStart => {}
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                m.insert("message".into(), message.json().clone());
            }
            AgentEvent::MessageUpdate { event, partial } => {
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
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                m.insert("toolCallId".into(), tool_call_id.clone());
                m.insert("toolName".into(), tool_name.clone());
                m.insert("args".into(), args.clone());
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => {
                m.insert("toolCallId".into(), tool_call_id.clone());
                m.insert("toolName".into(), tool_name.clone());
                m.insert("args".into(), args.clone());
                m.insert("partialResult".into(), partial_result.clone());
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => {
                m.insert("toolCallId".into(), tool_call_id.clone());
                m.insert("toolName".into(), tool_name.clone());
                m.insert("result".into(), result.clone());
                m.insert("isError".into(), json!(is_error));
                if let Some(ms) = duration_ms {
                    m.insert("durationMs".into(), json!(ms));
                }
            }
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => {
                m.insert("message".into(), message.json().clone());
                m.insert("toolResults".into(), Json::Array(to_json_vec(tool_results)));
            }
            AgentEvent::AgentEnd { messages } => {
                m.insert("messages".into(), Json::Array(to_json_vec(messages)));
            }
        }
        Json::Object(m)
    }
}

/// Appends `,"key":value` for each field.
fn write_fields(out: &mut String, fields: &[(&str, &Json)]) {
    for (key, value) in fields {
        out.push(',');
        write_string(out, key);
        out.push(':');
        write_json(out, value);
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
    use crate::stream::assemble::{Assembled, Assembler};
    use crate::stream::{BlockKind, StreamOp};

    /// The directly written lean text of a typed delta is the generic rendering's, escapes
    /// included; other shapes and kinds take the generic path.
    #[test]
    fn lean_text_of_a_typed_delta_is_the_rendered_json() {
        let mut assembler = Assembler::new(&json!({"api": "a", "provider": "p", "id": "m"}));
        assembler.accept(json!({"type": "start"}));
        let start = |kind: BlockKind, index| StreamOp::StartBlock {
            index,
            block: match kind {
                BlockKind::Text => json!({"type": "text", "text": ""}),
                _ => json!({"type": "thinking", "thinking": ""}),
            }
            .as_object()
            .unwrap()
            .clone(),
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
                let Assembled::Update { event, partial } = assembler.apply(op) else {
                    panic!("a delta is an update");
                };
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

//! The four LLM message roles and `AgentMessage` with its custom-role fallback (SPEC §2.3).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    present, ser_num, ser_opt_num, ContentBlock, ShapeError, StopReason, SystemContent,
    ThinkingLevel, ToolDefinition, Usage, UserContent,
};
use crate::json::{Json, JsonMap};

tag!(UserRole, "user");
tag!(AssistantRole, "assistant");
tag!(ToolResultRole, "toolResult");
tag!(SystemRole, "system");

/// `{ role: "user", content, timestamp }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    pub role: UserRole,
    pub content: UserContent,
    /// Milliseconds since the Unix epoch.
    #[serde(serialize_with = "ser_num")]
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl UserMessage {
    /// A user message with this content and timestamp.
    pub fn new(content: impl Into<UserContent>, timestamp: f64) -> Self {
        UserMessage {
            role: UserRole,
            content: content.into(),
            timestamp,
            extra: JsonMap::new(),
        }
    }
}

/// An assistant message (SPEC §2.3): the model's answer to one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub role: AssistantRole,
    /// Text, thinking and toolCall blocks in order of generation.
    pub content: Vec<ContentBlock>,
    pub api: String,
    pub provider: String,
    /// Model id.
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    /// `{ type, timestamp, error?, details? }` objects, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Json>>,
    pub usage: Usage,
    pub stop_reason: StopReason,
    /// Deferred-response handle, kept as JSON.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub deferred: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_turn: Option<bool>,
    /// When the request started (ms since the Unix epoch).
    #[serde(serialize_with = "ser_num")]
    pub timestamp: f64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_num"
    )]
    pub duration_ms: Option<f64>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl AssistantMessage {
    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &super::ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }
}

/// A tool result message (SPEC §2.3). Field order is the loop's: `role, toolCallId, toolName,
/// content, details, usage, isError, durationMs, timestamp` (`nestedCalls` after `usage`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub role: ToolResultRole,
    pub tool_call_id: String,
    pub tool_name: String,
    /// Text and image blocks; `[]` when the tool produced none.
    pub content: Vec<ContentBlock>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// `{ calls, complete }`, kept as JSON; never produced by the core.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub nested_calls: Option<Json>,
    pub is_error: bool,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_num"
    )]
    pub duration_ms: Option<f64>,
    #[serde(serialize_with = "ser_num")]
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// `sections` of a system message: named prompt sections in order; `None` (JSON `null`) removes
/// a section declared earlier (SPEC §2.3, §4).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sections(pub Vec<(String, Option<String>)>);

impl Sections {
    /// The value of section `name`: `None` if not listed, `Some(None)` if listed as `null`.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_deref())
    }

    /// Sets section `name`, keeping its position if it is already listed.
    pub fn set(&mut self, name: impl Into<String>, value: Option<String>) {
        let name = name.into();
        match self.0.iter_mut().find(|(key, _)| *key == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(key, value)| (key, value)))
    }
}

impl<'de> Deserialize<'de> for Sections {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = JsonMap::deserialize(d)?;
        map.into_iter()
            .map(|(key, value)| match value {
                Json::String(text) => Ok((key, Some(text))),
                Json::Null => Ok((key, None)),
                other => Err(D::Error::custom(format!(
                    "section \"{key}\" must be a string or null, found {}",
                    crate::json::to_string(&other)
                ))),
            })
            .collect::<Result<_, _>>()
            .map(Sections)
    }
}

/// `{ name }`: a tool that stops being available (SPEC §2.6).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolReference {
    pub name: String,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// A system message (SPEC §2.3): base prompt or later instructions, sections and tool changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    pub role: SystemRole,
    pub content: SystemContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Sections>,
    /// Tool declarations (`name`, `description`, `parameters`, `constrainedSampling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<ToolDefinition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
    #[serde(serialize_with = "ser_num")]
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl SystemMessage {
    /// A system message with only content and a timestamp.
    pub fn new(content: impl Into<SystemContent>, timestamp: f64) -> Self {
        SystemMessage {
            role: SystemRole,
            content: content.into(),
            sections: None,
            tools_added: None,
            tools_removed: None,
            timestamp,
            extra: JsonMap::new(),
        }
    }
}

json_conversions!(
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    SystemMessage,
    ToolReference
);

/// Any transcript entry (SPEC §2.3), chosen by `role`. Every role other than the four LLM roles
/// is a custom message, kept verbatim (every field, value and key order) in `Custom`.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentMessage {
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    /// A message with any other string `role`; the whole object, untouched.
    Custom(Json),
}

impl AgentMessage {
    /// The `role` string of this message.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::Custom(value) => crate::message::role(value),
        }
    }

    /// Reads a message: an object with a string `role`; the four LLM roles must have their shape.
    pub fn from_json(value: &Json) -> Result<Self, ShapeError> {
        let Some(object) = value.as_object() else {
            return Err(ShapeError::new(format!(
                "invalid AgentMessage: expected an object, found {}",
                crate::json::to_string(value)
            )));
        };
        match object.get("role").and_then(Json::as_str) {
            Some("system") => SystemMessage::from_json(value).map(AgentMessage::System),
            Some("user") => UserMessage::from_json(value).map(AgentMessage::User),
            Some("assistant") => AssistantMessage::from_json(value).map(AgentMessage::Assistant),
            Some("toolResult") => ToolResultMessage::from_json(value).map(AgentMessage::ToolResult),
            Some(_) => Ok(AgentMessage::Custom(value.clone())),
            None => Err(ShapeError::new(
                "invalid AgentMessage: `role` must be a string",
            )),
        }
    }

    /// Writes the message; a custom message is returned exactly as it was read.
    pub fn to_json(&self) -> Json {
        match self {
            AgentMessage::Custom(value) => value.clone(),
            other => super::to_json(other),
        }
    }
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::System(message) => message.serialize(s),
            AgentMessage::User(message) => message.serialize(s),
            AgentMessage::Assistant(message) => message.serialize(s),
            AgentMessage::ToolResult(message) => message.serialize(s),
            AgentMessage::Custom(value) => value.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Json::deserialize(d)?;
        AgentMessage::from_json(&value).map_err(D::Error::custom)
    }
}

impl TryFrom<&Json> for AgentMessage {
    type Error = ShapeError;
    fn try_from(value: &Json) -> Result<Self, ShapeError> {
        AgentMessage::from_json(value)
    }
}

impl TryFrom<Json> for AgentMessage {
    type Error = ShapeError;
    fn try_from(value: Json) -> Result<Self, ShapeError> {
        AgentMessage::from_json(&value)
    }
}

impl From<&AgentMessage> for Json {
    fn from(message: &AgentMessage) -> Json {
        message.to_json()
    }
}

impl From<AgentMessage> for Json {
    fn from(message: AgentMessage) -> Json {
        match message {
            AgentMessage::Custom(value) => value,
            other => other.to_json(),
        }
    }
}

macro_rules! message_from {
    ($($ty:ident => $variant:ident),*) => {$(
        impl From<$ty> for AgentMessage {
            fn from(message: $ty) -> Self {
                AgentMessage::$variant(message)
            }
        }
    )*};
}
message_from!(SystemMessage => System, UserMessage => User, AssistantMessage => Assistant,
    ToolResultMessage => ToolResult);

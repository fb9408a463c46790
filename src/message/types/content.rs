//! Content blocks, message content, usage and the small enumerations (SPEC §2.1, §2.2, §2.5).

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ser_num, ShapeError};
use crate::json::{Json, JsonMap};

tag!(TextType, "text");
tag!(ThinkingType, "thinking");
tag!(ImageType, "image");
tag!(ToolCallType, "toolCall");

/// `{ type: "text", text, textSignature? }` (SPEC §2.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    #[serde(rename = "type")]
    pub kind: TextType,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// `{ type: "thinking", thinking, thinkingSignature?, redacted? }` (SPEC §2.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    #[serde(rename = "type")]
    pub kind: ThinkingType,
    pub thinking: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// `{ type: "image", data, mimeType }` (SPEC §2.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    #[serde(rename = "type")]
    pub kind: ImageType,
    /// Base64 image bytes.
    pub data: String,
    pub mime_type: String,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// `{ type: "toolCall", id, name, arguments, argumentsError?, thoughtSignature?, namespace? }`
/// (SPEC §2.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    #[serde(rename = "type")]
    pub kind: ToolCallType,
    pub id: String,
    pub name: String,
    pub arguments: JsonMap,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl TextContent {
    /// A text block with no signature.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..Default::default()
        }
    }
}

impl ThinkingContent {
    /// A thinking block with no signature.
    pub fn new(thinking: impl Into<String>) -> Self {
        ThinkingContent {
            thinking: thinking.into(),
            ..Default::default()
        }
    }
}

impl ImageContent {
    /// An image block from base64 data and its MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        }
    }
}

impl ToolCall {
    /// A finished tool call with parsed arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: JsonMap) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            ..Default::default()
        }
    }
}

/// Any content block, chosen by its `type` (SPEC §2.1). An unknown `type` is a shape error.
///
/// Message content uses this one enum everywhere; the SPEC's narrower unions (no images in
/// assistant content, only text and images in user and tool result content) are not enforced.
#[derive(Clone, Debug, PartialEq)]
pub enum ContentBlock {
    Text(TextContent),
    Thinking(ThinkingContent),
    Image(ImageContent),
    ToolCall(ToolCall),
}

impl ContentBlock {
    /// The `type` string of this block.
    pub fn kind(&self) -> &'static str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Thinking(_) => "thinking",
            ContentBlock::Image(_) => "image",
            ContentBlock::ToolCall(_) => "toolCall",
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(block) => Some(&block.text),
            _ => None,
        }
    }

    /// The tool call of a `toolCall` block.
    pub fn as_tool_call(&self) -> Option<&ToolCall> {
        match self {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        }
    }

    /// Reads a block; the `type` field selects the variant.
    pub fn from_json(value: &Json) -> Result<Self, ShapeError> {
        let Some(object) = value.as_object() else {
            return Err(ShapeError::new(format!(
                "invalid ContentBlock: expected an object, found {}",
                crate::json::to_string(value)
            )));
        };
        match object.get("type").and_then(Json::as_str) {
            Some("text") => TextContent::from_json(value).map(ContentBlock::Text),
            Some("thinking") => ThinkingContent::from_json(value).map(ContentBlock::Thinking),
            Some("image") => ImageContent::from_json(value).map(ContentBlock::Image),
            Some("toolCall") => ToolCall::from_json(value).map(ContentBlock::ToolCall),
            Some(other) => Err(ShapeError::new(format!(
                "invalid ContentBlock: unknown type \"{other}\" (expected \"text\", \"thinking\", \"image\" or \"toolCall\")"
            ))),
            None => Err(ShapeError::new(
                "invalid ContentBlock: `type` must be a string",
            )),
        }
    }

    /// Writes the block (`type` first).
    pub fn to_json(&self) -> Json {
        super::to_json(self)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(block) => block.serialize(s),
            ContentBlock::Thinking(block) => block.serialize(s),
            ContentBlock::Image(block) => block.serialize(s),
            ContentBlock::ToolCall(block) => block.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Json::deserialize(d)?;
        ContentBlock::from_json(&value).map_err(D::Error::custom)
    }
}

impl TryFrom<&Json> for ContentBlock {
    type Error = ShapeError;
    fn try_from(value: &Json) -> Result<Self, ShapeError> {
        ContentBlock::from_json(value)
    }
}

impl From<&ContentBlock> for Json {
    fn from(block: &ContentBlock) -> Json {
        block.to_json()
    }
}

impl From<ContentBlock> for Json {
    fn from(block: ContentBlock) -> Json {
        block.to_json()
    }
}

macro_rules! block_from {
    ($($ty:ident => $variant:ident),*) => {$(
        impl From<$ty> for ContentBlock {
            fn from(block: $ty) -> Self {
                ContentBlock::$variant(block)
            }
        }
    )*};
}
block_from!(TextContent => Text, ThinkingContent => Thinking, ImageContent => Image, ToolCall => ToolCall);

json_conversions!(TextContent, ThinkingContent, ImageContent, ToolCall);

/// Message content that is either a plain string or an array of blocks (user and system
/// messages). Both use `B` = [`ContentBlock`]; any block type deserializes.
#[derive(Clone, Debug, PartialEq)]
pub enum MessageContent<B> {
    Text(String),
    Blocks(Vec<B>),
}

/// `content` of a user message: a string or (text or image) blocks.
pub type UserContent = MessageContent<ContentBlock>;
/// `content` of a system message: a string or text blocks (other blocks are kept too: the
/// SPEC §4.5 worked example holds an image block in a system message).
pub type SystemContent = MessageContent<ContentBlock>;

impl<B> From<&str> for MessageContent<B> {
    fn from(text: &str) -> Self {
        MessageContent::Text(text.to_string())
    }
}

impl<B> From<String> for MessageContent<B> {
    fn from(text: String) -> Self {
        MessageContent::Text(text)
    }
}

impl<B> From<Vec<B>> for MessageContent<B> {
    fn from(blocks: Vec<B>) -> Self {
        MessageContent::Blocks(blocks)
    }
}

impl<B: Serialize> Serialize for MessageContent<B> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MessageContent::Text(text) => s.serialize_str(text),
            MessageContent::Blocks(blocks) => blocks.serialize(s),
        }
    }
}

impl<'de, B: DeserializeOwned> Deserialize<'de> for MessageContent<B> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Json::deserialize(d)? {
            Json::String(text) => Ok(MessageContent::Text(text)),
            Json::Array(items) => items
                .iter()
                .map(|item| B::deserialize(item).map_err(D::Error::custom))
                .collect::<Result<_, _>>()
                .map(MessageContent::Blocks),
            other => Err(D::Error::custom(format!(
                "content must be a string or an array of content blocks, found {}",
                crate::json::to_string(&other)
            ))),
        }
    }
}

/// Cost of a usage record: `{ input, output, cacheRead, cacheWrite, total, totalFromProvider? }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCost {
    #[serde(serialize_with = "ser_num")]
    pub input: f64,
    #[serde(serialize_with = "ser_num")]
    pub output: f64,
    #[serde(serialize_with = "ser_num")]
    pub cache_read: f64,
    #[serde(serialize_with = "ser_num")]
    pub cache_write: f64,
    #[serde(serialize_with = "ser_num")]
    pub total: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Token usage (SPEC §2.2). `Usage::default()` is the zero usage, key for key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(serialize_with = "ser_num")]
    pub input: f64,
    #[serde(serialize_with = "ser_num")]
    pub output: f64,
    #[serde(serialize_with = "ser_num")]
    pub cache_read: f64,
    #[serde(serialize_with = "ser_num")]
    pub cache_write: f64,
    #[serde(
        rename = "cacheWrite1h",
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::ser_opt_num"
    )]
    pub cache_write_1h: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::ser_opt_num"
    )]
    pub reasoning: Option<f64>,
    #[serde(serialize_with = "ser_num")]
    pub total_tokens: f64,
    pub cost: UsageCost,
    #[serde(flatten)]
    pub extra: JsonMap,
}

json_conversions!(UsageCost, Usage);

/// Why an assistant message ended (SPEC §2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Only on partial (still streaming) messages.
    Pending,
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Deferred,
}

/// Requested reasoning effort (SPEC §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

/// Steering / follow-up queue drain mode (SPEC §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum QueueMode {
    #[serde(rename = "all")]
    All,
    #[serde(rename = "one-at-a-time")]
    OneAtATime,
}

/// Stream transport preference, passed through to the stream function (SPEC §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    Sse,
    Websocket,
    WebsocketCached,
    Auto,
}

/// How a tool's batch runs (SPEC §2.5, §2.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecutionMode {
    Sequential,
    Parallel,
}

/// Recovery policy metadata of a tool (SPEC §2.6); not used by the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolReplay {
    Never,
    Safe,
}

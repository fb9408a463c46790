//! Model, tool definitions and tool results (SPEC §2.4, §2.6, §2.7).

use serde::{Deserialize, Serialize};

use super::{
    present, ser_opt_num, ContentBlock, ShapeError, ToolCall, ToolExecutionMode, ToolReplay, Usage,
};
use crate::json::{Json, JsonMap};

/// A chat model (SPEC §2.4). The core reads only `provider`, `api` and `id`; the other typed
/// fields are informational and everything else stays in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub api: String,
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// Input kinds (`"text"`, `"image"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<String>>,
    /// `{ input, output, cacheRead, cacheWrite, tiers? }`, kept as JSON.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cost: Option<Json>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_num"
    )]
    pub context_window: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_num"
    )]
    pub max_tokens: Option<f64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub headers: Option<Json>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// The data of a tool (SPEC §2.6): its declaration fields (`name`, `description`, `parameters`,
/// `constrainedSampling`, in declaration order) and the AgentTool metadata (`label`,
/// `outputSchema`, `replay`, `executionMode`). The callbacks (`execute`, `prepareArguments`)
/// are not data and are registered through the host API.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    /// Absent descriptions give declarations without the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub parameters: Json,
    /// `false` or a sampling object, kept as JSON (a present `false` is kept).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub constrained_sampling: Option<Json>,
    /// Human-readable name (required on executable tools, absent on declarations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ToolReplay>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ToolExecutionMode>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl ToolDefinition {
    /// The declaration of this tool (`toToolDeclaration`, SPEC §2.6): `name`, `description`,
    /// `parameters`, `constrainedSampling` only.
    pub fn declaration(&self) -> Json {
        crate::message::tool_declaration(&self.to_json())
    }
}

/// What a tool's `execute` returns, or a partial result given to `onUpdate` (SPEC §2.7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolResult {
    /// Model-facing content (text and image blocks); required by contract, absent if omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Json>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Only `true` marks the result as an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Only `true` asks to end the run after this batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl AgentToolResult {
    /// `{ content: [text], details: {} }`: the shape of the loop's own failure results.
    pub fn text(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: Some(vec![super::TextContent::new(text).into()]),
            details: Some(Json::Object(JsonMap::new())),
            ..Default::default()
        }
    }
}

/// `{ toolCall, result, isError, durationMs? }` as returned by `runToolCall` (SPEC §2.7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolCallOutcome {
    pub tool_call: ToolCall,
    pub result: AgentToolResult,
    pub is_error: bool,
    /// Present only when `execute` ran.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_num"
    )]
    pub duration_ms: Option<f64>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

json_conversions!(Model, ToolDefinition, AgentToolResult, AgentToolCallOutcome);

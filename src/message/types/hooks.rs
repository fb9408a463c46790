//! Hook payloads and hook results (SPEC §2.8).

use serde::{Deserialize, Serialize};

use super::{
    present, AgentMessage, AgentToolResult, AssistantMessage, ContentBlock, Model, ShapeError,
    ThinkingLevel, ToolCall, ToolDefinition, ToolResultMessage, Usage,
};
use crate::json::{Json, JsonMap};

/// `{ messages, tools? }`: what hooks see of the run (SPEC §2.8).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentContext {
    pub messages: Vec<AgentMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Argument of `beforeToolCall`: `{ assistantMessage, toolCall, args, context }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeToolCallContext {
    pub assistant_message: AssistantMessage,
    /// The raw block, arguments as the model sent them.
    pub tool_call: ToolCall,
    /// The validated, coerced arguments.
    pub args: Json,
    pub context: AgentContext,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Result of `beforeToolCall`: `{ block?, reason?, terminate? }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeToolCallResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Argument of `afterToolCall`: `{ assistantMessage, toolCall, args, result, isError, context }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterToolCallContext {
    pub assistant_message: AssistantMessage,
    pub tool_call: ToolCall,
    pub args: Json,
    /// The executed result before overrides.
    pub result: AgentToolResult,
    pub is_error: bool,
    pub context: AgentContext,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Result of `afterToolCall`: each present field overrides the executed result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterToolCallResult {
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
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Argument of the turn hooks (AgentTurnContext = PrepareNextTurnContext).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTurnContext {
    pub message: AssistantMessage,
    pub tool_results: Vec<ToolResultMessage>,
    pub context: AgentContext,
    pub new_messages: Vec<AgentMessage>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// `{ "action": "continue" }` or `{ "action": "end" }`. Any other value is "no decision" to the
/// core, and a shape error here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum AgentTurnDecision {
    Continue,
    End,
}

/// Argument of `prepareRequest`: `{ context, model, thinkingLevel }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrepareRequestContext {
    pub context: AgentContext,
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Result of `prepareRequest`: `{ context?, model?, thinkingLevel? }` (a `messages` field is
/// ignored by the core and lands in `extra`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRequestUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<AgentContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Result of `prepareNextTurn`: `{ context?, messages?, model?, thinkingLevel? }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentLoopTurnUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<AgentContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<AgentMessage>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    #[serde(flatten)]
    pub extra: JsonMap,
}

json_conversions!(
    AgentContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentTurnContext,
    AgentTurnDecision,
    PrepareRequestContext,
    AgentRequestUpdate,
    AgentLoopTurnUpdate
);

//! Typed tools for Rust hosts: the arguments are a serde type and the tool's JSON Schema is
//! derived from it (`schemars`), so a tool is one function.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{AbortSignal, AgentTool, FnTool, HostFuture, ToolInvocation, UpdateFn};
use crate::json::{json, Json};

/// What a typed tool's function gets besides its arguments.
pub struct ToolContext {
    pub tool_call_id: String,
    /// The run's abort signal.
    pub signal: AbortSignal,
    on_update: UpdateFn,
}

impl ToolContext {
    /// Reports progress (`onUpdate(partialResult)`: a `tool_execution_update` event).
    pub fn update(&self, partial_result: Json) {
        (self.on_update)(partial_result)
    }
}

/// An AgentToolResult with one text block and empty details.
pub fn text_result(text: &str) -> Json {
    json!({"content": [{"type": "text", "text": text}], "details": {}})
}

/// The JSON Schema of `A`, as tool `parameters` (without `$schema` and `title`).
pub fn parameters_schema<A: JsonSchema>() -> Json {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(json!({}));
    if let Some(object) = schema.as_object_mut() {
        object.shift_remove("$schema");
        object.shift_remove("title");
    }
    schema
}

/// A tool whose arguments are decoded into `A` (after libagent validated them against the
/// schema derived from `A`). `execute` answers with an AgentToolResult (see `text_result`) or
/// fails with a message, which the model sees as the tool's error.
pub fn typed_tool<A, F, Fut>(name: &str, description: &str, execute: F) -> AgentTool
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Json, String>> + Send + 'static,
{
    let definition = json!({
        "name": name,
        "label": name,
        "description": description,
        "parameters": parameters_schema::<A>(),
    });
    let name = name.to_string();
    FnTool::tool(definition, move |invocation: ToolInvocation| {
        let context = ToolContext {
            tool_call_id: invocation.tool_call_id,
            signal: invocation.signal,
            on_update: invocation.on_update,
        };
        match serde_json::from_value::<A>(invocation.args) {
            Ok(args) => {
                let answer = execute(args, context);
                Box::pin(async move { answer.await.map(Some) }) as HostFuture<_>
            }
            Err(error) => {
                let message = format!("Invalid arguments for tool {name}: {error}");
                Box::pin(async move { Err(message) })
            }
        }
    })
}

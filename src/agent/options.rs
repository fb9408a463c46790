//! `AgentOptions` from JSON: the options object of the C ABI, also for Rust hosts that keep
//! their configuration as JSON. Tools, hooks and the stream function carry code and are set in
//! Rust (or with the C builder functions).

use super::{AgentOptions, Settings};
use crate::agent::settings::{check_choice, THINKING_LEVELS};
use crate::error::{Error, ErrorKind};
use crate::json::Json;
use crate::message::messages_from;

impl AgentOptions {
    /// Parses `{"initialState": {"systemPrompt"?, "model"?, "thinkingLevel"?, "messages"?},
    /// "steeringMode"?, "followUpMode"?, "toolExecution"?, "sessionId"?, "transport"?,
    /// "thinkingBudgets"?, "maxRetryDelayMs"?, "identity"?, "abortGraceMs"?, "timeoutMs"?,
    /// "connectTimeoutMs"?, "idleTimeoutMs"?, "maxRetries"?, "caCertificates"?,
    /// "caCertificateFile"?, "compaction"?, "retry"?}`. `compaction` (`{"enabled"?,
    /// "reserveTokens"?, "keepRecentTokens"?}`) and `retry` (`{"enabled"?, "maxRetries"?,
    /// "baseDelayMs"?, "maxDelayMs"?}`) manage the context (off unless enabled; see
    /// `agent_options_new`). `timeoutMs` to `caCertificateFile` (and `maxRetryDelayMs`) are the built-in providers'
    /// transport options, forwarded to the stream function: `timeoutMs` one attempt from connect
    /// to last byte (default 600000, 0 = none), `connectTimeoutMs` TCP + TLS (30000),
    /// `idleTimeoutMs` silence before the head or between body bytes (300000), `maxRetries`
    /// (0), `caCertificates` PEM text / `caCertificateFile` a PEM file of extra trusted CAs.
    /// Unknown fields, wrong types and unknown values fail with `InvalidInput`, naming the field.
    pub fn from_json(value: Json) -> Result<AgentOptions, Error> {
        parse(value).map_err(Error::of(ErrorKind::InvalidInput))
    }
}

fn parse(value: Json) -> Result<AgentOptions, String> {
    let mut options = AgentOptions::default();
    let Json::Object(mut fields) = value else {
        return Err("The options must be a JSON object.".into());
    };
    if let Some(initial) = fields.shift_remove("initialState") {
        let Json::Object(initial) = initial else {
            return Err("initialState must be a JSON object.".into());
        };
        let state = &mut options.initial_state;
        for (key, value) in initial {
            let bad = |what: &str| format!("initialState.{key} must be {what}.");
            match key.as_str() {
                "systemPrompt" => {
                    state.system_prompt =
                        Some(value.as_str().ok_or_else(|| bad("a string"))?.to_string())
                }
                "model" if value.is_object() => state.model = Some(value),
                "model" => return Err(bad("an object")),
                "thinkingLevel" => {
                    let level = value.as_str().ok_or_else(|| bad("a string"))?;
                    check_choice("initialState.thinkingLevel", level, &THINKING_LEVELS)?;
                    state.thinking_level = Some(level.to_string())
                }
                "messages" => state.messages = messages_from(value, "initialState.messages")?,
                "tools" => return Err(
                    "initialState.tools cannot be JSON: tools carry code (agent_options_add_tool in C, InitialState::tools in Rust).".into(),
                ),
                _ => return Err(format!("Unknown field initialState.{key}.")),
            }
        }
    }
    Settings::check(&fields)?;
    options.settings.apply(&fields);
    Ok(options)
}

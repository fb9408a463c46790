//! The Agent's reassignable fields (SPEC §7.1–§7.2): hooks, queue modes, forwarded options.

use crate::host::Hook;
use crate::json::{json, Json, JsonMap};

/// The hooks of SPEC §7.1, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    ConvertToLlm,
    TransformContext,
    GetApiKey,
    BeforeToolCall,
    AfterToolCall,
    FinishTurn,
    PrepareRequest,
    PrepareNextTurn,
    PrepareNextTurnWithContext,
    /// libagent: supplies (or cancels) a compaction's summary.
    Compact,
}

impl HookKind {
    pub const ALL: [HookKind; 10] = [
        HookKind::ConvertToLlm,
        HookKind::TransformContext,
        HookKind::GetApiKey,
        HookKind::BeforeToolCall,
        HookKind::AfterToolCall,
        HookKind::FinishTurn,
        HookKind::PrepareRequest,
        HookKind::PrepareNextTurn,
        HookKind::PrepareNextTurnWithContext,
        HookKind::Compact,
    ];

    /// The reference's option name (`beforeToolCall`, ...).
    pub fn name(self) -> &'static str {
        match self {
            HookKind::ConvertToLlm => "convertToLlm",
            HookKind::TransformContext => "transformContext",
            HookKind::GetApiKey => "getApiKey",
            HookKind::BeforeToolCall => "beforeToolCall",
            HookKind::AfterToolCall => "afterToolCall",
            HookKind::FinishTurn => "finishTurn",
            HookKind::PrepareRequest => "prepareRequest",
            HookKind::PrepareNextTurn => "prepareNextTurn",
            HookKind::PrepareNextTurnWithContext => "prepareNextTurnWithContext",
            HookKind::Compact => "compact",
        }
    }

    pub fn from_name(name: &str) -> Option<HookKind> {
        HookKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// The installed hooks; `None` = not configured.
#[derive(Clone, Default)]
pub struct Hooks {
    pub convert_to_llm: Option<Hook>,
    pub transform_context: Option<Hook>,
    pub get_api_key: Option<Hook>,
    pub before_tool_call: Option<Hook>,
    pub after_tool_call: Option<Hook>,
    pub finish_turn: Option<Hook>,
    pub prepare_request: Option<Hook>,
    pub prepare_next_turn: Option<Hook>,
    pub prepare_next_turn_with_context: Option<Hook>,
    /// Called with `{reason, preparation, focus?}` before a compaction is summarized: answers
    /// `{summary, details?}` (the summary to use), `{"cancel": true}`, or nothing (libagent
    /// writes the summary with the agent's model).
    pub compact: Option<Hook>,
}

impl Hooks {
    fn slot(&mut self, kind: HookKind) -> &mut Option<Hook> {
        match kind {
            HookKind::ConvertToLlm => &mut self.convert_to_llm,
            HookKind::TransformContext => &mut self.transform_context,
            HookKind::GetApiKey => &mut self.get_api_key,
            HookKind::BeforeToolCall => &mut self.before_tool_call,
            HookKind::AfterToolCall => &mut self.after_tool_call,
            HookKind::FinishTurn => &mut self.finish_turn,
            HookKind::PrepareRequest => &mut self.prepare_request,
            HookKind::PrepareNextTurn => &mut self.prepare_next_turn,
            HookKind::PrepareNextTurnWithContext => &mut self.prepare_next_turn_with_context,
            HookKind::Compact => &mut self.compact,
        }
    }

    /// Installs (`Some`) or clears (`None`) a hook; returns the hook it replaced.
    #[must_use = "drop the replaced hook outside any lock (its finalizer is host code)"]
    pub fn set(&mut self, kind: HookKind, hook: Option<Hook>) -> Option<Hook> {
        std::mem::replace(self.slot(kind), hook)
    }
}

/// Reassignable options besides the hooks.
#[derive(Clone)]
pub struct Settings {
    pub hooks: Hooks,
    pub steering_mode: String,
    pub follow_up_mode: String,
    pub tool_execution: String,
    pub session_id: Option<Json>,
    pub transport: Option<Json>,
    pub thinking_budgets: Option<Json>,
    pub max_retry_delay_ms: Option<Json>,
    /// The providers' transport options that are set (`timeoutMs`, `connectTimeoutMs`,
    /// `idleTimeoutMs`, `maxRetries`, `caCertificates`, `caCertificateFile`), forwarded to the
    /// stream function like `maxRetryDelayMs`.
    pub network: JsonMap,
    pub identity: Option<Json>,
    /// libagent: after an abort, stop waiting for unanswered host callbacks after this long.
    pub abort_grace_ms: Option<u64>,
    /// The `compaction` members set (`enabled`, `reserveTokens`, `keepRecentTokens`).
    pub compaction: JsonMap,
    /// The `retry` members set (`enabled`, `maxRetries`, `baseDelayMs`, `maxDelayMs`).
    pub retry: JsonMap,
    /// How a retry waits its delay (`None`: a timer). Tests wait without sleeping.
    pub retry_sleep: Option<RetrySleep>,
    /// Tool sets (MCP servers) whose current tools join each turn's tools.
    pub tool_sets: Vec<std::sync::Arc<dyn crate::host::ToolSet>>,
}

/// Waits the given delay before a retry.
pub type RetrySleep =
    std::sync::Arc<dyn Fn(std::time::Duration) -> crate::host::HostFuture<()> + Send + Sync>;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            hooks: Hooks::default(),
            steering_mode: "one-at-a-time".into(),
            follow_up_mode: "one-at-a-time".into(),
            tool_execution: "parallel".into(),
            session_id: None,
            transport: Some(json!("auto")),
            thinking_budgets: None,
            max_retry_delay_ms: None,
            network: JsonMap::new(),
            identity: None,
            abort_grace_ms: None,
            compaction: JsonMap::new(),
            retry: JsonMap::new(),
            retry_sleep: None,
            tool_sets: Vec::new(),
        }
    }
}

/// The values libagent acts on; anything else would be silently treated as a default.
const MODES: [&str; 2] = ["one-at-a-time", "all"];
const TOOL_EXECUTIONS: [&str; 2] = ["parallel", "sequential"];
/// ThinkingLevel (SPEC §2).
pub const THINKING_LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// Checks that `value` is one of `allowed`, naming the field and the choices otherwise.
pub fn check_choice(field: &str, value: &str, allowed: &[&str]) -> Result<(), String> {
    if allowed.contains(&value) {
        return Ok(());
    }
    let choices: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
    Err(format!(
        "Option \"{field}\" must be one of {} (got \"{value}\").",
        choices.join(", ")
    ))
}

/// Value checks beyond the JSON type.
fn check_value(key: &str, value: &Json) -> Result<(), String> {
    match (key, value) {
        ("steeringMode" | "followUpMode", Json::String(mode)) => check_choice(key, mode, &MODES),
        ("toolExecution", Json::String(mode)) => check_choice(key, mode, &TOOL_EXECUTIONS),
        (
            "maxRetryDelayMs" | "abortGraceMs" | "timeoutMs" | "connectTimeoutMs" | "idleTimeoutMs",
            Json::Number(n),
        ) if n.as_f64().is_none_or(|ms| ms < 0.0) => {
            Err(format!("Option \"{key}\" must not be negative."))
        }
        ("maxRetries", Json::Number(n)) if n.as_u64().is_none_or(|n| n > u32::MAX as u64) => {
            Err(format!("Option \"{key}\" must be a non-negative integer."))
        }
        ("caCertificateFile", Json::String(path)) if path.is_empty() => {
            Err(format!("Option \"{key}\" must not be empty."))
        }
        ("compaction", Json::Object(members)) => super::context_policy::check_compaction(members),
        ("retry", Json::Object(members)) => super::context_policy::check_retry(members),
        // A CA that cannot be used is reported now rather than at the first request.
        #[cfg(feature = "providers")]
        ("caCertificates" | "caCertificateFile", Json::String(_)) => {
            crate::providers::check_transport_option(key, value)
        }
        _ => Ok(()),
    }
}

/// The option fields `Settings::apply` accepts, with the JSON type each needs.
const FIELDS: [(&str, &str); 17] = [
    ("steeringMode", "a string"),
    ("followUpMode", "a string"),
    ("toolExecution", "a string"),
    ("sessionId", "a string"),
    ("transport", "a string"),
    ("thinkingBudgets", "an object"),
    ("maxRetryDelayMs", "a number"),
    ("identity", "an object"),
    ("abortGraceMs", "a number"),
    ("timeoutMs", "a number"),
    ("connectTimeoutMs", "a number"),
    ("idleTimeoutMs", "a number"),
    ("maxRetries", "a number"),
    ("caCertificates", "a string"),
    ("caCertificateFile", "a string"),
    ("compaction", "an object"),
    ("retry", "an object"),
];

/// The transport options of the built-in providers (kept in `Settings::network`).
const NETWORK_FIELDS: [&str; 6] = [
    "timeoutMs",
    "connectTimeoutMs",
    "idleTimeoutMs",
    "maxRetries",
    "caCertificates",
    "caCertificateFile",
];

impl Settings {
    /// The forwarded stream options (SPEC §7.14): only those that are set.
    pub fn stream_options(&self) -> JsonMap {
        let mut options = JsonMap::new();
        let fields = [
            ("sessionId", &self.session_id),
            ("transport", &self.transport),
            ("thinkingBudgets", &self.thinking_budgets),
            ("maxRetryDelayMs", &self.max_retry_delay_ms),
        ];
        for (key, value) in fields {
            if let Some(value) = value {
                options.insert(key.into(), value.clone());
            }
        }
        for (key, value) in &self.network {
            options.insert(key.clone(), value.clone());
        }
        options
    }

    /// Writes `toolExecution` and the set options into a state snapshot.
    pub fn write_options(&self, out: &mut JsonMap) {
        out.insert("toolExecution".into(), json!(self.tool_execution));
        for (key, value) in self.stream_options() {
            out.insert(key, value);
        }
        if let Some(identity) = &self.identity {
            out.insert("identity".into(), identity.clone());
        }
        if let Some(grace) = self.abort_grace_ms {
            out.insert("abortGraceMs".into(), json!(grace));
        }
        if !self.compaction.is_empty() {
            out.insert("compaction".into(), Json::Object(self.compaction.clone()));
        }
        if !self.retry.is_empty() {
            out.insert("retry".into(), Json::Object(self.retry.clone()));
        }
    }

    /// Checks a patch of option fields without applying it: unknown fields and wrong types are
    /// errors. `null` unsets an optional field (the modes and `toolExecution` cannot be unset).
    pub fn check(patch: &JsonMap) -> Result<(), String> {
        for (key, value) in patch {
            let Some((_, expected)) = FIELDS.iter().find(|(name, _)| name == key) else {
                return Err(format!("Unknown option \"{key}\"."));
            };
            let required = matches!(
                key.as_str(),
                "steeringMode" | "followUpMode" | "toolExecution"
            );
            let ok = match *expected {
                "a string" => value.is_string(),
                "an object" => value.is_object(),
                _ => value.is_number(),
            } || (value.is_null() && !required);
            if !ok {
                return Err(format!(
                    "Option \"{key}\" must be {expected}{}.",
                    if required { "" } else { " or null" }
                ));
            }
            check_value(key, value)?;
        }
        Ok(())
    }

    /// Applies a patch that passed `check`.
    pub fn apply(&mut self, patch: &JsonMap) {
        for (key, value) in patch {
            let optional = (!value.is_null()).then(|| value.clone());
            let text = value.as_str().unwrap_or("").to_string();
            match key.as_str() {
                "steeringMode" => self.steering_mode = text,
                "followUpMode" => self.follow_up_mode = text,
                "toolExecution" => self.tool_execution = text,
                "sessionId" => self.session_id = optional,
                "transport" => self.transport = optional,
                "thinkingBudgets" => self.thinking_budgets = optional,
                "maxRetryDelayMs" => self.max_retry_delay_ms = optional,
                "identity" => self.identity = optional,
                "abortGraceMs" => self.abort_grace_ms = value.as_f64().map(|ms| ms.max(0.0) as u64),
                // Member by member: a patch changes the members it names (null resets one).
                "compaction" | "retry" => {
                    let slot = if key == "compaction" {
                        &mut self.compaction
                    } else {
                        &mut self.retry
                    };
                    match value {
                        Json::Object(members) => {
                            for (member, value) in members {
                                if value.is_null() {
                                    slot.shift_remove(member);
                                } else {
                                    slot.insert(member.clone(), value.clone());
                                }
                            }
                        }
                        _ => slot.clear(),
                    }
                }
                key if NETWORK_FIELDS.contains(&key) => match optional {
                    Some(value) => {
                        self.network.insert(key.into(), value);
                    }
                    None => {
                        self.network.shift_remove(key);
                    }
                },
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(value: Json) -> JsonMap {
        match value {
            Json::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn transport_options_are_checked_forwarded_and_unset() {
        let mut settings = Settings::default();
        let set = patch(
            json!({"timeoutMs": 5000, "connectTimeoutMs": 0, "idleTimeoutMs": 300,
            "maxRetries": 2, "maxRetryDelayMs": 0}),
        );
        Settings::check(&set).unwrap();
        settings.apply(&set);
        let options = settings.stream_options();
        assert_eq!(options.get("timeoutMs"), Some(&json!(5000)));
        assert_eq!(options.get("connectTimeoutMs"), Some(&json!(0)));
        assert_eq!(options.get("idleTimeoutMs"), Some(&json!(300)));
        assert_eq!(options.get("maxRetries"), Some(&json!(2)));
        assert_eq!(options.get("maxRetryDelayMs"), Some(&json!(0)));
        settings.apply(&patch(json!({"maxRetries": null})));
        assert!(!settings.stream_options().contains_key("maxRetries"));
        for (bad, text) in [
            (
                json!({"timeoutMs": -1}),
                "Option \"timeoutMs\" must not be negative.",
            ),
            (
                json!({"idleTimeoutMs": "5"}),
                "Option \"idleTimeoutMs\" must be a number or null.",
            ),
            (
                json!({"maxRetries": 1.5}),
                "Option \"maxRetries\" must be a non-negative integer.",
            ),
            (
                json!({"maxRetries": -1}),
                "Option \"maxRetries\" must be a non-negative integer.",
            ),
            (
                json!({"caCertificateFile": ""}),
                "Option \"caCertificateFile\" must not be empty.",
            ),
            (
                json!({"caCertificates": 3}),
                "Option \"caCertificates\" must be a string or null.",
            ),
        ] {
            assert_eq!(Settings::check(&patch(bad)).unwrap_err(), text);
        }
    }

    #[cfg(feature = "providers")]
    #[test]
    fn a_ca_option_must_hold_a_pem_certificate() {
        let err = Settings::check(&patch(json!({"caCertificates": "hello"}))).unwrap_err();
        assert!(
            err.starts_with("Option \"caCertificates\" holds no PEM certificate"),
            "{err}"
        );
        let err =
            Settings::check(&patch(json!({"caCertificateFile": "/nonexistent.pem"}))).unwrap_err();
        assert!(err.contains("caCertificateFile"), "{err}");
    }
}

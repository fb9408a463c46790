//! Typed views of the SPEC §2 data model (`agent::message::types`): round-trips of the SPEC's
//! example messages and blocks, unknown-field preservation, absent optionals, custom roles,
//! JavaScript number rendering and shape errors.

use std::fmt::Debug;

use agent::json::{json, parse, to_string, Json, JsonMap};
use agent::message::types::*;
use agent::message::{placeholder_model, zero_usage};

fn p(text: &str) -> Json {
    parse(text).expect("test JSON must parse")
}

/// JSON → T → JSON: equal as values and, for inputs already in SPEC key order, equal as text.
fn rt<T>(text: &str) -> T
where
    T: for<'a> TryFrom<&'a Json, Error = ShapeError> + Into<Json> + Clone + Debug,
{
    let input = p(text);
    let typed = T::try_from(&input).unwrap_or_else(|e| panic!("{e}: {text}"));
    let output: Json = typed.clone().into();
    assert_eq!(output, input);
    assert_eq!(to_string(&output), to_string(&input));
    typed
}

/// JSON → T → JSON equal as values only: known keys may move before unknown or later ones.
fn rt_value<T>(text: &str) -> T
where
    T: for<'a> TryFrom<&'a Json, Error = ShapeError> + Into<Json> + Clone + Debug,
{
    let input = p(text);
    let typed = T::try_from(&input).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(typed.clone().into(), input);
    typed
}

fn err<T>(value: Json) -> String
where
    T: for<'a> TryFrom<&'a Json, Error = ShapeError> + Debug,
{
    match T::try_from(&value) {
        Ok(v) => panic!("accepted {v:?}"),
        Err(e) => e.to_string(),
    }
}

const ZERO_USAGE: &str = r#"{ "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
  "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0 } }"#;

// ---- content blocks (§2.1)

#[test]
fn content_blocks_round_trip() {
    let text: TextContent = rt(r#"{"type":"text","text":"hi","textSignature":"sig"}"#);
    assert_eq!(text.text_signature.as_deref(), Some("sig"));
    let thinking: ThinkingContent = rt(
        r#"{"type":"thinking","thinking":"[redacted]","thinkingSignature":"enc","redacted":true}"#,
    );
    assert_eq!(thinking.redacted, Some(true));
    let image: ImageContent = rt(r#"{"type":"image","data":"x","mimeType":"image/png"}"#);
    assert_eq!(image.mime_type, "image/png");
    // §3.7 table row 9 and a finished call with every optional field.
    let call: ToolCall = rt(r#"{"type":"toolCall","id":"call_1","name":"read","arguments":{}}"#);
    assert_eq!((call.id.as_str(), call.name.as_str()), ("call_1", "read"));
    let call: ToolCall = rt(r#"{"type":"toolCall","id":"c","name":"n","arguments":{},
        "argumentsError":"bad","thoughtSignature":"t","namespace":"ns"}"#);
    assert_eq!(call.arguments_error.as_deref(), Some("bad"));
    let block: ContentBlock =
        rt(r#"{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.txt"}}"#);
    assert_eq!(block.kind(), "toolCall");
    assert_eq!(
        block.as_tool_call().map(|c| c.arguments["path"].clone()),
        Some(json!("a.txt"))
    );
    for text in [
        r#"{"type":"text","text":"t"}"#,
        r#"{"type":"thinking","thinking":"r"}"#,
        r#"{"type":"image","data":"x","mimeType":"image/png"}"#,
    ] {
        let _: ContentBlock = rt(text);
    }
}

#[test]
fn content_blocks_keep_unknown_fields() {
    let text: TextContent = rt(r#"{"type":"text","text":"hi","cache":{"ttl":5},"n":1.5}"#);
    assert_eq!(text.extra["cache"], json!({"ttl": 5}));
    let block: ContentBlock =
        rt(r#"{"type":"toolCall","id":"c","name":"n","arguments":{"b":1,"a":[null]},"index":3}"#);
    let ContentBlock::ToolCall(call) = block else {
        panic!("not a tool call")
    };
    assert_eq!(call.extra["index"], json!(3));
    // Argument keys keep their order.
    assert_eq!(call.arguments.keys().collect::<Vec<_>>(), ["b", "a"]);
}

#[test]
fn constructors_write_only_present_fields() {
    let block: ContentBlock = TextContent::new("hi").into();
    assert_eq!(
        to_string(&block.to_json()),
        r#"{"type":"text","text":"hi"}"#
    );
    let image = ImageContent::new("x", "image/png");
    assert_eq!(
        to_string(&image.to_json()),
        r#"{"type":"image","data":"x","mimeType":"image/png"}"#
    );
    let call = ToolCall::new("c1", "read", JsonMap::new());
    assert_eq!(
        to_string(&Json::from(call)),
        r#"{"type":"toolCall","id":"c1","name":"read","arguments":{}}"#
    );
    let thinking = ThinkingContent::new("r");
    assert_eq!(
        to_string(&thinking.to_json()),
        r#"{"type":"thinking","thinking":"r"}"#
    );
}

// ---- usage (§2.2)

#[test]
fn zero_usage_matches_default_usage() {
    let usage: Usage = rt(ZERO_USAGE);
    assert_eq!(usage, Usage::default());
    assert_eq!(
        to_string(&Usage::default().to_json()),
        to_string(&zero_usage())
    );
}

#[test]
fn usage_optional_fields_and_unknowns() {
    let usage: Usage = rt(
        r#"{"input":10,"output":20,"cacheRead":1,"cacheWrite":2,"cacheWrite1h":1,
        "reasoning":5,"totalTokens":33,"cost":{"input":0.1,"output":0.25,"cacheRead":0,"cacheWrite":0,
        "total":0.35,"totalFromProvider":true,"currency":"usd"},"serviceTier":"flex"}"#,
    );
    assert_eq!(usage.cache_write_1h, Some(1.0));
    assert_eq!(usage.reasoning, Some(5.0));
    assert_eq!(usage.cost.total_from_provider, Some(true));
    assert_eq!(usage.cost.extra["currency"], json!("usd"));
    assert_eq!(usage.extra["serviceTier"], json!("flex"));
}

#[test]
fn numbers_render_like_javascript() {
    let mut usage = Usage {
        input: 3.0,
        output: 1.5,
        total_tokens: 4.5,
        cache_write_1h: Some(2.0),
        ..Usage::default()
    };
    usage.cost.total = 1e21;
    let text = to_string(&usage.to_json());
    assert!(text.starts_with(r#"{"input":3,"output":1.5,"cacheRead":0,"cacheWrite":0,"cacheWrite1h":2,"totalTokens":4.5,"#), "{text}");
    assert!(text.contains(r#""total":1e+21"#), "{text}");
    assert!(!text.contains(".0"), "{text}");
    // Integral numbers are stored as JSON integers, so serde_json's own printer agrees.
    let message = UserMessage::new("hi", 1_700_000_000_000.0);
    assert_eq!(message.to_json()["timestamp"], json!(1_700_000_000_000_i64));
    assert_eq!(
        serde_json::to_string(&message).ok().as_deref(),
        Some(r#"{"role":"user","content":"hi","timestamp":1700000000000}"#)
    );
    // `3.0` in the input is the number 3: it reads and renders as `3`.
    let read = UserMessage::from_json(&p(r#"{"role":"user","content":"x","timestamp":3.0}"#));
    let read = read.map(|m| to_string(&m.to_json()));
    assert_eq!(
        read.as_deref(),
        Ok(r#"{"role":"user","content":"x","timestamp":3}"#)
    );
    let result = ToolResultMessage::from_json(&p(r#"{"role":"toolResult","toolCallId":"c",
        "toolName":"t","content":[],"isError":false,"durationMs":51.0,"timestamp":7}"#));
    assert_eq!(
        result.map(|m| to_string(&m.to_json()["durationMs"])),
        Ok("51".into())
    );
}

#[test]
fn stop_reasons_and_thinking_levels() {
    for (reason, text) in [
        (StopReason::Pending, "pending"),
        (StopReason::Stop, "stop"),
        (StopReason::Length, "length"),
        (StopReason::ToolUse, "toolUse"),
        (StopReason::Error, "error"),
        (StopReason::Aborted, "aborted"),
        (StopReason::Deferred, "deferred"),
    ] {
        assert_eq!(serde_json::to_value(reason).ok(), Some(json!(text)));
        assert_eq!(
            serde_json::from_value::<StopReason>(json!(text)).ok(),
            Some(reason)
        );
    }
    let levels = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];
    for level in levels {
        let typed: Result<ThinkingLevel, _> = serde_json::from_value(json!(level));
        assert_eq!(
            typed.ok().and_then(|t| serde_json::to_value(t).ok()),
            Some(json!(level))
        );
    }
    assert_eq!(
        serde_json::to_value(QueueMode::OneAtATime).ok(),
        Some(json!("one-at-a-time"))
    );
    assert_eq!(
        serde_json::to_value(Transport::WebsocketCached).ok(),
        Some(json!("websocket-cached"))
    );
}

// ---- messages (§2.3)

#[test]
fn provider_error_message_from_section_3_6_round_trips() {
    let message: AssistantMessage = rt(&format!(
        r#"{{ "role": "assistant", "content": [ {{ "type": "text", "text": "partial" }} ],
        "api": "test-api", "provider": "test-prov", "model": "m1", "usage": {ZERO_USAGE},
        "stopReason": "error", "errorMessage": "429 rate limited", "timestamp": 1700000000000 }}"#
    ));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_message.as_deref(), Some("429 rate limited"));
    assert_eq!(message.thinking_level, None);
}

#[test]
fn failure_message_of_section_7_9_round_trips() {
    let failure = agent::message::failure_message(&placeholder_model(), "boom", true);
    let typed = AssistantMessage::try_from(&failure).map(Json::from);
    assert_eq!(typed, Ok(failure));
}

#[test]
fn full_assistant_message_round_trips() {
    let message: AssistantMessage = rt(&format!(
        r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":"hmm","thinkingSignature":"s"}},
        {{"type":"text","text":"Reading."}},{{"type":"toolCall","id":"c1","name":"read","arguments":{{"path":"a.txt"}}}}],
        "api":"a","provider":"p","model":"m","responseModel":"m-2024","responseId":"r1",
        "providerThinkingLevel":"high","thinkingLevel":"medium",
        "diagnostics":[{{"type":"retry","timestamp":5,"error":{{"message":"x"}}}}],"usage":{ZERO_USAGE},
        "stopReason":"toolUse","deferred":{{"provider":"p","modelId":"m","api":"a","id":"d1"}},
        "rawStopReason":"tool_use","endTurn":false,"timestamp":1700000000000,"durationMs":12,
        "vendor":{{"x":1}}}}"#
    ));
    assert_eq!(message.thinking_level, Some(ThinkingLevel::Medium));
    assert_eq!(
        message
            .tool_calls()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["c1"]
    );
    assert_eq!(message.duration_ms, Some(12.0));
    assert_eq!(message.extra["vendor"], json!({"x": 1}));
}

#[test]
fn tool_result_message_of_turn_end_round_trips() {
    let message: ToolResultMessage = rt(
        r#"{ "role": "toolResult", "toolCallId": "c1", "toolName": "read",
        "content": [ { "type": "text", "text": "slow done" } ], "details": { "a": 1 },
        "isError": false, "durationMs": 51, "timestamp": 1700000000123 }"#,
    );
    assert_eq!(message.details, Some(json!({"a": 1})));
    let _: ToolResultMessage = rt(&format!(
        r#"{{"role":"toolResult","toolCallId":"c","toolName":"zz","content":[],"details":null,
        "usage":{ZERO_USAGE},"nestedCalls":{{"calls":[],"complete":true}},"isError":true,"timestamp":1}}"#
    ));
}

#[test]
fn user_messages_with_string_or_blocks() {
    let message: UserMessage = rt(r#"{ "role": "user", "content": "hi", "timestamp": 11 }"#);
    assert_eq!(message.content, UserContent::Text("hi".into()));
    let message: UserMessage = rt(r#"{"role":"user","content":[{"type":"text","text":"look"},
        {"type":"image","data":"x","mimeType":"image/png"}],"timestamp":5}"#);
    let UserContent::Blocks(blocks) = &message.content else {
        panic!("expected blocks")
    };
    assert_eq!(blocks.len(), 2);
    let built = UserMessage::new(vec![TextContent::new("look").into()], 5.0);
    assert_eq!(
        to_string(&built.to_json()),
        r#"{"role":"user","content":[{"type":"text","text":"look"}],"timestamp":5}"#
    );
}

const SECTION_4_5: &str = r#"[
  { "role": "system", "content": "Base prompt",
    "sections": { "skills": "<skills>A</skills>", "env": "<env>1</env>" },
    "toolsAdded": [ { "name": "read", "description": "read tool", "parameters": { "type": "object" } } ],
    "timestamp": 10 },
  { "role": "user", "content": "hi", "timestamp": 11 },
  { "role": "system",
    "content": [ { "type": "text", "text": "Extra 1" }, { "type": "image", "data": "x", "mimeType": "image/png" },
                 { "type": "text", "text": "Extra 2" } ],
    "sections": { "skills": "<skills>B</skills>", "env": null, "zed": "<z/>" },
    "toolsAdded": [ { "name": "write", "description": "write tool", "parameters": { "type": "object" } } ],
    "toolsRemoved": [ { "name": "read" } ], "timestamp": 12 },
  { "role": "system", "content": "", "sections": { "env": "<env>2</env>" },
    "toolsAdded": [ { "name": "read", "description": "read tool", "parameters": { "type": "object" } } ],
    "timestamp": 13 }
]"#;

#[test]
fn system_messages_of_section_4_5_round_trip() {
    let transcript = p(SECTION_4_5);
    let items = transcript.as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 4);
    let typed: Vec<AgentMessage> = items
        .iter()
        .map(|m| AgentMessage::try_from(m).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(
        typed.iter().map(AgentMessage::role).collect::<Vec<_>>(),
        ["system", "user", "system", "system"]
    );
    let back = Json::Array(typed.iter().map(Json::from).collect());
    assert_eq!(to_string(&back), to_string(&transcript));
    let AgentMessage::System(second) = &typed[2] else {
        panic!("not a system message")
    };
    let sections = second.sections.clone().unwrap_or_default();
    assert_eq!(sections.get("env"), Some(None));
    assert_eq!(sections.get("zed"), Some(Some("<z/>")));
    assert_eq!(sections.get("nope"), None);
    assert_eq!(
        second.tools_removed.as_ref().map(|r| r[0].name.as_str()),
        Some("read")
    );
    // The whole transcript also reads as a Vec through serde.
    let via_serde: Result<Vec<AgentMessage>, _> = serde_json::from_value(transcript);
    assert_eq!(via_serde.ok(), Some(typed));
    // getCurrentSystemMessage's result and the §4.2 initial message.
    let _: SystemMessage = rt(
        r#"{ "role": "system", "content": "Base prompt\n\nExtra 1\nExtra 2",
      "sections": { "skills": "<skills>B</skills>", "zed": "<z/>", "env": "<env>2</env>" },
      "toolsAdded": [ { "name": "write", "description": "write tool", "parameters": { "type": "object" } },
                      { "name": "read", "description": "read tool", "parameters": { "type": "object" } } ],
      "timestamp": 10 }"#,
    );
    // §4.7 writes the tool deltas after `timestamp`; the view writes SPEC §2.3 order.
    let _: SystemMessage = rt_value(
        r#"{ "role": "system", "content": "note", "timestamp": 99,
        "toolsRemoved": [ { "name": "write" }, { "name": "grep" } ] }"#,
    );
}

#[test]
fn integer_like_section_names_keep_ecmascript_order() {
    let message: SystemMessage = rt(r#"{"role":"system","content":"B",
        "sections":{"b":"B1","2":"two","a":"A1","1":"one"},"timestamp":0}"#);
    let names: Vec<_> = message
        .sections
        .iter()
        .flat_map(|s| s.0.iter().map(|(k, _)| k.as_str()))
        .collect();
    assert_eq!(names, ["1", "2", "b", "a"]);
    // Built in any order, `to_json` writes index keys first (SPEC §0.4.2).
    let mut built = SystemMessage::new("B", 0.0);
    let mut sections = Sections::default();
    sections.set("b", Some("B1".into()));
    sections.set("2", Some("two".into()));
    sections.set("b", None);
    built.sections = Some(sections);
    assert_eq!(
        to_string(&built.to_json()),
        r#"{"role":"system","content":"B","sections":{"2":"two","b":null},"timestamp":0}"#
    );
}

#[test]
fn custom_roles_are_kept_verbatim() {
    let text = r#"{ "role": "notification", "text": "...", "timestamp": 1, "z": 2.5, "a": null, "1": [] }"#;
    let message: AgentMessage = rt(text);
    assert_eq!(message.role(), "notification");
    let AgentMessage::Custom(value) = &message else {
        panic!("not custom")
    };
    assert_eq!(to_string(value), to_string(&p(text)));
    // Inside a context, next to typed messages.
    let context: AgentContext = rt(&format!(
        r#"{{"messages":[{text},{{"role":"user","content":"u","timestamp":5}}]}}"#
    ));
    assert!(matches!(context.messages[1], AgentMessage::User(_)));
}

#[test]
fn unknown_fields_on_messages_are_preserved() {
    let message: UserMessage =
        rt(r#"{"role":"user","content":"hi","timestamp":1,"meta":{"k":[1,2]},"id":"u1"}"#);
    assert_eq!(message.extra.keys().collect::<Vec<_>>(), ["meta", "id"]);
    // Unknown keys before known ones are kept but written after them (a view, not storage).
    let input = p(r#"{"id":"u1","role":"user","content":"hi","timestamp":1}"#);
    let back = UserMessage::from_json(&input).map(|m| m.to_json());
    assert_eq!(back.as_ref(), Ok(&input));
    assert_eq!(
        back.map(|v| to_string(&v)).ok().as_deref(),
        Some(r#"{"role":"user","content":"hi","timestamp":1,"id":"u1"}"#)
    );
}

#[test]
fn absent_optionals_are_not_written_as_null() {
    let mut message = AssistantMessage::from_json(&agent::message::failure_message(
        &placeholder_model(),
        "x",
        false,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    message.error_message = None;
    let text = to_string(&message.to_json());
    assert!(!text.contains("null"), "{text}");
    assert!(
        !text.contains("thinkingLevel") && !text.contains("durationMs"),
        "{text}"
    );
    let result = AgentToolResult::default();
    assert_eq!(to_string(&result.to_json()), "{}");
    assert_eq!(
        to_string(&ToolDefinition::default().to_json()),
        r#"{"name":"","parameters":null}"#
    );
    // A present `null` in an any-JSON field is a value, not an absence.
    let kept: AgentToolResult = rt(r#"{"content":[],"details":null}"#);
    assert_eq!(kept.details, Some(Json::Null));
}

// ---- model, tools, results (§2.4, §2.6, §2.7)

#[test]
fn placeholder_model_round_trips() {
    let model: Model = rt(&to_string(&placeholder_model()));
    assert_eq!(
        (model.id.as_str(), model.context_window),
        ("unknown", Some(0.0))
    );
    let model: Model = rt(
        r#"{"id":"m1","name":"M","api":"test-api","provider":"test-prov",
        "reasoning":true,"input":["text","image"],"contextWindow":200000,"maxTokens":8192,
        "headers":{"x":"y"},"thinkingLevelMap":{"high":"max"},"compat":{"a":1}}"#,
    );
    assert_eq!(
        model.extra.keys().collect::<Vec<_>>(),
        ["thinkingLevelMap", "compat"]
    );
}

#[test]
fn tool_definitions_and_declarations() {
    let tool: ToolDefinition = rt(
        r#"{"name":"read","description":"read tool","parameters":{"type":"object"},
        "constrainedSampling":false,"label":"READ","outputSchema":{"type":"object"},"replay":"safe",
        "executionMode":"sequential","owner":"fs"}"#,
    );
    assert_eq!(tool.execution_mode, Some(ToolExecutionMode::Sequential));
    assert_eq!(tool.replay, Some(ToolReplay::Safe));
    assert_eq!(tool.constrained_sampling, Some(json!(false)));
    assert_eq!(
        to_string(&tool.declaration()),
        r#"{"name":"read","description":"read tool","parameters":{"type":"object"},"constrainedSampling":false}"#
    );
    // An AgentTool written label-first reads the same; `label` is written after the declaration.
    let tool: ToolDefinition = rt_value(
        r#"{"name":"read","label":"Read","description":"d","parameters":{},"executionMode":"parallel"}"#,
    );
    assert_eq!(tool.label.as_deref(), Some("Read"));
    let bare: ToolDefinition = rt(r#"{"name":"x","parameters":{}}"#);
    assert_eq!(
        to_string(&bare.declaration()),
        r#"{"name":"x","parameters":{}}"#
    );
}

#[test]
fn tool_results_and_outcomes_round_trip() {
    let result: AgentToolResult =
        rt(r#"{ "content": [ { "type": "text", "text": "slow done" } ], "details": { "a": 1 } }"#);
    assert_eq!(result.content.as_ref().map(Vec::len), Some(1));
    let _: AgentToolResult =
        rt(r#"{"content":[{"type":"text","text":"blocked"}],"details":{},"terminate":true}"#);
    let _: AgentToolResult = rt(&format!(
        r#"{{"content":[],"details":[1],"structuredContent":{{"n":2}},"usage":{ZERO_USAGE},
        "isError":true,"terminate":false,"addedToolNames":["x"]}}"#
    ));
    assert_eq!(
        AgentToolResult::text("Tool zz not found").to_json(),
        agent::message::error_tool_result("Tool zz not found")
    );
    let outcome: AgentToolCallOutcome = rt(
        r#"{ "toolCall": { "type": "toolCall", "id": "x", "name": "zz", "arguments": {} },
        "result": { "content": [ { "type": "text", "text": "Tool zz not found" } ], "details": {} },
        "isError": true }"#,
    );
    assert_eq!(outcome.duration_ms, None);
    let _: AgentToolCallOutcome = rt(
        r#"{"toolCall":{"type":"toolCall","id":"x","name":"zz","arguments":{}},
        "result":{"details":{}},"isError":false,"durationMs":3}"#,
    );
}

// ---- hooks (§2.8)

#[test]
fn hook_payloads_round_trip() {
    let assistant = format!(
        r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"c1","name":"read","arguments":{{"path":"a"}}}}],
        "api":"a","provider":"p","model":"m","usage":{ZERO_USAGE},"stopReason":"toolUse","timestamp":1}}"#
    );
    let call = r#"{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}"#;
    let context = r#"{"messages":[{"role":"user","content":"go","timestamp":0}],
        "tools":[{"name":"read","description":"d","parameters":{"type":"object"},"label":"Read"}]}"#;
    let before: BeforeToolCallContext = rt(&format!(
        r#"{{"assistantMessage":{assistant},"toolCall":{call},"args":{{"path":"a"}},"context":{context}}}"#
    ));
    assert_eq!(before.context.tools.as_ref().map(Vec::len), Some(1));
    let _: AfterToolCallContext = rt(&format!(
        r#"{{"assistantMessage":{assistant},"toolCall":{call},"args":{{"path":"a"}},
        "result":{{"content":[],"details":{{}}}},"isError":false,"context":{context}}}"#
    ));
    let _: AgentTurnContext = rt(&format!(
        r#"{{"message":{assistant},"toolResults":[{{"role":"toolResult","toolCallId":"c1","toolName":"read",
        "content":[],"isError":false,"timestamp":2}}],"context":{context},
        "newMessages":[{{"role":"note","x":1}}]}}"#
    ));
    let model = to_string(&placeholder_model());
    let _: PrepareRequestContext = rt(&format!(
        r#"{{"context":{context},"model":{model},"thinkingLevel":"off"}}"#
    ));
    let update: AgentRequestUpdate = rt(r#"{"thinkingLevel":"high","messages":[]}"#);
    assert_eq!(update.extra.keys().collect::<Vec<_>>(), ["messages"]);
    let _: AgentLoopTurnUpdate = rt(&format!(
        r#"{{"context":{context},"messages":[{{"role":"user","content":"u","timestamp":1}}],"model":{model},"thinkingLevel":"max"}}"#
    ));
}

#[test]
fn hook_results_round_trip() {
    let before: BeforeToolCallResult = rt(r#"{"block":true,"reason":"no","terminate":true}"#);
    assert_eq!(before.block, Some(true));
    let _: BeforeToolCallResult = rt("{}");
    let after: AfterToolCallResult = rt(&format!(
        r#"{{"content":[{{"type":"text","text":"x"}}],"details":null,"structuredContent":1,"isError":false,
        "usage":{ZERO_USAGE},"terminate":true}}"#
    ));
    assert_eq!(after.details, Some(Json::Null));
    assert_eq!(
        rt::<AgentTurnDecision>(r#"{"action":"continue"}"#),
        AgentTurnDecision::Continue
    );
    assert_eq!(
        rt::<AgentTurnDecision>(r#"{"action":"end"}"#),
        AgentTurnDecision::End
    );
}

// ---- wrong shapes

#[test]
fn wrong_shapes_are_rejected_with_a_message() {
    assert_eq!(
        err::<UserMessage>(json!({"role": "user", "content": "x"})),
        "invalid UserMessage: missing field `timestamp`"
    );
    assert_eq!(
        err::<AgentMessage>(json!({"role": "user", "content": 5, "timestamp": 1})),
        "invalid UserMessage: content must be a string or an array of content blocks, found 5"
    );
    assert_eq!(
        err::<UserMessage>(json!({"role": "assistant", "content": "x", "timestamp": 1})),
        r#"invalid UserMessage: expected "user", found "assistant""#
    );
    assert_eq!(
        err::<AgentMessage>(json!("hi")),
        r#"invalid AgentMessage: expected an object, found "hi""#
    );
    assert_eq!(
        err::<AgentMessage>(json!({"role": 1})),
        "invalid AgentMessage: `role` must be a string"
    );
    assert_eq!(
        err::<AgentMessage>(json!({"text": "no role"})),
        "invalid AgentMessage: `role` must be a string"
    );
    assert_eq!(
        err::<ContentBlock>(json!({"type": "video"})),
        r#"invalid ContentBlock: unknown type "video" (expected "text", "thinking", "image" or "toolCall")"#
    );
    assert_eq!(
        err::<UserMessage>(json!({"role": "user", "content": [{"type": "text"}], "timestamp": 1})),
        "invalid UserMessage: invalid TextContent: missing field `text`"
    );
    let message = err::<AgentMessage>(json!({"role": "assistant", "content": [], "api": "a",
        "provider": "p", "model": "m", "usage": zero_usage(), "stopReason": "done", "timestamp": 1}));
    assert!(
        message.starts_with("invalid AssistantMessage: unknown variant `done`"),
        "{message}"
    );
    let message = err::<AssistantMessage>(json!({"role": "assistant", "content": [], "api": "a",
        "provider": "p", "model": "m", "stopReason": "stop", "timestamp": 1}));
    assert_eq!(message, "invalid AssistantMessage: missing field `usage`");
    let message = err::<SystemMessage>(
        json!({"role": "system", "content": "", "sections": {"a": 1}, "timestamp": 1}),
    );
    assert_eq!(
        message,
        r#"invalid SystemMessage: section "a" must be a string or null, found 1"#
    );
    let message =
        err::<ToolCall>(json!({"type": "toolCall", "id": "c", "name": "n", "arguments": [1]}));
    assert!(
        message.starts_with("invalid ToolCall: invalid type: sequence"),
        "{message}"
    );
    let message = err::<Usage>(
        json!({"input": "1", "output": 0, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": 0, "cost": {}}),
    );
    assert!(
        message.starts_with("invalid Usage: invalid type: string \"1\""),
        "{message}"
    );
    assert!(err::<AgentTurnDecision>(json!({"action": "maybe"}))
        .starts_with("invalid AgentTurnDecision: unknown variant `maybe`"));
    assert!(err::<Model>(json!(null)).starts_with("invalid Model: invalid type: null"));
    // serde paths report the same texts.
    let via_serde = serde_json::from_value::<AgentMessage>(json!({"role": 2}));
    assert_eq!(
        via_serde.map_err(|e| e.to_string()),
        Err("invalid AgentMessage: `role` must be a string".into())
    );
}

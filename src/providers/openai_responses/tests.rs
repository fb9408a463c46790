//! Unit tests of the openai-responses pieces the fixtures reach only partly: tool-call id
//! normalization, text signatures and HTTP error texts.

use super::request::{normalize_tool_call_id, text_signature};
use super::response::{describe_status, sdk_message};
use crate::json::json;

#[test]
fn foreign_call_item_ids_keep_both_parts_for_openai() {
    let model = json!({"provider": "openai", "api": "openai-responses", "id": "gpt-5"});
    let same_api = json!({"provider": "openai", "api": "openai-responses", "model": "gpt-4.1"});
    let other_api = json!({"provider": "openrouter", "api": "openai-responses", "model": "x"});
    // Same provider and API: both parts sanitized, the item id gets its `fc_` prefix.
    assert_eq!(
        normalize_tool_call_id(&model, "call 1|item.2", &same_api),
        "call_1|fc_item_2"
    );
    assert_eq!(
        normalize_tool_call_id(&model, "call_1|fc_abc", &same_api),
        "call_1|fc_abc"
    );
    // Another provider's item id becomes a hash (stable, `fc_` + base-36 digits).
    let foreign = normalize_tool_call_id(&model, "call_1|item_2", &other_api);
    let (call, item) = foreign.split_once('|').unwrap();
    assert_eq!(call, "call_1");
    assert!(item.starts_with("fc_") && item.len() > 3, "{foreign}");
    assert!(
        item[3..].chars().all(|c| c.is_ascii_alphanumeric()),
        "{foreign}"
    );
    assert_eq!(
        foreign,
        normalize_tool_call_id(&model, "call_1|item_2", &other_api)
    );
    // Ids without an item part, and every id for other providers, are sanitized as a whole:
    // at most 64 characters, trailing underscores removed.
    assert_eq!(
        normalize_tool_call_id(&model, "toolu_01.x!", &other_api),
        "toolu_01_x"
    );
    let vllm = json!({"provider": "vllm", "api": "openai-responses", "id": "m"});
    assert_eq!(
        normalize_tool_call_id(&vllm, "call_1|fc_2", &other_api),
        "call_1_fc_2"
    );
    let long = "a".repeat(80);
    assert_eq!(
        normalize_tool_call_id(&vllm, &long, &other_api),
        "a".repeat(64)
    );
}

#[test]
fn text_signatures_v1_legacy_and_unknown_phases() {
    let v1 = json!(r#"{"v":1,"id":"msg_1","phase":"commentary"}"#);
    assert_eq!(
        text_signature(Some(&v1)),
        Some(("msg_1".into(), Some("commentary".into())))
    );
    let other_phase = json!(r#"{"v":1,"id":"msg_1","phase":"draft"}"#);
    assert_eq!(
        text_signature(Some(&other_phase)),
        Some(("msg_1".into(), None))
    );
    // Not v1 JSON: the whole text is a legacy id.
    let legacy = json!("{not json");
    assert_eq!(
        text_signature(Some(&legacy)),
        Some(("{not json".into(), None))
    );
    assert_eq!(text_signature(Some(&json!(""))), None);
    assert_eq!(text_signature(None), None);
}

#[test]
fn http_error_texts() {
    let error = r#"{"error":{"message":"Bad input","type":"invalid_request_error","code":null}}"#;
    assert_eq!(
        describe_status("openai", 400, error),
        r#"OpenAI API error (400): {"message":"Bad input","type":"invalid_request_error","code":null}"#
    );
    assert_eq!(
        describe_status("azure", 401, r#"{"error":"nope"}"#),
        r#"azure API error (401): 401 "nope""#
    );
    assert_eq!(
        describe_status("openai", 503, "busy"),
        "OpenAI API error (503): 503 busy"
    );
    assert_eq!(
        describe_status("openai", 502, ""),
        "OpenAI API error (502): 502 status code (no body)"
    );
    // An empty error object is no body: the SDK's message stays.
    assert_eq!(
        describe_status("openai", 500, r#"{"error":{}}"#),
        "OpenAI API error (500): 500 {}"
    );
    // A long error object is cut at 4000 UTF-16 units.
    let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "é".repeat(5000));
    let text = describe_status("openai", 400, &long);
    assert!(
        text.ends_with("... [truncated 1014 chars]"),
        "{}",
        &text[text.len() - 40..]
    );
    // The retry-delay text quotes the SDK's own message.
    assert_eq!(sdk_message(429, error), "429 Bad input");
    assert_eq!(
        sdk_message(429, r#"{"detail":"x"}"#),
        r#"429 {"detail":"x"}"#
    );
}

fn call(model: crate::json::Json, messages: Vec<crate::json::Json>) -> super::super::Call {
    super::super::Call {
        model: model.into(),
        messages: crate::message::from_json_vec(messages).into(),
        options: json!({}),
        signal: crate::host::AbortSignal::new(),
        api_key: Some("k".into()),
        transport: Default::default(),
    }
}

fn header<'a>(request: &'a super::super::http::HttpRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn github_copilot_gets_its_initiator_intent_and_vision_headers() {
    let model = json!({"id": "gpt-5", "api": "openai-responses", "provider": "github-copilot",
        "baseUrl": "https://api.githubcopilot.com", "reasoning": true, "input": ["text", "image"],
        "contextWindow": 128000, "maxTokens": 1000});
    let user = json!({"role": "user", "content": [{"type": "text", "text": "see"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}], "timestamp": 1});
    let call_1 = call(model.clone(), vec![user.clone()]);
    let compat = super::detect_compat(&call_1);
    let (request, _) = super::request::build_request(&call_1, &compat).unwrap();
    assert_eq!(header(&request, "x-initiator"), Some("user"));
    assert_eq!(
        header(&request, "openai-intent"),
        Some("conversation-edits")
    );
    assert_eq!(header(&request, "copilot-vision-request"), Some("true"));
    // After a tool result the agent continues the turn; no images, no vision header.
    let assistant = json!({"role": "assistant", "api": "openai-responses", "provider": "github-copilot",
        "model": "gpt-5", "stopReason": "toolUse", "timestamp": 2,
        "content": [{"type": "toolCall", "id": "call_1|fc_1", "name": "read", "arguments": {}}]});
    let result = json!({"role": "toolResult", "toolCallId": "call_1|fc_1", "toolName": "read",
        "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 3});
    let plain_user = json!({"role": "user", "content": "go", "timestamp": 1});
    let call_2 = call(model, vec![plain_user, assistant, result]);
    let (request, _) = super::request::build_request(&call_2, &compat).unwrap();
    assert_eq!(header(&request, "x-initiator"), Some("agent"));
    assert_eq!(header(&request, "copilot-vision-request"), None);
    // Copilot without a level sends no `reasoning` at all.
    assert!(!request.body.contains("\"reasoning\""), "{}", request.body);
}

mod stream {
    use super::super::response::Delta;
    use crate::json::{json, Json};

    use crate::providers::fuzzing::{read, sse_body, Api};

    /// What the receiver got from a reader fed `events` as data events, views on or off.
    fn transcript(views: bool, events: &[String]) -> Vec<Json> {
        read(Api::OpenAiResponses, &sse_body(events), 1 << 20, views)
    }

    #[test]
    fn deltas_read_through_views_give_what_the_general_path_gives() {
        let opening: Vec<String> = [
            json!({"type": "response.created", "response": {"id": "resp_1"}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            json!({"type": "response.output_item.added", "output_index": 2,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls", "arguments": ""}}),
        ]
        .iter()
        .map(crate::json::to_string)
        .collect();
        let deltas = [
            // Usual: each kind into its item, escapes, a repeated key, spaces.
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"hm"}"#,
            r#"{"type":"response.reasoning_text.delta","output_index":0,"delta":"\u00e9"}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hi\n","logprobs":[]}"#,
            r#"{"type":"response.refusal.delta","output_index":1,"delta":"no"}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{\"a\":"}"#,
            r#" { "type" : "response.output_text.delta" , "output_index" : 1 , "delta" : "a" , "delta" : "b" , "error" : null } "#,
            // No item of that kind at that index, or no item at all: ignored.
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"x"}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":7,"delta":"x"}"#,
            // Unusual: the general path decides.
            r#"{"type":"response.output_text.delta","output_index":1,"delta":5}"#,
            r#"{"type":"response.output_text.delta","output_index":1}"#,
            r#"{"type":"response.output_text.delta","output_index":"1","delta":"s"}"#,
            r#"{"type":"response.output_text.delta","output_index":1.0,"delta":"f"}"#,
            r#"{"type":"response.output_text.delta","delta":"u"}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"delta":"\udc00"}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"delta":"e","error":{"message":"boom"}}"#,
            r#"{"type":"response.output_text.done","output_index":1,"text":"whole"}"#,
            // Malformed JSON: the general path's failure.
            r#"{"type":"response.output_text.delta","output_index":1,"delta":"m""#,
        ];
        for delta in &deltas[..8] {
            assert!(Delta::read(delta).is_some(), "{delta}");
        }
        for delta in &deltas[8..] {
            assert!(Delta::read(delta).is_none(), "{delta}");
        }
        let compare = |picked: &[&str]| {
            let mut events = opening.clone();
            events.extend(picked.iter().map(|d| d.to_string()));
            assert_eq!(
                transcript(true, &events),
                transcript(false, &events),
                "{picked:?}"
            );
        };
        for first in &deltas {
            for second in &deltas {
                compare(&[first, second]);
            }
        }
        compare(&deltas);
    }
}

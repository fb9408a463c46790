use super::super::http::ErrorHead;
use super::request::uses_thinking_level;
use super::response::{describe_status, error_chunk, fallback_tool_call_id, Frames};
use super::*;

fn frames(reads: &[&[u8]]) -> (Vec<String>, bool) {
    let mut frames = Frames::default();
    let events = reads.iter().flat_map(|r| frames.feed(r)).collect();
    (events, frames.leftover())
}

#[test]
fn events_end_at_the_first_of_the_three_delimiters_and_only_data_counts() {
    let body = b"data: {\"a\":1}\n\n: ping\r\rdata:{\"b\":2}\r\n\r\nevent: x\ndata: {\"c\":3}\n\n  data: {\"d\":\"\xc3\xa9\"} \r\r";
    let (events, leftover) = frames(&[body]);
    assert_eq!(events, ["{\"a\":1}", "{\"b\":2}", "{\"d\":\"é\"}"]);
    assert!(!leftover);
    // However the reads cut the body (inside delimiters and characters), the events are the same.
    for cut in 0..body.len() {
        for second in cut..body.len() {
            let (split, _) = frames(&[&body[..cut], &body[cut..second], &body[second..]]);
            assert_eq!(split, events, "cut at {cut} and {second}");
        }
    }
}

#[test]
fn a_crlf_not_followed_by_another_is_no_delimiter_and_text_left_over_is_reported() {
    let (events, leftover) = frames(&[b"data: {\"a\":\r\n1}\r\n\r", b"\ndata: {\"b\""]);
    assert_eq!(events, ["{\"a\":\r\n1}"]);
    assert!(leftover);
    let (_, leftover) = frames(&[b"data: {}\n\n \r\n\t"]);
    assert!(!leftover, "blank text at the end is no segment");
}

#[test]
fn ten_thousand_events_in_one_read_all_come_out() {
    let one = b"data: {\"candidates\":[]}\n\n";
    let body: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * 10_000)
        .collect();
    let (events, leftover) = frames(&[&body]);
    assert_eq!(events.len(), 10_000);
    assert!(!leftover);
}

#[test]
fn fallback_ids_are_reproducible_and_skip_taken_ones() {
    assert_eq!(
        fallback_tool_call_id("read", Some("r-1"), 1, &[]),
        "read_r-1_1"
    );
    assert_eq!(fallback_tool_call_id("read", None, 2, &[]), "read_2");
    assert_eq!(fallback_tool_call_id("read", Some(""), 2, &[]), "read_2");
    let taken = ["read_r-1_3".to_string(), "read_r-1_4".to_string()];
    assert_eq!(
        fallback_tool_call_id("read", Some("r-1"), 3, &taken),
        "read_r-1_5"
    );
}

#[test]
fn error_chunks_need_an_http_code() {
    assert_eq!(
        error_chunk(" {\"error\":{\"code\":500,\"status\":\"INTERNAL\"}} ").as_deref(),
        Some("got status: INTERNAL. {\"error\":{\"code\":500,\"status\":\"INTERNAL\"}}")
    );
    assert_eq!(
        error_chunk("{\"error\":{\"code\":429}}").as_deref(),
        Some("got status: undefined. {\"error\":{\"code\":429}}")
    );
    assert_eq!(error_chunk("{\"error\":{\"code\":200}}"), None);
    assert_eq!(error_chunk("{\"error\":\"text\"}"), None);
    assert_eq!(error_chunk("data: {\"error\":{\"code\":500}}"), None);
}

#[test]
fn http_errors_read_like_the_google_sdk() {
    let json = ErrorHead {
        reason: "Bad Request".into(),
        content_type: Some("application/json; charset=UTF-8".into()),
    };
    assert_eq!(
        describe_status(400, "{\n \"error\": {\"code\": 400}\n}", Some(&json)),
        "{\"error\":{\"code\":400}}"
    );
    assert_eq!(
        describe_status(400, "", Some(&json)),
        "Unexpected end of JSON input"
    );
    let text = ErrorHead {
        reason: "Service Unavailable".into(),
        content_type: Some("text/plain".into()),
    };
    assert_eq!(
        describe_status(503, "down \"now\"", Some(&text)),
        "{\"error\":{\"message\":\"down \\\"now\\\"\",\"code\":503,\"status\":\"Service Unavailable\"}}"
    );
}

#[test]
fn model_families() {
    assert_eq!(gemini_major_version("gemini-2.5-pro"), Some(2));
    assert_eq!(gemini_major_version("Gemini-Live-3-flash"), Some(3));
    assert_eq!(gemini_major_version("gemini-exp-1206"), None);
    assert!(requires_tool_call_id("gemini-3-pro-preview"));
    assert!(requires_tool_call_id("claude-sonnet-4-5"));
    assert!(!requires_tool_call_id("gemini-2.5-flash"));
    for id in [
        "gemini-3-flash-preview",
        "gemini-3.1-pro-preview",
        "gemini-4-argon",
        "gemini-flash-latest",
        "gemma-4-27b-it",
        "gemma4-e4b",
    ] {
        assert!(uses_thinking_level(id), "{id}");
    }
    for id in [
        "gemini-2.5-pro",
        "gemini-3-nano",
        "gemini-flash-lite",
        "gemma-3-27b",
    ] {
        assert!(!uses_thinking_level(id), "{id}");
    }
}

mod stream {
    use super::super::response::TextChunk;
    use crate::json::Json;

    use crate::providers::fuzzing::{read, sse_body, Api};

    /// What the receiver got from a reader fed `chunks` as data events, views on or off.
    fn transcript(views: bool, chunks: &[&str]) -> Vec<Json> {
        read(Api::GoogleGenerativeAi, &sse_body(chunks), 1 << 20, views)
    }

    #[test]
    fn chunks_read_through_views_give_what_the_general_path_gives() {
        let usage = r#""usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3,"totalTokenCount":15}"#;
        let usual = [
            format!(r#"{{"candidates":[{{"content":{{"parts":[{{"text":"Hi \u00e9"}}],"role":"model"}},"index":0}}],{usage},"modelVersion":"gemini-x","responseId":"r1"}}"#),
            r#"{"candidates":[{"content":{"parts":[{"text":"think","thought":true,"thoughtSignature":"sig1"}]}}],"responseId":""}"#.into(),
            r#"{"candidates":[{"content":{"parts":[{"text":"a","thought":false},{"text":"b","text":"c","thoughtSignature":""},{"inlineData":{}}]}}]}"#.into(),
            r#" {"candidates":[{"content":null}],"usageMetadata":null,"error":null} "#.into(),
            r#"{"candidates":[],"usageMetadata":{"promptTokenCount":"7"}}"#.into(),
            r#"{"responseId":"r2"}"#.into(),
        ];
        for chunk in &usual {
            assert!(TextChunk::read(chunk).is_some(), "{chunk}");
        }
        let unusual = [
            r#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"ls","args":{}}}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":5}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"x","thought":"yes"}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"\ud800"}]}}]}"#,
            r#"{"responseId":7,"candidates":[{"content":{"parts":[{"text":"x"}]}}]}"#,
            r#"{"error":{"code":500,"message":"boom","status":"INTERNAL"}}"#,
            r#"{"candidates":{"0":{}}}"#,
            r#"[{"candidates":[]}]"#,
            // Malformed JSON: the general path's failure.
            r#"{"candidates":[{"content":{"parts":[{"text":"x"}]}}]"#,
        ];
        for chunk in &unusual {
            assert!(TextChunk::read(chunk).is_none(), "{chunk}");
        }
        let all: Vec<&str> = usual.iter().map(String::as_str).chain(unusual).collect();
        for first in &all {
            for second in &all {
                let chunks = [*first, *second];
                assert_eq!(
                    transcript(true, &chunks),
                    transcript(false, &chunks),
                    "{chunks:?}"
                );
            }
        }
        assert_eq!(transcript(true, &all), transcript(false, &all));
    }
}

//! Unit tests of the openai-completions request and response mapping. The behaviour pi-ai shows
//! on the wire is pinned by the fixtures in tests/providers; these check the pieces.

use super::request::{normalize_id, short_hash};
use crate::json::json;
use crate::providers::transcript::request_tools;

#[test]
fn short_hash_matches_pi_ai() {
    // Values printed by pi-ai 1.6.0's `shortHash`.
    assert_eq!(short_hash(""), "k4n83c7h0j2b");
    assert_eq!(short_hash("a"), "m8735310ae7sx");
    assert_eq!(short_hash("call_1|fc_2"), "18bn75215iyno9");
    assert_eq!(short_hash("\u{e9}\u{1F600}x"), "1i488u5srdge7");
    assert_eq!(short_hash(&"x".repeat(1000)), "zykls21ciz8e3");
}

#[test]
fn pipe_ids_are_joined_then_hashed_past_40_units() {
    assert_eq!(normalize_id("call_1|fc_2", false), "call_1_fc_2");
    assert_eq!(normalize_id("call_1|", true), "call_1");
    // Each UTF-16 unit outside the allowed set becomes one `_`.
    assert_eq!(normalize_id("c\u{1F600}|i+", false), "c___i_");
    let long = format!("call_{}|fc_{}", "q".repeat(45), "A+/=".repeat(20));
    let normalized = normalize_id(&long, false);
    assert_eq!(normalized.len(), 40);
    let hash: String = short_hash(&long).chars().take(8).collect();
    assert_eq!(normalized, format!("call_{}_{hash}", "q".repeat(26)));
}

#[test]
fn plain_ids_are_cut_at_40_units_for_openai_only() {
    let id = "toolu_".to_string() + &"0123456789".repeat(5);
    assert_eq!(normalize_id(&id, true), id[..40]);
    assert_eq!(normalize_id(&id, false), id);
    // A pair that would be cut in half is dropped.
    let emoji = format!("{}\u{1F600}", "a".repeat(39));
    assert_eq!(normalize_id(&emoji, true), "a".repeat(39));
}

fn system(added: &[&str], removed: &[&str]) -> crate::json::Json {
    let added: Vec<_> = added.iter().map(|n| json!({"name": n})).collect();
    let removed: Vec<_> = removed.iter().map(|n| json!({"name": n})).collect();
    json!({"role": "system", "content": "", "toolsAdded": added, "toolsRemoved": removed})
}

fn names(tools: &[crate::json::Json]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[test]
fn request_tools_fold_up_to_the_last_removal_or_redeclaration() {
    let user = json!({"role": "user", "content": "x"});
    let messages = vec![
        system(&["a"], &[]),
        user.clone(),
        system(&["b"], &[]),
        user.clone(),
        system(&["c"], &["a"]),
        system(&["d"], &[]),
    ];
    let (tools, folded) = request_tools(&messages, true);
    assert_eq!((names(&tools), folded), (vec!["b", "c"], 3));
    // Without in-place additions every system message is folded.
    let (tools, folded) = request_tools(&messages, false);
    assert_eq!((names(&tools), folded), (vec!["b", "c", "d"], 4));
    // Only additions: the leading message alone is folded; none when it is not a system one.
    let additive = vec![system(&["a"], &[]), user.clone(), system(&["b"], &[])];
    let (tools, folded) = request_tools(&additive, true);
    assert_eq!((names(&tools), folded), (vec!["a"], 1));
    let (tools, folded) = request_tools(&additive[1..], true);
    assert_eq!((names(&tools), folded), (Vec::<&str>::new(), 0));
    // A name declared again after its removal counts as a redeclaration.
    let again = vec![
        system(&["a"], &[]),
        system(&[], &["a"]),
        system(&["a"], &[]),
    ];
    assert_eq!(request_tools(&again, true).1, 3);
}

mod stream {
    use super::super::response::{Reader, Step, TextChunk};
    use crate::json::{json, to_string, Json};
    use crate::providers::output::{Output, MAX_TOOL_CALLS, MAX_TOOL_CALL_ARGUMENT_BYTES};
    use crate::providers::sse::SseEvent;
    use crate::providers::Call;
    use crate::stream::channel;

    fn call() -> Call {
        crate::providers::fuzzing::call("openai-completions", "vllm")
    }

    fn tool_calls(entries: Json) -> SseEvent {
        let chunk = json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": entries}}]});
        SseEvent {
            event: None,
            data: to_string(&chunk),
        }
    }

    /// Feeds the events to a reader and returns the first failure text, if any.
    fn first_failure(events: impl IntoIterator<Item = SseEvent>) -> (usize, Option<String>) {
        let call = call();
        let (sender, _receiver) = channel(&call.model);
        let mut reader = Reader::new(Output::new(sender, &call.model));
        let mut handled = 0;
        for event in events {
            match reader.event(&call, event).expect("the stream is consumed") {
                Step::Fail(text) => return (handled, Some(text)),
                Step::Continue | Step::Done => handled += 1,
            }
        }
        (handled, None)
    }

    #[test]
    fn tool_calls_past_the_cap_fail_the_stream() {
        let events = (0..=MAX_TOOL_CALLS).map(|i| {
            tool_calls(json!([{"index": i, "id": format!("call_{i}"),
                "function": {"name": "ls", "arguments": "{}"}}]))
        });
        let (handled, failure) = first_failure(events);
        assert_eq!(handled, MAX_TOOL_CALLS);
        assert_eq!(
            failure.as_deref(),
            Some("The model sent more than 1000 tool calls in one response (limit for tool calls per response).")
        );
        // Entries for calls already open do not count again.
        let events = (0..3 * MAX_TOOL_CALLS).map(|i| {
            tool_calls(json!([{"index": i % MAX_TOOL_CALLS, "function": {"arguments": " "}}]))
        });
        assert_eq!(first_failure(events), (3 * MAX_TOOL_CALLS, None));
    }

    #[test]
    fn arguments_past_the_cap_fail_the_stream() {
        let piece = "x".repeat(1 << 20);
        let pieces = MAX_TOOL_CALL_ARGUMENT_BYTES / piece.len();
        let events = (0..=pieces).map(|_| {
            tool_calls(json!([{"index": 0, "id": "call_1", "function": {"arguments": piece}}]))
        });
        let (handled, failure) = first_failure(events);
        assert_eq!(handled, pieces);
        assert_eq!(
            failure.as_deref(),
            Some("The model sent more than 8388608 bytes of arguments for one tool call (limit for one tool call's arguments).")
        );
        // The cap is per call: two calls of half the cap each are fine.
        let half = (0..pieces)
            .map(|i| tool_calls(json!([{"index": i % 2, "function": {"arguments": piece}}])));
        assert_eq!(first_failure(half), (pieces, None));
    }

    use crate::providers::fuzzing::{read, sse_body, Api};

    /// What the receiver got from a reader fed `chunks` as data events, views on or off.
    fn transcript(views: bool, chunks: &[&str]) -> Vec<Json> {
        read(Api::OpenAiCompletions, &sse_body(chunks), 1 << 20, views)
    }

    #[test]
    fn chunks_read_through_views_give_what_the_general_path_gives() {
        let text = |id: &str, content: &str| {
            format!(
                r#"{{"id":{id},"object":"chat.completion.chunk","model":"gpt-x","choices":[{{"index":0,"delta":{{"content":{content}}},"finish_reason":null}}]}}"#
            )
        };
        let usual = [
            text(r#""c1""#, r#""Hel""#),
            text(r#""""#, r#""x""#),
            text(r#""c1""#, r#""lo \n \u00e9 \ud83d\ude00""#),
            r#" {"id":"c1","model":"m","choices":[{"delta":{"role":"assistant","content":""}}],"usage":null} "#.into(),
            r#"{"id":"c1","choices":[]}"#.into(),
            r#"{"id":"c1"}"#.into(),
            r#"{"choices":[{"delta":null}],"error":null}"#.into(),
            r#"{"id":"c1","choices":[{"delta":{"content":"a","content":"b","tool_calls":null}}]}"#.into(),
        ];
        for chunk in &usual {
            assert!(TextChunk::read(chunk).is_some(), "{chunk}");
        }
        let unusual = [
            text("null", r#""x""#),
            text("7", r#""x""#),
            text(r#""c2""#, "5"),
            text(r#""c2""#, r#""\ud800 lone""#),
            r#"{"id":"c2","choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#.into(),
            r#"{"id":"c2","choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#.into(),
            r#"{"id":"c2","choices":[{"delta":{"reasoning_content":"think"}}]}"#.into(),
            r#"{"id":"c2","choices":[{"delta":{"content":"x","tool_calls":[{"index":0,"id":"t","function":{"name":"ls","arguments":"{}"}}]}}]}"#.into(),
            r#"{"id":"c2","choices":[{"delta":"text"}]}"#.into(),
            r#"{"id":"c2","choices":{"0":{"delta":{"content":"x"}}}}"#.into(),
            r#"{"id":"c2","choices":[7]}"#.into(),
            r#"{"id":"c2","error":false,"choices":[{"delta":{"content":"x"}}]}"#.into(),
            r#"["id","choices"]"#.into(),
            // Malformed JSON: the general path's failure.
            r#"{"id":"c2","choices":[{"delta":{"content":"x"}}]"#.into(),
        ];
        for chunk in &unusual {
            assert!(TextChunk::read(chunk).is_none(), "{chunk}");
        }
        // Every pair, and every rotation of the whole list both ways (ids, models and text blocks
        // depend on what came before).
        let all: Vec<&str> = usual.iter().chain(&unusual).map(String::as_str).collect();
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
        for start in 0..all.len() {
            let mut chunks = all[start..].to_vec();
            chunks.extend(&all[..start]);
            assert_eq!(
                transcript(true, &chunks),
                transcript(false, &chunks),
                "from {start}"
            );
            chunks.reverse();
            assert_eq!(
                transcript(true, &chunks),
                transcript(false, &chunks),
                "from {start}, reversed"
            );
        }
    }
}

//! The compaction summary (issue 27): what the summarizer is sent (kit §4.5's data in
//! libagent's wording), the split turn's second request, the file lists appended, and each way
//! the request fails.
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::context::{summarize, Summary, SummaryInput, SUMMARY_ABORTED};
use agent::host::{AbortSignal, StreamFn, StreamRequest};
use agent::json::{json, Json};
use agent::stream::StreamSender;
use common::*;

fn assistant(content: Json) -> Json {
    json!({"role": "assistant", "content": content, "api": "a", "provider": "p", "model": "m1",
        "usage": zero(), "stopReason": "stop", "timestamp": 1})
}

fn tool_result(id: &str, text: &str) -> Json {
    json!({"role": "toolResult", "toolCallId": id, "toolName": "read",
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 1})
}

fn usage(input: u64, output: u64) -> Json {
    json!({"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": input + output,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

/// The prompt text of a summary request (its user message).
fn prompt_of(request: &StreamRequest) -> String {
    let messages = request_messages(request);
    assert_eq!(messages.len(), 2, "a system prompt and one user message");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    messages[1]["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_string()
}

async fn run(
    stream_fn: &StreamFn,
    preparation: &Json,
    focus: Option<&str>,
) -> Result<Summary, String> {
    let options = json!({"apiKey": "k", "reasoning": "high", "sessionId": "s1"});
    let input = SummaryInput {
        preparation,
        focus,
        reserve_tokens: 16384,
    };
    summarize(stream_fn, &model(), &options, input, &AbortSignal::new()).await
}

fn long_output() -> String {
    format!("{}TAIL-NOT-SENT", "x".repeat(1990) + "HEAD-SENT!")
}

#[tokio::test]
async fn the_request_carries_every_message_the_previous_summary_the_focus_and_the_budget() {
    let preparation = json!({
        "firstKeptEntryId": "e9", "isSplitTurn": false, "tokensBefore": 50000,
        "previousSummary": "## Goal\nPort the parser\n\n---\nFiles this conversation has touched so far:\n\nRead:\n- old.rs",
        "messagesToSummarize": [
            umsg("please fix the lexer"),
            assistant(json!([
                {"type": "thinking", "thinking": "PRIVATE-THOUGHT"},
                {"type": "text", "text": "Looking at it."},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/lex.rs"}}
            ])),
            tool_result("c1", &long_output()),
            {"role": "bashExecution", "command": "cargo test", "output": "3 passed", "exitCode": 0, "timestamp": 1},
            assistant(json!([{"type": "text", "text": "The lexer is fixed."}])),
        ],
        "turnPrefixMessages": [],
        "readFiles": ["old.rs", "src/lex.rs"], "modifiedFiles": ["src/parse.rs"],
    });
    let (stream_fn, requests) = scripted(vec![json!({
        "content": [{"type": "text", "text": "## Goal\nFix the lexer", "chunks": 3}],
        "usage": usage(900, 40),
    })]);
    let summary = run(&stream_fn, &preparation, Some("keep the API design"))
        .await
        .expect("summary");

    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let prompt = prompt_of(request);
    for data in [
        "please fix the lexer",
        "Looking at it.",
        "read",
        r#"{"path":"src/lex.rs"}"#,
        "HEAD-SENT!",
        "cargo test",
        "3 passed",
        "The lexer is fixed.",
        "## Goal\nPort the parser",
        "keep the API design",
    ] {
        assert!(prompt.contains(data), "{data:?} missing from {prompt}");
    }
    // Thinking is never sent; a tool result is cut to 2000 UTF-16 units, and the cut is said.
    assert!(!prompt.contains("PRIVATE-THOUGHT"));
    assert!(!prompt.contains("TAIL-NOT-SENT"));
    assert!(prompt.contains("13 more characters"));
    // The previous summary's file lists are not sent again: the preparation carries them.
    assert!(!prompt.contains("old.rs"));
    // Messages in order.
    let at = |s: &str| prompt.find(s).unwrap();
    assert!(at("please fix the lexer") < at("Looking at it."));
    assert!(at("HEAD-SENT!") < at("cargo test"));
    assert!(at("cargo test") < at("The lexer is fixed."));

    // No tools, reasoning off, the output budget from the reserve; the agent's options kept.
    let messages = request_messages(request);
    assert!(messages.iter().all(|m| m.get("toolsAdded").is_none()));
    assert!(!messages[0]["content"].as_str().unwrap().is_empty());
    assert_eq!(request.options["maxTokens"], 13107);
    assert!(request.options.get("reasoning").is_none());
    assert_eq!(request.options["apiKey"], "k");
    assert_eq!(request.options["sessionId"], "s1");

    // The answer, then the file lists in the summary.
    assert!(summary.summary.starts_with("## Goal\nFix the lexer"));
    let lists = &summary.summary["## Goal\nFix the lexer".len()..];
    assert!(lists.contains("Read:\n- old.rs\n- src/lex.rs"), "{lists}");
    assert!(lists.contains("Modified:\n- src/parse.rs"), "{lists}");
    assert_eq!(summary.usage, Some(usage(900, 40)));
}

#[tokio::test]
async fn the_output_budget_is_capped_by_the_models_own_limit() {
    let preparation = json!({"messagesToSummarize": [umsg("hi")], "turnPrefixMessages": []});
    let (stream_fn, requests) = scripted(vec![text_response("S", 1)]);
    let mut model = model();
    model["maxTokens"] = json!(4096);
    let input = SummaryInput {
        preparation: &preparation,
        focus: None,
        reserve_tokens: 16384,
    };
    let summary = summarize(&stream_fn, &model, &json!({}), input, &AbortSignal::new())
        .await
        .expect("summary");
    assert_eq!(summary.summary, "S", "no file lists when there are none");
    assert_eq!(requests.lock().unwrap()[0].options["maxTokens"], 4096);
}

#[tokio::test]
async fn a_split_turn_makes_a_second_request_for_the_turns_start() {
    let preparation = json!({
        "isSplitTurn": true,
        "previousSummary": null,
        "messagesToSummarize": [umsg("EARLIER-QUESTION"), assistant(json!([{"type": "text", "text": "EARLIER-ANSWER"}]))],
        "turnPrefixMessages": [
            umsg("TURN-QUESTION"),
            assistant(json!([{"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "a.rs"}}])),
            tool_result("c1", "TURN-RESULT"),
        ],
        "readFiles": [], "modifiedFiles": ["a.rs"],
    });
    let (stream_fn, requests) = scripted(vec![
        json!({"content": [{"type": "text", "text": "HISTORY-SUMMARY"}], "usage": usage(100, 10)}),
        json!({"content": [{"type": "text", "text": "PREFIX-SUMMARY"}], "usage": usage(50, 5)}),
    ]);
    let summary = run(&stream_fn, &preparation, None).await.expect("summary");

    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let history = prompt_of(&requests[0]);
    let prefix = prompt_of(&requests[1]);
    assert!(history.contains("EARLIER-QUESTION") && history.contains("EARLIER-ANSWER"));
    assert!(!history.contains("TURN-QUESTION"));
    assert!(prefix.contains("TURN-QUESTION") && prefix.contains("TURN-RESULT"));
    assert!(prefix.contains("edit") && prefix.contains(r#"{"path":"a.rs"}"#));
    assert!(!prefix.contains("EARLIER-QUESTION"));
    assert_eq!(requests[1].options["maxTokens"], 8192);

    let text = &summary.summary;
    let (h, p) = (
        text.find("HISTORY-SUMMARY").unwrap(),
        text.find("PREFIX-SUMMARY").unwrap(),
    );
    assert!(h < p);
    assert!(
        text[h..p].contains("\n# "),
        "the parts are under headings: {text}"
    );
    assert!(text[p..].contains("Modified:\n- a.rs"));
    assert_eq!(summary.usage, Some(usage(150, 15)));
}

#[tokio::test]
async fn a_split_turn_with_no_earlier_messages_keeps_the_previous_summary() {
    let preparation = json!({
        "isSplitTurn": true,
        "previousSummary": "OLD-SUMMARY",
        "messagesToSummarize": [],
        "turnPrefixMessages": [umsg("TURN-QUESTION")],
    });
    let (stream_fn, requests) = scripted(vec![text_response("PREFIX-SUMMARY", 1)]);
    let summary = run(&stream_fn, &preparation, None).await.expect("summary");
    assert_eq!(requests.lock().unwrap().len(), 1);
    let text = &summary.summary;
    assert!(text.find("OLD-SUMMARY").unwrap() < text.find("PREFIX-SUMMARY").unwrap());
}

#[tokio::test]
async fn nothing_to_summarize_is_refused_without_a_request() {
    let preparation = json!({"messagesToSummarize": [], "turnPrefixMessages": []});
    let (stream_fn, requests) = scripted(vec![text_response("S", 1)]);
    let error = run(&stream_fn, &preparation, None).await.unwrap_err();
    assert!(error.contains("nothing to summarize"), "{error}");
    assert!(requests.lock().unwrap().is_empty());
}

async fn failure_of(response: Json) -> String {
    let preparation = json!({"messagesToSummarize": [umsg("hi")], "turnPrefixMessages": []});
    let (stream_fn, _) = scripted(vec![response]);
    run(&stream_fn, &preparation, None)
        .await
        .expect_err("the summary must fail")
}

#[tokio::test]
async fn each_failure_of_the_request_gives_its_sentence() {
    let error = failure_of(json!({"stopReason": "error",
        "errorMessage": "529 overloaded_error: Overloaded"}))
    .await;
    assert!(error.contains("failed") && error.contains("529 overloaded_error: Overloaded"));

    let error =
        failure_of(json!({"stopReason": "aborted", "errorMessage": "Request was aborted"})).await;
    assert!(error.contains("aborted") && error.contains("Request was aborted"));

    let error = failure_of(json!({"content": [{"type": "text", "text": "partial"}],
        "stopReason": "length"}))
    .await;
    assert!(
        error.contains("13107 output tokens") && error.contains("length"),
        "{error}"
    );

    let error = failure_of(tool_response(&[("c1", "read", json!({"path": "x"}))])).await;
    assert!(error.contains("tool call"), "{error}");

    let error = failure_of(json!({"content": [{"type": "text", "text": "  "}]})).await;
    assert!(error.contains("without any text"), "{error}");

    let error = failure_of(json!({"throw": "connect ECONNREFUSED 127.0.0.1:9"})).await;
    assert!(
        error.contains("failed: connect ECONNREFUSED 127.0.0.1:9"),
        "{error}"
    );
}

#[tokio::test]
async fn a_failure_of_the_second_request_fails_the_split_summary() {
    let preparation = json!({
        "messagesToSummarize": [umsg("a")],
        "turnPrefixMessages": [umsg("b")],
    });
    let (stream_fn, requests) = scripted(vec![
        text_response("HISTORY", 1),
        json!({"stopReason": "error", "errorMessage": "boom"}),
    ]);
    let error = run(&stream_fn, &preparation, None).await.unwrap_err();
    assert!(error.contains("boom"));
    assert_eq!(requests.lock().unwrap().len(), 2);
}

/// A stream function that never answers (it keeps its senders alive).
fn stalled() -> (StreamFn, Arc<Mutex<Vec<StreamSender>>>) {
    let held: Arc<Mutex<Vec<StreamSender>>> = Arc::default();
    let keep = held.clone();
    let f: StreamFn = Arc::new(move |_request: StreamRequest, sender: StreamSender| {
        keep.lock().unwrap().push(sender);
    });
    (f, held)
}

#[tokio::test]
async fn an_abort_ends_a_stalled_request_at_once() {
    let preparation = json!({"messagesToSummarize": [umsg("hi")], "turnPrefixMessages": []});
    let (stream_fn, held) = stalled();
    let signal = AbortSignal::new();
    let aborter = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        aborter.abort();
    });
    let input = SummaryInput {
        preparation: &preparation,
        focus: None,
        reserve_tokens: 1000,
    };
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        summarize(&stream_fn, &model(), &json!({}), input, &signal),
    )
    .await
    .expect("the abort must end the stalled request");
    assert_eq!(result.unwrap_err(), SUMMARY_ABORTED);
    assert!(started.elapsed() < Duration::from_secs(5));
    let held = held.lock().unwrap();
    assert_eq!(held.len(), 1, "the request was made");
    assert!(
        held[0].is_closed(),
        "the summary stopped consuming the stream"
    );
}

#[tokio::test]
async fn an_aborted_signal_makes_no_request() {
    let preparation = json!({"messagesToSummarize": [umsg("hi")], "turnPrefixMessages": []});
    let (stream_fn, requests) = scripted(vec![text_response("S", 1)]);
    let signal = AbortSignal::new();
    signal.abort();
    let input = SummaryInput {
        preparation: &preparation,
        focus: None,
        reserve_tokens: 1000,
    };
    let error = summarize(&stream_fn, &model(), &json!({}), input, &signal)
        .await
        .unwrap_err();
    assert_eq!(error, SUMMARY_ABORTED);
    assert!(requests.lock().unwrap().is_empty());
}

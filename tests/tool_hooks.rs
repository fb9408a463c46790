//! Hooks around tool calls and batch termination (SPEC §6.7, §6.9, §6.10; checklist items
//! 148–150, 156–158, 162–166, 174).
mod common;

use agent::agent_loop::LoopConfig;
use agent::host::AgentTool;
use agent::json::{json, to_string, Json};
use common::calls::*;
use common::*;

#[tokio::test]
async fn c148_abort_during_before_tool_call_wins_over_block() {
    let before = hook(|_, signal| {
        signal.abort();
        Ok(Some(json!({"block": true, "reason": "nope"})))
    });
    let config = LoopConfig {
        before_tool_call: Some(before),
        ..Default::default()
    };
    assert_eq!(
        t_call_ends(text_tool("t", "never", 0), config).await,
        [tool_end(
            "c1",
            "t",
            error_result("Operation aborted"),
            true,
            false
        )]
    );
}

#[tokio::test]
async fn c149_block_texts() {
    for (answer, text) in [
        (json!({"block": true}), "Tool execution was blocked"),
        (
            json!({"block": true, "reason": ""}),
            "Tool execution was blocked",
        ),
        (json!({"block": true, "reason": "policy"}), "policy"),
        (json!({"block": 1, "reason": "truthy"}), "truthy"),
    ] {
        let (before, _) = recording_hook(Some(answer));
        let config = LoopConfig {
            before_tool_call: Some(before),
            ..Default::default()
        };
        assert_eq!(
            t_call_ends(text_tool("t", "never", 0), config).await,
            [tool_end("c1", "t", error_result(text), true, false)]
        );
    }
}

#[tokio::test]
async fn c150_failing_before_tool_call_becomes_a_tool_error() {
    let config = LoopConfig {
        before_tool_call: Some(hook(|_, _| Err("hook broke".into()))),
        ..Default::default()
    };
    assert_eq!(
        t_call_ends(text_tool("t", "never", 0), config).await,
        [tool_end("c1", "t", error_result("hook broke"), true, false)]
    );
}

async fn after_with(result: Json, answer: Json) -> (Json, Json) {
    let (after, inputs) = recording_hook(Some(answer));
    let config = LoopConfig {
        after_tool_call: Some(after),
        ..Default::default()
    };
    let out = run_calls(
        vec![result_tool("t", result, 0)],
        vec![call("c1", "t", json!({}))],
        config,
    )
    .await;
    assert_eq!(inputs.lock().unwrap().len(), 1);
    (
        of_type(&out.events, "tool_execution_end")[0].clone(),
        results(&out.messages)[0].clone(),
    )
}

#[tokio::test]
async fn c156_after_tool_call_overrides_replace_wholesale() {
    let original = json!({"content": [{"type": "text", "text": "a"}], "details": {"x": 1, "y": 2}, "usage": zero(), "extra": 7});
    let (end, message) = after_with(
        original,
        json!({"details": {"z": 1}, "content": null, "usage": null}),
    )
    .await;
    assert_eq!(
        to_string(&end["result"]),
        to_string(
            &json!({"content": [{"type": "text", "text": "a"}], "details": {"z": 1},
        "usage": zero(), "extra": 7})
        )
    );
    assert_eq!(message["details"], json!({"z": 1}));
    assert_eq!(message["usage"], zero());
}

#[tokio::test]
async fn c157_content_override_drops_structured_content() {
    let original =
        json!({"content": [], "details": {}, "structuredContent": {"s": 1}, "isError": true});
    let (end, message) = after_with(
        original.clone(),
        json!({"content": [{"type": "text", "text": "b"}], "isError": false}),
    )
    .await;
    assert!(end["result"].get("structuredContent").is_none());
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": "b"}])
    );
    // The isError override changes the outcome, not the field inside the result.
    assert_eq!(end["isError"], false);
    assert_eq!(end["result"]["isError"], true);
    assert_eq!(message["isError"], false);
    let (end, _) = after_with(
        original.clone(),
        json!({"content": [], "structuredContent": {"t": 2}}),
    )
    .await;
    assert_eq!(end["result"]["structuredContent"], json!({"t": 2}));
    let (end, _) = after_with(original, json!({"details": {"d": 1}})).await;
    assert_eq!(end["result"]["structuredContent"], json!({"s": 1}));
}

#[tokio::test]
async fn c158_failing_after_tool_call_keeps_duration() {
    let config = LoopConfig {
        after_tool_call: Some(hook(|_, _| Err("after broke".into()))),
        ..Default::default()
    };
    assert_eq!(
        t_call_ends(text_tool("t", "R", 0), config).await,
        [tool_end("c1", "t", error_result("after broke"), true, true)]
    );
}

#[tokio::test]
async fn c162_abort_between_preparation_and_execution() {
    let (t, executed) = counting_tool("t");
    let before = hook(|input, signal| {
        if input["toolCall"]["id"] == "c2" {
            signal.abort();
        }
        Ok(None)
    });
    let config = LoopConfig {
        before_tool_call: Some(before),
        ..Default::default()
    };
    let calls = vec![
        call("c1", "t", json!({})),
        call("c2", "t", json!({})),
        call("c3", "t", json!({})),
    ];
    let out = run_calls(vec![t], calls, config).await;
    assert_eq!(
        tool_trace(&out.events)[..6],
        [
            "tool_execution_start:c1",
            "tool_execution_start:c2",
            "tool_execution_end:c2",
            "tool_execution_start:c3",
            "tool_execution_end:c3",
            "tool_execution_end:c1"
        ]
    );
    for end in of_type(&out.events, "tool_execution_end") {
        assert_eq!(end["result"], error_result("Operation aborted"));
        assert!(end.get("durationMs").is_none());
    }
    assert_eq!(*executed.lock().unwrap(), 0);
}

fn terminating(name: &str, terminate: Json) -> AgentTool {
    result_tool(
        name,
        json!({"content": [], "details": {}, "terminate": terminate}),
        0,
    )
}

#[tokio::test]
async fn c163_all_terminate_ends_the_run_but_queues_are_polled() {
    let tools = || vec![terminating("a", json!(true)), terminating("b", json!(true))];
    let calls = || vec![call("c1", "a", json!({})), call("c2", "b", json!({}))];
    let out = run_calls(tools(), calls(), LoopConfig::default()).await;
    assert_eq!(out.requests.lock().unwrap().len(), 1);
    let (follow_up, polls) = queue_source(vec![vec![umsg("fu")]]);
    let config = LoopConfig {
        get_follow_up_messages: Some(follow_up),
        ..Default::default()
    };
    let out = run_calls(tools(), calls(), config).await;
    assert_eq!(*polls.lock().unwrap(), 2);
    assert_eq!(out.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn c164_mixed_terminate_continues() {
    let tools = vec![
        terminating("a", json!(true)),
        terminating("b", json!("yes")),
    ];
    let out = run_calls(
        tools,
        vec![call("c1", "a", json!({})), call("c2", "b", json!({}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(out.requests.lock().unwrap().len(), 2);
    // A loop-made error result (unknown tool) also prevents termination.
    let out = run_calls(
        vec![terminating("a", json!(true))],
        vec![call("c1", "a", json!({})), call("c2", "zz", json!({}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(out.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn c165_blocked_terminate_participates() {
    for (terminate, requests) in [(json!(true), 1), (json!("true"), 2)] {
        let before = hook(move |input, _| {
            Ok((input["toolCall"]["id"] == "c2")
                .then(|| json!({"block": true, "terminate": terminate})))
        });
        let config = LoopConfig {
            before_tool_call: Some(before),
            ..Default::default()
        };
        let tools = vec![terminating("a", json!(true)), text_tool("b", "never", 0)];
        let out = run_calls(
            tools,
            vec![call("c1", "a", json!({})), call("c2", "b", json!({}))],
            config,
        )
        .await;
        assert_eq!(out.requests.lock().unwrap().len(), requests);
    }
}

#[tokio::test]
async fn c166_after_tool_call_terminate_participates() {
    let (after, _) = recording_hook(Some(json!({"terminate": true})));
    let config = LoopConfig {
        after_tool_call: Some(after),
        ..Default::default()
    };
    let out = run_calls(
        vec![text_tool("t", "R", 0)],
        vec![call("c1", "t", json!({}))],
        config,
    )
    .await;
    assert_eq!(out.requests.lock().unwrap().len(), 1);
    assert_eq!(
        of_type(&out.events, "tool_execution_end")[0]["result"]["terminate"],
        true
    );
}

#[tokio::test]
async fn c174_results_join_the_context_after_the_batch() {
    let (before, before_inputs) = recording_hook(None);
    let (after, after_inputs) = recording_hook(None);
    let config = LoopConfig {
        before_tool_call: Some(before),
        after_tool_call: Some(after),
        tool_execution: Some("sequential".into()),
        ..Default::default()
    };
    let calls = vec![call("c1", "t", json!({})), call("c2", "t", json!({}))];
    let out = run_calls(vec![text_tool("t", "R", 0)], calls, config).await;
    for inputs in [before_inputs, after_inputs] {
        let inputs = inputs.lock().unwrap();
        assert_eq!(inputs.len(), 2);
        for input in inputs.iter() {
            let messages = input["context"]["messages"].as_array().unwrap();
            assert_eq!(messages.last().unwrap()["role"], "assistant");
            assert_eq!(
                input["assistantMessage"]["content"]
                    .as_array()
                    .unwrap()
                    .len(),
                2
            );
        }
    }
    assert_eq!(results(&out.messages).len(), 2);
}

#[tokio::test]
async fn tool_answering_nothing_fails_the_call() {
    let t = tool_fn(def("quiet"), |_| Ok(None));
    let s = tool_fn(def("odd"), |_| Ok(Some(json!("text"))));
    let out = run_calls(
        vec![t, s],
        vec![call("c1", "quiet", json!({})), call("c2", "odd", json!({}))],
        LoopConfig::default(),
    )
    .await;
    let ends = of_type(&out.events, "tool_execution_end");
    let end = |id: &str| ends.iter().find(|e| e["toolCallId"] == id).unwrap().clone();
    assert_eq!(
        end("c1"),
        tool_end(
            "c1",
            "quiet",
            error_result("Tool quiet returned no result"),
            true,
            true
        )
    );
    assert_eq!(
        end("c2"),
        tool_end(
            "c2",
            "odd",
            error_result("Tool odd returned no result"),
            true,
            true
        )
    );
}

#[tokio::test]
async fn result_without_content_gives_an_empty_message_content() {
    let out = run_calls(
        vec![result_tool("t", json!({"details": {"d": 1}}), 0)],
        vec![call("c1", "t", json!({}))],
        LoopConfig::default(),
    )
    .await;
    let end = &of_type(&out.events, "tool_execution_end")[0];
    assert_eq!(to_string(&end["result"]), r#"{"details":{"d":1}}"#);
    assert_eq!(results(&out.messages)[0]["content"], json!([]));
}

#[tokio::test]
async fn validation_failure_text_in_the_tool_result() {
    let definition = json!({"name": "num", "label": "num", "description": "d", "parameters": {"type": "object",
        "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}, "opt": {"type": "string"}},
        "required": ["n"], "additionalProperties": false}});
    let t = tool_fn(definition, |_| Ok(Some(text_result("never", json!({})))));
    // argsText keeps the model's key order (the scripted model sorts `arguments` keys).
    let calls = vec![
        json!({"type": "toolCall", "id": "c1", "name": "num", "argsText": r#"{"n":"abc","extra":1}"#}),
    ];
    let out = run_calls(vec![t], calls, LoopConfig::default()).await;
    let text = "Validation failed for tool \"num\":\n  - n: expected integer, got string\n  - extra: unknown field\n\nReceived arguments:\n{\n  \"n\": \"abc\",\n  \"extra\": 1\n}";
    assert_eq!(
        of_type(&out.events, "tool_execution_end"),
        [tool_end("c1", "num", error_result(text), true, false)]
    );
}

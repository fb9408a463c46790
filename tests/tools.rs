//! Tool batches, hooks around tool calls and `runToolCall` (SPEC §6.6–§6.13; checklist items
//! 1, 4, 5, 9, 93, 109, 144–166, 173, 174, 176).
mod common;

use std::sync::{Arc, Mutex};

use agent::agent_loop::{run_tool_call, LoopConfig, RunToolCallOptions};
use agent::host::{AbortSignal, AgentTool, FnTool, HostFuture, ToolInvocation, UpdateFn};
use agent::json::{json, to_string, Json};
use common::calls::*;
use common::*;

fn number_tool(seen: Arc<Mutex<Vec<Json>>>) -> AgentTool {
    let definition = json!({"name": "num", "label": "num", "description": "d",
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}});
    tool_fn(definition, move |inv| {
        seen.lock().unwrap().push(inv.args.clone());
        Ok(Some(text_result("ok", json!({}))))
    })
}

#[tokio::test]
async fn c001_optional_fields_are_omitted() {
    let bare = tool_fn(def("bare"), |_| Ok(Some(json!({"content": []}))));
    let out = run_calls(
        vec![bare],
        vec![call("c1", "bare", json!({})), call("c2", "zz", json!({}))],
        LoopConfig::default(),
    )
    .await;
    let ends = of_type(&out.events, "tool_execution_end");
    let end = |id: &str| ends.iter().find(|e| e["toolCallId"] == id).unwrap().clone();
    assert_eq!(to_string(&end("c1")["result"]), r#"{"content":[]}"#);
    assert!(end("c2").get("durationMs").is_none());
    let trs = results(&out.messages);
    assert!(trs[0].get("details").is_none() && trs[0].get("usage").is_none());
    assert!(trs[1].get("durationMs").is_none());
    assert!(!to_string(&json!(out.messages)).contains("null"));
}

#[tokio::test]
async fn c004_numbers_render_per_js_rules() {
    let t = tool_fn(def("n"), |_| {
        Ok(Some(
            json!({"content": [], "details": {"a": 3.0, "b": 1e21, "c": 0.1, "d": 1e-7}}),
        ))
    });
    let out = run_calls(
        vec![t],
        vec![call("c1", "n", json!({}))],
        LoopConfig::default(),
    )
    .await;
    let end = &of_type(&out.events, "tool_execution_end")[0];
    assert_eq!(
        to_string(&end["result"]["details"]),
        r#"{"a":3,"b":1e+21,"c":0.1,"d":1e-7}"#
    );
}

#[tokio::test]
async fn c005_tool_result_message_key_order() {
    let usage = zero();
    let t = result_tool(
        "u",
        json!({"usage": usage, "extra": 1, "details": {"d": 1}, "content": [], "isError": false}),
        0,
    );
    let out = run_calls(
        vec![t],
        vec![call("c1", "u", json!({}))],
        LoopConfig::default(),
    )
    .await;
    let tr = &out
        .messages
        .iter()
        .find(|m| m["role"] == "toolResult")
        .unwrap();
    let keys: Vec<&String> = tr.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "role",
            "toolCallId",
            "toolName",
            "content",
            "details",
            "usage",
            "isError",
            "durationMs",
            "timestamp"
        ]
    );
}

#[tokio::test]
async fn c009_unknown_result_fields_reach_the_event_but_not_the_message() {
    let result = json!({"content": [], "details": {}, "addedToolNames": ["x"], "structuredContent": {"s": 1}, "terminate": false});
    let t = result_tool("u", result.clone(), 0);
    let out = run_calls(
        vec![t],
        vec![call("c1", "u", json!({}))],
        LoopConfig::default(),
    )
    .await;
    let end = &of_type(&out.events, "tool_execution_end")[0];
    assert_eq!(to_string(&end["result"]), to_string(&result));
    let tr = &results(&out.messages)[0];
    for key in ["addedToolNames", "structuredContent", "terminate"] {
        assert!(tr.get(key).is_none(), "{key}");
    }
}

#[tokio::test]
async fn c093_prepare_arguments_output_is_validated() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let got = seen.clone();
    let definition = json!({"name": "num", "label": "num", "description": "d",
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}});
    let t = FnTool::with_prepare(
        definition,
        move |inv: ToolInvocation| {
            got.lock().unwrap().push(inv.args.clone());
            Box::pin(async { Ok(Some(text_result("ok", json!({})))) }) as HostFuture<_>
        },
        |args: Json| match args.get("count") {
            Some(count) => Ok(json!({"n": count})),
            None => Err("shim failed".to_string()),
        },
    );
    let out = run_calls(
        vec![t],
        vec![
            call("c1", "num", json!({"count": "5"})),
            call("c2", "num", json!({"n": 1})),
        ],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(*seen.lock().unwrap(), [json!({"n": 5})]);
    let trs = results(&out.messages);
    assert_eq!(trs[0]["isError"], false);
    assert_eq!(
        trs[1]["content"],
        json!([{"type": "text", "text": "shim failed"}])
    );
    assert_eq!(trs[1]["isError"], true);
}

#[tokio::test]
async fn c109_validation_works_on_a_copy() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = run_calls(
        vec![number_tool(seen.clone())],
        vec![call("c1", "num", json!({"n": "5"}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(*seen.lock().unwrap(), [json!({"n": 5})]);
    assert_eq!(
        of_type(&out.events, "tool_execution_start")[0]["args"],
        json!({"n": "5"})
    );
    let assistant = out
        .messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["content"][0]["arguments"], json!({"n": "5"}));
    // The next request still carries the model's original arguments.
    let second = request_messages(&out.requests.lock().unwrap()[1]);
    assert_eq!(
        second.iter().find(|m| m["role"] == "assistant").unwrap()["content"][0]["arguments"],
        json!({"n": "5"})
    );
}

#[tokio::test]
async fn c144_tool_calls_run_whatever_the_stop_reason() {
    let (t, ran) = counting_tool("t");
    let out = run_scripted(
        vec![t],
        vec![
            json!({"content": [call("c1", "t", json!({}))], "stopReason": "stop"}),
            text_response("end", 1),
        ],
    )
    .await;
    assert_eq!(*ran.lock().unwrap(), 1);
    assert_eq!(
        out.messages
            .iter()
            .filter(|m| m["role"] == "toolResult")
            .count(),
        1
    );
}

#[tokio::test]
async fn c145_length_stop_fails_every_call_and_continues() {
    let t = text_tool("t", "never", 0);
    let out = run_scripted(
        vec![t],
        vec![
            json!({"content": [call("c1", "t", json!({})), call("c2", "zz", json!({}))], "stopReason": "length"}),
            text_response("end", 1),
        ],
    )
    .await;
    let trs = results(&out.messages);
    for (tr, name) in trs.iter().zip(["t", "zz"]) {
        let text = format!("Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.");
        assert_eq!(
            tr,
            &normalize(
                &json!({"role": "toolResult", "toolCallId": tr["toolCallId"], "toolName": name,
            "content": [{"type": "text", "text": text}], "details": {}, "isError": true, "timestamp": 0})
            )
        );
    }
    assert_eq!(out.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn c146_unknown_tool() {
    let out = run_calls(
        vec![],
        vec![call("c1", "zz", json!({}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(
        of_type(&out.events, "tool_execution_end"),
        [tool_end(
            "c1",
            "zz",
            error_result("Tool zz not found"),
            true,
            false
        )]
    );
}

#[tokio::test]
async fn c147_aborted_before_preparation_skips_hooks() {
    let (before, before_calls) = recording_hook(None);
    let signal = AbortSignal::new();
    let abort = signal.clone();
    // The stream function ignores the signal; the run's signal aborts while the answer streams.
    let (inner, _) = scripted(vec![
        json!({"content": [call("c1", "t", json!({}))]}),
        text_response("end", 1),
    ]);
    let f: agent::host::StreamFn = Arc::new(move |mut request, sender| {
        abort.abort();
        request.signal = AbortSignal::new();
        inner(request, sender)
    });
    let (emit, events) = collect_emit();
    let config = LoopConfig {
        before_tool_call: Some(before),
        ..loop_config()
    };
    run_go(vec![text_tool("t", "never", 0)], config, emit, signal, f).await;
    let ends = of_type(&events.lock().unwrap(), "tool_execution_end");
    assert_eq!(
        ends,
        [tool_end(
            "c1",
            "t",
            error_result("Operation aborted"),
            true,
            false
        )]
    );
    assert!(before_calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn c151_failing_execute_keeps_duration() {
    let t = tool_fn(def("t"), |_| Err("exec broke".into()));
    let out = run_calls(
        vec![t],
        vec![call("c1", "t", json!({}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(
        of_type(&out.events, "tool_execution_end"),
        [tool_end("c1", "t", error_result("exec broke"), true, true)]
    );
    assert_eq!(results(&out.messages)[0]["durationMs"], "<ms>");
}

#[tokio::test]
async fn c152_execute_is_error_result() {
    let result = json!({"content": [{"type": "text", "text": "bad input"}], "details": {"k": 1}, "isError": true});
    let out = run_calls(
        vec![result_tool("t", result.clone(), 0)],
        vec![call("c1", "t", json!({}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(
        of_type(&out.events, "tool_execution_end"),
        [tool_end("c1", "t", result.clone(), true, true)]
    );
    assert_eq!(results(&out.messages), [tr("c1", "t", &result, true, true)]);
}

#[tokio::test]
async fn c153_updates_carry_raw_args_and_partial_result() {
    let definition = json!({"name": "num", "label": "num", "description": "d",
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}}});
    let t = tool_fn(definition, |inv| {
        (inv.on_update)(json!({"content": [], "details": {"got": inv.args["n"]}}));
        Ok(Some(text_result("ok", json!({}))))
    });
    let out = run_calls(
        vec![t],
        vec![call("c1", "num", json!({"n": "5"}))],
        LoopConfig::default(),
    )
    .await;
    assert_eq!(
        of_type(&out.events, "tool_execution_update"),
        [json!({"type": "tool_execution_update", "toolCallId": "c1",
        "toolName": "num", "args": {"n": "5"}, "partialResult": {"content": [], "details": {"got": 5}}})]
    );
}

#[tokio::test]
async fn c154_updates_after_completion_emit_nothing() {
    let slot: Arc<Mutex<Option<UpdateFn>>> = Arc::default();
    let keep = slot.clone();
    let t = tool_fn(def("t"), move |inv| {
        *keep.lock().unwrap() = Some(inv.on_update.clone());
        Ok(Some(text_result("ok", json!({}))))
    });
    let late = slot.clone();
    // The second request calls the stored onUpdate before answering.
    let (inner, _) = scripted(vec![
        json!({"content": [call("c1", "t", json!({}))]}),
        text_response("end", 1),
    ]);
    let f: agent::host::StreamFn = Arc::new(move |request, sender| {
        if let Some(update) = late.lock().unwrap().clone() {
            update(json!({"content": [], "details": "late"}));
        }
        inner(request, sender)
    });
    let (emit, events) = collect_emit();
    run_go(vec![t], loop_config(), emit, AbortSignal::new(), f).await;
    assert!(slot.lock().unwrap().is_some());
    assert!(of_type(&events.lock().unwrap(), "tool_execution_update").is_empty());
}

#[tokio::test]
async fn c155_end_waits_for_all_update_emissions() {
    let t = tool_fn(def("t"), |inv| {
        for i in 0..3 {
            (inv.on_update)(json!({"content": [], "details": i}));
        }
        Ok(Some(text_result("ok", json!({}))))
    });
    // A slow emit sink: each update takes a while to deliver.
    let events: Arc<Mutex<Vec<Json>>> = Arc::default();
    let seen = events.clone();
    let emit: agent::agent_loop::Emit = Arc::new(move |event: &agent::event::AgentEvent| {
        let seen = seen.clone();
        agent::host::Delivery::Later(Box::pin(async move {
            if event.type_name() == "tool_execution_update" {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            seen.lock()
                .unwrap()
                .push(event.to_json(agent::event::EventShape::Full));
            Ok(())
        }))
    });
    let (f, _) = scripted(vec![
        json!({"content": [call("c1", "t", json!({}))]}),
        text_response("end", 1),
    ]);
    run_go(vec![t], loop_config(), emit, AbortSignal::new(), f).await;
    assert_eq!(
        tool_trace(&events.lock().unwrap())[..5],
        [
            "tool_execution_start:c1",
            "tool_execution_update:c1",
            "tool_execution_update:c1",
            "tool_execution_update:c1",
            "tool_execution_end:c1"
        ]
    );
}

/// Parallel tools emit their updates at the same time while the sink delivers some events
/// later: a delivery still in progress holds back every other emit (none is delivered during
/// it, neither at once nor later), whichever path each emit takes.
#[tokio::test]
async fn emits_never_overlap_when_deliveries_mix_now_and_later() {
    let updating = |name: &'static str| {
        tool_fn(def(name), move |inv| {
            for i in 0..3 {
                (inv.on_update)(json!({"content": [], "details": i}));
            }
            Ok(Some(text_result(name, json!({}))))
        })
    };
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = log.clone();
    let emit: agent::agent_loop::Emit = Arc::new(move |event: &agent::event::AgentEvent| {
        let seen = seen.clone();
        let name = event.type_name();
        if name != "tool_execution_update" {
            seen.lock().unwrap().push(format!("now:{name}"));
            return agent::host::Delivery::Now(Ok(()));
        }
        seen.lock().unwrap().push("begin".into());
        agent::host::Delivery::Later(Box::pin(async move {
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            seen.lock().unwrap().push("end".into());
            Ok(())
        }))
    });
    let (f, _) = scripted(vec![
        json!({"content": [call("c1", "a", json!({})), call("c2", "b", json!({}))]}),
        text_response("end", 1),
    ]);
    run_go(
        vec![updating("a"), updating("b")],
        loop_config(),
        emit,
        AbortSignal::new(),
        f,
    )
    .await;
    let log = log.lock().unwrap();
    assert_eq!(log.iter().filter(|e| *e == "begin").count(), 6, "{log:?}");
    let mut open = false;
    for entry in log.iter() {
        match entry.as_str() {
            "end" => open = false,
            _ => {
                assert!(!open, "an emit ran during a delivery in progress: {log:?}");
                open = entry == "begin";
            }
        }
    }
}

fn two_calls() -> Vec<Json> {
    vec![call("c1", "slow", json!({})), call("c2", "fast", json!({}))]
}

fn slow_fast(slow_mode: Option<&str>) -> Vec<AgentTool> {
    let mut slow_def = def("slow");
    if let Some(mode) = slow_mode {
        slow_def["executionMode"] = json!(mode);
    }
    let slow = FnTool::tool(slow_def, |_inv: ToolInvocation| {
        Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(40)).await;
            Ok(Some(text_result("slow", json!({}))))
        }) as HostFuture<_>
    });
    vec![slow, result_tool("fast", text_result("fast", json!({})), 0)]
}

const SEQUENTIAL: [&str; 6] = [
    "tool_execution_start:c1",
    "tool_execution_end:c1",
    "message_start:c1",
    "message_end:c1",
    "tool_execution_start:c2",
    "tool_execution_end:c2",
];

#[tokio::test]
async fn c159_sequential_mode() {
    let config = LoopConfig {
        tool_execution: Some("sequential".into()),
        ..Default::default()
    };
    let out = run_calls(slow_fast(Some("parallel")), two_calls(), config).await;
    assert_eq!(tool_trace(&out.events)[..6], SEQUENTIAL);
}

#[tokio::test]
async fn c160_a_sequential_tool_forces_the_batch() {
    let out = run_calls(
        slow_fast(Some("sequential")),
        two_calls(),
        LoopConfig::default(),
    )
    .await;
    assert_eq!(tool_trace(&out.events)[..6], SEQUENTIAL);
}

#[tokio::test]
async fn c161_parallel_mode_order() {
    let out = run_calls(slow_fast(None), two_calls(), LoopConfig::default()).await;
    assert_eq!(
        tool_trace(&out.events),
        [
            "tool_execution_start:c1",
            "tool_execution_start:c2",
            "tool_execution_end:c2",
            "tool_execution_end:c1",
            "message_start:c1",
            "message_end:c1",
            "message_start:c2",
            "message_end:c2"
        ]
    );
    assert_eq!(
        results(&out.messages)
            .iter()
            .map(|m| m["toolCallId"].clone())
            .collect::<Vec<_>>(),
        [json!("c1"), json!("c2")]
    );
}

#[tokio::test]
async fn c176_run_tool_call_returns_outcomes_without_events() {
    let outcome = run_tool_call(
        json!({"type": "toolCall", "id": "x", "name": "zz", "arguments": {}}),
        RunToolCallOptions::default(),
    )
    .await;
    assert_eq!(
        to_string(&outcome.to_json()),
        to_string(
            &json!({"toolCall": {"type": "toolCall", "id": "x", "name": "zz", "arguments": {}},
        "result": {"content": [{"type": "text", "text": "Tool zz not found"}], "details": {}}, "isError": true})
        )
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let updates = Arc::new(Mutex::new(Vec::new()));
    let got = updates.clone();
    let (after, _) = recording_hook(Some(json!({"details": {"after": true}})));
    let options = RunToolCallOptions {
        tools: vec![number_tool(seen.clone())],
        after_tool_call: Some(after),
        on_update: Some(Arc::new(move |p: Json| got.lock().unwrap().push(p))),
        ..Default::default()
    };
    let raw = json!({"type": "toolCall", "id": "y", "name": "num", "arguments": {"n": "5"}});
    let outcome = run_tool_call(raw.clone(), options).await;
    assert_eq!(*seen.lock().unwrap(), [json!({"n": 5})]);
    assert_eq!(outcome.tool_call, raw);
    assert_eq!(
        outcome.result,
        json!({"content": [{"type": "text", "text": "ok"}], "details": {"after": true}})
    );
    assert!(!outcome.is_error);
    assert!(outcome.duration_ms.is_some());
}

#[tokio::test]
async fn hooks_see_the_raw_call_and_the_coerced_args() {
    let (before, before_inputs) = recording_hook(None);
    let (after, after_inputs) = recording_hook(None);
    let config = LoopConfig {
        before_tool_call: Some(before),
        after_tool_call: Some(after),
        ..Default::default()
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    run_calls(
        vec![number_tool(seen)],
        vec![call("c1", "num", json!({"n": "5"}))],
        config,
    )
    .await;
    let before = before_inputs.lock().unwrap()[0].clone();
    assert_eq!(before["toolCall"]["arguments"], json!({"n": "5"}));
    assert_eq!(before["args"], json!({"n": 5}));
    assert_eq!(before["assistantMessage"]["role"], "assistant");
    let after = after_inputs.lock().unwrap()[0].clone();
    assert_eq!(after["args"], json!({"n": 5}));
    assert_eq!(after["result"], text_result("ok", json!({})));
    assert_eq!(after["isError"], false);
}

#[tokio::test]
async fn arguments_error_short_circuits_validation() {
    let t = text_tool("t", "never", 0);
    let out = run_scripted(
        vec![t],
        vec![
            json!({"content": [{"type": "toolCall", "id": "c1", "name": "t", "argsText": "[1]"}]}),
            text_response("end", 1),
        ],
    )
    .await;
    let text = "Invalid arguments for tool \"t\": Tool arguments must be a JSON object\n\nReceived arguments:\n[1]";
    assert_eq!(
        of_type(&out.events, "tool_execution_end"),
        [tool_end("c1", "t", error_result(text), true, false)]
    );
}

#[tokio::test]
async fn parallel_executes_are_all_invoked_before_any_completion() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let make = |name: &'static str, log: Arc<Mutex<Vec<String>>>| {
        tool_fn(def(name), move |_| {
            log.lock().unwrap().push(format!("execute {name}"));
            Ok(Some(text_result("ok", json!({}))))
        })
    };
    let tools = vec![make("a", log.clone()), make("b", log.clone())];
    let end_log = log.clone();
    let emit: agent::agent_loop::Emit = Arc::new(move |event: &agent::event::AgentEvent| {
        if event.type_name() == "tool_execution_end" {
            end_log.lock().unwrap().push("end".into());
        }
        agent::host::Delivery::Now(Ok(()))
    });
    let (f, _) = scripted(vec![
        json!({"content": [call("c1", "a", json!({})), call("c2", "b", json!({}))]}),
        text_response("end", 1),
    ]);
    run_go(tools, loop_config(), emit, AbortSignal::new(), f).await;
    assert_eq!(
        *log.lock().unwrap(),
        ["execute a", "execute b", "end", "end"]
    );
}

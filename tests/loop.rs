//! The low-level loop (SPEC §6; checklist items 126–143, 177). Turns: `loop_turns.rs`.
mod common;

use std::sync::{Arc, Mutex};

use agent::agent_loop::{run_agent_loop, run_agent_loop_continue, LoopConfig, LoopContext};
use agent::host::{AbortSignal, StreamFn, NO_DEFAULT_STREAM_FN};
use agent::json::{json, to_string, Json};
use agent::message::{from_json_vec, to_json_vec};
use common::loops::*;
use common::*;

// ----- 126–143: runs, queues, hooks, requests ------------------------------------------------

#[tokio::test]
async fn c126_run_emits_start_events_then_prompt_messages() {
    let out = run(
        vec![umsg("p1"), umsg("p2")],
        loop_config(),
        vec![text_response("a", 1)],
    )
    .await;
    assert_eq!(
        types_of(&out.events)[..6],
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end"
        ]
    );
    assert_eq!(out.events[2]["message"], umsg("p1"));
    assert_eq!(out.events[3]["message"], umsg("p1"));
    assert_eq!(out.events[4]["message"], umsg("p2"));
    assert_eq!(out.events[5]["message"], umsg("p2"));
    assert_eq!(out.events[6]["message"]["role"], "assistant");
}

#[tokio::test]
async fn c127_run_returns_new_messages_including_prompts() {
    let context = LoopContext {
        messages: vec![umsg("old").into()].into(),
        tools: vec![],
    };
    let out = run_with(
        vec![umsg("p1"), umsg("p2")],
        context,
        loop_config(),
        scripted(vec![text_response("a", 1)]),
    )
    .await;
    let messages = out.result.unwrap();
    assert_eq!(roles(&messages), ["user", "user", "assistant"]);
    assert_eq!(messages[0], umsg("p1"));
    assert_eq!(
        messages[2]["content"],
        json!([{"type": "text", "text": "a"}])
    );
    let agent_end = out.events.last().unwrap();
    assert_eq!(agent_end["messages"], json!(messages));
}

async fn continue_with(messages: Vec<Json>) -> Outcome {
    let (emit, events) = collect_emit();
    let (f, requests) = scripted(vec![text_response("a", 1)]);
    let context = LoopContext {
        messages: from_json_vec(messages).into(),
        tools: vec![],
    };
    let result = run_agent_loop_continue(context, loop_config(), emit, AbortSignal::new(), Some(f))
        .await
        .map(|messages| to_json_vec(&messages));
    let events = events.lock().unwrap().clone();
    Outcome {
        result,
        events,
        requests,
    }
}

#[tokio::test]
async fn c128_continue_on_empty_context_fails_before_any_event() {
    let out = continue_with(vec![]).await;
    assert_eq!(
        out.result,
        Err("Cannot continue: no messages in context".to_string())
    );
    assert!(out.events.is_empty());
    assert!(out.requests.lock().unwrap().is_empty());
}

#[tokio::test]
async fn c129_continue_from_assistant_fails_before_any_event() {
    let out = continue_with(vec![
        umsg("u"),
        json!({"role": "assistant", "content": [], "timestamp": 1}),
    ])
    .await;
    assert_eq!(
        out.result,
        Err("Cannot continue from message role: assistant".to_string())
    );
    assert!(out.events.is_empty());
}

#[tokio::test]
async fn c130_continue_accepts_custom_and_system_tails() {
    for tail in [
        json!({"role": "notification", "text": "n", "timestamp": 1}),
        json!({"role": "system", "content": "s", "timestamp": 1}),
    ] {
        let out = continue_with(vec![umsg("u"), tail]).await;
        let messages = out.result.unwrap();
        assert_eq!(roles(&messages), ["assistant"]);
        assert_eq!(
            types_of(&out.events)[..3],
            ["agent_start", "turn_start", "message_start"]
        );
        assert_eq!(out.requests.lock().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn c131_initial_steering_is_committed_after_the_prompt_before_the_first_request() {
    let (steering, _) = queue_source(vec![vec![umsg("s1")]]);
    let config = LoopConfig {
        get_steering_messages: Some(steering),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, vec![text_response("a", 1)]).await;
    let committed: Vec<Json> = out.events[2..6]
        .iter()
        .map(|e| e["message"].clone())
        .collect();
    assert_eq!(
        types_of(&out.events)[..7],
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "message_start"
        ]
    );
    assert_eq!(committed, [umsg("p"), umsg("p"), umsg("s1"), umsg("s1")]);
    let requests = out.requests.lock().unwrap();
    assert_eq!(request_messages(&requests[0]), [umsg("p"), umsg("s1")]);
}

#[tokio::test]
async fn c132_post_turn_steering_starts_the_next_turn() {
    let (steering, _) = queue_source(vec![vec![], vec![umsg("s1")]]);
    let config = LoopConfig {
        get_steering_messages: Some(steering),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, many_texts(2)).await;
    let types = types_of(&out.events);
    let end = types.iter().position(|t| t == "turn_end").unwrap();
    assert_eq!(
        types[end + 1..end + 4],
        ["turn_start", "message_start", "message_end"]
    );
    assert_eq!(out.events[end + 2]["message"], umsg("s1"));
    assert_eq!(
        roles(&out.result.unwrap()),
        ["user", "assistant", "user", "assistant"]
    );
}

#[tokio::test]
async fn c133_pre_turn_repoll_only_when_post_turn_poll_was_empty() {
    // Tool continuation with an empty post-turn poll: initial, post-turn 1, re-poll, post-turn 2.
    let (steering, calls) = queue_source(vec![]);
    let config = LoopConfig {
        get_steering_messages: Some(steering),
        ..loop_config()
    };
    let ctx = read_context();
    let responses = read_then(&["a2"]);
    run_with(
        vec![umsg("p")],
        ctx.clone(),
        config,
        scripted(responses.clone()),
    )
    .await;
    assert_eq!(*calls.lock().unwrap(), 4);
    // The post-turn poll returns s1: no re-poll, and s2 (the next answer) waits for the next poll.
    let (steering, calls) = queue_source(vec![vec![], vec![umsg("s1")], vec![umsg("s2")]]);
    let config = LoopConfig {
        get_steering_messages: Some(steering),
        ..loop_config()
    };
    let responses = read_then(&["a2", "a3"]);
    let out = run_with(vec![umsg("p")], ctx, config, scripted(responses)).await;
    let messages = out.result.unwrap();
    // (The first message declares the context's tools.)
    assert_eq!(
        roles(&messages),
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(messages[4], umsg("s1"));
    assert_eq!(messages[6], umsg("s2"));
    // initial, post-turn 1 (s1), post-turn 2 (s2), post-turn 3, (re-poll none: s2 was pending).
    assert_eq!(*calls.lock().unwrap(), 4);
}

#[tokio::test]
async fn c134_prepare_next_turn_runs_before_later_turn_starts_only() {
    let log: Log = Arc::default();
    let config = LoopConfig {
        prepare_next_turn: Some(logging_hook(&log, "prepareNextTurn", None)),
        ..loop_config()
    };
    run_logged(config, read_then(&["a2"]), &log).await;
    let log = log.lock().unwrap().clone();
    let first_call = log.iter().position(|l| l == "prepareNextTurn").unwrap();
    assert_eq!(log.iter().filter(|l| *l == "prepareNextTurn").count(), 1);
    assert_eq!(log[first_call - 1], "turn_end");
    assert_eq!(log[first_call + 1], "turn_start");
    assert_eq!(log[..2], ["agent_start", "turn_start"]);
}

#[tokio::test]
async fn c135_prepared_messages_are_committed_before_steering() {
    let (steering, _) = queue_source(vec![vec![], vec![umsg("steer")]]);
    let next = hook(|_, _| Ok(Some(json!({"messages": [umsg("prepared")]}))));
    let config = LoopConfig {
        get_steering_messages: Some(steering),
        prepare_next_turn: Some(next),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, many_texts(2)).await;
    let messages = out.result.unwrap();
    assert_eq!(messages[2..4], [umsg("prepared"), umsg("steer")]);
}

#[tokio::test]
async fn c136_model_and_thinking_updates_apply_to_this_and_later_requests() {
    let m2 = json!({"id": "m2", "api": "api2", "provider": "prov2"});
    let next = answering_hook(vec![Some(json!({"model": m2, "thinkingLevel": "high"}))]);
    let request_calls = Arc::new(Mutex::new(0));
    let prepare_request = hook(move |_, _| {
        let mut n = request_calls.lock().unwrap();
        *n += 1;
        Ok((*n == 3).then(|| json!({"thinkingLevel": "off"})))
    });
    let config = LoopConfig {
        reasoning: Some("low".into()),
        prepare_next_turn: Some(next),
        prepare_request: Some(prepare_request),
        ..loop_config()
    };
    let ctx = read_context();
    let responses = vec![
        tool_response(&[("c1", "read", json!({}))]),
        tool_response(&[("c2", "read", json!({}))]),
        text_response("a3", 1),
    ];
    let out = run_with(vec![umsg("p")], ctx, config, scripted(responses)).await;
    let requests = out.requests.lock().unwrap();
    assert_eq!(*requests[0].model, model());
    assert_eq!(requests[0].options["reasoning"], "low");
    assert_eq!(*requests[1].model, m2);
    assert_eq!(requests[1].options["reasoning"], "high");
    assert_eq!(*requests[2].model, m2);
    assert!(requests[2].options.get("reasoning").is_none());
    let levels: Vec<Json> = out
        .result
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["thinkingLevel"].clone())
        .collect();
    assert_eq!(levels, [json!("low"), json!("high"), json!("off")]);
}

#[tokio::test]
async fn c137_prepare_request_before_every_request_after_commits() {
    let log: Log = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let inputs = seen.clone();
    let log2 = log.clone();
    let prepare = hook(move |input, _| {
        log2.lock().unwrap().push("prepareRequest".into());
        inputs.lock().unwrap().push(input);
        Ok(None)
    });
    let config = LoopConfig {
        prepare_request: Some(prepare),
        ..loop_config()
    };
    run_logged(config, read_then(&["a2"]), &log).await;
    let log = log.lock().unwrap().clone();
    let positions: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, l)| *l == "prepareRequest")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(positions.len(), 2);
    assert_eq!(log[positions[0] - 1], "message_end");
    assert_eq!(log[positions[0] + 1], "message_start");
    let inputs = seen.lock().unwrap();
    let first = &inputs[0];
    assert_eq!(
        first["context"]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        &umsg("p")
    );
    assert_eq!(first["model"], model());
    assert_eq!(first["thinkingLevel"], "off");
    let second = inputs[1]["context"]["messages"].as_array().unwrap();
    assert_eq!(second.last().unwrap()["role"], "toolResult");
}

#[tokio::test]
async fn c138_hook_order_per_request() {
    let log: Log = Arc::default();
    let transform_log = log.clone();
    let transform = hook(move |messages, _| {
        transform_log
            .lock()
            .unwrap()
            .push("transformContext".into());
        Ok(Some(messages))
    });
    let convert_log = log.clone();
    let convert = hook(move |messages, _| {
        convert_log.lock().unwrap().push("convertToLlm".into());
        Ok(Some(messages))
    });
    let config = LoopConfig {
        prepare_request: Some(logging_hook(&log, "prepareRequest", None)),
        transform_context: Some(transform),
        convert_to_llm: Some(convert),
        get_api_key: Some(logging_hook(&log, "getApiKey", None)),
        ..loop_config()
    };
    let stream_log = log.clone();
    let (inner, _) = scripted(vec![text_response("a", 1)]);
    let f: StreamFn = Arc::new(move |request, sender| {
        stream_log.lock().unwrap().push("stream".into());
        inner(request, sender)
    });
    let (emit, _) = collect_emit();
    run_agent_loop(
        vec![umsg("p")],
        LoopContext::default(),
        config,
        emit,
        AbortSignal::new(),
        Some(f),
    )
    .await
    .unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "prepareRequest",
            "transformContext",
            "convertToLlm",
            "getApiKey",
            "stream"
        ]
    );
}

#[tokio::test]
async fn c139_stream_receives_exactly_the_converted_messages() {
    let converted = json!([{"role": "user", "content": "converted", "timestamp": 1, "extra": {"b": 1, "a": 2}}]);
    let answer = converted.clone();
    let config = LoopConfig {
        convert_to_llm: Some(hook(move |_, _| Ok(Some(answer.clone())))),
        ..loop_config()
    };
    let out = run(
        vec![umsg("p"), json!({"role": "custom", "x": 1, "timestamp": 2})],
        config,
        vec![text_response("a", 1)],
    )
    .await;
    let requests = out.requests.lock().unwrap();
    assert_eq!(
        to_string(&requests[0].context()),
        to_string(&json!({"messages": converted}))
    );
}

#[tokio::test]
async fn c140_reasoning_option_absent_when_off() {
    let out = run(vec![umsg("p")], loop_config(), vec![text_response("a", 1)]).await;
    assert!(out.requests.lock().unwrap()[0]
        .options
        .get("reasoning")
        .is_none());
    let config = LoopConfig {
        reasoning: Some("medium".into()),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, vec![text_response("a", 1)]).await;
    assert_eq!(
        out.requests.lock().unwrap()[0].options["reasoning"],
        "medium"
    );
}

#[tokio::test]
async fn c141_identity_is_the_default_merged_with_the_configured_one() {
    let default = json!({"attribution": {"name": "pi", "url": "https://pi.dev", "categories": ["cli-agent"]}});
    let cases = [
        (None, default.clone()),
        (
            Some(json!({"attribution": null})),
            json!({"attribution": null}),
        ),
        (
            Some(json!({"userAgent": "short"})),
            json!({"attribution": default["attribution"], "userAgent": "short"}),
        ),
    ];
    for (identity, expected) in cases {
        let config = LoopConfig {
            identity,
            ..loop_config()
        };
        let out = run(vec![umsg("p")], config, vec![text_response("a", 1)]).await;
        assert_eq!(
            to_string(&out.requests.lock().unwrap()[0].options["identity"]),
            to_string(&expected)
        );
    }
}

#[tokio::test]
async fn c142_api_key_from_hook_with_fallback() {
    for (answer, fallback, expected) in [
        (Some(json!("hook-key")), Some("cfg"), Some("hook-key")),
        (Some(json!("")), Some("cfg"), Some("cfg")),
        (None, Some("cfg"), Some("cfg")),
        (None, None, None),
    ] {
        let (get_key, inputs) = recording_hook(answer);
        let config = LoopConfig {
            get_api_key: Some(get_key),
            api_key: fallback.map(String::from),
            ..loop_config()
        };
        let out = run(vec![umsg("p")], config, vec![text_response("a", 1)]).await;
        assert_eq!(*inputs.lock().unwrap(), [json!("test-prov")]);
        let options = out.requests.lock().unwrap()[0].options.clone();
        assert_eq!(options.get("apiKey").and_then(Json::as_str), expected);
    }
}

#[tokio::test]
async fn c143_error_response_ends_the_run_without_polling_queues() {
    for stop in ["error", "aborted"] {
        let (steering, steering_calls) = queue_source(vec![]);
        let (follow_up, follow_up_calls) = queue_source(vec![vec![umsg("fu")]]);
        let (finish, finish_inputs) = recording_hook(Some(json!({"action": "continue"})));
        let config = LoopConfig {
            get_steering_messages: Some(steering),
            get_follow_up_messages: Some(follow_up),
            finish_turn: Some(finish),
            ..loop_config()
        };
        let response = json!({"content": [], "stopReason": stop, "errorMessage": "bad"});
        let out = run(
            vec![umsg("p")],
            config,
            vec![response, text_response("never", 1)],
        )
        .await;
        let types = types_of(&out.events);
        assert_eq!(
            types[types.len() - 3..],
            ["message_end", "turn_end", "agent_end"]
        );
        assert_eq!(finish_inputs.lock().unwrap().len(), 1);
        assert_eq!(finish_inputs.lock().unwrap()[0]["toolResults"], json!([]));
        assert_eq!(*steering_calls.lock().unwrap(), 1, "only the initial poll");
        assert_eq!(*follow_up_calls.lock().unwrap(), 0);
        assert_eq!(out.requests.lock().unwrap().len(), 1);
    }
}

// ----- 167–177: turn decisions, follow-ups, declarations, default stream function ------------

#[tokio::test]
async fn c177_no_default_stream_function_fails_after_prompt_events() {
    // Nothing in this test binary sets the process-global default.
    let (emit, events) = collect_emit();
    let result = run_agent_loop(
        vec![umsg("p")],
        LoopContext::default(),
        loop_config(),
        emit,
        AbortSignal::new(),
        None,
    )
    .await;
    assert_eq!(result, Err(NO_DEFAULT_STREAM_FN.to_string()));
    assert_eq!(NO_DEFAULT_STREAM_FN, "No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn().");
    assert_eq!(
        types_of(&events.lock().unwrap()),
        ["agent_start", "turn_start", "message_start", "message_end"]
    );
}

#[tokio::test]
async fn transform_context_feeds_convert_to_llm_and_may_answer_nothing() {
    // The transformed list is what convertToLlm receives (SPEC §6.5 steps 1–2).
    let (convert, convert_inputs) = recording_hook(None);
    let transform = hook(|messages, _| {
        let mut list = messages.as_array().cloned().unwrap_or_default();
        list.insert(0, umsg("injected"));
        Ok(Some(Json::Array(list)))
    });
    let config = LoopConfig {
        transform_context: Some(transform),
        convert_to_llm: Some(convert),
        ..loop_config()
    };
    let out = run(
        vec![umsg("p"), json!({"role": "note", "timestamp": 1})],
        config,
        vec![text_response("a", 1)],
    )
    .await;
    assert_eq!(
        convert_inputs.lock().unwrap()[0],
        json!([umsg("injected"), umsg("p"), {"role": "note", "timestamp": 1}])
    );
    // A14: a converter answering nothing applies the default conversion (custom roles dropped).
    assert_eq!(
        request_messages(&out.requests.lock().unwrap()[0]),
        [umsg("injected"), umsg("p")]
    );
    // A13: a transformer answering nothing leaves the messages unchanged.
    let (transform, _) = recording_hook(None);
    let config = LoopConfig {
        transform_context: Some(transform),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, vec![text_response("a", 1)]).await;
    assert_eq!(
        request_messages(&out.requests.lock().unwrap()[0]),
        [umsg("p")]
    );
}

#[tokio::test]
async fn prepare_request_context_without_tools_leaves_no_executable_tools() {
    let prepare = hook(|input, _| {
        Ok(Some(
            json!({"context": {"messages": input["context"]["messages"]}}),
        ))
    });
    let config = LoopConfig {
        prepare_request: Some(prepare),
        ..loop_config()
    };
    let ctx = read_context();
    let out = run_with(vec![umsg("p")], ctx, config, scripted(read_then(&["a"]))).await;
    let end = out
        .events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Tool read not found");
}

//! Turn decisions, follow-up polling and mid-run tool declarations in the low-level loop
//! (SPEC §4.7, §6.4, §6.11; checklist items 168–171, 175).

mod common;

use std::sync::Arc;

use agent::agent_loop::{LoopConfig, LoopContext};
use agent::host::HostFuture;
use agent::json::{json, to_string, Json};
use common::loops::*;
use common::*;

// ----- 168–175: turn decisions, follow-ups, tool declarations -----------------------------------

#[tokio::test]
async fn c168_continue_decision_makes_exactly_one_extra_request() {
    let finish = answering_hook(vec![Some(json!({"action": "continue"}))]);
    let config = LoopConfig {
        finish_turn: Some(finish),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, many_texts(3)).await;
    assert_eq!(out.requests.lock().unwrap().len(), 2);
    assert_eq!(
        roles(&out.result.unwrap()),
        ["user", "assistant", "assistant"]
    );
}

#[tokio::test]
async fn c169_continue_decision_is_satisfied_by_a_follow_up() {
    let finish = answering_hook(vec![Some(json!({"action": "continue"}))]);
    let (follow_up, _) = queue_source(vec![vec![umsg("fu")]]);
    let config = LoopConfig {
        finish_turn: Some(finish),
        get_follow_up_messages: Some(follow_up),
        ..loop_config()
    };
    let out = run(vec![umsg("p")], config, many_texts(3)).await;
    assert_eq!(out.requests.lock().unwrap().len(), 2);
    assert_eq!(
        roles(&out.result.unwrap()),
        ["user", "assistant", "user", "assistant"]
    );
}

#[tokio::test]
async fn c170_finish_turn_receives_new_messages_and_full_context() {
    let (finish, inputs) = recording_hook(None);
    let config = LoopConfig {
        finish_turn: Some(finish),
        ..loop_config()
    };
    let ctx = LoopContext {
        messages: vec![umsg("old").into()].into(),
        tools: vec![text_tool("read", "R", 0)],
    };
    let responses = read_then(&["a2"]);
    run_with(vec![umsg("p")], ctx, config, scripted(responses))
        .await
        .result
        .unwrap();
    let inputs = inputs.lock().unwrap();
    let first = &inputs[0];
    assert_eq!(first["message"]["content"][0]["id"], "c1");
    assert_eq!(first["toolResults"].as_array().unwrap().len(), 1);
    assert_eq!(first["toolResults"][0]["toolCallId"], "c1");
    let context: Vec<Json> = first["context"]["messages"].as_array().unwrap().clone();
    // The tool declaration is inserted before the first non-system prompt message.
    assert_eq!(
        roles(&context),
        ["user", "system", "user", "assistant", "toolResult"]
    );
    assert_eq!(context[4], first["toolResults"][0]);
    assert_eq!(
        roles(first["newMessages"].as_array().unwrap()),
        ["system", "user", "assistant", "toolResult"]
    );
    assert_eq!(first["context"]["tools"][0]["name"], "read");
}

#[tokio::test]
async fn c171_follow_ups_polled_only_when_nothing_else_continues() {
    let log: Log = Arc::default();
    let follow_log = log.clone();
    let follow_up: agent::agent_loop::QueueSource = Arc::new(move || {
        follow_log.lock().unwrap().push("followUp".into());
        Box::pin(async { Ok(vec![]) }) as HostFuture<_>
    });
    let (steering, _) = queue_source(vec![vec![], vec![], vec![], vec![umsg("s")]]);
    let config = LoopConfig {
        get_follow_up_messages: Some(follow_up),
        get_steering_messages: Some(steering),
        ..loop_config()
    };
    run_logged(config, read_then(&["a2", "a3"]), &log).await;
    let log = log.lock().unwrap().clone();
    // Turn 1 continues through its tool results, turn 2 through steering: one poll, after turn 3.
    assert_eq!(log.iter().filter(|l| *l == "followUp").count(), 1);
    assert_eq!(log[log.len() - 3..], ["turn_end", "followUp", "agent_end"]);
    assert_eq!(log.iter().filter(|l| *l == "turn_end").count(), 3);
}

#[tokio::test]
async fn c175_tools_from_prepare_next_turn_are_declared_at_the_next_turn_start() {
    let read = text_tool("read", "R", 0);
    let grep = text_tool("grep", "G", 0);
    let next = hook(|input, _| {
        let mut context = input["context"].clone();
        context["tools"] = json!(["read", "grep"]);
        Ok(Some(json!({"context": context})))
    });
    let config = LoopConfig {
        prepare_next_turn: Some(next),
        tool_registry: vec![grep],
        ..loop_config()
    };
    let ctx = LoopContext {
        messages: vec![
            json!({"role": "system", "content": "Base", "toolsAdded": [decl("read")], "timestamp": 0}).into(),
        ]
        .into(),
        tools: vec![read],
    };
    let responses = read_then(&["a2"]);
    let out = run_with(vec![umsg("p")], ctx, config, scripted(responses)).await;
    let types = types_of(&out.events);
    let second_turn = types
        .iter()
        .enumerate()
        .filter(|(_, t)| *t == "turn_start")
        .nth(1)
        .unwrap()
        .0;
    let declared = normalize(&out.events[second_turn + 1]["message"]);
    assert_eq!(
        types[second_turn + 1..second_turn + 3],
        ["message_start", "message_end"]
    );
    assert_eq!(
        to_string(&declared),
        to_string(
            &json!({"role": "system", "content": "", "timestamp": 0, "toolsAdded": [decl("grep")]})
        )
    );
    let requests = out.requests.lock().unwrap();
    assert_eq!(
        normalize(request_messages(&requests[1]).last().unwrap()),
        declared
    );
}

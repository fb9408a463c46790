//! The canonical sequences S1–S6 of SPEC §8.2, asserted event by event with full JSON
//! (timestamps normalized to 0, durations to "<ms>"). S7–S14: `agent_sequences_ends.rs`.
mod common;

use agent::agent::{Agent, Settings};
use agent::host::{FnTool, HostFuture, ToolInvocation};
use agent::json::{json, Json};
use common::sequences::*;
use common::*;

#[tokio::test]
async fn s1_plain_text_reply() {
    let agent = agent_with(vec![deltas_response(&["Hel", "lo"])], vec![], None);
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("hi").await.unwrap();
    let u = user_text("hi");
    let a = assistant_text("Hello");
    let mut expected = prompt_start(&u);
    expected.extend(text_answer(&["Hel", "lo"]));
    expected.push(agent_end(&[u.clone(), a.clone()]));
    assert_events(&recorder.events(), &expected);
    assert!(!agent.is_streaming());
    let state: Vec<Json> = agent.messages().iter().map(normalize).collect();
    assert_eq!(state, vec![u, a]);
}

#[tokio::test]
async fn s2_one_tool_call() {
    let read = tool_fn(def("read"), |inv| {
        (inv.on_update)(json!({"content": [{"type": "text", "text": "p1"}], "details": {}}));
        Ok(Some(text_result("file a", json!({"a": 1}))))
    });
    let c1 = call("c1", "read", json!({"path": "a.txt"}));
    let agent = agent_with(
        vec![
            tool_response(&[("c1", "read", json!({"path": "a.txt"}))]),
            text_response("done", 1),
        ],
        vec![read],
        None,
    );
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let u = user_text("go");
    let a1 = final_msg(json!([c1]), "toolUse");
    let result = text_result("file a", json!({"a": 1}));
    let tr1 = tr("c1", "read", &result, false, true);
    let a2 = assistant_text("done");
    let mut expected = prompt_start(&u);
    expected.extend(tool_message_events(std::slice::from_ref(&c1), "toolUse"));
    expected.push(tool_start("c1", "read", json!({"path": "a.txt"})));
    expected.push(json!({"type": "tool_execution_update", "toolCallId": "c1", "toolName": "read",
        "args": {"path": "a.txt"}, "partialResult": {"content": [{"type": "text", "text": "p1"}], "details": {}}}));
    expected.push(tool_end("c1", "read", result.clone(), false, true));
    expected.extend(committed(&tr1));
    expected.push(turn_end(&a1, std::slice::from_ref(&tr1)));
    expected.push(ev("turn_start"));
    expected.extend(text_answer(&["done"]));
    expected.push(agent_end(&[u, a1, tr1, a2]));
    assert_events(&recorder.events(), &expected);
}

fn slow_fast_tools() -> Vec<agent::host::AgentTool> {
    let slow = FnTool::tool(def("slow"), |inv: ToolInvocation| {
        Box::pin(async move {
            (inv.on_update)(json!({"content": [{"type": "text", "text": "p1"}], "details": {}}));
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Ok(Some(text_result("slow done", json!({"a": 1}))))
        }) as HostFuture<_>
    });
    vec![
        slow,
        result_tool("fast", text_result("fast done", json!({})), 10),
    ]
}

fn s3_expected(sequential: bool) -> Vec<Json> {
    let c1 = call("c1", "slow", json!({}));
    let c2 = call("c2", "fast", json!({}));
    let u = user_text("go");
    let a1 = final_msg(json!([c1, c2]), "toolUse");
    let r1 = text_result("slow done", json!({"a": 1}));
    let r2 = text_result("fast done", json!({}));
    let tr1 = tr("c1", "slow", &r1, false, true);
    let tr2 = tr("c2", "fast", &r2, false, true);
    let update = json!({"type": "tool_execution_update", "toolCallId": "c1", "toolName": "slow", "args": {},
        "partialResult": {"content": [{"type": "text", "text": "p1"}], "details": {}}});
    let a2 = assistant_text("ok");
    let mut expected = prompt_start(&u);
    expected.extend(tool_message_events(&[c1, c2], "toolUse"));
    if sequential {
        expected.extend([
            tool_start("c1", "slow", json!({})),
            update,
            tool_end("c1", "slow", r1, false, true),
        ]);
        expected.extend(committed(&tr1));
        expected.extend([
            tool_start("c2", "fast", json!({})),
            tool_end("c2", "fast", r2, false, true),
        ]);
        expected.extend(committed(&tr2));
    } else {
        expected.extend([
            tool_start("c1", "slow", json!({})),
            tool_start("c2", "fast", json!({})),
            update,
        ]);
        expected.extend([
            tool_end("c2", "fast", r2, false, true),
            tool_end("c1", "slow", r1, false, true),
        ]);
        expected.extend(committed(&tr1));
        expected.extend(committed(&tr2));
    }
    expected.push(turn_end(&a1, &[tr1.clone(), tr2.clone()]));
    expected.push(ev("turn_start"));
    expected.extend(text_answer(&["ok"]));
    expected.push(agent_end(&[u, a1, tr1, tr2, a2]));
    expected
}

fn s3_responses() -> Vec<Json> {
    vec![
        tool_response(&[("c1", "slow", json!({})), ("c2", "fast", json!({}))]),
        text_response("ok", 1),
    ]
}

#[tokio::test]
async fn s3_two_parallel_tool_calls() {
    let agent = agent_with(s3_responses(), slow_fast_tools(), None);
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    assert_events(&recorder.events(), &s3_expected(false));
}

#[tokio::test]
async fn s3_sequential_variant() {
    let settings = Settings {
        tool_execution: "sequential".into(),
        ..Default::default()
    };
    let (f, _) = scripted(s3_responses());
    let agent = agent_from(f, slow_fast_tools(), None, settings);
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    assert_events(&recorder.events(), &s3_expected(true));
}

fn blocking_agent(answer: Json, responses: Vec<Json>) -> Agent {
    let (before, _) = recording_hook(Some(answer));
    let mut settings = Settings::default();
    settings.hooks.before_tool_call = Some(before);
    let (f, _) = scripted(responses);
    agent_from(f, vec![text_tool("read", "R", 0)], None, settings)
}

#[tokio::test]
async fn s4_blocked_tool() {
    let agent = blocking_agent(
        json!({"block": true}),
        vec![
            tool_response(&[("c1", "read", json!({}))]),
            text_response("sorry", 1),
        ],
    );
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let result = error_result("Tool execution was blocked");
    let (mut expected, u, a1, tr1) = read_turn(result, true, false);
    let a2 = assistant_text("sorry");
    expected.push(ev("turn_start"));
    expected.extend(text_answer(&["sorry"]));
    expected.push(agent_end(&[u, a1, tr1, a2]));
    assert_events(&recorder.events(), &expected);
}

#[tokio::test]
async fn s4_blocked_with_reason_and_terminate_ends_the_run() {
    let answer = json!({"block": true, "reason": "nope", "terminate": true});
    let agent = blocking_agent(
        answer,
        vec![
            tool_response(&[("c1", "read", json!({}))]),
            text_response("never", 1),
        ],
    );
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let result =
        json!({"content": [{"type": "text", "text": "nope"}], "details": {}, "terminate": true});
    let (mut expected, u, a1, tr1) = read_turn(result, true, false);
    expected.push(agent_end(&[u, a1, tr1]));
    assert_events(&recorder.events(), &expected);
}

#[tokio::test]
async fn s5_steering_during_tools() {
    let responses = vec![
        tool_response(&[("c1", "read", json!({}))]),
        text_response("a2", 1),
        text_response("a3", 1),
        text_response("a4", 1),
    ];
    let (agent, requests) = read_agent(responses);
    on_tool_start(&agent, |handle| {
        handle.steer(umsg("steer1"));
        handle.steer(umsg("steer2"));
        handle.follow_up(umsg("fu1"));
    });
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let result = text_result("R", json!({}));
    let (mut expected, u, a1, tr1) = read_turn(result, false, true);
    let (s1, s2, fu) = (umsg("steer1"), umsg("steer2"), umsg("fu1"));
    let (a2, a3, a4) = (
        assistant_text("a2"),
        assistant_text("a3"),
        assistant_text("a4"),
    );
    for (m, t) in [(&s1, "a2"), (&s2, "a3"), (&fu, "a4")] {
        expected.push(ev("turn_start"));
        expected.extend(committed(m));
        expected.extend(text_answer(&[t]));
    }
    expected.push(agent_end(&[
        u,
        a1,
        tr1.clone(),
        s1.clone(),
        a2,
        s2,
        a3,
        fu,
        a4,
    ]));
    assert_events(&recorder.events(), &expected);
    // The request after the batch holds the tool result followed by steer1.
    let second: Vec<Json> = request_messages(&requests.lock().unwrap()[1])
        .iter()
        .map(normalize)
        .collect();
    assert_eq!(second[second.len() - 2..], [tr1, s1]);
}

#[tokio::test]
async fn s6_follow_up_all_mode() {
    let settings = Settings {
        follow_up_mode: "all".into(),
        ..Default::default()
    };
    let (f, _) = scripted(many_texts(2));
    let agent = agent_from(f, vec![], None, settings);
    agent.follow_up(umsg("fuA"));
    agent.follow_up(umsg("fuB"));
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let u = user_text("go");
    let (a1, a2) = (assistant_text("a1"), assistant_text("a2"));
    let mut expected = prompt_start(&u);
    expected.extend(text_answer(&["a1"]));
    expected.push(ev("turn_start"));
    expected.extend(committed(&umsg("fuA")));
    expected.extend(committed(&umsg("fuB")));
    expected.extend(text_answer(&["a2"]));
    expected.push(agent_end(&[u, a1, umsg("fuA"), umsg("fuB"), a2]));
    assert_events(&recorder.events(), &expected);
}

#[tokio::test]
async fn s6_one_at_a_time_gives_each_follow_up_a_turn() {
    let (f, _) = scripted(many_texts(3));
    let agent = agent_from(f, vec![], None, Settings::default());
    agent.follow_up(umsg("fuA"));
    agent.follow_up(umsg("fuB"));
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("go").await.unwrap();
    let ends: Vec<Json> = recorder
        .events()
        .into_iter()
        .filter(|e| e["type"] == "agent_end")
        .collect();
    let roles: Vec<String> = ends[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        recorder
            .types()
            .iter()
            .filter(|t| *t == "turn_start")
            .count(),
        3
    );
}

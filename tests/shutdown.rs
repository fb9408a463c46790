//! `Agent::shutdown` (what `agent_free` does): the run stops, and no run starts afterwards.
mod common;

use agent::agent::PromptInput;
use agent::error::{Error, ErrorKind};
use common::*;

#[tokio::test]
async fn no_run_starts_after_shutdown() {
    let agent = agent_with(vec![text_response("hi", 1)], vec![], None);
    agent.shutdown("The agent was freed.");
    let prompt = agent.start_prompt(
        PromptInput::Text {
            text: "go".into(),
            images: vec![],
        },
        None,
    );
    let freed = Error::new(ErrorKind::InvalidState, "The agent was freed.");
    assert_eq!(prompt.err(), Some(freed.clone()));
    assert_eq!(agent.start_continue(None).err(), Some(freed));
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn shutdown_during_a_run_settles_it_with_the_reason() {
    let responses = vec![json_waiting_response()];
    let agent = agent_with(responses, vec![], None);
    let completion = agent
        .start_prompt(
            PromptInput::Text {
                text: "go".into(),
                images: vec![],
            },
            None,
        )
        .unwrap();
    agent.shutdown("The agent was freed.");
    assert_eq!(
        completion.wait().await,
        Err("The agent was freed.".to_string())
    );
    assert!(!agent.is_streaming());
}

/// A response that stalls until the run is aborted.
fn json_waiting_response() -> agent::json::Json {
    agent::json::json!({"content": [{"type": "text", "text": "slow", "chunks": 2}], "waitForAbort": true, "stallAfter": 1})
}

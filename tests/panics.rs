//! A panic inside a run (a bug in a Rust host callback or in libagent) fails the run the
//! reference's way instead of leaving it hanging.
mod common;

use std::sync::Arc;

use agent::agent::HookKind;
use agent::host::{Hook, HostFuture};
use common::*;

#[tokio::test]
async fn a_panicking_hook_fails_the_run_and_releases_waiters() {
    let agent = agent_with(vec![text_response("hi", 1)], vec![], None);
    let hook: Hook = Arc::new(|_input, _signal| -> HostFuture<_> { panic!("hook bug") });
    agent.update_settings(|settings| settings.hooks.set(HookKind::PrepareRequest, Some(hook)));
    let recorder = Recorder::attach(&agent);
    common::failure(
        agent.prompt_text("go").await,
        agent::error::ErrorKind::ModelError,
    );
    assert!(!agent.is_streaming());
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Internal error in libagent: the run panicked")
    );
    let types = recorder.types();
    assert_eq!(
        &types[types.len() - 4..],
        ["message_start", "message_end", "turn_end", "agent_end"]
    );
}

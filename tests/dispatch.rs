//! Host-pumped mode from Rust: an agent built with a dispatcher calls its host code only inside
//! `Dispatcher::dispatch`, on the dispatching thread, and gives the thread back once the
//! dispatch's budget is spent.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::agent::{Agent, AgentOptions, InitialState, PromptInput};
use agent::dispatch::Dispatcher;
use agent::event::AgentEvent;
use agent::faux::scripted_stream_fn;
use agent::host::HostFuture;
use agent::json::json;

fn text_response(chunks: usize) -> agent::json::Json {
    let text: Vec<String> = (0..chunks).map(|i| format!("w{i} ")).collect();
    json!({"content": [{"type": "text", "text": text.concat(), "deltas": text}]})
}

#[test]
fn callbacks_run_only_inside_dispatch_and_a_budget_gives_the_thread_back() {
    let dispatcher = Dispatcher::new();
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            model: Some(common::model()),
            ..Default::default()
        },
        stream_fn: Some(scripted_stream_fn(vec![text_response(40)])),
        dispatcher: Some(dispatcher.clone()),
        ..Default::default()
    })
    .unwrap();
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = threads.clone();
    agent.subscribe(Arc::new(move |_event: Arc<AgentEvent>, _signal| {
        // Each event takes about a millisecond of the host's frame.
        std::thread::sleep(Duration::from_millis(1));
        seen.lock().unwrap().push(std::thread::current().id());
        Box::pin(async { Ok(()) }) as HostFuture<_>
    }));
    let run = agent
        .start_prompt(
            PromptInput::Text {
                text: "go".into(),
                images: Vec::new(),
            },
            None,
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        threads.lock().unwrap().is_empty(),
        "nothing runs before a dispatch"
    );

    // A budget of 2 ms: the run yields after the event that spent it, long before its ~50 events.
    dispatcher.dispatch(Some(Duration::from_millis(2)));
    let after_one_frame = threads.lock().unwrap().len();
    assert!(after_one_frame >= 1, "a dispatch runs at least one step");
    assert!(
        after_one_frame < 10,
        "a 2 ms budget delivered {after_one_frame} events of 1 ms each"
    );

    let mut frames = 1;
    while run.outcome().is_none() {
        dispatcher.dispatch(Some(Duration::from_millis(2)));
        dispatcher.wait(Some(Duration::from_millis(10)));
        frames += 1;
        assert!(frames < 10_000, "the run did not finish");
    }
    let threads = threads.lock().unwrap();
    assert!(
        threads.len() > 40,
        "every event was delivered: {}",
        threads.len()
    );
    let here = std::thread::current().id();
    assert!(
        threads.iter().all(|t| *t == here),
        "every callback ran on the dispatching thread"
    );
    assert!(frames > 5, "the run took several frames: {frames}");
}

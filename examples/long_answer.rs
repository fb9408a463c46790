//! Streams one long answer through an agent and prints the time per delta.
//! `cargo run --release --example long_answer -- 20000`
use std::time::Instant;

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::faux::scripted_stream_fn;
use agent::json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let deltas: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20000);
    let pieces: Vec<String> = (0..deltas).map(|k| format!("d{k:07}")).collect();
    let text = pieces.concat();
    let response = json!({"content": [{"type": "text", "text": text, "deltas": pieces}]});
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            model: Some(json!({"id": "m", "api": "a", "provider": "p"})),
            ..Default::default()
        },
        stream_fn: Some(scripted_stream_fn(vec![response])),
        ..Default::default()
    })
    .unwrap();
    let started = Instant::now();
    agent.prompt_text("go").await.unwrap();
    let elapsed = started.elapsed();
    println!(
        "{deltas} deltas: {:?} ({:.2} us/delta)",
        elapsed,
        elapsed.as_secs_f64() * 1e6 / deltas as f64
    );
}

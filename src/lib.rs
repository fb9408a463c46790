//! libagent: the agent loop of pi agent core, embeddable through a C ABI (`include/agent.h`)
//! and usable directly from Rust.
//!
//! ```
//! use std::sync::Arc;
//! use agent::agent::{Agent, AgentOptions, InitialState};
//! use agent::faux::scripted_stream_fn;
//! use agent::host::{HostFuture, Listener};
//! use agent::json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let agent = Agent::new(AgentOptions {
//!     initial_state: InitialState { system_prompt: Some("Be brief.".into()), ..Default::default() },
//!     // A real model is a `StreamFn` pushing assistant stream events (SPEC §3).
//!     stream_fn: Some(scripted_stream_fn(vec![json!({"content": [{"type": "text", "text": "Hi!"}]})])),
//!     ..Default::default()
//! })
//! .unwrap();
//! let listener: Listener = Arc::new(|event, _signal| {
//!     if let Some(delta) = event.delta() {
//!         print!("{delta}");
//!     }
//!     Box::pin(async { Ok(()) }) as HostFuture<_>
//! });
//! agent.subscribe(listener);
//! agent.prompt_text("hello").await.unwrap();
//! assert_eq!(agent.messages().last().unwrap()["content"][0]["text"], "Hi!");
//! # });
//! ```
//!
//! Crate map (one line per module):
pub mod agent; // the stateful Agent: state, queues, lifecycle, listeners
pub mod agent_loop; // the low-level loop (run / continue), tool batches, hooks
pub mod args; // tool-argument coercion + JSON Schema validation, partial-JSON parsing
pub mod error; // errors by kind (each kind is one C status code)
pub mod event; // AgentEvent and its JSON shapes
pub mod faux; // the scripted stream function (demo, tests, deterministic hosts)
pub mod ffi; // the C ABI only: handles, strings, status codes, callbacks, builders
pub mod host; // what the host plugs in: signal, stream functions, tools, hooks, listeners
pub mod json; // the order-preserving JSON value and JavaScript rendering rules
pub mod message; // data model: shared messages, the shapes the core creates, typed views
pub mod pending; // work in flight, waited for by done, waits and frees
pub mod runtime; // the runtime thread
pub mod stream; // assistant stream: host events to partial/final messages
pub mod transcript; // system-prompt replay, tool declarations and tool-state diffs

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
//!     if event.update_type() == Some("text_delta") {
//!         print!("{}", event.delta().unwrap_or_default()); // not thinking or tool-argument deltas
//!     }
//!     Box::pin(async { Ok(()) }) as HostFuture<_>
//! });
//! agent.subscribe(listener);
//! agent.prompt_text("hello").await.unwrap();
//! assert_eq!(agent.messages().last().unwrap()["content"][0]["text"], "Hi!");
//! # });
//! ```
//!
//! # Concepts, one runnable example each
//!
//! **A model** is a [`host::StreamFn`]: it receives the request and pushes assistant stream
//! events (SPEC §3) into its sink, from any thread, now or later; `partial` is rebuilt for you.
//!
//! ```
//! # use std::sync::Arc;
//! # use agent::agent::{Agent, AgentOptions};
//! # use agent::json::json;
//! let model: agent::host::StreamFn = Arc::new(|_request, sink| {
//!     std::thread::spawn(move || {
//!         for event in [
//!             json!({"type": "start"}),
//!             json!({"type": "text_start", "contentIndex": 0}),
//!             json!({"type": "text_delta", "contentIndex": 0, "delta": "Hello"}),
//!             json!({"type": "text_end", "contentIndex": 0}),
//!             json!({"type": "done", "reason": "stop"}),
//!         ] {
//!             sink.push(event).unwrap();
//!         }
//!     });
//! });
//! let agent = Agent::new(AgentOptions { stream_fn: Some(model), ..Default::default() }).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! agent.prompt_text("hi").await.unwrap();
//! # });
//! assert_eq!(agent.messages()[1]["content"][0]["text"], "Hello");
//! ```
//!
//! **Tools** are typed functions: the arguments are a serde type whose JSON Schema (derived with
//! `schemars`) is what the model sees; libagent validates and coerces before decoding.
//!
//! ```
//! # use agent::agent::{Agent, AgentOptions, InitialState};
//! # use agent::faux::scripted_stream_fn;
//! # use agent::json::json;
//! use agent::host::{text_result, typed_tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: f64, b: f64 }
//!
//! let add = typed_tool("add", "Adds two numbers", |args: Add, _ctx| async move {
//!     Ok(text_result(&(args.a + args.b).to_string()))
//! });
//! let agent = Agent::new(AgentOptions {
//!     initial_state: InitialState { tools: vec![add], ..Default::default() },
//!     stream_fn: Some(scripted_stream_fn(vec![
//!         json!({"content": [{"type": "toolCall", "id": "c1", "name": "add", "arguments": {"a": 2, "b": "3"}}]}),
//!         json!({"content": [{"type": "text", "text": "5"}]}),
//!     ])),
//!     ..Default::default()
//! }).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! agent.prompt_text("2 + 3?").await.unwrap();
//! # });
//! assert_eq!(agent.messages()[3]["content"][0]["text"], "5"); // the tool result
//! ```
//!
//! **Events** reach listeners ([`agent::Agent::subscribe`], awaited in order; see above) or a
//! lossless pull queue, also usable as a `futures::Stream`:
//!
//! ```
//! # use agent::agent::{Agent, AgentOptions};
//! # use agent::faux::scripted_stream_fn;
//! # use agent::json::json;
//! use futures::StreamExt;
//! # let agent = Agent::new(AgentOptions { stream_fn: Some(scripted_stream_fn(vec![json!({"content": [{"type": "text", "text": "Hi"}]})])), ..Default::default() }).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut events = agent.open_events(1024).unwrap().into_stream();
//! agent.prompt_text("hello").await.unwrap();
//! assert_eq!(events.next().await.unwrap().type_name(), "agent_start");
//! # });
//! ```
//!
//! **Steering and follow-ups** queue user messages into a run (SPEC §7.13); **hooks** are
//! closures set in [`agent::Settings`]; **errors** carry a [`error::ErrorKind`]:
//!
//! ```
//! # use std::sync::{mpsc, Arc, Mutex};
//! # use agent::agent::{Agent, AgentOptions, PromptInput};
//! # use agent::faux::scripted_stream_fn;
//! # use agent::json::json;
//! use agent::error::ErrorKind;
//! # let script = scripted_stream_fn(vec![json!({"content": [{"type": "text", "text": "a"}]}), json!({"content": [{"type": "text", "text": "b"}]})]);
//! # // The model answers each request only once released: "first" is surely still running below.
//! # let (release, gate) = mpsc::channel::<()>();
//! # let gate = Mutex::new(gate);
//! # let model: agent::host::StreamFn = Arc::new(move |request, sink| {
//! #     let _ = gate.lock().unwrap().recv();
//! #     script(request, sink)
//! # });
//! # let agent = Agent::new(AgentOptions { stream_fn: Some(model), ..Default::default() }).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let text = |t: &str| PromptInput::Text { text: t.into(), images: vec![] };
//! agent.start_prompt(text("first"), None).unwrap();
//! let busy = agent.start_prompt(text("second"), None).err().unwrap();
//! assert_eq!(busy.kind, ErrorKind::Busy);
//! agent.follow_up(json!({"role": "user", "content": "then this", "timestamp": 1}));
//! # release.send(()).unwrap();
//! # release.send(()).unwrap();
//! agent.wait_for_idle().await;
//! # });
//! assert_eq!(agent.message_count(), 4); // first, a, then this, b
//! ```
//!
//! A run whose model request failed (its last message has stopReason "error") is an `Err` of
//! kind `ModelError` carrying the `errorMessage`; an aborted run is an `Err` of kind `Aborted`:
//!
//! ```
//! # use agent::agent::{Agent, AgentOptions};
//! # use agent::error::ErrorKind;
//! # use agent::json::json;
//! let failing = agent::faux::scripted_stream_fn(vec![
//!     json!({"content": [], "stopReason": "error", "errorMessage": "401 invalid api key"}),
//! ]);
//! let agent = Agent::new(AgentOptions { stream_fn: Some(failing), ..Default::default() }).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let failed = agent.prompt_text("hello").await.unwrap_err();
//! assert_eq!(failed.kind, ErrorKind::ModelError);
//! assert_eq!(failed.message, "401 invalid api key");
//! # });
//! ```
//!
//! **Options from JSON** (the C ABI's shape) for hosts that keep configuration as text:
//! [`agent::AgentOptions::from_json`].
//!
//! Crate map (one line per module):
pub mod agent; // the stateful Agent: state, queues, lifecycle, listeners
pub mod agent_loop; // the low-level loop (run / continue), tool batches, hooks
pub mod args; // tool-argument coercion + JSON Schema validation, partial-JSON parsing
#[cfg(feature = "coding")]
pub mod coding; // the coding tool pack: file tools confined to a root; bash (opt-in) is not
pub mod context; // token estimates, the compaction threshold and cut point, file lists, overflow and retry classification
mod cost_canary; // the cost test's environment-switched quadratic copies (off in normal use)
pub mod dispatch; // host-pumped execution: an agent's tasks run inside the host's dispatch calls
pub mod error; // errors by kind (each kind is one C status code)
pub mod event; // AgentEvent and its JSON shapes
pub mod faux; // the scripted stream function (demo, tests, deterministic hosts)
pub mod ffi; // the C ABI only: handles, strings, status codes, callbacks, builders
pub mod host; // what the host plugs in: signal, stream functions, tools, hooks, listeners
#[cfg(feature = "http")]
mod http_client; // HTTP/1.1 for the providers and MCP: pooled, TLS, proxies, 64 KB read buffers
pub mod json; // the order-preserving JSON value and JavaScript rendering rules
#[cfg(feature = "mcp")]
pub mod mcp; // MCP servers' tools as agent tools (stdio, streamable HTTP)
pub mod message; // data model: shared messages, the shapes the core creates, typed views
#[cfg(feature = "models")]
pub mod models; // the model catalogue: pi-ai 1.6.0's models by "provider/id"
pub mod pending; // work in flight, waited for by done, waits and frees
#[cfg(feature = "providers")]
pub mod providers; // built-in model providers (HTTP + SSE), dispatching on model.api
pub mod request_text; // a stream request's JSON text, built on the agent's last one
pub mod runtime; // the runtime thread
pub mod session; // session files (pi's JSONL v3): store, migration, context at a leaf
pub mod stream; // assistant stream: host events to partial/final messages
mod sync; // the poison-tolerant lock every layer shares
pub mod transcript; // system-prompt replay, tool declarations and tool-state diffs

/// The README's Rust code, compiled and run as doctests (`cargo test --doc ReadmeDoctests`;
/// tests/readme/check_snippets.py checks the other languages' blocks).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Release builds with the feature `mimalloc` (the C library as the Makefile builds it; not a
/// default, so a Rust program keeps its own allocator) allocate with mimalloc; debug builds keep
/// the system allocator so valgrind sees every allocation.
#[cfg(all(feature = "mimalloc", not(debug_assertions)))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the memory the allocator holds freed to the system, after work that freed a lot (a
/// large session read, a large text the host freed): mimalloc keeps freed pages until a later
/// allocation passes its purge delay, so the host's process would stay that much larger. (The
/// system allocator unmaps large blocks on free by itself; nothing to do then.)
pub(crate) fn release_freed_memory() {
    #[cfg(all(feature = "mimalloc", not(debug_assertions)))]
    {
        extern "C" {
            // mimalloc's own collection (linked in by the mimalloc crate's C library).
            fn mi_collect(force: bool);
        }
        // SAFETY: mi_collect takes no pointers and may be called from any thread.
        unsafe { mi_collect(true) };
    }
}

//! libagent: the agent loop of pi agent core, embeddable through a C ABI.
//!
//! Crate map (one line per module):
pub mod agent; // the stateful Agent: state, queues, lifecycle, listeners
pub mod agent_loop; // the low-level loop (run / continue), tool batches, hooks
pub mod args; // tool-argument coercion + JSON Schema validation, partial-JSON parsing
pub mod event; // AgentEvent and its JSON shapes
pub mod faux;
pub mod host; // what the host plugs in: signal, stream functions, tools, hooks, listeners
pub mod json; // the order-preserving JSON value and JavaScript rendering rules
pub mod message; // data model: messages, usage, models, tool declarations
pub mod runtime; // the runtime thread
pub mod stream; // assistant stream: host events to partial/final messages
pub mod transcript; // system-prompt replay, tool declarations and tool-state diffs // the scripted stream function (demo, tests, deterministic hosts)

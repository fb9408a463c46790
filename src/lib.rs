//! libagent: the agent loop of pi agent core, embeddable through a C ABI.
//!
//! Crate map (one line per module):
pub mod args; // tool-argument coercion + JSON Schema validation, partial-JSON parsing
pub mod json; // the order-preserving JSON value and JavaScript rendering rules
pub mod message; // data model: messages, usage, models, tool declarations
pub mod stream; // assistant stream: host events to partial/final messages
pub mod transcript; // system-prompt replay, tool declarations and tool-state diffs

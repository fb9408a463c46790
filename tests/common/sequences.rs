//! Building blocks of the canonical sequences of SPEC §8.2 (agent_sequences*.rs).

use agent::json::{json, Json};

use super::final_msg;

/// The content of one text block.
pub fn text(t: &str) -> Json {
    json!([{"type": "text", "text": t}])
}

/// A text response streamed with exactly these deltas.
pub fn deltas_response(deltas: &[&str]) -> Json {
    json!({"content": [{"type": "text", "text": deltas.concat(), "deltas": deltas}]})
}

/// The final assistant message of a text answer that stopped normally.
pub fn assistant_text(t: &str) -> Json {
    final_msg(text(t), "stop")
}

//! Building blocks of the canonical sequences of SPEC §8.2 (agent_sequences*.rs).

use agent::json::{json, Json};

use super::*;

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

/// The first turn of prompt `go` whose answer calls `read` once (`c1`, no arguments) and gets
/// `result`: its events from `agent_start` to `turn_end`, then the user message, the assistant
/// message and the tool result message it commits.
pub fn read_turn(result: Json, is_error: bool, timed: bool) -> (Vec<Json>, Json, Json, Json) {
    let c1 = call("c1", "read", json!({}));
    let u = user_text("go");
    let a1 = final_msg(json!([c1]), "toolUse");
    let tr1 = tr("c1", "read", &result, is_error, timed);
    let mut events = vec![ev("agent_start"), ev("turn_start")];
    events.extend(committed(&u));
    events.extend(tool_message_events(&[c1], "toolUse"));
    events.extend([
        tool_start("c1", "read", json!({})),
        tool_end("c1", "read", result, is_error, timed),
    ]);
    events.extend(committed(&tr1));
    events.push(turn_end(&a1, std::slice::from_ref(&tr1)));
    (events, u, a1, tr1)
}

/// The first events of a run from prompt message `u`: the run and turn starts, then `u`.
pub fn prompt_start(u: &Json) -> Vec<Json> {
    let mut events = vec![ev("agent_start"), ev("turn_start")];
    events.extend(committed(u));
    events
}

/// A streamed text answer made of `deltas` that stops normally, and the `turn_end` it closes.
pub fn text_answer(deltas: &[&str]) -> Vec<Json> {
    let mut events = text_message_events(deltas, "stop");
    events.push(turn_end(&assistant_text(&deltas.concat()), &[]));
    events
}

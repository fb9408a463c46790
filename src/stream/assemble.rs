//! Turning host stream events (full or delta form) into full-form events and partial messages
//! (SPEC §3.3, §3.4, §3.7, §3.10 steps 1–3).

use crate::json::Json;

/// What one host event means for the loop after assembly.
#[derive(Debug, Clone, PartialEq)]
pub enum Assembled {
    /// Nothing to report (unknown type, update before `start`, second `start`, an ignored
    /// `toolcall_end` on a non-toolCall block, anything after the terminal event).
    Ignored,
    /// The first `start`: the partial message as of this event.
    Start { partial: Json },
    /// An update event in full form (`partial` filled in, plus `content`/`toolCall` for `*_end`),
    /// and the partial message as of this event.
    Update { event: Json, partial: Json },
    /// The stream is over (a terminal event, or a delta-form failure such as
    /// `Received text_delta for non-text content`): the final message, before timing and the
    /// thinking-level stamp. `started` tells whether a `start` had been seen.
    Final { message: Json, started: bool },
}

/// Assembles one request's stream. `model` is the request's model (for delta-form `start`).
#[derive(Debug)]
pub struct Assembler {}

impl Assembler {
    pub fn new(model: &Json) -> Self {
        let _ = model;
        todo!("SPEC §3.7")
    }

    /// Feeds one event pushed by the host.
    pub fn accept(&mut self, event: Json) -> Assembled {
        let _ = event;
        todo!("SPEC §3.7")
    }

    /// Ends the stream without a terminal event: `final_message` is the host's explicit final
    /// message, if any; otherwise the [libagent] rule of SPEC §3.5 applies
    /// (`Stream ended without a done or error event`). Returns `Assembled::Final`, or `Ignored`
    /// if the stream was already complete.
    pub fn end(&mut self, final_message: Option<Json>) -> Assembled {
        let _ = final_message;
        todo!("SPEC §3.5")
    }

    /// True once a terminal event or `end` has been processed.
    pub fn is_complete(&self) -> bool {
        todo!()
    }
}

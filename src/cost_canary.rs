//! The cost test's canaries (tests/cost/run.py): quadratic copies the environment switches on, so
//! that the cost test shows, on every run, that it still catches one. Off unless
//! `LIBAGENT_COST_CANARY` names a canary; read once per process, then one atomic load per use.

use std::sync::OnceLock;

/// A deliberate O(n²) copy the cost test must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Canary {
    /// `LIBAGENT_COST_CANARY=sse`: the SSE parser copies every byte of the body read so far at
    /// each event it dispatches.
    Sse,
    /// `LIBAGENT_COST_CANARY=text`: a streamed text (a block's text, thinking or tool arguments)
    /// is copied whole at each delta instead of appended in place.
    Text,
    /// `LIBAGENT_COST_CANARY=transcript`: each run copies the agent's whole transcript, and each
    /// request's text is rendered whole, instead of building on the last run's and request's.
    Transcript,
}

/// Whether `canary` is switched on for this process (never in normal use: only the cost test
/// sets `LIBAGENT_COST_CANARY`).
pub(crate) fn cost_canary_on(canary: Canary) -> bool {
    static CHOSEN: OnceLock<Option<Canary>> = OnceLock::new();
    let chosen = CHOSEN.get_or_init(|| match std::env::var("LIBAGENT_COST_CANARY").as_deref() {
        Ok("sse") => Some(Canary::Sse),
        Ok("text") => Some(Canary::Text),
        Ok("transcript") => Some(Canary::Transcript),
        _ => None,
    });
    *chosen == Some(canary)
}

//! Assistant stream: turns host events into partial/final messages (SPEC §3).

pub mod assemble;

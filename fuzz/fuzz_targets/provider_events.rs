//! The model providers' stream readers (src/providers: OpenAI completions, Anthropic messages,
//! OpenAI responses, Google), on whatever a server sends.
//!
//! Input: a byte choosing the API, a byte giving the size of each read, then the response body
//! (raw bytes: any events, names, JSON or not). Each reader reads its common events through
//! borrowed views of their JSON (`providers::wire`, a scanner of its own) and everything else
//! through the general parse; the body goes through the reader twice, views on and off, and the
//! stream's receiver must get the same events and final message both times (no panic either).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ::agent::providers::fuzzing::views_agree(data);
});

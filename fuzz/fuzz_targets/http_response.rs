//! libagent's HTTP client (src/http_client/exchange.rs) on whatever a server sends back: the
//! response head (httparse, interim answers skipped, the 64 KB bound) and the body's framing
//! (chunked with extensions and trailers, content-length, until close).
//!
//! Input: a byte giving the size of each read, then the server's bytes. They are decoded twice,
//! in reads of that size and in one read of everything: the head (or why it is refused), the
//! body's data and how it ended must be the same both times (no panic either).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ::agent::providers::fuzzing::http_reads_agree(data);
});

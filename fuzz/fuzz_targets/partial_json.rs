//! The streamed tool-argument parser (src/args/partial_json) and the final parse/repair of
//! SPEC §3.8–§3.9. Input: raw text, cut into stream deltas at every 0xFF byte (never UTF-8, so
//! the fuzzer controls the chunking; each piece is decoded lossily as a host's deltas would be).
//!
//! Invariants: nothing panics; every partial snapshot is an object; the parser's state machine
//! does not depend on how the text was chunked (`is_done` agrees with a one-piece parse); the
//! final parse returns an object, and exactly the strict parse when the text is a JSON object;
//! `replace` with growing prefixes is the same stream as the appends.
#![no_main]

use ::agent::args::partial_json::PartialJsonParser;
use ::agent::args::{parse_tool_call_arguments, repair_json, ArgumentStream};
use ::agent::json::{self, Json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let pieces: Vec<String> = data
        .split(|&b| b == 0xFF)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let text: String = pieces.concat();

    // Streamed, with a snapshot after each delta (what the stream assembler does).
    let mut stream = ArgumentStream::new();
    let mut chunked = PartialJsonParser::new();
    for piece in &pieces {
        let partial = stream.append(piece);
        assert!(
            partial.is_object(),
            "partial arguments must be an object: {partial:?}"
        );
        chunked.append(piece);
        if let Some(snapshot) = chunked.snapshot() {
            // A snapshot is a JSON value that renders and reparses.
            let rendered = json::to_string(&snapshot.to_json());
            assert!(
                json::parse(&rendered).is_ok(),
                "snapshot renders invalid JSON: {rendered}"
            );
        }
    }
    assert_eq!(stream.text(), text);

    // The same text in one piece: the tokenizer must reach the same state.
    let mut whole = PartialJsonParser::new();
    whole.append(&text);
    let _ = whole.snapshot();
    assert_eq!(
        whole.is_done(),
        chunked.is_done(),
        "is_done depends on the chunking"
    );

    // The final parse.
    let finished = stream.finish();
    assert_eq!(finished, parse_tool_call_arguments(&text));
    assert!(finished.arguments.is_object());
    match &finished.error {
        None => {}
        Some(error) => {
            assert_eq!(finished.arguments, Json::Object(Default::default()));
            assert!(error.ends_with(&format!("\n\nReceived arguments:\n{text}")));
        }
    }
    if let Ok(value @ Json::Object(_)) = json::parse(&text) {
        assert!(finished.error.is_none());
        assert_eq!(finished.arguments, value);
    }
    let _ = repair_json(&text);

    // `replace` with growing prefixes continues the same stream.
    let mut replaced = ArgumentStream::new();
    let mut prefix = String::new();
    for piece in &pieces {
        prefix.push_str(piece);
        assert!(replaced.replace(&prefix).is_object());
    }
    assert_eq!(replaced.text(), text);
    // And a replacement that is not an extension starts over.
    let restart: String = text.chars().rev().collect();
    replaced.replace(&restart);
    assert_eq!(replaced.text(), restart);
});

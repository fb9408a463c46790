//! One server body through an API's reader twice: with the borrowed views of its events' JSON
//! (`wire`, the hot path) and with the general parse. What the stream's receiver got must be the
//! same both times, whatever the body: the fuzz target `provider_events` (feature `fuzzing`)
//! and the readers' own tests drive the readers through here.

use std::ops::ControlFlow;

/// The fuzz target `http_response`'s check: the HTTP client decodes a response alike in reads of
/// any size (`http_client::fuzzing`).
pub use crate::http_client::fuzzing::reads_agree as http_reads_agree;

use super::sse::{SseEvent, SseParser};
use super::Call;
use crate::host::AbortSignal;
use crate::json::{json, Json};

/// The APIs whose readers have a view path.
#[derive(Clone, Copy, Debug)]
pub enum Api {
    OpenAiCompletions,
    AnthropicMessages,
    OpenAiResponses,
    GoogleGenerativeAi,
}

/// What the receiver got (the start's partial, each update as JSON, the final message; clock
/// fields removed) from `api`'s reader fed `body` in reads of `piece` bytes (at least 1), views
/// on or off.
pub fn read(api: Api, body: &[u8], piece: usize, views: bool) -> Vec<Json> {
    let piece = piece.max(1);
    match api {
        Api::OpenAiCompletions => super::openai::read_body(body, piece, views),
        Api::AnthropicMessages => super::anthropic::read_body(body, piece, views),
        Api::OpenAiResponses => super::openai_responses::read_body(body, piece, views),
        Api::GoogleGenerativeAi => super::google::read_body(body, piece, views),
    }
}

/// The fuzz target's check. `data`: a byte choosing the API, a byte giving the read size, then
/// the body. Panics when the two paths disagree (a reader's own panic surfaces too).
pub fn views_agree(data: &[u8]) {
    let [api, piece, body @ ..] = data else {
        return;
    };
    let api = match api % 4 {
        0 => Api::OpenAiCompletions,
        1 => Api::AnthropicMessages,
        2 => Api::OpenAiResponses,
        _ => Api::GoogleGenerativeAi,
    };
    let piece = usize::from(*piece);
    let (views, general) = (read(api, body, piece, true), read(api, body, piece, false));
    assert_eq!(
        views,
        general,
        "{api:?}: the views and the general parse disagree on {:?}",
        String::from_utf8_lossy(body)
    );
}

/// A call to a loopback model of `api` (nothing is sent).
pub(super) fn call(api: &str, provider: &str) -> Call {
    Call {
        model: std::sync::Arc::new(json!({"id": "m", "api": api, "provider": provider,
            "baseUrl": "http://127.0.0.1:9/v1"})),
        messages: Default::default(),
        options: json!({}),
        signal: AbortSignal::new(),
        api_key: Some("k".into()),
        transport: Default::default(),
    }
}

/// Each server-sent event `parser` (the API's own) reads from `body`, read `piece` bytes at a
/// time as the connection would hand them out, until `handle` breaks (with the stream's failure,
/// if any).
pub(super) fn each_sse_event(
    mut parser: SseParser,
    body: &[u8],
    piece: usize,
    mut handle: impl FnMut(SseEvent) -> ControlFlow<Option<String>>,
) -> Option<String> {
    for bytes in body.chunks(piece) {
        for event in parser.feed(bytes) {
            if let ControlFlow::Break(failure) = handle(event) {
                return failure;
            }
        }
    }
    match parser.finish().map(handle) {
        Some(ControlFlow::Break(failure)) => failure,
        _ => None,
    }
}

/// `chunks` as the `data:` events of an SSE body.
#[cfg(test)]
pub(super) fn sse_body<S: AsRef<str>>(chunks: &[S]) -> Vec<u8> {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str("data: ");
        body.push_str(chunk.as_ref());
        body.push_str("\n\n");
    }
    body.into_bytes()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every committed input of the fuzz target `provider_events` (its seeds and regressions):
    /// `make fuzz-replay` does not build that target (the fuzz crate would need the HTTP stack),
    /// so its inputs are replayed here, where the readers are built anyway.
    #[test]
    fn the_fuzz_targets_committed_inputs_read_alike_with_and_without_views() {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut replayed = 0;
        for folder in ["corpus", "regressions"] {
            let dir = fuzz.join(folder).join("provider_events");
            for entry in std::fs::read_dir(&dir).expect("the committed inputs") {
                let path = entry.unwrap().path();
                super::views_agree(&std::fs::read(&path).unwrap());
                replayed += 1;
            }
        }
        // The kits' bodies (66 seeds) and the regressions: an emptied folder is a failure.
        assert!(replayed > 66, "only {replayed} inputs");
    }
}

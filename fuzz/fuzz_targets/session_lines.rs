//! Session files' lines (src/session: the one-pass scan of `message` lines, and the full parser
//! it leaves everything else to), through the real `agent_session_open` / `agent_session_get`.
//!
//! Input: the lines of a session file after its header (raw bytes: invalid UTF-8, blank lines,
//! a cut-off last line). The same lines are written twice: as they are, and each after a space
//! (JSON that the scan never takes, so the parser reads every line). Both files must open alike
//! (or fail alike), and give byte-identical entries and context: whatever the scan takes must be
//! exactly what the parser would have read, and its spliced context what rendering would give.
#![no_main]

mod common;

use std::ffi::c_char;
use std::path::Path;
use std::ptr::null_mut;

use ::agent::ffi::session::*;
use common::*;
use libfuzzer_sys::fuzz_target;

const HEADER: &[u8] =
    br#"{"type":"session","version":3,"id":"fuzz","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;

/// Opens `path` and returns its entries' and context's JSON, or the error's status.
fn read(path: &Path) -> Result<(Vec<u8>, Vec<u8>), AgentStatus> {
    let path = path.to_str().expect("a UTF-8 temporary path");
    let mut session = AgentSession { id: 0 };
    // SAFETY: valid pointers and lengths; every returned string is copied, then freed once.
    unsafe {
        let status = st(agent_session_open(
            path.as_ptr().cast::<c_char>(),
            path.len(),
            null_mut(),
            0,
            &mut session,
        ));
        if status != AGENT_OK {
            return Err(status);
        }
        let get = |part| {
            let mut text: *mut c_char = null_mut();
            let mut len = 0usize;
            let status = st(agent_session_get(session, part, &mut text, &mut len));
            assert_eq!(status, AGENT_OK, "agent_session_get({part}) of an open session");
            let bytes = std::slice::from_raw_parts(text.cast::<u8>(), len).to_vec();
            agent_string_free(text);
            bytes
        };
        let entries = get(AGENT_SESSION_ENTRIES);
        let context = get(AGENT_SESSION_CONTEXT);
        assert_eq!(st(agent_session_free(session)), AGENT_OK);
        Ok((entries, context))
    }
}

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("libagent-fuzz-session-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut scanned = HEADER.to_vec();
    let mut parsed = HEADER.to_vec();
    for line in data.split(|&b| b == b'\n') {
        scanned.push(b'\n');
        scanned.extend_from_slice(line);
        parsed.extend_from_slice(b"\n ");
        parsed.extend_from_slice(line);
    }
    let (a, b) = (dir.join("scanned.jsonl"), dir.join("parsed.jsonl"));
    std::fs::write(&a, &scanned).expect("write");
    std::fs::write(&b, &parsed).expect("write");
    let (from_scan, from_parser) = (read(&a), read(&b));
    assert_eq!(
        from_scan.is_ok(),
        from_parser.is_ok(),
        "one file opened and the other did not: {from_scan:?} / {from_parser:?}"
    );
    if let (Ok((entries_a, context_a)), Ok((entries_b, context_b))) = (&from_scan, &from_parser) {
        assert_eq!(
            String::from_utf8_lossy(entries_a),
            String::from_utf8_lossy(entries_b),
            "the entries differ"
        );
        assert_eq!(
            String::from_utf8_lossy(context_a),
            String::from_utf8_lossy(context_b),
            "the context differs"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
});

//! The store's rules that the sessions kit does not pin: locking, lazy creation, failed writes,
//! refused files, the size limit and the cost of an append.

use super::*;
use crate::json::json;

fn user(text: &str) -> Json {
    json!({"role": "user", "content": text, "timestamp": 1})
}

fn assistant(text: &str) -> Json {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p",
           "model": "m", "stopReason": "stop", "timestamp": 2})
}

fn lines(path: &Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| crate::json::parse(line).unwrap())
        .collect()
}

#[test]
fn a_new_file_is_written_only_once_it_holds_a_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/work", Durability::Flush).unwrap();
    let path = session.file_path().unwrap().to_path_buf();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let session_id = session.header()["id"].as_str().unwrap().to_string();
    assert!(name.ends_with(&format!("_{session_id}.jsonl")), "{name}");
    assert!(!name[..24].contains([':', '.']), "{name}");
    session.append_model_change("anthropic", "claude").unwrap();
    session.append_thinking_level_change("high").unwrap();
    assert!(!path.exists() && !session.file_exists());
    let first = session.append_message(&user("hi")).unwrap();
    assert!(session.file_exists());
    let written = lines(&path);
    assert_eq!(written.len(), 4);
    assert_eq!(written[0], *session.header());
    assert_eq!(written[0]["version"], 3);
    assert_eq!(written[0]["cwd"], "/work");
    assert_eq!(written[3]["id"], first.as_str());
    assert_eq!(written[3]["parentId"], written[2]["id"]);
    // Later entries are appended one line each.
    let second = session.append_message(&assistant("hello")).unwrap();
    let written = lines(&path);
    assert_eq!(written.len(), 5);
    assert_eq!(written[4]["id"], second.as_str());
    let context = session.context().unwrap();
    assert_eq!(context.messages, vec![user("hi"), assistant("hello")]);
    assert_eq!(context.thinking_level, "high");
    assert_eq!(
        context.model,
        Some(json!({"provider": "p", "modelId": "m"}))
    );
}

#[test]
fn a_second_open_of_a_file_is_refused_while_the_first_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Session::create(dir.path(), "/work", Durability::Fsync).unwrap();
    first.append_message(&user("hi")).unwrap();
    let path = first.file_path().unwrap().to_path_buf();
    let error = Session::open(&path, "/work", Durability::Flush)
        .err()
        .unwrap();
    assert_eq!(error.kind, SessionErrorKind::Locked);
    assert!(
        error.message.contains(&path.display().to_string()),
        "{}",
        error.message
    );
    drop(first);
    let reopened = Session::open(&path, "/work", Durability::Flush).unwrap();
    assert_eq!(reopened.entries().unwrap().len(), 1);
    assert_eq!(reopened.context().unwrap().messages, vec![user("hi")]);
}

#[test]
fn files_that_are_not_sessions_are_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "future.jsonl",
            "{\"type\":\"session\",\"version\":4,\"id\":\"x\"}\n",
            "version 4",
        ),
        (
            "no-header.jsonl",
            "{\"type\":\"message\",\"id\":\"a\"}",
            "not a session file",
        ),
        ("garbage.jsonl", "not json\n\n", "not a session file"),
    ];
    for (name, text, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let error = Session::open(&path, "/work", Durability::Flush)
            .err()
            .unwrap();
        assert_eq!(error.kind, SessionErrorKind::NotASession, "{name}");
        assert!(error.message.contains(expected), "{}", error.message);
        assert!(error.message.contains(&path.display().to_string()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{name}");
    }
}

#[test]
fn a_file_over_512_mib_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.jsonl");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 30).unwrap(); // sparse: instant
    let error = Session::open(&path, "/work", Durability::Flush)
        .err()
        .unwrap();
    assert_eq!(error.kind, SessionErrorKind::NotASession);
    assert_eq!(
        error.message,
        format!(
            "{} is 1073741824 bytes; libagent opens session files up to 512 MiB.",
            path.display()
        )
    );
}

#[test]
fn malformed_lines_are_skipped_and_their_numbers_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n\nnope\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"gone\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n[1,\n";
    std::fs::write(&path, text).unwrap();
    let session = Session::open(&path, "/work", Durability::Flush).unwrap();
    assert_eq!(session.skipped_lines(), &[3, 5]);
    assert_eq!(session.entries().unwrap().len(), 1);
    // A parent that does not exist ends the path.
    assert_eq!(session.branch_path().unwrap().len(), 1);
    assert_eq!(session.leaf_id(), Some("a"));
    // A version 3 file is not rewritten.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn appending_costs_the_line_alone_whatever_the_file_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/work", Durability::Flush).unwrap();
    for i in 0..2000 {
        session
            .append_message(&user(&format!("message {i}")))
            .unwrap();
    }
    let path = session.file_path().unwrap().to_path_buf();
    drop(session);
    let mut session = Session::open(&path, "/work", Durability::Flush).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    let (read, written) = session.io_counters();
    assert_eq!((read, written), (size, 0), "opening reads the file once");
    for _ in 0..3 {
        let before = session.io_counters();
        let id = session.append_message(&user("one more")).unwrap();
        let (read, written) = session.io_counters();
        let line = crate::json::to_string(&session.entry(&id).unwrap().unwrap()).len() as u64 + 1;
        assert_eq!(read, before.0, "an append reads nothing");
        assert_eq!(written - before.1, line, "an append writes its line alone");
    }
}

#[cfg(unix)]
#[test]
fn a_directory_without_write_permission_fails_with_its_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("ro");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores permission bits; sysfs refuses new files even to root.
    let locked = if std::fs::write(locked.join("probe"), "").is_err() {
        locked
    } else if std::fs::write("/sys/libagent-probe", "").is_err() {
        PathBuf::from("/sys")
    } else {
        return; // no directory here refuses this user: nothing to observe
    };
    let mut session = Session::create(&locked, "/work", Durability::Flush).unwrap();
    session.append_model_change("p", "m").unwrap();
    let error = session.append_message(&user("hi")).err().unwrap();
    assert_eq!(error.kind, SessionErrorKind::Io);
    assert!(
        error.message.contains(&locked.display().to_string()),
        "{}",
        error.message
    );
    // The refused entry is not in memory: the next one hangs off the model change.
    assert_eq!(session.entries().unwrap().len(), 1);
    assert!(!session.file_exists());
}

/// A full disk, made with RLIMIT_FSIZE in a child process (this test binary run again): the
/// write that does not fit fails with EFBIG, and the file is cut back to its last whole line.
#[cfg(unix)]
#[test]
fn a_full_disk_fails_the_append_and_leaves_no_partial_line() {
    const CHILD: &str = "LIBAGENT_SESSION_FULL_DISK_DIR";
    if let Ok(dir) = std::env::var(CHILD) {
        return full_disk_child(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    // The child's output goes to pipes: under the file-size limit, writing to a log file that
    // is already larger would fail too.
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "session::tests::a_full_disk_fails_the_append_and_leaves_no_partial_line",
            "--nocapture",
        ])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    assert!(
        child.status.success(),
        "the child failed: {}\n{}{}",
        child.status,
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    let path = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    // Every line is whole, and reopening gives what the child had in memory.
    let session = Session::open(&path, "/work", Durability::Flush).unwrap();
    assert!(session.skipped_lines().is_empty());
    assert_eq!(session.entries().unwrap().len() + 1, text.lines().count());
    assert_eq!(
        session.entries().unwrap().last().unwrap()["message"]["content"],
        "small"
    );
}

#[cfg(unix)]
fn full_disk_child(dir: &Path) {
    let mut session = Session::create(dir, "/work", Durability::Fsync).unwrap();
    session.append_message(&user("small")).unwrap();
    let size = std::fs::metadata(session.file_path().unwrap())
        .unwrap()
        .len();
    // SAFETY: plain libc calls on this process; SIGXFSZ ignored so the write fails with EFBIG.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: size + 100,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let error = session
        .append_message(&user(&"x".repeat(1000)))
        .err()
        .unwrap();
    assert_eq!(error.kind, SessionErrorKind::Io);
    assert!(
        error.message.contains(&dir.display().to_string()),
        "{}",
        error.message
    );
    assert_eq!(
        std::fs::metadata(session.file_path().unwrap())
            .unwrap()
            .len(),
        size
    );
    assert_eq!(session.entries().unwrap().len(), 1);
}

#[test]
fn an_empty_file_gets_a_header_and_a_cut_line_gets_its_newline() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let session = Session::open(&empty, "/kit", Durability::Flush).unwrap();
    assert_eq!(lines(&empty), vec![session.header().clone()]);
    assert!(session.file_exists());
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(
        &cut,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"mess",
    )
    .unwrap();
    let mut session = Session::open(&cut, "/kit", Durability::Flush).unwrap();
    assert_eq!(session.skipped_lines(), &[2]);
    session.append_message(&user("next")).unwrap();
    let text = std::fs::read_to_string(&cut).unwrap();
    assert!(
        text.contains("{\"type\":\"mess\n{\"type\":\"message\""),
        "{text}"
    );
}

#[test]
fn refused_calls_change_nothing() {
    let mut session = Session::in_memory("/work");
    let a = session.append_message(&user("a")).unwrap();
    for entry in [
        json!({"type": "label", "targetId": "nope", "label": "x"}),
        json!({"type": "context_edit", "targetId": "nope", "replacement": null}),
        json!({"no": "type"}),
        json!([1]),
        json!({"type": "session"}),
        json!({"type": "message", "message": "text"}),
    ] {
        let error = session.append(entry.clone()).err().unwrap();
        assert_eq!(error.kind, SessionErrorKind::Refused, "{entry}");
    }
    assert_eq!(
        session.branch(Some("nope")).unwrap_err().kind,
        SessionErrorKind::Refused
    );
    assert_eq!(
        session.fork("nope").unwrap_err().kind,
        SessionErrorKind::Refused
    );
    assert_eq!(session.entries().unwrap().len(), 1);
    assert_eq!(session.leaf_id(), Some(a.as_str()));
}

#[test]
fn session_directory_encodes_the_working_directory() {
    assert_eq!(
        session_directory(Path::new("/base"), "/home/me/project"),
        PathBuf::from("/base/--home-me-project--")
    );
}

#[test]
fn a_float_version_3_is_version_3_and_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = "{\"type\":\"session\",\"version\":3.0,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"hookMessage\",\"content\":\"x\"}}\n";
    std::fs::write(&path, text).unwrap();
    let session = Session::open(&path, "/work", Durability::Flush).unwrap();
    assert_eq!(
        session.entries().unwrap()[0]["message"]["role"],
        "hookMessage"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_missing_file_is_created_with_its_directory_on_the_first_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/s.jsonl");
    let mut session = Session::open(&path, "/work", Durability::Flush).unwrap();
    assert!(!session.file_exists());
    session.append_message(&user("hi")).unwrap();
    assert_eq!(lines(&path).len(), 2);
}

#[test]
fn forking_a_file_session_continues_in_a_new_file_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/work", Durability::Flush).unwrap();
    let first = session.append_message(&user("one")).unwrap();
    session
        .append(json!({"type": "label", "targetId": first, "label": "start"}))
        .unwrap();
    let answer = session.append_message(&assistant("two")).unwrap();
    session.append_message(&user("three")).unwrap();
    let old_path = session.file_path().unwrap().to_path_buf();
    let old_text = std::fs::read_to_string(&old_path).unwrap();
    session.fork(&answer).unwrap();
    let new_path = session.file_path().unwrap().to_path_buf();
    assert_ne!(new_path, old_path);
    assert_eq!(new_path.parent(), old_path.parent());
    assert_eq!(std::fs::read_to_string(&old_path).unwrap(), old_text);
    // The path without its label entry, re-chained, then the label again.
    let written = lines(&new_path);
    assert_eq!(
        written[0]["parentSession"],
        old_path.to_string_lossy().as_ref()
    );
    let kinds: Vec<&str> = written[1..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["message", "message", "label"]);
    assert_eq!(written[2]["parentId"], first.as_str());
    assert_eq!(written[3]["targetId"], first.as_str());
    assert_eq!(written[3]["parentId"], answer.as_str());
    assert_eq!(session.leaf_id(), written[3]["id"].as_str());
    // The old file's lock went with it: it opens again; the new one is held.
    drop(Session::open(&old_path, "/work", Durability::Flush).unwrap());
    let held = Session::open(&new_path, "/work", Durability::Flush)
        .err()
        .unwrap();
    assert_eq!(held.kind, SessionErrorKind::Locked);
}

#[test]
fn continue_recent_takes_the_newest_session_of_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut older = Session::create(dir.path(), "/work", Durability::Flush).unwrap();
    older.append_message(&user("old")).unwrap();
    let older_path = older.file_path().unwrap().to_path_buf();
    drop(older);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut other = Session::create(dir.path(), "/elsewhere", Durability::Flush).unwrap();
    other.append_message(&user("other")).unwrap();
    drop(other);
    std::fs::write(dir.path().join("junk.jsonl"), "not a session\n").unwrap();
    let resumed = Session::continue_recent(dir.path(), "/work", Durability::Flush).unwrap();
    assert_eq!(resumed.file_path(), Some(older_path.as_path()));
    assert_eq!(resumed.context().unwrap().messages, vec![user("old")]);
    drop(resumed);
    let fresh = Session::continue_recent(dir.path(), "/nowhere", Durability::Flush).unwrap();
    assert!(!fresh.file_exists());
    assert_eq!(fresh.header()["cwd"], "/nowhere");
}

#[test]
fn a_session_can_move_between_threads() {
    fn send<T: Send>() {}
    send::<Session>();
    send::<std::sync::Arc<std::sync::Mutex<Session>>>();
}

#[test]
fn entries_are_parsed_on_demand_and_agree_with_the_kept_values() {
    let mut session = Session::in_memory("/work");
    let a = session.append_message(&user("a")).unwrap();
    session.append_message(&assistant("b")).unwrap();
    session.branch(Some(&a)).unwrap();
    session.append_message(&user("c")).unwrap();
    assert!(session.parsed.get().is_none(), "nothing parsed yet");
    let values = session.entry_values().unwrap();
    let branch = session.branch_values().unwrap();
    assert!(
        session.parsed.get().is_none(),
        "the C ABI's reads keep nothing"
    );
    assert_eq!(values.len(), 3);
    assert_eq!(session.entries().unwrap(), values.as_slice());
    let path: Vec<Json> = session
        .branch_path()
        .unwrap()
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(path, branch);
    assert_eq!(path.len(), 2);
    // Kept values follow later appends.
    session.append_model_change("p", "m").unwrap();
    assert_eq!(session.entries().unwrap().len(), 4);
    assert_eq!(session.entries().unwrap()[3]["type"], "model_change");
    assert_eq!(session.entry_values().unwrap(), session.entries().unwrap());
}

/// The context's text (spliced from the entries' texts) is the rendering of the context's
/// values, and so is the model's, for a file mixing every kind of line: stringified messages,
/// the same in other forms, compactions, context edits, derived messages, skipped lines. Large
/// enough that two threads read it, with a split inside the compaction's kept range.
#[test]
fn the_context_text_is_the_rendering_of_the_context_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.jsonl");
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let filler = "x".repeat(30_000);
    let mut parent = "null".to_string();
    let line = |text: &mut String, body: String| {
        text.push_str(&body);
        text.push('\n');
    };
    for i in 0..700 {
        let id = format!("e{i}");
        let p = parent.clone();
        let body = match i % 14 {
            0 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"{filler} {i}\n\"q\"","timestamp":1}}}}"#
            ),
            1 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"assistant","content":[{{"type":"text","text":"a{i}"}}],"provider":"p{i}","model":"m{i}","usage":{{"cost":0.00015}}}}}}"#
            ),
            // Valid but not in JSON.stringify's form: parsed, rendered canonically.
            2 => format!(
                r#"{{"type":"message", "id":"{id}","parentId":{p},"message":{{"role":"toolResult","content":[{{"type":"text","text":"\u0041\/"}}],"n":1.50}}}}"#
            ),
            3 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"user","content":null}}}}"#
            ),
            4 => format!(
                r#"{{"type":"custom_message","customType":"c","content":"note {i}","display":true,"id":"{id}","parentId":{p},"timestamp":"2026-01-01T00:00:02.000Z"}}"#
            ),
            5 => format!(
                r#"{{"type":"context_edit","id":"{id}","parentId":{p},"targetId":"e{}","replacement":{{"content":"edited"}}}}"#,
                i - 4
            ),
            6 => format!(
                r#"{{"type":"context_edit","id":"{id}","parentId":{p},"targetId":"e{}","replacement":null}}"#,
                i - 6
            ),
            7 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"bashExecution","command":"ls","output":"o","exitCode":1,"content":"c"}}}}"#
            ),
            8 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"system","content":"sys {i}"}}}}"#
            ),
            9 => format!(
                r#"{{"type":"thinking_level_change","id":"{id}","parentId":{p},"thinkingLevel":"l{i}"}}"#
            ),
            10 if i == 178 || i == 682 => format!(
                r#"{{"type":"compaction","id":"{id}","parentId":{p},"timestamp":"2026-01-01T00:00:03.000Z","summary":"sum {i}","firstKeptEntryId":"e{}","tokensBefore":5}}"#,
                i - 150
            ),
            11 => format!(
                r#"{{"type":"branch_summary","id":"{id}","parentId":{p},"fromId":"e1","summary":"went {i}","timestamp":"2026-01-01T00:00:04.000Z"}}"#
            ),
            12 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"user","content":"dup","content":"twice"}}}}"#
            ),
            _ => format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"custom","content":"c{i}","customType":"t"}}}}"#
            ),
        };
        line(&mut text, body);
        if i % 50 == 25 {
            line(
                &mut text,
                r#"{"type":"message","id":"bad","message":{"role":"user","content":tru}}"#.into(),
            );
        }
        parent = format!("\"{id}\"");
    }
    assert!(
        text.len() as u64 > read::SPLIT_BYTES,
        "two threads read the file"
    );
    std::fs::write(&path, &text).unwrap();
    let session = Session::open(&path, "/w", Durability::Flush).unwrap();
    assert_eq!(session.skipped_lines().len(), 14);
    let context = session.context().unwrap();
    assert!(context.messages.len() > 100);
    assert_eq!(
        session.context_text().unwrap(),
        crate::json::to_string(&context.to_json())
    );
    assert_eq!(
        session.llm_text().unwrap(),
        crate::json::to_string(&Json::Array(convert_to_llm(&context.messages)))
    );
    // Where the spliced and parsed entries meet the appended ones, and without a compaction.
    let mut session = session;
    session.append_message(&assistant("after")).unwrap();
    session.branch(Some("e150")).unwrap();
    let context = session.context().unwrap();
    assert_eq!(
        session.context_text().unwrap(),
        crate::json::to_string(&context.to_json())
    );
    assert_eq!(
        session.llm_text().unwrap(),
        crate::json::to_string(&Json::Array(convert_to_llm(&context.messages)))
    );
}

/// A header and stringified user messages `m0`, `m1`, ... chained, of `sizes[i]` content bytes.
/// A deterministic source of small numbers for the tests' mutations: `next(n)` is in `0..n`.
pub(super) fn numbers(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

/// Changes `bytes` in `changes` places (a byte removed, replaced or inserted from `alphabet`).
pub(super) fn mutate(
    bytes: &mut Vec<u8>,
    changes: usize,
    alphabet: &[u8],
    next: &mut impl FnMut(usize) -> usize,
) {
    for _ in 0..changes {
        let at = next(bytes.len());
        let byte = alphabet[next(alphabet.len())];
        match next(3) {
            0 => drop(bytes.remove(at)),
            1 => bytes[at] = byte,
            _ => bytes.insert(at, byte),
        }
    }
}

/// Opens the session file at `path` and checks that its entries are `expected` (each line read
/// alone) and that the context's text (spliced) is the context's rendering.
fn assert_reads_as_each_line_alone(path: &Path, expected: &[Json]) -> SessionContext {
    let session = Session::open(path, "/w", Durability::Flush).unwrap();
    assert_eq!(session.entries().unwrap(), expected);
    let context = session.context().unwrap();
    assert_eq!(
        session.context_text().unwrap(),
        crate::json::to_string(&context.to_json())
    );
    context
}

fn message_lines(sizes: &[usize]) -> Vec<u8> {
    let mut text = br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#.to_vec();
    text.push(b'\n');
    for (i, size) in sizes.iter().enumerate() {
        let parent = if i == 0 {
            "null".to_string()
        } else {
            format!("\"m{}\"", i - 1)
        };
        let content = format!("{i}:{}", "y".repeat(*size));
        let entry = json!({"type": "message", "id": format!("m{i}"), "parentId": crate::json::parse(&parent).unwrap(),
                           "message": {"role": "user", "content": content, "timestamp": 1}});
        text.extend_from_slice(crate::json::to_string(&entry).as_bytes());
        text.push(b'\n');
    }
    text
}

/// The file streams through the reader's small buffer on two threads whatever its lines: a line
/// longer than the buffer, one across the middle, one with invalid UTF-8 (U+FFFD, as the whole
/// text was read before), a last line without its newline. Every entry is the line parsed alone.
#[test]
fn every_line_is_read_whatever_its_length_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    let mut sizes = vec![40_000; 60];
    sizes[25] = 3 << 20;
    sizes[31] = 1 << 20;
    let mut text = message_lines(&sizes);
    text.extend_from_slice(br#"{"type":"message","id":"bad-utf8","parentId":"m59","message":{"role":"user","content":"a"#);
    text.extend_from_slice(b"\xff\xfe");
    text.extend_from_slice(br#"b"}}"#);
    text.push(b'\n');
    text.extend_from_slice(br#"{"type":"model_change","id":"last","parentId":"bad-utf8","provider":"p","modelId":"m"}"#);
    std::fs::write(&path, &text).unwrap();
    let session = Session::open(&path, "/w", Durability::Flush).unwrap();
    let expected: Vec<Json> = String::from_utf8_lossy(&text)
        .lines()
        .skip(1)
        .map(|line| crate::json::parse(line).unwrap())
        .collect();
    assert_eq!(session.entries().unwrap(), expected.as_slice());
    assert_eq!(expected[60]["message"]["content"], "a\u{fffd}\u{fffd}b");
    let context = session.context().unwrap();
    assert_eq!(context.messages.len(), 61);
    assert_eq!(
        session.context_text().unwrap(),
        crate::json::to_string(&context.to_json())
    );
    assert_eq!(session.leaf_id(), Some("last"));
    // A line the second half of the context is spliced from, changed: reported, whichever
    // thread read it.
    let mut changed = text.clone();
    let at = memchr::memmem::find(&text, b"\"58:yyy").unwrap();
    changed[at + 4] = b'z';
    std::fs::write(&path, &changed).unwrap();
    let error = session.context_text().unwrap_err();
    assert!(
        error.message.contains("was changed by another program"),
        "{}",
        error.message
    );
}

/// UTF-8 is checked for many lines at once where it can be: a file of multi-byte text (characters
/// across every buffer's end and the middle) with invalid bytes in lines here and there (the
/// first line of a buffer, the last, the line the second thread starts at) reads every line as
/// the line decoded alone, and its context is the same whether spliced or built.
#[test]
fn multi_byte_and_invalid_text_read_as_each_line_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("utf8.jsonl");
    let mut text = message_lines(&[]);
    let words = ["é", "✓", "😀", "a", "ß"];
    let mut parent = "null".to_string();
    for i in 0..6000 {
        let content: String = (0..120 + i % 37)
            .map(|k| words[(i + k) % words.len()])
            .collect();
        let entry = json!({"type": "message", "id": format!("m{i}"), "parentId": crate::json::parse(&parent).unwrap(),
                           "message": {"role": "user", "content": content, "timestamp": 1}});
        let mut line = crate::json::to_string(&entry).into_bytes();
        if i % 401 == 7 || i == 3000 {
            // An invalid byte inside the content.
            let at = line.len() - 30;
            line[at] = 0xff;
        }
        text.extend_from_slice(&line);
        text.push(b'\n');
        parent = format!("\"m{i}\"");
    }
    assert!(text.len() > 2 * (1 << 20), "{}", text.len());
    std::fs::write(&path, &text).unwrap();
    let expected: Vec<Json> = text
        .split(|&b| b == b'\n')
        .skip(1)
        .filter(|line| !line.is_empty())
        .map(|line| crate::json::parse(&String::from_utf8_lossy(line)).unwrap())
        .collect();
    let context = assert_reads_as_each_line_alone(&path, &expected);
    assert_eq!(context.messages.len(), 6000);
}

/// Lines of a shape the reading thread has learned are read without looking for their end
/// first: a file of a few shapes repeated, a quarter of its lines changed a byte or two (many
/// then of no shape, or not JSON, or another entry), reads every line as the line read alone.
#[test]
fn lines_of_learned_shapes_read_as_each_line_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shapes.jsonl");
    let messages = [
        json!({"role": "user", "content": [{"type": "text", "text": "fix the bug in the parser"}], "timestamp": 1}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "reading it"},
               {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "src/a.rs"}}],
               "usage": {"input": 10, "output": 2.5}, "stopReason": "toolUse", "timestamp": 2}),
        json!({"role": "toolResult", "toolCallId": "t1", "toolName": "read",
               "content": [{"type": "text", "text": "fn main() {}\n"}], "isError": false, "timestamp": 3}),
    ];
    let mut next = numbers(0x9e37_79b9_7f4a_7c15);
    let alphabet = b"{}[]\":,\\ 0123456789.-etrufalsnx\t";
    let mut text = message_lines(&[]);
    for i in 0..9000 {
        let parent = if i == 0 {
            Json::Null
        } else {
            json!(format!("m{}", i - 1))
        };
        let entry = json!({"type": "message", "id": format!("m{i}"), "parentId": parent,
                           "timestamp": "2026-01-01T00:00:00.000Z", "message": messages[i % 3].clone()});
        let mut line = crate::json::to_string(&entry).into_bytes();
        if next(4) == 0 {
            let changes = 1 + next(2);
            mutate(&mut line, changes, alphabet, &mut next);
        }
        if i % 50 == 7 {
            // A whole line of a learned shape, and more after it.
            line.extend_from_slice([&b"x"[..], b" ", b"}", b",", b"\t", b"{}"][(i / 50) % 6]);
        }
        text.extend_from_slice(&line);
        text.push(b'\n');
    }
    assert!(text.len() > 2 * (1 << 20), "{}", text.len());
    std::fs::write(&path, &text).unwrap();
    let expected: Vec<Json> = text
        .split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|line| crate::json::parse(std::str::from_utf8(line).unwrap()).ok())
        .filter(Json::is_object)
        .collect();
    assert_reads_as_each_line_alone(&path, &expected);
}

/// Entries are read back from the file when asked for: a file another program changed since
/// (a line rewritten in place, the file cut short) is reported, never read as something else.
#[test]
fn a_file_changed_behind_the_session_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("changed.jsonl");
    let text = message_lines(&[100, 200, 300]);
    std::fs::write(&path, &text).unwrap();
    let session = Session::open(&path, "/w", Durability::Flush).unwrap();
    assert_eq!(session.context().unwrap().messages.len(), 3);
    // The same length, one byte of a message changed (the lock is advisory).
    let changed = String::from_utf8(text.clone())
        .unwrap()
        .replacen("1:yyy", "1:zyy", 1);
    assert_eq!(changed.len(), text.len());
    std::fs::write(&path, &changed).unwrap();
    let changed_error = |error: SessionError| {
        assert_eq!(error.kind, SessionErrorKind::Io);
        assert!(
            error.message.contains("was changed by another program"),
            "{}",
            error.message
        );
    };
    changed_error(session.context_text().unwrap_err());
    changed_error(session.context().unwrap_err());
    changed_error(session.entries().unwrap_err());
    changed_error(session.entry("m1").unwrap_err());
    assert_eq!(session.entry("m0").unwrap().unwrap()["id"], "m0");
    // Cut short.
    std::fs::write(&path, &text[..text.len() - 50]).unwrap();
    changed_error(session.llm_text().unwrap_err());
}

/// A file that repeats an id: a parent is the later entry with that id (as the reference's map
/// keeps it), even where the entry before the child has the id too.
#[test]
fn a_repeated_id_resolves_to_its_later_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repeated.jsonl");
    let entry = |id: &str, parent: Option<&str>, text: &str| {
        crate::json::to_string(&json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": user(text)}))
    };
    let text = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#.to_string(),
        entry("a", None, "one"),
        entry("b", Some("a"), "two"),
        entry("a", None, "three"),
    ]
    .join("\n")
        + "\n";
    std::fs::write(&path, text).unwrap();
    let mut session = Session::open(&path, "/w", Durability::Flush).unwrap();
    session.branch(Some("b")).unwrap();
    let contents: Vec<Json> = session
        .context()
        .unwrap()
        .messages
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(contents, vec![json!("three"), json!("two")]);
    let text = session.context_text().unwrap();
    assert!(
        text.find("three").unwrap() < text.find("two").unwrap(),
        "{text}"
    );
    assert!(!text.contains("one"), "{text}");
}

/// Opens `text` as a session file and checks it against the same entries stored in memory: the
/// lines, the header, the skipped lines' numbers, the index (the later of two entries with one
/// id), the labels, the conversation flag and the leaf, however the reading threads split it.
fn assert_opens_as_its_lines(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("split.jsonl");
    std::fs::write(&path, text).unwrap();
    let session = Session::open(&path, "/w", Durability::Flush).unwrap();
    let mut header = None;
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for (index, line) in text.lines().enumerate() {
        match crate::json::parse(line) {
            Ok(entry @ Json::Object(_)) if header.is_none() => header = Some(entry),
            Ok(entry @ Json::Object(_)) => {
                if entry.get("type").and_then(Json::as_str) != Some("session") {
                    entries.push(entry);
                }
            }
            _ if line.trim().is_empty() => {}
            _ => skipped.push(index + 1),
        }
    }
    let expected = Session::from_entries("/w", entries.clone()).unwrap();
    assert_eq!(session.header(), header.as_ref().unwrap());
    assert_eq!(session.skipped_lines(), skipped);
    assert_eq!(session.entries().unwrap(), entries);
    assert_eq!(session.labels, expected.labels);
    assert_eq!(session.has_conversation, expected.has_conversation);
    assert_eq!(session.repeated_ids, expected.repeated_ids);
    assert_eq!(session.leaf_id(), expected.leaf_id());
    for entry in &entries {
        let id = entry.get("id").and_then(Json::as_str).unwrap();
        assert_eq!(
            session.entry(id).unwrap(),
            expected.entry(id).unwrap(),
            "{id}"
        );
    }
}

/// Lines of the same length (`width` bytes with the newline): message, label and model entries,
/// one id given twice.
fn even_lines(count: usize, width: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let id = if i == count - 3 { "e5".to_string() } else { format!("e{i}") };
            let parent = if i == 0 { "null".to_string() } else { format!("\"e{}\"", i - 1) };
            let body = match i % 7 {
                3 => format!(r#""type":"label","id":"{id}","parentId":{parent},"targetId":"e{}","label":"l{}","#, i / 2, i % 3),
                5 => format!(r#""type":"label","id":"{id}","parentId":{parent},"targetId":"e{}","#, i / 3),
                6 => format!(r#""type":"model_change","id":"{id}","parentId":{parent},"provider":"p","modelId":"m","#),
                _ => format!(r#""type":"message","id":"{id}","parentId":{parent},"message":{{"role":"{}","content":"x"}},"#,
                             if i % 2 == 0 { "custom" } else { "user" }),
            };
            let pad = width - 1 - body.len() - r#"{"pad":""}"#.len();
            format!(r#"{{{body}"pad":"{}"}}"#, "p".repeat(pad))
        })
        .collect()
}

/// A large file is read by two threads, each storing its half: the header may be in the second
/// half (the first holds no entry), a header line may start the second half (it is dropped), and
/// labels, repeated ids and skipped lines fall on both sides.
#[test]
fn the_halves_of_a_file_store_as_its_lines() {
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let width = 200;
    let count = 3 * read::SPLIT_BYTES as usize / width;

    // Junk first: the half where the header is holds the second thread's lines only.
    let mut text = String::new();
    for i in 0..(read::SPLIT_BYTES as usize / 4) {
        text.push_str(if i % 3 == 0 { "nope\n" } else { "   \n" });
    }
    text.push_str(header);
    text.push('\n');
    for line in even_lines(count / 8, width) {
        text.push_str(&line);
        text.push('\n');
    }
    assert!(text.len() as u64 > read::SPLIT_BYTES && text.find(header).unwrap() > text.len() / 2);
    assert_opens_as_its_lines(&text);

    // The header first, and another header line where the second half starts.
    let mut lines = even_lines(count, width);
    let total = header.len() + 1 + count * width;
    let second_half = (total / 2 - header.len() - 1).div_ceil(width);
    let repeat = r#"{"type":"session","version":3,"id":"again","pad":""}"#;
    lines[second_half] = repeat.replace(
        r#""pad":"""#,
        &format!(r#""pad":"{}""#, "q".repeat(width - 1 - repeat.len())),
    );
    lines[second_half + 1] = format!("{:<1$}", "[not, an, entry", width - 1);
    let text = format!("{header}\n{}\n", lines.join("\n"));
    assert_eq!(text.len(), total);
    assert_opens_as_its_lines(&text);
}

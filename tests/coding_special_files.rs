//! The coding pack and files that are not plain files (issue 25): a named pipe, a socket or a
//! device never blocks a tool and is refused with a sentence naming its kind; a hard link into
//! the root is read by default and refused with `refuseHardLinks`.
#![cfg(feature = "coding")]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent::agent_loop::{run_tool_call, RunToolCallOptions};
use agent::coding::{coding_tools, CodingOptions};
use agent::host::{AbortSignal, AgentTool};
use agent::json::{json, Json};

/// A pack root `inside/` with `src/a.txt`, and `secret.txt` beside it (outside the root).
struct Tree {
    _dir: tempfile::TempDir,
    outer: PathBuf,
    root: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().canonicalize().unwrap();
    let root = outer.join("inside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.txt"), "alpha needle\n").unwrap();
    std::fs::write(outer.join("secret.txt"), "secret needle\n").unwrap();
    Tree {
        _dir: dir,
        outer,
        root,
    }
}

fn tools(root: &Path, options: CodingOptions) -> Vec<AgentTool> {
    coding_tools(root.to_str().unwrap(), options).unwrap()
}

fn mkfifo(path: &Path) {
    let name = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Opens and closes the pipe for writing without blocking: a reader stuck in `open` or `read`
/// on it returns (end of file). Used when a tool did not answer, so the test cannot hang.
fn release_readers(fifo: &Path) {
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

struct Outcome {
    text: String,
    is_error: bool,
}

/// Runs one tool call that must answer within 5 s; otherwise the call is aborted, the pipe's
/// readers are released and the test fails.
async fn call_bounded(tools: &[AgentTool], name: &str, args: Json, fifo: Option<&Path>) -> Outcome {
    let signal = AbortSignal::new();
    let tool_call = json!({"type": "toolCall", "id": "c1", "name": name, "arguments": args});
    let run = run_tool_call(
        tool_call,
        RunToolCallOptions {
            tools: tools.to_vec(),
            signal: signal.clone(),
            ..Default::default()
        },
    );
    match tokio::time::timeout(Duration::from_secs(5), run).await {
        Ok(outcome) => Outcome {
            text: outcome.result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            is_error: outcome.is_error,
        },
        Err(_) => {
            signal.abort();
            if let Some(fifo) = fifo {
                release_readers(fifo);
            }
            panic!("{name} {args} had no result after 5 s");
        }
    }
}

fn assert_refused_as(outcome: &Outcome, what: &str, expected: &str) {
    assert!(outcome.is_error, "{what}: not refused: {}", outcome.text);
    assert!(
        outcome.text.contains(expected),
        "{what}: expected \"{expected}\" in: {}",
        outcome.text
    );
}

/// Every file tool on `path` (a special file named `kind`) answers at once with a refusal.
async fn assert_every_file_tool_refuses(
    tools: &[AgentTool],
    path: &str,
    kind: &str,
    fifo: Option<&Path>,
) {
    let expected = format!("{path} is {kind}, not a regular file");
    let calls = [
        ("read", json!({"path": path})),
        ("write", json!({"path": path, "content": "x"})),
        (
            "edit",
            json!({"path": path, "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("grep", json!({"pattern": "needle", "path": path})),
    ];
    for (name, args) in calls {
        let outcome = call_bounded(tools, name, args, fifo).await;
        assert_refused_as(&outcome, &format!("{name} {path}"), &expected);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_named_pipe_never_blocks_a_file_tool_and_is_refused() {
    let t = tree();
    let fifo = t.root.join("fifo");
    mkfifo(&fifo);
    std::os::unix::fs::symlink("fifo", t.root.join("to-fifo")).unwrap();
    let tools = tools(&t.root, CodingOptions::default());
    assert_every_file_tool_refuses(&tools, "fifo", "a named pipe", Some(&fifo)).await;
    // Through a link inside the root, the pipe is still what is opened, and still refused.
    assert_every_file_tool_refuses(&tools, "to-fifo", "a named pipe", Some(&fifo)).await;
    // write refused it: the pipe is still a pipe, not replaced by a regular file.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "write replaced the pipe");
    // A search of the tree skips the pipe and finds the files.
    let grep = call_bounded(&tools, "grep", json!({"pattern": "needle"}), Some(&fifo)).await;
    assert!(!grep.is_error, "{}", grep.text);
    assert_eq!(grep.text, "src/a.txt:1: alpha needle");
    // Regular files read as before (the descriptor is blocking again after the open).
    let read = call_bounded(&tools, "read", json!({"path": "src/a.txt"}), None).await;
    assert_eq!(read.text, "alpha needle\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_and_a_device_are_refused_with_their_kind() {
    let t = tree();
    let _listener = std::os::unix::net::UnixListener::bind(t.root.join("sock")).unwrap();
    let tools = tools(&t.root, CodingOptions::default());
    assert_every_file_tool_refuses(&tools, "sock", "a socket", None).await;
    assert!(std::fs::symlink_metadata(t.root.join("sock"))
        .unwrap()
        .file_type()
        .is_socket());
    // A character device (like /dev/zero, 1:5: read would never end) needs CAP_MKNOD.
    let zero = CString::new(t.root.join("zero").as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let made = unsafe { libc::mknod(zero.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
    if made == 0 {
        assert_every_file_tool_refuses(&tools, "zero", "a character device", None).await;
    } else {
        eprintln!("mknod is not permitted here: the character device case was not run");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hard_link_from_outside_is_read_unless_hard_links_are_refused() {
    let t = tree();
    std::fs::hard_link(t.outer.join("secret.txt"), t.root.join("linked.txt")).unwrap();
    // By default a hard link is a file inside the root like any other (documented).
    let open = tools(&t.root, CodingOptions::default());
    let read = call_bounded(&open, "read", json!({"path": "linked.txt"}), None).await;
    assert_eq!(read.text, "secret needle\n");

    let options = CodingOptions::from_json(&json!({"refuseHardLinks": true})).unwrap();
    assert!(options.refuse_hard_links);
    let strict = tools(&t.root, options);
    let expected = "linked.txt has 2 hard links";
    let read = call_bounded(&strict, "read", json!({"path": "linked.txt"}), None).await;
    assert_refused_as(&read, "read", expected);
    assert!(!read.text.contains("secret needle"));
    let edit = json!({"path": "linked.txt", "edits": [{"oldText": "secret", "newText": "x"}]});
    let edit = call_bounded(&strict, "edit", edit, None).await;
    assert_refused_as(&edit, "edit", expected);
    let grep = json!({"pattern": "needle", "path": "linked.txt"});
    let grep = call_bounded(&strict, "grep", grep, None).await;
    assert_refused_as(&grep, "grep", expected);
    // A search of the tree skips it.
    let grep = call_bounded(&strict, "grep", json!({"pattern": "needle"}), None).await;
    assert_eq!(grep.text, "src/a.txt:1: alpha needle");
    assert_eq!(
        std::fs::read_to_string(t.outer.join("secret.txt")).unwrap(),
        "secret needle\n"
    );
    // write replaces the link by a new file; the outside file keeps its content.
    let write = json!({"path": "linked.txt", "content": "new\n"});
    let write = call_bounded(&strict, "write", write, None).await;
    assert!(!write.is_error, "{}", write.text);
    assert_eq!(
        std::fs::read_to_string(t.outer.join("secret.txt")).unwrap(),
        "secret needle\n"
    );
    // Now a file with one link: readable again.
    let read = call_bounded(&strict, "read", json!({"path": "linked.txt"}), None).await;
    assert_eq!(read.text, "new\n");
}

#[test]
fn the_hard_link_option_is_checked() {
    assert!(!CodingOptions::default().refuse_hard_links);
    let error = CodingOptions::from_json(&json!({"refuseHardLinks": 1}))
        .err()
        .unwrap();
    assert_eq!(
        error,
        "The coding option \"refuseHardLinks\" must be true or false."
    );
}

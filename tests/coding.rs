//! The coding pack beyond the reference (kit README §5): confinement to the root, host consent,
//! bash opt-in with timeout and process-group kill, bounded output, atomic writes, big files;
//! files that are not plain files (issue 25): a named pipe, a socket or a device never blocks a
//! tool and is refused with a sentence naming its kind; a hard link into the root is read by
//! default and refused with `refuseHardLinks`.
#![cfg(feature = "coding")]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::agent_loop::{run_tool_call, RunToolCallOptions};
use agent::coding::{coding_tools, CodingOptions, ConsentFn, ConsentRequest};
use agent::host::{AbortSignal, AgentTool, HostFuture};
use agent::json::{json, Json};

/// A root with `inside/` (the pack's root) and `secret.txt` beside it.
struct Tree {
    _dir: tempfile::TempDir,
    outer: std::path::PathBuf,
    root: std::path::PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().canonicalize().unwrap();
    let root = outer.join("inside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.txt"), "alpha needle\n").unwrap();
    std::fs::write(outer.join("secret.txt"), "secret needle\n").unwrap();
    std::fs::create_dir_all(outer.join("secrets")).unwrap();
    std::fs::write(outer.join("secrets/s.txt"), "secret needle\n").unwrap();
    Tree {
        _dir: dir,
        outer,
        root,
    }
}

fn pack(root: &Path, options: CodingOptions) -> Vec<AgentTool> {
    coding_tools(root.to_str().unwrap(), options).unwrap()
}

fn all_tools(root: &Path) -> Vec<AgentTool> {
    pack(
        root,
        CodingOptions {
            bash: true,
            ..Default::default()
        },
    )
}

struct Outcome {
    text: String,
    is_error: bool,
    result: Json,
}

async fn call_with(tools: &[AgentTool], name: &str, args: Json, signal: AbortSignal) -> Outcome {
    let tool_call = json!({"type": "toolCall", "id": "c1", "name": name, "arguments": args});
    let outcome = run_tool_call(
        tool_call,
        RunToolCallOptions {
            tools: tools.to_vec(),
            signal,
            ..Default::default()
        },
    )
    .await;
    Outcome {
        text: outcome.result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        is_error: outcome.is_error,
        result: outcome.result,
    }
}

async fn call(tools: &[AgentTool], name: &str, args: Json) -> Outcome {
    call_with(tools, name, args, AbortSignal::new()).await
}

/// `read`, `write` and `edit` of `path` are all refused as leaving the root.
async fn assert_file_tools_refuse(tools: &[AgentTool], path: &str) {
    assert_refused(&call(tools, "read", json!({"path": path})).await, path);
    let write = json!({"path": path, "content": "x"});
    assert_refused(&call(tools, "write", write).await, path);
    let edit = json!({"path": path, "edits": [{"oldText": "secret", "newText": "x"}]});
    assert_refused(&call(tools, "edit", edit).await, path);
}

fn assert_refused(outcome: &Outcome, what: &str) {
    assert!(outcome.is_error, "{what}: not refused: {}", outcome.text);
    assert!(
        outcome.text.contains("outside the root directory"),
        "{what}: unclear error: {}",
        outcome.text
    );
    assert!(!outcome.text.contains("secret needle"), "{what}: leaked");
}

#[tokio::test(flavor = "multi_thread")]
async fn dot_dot_and_absolute_paths_outside_the_root_are_refused_by_every_tool() {
    let t = tree();
    let tools = all_tools(&t.root);
    let secret = t.outer.join("secret.txt");
    let secret = secret.to_str().unwrap();
    for path in ["../secret.txt", secret, "src/../../secret.txt", "~/x"] {
        assert_file_tools_refuse(&tools, path).await;
    }
    for path in ["..", t.outer.to_str().unwrap()] {
        assert_refused(&call(&tools, "ls", json!({"path": path})).await, path);
        assert_refused(
            &call(&tools, "find", json!({"pattern": "*", "path": path})).await,
            path,
        );
        assert_refused(
            &call(&tools, "grep", json!({"pattern": "needle", "path": path})).await,
            path,
        );
    }
    assert_eq!(
        std::fs::read_to_string(t.outer.join("secret.txt")).unwrap(),
        "secret needle\n"
    );
    assert!(!t.outer.join("x").exists());
    // An absolute path inside the root is fine.
    let inside = t.root.join("src/a.txt");
    let read = call(&tools, "read", json!({"path": inside.to_str().unwrap()})).await;
    assert_eq!(read.text, "alpha needle\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn symbolic_links_out_of_the_root_are_refused_and_never_followed_by_listings() {
    let t = tree();
    symlink(t.outer.join("secret.txt"), t.root.join("file-link")).unwrap();
    symlink(t.outer.join("secrets"), t.root.join("dir-link")).unwrap();
    symlink("../../secret.txt", t.root.join("src/relative-link")).unwrap();
    let tools = all_tools(&t.root);
    for path in ["file-link", "dir-link/s.txt", "src/relative-link"] {
        assert_file_tools_refuse(&tools, path).await;
    }
    assert_refused(
        &call(&tools, "ls", json!({"path": "dir-link"})).await,
        "ls dir-link",
    );
    assert_refused(
        &call(
            &tools,
            "grep",
            json!({"pattern": "needle", "path": "dir-link"}),
        )
        .await,
        "grep dir-link",
    );
    assert_refused(
        &call(
            &tools,
            "grep",
            json!({"pattern": "needle", "path": "file-link"}),
        )
        .await,
        "grep file-link",
    );
    // Listings name the links but never look through them.
    let grep = call(&tools, "grep", json!({"pattern": "needle"})).await;
    assert_eq!(grep.text, "src/a.txt:1: alpha needle");
    let find = call(&tools, "find", json!({"pattern": "*.txt"})).await;
    assert_eq!(find.text, "src/a.txt");
    let ls = call(&tools, "ls", json!({})).await;
    assert_eq!(ls.text, "dir-link\nfile-link\nsrc/");
    assert_eq!(
        std::fs::read_to_string(t.outer.join("secret.txt")).unwrap(),
        "secret needle\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.outer.join("secrets/s.txt")).unwrap(),
        "secret needle\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_that_appears_mid_run_is_refused() {
    let t = tree();
    let tools = all_tools(&t.root);
    assert_eq!(
        call(&tools, "read", json!({"path": "src/a.txt"}))
            .await
            .text,
        "alpha needle\n"
    );
    // The directory is swapped for a link out between two calls.
    std::fs::rename(t.root.join("src"), t.root.join("old-src")).unwrap();
    symlink(t.outer.join("secrets"), t.root.join("src")).unwrap();
    std::fs::write(t.outer.join("secrets/a.txt"), "secret needle\n").unwrap();
    assert_refused(
        &call(&tools, "read", json!({"path": "src/a.txt"})).await,
        "read",
    );
    assert_refused(
        &call(
            &tools,
            "write",
            json!({"path": "src/a.txt", "content": "x"}),
        )
        .await,
        "write",
    );
    assert_refused(
        &call(&tools, "grep", json!({"pattern": "needle", "path": "src"})).await,
        "grep",
    );
    assert_eq!(
        std::fs::read_to_string(t.outer.join("secrets/a.txt")).unwrap(),
        "secret needle\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn links_inside_the_root_work() {
    let t = tree();
    symlink("src/a.txt", t.root.join("ok-link")).unwrap();
    let tools = all_tools(&t.root);
    assert_eq!(
        call(&tools, "read", json!({"path": "ok-link"})).await.text,
        "alpha needle\n"
    );
    let edit = call(
        &tools,
        "edit",
        json!({"path": "ok-link", "edits": [{"oldText": "alpha", "newText": "beta"}]}),
    )
    .await;
    assert!(!edit.is_error, "{}", edit.text);
    assert_eq!(
        std::fs::read_to_string(t.root.join("src/a.txt")).unwrap(),
        "beta needle\n"
    );
    assert!(std::fs::symlink_metadata(t.root.join("ok-link"))
        .unwrap()
        .file_type()
        .is_symlink());
}

fn consent(seen: Arc<Mutex<Vec<ConsentRequest>>>, allow: bool) -> ConsentFn {
    Arc::new(move |request: ConsentRequest| {
        seen.lock().unwrap().push(request);
        Box::pin(async move {
            if allow {
                Ok(())
            } else {
                Err("Not now.".to_string())
            }
        }) as HostFuture<_>
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_consent_hook_sees_every_mutating_call_and_a_refusal_changes_nothing() {
    let t = tree();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let refusing = pack(
        &t.root,
        CodingOptions {
            bash: true,
            consent: Some(consent(seen.clone(), false)),
            ..Default::default()
        },
    );
    let write = call(
        &refusing,
        "write",
        json!({"path": "src/a.txt", "content": "gone"}),
    )
    .await;
    assert!(write.is_error);
    assert_eq!(write.text, "Not now.");
    let edit = call(
        &refusing,
        "edit",
        json!({"path": "src/a.txt", "edits": [{"oldText": "alpha", "newText": "x"}]}),
    )
    .await;
    assert_eq!(edit.text, "Not now.");
    let bash = call(&refusing, "bash", json!({"command": "touch made"})).await;
    assert_eq!(bash.text, "Not now.");
    assert!(!t.root.join("made").exists());
    assert_eq!(
        std::fs::read_to_string(t.root.join("src/a.txt")).unwrap(),
        "alpha needle\n"
    );
    // Reading tools never ask.
    call(&refusing, "read", json!({"path": "src/a.txt"})).await;
    call(&refusing, "grep", json!({"pattern": "x"})).await;
    let requests = seen.lock().unwrap().clone();
    let tools: Vec<&str> = requests.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["write", "edit", "bash"]);
    assert_eq!(
        requests[0].args,
        json!({"path": "src/a.txt", "content": "gone"})
    );
    assert_eq!(requests[0].tool_call_id, "c1");

    let allowing = pack(
        &t.root,
        CodingOptions {
            consent: Some(consent(seen.clone(), true)),
            ..Default::default()
        },
    );
    let write = call(
        &allowing,
        "write",
        json!({"path": "src/a.txt", "content": "kept"}),
    )
    .await;
    assert!(!write.is_error, "{}", write.text);
    assert_eq!(
        std::fs::read_to_string(t.root.join("src/a.txt")).unwrap(),
        "kept"
    );
}

#[test]
fn bash_is_off_unless_enabled_and_options_are_checked() {
    let t = tree();
    let root = t.root.to_str().unwrap();
    let names = |tools: Vec<AgentTool>| {
        tools
            .iter()
            .map(|t| t.name().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(coding_tools(root, CodingOptions::default()).unwrap()),
        ["read", "write", "edit", "ls", "find", "grep"]
    );
    let bash_only = CodingOptions {
        tools: Some(vec!["bash".into()]),
        ..Default::default()
    };
    let error = coding_tools(root, bash_only).unwrap_err();
    assert!(error.contains("bash tool is disabled"), "{error}");
    let unknown = CodingOptions {
        tools: Some(vec!["rm".into()]),
        ..Default::default()
    };
    assert!(coding_tools(root, unknown)
        .unwrap_err()
        .contains("Unknown coding tool \"rm\""));
    let missing = coding_tools("/nonexistent/root/dir", CodingOptions::default()).unwrap_err();
    assert!(missing.contains("Cannot open the coding root"), "{missing}");
    let parsed =
        CodingOptions::from_json(&json!({"tools": ["read"], "bash": true, "bashTimeoutMs": null}))
            .unwrap();
    assert_eq!(parsed.tools, Some(vec!["read".to_string()]));
    assert!(parsed.bash && parsed.bash_timeout_ms.is_none());
    assert_eq!(CodingOptions::default().bash_timeout_ms, Some(120_000));
    let bad = CodingOptions::from_json(&json!({"bash": "yes"}))
        .err()
        .unwrap();
    assert!(bad.contains("\"bash\""), "{bad}");
    assert!(CodingOptions::from_json(&json!({"root": "/"}))
        .err()
        .unwrap()
        .contains("Unknown coding option \"root\""));
}

/// True while `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

async fn wait_dead(pid: i32) {
    // A watchdog only: a killed process disappears at once, this just catches a hang.
    for _ in 0..500 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("process {pid} survived");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_timeout_kills_the_whole_process_group() {
    let t = tree();
    let tools = pack(
        &t.root,
        CodingOptions {
            bash: true,
            // Long enough for bash to start and print on a loaded machine; the command itself
            // would run for 1000 s, so only the timeout can end it.
            bash_timeout_ms: Some(2500),
            ..Default::default()
        },
    );
    let started = std::time::Instant::now();
    let outcome = call(
        &tools,
        "bash",
        json!({"command": "sleep 1000 & echo $! > bg.pid; echo started; wait"}),
    )
    .await;
    let took = started.elapsed();
    assert!(outcome.is_error);
    assert_eq!(
        outcome.text,
        "started\n\n\nCommand timed out after 2.5 seconds"
    );
    // Not before the timeout, and not much after it (a generous bound for a loaded machine).
    assert!(took >= std::time::Duration::from_millis(2500), "{took:?}");
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    let pid: i32 = std::fs::read_to_string(t.root.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_dead(pid).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abort_kills_the_command_and_its_children() {
    let t = tree();
    let tools = all_tools(&t.root);
    let signal = AbortSignal::new();
    let aborter = signal.clone();
    let pid_file = t.root.join("bg.pid");
    let watcher = pid_file.clone();
    tokio::spawn(async move {
        // Abort once the command has started its child (a watchdog bounds the wait).
        for _ in 0..1000 {
            if std::fs::read_to_string(&watcher).is_ok_and(|s| s.ends_with('\n')) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        aborter.abort();
    });
    let outcome = call_with(
        &tools,
        "bash",
        json!({"command": "sleep 1000 & echo $! > bg.pid; wait"}),
        signal,
    )
    .await;
    assert!(outcome.is_error);
    assert!(
        outcome.text.ends_with("Operation aborted") || outcome.text.ends_with("Command aborted"),
        "{}",
        outcome.text
    );
    let pid: i32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_dead(pid).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_command_output_stays_bounded_and_goes_to_a_file() {
    let t = tree();
    let tools = all_tools(&t.root);
    let outcome = call(
        &tools,
        "bash",
        json!({"command": "yes abcdefghij | head -c 20000000"}),
    )
    .await;
    assert!(
        !outcome.is_error,
        "{}",
        &outcome.text[..200.min(outcome.text.len())]
    );
    assert!(outcome.text.len() < 52 * 1024, "{}", outcome.text.len());
    let structured = &outcome.result["structuredContent"];
    assert_eq!(structured["truncated"], true);
    assert!(structured["output"].as_str().unwrap().len() < 1024 * 1024 + 100);
    let path = outcome.result["details"]["fullOutputPath"]
        .as_str()
        .unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 20_000_000);
    assert_eq!(
        outcome.result["details"]["truncation"]["totalBytes"],
        20_000_000
    );
    std::fs::remove_file(path).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_are_atomic_and_leave_no_temporary_files() {
    let t = tree();
    let tools = all_tools(&t.root);
    use std::os::unix::fs::PermissionsExt;
    let target = t.root.join("src/a.txt");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let big = "x".repeat(5 << 20);
    let write = call(
        &tools,
        "write",
        json!({"path": "src/a.txt", "content": big}),
    )
    .await;
    assert!(!write.is_error, "{}", write.text);
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 5 << 20);
    assert_eq!(
        std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let names: Vec<_> = std::fs::read_dir(t.root.join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a.txt"]);
    // An aborted call changes nothing.
    let signal = AbortSignal::new();
    signal.abort();
    let aborted = call_with(
        &tools,
        "write",
        json!({"path": "src/a.txt", "content": "half"}),
        signal,
    )
    .await;
    assert!(aborted.is_error);
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 5 << 20);
    let edit_signal = AbortSignal::new();
    edit_signal.abort();
    let edit = call_with(
        &tools,
        "edit",
        json!({"path": "src/a.txt", "edits": [{"oldText": "xx", "newText": "y"}]}),
        edit_signal,
    )
    .await;
    assert!(edit.is_error);
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 5 << 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_single_line_file_and_binary_files_are_read_in_bounded_memory() {
    let t = tree();
    let tools = all_tools(&t.root);
    // 64 MB of zero bytes (sparse): one line far over the limit.
    let file = std::fs::File::create(t.root.join("huge.bin")).unwrap();
    file.set_len(64 << 20).unwrap();
    let read = call(&tools, "read", json!({"path": "huge.bin"})).await;
    assert!(!read.is_error, "{}", read.text);
    assert_eq!(
        read.text,
        "[Line 1 is 64.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' huge.bin | head -c 51200]"
    );
    assert_eq!(read.result["details"]["truncation"]["content"], "");
    let grep = call(&tools, "grep", json!({"pattern": "needle"})).await;
    assert_eq!(grep.text, "src/a.txt:1: alpha needle");
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_refuses_files_over_its_limit_without_loading_them() {
    let t = tree();
    let options = CodingOptions::from_json(&json!({"maxEditBytes": 8})).unwrap();
    let tools = pack(&t.root, options);
    let edit = call(
        &tools,
        "edit",
        json!({"path": "src/a.txt", "edits": [{"oldText": "alpha", "newText": "x"}]}),
    )
    .await;
    assert!(edit.is_error);
    assert_eq!(
        edit.text,
        "Could not edit file: src/a.txt. It has 13 bytes; the edit limit is 8 bytes."
    );
    assert_eq!(
        std::fs::read_to_string(t.root.join("src/a.txt")).unwrap(),
        "alpha needle\n"
    );
    assert!(CodingOptions::from_json(&json!({"maxEditBytes": 0})).is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_edits_of_one_file_are_applied_one_after_the_other() {
    let t = tree();
    let lines: String = (0..40).map(|i| format!("line {i}\n")).collect();
    std::fs::write(t.root.join("many.txt"), &lines).unwrap();
    let tools = all_tools(&t.root);
    let edits = (0..40).map(|i| {
        let tools = tools.clone();
        async move {
            let args = json!({"path": "many.txt", "edits": [{"oldText": format!("line {i}\n"), "newText": format!("LINE {i}\n")}]});
            call(&tools, "edit", args).await
        }
    });
    for outcome in futures::future::join_all(edits).await {
        assert!(!outcome.is_error, "{}", outcome.text);
    }
    let expected: String = (0..40).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(t.root.join("many.txt")).unwrap(),
        expected
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_reports_its_output_as_progress() {
    let t = tree();
    let tools = all_tools(&t.root);
    let updates = Arc::new(Mutex::new(Vec::new()));
    let seen = updates.clone();
    let on_update: agent::host::UpdateFn =
        Arc::new(move |partial| seen.lock().unwrap().push(partial));
    let tool_call = json!({"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "echo one; echo two >&2"}});
    let outcome = run_tool_call(
        tool_call,
        RunToolCallOptions {
            tools,
            on_update: Some(on_update),
            ..Default::default()
        },
    )
    .await;
    assert!(!outcome.is_error);
    let updates = updates.lock().unwrap().clone();
    assert_eq!(updates.first(), Some(&json!({"content": []})));
    assert_eq!(
        updates.last(),
        Some(&json!({"content": [{"type": "text", "text": "one\ntwo\n"}]}))
    );
}

// ---- special files and hard links

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

/// Runs one tool call that must answer within 5 s; otherwise the call is aborted, the pipe's
/// readers are released and the test fails.
async fn call_bounded(tools: &[AgentTool], name: &str, args: Json, fifo: Option<&Path>) -> Outcome {
    let signal = AbortSignal::new();
    let run = call_with(tools, name, args.clone(), signal.clone());
    match tokio::time::timeout(Duration::from_secs(5), run).await {
        Ok(outcome) => outcome,
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
    let tools = pack(&t.root, CodingOptions::default());
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
    let tools = pack(&t.root, CodingOptions::default());
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
    let open = pack(&t.root, CodingOptions::default());
    let read = call_bounded(&open, "read", json!({"path": "linked.txt"}), None).await;
    assert_eq!(read.text, "secret needle\n");

    let options = CodingOptions::from_json(&json!({"refuseHardLinks": true})).unwrap();
    assert!(options.refuse_hard_links);
    let strict = pack(&t.root, options);
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

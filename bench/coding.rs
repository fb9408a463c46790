//! `make bench` (coding part): the coding pack's `grep` and `find` over a generated tree of
//! 100 000 files, side by side with ripgrep (`rg`) and fd (`fd` / `fdfind`) when installed.
//!
//!   cargo run --release --example coding-bench [FILES]        (default 100000)
//!
//! Prints one line per measurement (best of 3 wall-clock runs) and the process's peak RSS.
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agent::agent_loop::{run_tool_call, RunToolCallOptions};
use agent::coding::{coding_tools, CodingOptions};
use agent::json::json;

/// 1 000 files per directory; every 997th file holds the needle.
fn generate(root: &Path, files: usize) -> usize {
    let mut needles = 0;
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let needle = i % 997 == 0;
        needles += usize::from(needle);
        let ext = if i % 10 == 7 { "rs" } else { "txt" };
        let body = format!(
            "// file {i}\nfn item_{i}() -> u32 {{\n    {}\n}}\n",
            if needle { "needle_value + 1" } else { "42" }
        );
        std::fs::write(dir.join(format!("f{i:06}.{ext}")), body).unwrap();
    }
    needles
}

fn best_of_3(mut run: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut count = 0;
    for _ in 0..3 {
        let started = Instant::now();
        count = run();
        best = best.min(started.elapsed().as_secs_f64() * 1000.0);
    }
    (best, count)
}

fn external(program: &str, args: &[&str], root: &Path) -> Option<(f64, usize)> {
    Command::new(program).arg("--version").output().ok()?;
    Some(best_of_3(|| {
        let out = Command::new(program)
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        out.stdout.iter().filter(|b| **b == b'\n').count()
    }))
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn main() {
    let files: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("libagent-coding-bench-{}", std::process::id()));
    let needles = generate(&dir, files);
    println!(
        "coding bench: {files} files in {} directories, {needles} with the needle",
        files.div_ceil(1000)
    );
    let tools = coding_tools(dir.to_str().unwrap(), CodingOptions::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = |name: &str, args: serde_json::Value| {
        let tool_call = json!({"type": "toolCall", "id": "b", "name": name, "arguments": args});
        let outcome = runtime.block_on(run_tool_call(
            tool_call,
            RunToolCallOptions {
                tools: tools.clone(),
                ..Default::default()
            },
        ));
        let text = outcome.result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string();
        text.split("\n\n").next().unwrap_or("").lines().count()
    };
    let grep = best_of_3(|| call("grep", json!({"pattern": "needle_[a-z]+", "limit": 100000})));
    let find = best_of_3(|| call("find", json!({"pattern": "*7.rs", "limit": 100000})));
    println!("libagent grep: {:8.1} ms ({} lines)", grep.0, grep.1);
    println!(
        "libagent find: {:8.1} ms ({} lines, output cut at 50 KB)",
        find.0, find.1
    );
    let rg = external(
        "rg",
        &[
            "--no-config",
            "--hidden",
            "--line-number",
            "needle_[a-z]+",
            ".",
        ],
        &dir,
    );
    match rg {
        Some((ms, n)) => println!("rg:            {ms:8.1} ms ({n} lines)"),
        None => println!("rg:            not installed"),
    }
    let fd = ["fd", "fdfind"]
        .iter()
        .find_map(|fd| external(fd, &["--hidden", "--glob", "*7.rs", "."], &dir));
    match fd {
        Some((ms, n)) => println!("fd:            {ms:8.1} ms ({n} lines)"),
        None => println!("fd:            not installed"),
    }
    println!(
        "peak RSS of this process (generation + pack): {:.1} MB",
        peak_rss_mb()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

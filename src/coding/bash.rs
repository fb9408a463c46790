//! `bash`: runs a command with `bash -c` in the root, stdout and stderr merged, in a process
//! group of its own that is killed whole on abort, on timeout and when the shell exits. Output
//! memory is bounded: the last 100 KB are kept; once the output passes the 2000-line / 50 KB
//! cut, all of it goes to a temporary file whose path the result names.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::root::Root;
use super::truncate::{format_size, truncate_tail, MAX_BYTES, MAX_LINES};
use super::{number, string};
use crate::host::{AbortSignal, UpdateFn};
use crate::json::{json, Json};

/// The most output `structuredContent.output` carries (head and tail beyond it).
const STRUCTURED_MAX_BYTES: u64 = 1024 * 1024;
/// The tail kept in memory.
const TAIL_BYTES: usize = MAX_BYTES * 2;
const MAX_TIMEOUT_SECONDS: f64 = 2_147_483.647;
/// The least time between two progress updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);

/// The output seen so far.
struct Accumulator {
    /// Everything, while it is small; cleared once it moved to the file.
    head: Vec<u8>,
    /// The last `TAIL_BYTES` (at least) of the output.
    tail: Vec<u8>,
    total_bytes: usize,
    newlines: usize,
    current_line_bytes: usize,
    file: Option<(std::fs::File, std::path::PathBuf)>,
    /// The temporary file could not be made: `head` stopped growing, only the tail is whole.
    head_incomplete: bool,
}

impl Accumulator {
    fn new() -> Self {
        Accumulator {
            head: Vec::new(),
            tail: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            current_line_bytes: 0,
            file: None,
            head_incomplete: false,
        }
    }

    fn lines(&self) -> usize {
        self.newlines + usize::from(self.current_line_bytes > 0)
    }

    fn append(&mut self, data: &[u8]) {
        self.total_bytes += data.len();
        for &byte in data {
            if byte == b'\n' {
                self.newlines += 1;
                self.current_line_bytes = 0;
            } else {
                self.current_line_bytes += 1;
            }
        }
        self.tail.extend_from_slice(data);
        if self.tail.len() > TAIL_BYTES * 2 {
            let cut = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..cut);
        }
        if self.file.is_none() && (self.total_bytes > MAX_BYTES || self.lines() > MAX_LINES) {
            self.spill();
        }
        match &mut self.file {
            Some((file, _)) => {
                let _ = file.write_all(data);
            }
            None if self.head.len() + data.len() <= TAIL_BYTES => self.head.extend_from_slice(data),
            None => self.head_incomplete = true,
        }
    }

    /// Moves the output to a temporary file (the data just appended follows).
    fn spill(&mut self) {
        let path = std::env::temp_dir().join(format!(
            "libagent-bash-{}-{}.log",
            std::process::id(),
            fastrand_suffix()
        ));
        if let Ok(mut file) = std::fs::File::create(&path) {
            let _ = file.write_all(&self.head);
            self.head = Vec::new();
            self.file = Some((file, path));
        }
    }

    fn full_output_path(&self) -> Option<String> {
        self.file
            .as_ref()
            .map(|(_, path)| path.to_string_lossy().into_owned())
    }

    /// `structuredContent.output`: all of it up to 1 MB, else its head and tail.
    fn full_output(&mut self) -> (String, bool) {
        let Some((file, path)) = &mut self.file else {
            if self.head_incomplete {
                return (String::from_utf8_lossy(&self.tail).into_owned(), true);
            }
            return (String::from_utf8_lossy(&self.head).into_owned(), false);
        };
        let _ = file.flush();
        let size = self.total_bytes as u64;
        let Ok(bytes) = read_head_tail(path, size) else {
            return (String::from_utf8_lossy(&self.tail).into_owned(), true);
        };
        bytes
    }
}

fn read_head_tail(path: &std::path::Path, size: u64) -> std::io::Result<(String, bool)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    if size <= STRUCTURED_MAX_BYTES {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        return Ok((String::from_utf8_lossy(&bytes).into_owned(), false));
    }
    let head_len = (STRUCTURED_MAX_BYTES / 2) as usize;
    let tail_len = STRUCTURED_MAX_BYTES as usize - head_len;
    let mut head = vec![0u8; head_len];
    file.read_exact(&mut head)?;
    file.seek(SeekFrom::Start(size - tail_len as u64))?;
    let mut tail = vec![0u8; tail_len];
    file.read_exact(&mut tail)?;
    let start = tail
        .iter()
        .position(|b| b & 0xc0 != 0x80)
        .unwrap_or(tail.len());
    let omitted = size - head_len as u64 - tail_len as u64;
    Ok((
        format!(
            "{}\n\n[... {omitted} bytes omitted ...]\n\n{}",
            String::from_utf8_lossy(&head),
            String::from_utf8_lossy(&tail[start..])
        ),
        true,
    ))
}

fn fastrand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{nanos:x}{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// How a command ended.
enum Ending {
    Exited(i32),
    TimedOut(String),
    Aborted,
}

pub async fn run(
    root: &Root,
    args: &Json,
    signal: &AbortSignal,
    default_timeout_ms: Option<u64>,
    on_update: &UpdateFn,
) -> Result<Json, String> {
    let command = string(args, "command").unwrap_or_default();
    let timeout = match number(args, "timeout") {
        None => {
            default_timeout_ms.map(|ms| (Duration::from_millis(ms), js_seconds(ms as f64 / 1000.0)))
        }
        Some(seconds) => {
            if !seconds.is_finite() || seconds <= 0.0 {
                return Err("Invalid timeout: must be a finite number of seconds".into());
            }
            if seconds > MAX_TIMEOUT_SECONDS {
                return Err(format!(
                    "Invalid timeout: maximum is {MAX_TIMEOUT_SECONDS} seconds"
                ));
            }
            Some((Duration::from_secs_f64(seconds), js_seconds(seconds)))
        }
    };
    let started = Instant::now();
    // stdout and stderr share one pipe: the output is merged in the order the command wrote it.
    let (reader, writer) = std::io::pipe().map_err(|error| format!("Cannot run bash: {error}"))?;
    let writer_too = writer
        .try_clone()
        .map_err(|error| format!("Cannot run bash: {error}"))?;
    let mut shell = Command::new("bash");
    shell
        .arg("-c")
        .arg(command)
        .current_dir(root.path())
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_too))
        .process_group(0)
        .kill_on_drop(true);
    let spawned = shell.spawn();
    // The command keeps the write ends: dropping ours lets the read end see the end of output.
    drop(shell);
    let mut child = spawned.map_err(|error| format!("Cannot run bash: {error}"))?;
    let group = child.id().map(|pid| pid as i32);
    let kill_group = move || {
        if let Some(pgid) = group {
            // SAFETY: kill(2) on the command's own process group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    };
    let mut pipe = Some(
        tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))
            .map_err(|error| format!("Cannot run bash: {error}"))?,
    );
    let mut output = Accumulator::new();
    let mut buffer = vec![0u8; 16 * 1024];
    let limit = timeout.as_ref().map(|t| t.0);
    let deadline = async move {
        match limit {
            Some(duration) => tokio::time::sleep(duration).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let mut status = None;
    // Progress as the reference gives it: an empty result first, then the output so far, at most
    // every 100 ms.
    on_update(json!({"content": []}));
    let mut last_update = Instant::now();
    let mut dirty = false;
    let ending = loop {
        if status.is_some() && pipe.is_none() {
            break Ending::Exited(exit_code(status.take().unwrap_or_default()));
        }
        if dirty && last_update.elapsed() >= UPDATE_INTERVAL {
            on_update(progress(&mut output));
            last_update = Instant::now();
            dirty = false;
        }
        tokio::select! {
            read = read_some(&mut pipe, &mut buffer) => match read {
                Some(n) => {
                    output.append(&buffer[..n]);
                    dirty = true;
                }
                None => pipe = None,
            },
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.ok());
                // Background processes the shell left would hold the pipe open: end them.
                kill_group();
            },
            _ = &mut deadline => {
                kill_group();
                break Ending::TimedOut(timeout.as_ref().map(|t| t.1.clone()).unwrap_or_default());
            },
            _ = signal.aborted() => {
                kill_group();
                break Ending::Aborted;
            },
        }
    };
    if !matches!(ending, Ending::Exited(_)) {
        let _ = child.wait().await;
    }
    if dirty {
        on_update(progress(&mut output));
    }
    let (text, details) = format_output(&mut output);
    let with_status = |text: &str, status: &str| {
        if text.is_empty() {
            status.to_string()
        } else {
            format!("{text}\n\n{status}")
        }
    };
    let exit_code = match ending {
        Ending::Aborted => {
            return Err(with_status(&text.unwrap_or_default(), "Command aborted"));
        }
        Ending::TimedOut(seconds) => {
            return Err(with_status(
                &text.unwrap_or_default(),
                &format!("Command timed out after {seconds} seconds"),
            ));
        }
        Ending::Exited(code) => code,
    };
    let text = text.unwrap_or_else(|| "(no output)".to_string());
    let wall = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let (full, truncated) = output.full_output();
    let mut structured = serde_json::Map::new();
    structured.insert("output".into(), json!(full));
    structured.insert("truncated".into(), json!(truncated));
    if truncated {
        if let Some(path) = output.full_output_path() {
            structured.insert("full_output_path".into(), json!(path));
        }
    }
    structured.insert("exit_code".into(), json!(exit_code));
    structured.insert("wall_time_seconds".into(), json!(wall));
    let mut result = serde_json::Map::new();
    let shown = if exit_code != 0 {
        with_status(&text, &format!("Command exited with code {exit_code}"))
    } else {
        text
    };
    result.insert("content".into(), json!([{"type": "text", "text": shown}]));
    if let Some(details) = details {
        result.insert("details".into(), details);
    }
    result.insert("structuredContent".into(), Json::Object(structured));
    if exit_code != 0 {
        result.insert("isError".into(), json!(true));
    }
    Ok(Json::Object(result))
}

/// Reads from a pipe that is still open; pending forever once it closed.
async fn read_some(
    pipe: &mut Option<impl tokio::io::AsyncRead + Unpin>,
    buffer: &mut [u8],
) -> Option<usize> {
    match pipe {
        Some(pipe) => match pipe.read(buffer).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

fn exit_code(status: Option<std::process::ExitStatus>) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(status) => status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        None => 1,
    }
}

/// A progress update: the output so far (its tail), with the truncation record once cut.
fn progress(output: &mut Accumulator) -> Json {
    let (text, details) = format_output(output);
    let text = text.unwrap_or_default();
    // The update shows the output itself, without the notice.
    let shown = match &details {
        Some(details) => details["truncation"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        None => text,
    };
    let mut update = json!({"content": [{"type": "text", "text": shown}]});
    if let Some(details) = details {
        update["details"] = details;
    }
    update
}

/// The output text (None when there was none) and, when it was cut, the truncation details.
fn format_output(output: &mut Accumulator) -> (Option<String>, Option<Json>) {
    let tail = String::from_utf8_lossy(&output.tail).into_owned();
    let mut truncation = truncate_tail(&tail, MAX_LINES, MAX_BYTES);
    let truncated = output.lines() > MAX_LINES || output.total_bytes > MAX_BYTES;
    truncation.truncated = truncated;
    if !truncated {
        truncation.truncated_by = None;
    } else if truncation.truncated_by.is_none() {
        truncation.truncated_by = Some(if output.total_bytes > MAX_BYTES {
            "bytes"
        } else {
            "lines"
        });
    }
    truncation.total_lines = output.lines();
    truncation.total_bytes = output.total_bytes;
    let mut text = truncation.content.clone();
    let mut details = None;
    if truncated {
        let path = output.full_output_path().unwrap_or_default();
        let start = truncation.total_lines - truncation.output_lines + 1;
        let end = truncation.total_lines;
        let notice = if truncation.last_line_partial {
            format!(
                "[Showing last {} of line {end} (line is {}). Full output: {path}]",
                format_size(truncation.output_bytes),
                format_size(output.current_line_bytes)
            )
        } else if truncation.truncated_by == Some("lines") {
            format!(
                "[Showing lines {start}-{end} of {}. Full output: {path}]",
                truncation.total_lines
            )
        } else {
            format!(
                "[Showing lines {start}-{end} of {} ({} limit). Full output: {path}]",
                truncation.total_lines,
                format_size(MAX_BYTES)
            )
        };
        text.push_str(&format!("\n\n{notice}"));
        details = Some(json!({"truncation": truncation.to_json(), "fullOutputPath": path}));
    }
    ((!text.is_empty()).then_some(text), details)
}

/// Seconds as JavaScript prints them.
fn js_seconds(seconds: f64) -> String {
    if seconds.fract() == 0.0 {
        format!("{}", seconds as i64)
    } else {
        format!("{seconds}")
    }
}

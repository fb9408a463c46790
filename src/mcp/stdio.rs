//! A stdio server: a child process in a process group of its own, speaking newline-delimited
//! JSON-RPC on its stdin and stdout. Lines are capped (`MAX_MESSAGE_BYTES`), the tail of its
//! stderr is kept for error messages, and closing it closes its stdin, then sends SIGTERM, then
//! SIGKILL to the whole group (servers started through `npx` or `uvx` are grandchildren).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::config::Transport as Config;
use crate::sync::lock;

/// The largest message (one line) a server may send: 16 MiB. A longer one ends the connection.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2048;
/// How long a server gets to exit after its stdin closed, and again after SIGTERM.
const GRACE: Duration = Duration::from_millis(1000);

/// What a connection learnt about why it failed: the reason its stream ended, the last line
/// that was not JSON-RPC, and the tail of stderr.
#[derive(Default)]
pub struct Diagnostics {
    ended: Option<String>,
    stray: Option<String>,
    stderr: VecDeque<u8>,
}

pub type SharedDiagnostics = Arc<Mutex<Diagnostics>>;

impl Diagnostics {
    /// A sentence or two to append to an error: why the stream ended, what else it wrote.
    pub fn explain(diagnostics: &SharedDiagnostics) -> String {
        let d = lock(diagnostics);
        let mut parts = Vec::new();
        if let Some(ended) = &d.ended {
            parts.push(ended.clone());
        }
        if let Some(stray) = &d.stray {
            parts.push(format!(
                "It wrote to stdout a line that is not JSON-RPC: {stray}"
            ));
        }
        let stderr = String::from_utf8_lossy(&d.stderr.iter().copied().collect::<Vec<_>>())
            .trim()
            .to_string();
        if !stderr.is_empty() {
            parts.push(format!("Its stderr ends with: {stderr}"));
        }
        parts.join(" ")
    }

    fn ended(diagnostics: &SharedDiagnostics, why: String) {
        lock(diagnostics).ended.get_or_insert(why);
    }
}

/// The child's process group; dropping it kills the group.
pub struct Process {
    child: Child,
    pgid: i32,
    reaped: bool,
}

/// Starts the server; returns its process and the transport over its pipes.
pub fn spawn(
    config: &Config,
    diagnostics: &SharedDiagnostics,
) -> Result<(Process, StdioTransport), String> {
    let Config::Stdio {
        command,
        args,
        env,
        cwd,
    } = config
    else {
        unreachable!("spawn is called for stdio servers")
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("\"{command}\" could not be started: {e}."))?;
    let pgid = child.id().map_or(0, |id| id as i32);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout is piped");
    if let Some(mut stderr) = child.stderr.take() {
        let diagnostics = diagnostics.clone();
        crate::runtime::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                let mut d = lock(&diagnostics);
                d.stderr.extend(&chunk[..n]);
                let excess = d.stderr.len().saturating_sub(STDERR_TAIL_BYTES);
                d.stderr.drain(..excess);
            }
        });
    }
    let transport = StdioTransport {
        stdout: BufReader::new(stdout),
        stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
        line: Vec::new(),
        diagnostics: diagnostics.clone(),
    };
    Ok((
        Process {
            child,
            pgid,
            reaped: false,
        },
        transport,
    ))
}

impl Process {
    /// Ends the server: its stdin is already closed (the transport closed), so it gets `GRACE`
    /// to exit, then SIGTERM and `GRACE` again, then SIGKILL to the whole group. The leader is
    /// reaped last, so the group id cannot be reused by another process while it is signalled.
    pub async fn close(mut self) {
        if !self.exited_within(GRACE).await {
            self.signal(libc::SIGTERM);
            self.exited_within(GRACE).await;
        }
        self.signal(libc::SIGKILL);
        let _ = self.child.wait().await;
        self.reaped = true;
        // SIGKILL is delivered asynchronously: give the rest of the group a moment to be gone
        // (kill with signal 0 only asks whether any member is left).
        for _ in 0..25 {
            // SAFETY: as in `signal`.
            if unsafe { libc::kill(-self.pgid, 0) } != 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn signal(&self, signal: i32) {
        if self.pgid > 0 {
            // SAFETY: kill(2) with a negative pid signals the process group; no memory is touched.
            unsafe { libc::kill(-self.pgid, signal) };
        }
    }

    /// Whether the leader exited within `limit`, without reaping it (WNOWAIT).
    async fn exited_within(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // SAFETY: waitid writes only into `info`, which lives on this stack frame.
            let exited = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                libc::waitid(
                    libc::P_PID,
                    self.pgid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                ) == 0
                    && info.si_pid() != 0
            };
            if exited || self.pgid <= 0 {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if !self.reaped {
            // Not closed in order (the set was dropped): nothing of it may outlive its owner.
            self.signal(libc::SIGKILL);
            let _ = self.child.start_kill();
        }
    }
}

/// rmcp's transport over the child's pipes, reading whole lines of at most `MAX_MESSAGE_BYTES`.
pub struct StdioTransport {
    stdout: BufReader<ChildStdout>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// The line read so far (kept across cancelled reads).
    line: Vec<u8>,
    diagnostics: SharedDiagnostics,
}

impl StdioTransport {
    /// The next line without its newline; `Err` says why the stream ended.
    async fn next_line(&mut self) -> Result<Vec<u8>, String> {
        loop {
            let buffer = match self.stdout.fill_buf().await {
                Ok(buffer) => buffer,
                Err(e) => return Err(format!("Reading its stdout failed: {e}.")),
            };
            if buffer.is_empty() {
                return Err("It closed its stdout (exited?).".into());
            }
            let (take, end) = match memchr::memchr(b'\n', buffer) {
                Some(index) => (index, true),
                None => (buffer.len(), false),
            };
            if self.line.len() + take > MAX_MESSAGE_BYTES {
                self.line = Vec::new();
                return Err(format!(
                    "It sent a message longer than {} MiB, the limit.",
                    MAX_MESSAGE_BYTES >> 20
                ));
            }
            self.line.extend_from_slice(&buffer[..take]);
            self.stdout.consume(take + usize::from(end));
            if end {
                return Ok(std::mem::take(&mut self.line));
            }
        }
    }
}

impl rmcp::transport::Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(pipe) = stdin.as_mut() else {
                return Err(std::io::ErrorKind::NotConnected.into());
            };
            pipe.write_all(&line).await?;
            pipe.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.next_line().await {
                Ok(line) => line,
                Err(why) => {
                    Diagnostics::ended(&self.diagnostics, why);
                    return None;
                }
            };
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(message) => return Some(message),
                // Notifications this SDK does not know are skipped, as are lines that are not
                // JSON-RPC (the last is kept for error messages): servers that log to stdout
                // still work.
                Err(_) => {
                    let known = serde_json::from_slice::<serde_json::Value>(line)
                        .is_ok_and(|v| v.get("method").is_some() && v.get("id").is_none());
                    if !known {
                        let shown: String =
                            String::from_utf8_lossy(&line[..line.len().min(200)]).into();
                        lock(&self.diagnostics).stray = Some(shown);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stdin.lock().await.take();
        Ok(())
    }
}

//! MCP servers' tools as agent tools: a tool pack over the official Rust SDK (`rmcp`, client
//! side). It produces tools and never drives an agent.
//!
//! `McpTools::connect` reads the standard `{"mcpServers": {...}}` configuration and connects every
//! enabled server in the background (creation never blocks); `wait` waits for them with a bound;
//! `servers` reports each one's state, tool count and last error; `tools` is the current set of
//! agent tools, named as pi-coding-agent 1.6.0 names them (`mcp__<server>__<tool>`, see `names`).
//! A server's `notifications/tools/list_changed` refreshes its tools and bumps `generation`, so
//! an agent holding the set picks the change up between turns.
//!
//! Bounds: a message (a stdout line, an HTTP body or event-stream line) is at most 16 MiB
//! (`MAX_MESSAGE_BYTES`); a longer one ends the connection with an error saying so, and the
//! next call reconnects. A result's model-facing text is cut to 20 KB in the middle
//! (`content::MAX_TEXT_BYTES`), and at most 2 KiB of a server's stderr is kept. Each request
//! is bounded by the server's `timeout` (default 60 s); a call's progress notifications reset it.

mod call;
mod config;
mod content;
mod http;
mod names;
mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{PaginatedRequestParams, ProgressToken};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};

use crate::host::{AgentTool, HostFuture, UpdateFn};
use crate::json::{json, Json};
use crate::sync::lock;
use call::Handler;

pub use config::{ServerConfig, Transport, DEFAULT_TIMEOUT};
pub use content::MAX_TEXT_BYTES;
pub use names::tool_name;
pub use stdio::MAX_MESSAGE_BYTES;

/// How long a prompt waits for servers still connecting (the reference's 10 s).
pub const PROMPT_WAIT: Duration = Duration::from_secs(10);
/// A server that pages its tool list beyond this many pages is refused (a cursor loop).
const MAX_PAGES: usize = 1000;

/// A server's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Connecting,
    Ready,
    Failed,
    /// `"enabled": false` in its entry.
    Disabled,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Ready => "ready",
            State::Failed => "failed",
            State::Disabled => "disabled",
            State::Closed => "closed",
        }
    }
}

/// One server as `servers()` reports it.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub state: State,
    pub tool_count: usize,
    pub last_error: Option<String>,
    /// Tools left out, each with the reason (an input schema that is not a valid JSON Schema).
    pub skipped: Vec<String>,
}

impl ServerStatus {
    pub fn to_json(&self) -> Json {
        json!({
            "name": self.name,
            "state": self.state.as_str(),
            "toolCount": self.tool_count,
            "lastError": self.last_error,
            "skipped": self.skipped,
        })
    }
}

/// A listed tool: its MCP name, description and normalized input schema.
#[derive(Clone)]
struct Listed {
    name: String,
    description: String,
    parameters: Json,
}

struct Status {
    state: State,
    tools: Vec<Listed>,
    last_error: Option<String>,
    skipped: Vec<String>,
}

/// A live connection.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    process: Option<stdio::Process>,
    diagnostics: stdio::SharedDiagnostics,
}

impl Connection {
    async fn close(self) {
        let Connection {
            mut service,
            process,
            ..
        } = self;
        let _ = service.close().await;
        if let Some(process) = process {
            process.close().await;
        }
    }
}

/// A call waiting for progress: its timeout restarts and the host hears of it.
struct Progress {
    wake: Arc<tokio::sync::Notify>,
    update: UpdateFn,
    tool: String,
}

struct Server {
    name: String,
    config: Result<ServerConfig, String>,
    status: Mutex<Status>,
    /// Taken by one connect at a time; `None` while disconnected.
    connection: tokio::sync::Mutex<Option<Connection>>,
    progress: Mutex<HashMap<ProgressToken, Progress>>,
    set: Weak<Set>,
}

/// The servers of one configuration and the tools they offer.
struct Set {
    servers: Vec<Arc<Server>>,
    owners: Mutex<names::Owners>,
    /// What waiters and agents see, replaced as a whole at each change.
    published: Mutex<Published>,
    /// Signalled at every state change (blocking and async waiters).
    changed: (Mutex<()>, Condvar),
    changed_async: tokio::sync::Notify,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// The tools of the ready servers and whether any server was still connecting, taken together
/// so that a waiter who sees every server settled also sees every ready server's tools (a
/// server's state changes before its tools are rebuilt).
struct Published {
    /// Bumped at each change.
    generation: u64,
    tools: Arc<Vec<AgentTool>>,
    settled: bool,
}

/// The tools of the MCP servers of one configuration. Cloning shares the servers; `close` (or
/// dropping the last clone) ends them.
#[derive(Clone)]
pub struct McpTools(Arc<Set>);

impl McpTools {
    /// Starts connecting every enabled server of `config` in the background. Fails only when
    /// `config` is not `{"mcpServers": {...}}`; a wrong entry is a failed server of its own.
    pub fn connect(config: &Json) -> Result<McpTools, String> {
        let entries = config::parse(config)?;
        let set = Arc::new_cyclic(|set: &Weak<Set>| Set {
            servers: entries
                .into_iter()
                .map(|(name, config)| {
                    let (state, last_error) = match &config {
                        Ok(c) if !c.enabled => (State::Disabled, None),
                        Ok(_) => (State::Connecting, None),
                        Err(error) => (State::Failed, Some(error.clone())),
                    };
                    Arc::new(Server {
                        name,
                        config,
                        status: Mutex::new(Status {
                            state,
                            tools: Vec::new(),
                            last_error,
                            skipped: Vec::new(),
                        }),
                        connection: tokio::sync::Mutex::new(None),
                        progress: Mutex::new(HashMap::new()),
                        set: set.clone(),
                    })
                })
                .collect(),
            owners: Mutex::new(names::Owners::default()),
            published: Mutex::new(Published {
                generation: 0,
                tools: Arc::new(Vec::new()),
                settled: false,
            }),
            changed: (Mutex::new(()), Condvar::new()),
            changed_async: tokio::sync::Notify::new(),
            tasks: Mutex::new(Vec::new()),
        });
        for server in &set.servers {
            if lock(&server.status).state == State::Connecting {
                let server = server.clone();
                let task = crate::runtime::handle().spawn(async move {
                    let result = server.connect().await;
                    server.settle(result);
                });
                lock(&set.tasks).push(task);
            }
        }
        set.rebuild_tools();
        Ok(McpTools(set))
    }

    /// Whether no server is still connecting (and `tools()` holds every ready server's tools).
    pub fn settled(&self) -> bool {
        lock(&self.0.published).settled
    }

    /// Blocks until no server is connecting or `timeout` passed; returns `settled()`. Not for
    /// the runtime thread (it would wait for itself).
    pub fn wait_blocking(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let (mutex, condvar) = &self.0.changed;
        let mut guard = lock(mutex);
        while !self.settled() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            guard = condvar
                .wait_timeout(guard, left.min(Duration::from_millis(100)))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        true
    }

    /// `wait_blocking` for async code.
    pub async fn wait(&self, timeout: Duration) -> bool {
        let _ = tokio::time::timeout(timeout, async {
            loop {
                let notified = self.0.changed_async.notified();
                if self.settled() {
                    return;
                }
                notified.await;
            }
        })
        .await;
        self.settled()
    }

    /// Every configured server, in the configuration's order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.0
            .servers
            .iter()
            .map(|server| {
                let status = lock(&server.status);
                ServerStatus {
                    name: server.name.clone(),
                    state: status.state,
                    tool_count: status.tools.len(),
                    last_error: status.last_error.clone(),
                    skipped: status.skipped.clone(),
                }
            })
            .collect()
    }

    /// The current tools of the ready servers, and the generation they belong to (it changes
    /// whenever the set does).
    pub fn tools(&self) -> (u64, Arc<Vec<AgentTool>>) {
        let published = lock(&self.0.published);
        (published.generation, published.tools.clone())
    }

    /// Whether another holder (an agent's options) shares the set.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    /// The generation of `tools()` (cheap: for checking between turns).
    pub fn generation(&self) -> u64 {
        lock(&self.0.published).generation
    }

    /// Ends every server (stdin closed, then SIGTERM, then SIGKILL to its process group, with a
    /// second of grace each); their tools then fail with a sentence saying the server is closed.
    pub async fn close(&self) {
        for task in lock(&self.0.tasks).drain(..) {
            // A connect in flight is dropped: its child's process group is killed on drop.
            task.abort();
        }
        let closing = self.0.servers.iter().map(|server| async move {
            {
                let mut status = lock(&server.status);
                status.state = State::Closed;
            }
            if let Some(connection) = server.connection.lock().await.take() {
                connection.close().await;
            }
        });
        futures::future::join_all(closing).await;
        self.0.rebuild_tools();
        self.0.notify();
    }
}

impl Set {
    fn notify(&self) {
        let (mutex, condvar) = &self.changed;
        drop(lock(mutex));
        condvar.notify_all();
        self.changed_async.notify_waiters();
    }

    /// Names and builds the tools of the ready servers, in configuration order, and publishes
    /// them. Rebuilds run one at a time (`owners` is held throughout), so the last published
    /// reflects the latest states.
    fn rebuild_tools(&self) {
        let mut tools = Vec::new();
        let mut settled = true;
        let mut owners = lock(&self.owners);
        for server in &self.servers {
            let listed = {
                let status = lock(&server.status);
                settled &= status.state != State::Connecting;
                if status.state != State::Ready {
                    continue;
                }
                status.tools.clone()
            };
            let mcp_names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
            let names = owners.assign(&server.name, &mcp_names);
            for (tool, name) in listed.iter().zip(names) {
                tools.push(server.agent_tool(tool, name));
            }
        }
        let mut published = lock(&self.published);
        published.generation += 1;
        published.tools = Arc::new(tools);
        published.settled = settled;
    }
}

fn seconds(timeout: Duration) -> String {
    let s = timeout.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

impl Server {
    fn config(&self) -> Result<&ServerConfig, String> {
        self.config.as_ref().map_err(Clone::clone)
    }

    /// Records the outcome of a connect (unless the set was closed meanwhile) and publishes it.
    fn settle(&self, result: Result<(), String>) {
        if !self.record(result) {
            return;
        }
        if let Some(set) = self.set.upgrade() {
            set.rebuild_tools();
            set.notify();
        }
    }

    /// The state change of `settle`, not yet published; false when the set was closed.
    fn record(&self, result: Result<(), String>) -> bool {
        let mut status = lock(&self.status);
        if status.state == State::Closed {
            return false;
        }
        match result {
            Ok(()) => {
                status.state = State::Ready;
                status.last_error = None;
            }
            Err(error) => {
                status.state = State::Failed;
                status.last_error = Some(error);
            }
        }
        true
    }

    /// Connects and lists the tools; the connection is kept for calls.
    async fn connect(self: &Arc<Self>) -> Result<(), String> {
        let mut slot = self.connection.lock().await;
        if let Some(old) = slot.take() {
            old.close().await;
        }
        let connection = self.open().await?;
        let listed = self.list(&connection).await;
        match listed {
            Ok((tools, skipped)) => {
                let mut status = lock(&self.status);
                status.tools = tools;
                status.skipped = skipped;
                drop(status);
                *slot = Some(connection);
                Ok(())
            }
            Err(error) => {
                connection.close().await;
                Err(error)
            }
        }
    }

    /// Starts the server (or reaches it) and runs `initialize`.
    async fn open(self: &Arc<Self>) -> Result<Connection, String> {
        let config = self.config()?;
        let name = &self.name;
        let diagnostics = stdio::SharedDiagnostics::default();
        let handler = Handler(Arc::downgrade(self));
        let limit = config.timeout;
        let (started, process) = match &config.transport {
            Transport::Stdio { .. } => {
                let (process, transport) = stdio::spawn(&config.transport, &diagnostics)
                    .map_err(|e| format!("MCP server \"{name}\": {e}"))?;
                let started = tokio::time::timeout(limit, handler.serve(transport)).await;
                (started, Some(process))
            }
            Transport::Http { url, headers } => {
                let transport = http::transport(url, headers)
                    .await
                    .map_err(|e| format!("MCP server \"{name}\": {e}"))?;
                (
                    tokio::time::timeout(limit, handler.serve(transport)).await,
                    None,
                )
            }
        };
        let failure = match started {
            Ok(Ok(service)) => {
                return Ok(Connection {
                    service,
                    process,
                    diagnostics,
                })
            }
            Ok(Err(error)) => format!("MCP server \"{name}\" could not be initialized: {error}."),
            Err(_) => format!(
                "MCP server \"{name}\" did not answer initialize within {}.",
                seconds(limit)
            ),
        };
        if let Some(process) = process {
            process.close().await;
        }
        Err(with_diagnostics(failure, &diagnostics))
    }

    /// All pages of `tools/list`; tools whose input schema cannot be compiled are skipped.
    async fn list(&self, connection: &Connection) -> Result<(Vec<Listed>, Vec<String>), String> {
        let config = self.config()?;
        let name = &self.name;
        let peer = connection.service.peer();
        let mut listed = Vec::new();
        let mut skipped = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = tokio::time::timeout(
                config.timeout,
                peer.list_tools(Some(PaginatedRequestParams { meta: None, cursor })),
            )
            .await
            .map_err(|_| {
                format!(
                    "MCP server \"{name}\" did not answer tools/list within {}.",
                    seconds(config.timeout)
                )
            })?
            .map_err(|e| {
                with_diagnostics(
                    format!("MCP server \"{name}\" failed to list its tools: {e}."),
                    &connection.diagnostics,
                )
            })?;
            for tool in page.tools {
                let mut parameters = Json::Object((*tool.input_schema).clone());
                if parameters.get("type").is_none() {
                    parameters["type"] = json!("object");
                }
                if parameters.get("properties").is_none() {
                    parameters["properties"] = json!({});
                }
                if let Err(error) = crate::args::schema::Compiled::new(&parameters) {
                    skipped.push(format!(
                        "Tool \"{}\" was left out: its input schema is not a valid JSON Schema ({error}).",
                        tool.name
                    ));
                    continue;
                }
                let description = tool
                    .description
                    .as_deref()
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .map(str::to_string)
                    .or_else(|| tool.title.clone())
                    .unwrap_or_else(|| format!("MCP tool {} from server {name}", tool.name));
                listed.push(Listed {
                    name: tool.name.to_string(),
                    description,
                    parameters,
                });
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                return Ok((listed, skipped));
            }
        }
        Err(format!(
            "MCP server \"{name}\" listed its tools in more than {MAX_PAGES} pages; its list was refused."
        ))
    }

    /// Lists the tools again after `notifications/tools/list_changed`.
    async fn refresh(self: Arc<Self>) {
        let outcome = {
            let slot = self.connection.lock().await;
            match slot.as_ref() {
                Some(connection) => Some(self.list(connection).await),
                None => None,
            }
        };
        let Some(outcome) = outcome else { return };
        {
            let mut status = lock(&self.status);
            if status.state != State::Ready {
                return;
            }
            match outcome {
                Ok((tools, skipped)) => {
                    status.tools = tools;
                    status.skipped = skipped;
                }
                Err(error) => status.last_error = Some(error),
            }
        }
        if let Some(set) = self.set.upgrade() {
            set.rebuild_tools();
            set.notify();
        }
    }
}

/// An error with what the connection learnt (why it ended, stray output, stderr).
fn with_diagnostics(error: String, diagnostics: &stdio::SharedDiagnostics) -> String {
    let detail = stdio::Diagnostics::explain(diagnostics);
    if detail.is_empty() {
        error
    } else {
        format!("{error} {detail}")
    }
}

/// An agent given the set takes its current tools at each turn, after waiting up to
/// `PROMPT_WAIT` for servers still connecting before its first request.
impl crate::host::ToolSet for McpTools {
    fn ready(&self) -> HostFuture<()> {
        let tools = self.clone();
        Box::pin(async move {
            tools.wait(PROMPT_WAIT).await;
        })
    }

    fn generation(&self) -> u64 {
        McpTools::generation(self)
    }

    fn tools(&self) -> Arc<Vec<AgentTool>> {
        McpTools::tools(self).1
    }
}

impl Drop for Set {
    fn drop(&mut self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that is ready but whose tools are not yet rebuilt leaves the set unsettled: a
    /// waiter released by `settled()` always finds every ready server's tools (CI once saw a
    /// server "ready" with 13 tools while `tools()` still lacked them).
    #[test]
    fn settled_is_published_with_the_tools() {
        let config = json!({"mcpServers": {"slow": {"command": "sleep", "args": ["60"]}}});
        let tools = McpTools::connect(&config).unwrap();
        for task in lock(&tools.0.tasks).drain(..) {
            task.abort();
        }
        assert!(!tools.settled());
        let server = tools.0.servers[0].clone();
        lock(&server.status).tools = vec![Listed {
            name: "echo".into(),
            description: "Echoes.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }];
        assert!(server.record(Ok(())));
        assert!(
            !tools.settled(),
            "settled before the ready server's tools were published"
        );
        assert!(tools.tools().1.is_empty());
        tools.0.rebuild_tools();
        assert!(tools.settled());
        assert_eq!(tools.tools().1.len(), 1);
        assert!(tools.wait_blocking(Duration::ZERO));
    }
}

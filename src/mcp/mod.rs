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

mod config;
mod content;
mod http;
mod names;
mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientRequest, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use crate::host::{AgentTool, FnTool, HostFuture, ToolInvocation, UpdateFn, OPERATION_ABORTED};
use crate::json::{json, Json};
use crate::sync::lock;

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
    /// The current tools and their generation (bumped at each change).
    tools: Mutex<(u64, Arc<Vec<AgentTool>>)>,
    /// Signalled at every state change (blocking and async waiters).
    changed: (Mutex<()>, Condvar),
    changed_async: tokio::sync::Notify,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
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
            tools: Mutex::new((0, Arc::new(Vec::new()))),
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
        Ok(McpTools(set))
    }

    /// Whether no server is still connecting.
    pub fn settled(&self) -> bool {
        self.0
            .servers
            .iter()
            .all(|s| lock(&s.status).state != State::Connecting)
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
        let (generation, tools) = &*lock(&self.0.tools);
        (*generation, tools.clone())
    }

    /// Whether another holder (an agent's options) shares the set.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    /// The generation of `tools()` (cheap: for checking between turns).
    pub fn generation(&self) -> u64 {
        lock(&self.0.tools).0
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

    /// Names and builds the tools of the ready servers, in configuration order.
    fn rebuild_tools(&self) {
        let mut tools = Vec::new();
        let mut owners = lock(&self.owners);
        for server in &self.servers {
            let listed = {
                let status = lock(&server.status);
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
        let mut current = lock(&self.tools);
        *current = (current.0 + 1, Arc::new(tools));
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

    /// Records the outcome of a connect (unless the set was closed meanwhile).
    fn settle(&self, result: Result<(), String>) {
        {
            let mut status = lock(&self.status);
            if status.state == State::Closed {
                return;
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
        }
        if let Some(set) = self.set.upgrade() {
            set.rebuild_tools();
            set.notify();
        }
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

    /// The agent tool for a listed tool.
    fn agent_tool(self: &Arc<Self>, tool: &Listed, name: String) -> AgentTool {
        let definition = json!({
            "name": name,
            "label": format!("{}/{}", self.name, tool.name),
            "description": tool.description,
            "parameters": tool.parameters,
        });
        let server = Arc::downgrade(self);
        let mcp_name = tool.name.clone();
        FnTool::tool(
            definition,
            move |invocation: ToolInvocation| -> HostFuture<Result<Option<Json>, String>> {
                let server = server.clone();
                let tool = mcp_name.clone();
                Box::pin(async move {
                    let Some(server) = server.upgrade() else {
                        return Err(format!("The MCP server of tool \"{tool}\" is gone."));
                    };
                    server.call(&tool, invocation).await.map(Some)
                })
            },
        )
    }

    /// Closes a connection that failed, so the next call connects again. Awaited, not left in
    /// the background: nothing of the server may outlive `McpTools::close`.
    async fn drop_connection(&self) {
        let connection = self.connection.lock().await.take();
        if let Some(connection) = connection {
            connection.close().await;
        }
    }

    /// The peer of a live connection, reconnecting when the last one dropped.
    async fn peer(
        self: &Arc<Self>,
    ) -> Result<(rmcp::Peer<RoleClient>, stdio::SharedDiagnostics), String> {
        let name = &self.name;
        {
            let status = lock(&self.status);
            if status.state == State::Closed {
                return Err(format!("MCP server \"{name}\" is closed."));
            }
        }
        {
            let slot = self.connection.lock().await;
            let alive =
                |c: &&Connection| !c.service.is_closed() && !c.service.peer().is_transport_closed();
            if let Some(connection) = slot.as_ref().filter(alive) {
                return Ok((
                    connection.service.peer().clone(),
                    connection.diagnostics.clone(),
                ));
            }
        }
        if lock(&self.status).state == State::Closed {
            return Err(format!("MCP server \"{name}\" is closed."));
        }
        let result = self.connect().await;
        let reconnected = result.is_ok();
        self.settle(result.clone());
        result.map_err(|e| {
            format!("MCP server \"{name}\" had disconnected and could not be reached again: {e}")
        })?;
        debug_assert!(reconnected);
        let slot = self.connection.lock().await;
        let connection = slot
            .as_ref()
            .ok_or_else(|| format!("MCP server \"{name}\" is closed."))?;
        Ok((
            connection.service.peer().clone(),
            connection.diagnostics.clone(),
        ))
    }

    /// `tools/call`, bounded by the timeout (restarted by progress) and the run's abort.
    async fn call(
        self: &Arc<Self>,
        tool: &str,
        invocation: ToolInvocation,
    ) -> Result<Json, String> {
        let ToolInvocation {
            args,
            signal,
            on_update,
            ..
        } = invocation;
        if signal.is_aborted() {
            return Err(OPERATION_ABORTED.into());
        }
        let name = self.name.clone();
        let limit = self.config()?.timeout;
        let request = ClientRequest::CallToolRequest(Request::new(CallToolRequestParams {
            meta: None,
            name: tool.to_string().into(),
            arguments: args.as_object().cloned(),
            task: None,
        }));
        // A connection that dropped unnoticed fails the send: connect again, once.
        let mut attempt = 0;
        let (peer, diagnostics, handle) = loop {
            let (peer, diagnostics) = self.peer().await?;
            let sent = peer
                .send_cancellable_request(request.clone(), PeerRequestOptions::no_options())
                .await;
            match sent {
                Ok(handle) => break (peer, diagnostics, handle),
                Err(error) if attempt == 1 => {
                    self.drop_connection().await;
                    return Err(with_diagnostics(
                        format!("MCP server \"{name}\" could not be sent the call of \"{tool}\": {error}."),
                        &diagnostics,
                    ));
                }
                Err(_) => {
                    self.drop_connection().await;
                    attempt += 1;
                }
            }
        };
        let closed = |error: String| {
            with_diagnostics(
                format!("MCP server \"{name}\" lost its connection during the call of \"{tool}\": {error}."),
                &diagnostics,
            )
        };
        let wake = Arc::new(tokio::sync::Notify::new());
        let token = handle.progress_token.clone();
        lock(&self.progress).insert(
            token.clone(),
            Progress {
                wake: wake.clone(),
                update: on_update,
                tool: tool.to_string(),
            },
        );
        struct Unregister<'a>(&'a Server, ProgressToken);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                lock(&self.0.progress).remove(&self.1);
            }
        }
        let _unregister = Unregister(self, token);
        let mut answer = handle.rx;
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        let cancel = |reason: &str| {
            let notification = rmcp::model::CancelledNotification {
                params: rmcp::model::CancelledNotificationParam {
                    request_id: handle.id.clone(),
                    reason: Some(reason.to_string()),
                },
                method: Default::default(),
                extensions: Default::default(),
            };
            let peer = peer.clone();
            crate::runtime::spawn(async move {
                let _ = peer.send_notification(notification.into()).await;
            });
        };
        loop {
            tokio::select! {
                reply = &mut answer => {
                    return match reply {
                        Ok(Ok(ServerResult::CallToolResult(result))) => {
                            let result = serde_json::to_value(&result).map_err(|e| e.to_string())?;
                            Ok(content::tool_result(&name, tool, &result))
                        }
                        Ok(Ok(_)) => Err(format!("MCP server \"{name}\" answered tools/call with something that is not a tool result.")),
                        Ok(Err(ServiceError::McpError(error))) => Err(format!("MCP server \"{name}\" refused the call of \"{tool}\": {}", error.message)),
                        Ok(Err(error)) => {
                            self.drop_connection().await;
                            Err(closed(error.to_string()))
                        }
                        Err(_) => {
                            self.drop_connection().await;
                            Err(closed("the connection closed".into()))
                        }
                    };
                }
                _ = wake.notified() => deadline.as_mut().reset(tokio::time::Instant::now() + limit),
                _ = &mut deadline => {
                    cancel("timeout");
                    return Err(format!("MCP tool {name}/{tool} did not answer within {} (the server's timeout).", seconds(limit)));
                }
                _ = signal.aborted() => {
                    cancel("aborted");
                    return Err(OPERATION_ABORTED.into());
                }
            }
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

/// Receives the server's notifications (it holds the server weakly: no cycle).
struct Handler(Weak<Server>);

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(server) = self.0.upgrade() else {
            return;
        };
        let progress = lock(&server.progress);
        if let Some(waiting) = progress.get(&params.progress_token) {
            waiting.wake.notify_one();
            let total = params.total.map(|t| format!("/{t}")).unwrap_or_default();
            let text = params
                .message
                .clone()
                .unwrap_or_else(|| format!("Progress {}{total}", params.progress));
            (waiting.update)(json!({
                "content": [{"type": "text", "text": text}],
                "details": {"server": server.name, "tool": waiting.tool},
            }));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.0.upgrade() {
            crate::runtime::spawn(server.refresh());
        }
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

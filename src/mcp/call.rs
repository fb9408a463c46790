//! A server's tools at work: the agent tool for a listed tool, `tools/call` with its timeout
//! (restarted by progress), abort and reconnection, and the handler of the server's
//! notifications (progress, `tools/list_changed`).

use std::sync::{Arc, Weak};

use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, ProgressToken, Request,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, ServiceError};
use rmcp::{ClientHandler, RoleClient};

use super::{
    content, seconds, stdio, with_diagnostics, Connection, Listed, Progress, Server, State,
};
use crate::host::{AgentTool, FnTool, HostFuture, ToolInvocation, OPERATION_ABORTED};
use crate::json::{json, Json};
use crate::sync::lock;

impl Server {
    /// The agent tool for a listed tool.
    pub(super) fn agent_tool(self: &Arc<Self>, tool: &Listed, name: String) -> AgentTool {
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
                        format!(
                            "MCP server \"{name}\" could not be sent the call of \"{tool}\": {}.",
                            plain(&error.to_string())
                        ),
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
                            Err(closed(plain(&error.to_string()).to_owned()))
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

/// Receives the server's notifications (it holds the server weakly: no cycle).
pub(super) struct Handler(pub(super) Weak<Server>);

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

/// The cause in an rmcp error's text, without the transport's Rust type names it starts with
/// ("Transport send error: Transport [rmcp::...<...>] error: HTTP status 503 ...").
fn plain(error: &str) -> &str {
    match error.rfind("] error: ") {
        Some(index) => &error[index + "] error: ".len()..],
        None => error,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_rmcp_error_keeps_only_its_cause() {
        let text = "Transport send error: Transport [rmcp::transport::worker::WorkerTransport<A<B>>] error: unexpected server response: HTTP status 503 Service Unavailable";
        assert_eq!(
            super::plain(text),
            "unexpected server response: HTTP status 503 Service Unavailable"
        );
        assert_eq!(
            super::plain("the connection closed"),
            "the connection closed"
        );
    }
}

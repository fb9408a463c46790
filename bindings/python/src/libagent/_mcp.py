"""MCP servers' tools as agent tools: the servers of a standard `{"mcpServers": {...}}`
configuration, connected in the background, their tools named `mcp__<server>__<tool>`.

    from libagent import MCP, Agent

    with MCP.load("mcp.json") as mcp, Agent(mcp=mcp, stream_fn=my_model) as agent:
        agent.prompt("List the files of the project.")
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import weakref
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _native as native
from ._errors import InvalidArgumentError

PathLike = Union[str, "os.PathLike[str]"]

# The longest wait libagent is asked for at once; longer waits repeat it.
_LONGEST_WAIT_MS = 3_600_000


@dataclasses.dataclass(frozen=True)
class McpServer:
    """One configured server: `state` is "connecting", "ready", "failed", "disabled" or
    "closed"; `last_error` says why it failed (ending with what it wrote to stderr last);
    `skipped` names the tools left out (e.g. an input schema that is not a valid JSON Schema)."""

    name: str
    state: str
    tool_count: int
    last_error: Optional[str]
    skipped: Tuple[str, ...]


class McpTool:
    """One tool of an MCP server; usable in any agent's `tools`, mixed with your own tools.
    It stays usable after its MCP set is closed: its calls then fail with a sentence saying so."""

    def __init__(self, handle: "native.AgentTool", definition: Mapping[str, Any]):
        self._handle = handle
        self.name: str = definition["name"]
        self.label: str = definition.get("label", self.name)
        self.description: str = definition.get("description", "")
        self.parameters: Dict[str, Any] = definition.get("parameters", {})
        self._release = weakref.finalize(self, _free_tool, handle.id)

    def __repr__(self) -> str:
        return f"McpTool({self.name!r})"

    @property
    def handle(self) -> "native.AgentTool":
        """The `AgentTool` this object owns (a ctypes struct), for calling the C ABI directly."""
        return self._handle


def _free_tool(handle_id: int) -> None:
    native.take_error(native.lib.agent_tool_free(native.AgentTool(handle_id)))


def _config_bytes(config: Union[Mapping[str, Any], str, bytes]) -> bytes:
    if isinstance(config, bytes):
        return config
    if isinstance(config, str):
        return native.encode(config)
    if isinstance(config, Mapping):
        return native.dumps(config)
    raise TypeError(f"config must be a dict or a JSON text, not {type(config).__name__}")


class MCP(native.Closable):
    """The MCP servers of one configuration, `{"mcpServers": {"<name>": {...}}}` (a dict or its
    JSON text): for a stdio server `command`, `args`, `env`, `cwd`; for a streamable-HTTP server
    `url`, `headers`; for both `type` ("stdio", "http" or "streamable-http"), `timeout` (seconds,
    default 60) and `enabled`. `${VAR}` in `env` and `headers` is replaced from the environment.

    Creating it returns at once: the servers connect in the background. A wrong entry (the legacy
    SSE transport, a missing command, an unset variable) is a failed server of its own, reported
    by `servers()`; the others still connect. A text that is not JSON, or has no "mcpServers"
    object, raises InvalidJsonError.

    Give it to `Agent(mcp=...)`: the agent takes the servers' current tools at each turn (a
    prompt first waits up to 10 s for servers still connecting), so a server's changed tool list
    takes effect between turns. Or take the tools once with `tools()`.

    `close()` (or `with`) ends the servers: a stdio server's process group gets its stdin closed,
    then SIGTERM, then SIGKILL, so nothing of it is left. An agent given the set keeps it until
    the agent is closed, unless the set is closed first.
    """

    def __init__(self, config: Union[Mapping[str, Any], str, bytes]):
        self._handle = native.AgentMcp()
        native.check(native.lib.agent_mcp_connect(*native.text(_config_bytes(config)), ctypes.byref(self._handle)))
        self._open()

    @classmethod
    def load(cls, path: PathLike) -> "MCP":
        """The servers of the configuration file at `path` (JSON, as Claude Desktop, Cursor and
        pi read them)."""
        with open(os.fspath(path), "rb") as f:
            return cls(f.read())

    @property
    def handle(self) -> "native.AgentMcp":
        """The `AgentMcp` (a ctypes struct), for calling the C ABI directly."""
        return self._handle

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until no server is still connecting, or `timeout` seconds passed (None: no
        bound); returns True when none is. Not inside a libagent callback (WouldDeadlockError)."""
        left_ms = None if timeout is None else max(0, int(timeout * 1000))
        settled = ctypes.c_bool(False)
        while True:
            step = _LONGEST_WAIT_MS if left_ms is None else min(left_ms, _LONGEST_WAIT_MS)
            native.check(native.lib.agent_mcp_wait(self._handle, step, ctypes.byref(settled)))
            if left_ms is not None:
                left_ms -= step
            if settled.value or left_ms == 0:
                return settled.value

    def servers(self) -> List[McpServer]:
        """Every configured server, in the configuration's order."""
        return [McpServer(s["name"], s["state"], s["toolCount"], s["lastError"], tuple(s.get("skipped", ())))
                for s in native.take_json(native.lib.agent_mcp_servers_json, self._handle)]

    def tools(self) -> List[McpTool]:
        """The tools the ready servers offer now, named `mcp__<server>__<tool>` as
        pi-coding-agent names them, each with its description and input schema."""
        while True:
            definitions = native.take_json(native.lib.agent_mcp_tools_json, self._handle)
            handles = (native.AgentTool * max(1, len(definitions)))()
            count = ctypes.c_size_t()
            error = native.take_error(native.lib.agent_mcp_tools(self._handle, handles, len(definitions),
                                                                 ctypes.byref(count)))
            if error is not None and not isinstance(error, InvalidArgumentError):
                raise error
            if error is None:
                tools = [McpTool(handles[i], d) for i, d in enumerate(definitions[: count.value])]
                # The same list before and after taking the handles: they match the definitions.
                if count.value == len(definitions) and native.take_json(
                        native.lib.agent_mcp_tools_json, self._handle) == definitions:
                    return tools
            # A server changed its tools between the calls (the handles made are freed): again.

    def close(self) -> None:
        """Ends the servers and releases the set (idempotent); their tools then fail with a
        sentence saying the server is closed."""
        super().close()

    def _release(self) -> None:
        try:
            native.check(native.lib.agent_mcp_close(self._handle))
        finally:
            native.check(native.lib.agent_mcp_free(self._handle))

    def _collected(self) -> None:
        # A set never closed is released when collected: its servers end unless an agent holds it.
        self._closed = True
        native.take_error(native.lib.agent_mcp_free(self._handle))

    def __repr__(self) -> str:
        state = "closed" if self._closed else ", ".join(f"{s.name}: {s.state}" for s in self.servers())
        return f"MCP({state})"


def mcp_sets(mcp: Any) -> List[MCP]:
    """`Agent(mcp=...)`'s value as a list of MCP sets."""
    if mcp is None:
        return []
    sets = [mcp] if isinstance(mcp, MCP) else list(mcp)
    for item in sets:
        if not isinstance(item, MCP):
            raise TypeError(f"mcp must be a libagent.MCP or a list of them, not {type(item).__name__}")
    return sets


__all__ = ["MCP", "McpServer", "McpTool"]

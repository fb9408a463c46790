"""libagent for Python: the agent loop of pi agent core (libagent's C ABI) with Python tools,
models, hooks and listeners.

    from libagent import Agent, tool

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    with Agent(system_prompt="Be brief.", tools=[add], stream_fn=my_model) as agent:
        print(agent.prompt("What is 2 + 3?")[-1])
"""

from ._coding import CodingTool, coding_tools
from ._agent import (
    PROVIDER_APIS, Agent, message_text, set_default_providers, set_default_scripted_model, set_default_stream_fn,
    user_message,
)
from ._errors import (
    AbortedError, AgentError, ModelError, AgentTimeoutError, AlreadyCompletedError, BusyError, FreedError, InternalError,
    InvalidArgumentError, InvalidHandleError, InvalidJsonError, InvalidStateError, InvalidUtf8Error,
    NoStreamFnError, NotASessionError, NullPointerError, QueueClosedError, RunFailedError, SessionIOError,
    SessionLockedError, StreamClosedError, WouldDeadlockError,
)
from ._dispatch import Dispatcher
from ._session import Session
from ._mcp import MCP, McpServer, McpTool
from ._events import Event, EventStream, Subscription
from ._models import UnknownModelError, find_model, list_models
from ._run import Run, RunOutcome
from ._native import LIBRARY_PATH, configure_runtime, version
from ._tools import Tool, ToolContext, ToolResult, tool

__version__ = "1.0.0"

__all__ = [
    "AbortedError", "ModelError", "PROVIDER_APIS", "set_default_providers", "Agent", "AgentError", "CodingTool",
    "coding_tools", "AgentTimeoutError", "AlreadyCompletedError", "BusyError", "Dispatcher", "Event", "EventStream",
    "UnknownModelError", "find_model", "list_models",
    "FreedError", "InternalError", "InvalidArgumentError", "InvalidHandleError", "InvalidJsonError",
    "InvalidStateError", "InvalidUtf8Error", "LIBRARY_PATH", "MCP", "McpServer", "McpTool", "NoStreamFnError", "NotASessionError", "NullPointerError",
    "QueueClosedError", "Run", "RunFailedError", "RunOutcome", "Session", "SessionIOError", "SessionLockedError",
    "StreamClosedError", "Subscription", "Tool", "ToolContext",
    "ToolResult", "WouldDeadlockError", "configure_runtime", "message_text", "set_default_scripted_model",
    "set_default_stream_fn", "tool", "user_message", "version",
]

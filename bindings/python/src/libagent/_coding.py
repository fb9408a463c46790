"""The coding tool pack: pi-coding-agent's read, write, edit, ls, find, grep and bash, built into
libagent and working on one root directory. The file tools stay inside it; bash (off unless
enabled) runs with the process's rights and can read and write anywhere the process can.

    from libagent import Agent, coding_tools

    tools = coding_tools("/path/to/project", consent=lambda tool, args: ask_user(tool, args))
    with Agent(tools=tools, stream_fn=my_model) as agent:
        agent.prompt("Fix the failing test.")
"""

from __future__ import annotations

import ctypes
import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _native as native

ALL_TOOLS = ("read", "write", "edit", "ls", "find", "grep", "bash")

# consent(tool, args) -> True/None (allow), False (refuse) or a str (refuse, the model sees why).
Consent = Callable[[str, Dict[str, Any]], Any]


class CodingTool:
    """One tool of the pack; usable in any agent's `tools`, mixed with your own tools."""

    def __init__(self, name: str, root: str, options: Dict[str, Any], consent: Optional[Consent]):
        self.name = name
        self.root = root
        self._options = options
        self._consent = consent

    def __repr__(self) -> str:
        return f"CodingTool({self.name!r}, root={self.root!r})"

    def new_native(self, shared: Any) -> "native.AgentTool":
        """Creates the libagent tool (the caller frees its reference after handing it on)."""
        from ._agent import HOOK_TRAMPOLINE, _HookSite

        options = native.dumps(dict(self._options, tools=[self.name]))
        root = native.encode(self.root)
        tools = (native.AgentTool * 1)()
        count = ctypes.c_size_t()

        def create(key: Optional[int]) -> Any:
            return native.lib.agent_coding_tools_new(
                root, len(root), options, len(options), HOOK_TRAMPOLINE if key else native.HookFn(), key,
                native.FINALIZER if key else native.NULL_FINALIZER, tools, 1, ctypes.byref(count))

        if self._consent is None:
            native.check(create(None))
        else:
            native.register(_HookSite(_consent_hook(self._consent), shared), create)
        return tools[0]


def _answer(verdict: Any) -> Any:
    if verdict is None or verdict is True:
        return None
    if isinstance(verdict, str):
        return {"allow": False, "reason": verdict}
    return {"allow": False}


def _consent_hook(consent: Consent) -> Callable[[Dict[str, Any]], Any]:
    if inspect.iscoroutinefunction(consent):
        async def ask_async(request: Dict[str, Any]) -> Any:
            return _answer(await consent(request["tool"], request["args"]))
        return ask_async

    def ask(request: Dict[str, Any]) -> Any:
        return _answer(consent(request["tool"], request["args"]))
    return ask


def coding_tools(root: str, *, tools: Optional[Sequence[str]] = None, bash: bool = False,
                 bash_timeout_ms: Optional[int] = 120_000, refuse_hard_links: bool = False,
                 consent: Optional[Consent] = None) -> List[CodingTool]:
    """The coding tools for `root` (an existing directory).

    Every path the file tools use stays inside `root`: paths that lead out of it are refused, and
    named pipes, sockets and devices are refused without blocking. bash is not confined: its
    commands run with this process's rights and can read and write anywhere the process can;
    `consent` is its only gate. A file hard-linked into `root` from outside is read like any
    other unless `refuse_hard_links`.

    - `tools`: which tools, in order (default: all but bash, or all seven with `bash=True`);
    - `bash`: bash is off unless enabled; `bash_timeout_ms`: its default timeout (None: none);
    - `refuse_hard_links`: read, edit and grep refuse files with more than one hard link (grep
      skips them when searching a directory);
    - `consent(tool, args)`: asked before write, edit and bash change anything; return True or
      None to allow, False or a reason (str) to refuse. A plain function runs on a worker thread,
      so it may wait for the user (`input()`): only its own run waits; `async def` works too.
    """
    names = list(tools) if tools is not None else [n for n in ALL_TOOLS if bash or n != "bash"]
    options = {"bash": bash, "bashTimeoutMs": bash_timeout_ms, "refuseHardLinks": refuse_hard_links}
    # Checked now, so a wrong name or root fails here and not when an agent is made.
    probe = (native.AgentTool * len(ALL_TOOLS))()
    count = ctypes.c_size_t()
    root_bytes, options_json = native.encode(str(root)), native.dumps(dict(options, tools=names))
    native.check(native.lib.agent_coding_tools_new(
        root_bytes, len(root_bytes), options_json, len(options_json), native.HookFn(), None,
        native.NULL_FINALIZER, probe, len(ALL_TOOLS), ctypes.byref(count)))
    for i in range(count.value):
        native.take_error(native.lib.agent_tool_free(probe[i]))
    return [CodingTool(name, str(root), options, consent) for name in names]

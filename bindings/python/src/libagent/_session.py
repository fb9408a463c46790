"""The Session class: an owning wrapper of an `AgentSession` (a pi-coding-agent session file, or a
session kept in memory)."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _native as native

PathLike = Union[str, "os.PathLike[str]"]


def _options(cwd: Optional[PathLike], durability: Optional[str]) -> Optional[bytes]:
    options: Dict[str, Any] = {}
    if cwd is not None:
        options["cwd"] = os.fspath(cwd)
    if durability is not None:
        options["durability"] = durability
    return native.dumps(options) if options else None


def _take_text(fn: Any, *args: Any) -> str:
    """Calls `fn(*args, char **out, size_t *len)` and returns the text it wrote (freed)."""
    out, size = ctypes.c_void_p(), ctypes.c_size_t()
    native.check(fn(*args, ctypes.byref(out), ctypes.byref(size)))
    try:
        return ctypes.string_at(out.value, size.value).decode("utf-8")
    finally:
        native.lib.agent_string_free(out)


class Session(native.Closable):
    """A conversation kept as pi-coding-agent's session file (JSONL, version 3: a tree of entries
    whose leaf is the current position), or in memory. Pass it to `Agent(session=...)`: the agent
    starts from the session's context and appends every message it commits (and every model and
    thinking-level change) as it runs. A session serves one agent at a time.

        with Session.open("chat.jsonl") as session, Agent(session=session, ...) as agent:
            agent.prompt("Where were we?")

    Build one with `Session.open(path)`, `Session.create(directory)`,
    `Session.continue_recent(directory)` or `Session.in_memory()`; each takes `cwd=` (the working
    directory the session records; default: the process's) and, for files, `durability=`
    ("flush", the default: flushed per entry; or "fsync"). Failures raise SessionIOError (a
    file-system error naming the path), SessionLockedError (the file is open for writing
    elsewhere), NotASessionError (not a session file, or a newer version) or
    InvalidArgumentError (e.g. an entry id that is not in the session).

    `close()` (or `with`) releases it; an agent built with it keeps the file open until the
    agent is closed.
    """

    def __init__(self, handle: "native.AgentSession"):
        """Takes ownership of a raw handle; use the classmethods instead."""
        self._handle = handle
        self._open()

    @classmethod
    def _new(cls, fn: Any, *args: Any) -> "Session":
        handle = native.AgentSession()
        native.check(fn(*args, ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def open(cls, path: PathLike, *, cwd: Optional[PathLike] = None, durability: Optional[str] = None) -> "Session":
        """Opens the session file at `path`; a file that does not exist yet becomes a new
        session, written there with its first user or assistant message. Older versions are
        migrated as pi does."""
        return cls._new(native.lib.agent_session_open, *native.text(native.encode(os.fspath(path))),
                        *native.text(_options(cwd, durability)))

    @classmethod
    def create(cls, directory: PathLike, *, cwd: Optional[PathLike] = None,
               durability: Optional[str] = None) -> "Session":
        """A new session in `directory` (a new file named as pi names them, written with the
        first user or assistant message)."""
        return cls._new(native.lib.agent_session_create, *native.text(native.encode(os.fspath(directory))),
                        *native.text(_options(cwd, durability)))

    @classmethod
    def continue_recent(cls, directory: PathLike, *, cwd: Optional[PathLike] = None,
                        durability: Optional[str] = None) -> "Session":
        """The newest session file in `directory`, or a new session there when it has none."""
        return cls._new(native.lib.agent_session_continue_recent, *native.text(native.encode(os.fspath(directory))),
                        *native.text(_options(cwd, durability)))

    @classmethod
    def in_memory(cls, *, cwd: Optional[PathLike] = None) -> "Session":
        """A session that is never written to disk."""
        return cls._new(native.lib.agent_session_in_memory, *native.text(_options(cwd, None)))

    @staticmethod
    def directory(base: PathLike, cwd: PathLike) -> str:
        """pi's per-directory layout: the directory under `base` that holds the sessions of the
        working directory `cwd` (for `create` and `continue_recent`)."""
        return _take_text(native.lib.agent_session_directory, *native.text(native.encode(os.fspath(base))),
                          *native.text(native.encode(os.fspath(cwd))))

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def handle(self) -> "native.AgentSession":
        """The `AgentSession` (a ctypes struct), for calling the C ABI directly."""
        return self._handle

    def close(self) -> None:
        """Releases the session (idempotent). An agent built with it keeps it open until the
        agent is closed."""
        super().close()

    def _release(self) -> None:
        if self._handle:
            native.check(native.lib.agent_session_free(self._handle))

    # -- writing ---------------------------------------------------------------------------------

    def append(self, entry: Mapping[str, Any]) -> str:
        """Appends an entry `{"type": ..., ...}` at the leaf (libagent fills `id`, `parentId` and
        `timestamp`); returns its id. The entry becomes the leaf."""
        return _take_text(native.lib.agent_session_append, self._handle, *native.text(native.dumps(entry)))

    def label(self, target_id: str, label: Optional[str]) -> str:
        """Labels the entry `target_id` (pi's label entry; None or "" clears its label); returns
        the label entry's id."""
        entry: Dict[str, Any] = {"type": "label", "targetId": target_id}
        if label is not None:
            entry["label"] = label
        return self.append(entry)

    def branch(self, entry_id: str) -> None:
        """Moves the leaf to the entry `entry_id`: the next entry continues from there."""
        native.check(native.lib.agent_session_branch(self._handle, *native.text(native.encode(entry_id))))

    def reset_leaf(self) -> None:
        """Moves the leaf before the first entry: the next entry starts a new root."""
        native.check(native.lib.agent_session_branch(self._handle, None, 0))

    def branch_with_summary(self, entry_id: Optional[str], summary: Union[str, Mapping[str, Any]]) -> str:
        """Branches to `entry_id` (None: before the first entry) and appends a branch summary
        there (a text, or `{"summary", "details"?, "from_hook"?/"fromHook"?, "usage"?}`);
        returns its id."""
        if isinstance(summary, str):
            summary = {"summary": summary}
        else:
            summary = {("fromHook" if k == "from_hook" else k): v for k, v in summary.items()}
        entry = None if entry_id is None else native.encode(entry_id)
        return _take_text(native.lib.agent_session_branch_with_summary, self._handle, *native.text(entry),
                          *native.text(native.dumps(summary)))

    def fork(self, entry_id: str) -> None:
        """pi's createBranchedSession: a new session file holding the path from the root to
        `entry_id`; this Session writes to that file from then on."""
        native.check(native.lib.agent_session_fork(self._handle, *native.text(native.encode(entry_id))))

    # -- reading ---------------------------------------------------------------------------------

    def _get(self, part: int) -> Any:
        return native.take_json(native.lib.agent_session_get, self._handle, part)

    @property
    def header(self) -> Dict[str, Any]:
        """The header entry (`{"type": "session", "version": 3, "id", "timestamp", "cwd", ...}`)."""
        return self._get(native.SESSION_HEADER)

    @property
    def entries(self) -> List[Dict[str, Any]]:
        """Every entry but the header, in file order."""
        return self._get(native.SESSION_ENTRIES)

    @property
    def branch_path(self) -> List[Dict[str, Any]]:
        """The entries from the root to the leaf."""
        return self._get(native.SESSION_BRANCH)

    @property
    def context(self) -> Dict[str, Any]:
        """What an agent resumes from: `{"messages", "thinkingLevel", "model"}` at the leaf
        (compactions, branch summaries and context edits applied; `model` is
        `{"provider", "modelId"}` or None)."""
        return self._get(native.SESSION_CONTEXT)

    @property
    def messages(self) -> List[Dict[str, Any]]:
        """The context's messages."""
        return self.context["messages"]

    @property
    def llm_messages(self) -> List[Dict[str, Any]]:
        """The context's messages converted for a model."""
        return self._get(native.SESSION_LLM)

    @property
    def leaf_id(self) -> Optional[str]:
        """The leaf entry's id (None before the first entry)."""
        return self._get(native.SESSION_LEAF_ID)

    @property
    def path(self) -> Optional[str]:
        """The session file's path (None in memory)."""
        return self._get(native.SESSION_FILE)["path"]

    @property
    def exists(self) -> bool:
        """Whether the file is written yet (a new file is written with the first user or
        assistant message)."""
        return self._get(native.SESSION_FILE)["exists"]

    def __repr__(self) -> str:
        if self._closed:
            return "Session(closed)"
        return f"Session({self.path!r})" if self.path else "Session(in memory)"

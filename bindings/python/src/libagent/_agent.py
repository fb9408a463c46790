"""The Agent class: an owning wrapper of an `AgentHandle`."""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import re
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _dispatch as dispatch
from . import _native as native
from ._dispatch import Dispatcher
from ._errors import (NO_MODEL, PROVIDER_APIS, AgentError, AgentTimeoutError, InvalidJsonError, NoStreamFnError,
                      WouldDeadlockError)
from ._events import Event, EventStream, Subscription, new_subscription
from ._run import Run, RunOutcome
from ._session import Session
from ._stream import STREAM_TRAMPOLINE, StreamSite
from ._mcp import MCP, mcp_sets
from ._tools import Tool, new_native_tool, release_native_tool

Message = Dict[str, Any]


class _Shared:
    """State the trampolines of one agent need (never the Agent itself, so that an unreferenced
    Agent can be collected): the event loop that runs its coroutines during an async run, and
    whether plain callbacks run inline (host-pumped: on the dispatching thread)."""

    def __init__(self, inline: bool = False) -> None:
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.inline = inline


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def user_message(text: str, images: Optional[Sequence[Mapping[str, Any]]] = None) -> Message:
    """A user message with a text block (and image blocks)."""
    content: List[Any] = [{"type": "text", "text": text}]
    content.extend(images or [])
    return {"role": "user", "content": content, "timestamp": int(time.time() * 1000)}


def message_text(message: Mapping[str, Any]) -> str:
    """The concatenated text blocks of a message."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if block.get("type") == "text")


# -- trampolines ---------------------------------------------------------------------------------

class _HookSite:
    def __init__(self, fn: Callable[[Any], Any], shared: Optional[_Shared]):
        self.fn = fn
        self.shared = shared


def _hook_answer(value: Any) -> Optional[bytes]:
    return None if value is None else native.dumps(value)


def _hook(user_data: Optional[int], input_json: Optional[int], input_len: int, handle: Any) -> None:
    # A plain hook may block (a consent asks its user): it runs on a worker, as a plain tool does,
    # so that the runtime thread every agent shares goes on; the run waits for its answer.
    call = dispatch.hook_call(handle)
    try:
        site = native.REGISTRY.get(user_data)
        value = native.loads(native.bytes_at(input_json, input_len))
        shared = site.shared
        loop = shared.loop if shared is not None else None
        inline = shared is not None and shared.inline
        dispatch.run(site.fn, (value,), call, _hook_answer, inline=inline, loop=loop)
    except BaseException as error:  # noqa: BLE001 - never propagate into libagent
        dispatch.fail(call, dispatch.error_text(error))


HOOK_TRAMPOLINE = native.HookFn(_hook)
_NULL_HOOK = native.HookFn()
_NULL_STREAM = native.StreamFn()


def _hook_kind(name: str) -> int:
    key = _snake(name)
    if key not in native.HOOK_KINDS:
        raise ValueError(f"unknown hook {name!r} (one of {', '.join(native.HOOK_KINDS)})")
    return native.HOOK_KINDS[key]


def _refuse_on_runtime_thread(what: str) -> None:
    if dispatch.in_callback():
        raise WouldDeadlockError(
            f"{what} would block libagent's runtime thread or a dispatch (called inside a callback), where the "
            "run can never finish: use start() or the *_async variant, or call it from another thread")


_LIVE: "weakref.WeakSet[Agent]" = weakref.WeakSet()


# Whether a process-wide default model was set through this module: it then takes precedence
# over choosing the built-in providers from the model's api.
_default_model_set = False

_NO_MODEL = NO_MODEL


def _unknown_keyword(error: AgentError, names: Mapping[str, str], function: str) -> AgentError:
    """An option libagent does not know is a keyword argument the function does not take: the
    TypeError Python raises for one, naming the keyword the caller wrote."""
    if isinstance(error, InvalidJsonError):
        for snake, camel in names.items():
            if error.message in (f'Unknown option "{camel}".', f'Unknown option "{snake}".'):
                return TypeError(f"{function} got an unexpected keyword argument {snake!r}")
    return _python_names(error, names)


# Options whose value is an object of settings, spelt in snake_case too (`reserve_tokens`).
_NESTED_OPTIONS = ("compaction", "retry")


def _settings_json(settings: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The options JSON of keyword arguments (camelCase keys, also inside `compaction` and
    `retry`), and the snake_case names the caller wrote for each key, for error messages."""
    names = {k: _camel(k) for k in settings}
    options: Dict[str, Any] = {}
    for key, value in settings.items():
        if key in _NESTED_OPTIONS and isinstance(value, Mapping):
            members = {str(k): _camel(str(k)) for k in value}
            names.update({k: v for k, v in members.items() if k != v})
            value = {members[str(k)]: v for k, v in value.items()}
        options[names[key]] = value
    return options, names


def _python_names(error: AgentError, names: Mapping[str, str]) -> AgentError:
    """The error with the option names libagent quotes (camelCase JSON keys) given back as the
    keyword arguments the caller wrote."""
    if not isinstance(error, InvalidJsonError):
        return error
    message = error.message
    for snake, camel in names.items():
        message = message.replace(f'"{camel}"', f'"{snake}"')
    return type(error)(message) if message != error.message else error


class Agent(native.Closable):
    """An agent (SPEC §7). Options are keyword arguments:

    - `system_prompt`, `model` (a Model dict), `thinking_level`, `messages`: the initial state;
    - `tools`: `Tool`s (see `@tool`) or plain functions;
    - the model: `stream_fn`, a Python stream function (see libagent._stream); or `scripted`, a
      list of responses for libagent's built-in scripted model; or libagent's built-in providers
      (HTTP to an OpenAI-compatible, OpenAI Responses, Anthropic or Gemini endpoint), used when neither is given and
      `model["api"]` is one of PROVIDER_APIS and no process-wide default was set with
      `set_default_stream_fn` & co. (`use_providers=True` forces them, False never);
      the API key comes from a `get_api_key` hook or the provider's environment variable;
    - `hooks`: `{"before_tool_call": fn, ...}` (SPEC §7.1 names, snake_case or camelCase); a
      plain hook runs on a worker thread (it may block: only its run waits), an `async def` one
      on an event loop;
    - any other agent option in snake_case: `steering_mode`, `follow_up_mode`,
      `tool_execution`, `session_id`, `transport`, `thinking_budgets`, `max_retry_delay_ms`,
      `identity`, and for the providers `max_retries`, `max_retry_delay_ms`, `timeout_ms`,
      `connect_timeout_ms`, `idle_timeout_ms`, `ca_certificates`, `ca_certificate_file`
      (an unknown one is a TypeError, as for any function); context management (README "Long
      conversations", both off unless given): `compaction={"enabled": True, "reserve_tokens":
      16384, "keep_recent_tokens": 20000}` and `retry={"enabled": True, "max_retries": 3,
      "base_delay_ms": 2000, "max_delay_ms": 60000}` (snake_case or camelCase members);
    - `dispatcher`: a `Dispatcher`: host-pumped mode, every callback of this agent runs inside
      `dispatcher.dispatch()` (or a blocking wait) on the calling thread;
    - `session`: a `Session`: the agent starts from its context (messages, thinking level) and
      appends every message it commits, and model and thinking-level changes, as it runs (one
      agent per session; the Session may be closed once the agent is built);
    - `mcp`: an `MCP` set (or a list of them): the agent takes its servers' current tools at each
      turn, besides `tools`; a prompt first waits up to 10 s for servers still connecting.

    A run that fails (stopReason "error") raises ModelError carrying the errorMessage; an aborted
    run raises AbortedError.

    Close it with `close()` or use it as a context manager.
    """

    def __init__(self, *, system_prompt: Optional[str] = None, model: Optional[Mapping[str, Any]] = None,
                 thinking_level: Optional[str] = None, messages: Optional[Sequence[Message]] = None,
                 tools: Iterable[Union[Tool, Callable[..., Any]]] = (), stream_fn: Optional[Callable[[Any], Any]] = None,
                 scripted: Optional[Sequence[Mapping[str, Any]]] = None,
                 hooks: Optional[Mapping[str, Callable[[Any], Any]]] = None,
                 use_providers: Optional[bool] = None, dispatcher: Optional[Dispatcher] = None,
                 session: Optional[Session] = None, mcp: Union[MCP, Iterable[MCP], None] = None,
                 **settings: Any):
        self._handle = native.AgentHandle()
        self._open()
        self._shared = _Shared(inline=dispatcher is not None)
        if stream_fn is not None and scripted is not None:
            raise ValueError("give either stream_fn or scripted, not both")
        if use_providers and (stream_fn is not None or scripted is not None):
            raise ValueError("use_providers=True replaces the model: give no stream_fn or scripted with it")
        if use_providers is None:
            use_providers = (stream_fn is None and scripted is None and not _default_model_set
                             and isinstance(model, Mapping) and model.get("api") in PROVIDER_APIS)
        initial: Dict[str, Any] = {}
        for key, value in (("systemPrompt", system_prompt), ("model", model), ("thinkingLevel", thinking_level),
                           ("messages", messages)):
            if value is not None:
                initial[key] = list(value) if key == "messages" else value
        options_json, names = _settings_json(settings)
        if initial:
            options_json["initialState"] = initial
        kinds = [(_hook_kind(name), fn) for name, fn in (hooks or {}).items()]
        options = native.AgentOptions()
        try:
            native.check(native.lib.agent_options_new(*native.text(native.dumps(options_json)), ctypes.byref(options)))
        except AgentError as error:
            raise _unknown_keyword(error, names, "Agent()") from None
        try:
            for item in tools:
                tool_handle = new_native_tool(item, self._shared)
                error = native.take_error(native.lib.agent_options_add_tool(options, tool_handle))
                release_native_tool(item, tool_handle)
                if error is not None:
                    raise error
            for mcp_set in mcp_sets(mcp):
                native.check(native.lib.agent_options_add_mcp(options, mcp_set.handle))
            if stream_fn is not None:
                native.register(StreamSite(stream_fn, self._shared), lambda key: native.lib.agent_options_set_stream_fn(
                    options, STREAM_TRAMPOLINE, key, native.FINALIZER))
            elif scripted is not None:
                native.check(native.lib.agent_options_set_scripted_model(options, *native.text(native.dumps(list(scripted)))))
            elif use_providers:
                native.check(native.lib.agent_options_use_providers(options))
            for kind, fn in kinds:
                native.register(_HookSite(fn, self._shared), lambda key, kind=kind: native.lib.agent_options_set_hook(
                    options, kind, HOOK_TRAMPOLINE, key, native.FINALIZER))
            if dispatcher is not None:
                native.check(native.lib.agent_options_set_dispatcher(options, dispatcher.handle))
            if session is not None:
                if not isinstance(session, Session):
                    raise TypeError(f"session must be a libagent.Session, not {type(session).__name__}")
                native.check(native.lib.agent_options_set_session(options, session.handle))
        except BaseException:
            native.take_error(native.lib.agent_options_free(options))
            raise
        try:
            native.check(native.lib.agent_new(options, ctypes.byref(self._handle)))  # consumes the options
        except NoStreamFnError:
            raise NoStreamFnError(_NO_MODEL) from None
        self.dispatcher = dispatcher
        _LIVE.add(self)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def handle(self) -> "native.AgentHandle":
        """The `AgentHandle` (a ctypes struct), for calling the C ABI directly."""
        return self._handle

    def close(self) -> None:
        """Frees the agent (`agent_free`): an active run is cancelled (a `prompt` waiting on it
        raises FreedError), event streams end, and the tools, hooks and listeners are released.
        Idempotent; never blocks."""
        super().close()

    def _release(self) -> None:
        _LIVE.discard(self)
        if self._handle:
            native.check(native.lib.agent_free(self._handle))

    def _call(self, name: str, *args: Any) -> None:
        native.check(getattr(native.lib, name)(self._handle, *args))

    def _call_text(self, name: str, value: Any) -> None:
        """Calls `name(handle, json, len)` with `value` as JSON."""
        self._call(name, *native.text(native.dumps(value)))

    # -- runs ------------------------------------------------------------------------------------

    def _starter(self, input: Any, images: Optional[Sequence[Mapping[str, Any]]]) -> Callable[..., Any]:
        """The C call that starts a prompt run: `starter(done, key, out_run)`."""
        handle = self._handle
        if isinstance(input, str):
            images_json = None if images is None else native.dumps(list(images))
            text = native.encode(input)
            return lambda *run_args: native.lib.agent_prompt_text(handle, text, len(text), *native.text(images_json),
                                                                  *run_args)
        if images is not None:
            raise TypeError("images go with a text prompt")
        if not isinstance(input, (dict, list, tuple)):
            raise TypeError("a prompt is a str, a message dict or a list of messages")
        data = native.dumps(list(input) if isinstance(input, tuple) else input)
        return lambda *run_args: native.lib.agent_prompt(handle, data, len(data), *run_args)

    def _continue_starter(self) -> Callable[..., Any]:
        handle = self._handle
        return lambda *run_args: native.lib.agent_continue(handle, *run_args)

    def start(self, input: Union[str, Message, Sequence[Message]], *,
              images: Optional[Sequence[Mapping[str, Any]]] = None) -> Run:
        """Starts a prompt run and returns at once: the `Run` to `wait()` for (or `await`),
        `abort()` or read the `outcome` of. BusyError while another run is active."""
        return Run.start(self._starter(input, images))

    def start_continue(self) -> Run:
        """Starts a `continue()` run (see `start`)."""
        return Run.start(self._continue_starter())

    def _run_blocking(self, starter: Callable[..., Any], what: str) -> List[Message]:
        _refuse_on_runtime_thread(what)
        run = Run.start(starter)
        try:
            outcome = run.wait()
        except KeyboardInterrupt:
            run.abort()  # stop the run, let it settle
            run.wait()
            raise
        return outcome.check().messages

    async def _run_async(self, starter: Callable[..., Any]) -> RunOutcome:
        loop = asyncio.get_running_loop()
        shared = self._shared
        # Coroutines of this run (tools, hooks, stream) run on the caller's loop. Set before the
        # start (its first callbacks may come at once); restored when the start is refused
        # (BusyError: the active run keeps its loop).
        previous, shared.loop = shared.loop, loop
        try:
            run = Run.start(starter)
        except BaseException:
            shared.loop = previous
            raise

        def release_loop(_outcome: RunOutcome) -> None:
            if shared.loop is loop:
                shared.loop = None
        run.on_settle(release_loop)
        try:
            outcome = await asyncio.shield(run._future())
        except asyncio.CancelledError:
            run.abort()  # this run only: never one started later
            raise
        return outcome.check()

    def prompt(self, input: Union[str, Message, Sequence[Message]], *,
               images: Optional[Sequence[Mapping[str, Any]]] = None) -> List[Message]:
        """Runs a prompt (a text, a message or a list of messages) and waits until the run
        settled. Returns the messages the run appended to the transcript. Raises ModelError
        when the run ended with an error (a failed model request: its `message` is the
        errorMessage, its `messages` what the run appended), AbortedError when it was aborted,
        BusyError while another run is active."""
        return self._run_blocking(self._starter(input, images), "prompt()")

    async def prompt_async(self, input: Union[str, Message, Sequence[Message]], *,
                           images: Optional[Sequence[Mapping[str, Any]]] = None) -> RunOutcome:
        """`prompt` for asyncio: returns the run's `RunOutcome` (its `messages` are what the run
        appended); raises as `prompt` does for a run that did not complete. Coroutine tools,
        hooks and stream functions of this run run on the calling loop. Cancelling it aborts
        the run."""
        return await self._run_async(self._starter(input, images))

    def continue_(self) -> List[Message]:
        """`continue()` (SPEC §7.7): resumes from the transcript; waits until the run settled."""
        return self._run_blocking(self._continue_starter(), "continue_()")

    async def continue_async(self) -> RunOutcome:
        """`continue_` for asyncio (see `prompt_async`)."""
        return await self._run_async(self._continue_starter())

    def _compact_starter(self, focus: Optional[str]) -> Callable[..., Any]:
        handle = self._handle
        text = native.encode(focus or "")
        return lambda *run_args: native.lib.agent_compact(handle, text or None, len(text), *run_args)

    def start_compact(self, focus: Optional[str] = None) -> Run:
        """Starts a `compact()` run (see `start`)."""
        return Run.start(self._compact_starter(focus))

    def compact(self, focus: Optional[str] = None) -> RunOutcome:
        """Compacts the conversation now: the older messages are replaced by a summary (from the
        `compact` hook or the agent's own model) and the recent ones kept; `focus` says what the
        summary should keep in particular. Waits until it settled and returns its `RunOutcome`.
        The events are "compaction_start" and "compaction_end" (reason "manual"). Raises
        RunFailedError when there is nothing to compact or no summary could be made,
        AbortedError when it was aborted or the hook cancelled (the transcript is then as it
        was), BusyError during a run."""
        _refuse_on_runtime_thread("compact()")
        run = Run.start(self._compact_starter(focus))
        try:
            outcome = run.wait()
        except KeyboardInterrupt:
            run.abort()
            run.wait()
            raise
        return outcome.check()

    async def compact_async(self, focus: Optional[str] = None) -> RunOutcome:
        """`compact` for asyncio (see `prompt_async`)."""
        return await self._run_async(self._compact_starter(focus))

    def steer(self, message: Union[str, Message]) -> None:
        """Queues a steering message (a text becomes a user message)."""
        self._call_text("agent_steer", user_message(message) if isinstance(message, str) else message)

    def follow_up(self, message: Union[str, Message]) -> None:
        """Queues a follow-up message (a text becomes a user message)."""
        self._call_text("agent_follow_up", user_message(message) if isinstance(message, str) else message)

    def abort(self) -> None:
        """Aborts the active run, whichever it is (nothing when idle); `Run.abort()` aborts one
        run only."""
        self._call("agent_abort")

    def wait_for_idle(self, timeout: Optional[float] = None) -> None:
        """Blocks until no run is active (AgentTimeoutError after `timeout` seconds)."""
        result = ctypes.c_int32()
        with dispatch.pumping():  # an agent built with a dispatcher is dispatched while it waits
            self._call("agent_wait_for_idle", -1 if timeout is None else int(timeout * 1000), ctypes.byref(result))
        if result.value != native.WAIT_DONE:
            raise AgentTimeoutError(f"The agent did not become idle within {timeout} seconds.")

    def reset(self) -> None:
        """`reset()` (SPEC §7.16): clears the transcript, queues and error; BusyError during a run."""
        self._call("agent_reset")

    # -- state -----------------------------------------------------------------------------------

    def _owned_json(self, name: str, *args: Any) -> Any:
        return native.take_json(getattr(native.lib, name), self._handle, *args)

    @property
    def state(self) -> Dict[str, Any]:
        """A snapshot of the agent's state (`agent_get_state`), camelCase keys as in SPEC §7."""
        return self._owned_json("agent_get_state")

    @property
    def messages(self) -> List[Message]:
        """The transcript."""
        return self._owned_json("agent_get_messages", 0, ctypes.c_size_t(-1).value)

    def set_messages(self, messages: Sequence[Message]) -> None:
        self._call_text("agent_set_messages", list(messages))

    def set_tools(self, tools: Iterable[Union[Tool, Callable[..., Any]]]) -> None:
        """Replaces the tools (effective at the next run)."""
        items = list(tools)
        handles = []
        try:
            for item in items:
                handles.append(new_native_tool(item, self._shared))
            array = (native.AgentTool * max(1, len(handles)))(*handles)
            self._call("agent_set_tools", array, len(handles))
        finally:
            for item, tool_handle in zip(items, handles):
                release_native_tool(item, tool_handle)

    def configure(self, **fields: Any) -> None:
        """Changes reassignable settings (`model`, `thinking_level`, `steering_mode`,
        `follow_up_mode`, `tool_execution`, `session_id`, ...; None unsets the optional ones)."""
        patch, names = _settings_json(fields)
        try:
            self._call_text("agent_configure", patch)
        except AgentError as error:
            raise _unknown_keyword(error, names, "configure()") from None

    def set_hook(self, name: str, fn: Optional[Callable[[Any], Any]]) -> None:
        """Installs (or with None removes) a hook."""
        kind = _hook_kind(name)
        if fn is None:
            self._call("agent_set_hook", kind, _NULL_HOOK, None, native.NULL_FINALIZER)
            return
        native.register(_HookSite(fn, self._shared), lambda key: native.lib.agent_set_hook(
            self._handle, kind, HOOK_TRAMPOLINE, key, native.FINALIZER))

    def set_stream_fn(self, fn: Optional[Callable[[Any], Any]]) -> None:
        """Replaces the model (None: the process-wide default)."""
        if fn is None:
            self._call("agent_set_stream_fn", _NULL_STREAM, None, native.NULL_FINALIZER)
            return
        native.register(StreamSite(fn, self._shared), lambda key: native.lib.agent_set_stream_fn(
            self._handle, STREAM_TRAMPOLINE, key, native.FINALIZER))

    def set_scripted_model(self, script: Sequence[Mapping[str, Any]]) -> None:
        self._call_text("agent_set_scripted_model", list(script))

    def use_providers(self) -> None:
        """Talks to the model through libagent's built-in providers from the next run on."""
        self._call("agent_use_providers")

    # -- queues ----------------------------------------------------------------------------------

    def peek_queued_messages(self) -> List[Message]:
        return self._owned_json("agent_peek_queued_messages")

    def has_queued_messages(self) -> bool:
        out = ctypes.c_bool(False)
        self._call("agent_has_queued_messages", ctypes.byref(out))
        return bool(out.value)

    def clear_steering_queue(self) -> None:
        self._call("agent_clear_steering_queue")

    def clear_follow_up_queue(self) -> None:
        self._call("agent_clear_follow_up_queue")

    def clear_all_queues(self) -> None:
        self._call("agent_clear_all_queues")

    # -- events ----------------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[Event], Any], *, shape: str = "full") -> Subscription:
        """Calls `callback(event)` for every `Event`, on libagent's runtime thread, which every
        agent shares: a plain callback must not block (make it `async def` for slow work: its
        run waits for it, other agents do not). The event's fields cost
        nothing; `event.json()` (in `shape`, "full" or "lean") builds its JSON when asked. An
        exception fails the run (SPEC §7.11). Returns a Subscription: call `.unsubscribe()` (or
        use it with `with`)."""
        return new_subscription(self, callback, shape, self._shared)

    def events(self, *, shape: str = "full", capacity: int = 1024, until: Optional[str] = None) -> EventStream:
        """A lossless stream of every `Event` from now on (the C pull queue): iterate it with
        `for` or `async for`; it ends when the agent is closed, after an event of type `until`,
        or when closed (`close()`, `with`, `async with`). `shape` is the default of the
        events' `json()`."""
        return EventStream(self._handle, shape=shape, capacity=capacity, until=until)


def set_default_stream_fn(fn: Optional[Callable[[Any], Any]]) -> None:
    """Sets (None: clears) the process-wide default stream function, captured by agents built
    later without a model of their own."""
    global _default_model_set
    if fn is None:
        native.check(native.lib.agent_set_default_stream_fn(_NULL_STREAM, None, native.NULL_FINALIZER))
        _default_model_set = False
        return
    native.register(StreamSite(fn, None),
                    lambda key: native.lib.agent_set_default_stream_fn(STREAM_TRAMPOLINE, key, native.FINALIZER))
    _default_model_set = True


def set_default_scripted_model(script: Sequence[Mapping[str, Any]]) -> None:
    global _default_model_set
    native.check(native.lib.agent_set_default_scripted_model(*native.text(native.dumps(list(script)))))
    _default_model_set = True


def set_default_providers() -> None:
    """Makes libagent's built-in providers the process-wide default model."""
    global _default_model_set
    native.check(native.lib.agent_set_default_providers())
    _default_model_set = True


# How long the interpreter's exit waits for libagent to release the host objects it still holds.
EXIT_DRAIN_SECONDS = 5.0


@atexit.register
def _close_all() -> None:
    # No libagent callback may reach Python while the interpreter finalizes: a thread that takes
    # the GIL then is ended with pthread_exit, whose unwinding through Rust frames aborts the
    # process. So close every agent, then wait until libagent has run the finalizers it still
    # owes (after agent_free they run later, on the runtime thread).
    for agent in list(_LIVE):
        try:
            agent.close()
        except BaseException:  # noqa: BLE001
            pass
    try:
        native.take_error(native.lib.agent_set_default_stream_fn(_NULL_STREAM, None, native.NULL_FINALIZER))
    except BaseException:  # noqa: BLE001
        pass
    if not native.REGISTRY.wait_empty(EXIT_DRAIN_SECONDS):
        dispatch.log.warning("libagent: %d host objects were not released before exit", len(native.REGISTRY))

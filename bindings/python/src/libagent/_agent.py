"""The Agent class: an owning wrapper of an `AgentHandle`."""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import re
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _dispatch as dispatch
from . import _native as native
from ._errors import NO_MODEL, OK, AgentError, InvalidJsonError, NoStreamFnError, WouldDeadlockError, error_for
from ._events import EventStream, Subscription, new_subscription
from ._stream import STREAM_TRAMPOLINE, StreamSite
from ._tools import Tool, new_native_tool

Message = Dict[str, Any]


class _Shared:
    """State the trampolines of one agent need (never the Agent itself, so that an unreferenced
    Agent can be collected): the event loop that runs its coroutines during an async run."""

    def __init__(self) -> None:
        self.loop: Optional[asyncio.AbstractEventLoop] = None


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


def _hook(user_data: Optional[int], input_json: bytes, call: int) -> None:
    try:
        native.mark_runtime_thread()
        site = native.REGISTRY.get(user_data)
        value = native.loads(input_json)
        loop = site.shared.loop if site.shared is not None else None
        dispatch.run(site.fn, (value,), call, _hook_answer, inline=True, loop=loop)
    except BaseException as error:  # noqa: BLE001 - never propagate into libagent
        dispatch.fail(call, dispatch.error_text(error))


def _done(user_data: Optional[int], status: int, error: Optional[bytes]) -> None:
    # Not marked as a runtime thread: `done` also runs inside agent_free, on the caller's thread.
    try:
        callback = native.REGISTRY.get(user_data)
        native.REGISTRY.release(user_data)
        if callback is not None:
            callback(status, (error or b"").decode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001
        dispatch.log.exception("libagent: a done callback failed")


HOOK_TRAMPOLINE = native.HookFn(_hook)
DONE_TRAMPOLINE = native.DoneFn(_done)
_NULL_HOOK = native.HookFn()
_NULL_STREAM = native.StreamFn()


def _hook_kind(name: str) -> int:
    key = _snake(name)
    if key not in native.HOOK_KINDS:
        raise ValueError(f"unknown hook {name!r} (one of {', '.join(native.HOOK_KINDS)})")
    return native.HOOK_KINDS[key]


def _refuse_on_runtime_thread(what: str) -> None:
    if threading.get_ident() in native.RUNTIME_THREADS:
        raise WouldDeadlockError(
            f"{what} would block libagent's runtime thread (called inside a callback), where the run "
            "can never finish: use the *_async variant or start it from another thread")


_LIVE: "weakref.WeakSet[Agent]" = weakref.WeakSet()

# The APIs libagent's built-in providers speak (pi-ai's streamSimple).
PROVIDER_APIS = ("openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai")

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


def _python_names(error: AgentError, names: Mapping[str, str]) -> AgentError:
    """The error with the option names libagent quotes (camelCase JSON keys) given back as the
    keyword arguments the caller wrote."""
    if not isinstance(error, InvalidJsonError):
        return error
    message = error.message
    for snake, camel in names.items():
        message = message.replace(f'"{camel}"', f'"{snake}"')
    return type(error)(message) if message != error.message else error


def _outcome(handle: Optional[int], status: int, error: str) -> "tuple[int, str]":
    """A settled run's outcome: `done`'s status unless the run completed as the reference's
    promise does, then how it really ended (agent_last_run_outcome: ModelError, AbortedError).
    Called inside `done`, where the outcome belongs to this run."""
    if status != OK or handle is None:
        return status, error
    ended, message = ctypes.c_int32(OK), ctypes.c_void_p()
    if native.lib.agent_last_run_outcome(handle, ctypes.byref(ended), ctypes.byref(message)) != OK:
        return status, error
    text = native.take_string(message)
    return ended.value, text


class Agent:
    """An agent (SPEC §7). Options are keyword arguments:

    - `system_prompt`, `model` (a Model dict), `thinking_level`, `messages`: the initial state;
    - `tools`: `Tool`s (see `@tool`) or plain functions;
    - the model: `stream_fn`, a Python stream function (see libagent._stream); or `scripted`, a
      list of responses for libagent's built-in scripted model; or libagent's built-in providers
      (HTTP to an OpenAI-compatible, OpenAI Responses, Anthropic or Gemini endpoint), used when neither is given and
      `model["api"]` is one of PROVIDER_APIS and no process-wide default was set with
      `set_default_stream_fn` & co. (`use_providers=True` forces them, False never);
      the API key comes from a `get_api_key` hook or the provider's environment variable;
    - `hooks`: `{"before_tool_call": fn, ...}` (SPEC §7.1 names, snake_case or camelCase);
    - any other agent option in snake_case: `steering_mode`, `follow_up_mode`,
      `tool_execution`, `session_id`, `transport`, `thinking_budgets`, `max_retry_delay_ms`,
      `identity`, and for the providers `max_retries`, `max_retry_delay_ms`, `timeout_ms`,
      `connect_timeout_ms`, `idle_timeout_ms`, `ca_certificates`, `ca_certificate_file`
      (an unknown one is a TypeError, as for any function).

    A run that fails (stopReason "error") raises ModelError carrying the errorMessage; an aborted
    run raises AbortedError.

    Close it with `close()` or use it as a context manager.
    """

    def __init__(self, *, system_prompt: Optional[str] = None, model: Optional[Mapping[str, Any]] = None,
                 thinking_level: Optional[str] = None, messages: Optional[Sequence[Message]] = None,
                 tools: Iterable[Union[Tool, Callable[..., Any]]] = (), stream_fn: Optional[Callable[[Any], Any]] = None,
                 scripted: Optional[Sequence[Mapping[str, Any]]] = None,
                 hooks: Optional[Mapping[str, Callable[[Any], Any]]] = None,
                 use_providers: Optional[bool] = None, **settings: Any):
        self._handle: Optional[int] = None
        self._closed = False
        self._close_lock = threading.Lock()
        self._shared = _Shared()
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
        names = {k: _camel(k) for k in settings}
        options_json: Dict[str, Any] = {names[k]: v for k, v in settings.items()}
        if initial:
            options_json["initialState"] = initial
        kinds = [(_hook_kind(name), fn) for name, fn in (hooks or {}).items()]
        options = ctypes.c_void_p()
        try:
            native.check(native.lib.agent_options_new(native.dumps(options_json), ctypes.byref(options)))
        except AgentError as error:
            raise _unknown_keyword(error, names, "Agent()") from None
        try:
            for item in tools:
                tool_handle = new_native_tool(item, self._shared)
                status = native.lib.agent_options_add_tool(options, tool_handle)
                error = None if status == OK else native.error_for_last(status)
                native.lib.agent_tool_free(tool_handle)
                if error is not None:
                    raise error
            if stream_fn is not None:
                self._register(lambda key: native.lib.agent_options_set_stream_fn(
                    options, STREAM_TRAMPOLINE, key, native.FINALIZER), StreamSite(stream_fn, self._shared))
            elif scripted is not None:
                native.check(native.lib.agent_options_set_scripted_model(options, native.dumps(list(scripted))))
            elif use_providers:
                native.check(native.lib.agent_options_use_providers(options))
            for kind, fn in kinds:
                self._register(lambda key, kind=kind: native.lib.agent_options_set_hook(
                    options, kind, HOOK_TRAMPOLINE, key, native.FINALIZER), _HookSite(fn, self._shared))
        except BaseException:
            native.lib.agent_options_free(options)
            raise
        handle = ctypes.c_void_p()
        try:
            native.check(native.lib.agent_new(options, ctypes.byref(handle)))  # consumes the options
        except NoStreamFnError:
            raise NoStreamFnError(_NO_MODEL) from None
        self._handle = handle.value
        _LIVE.add(self)

    @staticmethod
    def _register(register: Callable[[int], int], site: Any) -> None:
        """Registers `site` under a new key and hands the key to libagent (released on failure)."""
        key = native.REGISTRY.add(site)
        status = register(key)
        if status != OK:
            error = native.error_for_last(status)
            native.REGISTRY.release(key)
            raise error

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def handle(self) -> Optional[int]:
        """The raw `AgentHandle*` (an int), for calling the C ABI directly."""
        return self._handle

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Frees the agent (`agent_free`): an active run is cancelled (a `prompt` waiting on it
        raises FreedError), event streams end, and the tools, hooks and listeners are released.
        Idempotent; never blocks."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        _LIVE.discard(self)
        if self._handle is not None:
            native.check(native.lib.agent_free(self._handle))

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not getattr(self, "_closed", True):
                self.close()
        except BaseException:  # noqa: BLE001 - interpreter shutdown, already freed...
            pass

    def _call(self, name: str, *args: Any) -> None:
        native.check(getattr(native.lib, name)(self._handle, *args))

    # -- runs ------------------------------------------------------------------------------------

    def _start(self, starter: Callable[[int], int], on_done: Callable[[int, str], None]) -> None:
        key = native.REGISTRY.add(on_done)
        status = starter(key)
        if status != OK:
            error = native.error_for_last(status)
            native.REGISTRY.release(key)  # done is not called for a run that did not start
            raise error

    def _prompt_starter(self, input: Any, images: Optional[Sequence[Mapping[str, Any]]]) -> Callable[[int], int]:
        handle = self._handle
        if isinstance(input, str):
            images_json = None if images is None else native.dumps(list(images))
            text = native.encode(input)
            return lambda key: native.lib.agent_prompt_text(handle, text, images_json, DONE_TRAMPOLINE, key)
        if images is not None:
            raise TypeError("images go with a text prompt")
        if not isinstance(input, (dict, list, tuple)):
            raise TypeError("a prompt is a str, a message dict or a list of messages")
        data = native.dumps(list(input) if isinstance(input, tuple) else input)
        return lambda key: native.lib.agent_prompt(handle, data, DONE_TRAMPOLINE, key)

    def _continue_starter(self) -> Callable[[int], int]:
        handle = self._handle
        return lambda key: native.lib.agent_continue(handle, DONE_TRAMPOLINE, key)

    def _run_blocking(self, starter: Callable[[int], int], what: str) -> List[Message]:
        _refuse_on_runtime_thread(what)
        settled = threading.Event()
        outcome: Dict[str, Any] = {}
        handle = self._handle

        def on_done(status: int, error: str) -> None:
            outcome["status"], outcome["error"] = _outcome(handle, status, error)
            settled.set()

        before = self._message_count()
        self._start(starter, on_done)
        try:
            settled.wait()
        except BaseException:
            self.abort()  # KeyboardInterrupt: stop the run, let it settle
            settled.wait()
            raise
        return self._settled(outcome["status"], outcome["error"], before)

    async def _run_async(self, starter: Callable[[int], int]) -> List[Message]:
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Any]" = loop.create_future()
        shared = self._shared
        handle = self._handle

        def on_done(status: int, error: str) -> None:
            if shared.loop is loop:
                shared.loop = None
            status, error = _outcome(handle, status, error)

            def settle() -> None:
                if not future.done():
                    future.set_result((status, error))
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the caller's loop is closed: nobody waits any more
                pass

        before = self._message_count()
        # Coroutines of this run (tools, hooks, stream) run on the caller's loop. Set before the
        # start (its first callbacks may come at once); restored when the start is refused
        # (BusyError: the active run keeps its loop).
        previous, shared.loop = shared.loop, loop
        try:
            self._start(starter, on_done)
        except BaseException:
            shared.loop = previous
            raise
        try:
            status, error = await asyncio.shield(future)
        except asyncio.CancelledError:
            self.abort()
            raise
        return self._settled(status, error, before)

    def _settled(self, status: int, error: str, before: int) -> List[Message]:
        if status != OK:
            failure = error_for(status, error)
            if not self._closed:
                failure.messages = self._messages_from(before)  # what the failed run appended
            raise failure
        return self._messages_from(before)

    def prompt(self, input: Union[str, Message, Sequence[Message]], *,
               images: Optional[Sequence[Mapping[str, Any]]] = None) -> List[Message]:
        """Runs a prompt (a text, a message or a list of messages) and waits until the run
        settled. Returns the messages the run appended to the transcript. Raises ModelError
        when the run ended with an error (a failed model request: its `message` is the
        errorMessage, its `messages` what the run appended), AbortedError when it was aborted,
        BusyError while another run is active."""
        return self._run_blocking(self._prompt_starter(input, images), "prompt()")

    async def prompt_async(self, input: Union[str, Message, Sequence[Message]], *,
                           images: Optional[Sequence[Mapping[str, Any]]] = None) -> List[Message]:
        """`prompt` for asyncio: coroutine tools, hooks and stream functions of this run run on
        the calling loop. Cancelling it aborts the run."""
        return await self._run_async(self._prompt_starter(input, images))

    def continue_(self) -> List[Message]:
        """`continue()` (SPEC §7.7): resumes from the transcript; waits until the run settled."""
        return self._run_blocking(self._continue_starter(), "continue_()")

    async def continue_async(self) -> List[Message]:
        return await self._run_async(self._continue_starter())

    def steer(self, message: Union[str, Message]) -> None:
        """Queues a steering message (a text becomes a user message)."""
        self._call("agent_steer", native.dumps(user_message(message) if isinstance(message, str) else message))

    def follow_up(self, message: Union[str, Message]) -> None:
        """Queues a follow-up message (a text becomes a user message)."""
        self._call("agent_follow_up", native.dumps(user_message(message) if isinstance(message, str) else message))

    def abort(self) -> None:
        """Aborts the active run (nothing when idle)."""
        self._call("agent_abort")

    def wait_for_idle(self, timeout: Optional[float] = None) -> None:
        """Blocks until no run is active (AgentTimeoutError after `timeout` seconds)."""
        self._call("agent_wait_for_idle", -1 if timeout is None else int(timeout * 1000))

    def reset(self) -> None:
        """`reset()` (SPEC §7.16): clears the transcript, queues and error; BusyError during a run."""
        self._call("agent_reset")

    # -- state -----------------------------------------------------------------------------------

    def _owned_json(self, name: str) -> Any:
        out = ctypes.c_void_p()
        self._call(name, ctypes.byref(out))
        return native.loads(native.take_string(out))

    @property
    def state(self) -> Dict[str, Any]:
        """A snapshot of the agent's state (`agent_get_state`), camelCase keys as in SPEC §7."""
        return self._owned_json("agent_get_state")

    @property
    def messages(self) -> List[Message]:
        """The transcript."""
        return self._messages_from(0) if native.HAS_MESSAGE_READS else self.state["messages"]

    def _message_count(self) -> int:
        if native.HAS_MESSAGE_READS:
            out = ctypes.c_size_t()
            self._call("agent_get_message_count", ctypes.byref(out))
            return out.value
        return len(self.state["messages"])

    def _messages_from(self, start: int) -> List[Message]:
        """The transcript from `start` on, without reading the whole state when the library
        has the cheap transcript reads."""
        if native.HAS_MESSAGE_READS:
            out = ctypes.c_void_p()
            self._call("agent_get_messages", start, ctypes.c_size_t(-1).value, ctypes.byref(out))
            return native.loads(native.take_string(out))
        return self.messages[start:]

    def set_messages(self, messages: Sequence[Message]) -> None:
        self._call("agent_set_messages", native.dumps(list(messages)))

    def set_tools(self, tools: Iterable[Union[Tool, Callable[..., Any]]]) -> None:
        """Replaces the tools (effective at the next run)."""
        handles = [new_native_tool(item, self._shared) for item in tools]
        try:
            array = (ctypes.c_void_p * max(1, len(handles)))(*handles)
            self._call("agent_set_tools", array, len(handles))
        finally:
            for tool_handle in handles:
                native.lib.agent_tool_free(tool_handle)

    def configure(self, **fields: Any) -> None:
        """Changes reassignable settings (`model`, `thinking_level`, `steering_mode`,
        `follow_up_mode`, `tool_execution`, `session_id`, ...; None unsets the optional ones)."""
        names = {k: _camel(k) for k in fields}
        try:
            self._call("agent_configure", native.dumps({names[k]: v for k, v in fields.items()}))
        except AgentError as error:
            raise _unknown_keyword(error, names, "configure()") from None

    def set_hook(self, name: str, fn: Optional[Callable[[Any], Any]]) -> None:
        """Installs (or with None removes) a hook."""
        kind = _hook_kind(name)
        if fn is None:
            self._call("agent_set_hook", kind, _NULL_HOOK, None, native.NULL_FINALIZER)
            return
        self._register(lambda key: native.lib.agent_set_hook(self._handle, kind, HOOK_TRAMPOLINE, key,
                                                             native.FINALIZER), _HookSite(fn, self._shared))

    def set_stream_fn(self, fn: Optional[Callable[[Any], Any]]) -> None:
        """Replaces the model (None: the process-wide default)."""
        if fn is None:
            self._call("agent_set_stream_fn", _NULL_STREAM, None, native.NULL_FINALIZER)
            return
        self._register(lambda key: native.lib.agent_set_stream_fn(self._handle, STREAM_TRAMPOLINE, key,
                                                                  native.FINALIZER), StreamSite(fn, self._shared))

    def set_scripted_model(self, script: Sequence[Mapping[str, Any]]) -> None:
        self._call("agent_set_scripted_model", native.dumps(list(script)))

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

    def subscribe(self, callback: Callable[[Dict[str, Any]], Any], *, shape: str = "full") -> Subscription:
        """Calls `callback(event)` for every event, on libagent's runtime thread (keep it quick,
        or make it `async def`: the loop waits for it either way). An exception fails the run
        (SPEC §7.11). Returns a Subscription: call `.unsubscribe()` (or use it with `with`)."""
        return new_subscription(self, callback, shape, self._shared)

    def events(self, *, shape: str = "full", capacity: int = 1024, until: Optional[str] = None) -> EventStream:
        """A lossless stream of every event from now on (the C pull queue): iterate it with
        `for` or `async for`; it ends when the agent is closed, after an event of type `until`,
        or when closed (`close()`, `with`, `async with`)."""
        return EventStream(self._handle, shape=shape, capacity=capacity, until=until)


def set_default_stream_fn(fn: Optional[Callable[[Any], Any]]) -> None:
    """Sets (None: clears) the process-wide default stream function, captured by agents built
    later without a model of their own."""
    global _default_model_set
    if fn is None:
        native.check(native.lib.agent_set_default_stream_fn(_NULL_STREAM, None, native.NULL_FINALIZER))
        _default_model_set = False
        return
    Agent._register(lambda key: native.lib.agent_set_default_stream_fn(STREAM_TRAMPOLINE, key, native.FINALIZER),
                    StreamSite(fn, None))
    _default_model_set = True


def set_default_scripted_model(script: Sequence[Mapping[str, Any]]) -> None:
    global _default_model_set
    native.check(native.lib.agent_set_default_scripted_model(native.dumps(list(script))))
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
        native.lib.agent_set_default_stream_fn(_NULL_STREAM, None, native.NULL_FINALIZER)
    except BaseException:  # noqa: BLE001
        pass
    if not native.REGISTRY.wait_empty(EXIT_DRAIN_SECONDS):
        dispatch.log.warning("libagent: %d host objects were not released before exit", len(native.REGISTRY))

"""Tools: `@tool` derives the JSON Schema of the arguments from the function's signature with
pydantic, validates the arguments libagent sends into the annotated Python types, and turns the
return value (or exception) into the answer of the tool call."""

from __future__ import annotations

import ctypes
import dataclasses
import inspect
import typing
from typing import Any, Callable, Dict, List, Optional, Union

import pydantic
import pydantic_core

from . import _dispatch as dispatch
from . import _native as native


class ToolContext:
    """Optional extra parameter of a tool (annotate a parameter with `ToolContext`): the call's
    id, whether the run was aborted, and progress updates."""

    def __init__(self, call: "dispatch.Call", tool_call_id: str):
        self._call = call
        self.tool_call_id = tool_call_id

    @property
    def aborted(self) -> bool:
        """True once the run that called the tool was aborted."""
        return self._call.is_aborted()

    def update(self, partial: Any) -> None:
        """Reports progress (`tool_execution_update`); a str becomes a text result."""
        data = native.dumps(tool_result(partial))
        native.check(native.lib.agent_tool_call_update(self._call.handle, data, len(data)))


@dataclasses.dataclass
class ToolResult:
    """A full tool result: text (or content blocks) for the model, details for the host."""

    content: Union[str, List[Dict[str, Any]]]
    details: Any = None
    is_error: bool = False
    terminate: bool = False
    structured_content: Any = None

    def to_json(self) -> Dict[str, Any]:
        content = [{"type": "text", "text": self.content}] if isinstance(self.content, str) else self.content
        result: Dict[str, Any] = {"content": content, "details": {} if self.details is None else self.details}
        if self.structured_content is not None:
            result["structuredContent"] = self.structured_content
        if self.is_error:
            result["isError"] = True
        if self.terminate:
            result["terminate"] = True
        return result


def tool_result(value: Any) -> Dict[str, Any]:
    """A tool's return value as an AgentToolResult object."""
    if isinstance(value, ToolResult):
        return value.to_json()
    if isinstance(value, dict) and "content" in value:
        return value
    if value is None:
        return {"content": [], "details": {}}
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}], "details": {}}
    details = pydantic_core.to_jsonable_python(value)
    return {"content": [{"type": "text", "text": pydantic_core.to_json(details).decode()}], "details": details}


class Tool:
    """An executable tool. Usually made with `@tool`; `parameters` given explicitly (a JSON Schema)
    skips the derivation and calls the function with the raw arguments as keyword arguments.
    A plain function runs on a worker thread, an `async def` one on an event loop;
    `prepare_arguments(args)` runs on libagent's runtime thread and must not block."""

    def __init__(self, fn: Callable[..., Any], *, name: Optional[str] = None, description: Optional[str] = None,
                 label: Optional[str] = None, parameters: Optional[Dict[str, Any]] = None,
                 execution_mode: Optional[str] = None,
                 prepare_arguments: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 **extra: Any):
        if not callable(fn):
            raise TypeError("a tool needs a callable")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.description = description if description is not None else (inspect.getdoc(fn) or "")
        self.label = label or self.name
        self.execution_mode = execution_mode
        self.prepare_arguments = prepare_arguments
        self.extra = extra
        self.is_async = inspect.iscoroutinefunction(fn)
        self._context_param: Optional[str] = None
        self._model: Optional[type] = None
        if parameters is not None:
            self.parameters = parameters
        else:
            self._model, self._context_param = _arguments_model(fn, self.name)
            self.parameters = _schema(self._model)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def definition(self) -> Dict[str, Any]:
        definition: Dict[str, Any] = {"name": self.name, "label": self.label, "description": self.description,
                                      "parameters": self.parameters}
        if self.execution_mode is not None:
            definition["executionMode"] = self.execution_mode
        definition.update(self.extra)
        return definition

    def bind(self, args: Dict[str, Any], context: ToolContext) -> Dict[str, Any]:
        """The keyword arguments of one call: validated into the annotated types."""
        if self._model is None:
            kwargs = dict(args)
        else:
            validated = self._model.model_validate(args)
            kwargs = {field: getattr(validated, field) for field in type(validated).model_fields}
        if self._context_param is not None:
            kwargs[self._context_param] = context
        return kwargs


def tool(fn: Optional[Callable[..., Any]] = None, **options: Any) -> Any:
    """Makes a Tool of a function (plain or `async def`): `@tool` or `@tool(name=..., label=...,
    description=..., execution_mode="sequential")`. The docstring is the description; parameter
    types (and `Annotated[..., Field(description=...)]`) give the JSON Schema."""
    if fn is None:
        return lambda f: Tool(f, **options)
    return Tool(fn, **options)


def _arguments_model(fn: Callable[..., Any], name: str):
    """A pydantic model of the function's parameters (the ToolContext one left out)."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward refs: fall back to raw annotations
        hints = {}
    fields: Dict[str, Any] = {}
    context_param = None
    for param in signature.parameters.values():
        annotation = hints.get(param.name, param.annotation)
        # (`ctx: ToolContext = None` reads as Optional[ToolContext] before Python 3.11)
        if annotation is ToolContext or ToolContext in typing.get_args(annotation):
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs parameters cannot be described to a model")
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model = pydantic.create_model(name, **fields)  # type: ignore[call-overload]
    return model, context_param


def _schema(model: type) -> Dict[str, Any]:
    schema = model.model_json_schema()  # type: ignore[attr-defined]
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


# -- native tools --------------------------------------------------------------------------------

class _ToolCallSite:
    """What the execute trampoline needs: the tool, and the shared state of the agent it runs for
    (which event loop runs its coroutines). Never the Agent itself, so that an Agent nobody
    references can be collected (and closed) while libagent still holds its tools."""

    def __init__(self, tool: Tool, shared: Any):
        self.tool = tool
        self.shared = shared


def _execute(user_data: Optional[int], tool_call_id: Optional[int], tool_call_id_len: int,
             args_json: Optional[int], args_len: int, handle: Any) -> None:
    call = dispatch.tool_call(handle)
    try:
        site = native.REGISTRY.get(user_data)
        tool = site.tool
        context = ToolContext(call, native.text_at(tool_call_id, tool_call_id_len))
        args = native.loads(native.bytes_at(args_json, args_len))

        def invoke() -> Any:
            return tool.fn(**tool.bind(args, context))

        if tool.is_async:
            async def invoke_async() -> Any:
                return await tool.fn(**tool.bind(args, context))
            fn: Callable[..., Any] = invoke_async
        else:
            fn = invoke
        dispatch.run(fn, (), call, _convert_result, inline=site.shared.inline, loop=site.shared.loop,
                     cancel_on_abort=tool.is_async)
    except BaseException as error:  # noqa: BLE001 - never propagate into libagent
        dispatch.fail(call, dispatch.error_text(error))


def _convert_result(value: Any) -> bytes:
    return native.dumps(tool_result(value))


def _prepare(user_data: Optional[int], args_json: Optional[int], args_len: int, handle: Any) -> None:
    # Synchronous by contract (SPEC §5.2): it answers before returning.
    call = dispatch.hook_call(handle)
    try:
        site = native.REGISTRY.get(user_data)
        prepared = site.tool.prepare_arguments(native.loads(native.bytes_at(args_json, args_len)))
        dispatch.finish(call, lambda value: None if value is None else native.dumps(value), lambda: prepared)
    except BaseException as error:  # noqa: BLE001
        dispatch.fail(call, dispatch.error_text(error))


EXECUTE_TRAMPOLINE = native.ToolExecuteFn(_execute)
PREPARE_TRAMPOLINE = native.PrepareArgumentsFn(_prepare)


def release_native_tool(tool: Any, handle: "native.AgentTool") -> None:
    """Frees the reference `new_native_tool` made, once handed on (an MCP tool keeps its own)."""
    from ._mcp import McpTool

    if not isinstance(tool, McpTool):
        native.take_error(native.lib.agent_tool_free(handle))


def new_native_tool(tool: Any, shared: Any) -> "native.AgentTool":
    """The libagent tool for `tool`: a new one, or an MCP tool's own (after handing it on, the
    caller releases it with `release_native_tool`)."""
    from ._coding import CodingTool
    from ._mcp import McpTool

    if isinstance(tool, McpTool):
        return tool.handle
    if isinstance(tool, CodingTool):
        return tool.new_native(shared)
    if not isinstance(tool, Tool):
        tool = Tool(tool)
    out = native.AgentTool()
    definition = native.dumps(tool.definition())
    native.register(_ToolCallSite(tool, shared), lambda key: native.lib.agent_tool_new(
        definition, len(definition), EXECUTE_TRAMPOLINE, key, native.FINALIZER, ctypes.byref(out)))
    if tool.prepare_arguments is not None:
        try:
            native.register(_ToolCallSite(tool, shared), lambda key: native.lib.agent_tool_set_prepare_arguments(
                out, PREPARE_TRAMPOLINE, key, native.FINALIZER))
        except BaseException:
            native.take_error(native.lib.agent_tool_free(out))
            raise
    return out

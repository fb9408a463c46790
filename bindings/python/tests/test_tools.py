"""@tool: schema derivation with pydantic, argument validation, results, failures, concurrency."""

import enum
import threading
from typing import Annotated, List, Literal, Optional

import pydantic
import pytest

import libagent
from libagent import Agent, Tool, ToolContext, ToolResult, tool
from conftest import SAFETY_TIMEOUT, calls_reply, roles, text_reply, tool_call


class Point(pydantic.BaseModel):
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_schema_is_derived_from_type_hints_and_docstring():
    @tool(label="Draw")
    def draw(points: List[Point], color: Color,
             width: Annotated[int, pydantic.Field(description="Stroke width", ge=1)] = 2,
             style: Literal["solid", "dashed"] = "solid", title: Optional[str] = None,
             ctx: ToolContext = None) -> str:
        """Draw a polyline."""
        return "ok"

    assert isinstance(draw, Tool)
    assert (draw.name, draw.label, draw.description) == ("draw", "Draw", "Draw a polyline.")
    schema = draw.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["points", "color"]
    assert set(schema["properties"]) == {"points", "color", "width", "style", "title"}  # no ctx
    assert schema["properties"]["width"]["description"] == "Stroke width"
    assert schema["properties"]["width"]["minimum"] == 1
    assert schema["properties"]["style"]["enum"] == ["solid", "dashed"]
    assert schema["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert "title" not in schema


def test_star_args_cannot_be_a_tool():
    with pytest.raises(TypeError):
        tool(lambda *args: None)


def test_arguments_arrive_validated_as_python_types():
    received = {}

    @tool
    def draw(points: List[Point], color: Color, width: int = 2) -> dict:
        """Draw."""
        received.update(points=points, color=color, width=width)
        return {"segments": len(points) - 1}

    script = [calls_reply(tool_call("c1", "draw", {"points": [{"x": 1, "y": 2}, {"x": 3, "y": "4"}],
                                                   "color": "blue"})),
              text_reply("drawn")]
    with Agent(scripted=script, tools=[draw]) as agent:
        new = agent.prompt("draw")
    assert received["points"] == [Point(x=1, y=2), Point(x=3, y=4)]
    assert received["color"] is Color.BLUE and received["width"] == 2
    result = new[2]
    assert result["role"] == "toolResult" and result["isError"] is False
    assert result["details"] == {"segments": 1}
    assert libagent.message_text(result) == '{"segments":1}'


def test_libagent_rejects_arguments_that_do_not_match_the_schema():
    calls = []

    @tool
    def count(n: int) -> str:
        """Count."""
        calls.append(n)
        return "counted"

    script = [calls_reply(tool_call("c1", "count", {"n": "not a number"})), text_reply("ok")]
    with Agent(scripted=script, tools=[count]) as agent:
        new = agent.prompt("count")
    assert calls == []
    assert new[2]["isError"] is True


def test_a_tool_exception_is_the_error_the_model_sees():
    requests = []

    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise ConnectionError(f"cannot reach {url}")

    def model(request):
        requests.append(request)
        if len(requests) == 1:
            yield {"type": "start"}
            yield {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "fetch"}
            yield {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"url": "http://x"}'}
            yield {"type": "toolcall_end", "contentIndex": 0}
            yield {"type": "done", "reason": "toolUse"}
        else:
            yield "sorry"

    with Agent(stream_fn=model, tools=[fetch]) as agent:
        agent.prompt("get it")
    tool_result = requests[1]["context"]["messages"][-1]
    assert tool_result["role"] == "toolResult" and tool_result["isError"] is True
    assert libagent.message_text(tool_result) == "cannot reach http://x"


def test_result_forms_tool_result_dict_and_progress_updates():
    @tool
    def report(ctx: ToolContext) -> ToolResult:
        """Report."""
        ctx.update("halfway")
        assert not ctx.aborted
        return ToolResult("all good", details={"id": ctx.tool_call_id}, structured_content={"ok": True})

    @tool
    def raw() -> dict:
        """Raw."""
        return {"content": [{"type": "text", "text": "raw text"}], "details": {"raw": 1}}

    updates = []
    script = [calls_reply(tool_call("c1", "report", {}), tool_call("c2", "raw", {})), text_reply("ok")]
    with Agent(scripted=script, tools=[report, raw]) as agent:
        agent.subscribe(lambda e: updates.append(e.json()) if e.type == "tool_execution_update" else None)
        new = agent.prompt("go")
    results = {m["toolCallId"]: m for m in new if m["role"] == "toolResult"}
    assert libagent.message_text(results["c1"]) == "all good"
    assert results["c1"]["details"] == {"id": "c1"}
    assert libagent.message_text(results["c2"]) == "raw text" and results["c2"]["details"] == {"raw": 1}
    assert [u["partialResult"]["content"][0]["text"] for u in updates] == ["halfway"]


def test_raw_schema_tool_and_prepare_arguments():
    seen = []

    def legacy(path, **_):
        seen.append(path)
        return "read " + path

    read = Tool(legacy, name="read", description="Read a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                prepare_arguments=lambda args: {"path": args.pop("file", args.get("path"))})
    script = [calls_reply(tool_call("c1", "read", {"file": "a.txt"})), text_reply("ok")]
    with Agent(scripted=script, tools=[read]) as agent:
        new = agent.prompt("read")
    assert seen == ["a.txt"]
    assert libagent.message_text(new[2]) == "read a.txt"


def test_parallel_sync_tools_run_concurrently_on_worker_threads():
    barrier = threading.Barrier(2, timeout=SAFETY_TIMEOUT)
    threads = set()

    @tool
    def meet(who: str) -> str:
        """Meet."""
        threads.add(threading.current_thread().name)
        barrier.wait()  # both calls must be running at once, or this breaks
        return who

    script = [calls_reply(tool_call("c1", "meet", {"who": "a"}), tool_call("c2", "meet", {"who": "b"})),
              text_reply("met")]
    with Agent(scripted=script, tools=[meet]) as agent:
        new = agent.prompt("meet")
    assert [m["isError"] for m in new if m["role"] == "toolResult"] == [False, False]
    assert len(threads) == 2 and all(name.startswith("libagent-py-worker") for name in threads)


def test_set_tools_replaces_the_tools():
    @tool
    def one() -> str:
        """One."""
        return "1"

    @tool
    def two() -> str:
        """Two."""
        return "2"

    with Agent(scripted=[calls_reply(tool_call("c1", "two", {})), text_reply("ok")], tools=[one]) as agent:
        agent.set_tools([two])
        assert [t["name"] for t in agent.state["tools"]] == ["two"]
        new = agent.prompt("go")
        # the change is declared by a system message before the next request (SPEC §4.7)
        assert roles(new) == ["system", "user", "assistant", "toolResult", "assistant"]
        assert [t["name"] for t in new[0]["toolsAdded"]] == ["two"]
        assert new[0]["toolsRemoved"] == [{"name": "one"}]
        assert libagent.message_text(new[3]) == "2"


def test_hooks_block_a_call_and_a_failing_hook_fails_the_call():
    ran = []

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    def before_tool_call(context):
        assert context["toolCall"]["name"] == "delete" and context["args"] == {"path": "/etc"}
        return {"block": True, "reason": "not in /etc"}

    def after_tool_call(context):
        raise PermissionError("audit log unavailable")

    script = [calls_reply(tool_call("c1", "delete", {"path": "/etc"})), text_reply("ok"),
              calls_reply(tool_call("c2", "delete", {"path": "/tmp/x"})), text_reply("ok")]
    with Agent(scripted=script, tools=[delete], hooks={"before_tool_call": before_tool_call}) as agent:
        blocked = agent.prompt("delete /etc")[2]
        assert ran == [] and blocked["isError"] is True
        assert libagent.message_text(blocked) == "not in /etc"
        agent.set_hook("before_tool_call", None)
        agent.set_hook("afterToolCall", after_tool_call)
        failed = agent.prompt("delete /tmp/x")[2]
        assert ran == ["/tmp/x"] and failed["isError"] is True
        assert libagent.message_text(failed) == "audit log unavailable"

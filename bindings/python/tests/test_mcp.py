"""MCP servers' tools: real servers (the npm servers over stdio, one written with PyPI's `mcp` over
streamable HTTP) and hostile ones (tests/mcp/hostile/server.py), driven through libagent.MCP."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import libagent
from libagent import MCP, Agent, McpServer, McpTool, tool
from conftest import SAFETY_TIMEOUT, calls_reply, text_reply, tool_call

ROOT = Path(__file__).resolve().parents[3]
MODULES = ROOT / "build" / "mcp-servers" / "node_modules"
VENV_PYTHON = ROOT / "build" / "mcp-venv" / "bin" / "python"
HOSTILE = ROOT / "tests" / "mcp" / "hostile" / "server.py"


@pytest.fixture(scope="module")
def installed():
    """The real servers (tests/mcp/setup.sh installs them when missing; `make py-test` runs it
    first and sets LIBAGENT_REQUIRE_MCP, so there a failed install fails the tests)."""
    setup = subprocess.run(["bash", str(ROOT / "tests" / "mcp" / "setup.sh")], capture_output=True, text=True)
    if setup.returncode != 0:
        if os.environ.get("LIBAGENT_REQUIRE_MCP"):
            pytest.fail(f"tests/mcp/setup.sh failed:\n{setup.stderr}")
        pytest.skip(f"the MCP test servers could not be installed:\n{setup.stderr[-500:]}")


@pytest.fixture(scope="module")
def http_url(installed, tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("http-server") / "stderr"
    with open(log, "wb") as stderr:  # a file, not a pipe: a full pipe would stop the server
        server = subprocess.Popen([str(VENV_PYTHON), str(ROOT / "tests" / "mcp" / "http_server.py"), str(port)],
                                  stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 60  # importing mcp is slow on a busy machine
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the HTTP MCP server did not start: {log.read_text()}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.kill()
        server.wait()


def results(messages):
    return {m["toolCallId"]: (m["isError"], libagent.message_text(m)) for m in messages if m["role"] == "toolResult"}


def hostile(mode, pid_file, timeout=2):
    return {"command": sys.executable, "args": [str(HOSTILE), mode], "timeout": timeout,
            "env": {"MCP_PID_FILE": str(pid_file)}}


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead; libagent reaps its own children, but be exact about it.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_a_wrong_configuration_is_refused_and_a_wrong_entry_is_a_failed_server():
    with pytest.raises(libagent.InvalidJsonError, match="not valid JSON"):
        MCP("{")
    with pytest.raises(libagent.InvalidJsonError, match='"mcpServers" object'):
        MCP({"servers": {}})
    with pytest.raises(TypeError, match="dict or a JSON text"):
        MCP(42)
    with MCP({"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                             "off": {"command": "false", "enabled": False}}}) as mcp:
        assert mcp.wait(0)
        old, off = mcp.servers()
        assert old.state == "failed" and "legacy SSE transport is not supported" in old.last_error
        assert off == McpServer("off", "disabled", 0, None, ())
        assert mcp.tools() == []
    assert mcp.closed
    mcp.close()  # twice is harmless
    with pytest.raises(TypeError, match="libagent.MCP"):
        Agent(scripted=[], mcp=[{"mcpServers": {}}])


def test_real_servers_tools_are_called_by_an_agent(installed, http_url, tmp_path):
    (tmp_path / "hello.txt").write_text("hello from the filesystem server\n")
    config = {"mcpServers": {
        "everything": {"command": "node", "args": [str(MODULES / "@modelcontextprotocol/server-everything/dist/index.js"),
                                                   "stdio"]},
        "filesystem": {"command": "node", "args": [str(MODULES / "@modelcontextprotocol/server-filesystem/dist/index.js"),
                                                   str(tmp_path)]},
        "pyhttp": {"type": "http", "url": http_url, "headers": {"X-Home": "${HOME}"}},
    }}
    with MCP(json.dumps(config)) as mcp:
        assert mcp.wait(60), mcp.servers()
        assert [(s.name, s.state) for s in mcp.servers()] == [
            ("everything", "ready"), ("filesystem", "ready"), ("pyhttp", "ready")]
        tools = mcp.tools()
        assert sum(s.tool_count for s in mcp.servers()) == len(tools)
        by_name = {t.name: t for t in tools}
        assert by_name["mcp__pyhttp__shout_text"].label == "pyhttp/shout.text"
        assert by_name["mcp__pyhttp__add"].parameters["properties"].keys() == {"a", "b"}
        assert "mcp__everything__echo" in by_name and "mcp__filesystem__read_text_file" in by_name

        @tool
        def shout(text: str) -> str:
            "Upper-case a text."
            return text.upper()

        # The tools once, mixed with a Python tool.
        script = [
            calls_reply(tool_call("c1", "mcp__everything__echo", {"message": "hi there"}),
                        tool_call("c2", "mcp__filesystem__read_text_file", {"path": str(tmp_path / "hello.txt")}),
                        tool_call("c3", "mcp__filesystem__read_text_file", {"path": "/etc/hostname"}),
                        tool_call("c4", "mcp__pyhttp__add", {"a": 20, "b": 22}),
                        tool_call("c5", "shout", {"text": "ok"})),
            text_reply("done"),
        ]
        with Agent(tools=tools + [shout], scripted=script) as agent:
            got = results(agent.prompt("go"))
        assert got["c1"] == (False, "Echo: hi there")
        assert got["c2"] == (False, "hello from the filesystem server\n")
        assert got["c3"][0] and "Access denied" in got["c3"][1]
        assert got["c4"] == (False, "42")
        assert got["c5"] == (False, "OK")

        # The set attached: the agent takes its tools at each turn.
        with Agent(mcp=mcp, scripted=[calls_reply(tool_call("c6", "mcp__pyhttp__shout_text", {"text": "quiet"})),
                                      text_reply("done")]) as agent:
            assert results(agent.prompt("go"))["c6"] == (False, "QUIET")
    # Tools outlive their set; their calls then fail with a sentence saying so.
    with Agent(tools=[by_name["mcp__pyhttp__add"]],
               scripted=[calls_reply(tool_call("c7", "mcp__pyhttp__add", {"a": 1, "b": 2})), text_reply("done")]) as agent:
        is_error, text = results(agent.prompt("go"))["c7"]
    assert is_error and 'The MCP server of tool "add"' in text


def test_hostile_servers_fail_clearly_and_leave_no_process(installed, tmp_path):
    pids = tmp_path / "pids"
    # Timeouts: short where the test waits for them, generous where a busy machine's slow start
    # must not be taken for the failure under test.
    config = {"mcpServers": {"exits": hostile("exit", pids, 20), "noinit": hostile("no-init", pids),
                             "tools": hostile("tools", pids, 5), "stubborn": hostile("stubborn", pids, 20)}}
    mcp = MCP(config)
    try:
        assert mcp.wait(60)
        servers = {s.name: s for s in mcp.servers()}
        assert servers["exits"].state == "failed"
        assert "hostile: refusing to start (exit mode)" in servers["exits"].last_error
        assert 'MCP server "noinit" did not answer initialize within 2 s.' in servers["noinit"].last_error
        assert servers["tools"].state == "ready" and servers["tools"].tool_count == 5
        assert "bad_schema" in servers["tools"].skipped[0]
        script = [
            calls_reply(tool_call("h1", "mcp__tools__hang", {}), tool_call("h2", "mcp__tools__echo", {"text": "after hang"})),
            calls_reply(tool_call("h3", "mcp__tools__grow", {})),
            # The tool grow added, in the next turn's tools.
            calls_reply(tool_call("h4", "mcp__tools__extra", {})),
            text_reply("done"),
        ]
        with Agent(mcp=mcp, scripted=script, tool_execution="sequential") as agent:
            got = results(agent.prompt("go"))
        assert got["h1"] == (True, "MCP tool tools/hang did not answer within 5 s (the server's timeout).")
        assert got["h2"] == (False, "echo: after hang")
        assert got["h3"] == (False, "grown")
        assert got["h4"] == (False, "extra works")
    finally:
        started = time.monotonic()
        mcp.close()
    assert time.monotonic() - started < 10
    seen = [int(line) for line in pids.read_text().split()]
    assert len(seen) >= 5  # four servers and the stubborn one's child
    # A process SIGKILLed at close may still be finishing its exit (a grandchild reparented to
    # init): give the kernel a moment, then any process left is one that outlived close.
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [pid for pid in seen if alive(pid)] == []

"""A streamable-HTTP MCP server written with PyPI's `mcp` package (tests/mcp/requirements.txt),
for tests/mcp/test_mcp.c: `python http_server.py PORT` serves http://127.0.0.1:PORT/mcp."""
import sys

from mcp.server.fastmcp import FastMCP

app = FastMCP("pyhttp", host="127.0.0.1", port=int(sys.argv[1]), log_level="WARNING")


@app.tool()
def add(a: int, b: int) -> int:
    """Adds two whole numbers."""
    return a + b


@app.tool(name="shout.text")
def shout(text: str) -> str:
    """Upper-cases a text."""
    return text.upper()


# Two names that sanitize to one: both get the reference's hash suffix.
@app.tool(name="a-b")
def dash() -> str:
    """The dashed one."""
    return "dash"


@app.tool(name="a_b")
def underscore() -> str:
    """The underscored one."""
    return "underscore"


app.run(transport="streamable-http")

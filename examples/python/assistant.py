"""A terminal coding assistant on libagent's coding tools (the Python twin of examples/c/assistant.c).

Usage: assistant.py [--root DIR] [--script FILE] [--yes] [--mcp FILE] [--session FILE | --continue
[--sessions-dir DIR]], then a request per line. The model (LIBAGENT_* as for chat.py, else the
scripted demo or --script FILE) works under the root with read, ls, find, grep, write and edit;
write and edit ask y/n first (--yes approves them). --mcp FILE adds the tools of the MCP servers
that file configures ({"mcpServers": {...}}), named mcp__<server>__<tool>. --session FILE keeps the conversation in that
session file (pi's format) and resumes it; --continue resumes the newest session of the root under
--sessions-dir (default $LIBAGENT_SESSIONS_DIR, else ~/.libagent/sessions), or starts one there.
A real model's conversation is compacted near its context window ("[compacted: N tokens -> M]"),
and a request that failed for a passing reason (overloaded, rate limited, 5xx, a dropped
connection) is retried 3 times after 2 s, 4 s, 8 s ("[retrying in 2s: <error>]";
LIBAGENT_RETRY_BASE_DELAY_MS sets the first wait).
"""
import argparse
import contextlib
import json
import os
import sys

from chat import api_key, model_from_env  # the LIBAGENT_* configuration (chat.py, beside this file)
from libagent import MCP, Agent, AgentError, Event, ModelError, Session, coding_tools, message_text

DEMO = [{"content": [{"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {}}]},
        {"content": [{"type": "text", "text": "Those are the files at the root (scripted demo model)."}]}]


def main() -> None:
    parser = argparse.ArgumentParser(epilog="LIBAGENT_RETRY_BASE_DELAY_MS: the first wait before retrying a failed "
                                            "request (default 2000 ms; then doubled, 3 retries).")
    parser.add_argument("--root", default=".")
    parser.add_argument("--script", type=argparse.FileType(), help="the scripted model's responses (JSON)")
    parser.add_argument("--yes", action="store_true", help="approve every write and edit")
    parser.add_argument("--mcp", metavar="FILE", help="add the tools of the MCP servers this file configures")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--session", metavar="FILE", help="keep the conversation in this session file and resume it")
    where.add_argument("--continue", dest="resume", action="store_true",
                       help="resume the newest session of the root (a new one when there is none)")
    parser.add_argument("--sessions-dir", metavar="DIR", help="where --continue keeps sessions")
    options = parser.parse_args()
    root = os.path.realpath(options.root)

    # Asked before write and edit: True allows, a str refuses (says why). It runs on a worker
    # thread, so waiting for the user here holds up this run only.
    def consent(tool: str, args: dict):
        print(f"{tool.capitalize()} {args['path']}? [y/N] ", end="", flush=True)
        answer = "y (--yes)" if options.yes else sys.stdin.readline().strip()
        print(answer)
        return answer.lower().startswith("y") or f"the user declined: '{args['path']}' was not changed"

    def show(event: Event) -> None:
        if event.type == "tool_execution_start":
            print(f"[tool] {event.tool_name} {json.dumps(event.json()['args'], separators=(',', ':'))}")
        elif event.type == "tool_execution_end":
            end = event.json()
            print(("[error] " if end["isError"] else "[result] ") + message_text(end["result"]).split("\n")[0])
        elif event.type == "auto_retry_start":
            retry = event.json()
            print(f"[retrying in {retry['delayMs'] / 1000:g}s: {retry['errorMessage']}]", file=sys.stderr, flush=True)
        elif event.type == "compaction_end":
            end = event.json()
            if end.get("result"):
                print(f"[compacted: {end['result']['tokensBefore']} tokens -> {end['result']['estimatedTokensAfter']}]",
                      file=sys.stderr, flush=True)
            elif end.get("errorMessage"):
                print(f"[compaction failed: {end['errorMessage']}]", file=sys.stderr, flush=True)
        elif event.type == "message_end":
            message = event.json()["message"]
            if message["role"] == "assistant" and (text := message_text(message)):
                print(text)

    real = any(os.environ.get(name) for name in ("LIBAGENT_API", "LIBAGENT_BASE_URL", "LIBAGENT_MODEL"))
    if real:
        model = {"model": model_from_env(), "hooks": {"get_api_key": api_key}}  # the built-in providers
    else:
        model = {"scripted": json.load(options.script) if options.script else DEMO}
    # Long conversations: compact near the model's context window (a real model has one), retry
    # requests that failed for a passing reason.
    delay = os.environ.get("LIBAGENT_RETRY_BASE_DELAY_MS") or "2000"
    if not delay.isdigit() or int(delay) <= 0:
        sys.exit(f"error: LIBAGENT_RETRY_BASE_DELAY_MS must be a positive integer, not {delay!r}")
    context = {"compaction": {"enabled": real}, "retry": {"enabled": True, "base_delay_ms": int(delay)}}
    session = open_session(options, root)
    mcp = connect_mcp(options.mcp)
    # The MCP servers end when the with block does (the agent first).
    with mcp or contextlib.nullcontext(), Agent(
            system_prompt="You are a coding assistant working on the files under the root.",
            tools=coding_tools(root, consent=consent), tool_execution="sequential", session=session, mcp=mcp,
            **context, **model) as agent:
        agent.subscribe(show)
        for line in iter(sys.stdin.readline, ""):
            if line.strip() in ("", "/quit"):
                break
            print(f"> {line.strip()}", flush=True)
            try:
                agent.prompt(line.strip())
            except ModelError as error:  # the request failed (a wrong key, URL or model...)
                sys.exit(f"error: {error.message}")


def connect_mcp(path):
    """The MCP servers --mcp configures (None without it); waits for them as a prompt would (up to
    10 s) and says each one's state."""
    if not path:
        return None
    try:
        mcp = MCP.load(path)
    except (OSError, AgentError) as error:
        sys.exit(f"error: --mcp {path}: {error}")
    mcp.wait(10)
    for server in mcp.servers():
        tools = f", {server.tool_count} tools" if server.state == "ready" else ""
        print(f"mcp: {server.name}: {server.state}{tools}" + (f": {server.last_error}" if server.last_error else ""),
              file=sys.stderr)
    return mcp


def open_session(options: argparse.Namespace, root: str):
    """The session --session or --continue asks for (None without either); says what it resumes."""
    if not options.session and not options.resume:
        return None
    try:
        if options.session:
            session = Session.open(options.session, cwd=root)
        else:
            base = (options.sessions_dir or os.environ.get("LIBAGENT_SESSIONS_DIR")
                    or os.path.join(os.path.expanduser("~"), ".libagent", "sessions"))
            session = Session.continue_recent(Session.directory(base, root), cwd=root)
    except AgentError as error:
        sys.exit(f"error: {error.message}")
    count = sum(1 for message in session.messages if message["role"] != "system")  # the conversation's
    print(f"resumed {count} messages from {session.path}" if count else f"new session {session.path}",
          file=sys.stderr)
    return session


if __name__ == "__main__":
    main()

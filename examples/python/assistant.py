"""A terminal coding assistant on libagent's coding tools (the Python twin of examples/c/assistant.c).

    python3 examples/python/assistant.py [--root DIR] [--script FILE] [--yes]

Reads one request per line from stdin; the model (libagent's scripted model: a demo, or the
responses in --script FILE) works on the files under the root with read, ls, find, grep, write
and edit, which stay inside the root. write and edit ask y/n first (--yes approves every change).
"""
import argparse
import json
import sys

from libagent import Agent, coding_tools, message_text

DEMO = [{"content": [{"type": "text", "text": "Let me look at the root directory first."},
                     {"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {}}]},
        {"content": [{"type": "text", "text": "Those are the files at the root (scripted demo model)."}]}]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=".")
    parser.add_argument("--script", help="the scripted model's responses (a JSON array)")
    parser.add_argument("--yes", action="store_true", help="approve every write and edit")
    options = parser.parse_args()

    def consent(tool: str, args: dict):
        """Asked before write and edit change anything: True allows, a str refuses (and says why)."""
        if options.yes:
            print(f"[{tool}] approved (--yes)")
            return True
        print(f"{'Write' if tool == 'write' else 'Edit'} {args['path']}? [y/N] ", end="", flush=True)
        answer = sys.stdin.readline().strip()
        print(answer)
        done = "written" if tool == "write" else "changed"
        return answer.lower().startswith("y") or f"the user declined: '{args['path']}' was not {done}"

    def show(event: dict) -> None:
        if event["type"] == "tool_execution_start":
            print(f"[tool] {event['toolName']} {json.dumps(event['args'], separators=(',', ':'))}")
        elif event["type"] == "tool_execution_end":
            print(("[error] " if event["isError"] else "[result] ") + message_text(event["result"]).split("\n")[0])
        elif event["type"] == "message_end" and event["message"]["role"] == "assistant":
            if text := message_text(event["message"]):
                print(text)

    script = json.load(open(options.script)) if options.script else DEMO
    tools = coding_tools(options.root, tools=["read", "ls", "find", "grep", "write", "edit"], consent=consent)
    with Agent(system_prompt="You are a coding assistant working on the files under the root.",
               tools=tools, scripted=script, tool_execution="sequential") as agent:
        agent.subscribe(show)
        for line in iter(sys.stdin.readline, ""):
            if line.strip() in ("", "/quit"):
                break
            print(f"> {line.strip()}", flush=True)
            agent.prompt(line.strip())


if __name__ == "__main__":
    main()

"""A terminal coding assistant on libagent's coding tools (the Python twin of examples/c/assistant.c).

Usage: assistant.py [--root DIR] [--script FILE] [--yes], then a request per line. The model
(LIBAGENT_* as for chat.py, else the scripted demo or --script FILE) works under the root with
read, ls, find, grep, write and edit; write and edit ask y/n first (--yes approves them).
"""
import argparse
import json
import os
import sys

from chat import api_key, model_from_env  # the LIBAGENT_* configuration (chat.py, beside this file)
from libagent import Agent, Event, ModelError, coding_tools, message_text

DEMO = [{"content": [{"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {}}]},
        {"content": [{"type": "text", "text": "Those are the files at the root (scripted demo model)."}]}]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=".")
    parser.add_argument("--script", type=argparse.FileType(), help="the scripted model's responses (JSON)")
    parser.add_argument("--yes", action="store_true", help="approve every write and edit")
    options = parser.parse_args()

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
        elif event.type == "message_end":
            message = event.json()["message"]
            if message["role"] == "assistant" and (text := message_text(message)):
                print(text)

    if any(os.environ.get(name) for name in ("LIBAGENT_API", "LIBAGENT_BASE_URL", "LIBAGENT_MODEL")):
        model = {"model": model_from_env(), "hooks": {"get_api_key": api_key}}  # the built-in providers
    else:
        model = {"scripted": json.load(options.script) if options.script else DEMO}
    with Agent(system_prompt="You are a coding assistant working on the files under the root.",
               tools=coding_tools(options.root, consent=consent), tool_execution="sequential", **model) as agent:
        agent.subscribe(show)
        for line in iter(sys.stdin.readline, ""):
            if line.strip() in ("", "/quit"):
                break
            print(f"> {line.strip()}", flush=True)
            try:
                agent.prompt(line.strip())
            except ModelError as error:  # the request failed (a wrong key, URL or model...)
                sys.exit(f"error: {error.message}")


if __name__ == "__main__":
    main()

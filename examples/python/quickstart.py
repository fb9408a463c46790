"""libagent quickstart (Python): the conversation of examples/c/quickstart.c.

A multi-turn agent with a system prompt and two real tools (list a directory, read a file),
answered by libagent's built-in scripted model, which calls both tools in parallel. Streamed
text is printed as it arrives; tool calls and results are shown; a transcript summary ends it.

    make example-python          # or: pip install ./bindings/python && python examples/python/quickstart.py

To use a real model, pass stream_fn=my_model instead of scripted=SCRIPT (see my_model below).
"""

import os

from libagent import Agent, tool


@tool(label="List")
def list_dir(path: str) -> str:
    """List a directory"""
    return "\n".join(sorted(name for name in os.listdir(path) if not name.startswith(".")))


@tool(label="Read")
def read_file(path: str) -> str:
    """Read a file"""
    with open(path, encoding="utf-8") as file:
        return "".join(file.readlines()[:6])


SCRIPT = [
    {"content": [
        {"type": "text", "text": "Let me look at the project: its files and its README.", "chunks": 6},
        {"type": "toolCall", "id": "call_1", "name": "list_dir", "arguments": {"path": "."}},
        {"type": "toolCall", "id": "call_2", "name": "read_file", "arguments": {"path": "README.md"}, "chunks": 3},
    ]},
    {"content": [{"type": "text", "chunks": 8, "text":
        "This is libagent: a Rust agent runtime with a C ABI. The listing shows its sources, tests and "
        "examples; the README explains how to run the demo and the tests."}]},
]


def on_event(event):
    """Listener (runs on libagent's runtime thread: keep it quick). The event's fields are free;
    event.json() builds its JSON object when a listener needs more (the arguments, the result)."""
    if event.update == "text_delta":
        print(event.delta, end="", flush=True)
    elif event.type == "tool_execution_start":
        print(f"  -> {event.tool_name} {event.json()['args']}")
    elif event.type == "tool_execution_end":
        text = event.json()["result"]["content"][0]["text"].replace("\n", " | ")
        print(f"  <- {event.tool_name}: {text[:70]}...")
    elif event.type == "message_end" and event.json()["message"]["role"] == "assistant":
        print()


def main():
    with Agent(system_prompt="You are a helpful project guide.",
               model={"id": "scripted", "api": "faux", "provider": "libagent"},
               tools=[list_dir, read_file], scripted=SCRIPT) as agent:
        agent.subscribe(on_event, shape="lean")
        print("> What is this project?")
        agent.prompt("What is this project?")
        messages = agent.messages
        print(f"Transcript: {len(messages)} messages (system prompt, user, assistant with 2 tool calls, "
              "2 tool results, assistant).")


def my_model(request):
    """A real model's stream function: called (on a worker thread) with {model, context:
    {messages}, options}; yields assistant stream events as the provider's response streams in
    (or plain strings: the answer's text). `async def` generators work too."""
    yield {"type": "start"}
    yield {"type": "text_start", "contentIndex": 0}
    yield {"type": "text_delta", "contentIndex": 0, "delta": "Hel"}
    yield {"type": "text_end", "contentIndex": 0}
    yield {"type": "done", "reason": "stop"}
    # Provider errors end the stream with {"type": "error", "reason": "error", "errorMessage": "..."}.


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a session file (pi's format, version 3) of ENTRIES entries after the header, for the
session bench (bench/sessions.sh) and the append-cost test (tests/sessions/append_cost.py).

    python3 tests/sessions/generate.py OUT ENTRIES [--small]

Realistic by default (~1 KB per entry, so 100 000 entries are ~100 MB): turns of a user prompt, an
assistant message with text and a tool call (read, bash, edit), its tool result (file contents or
command output), a closing assistant text; now and then a model or thinking-level change, and a
branch (an entry whose parent is not the previous one). `--small`: one short user message per
entry. Deterministic (seeded): the same arguments give the same bytes. Written to OUT.tmp, then
renamed; an OUT that already has ENTRIES entries of the same kind is kept (a .meta file beside it)."""
import json
import os
import random
import sys

WORDS = ("the session file keeps every message of a conversation as one line so a host can resume it "
         "after a restart and a tool can read what the model said tool results carry file contents and "
         "command output which are often the largest lines").split()


def text(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def usage(rng):
    i, o = rng.randint(1000, 90000), rng.randint(10, 2000)
    return {"input": i, "output": o, "cacheRead": 0, "cacheWrite": 0, "totalTokens": i + o,
            "cost": {"input": i * 3e-6, "output": o * 1.5e-5, "cacheRead": 0, "cacheWrite": 0,
                     "total": i * 3e-6 + o * 1.5e-5}}


def messages(rng, turn, clock):
    """One turn's messages."""
    call_id = f"toolu_{turn:08d}"
    tool, args = rng.choice([("read", {"path": f"src/module_{turn % 97}.rs"}),
                             ("bash", {"command": f"cargo test --quiet module_{turn % 31}"}),
                             ("edit", {"path": f"src/module_{turn % 97}.rs", "oldText": text(rng, 8),
                                       "newText": text(rng, 10)})])
    model = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    return [
        {"role": "user", "content": [{"type": "text", "text": text(rng, rng.randint(10, 60))}], "timestamp": clock},
        {"role": "assistant", "content": [{"type": "text", "text": text(rng, rng.randint(20, 80))},
                                          {"type": "toolCall", "id": call_id, "name": tool, "arguments": args}],
         **model, "usage": usage(rng), "stopReason": "toolUse", "timestamp": clock + 1},
        {"role": "toolResult", "toolCallId": call_id, "toolName": tool,
         "content": [{"type": "text", "text": "\n".join(text(rng, 12) for _ in range(rng.randint(5, 40)))}],
         "isError": False, "timestamp": clock + 2},
        {"role": "assistant", "content": [{"type": "text", "text": text(rng, rng.randint(20, 120))}],
         **model, "usage": usage(rng), "stopReason": "stop", "timestamp": clock + 3},
    ]


def generate(out, count, small):
    rng = random.Random(26)
    compact = lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    with open(out + ".tmp", "w") as f:
        f.write(compact({"type": "session", "version": 3, "id": "019ae0c0-0000-7000-8000-000000000026",
                         "timestamp": "2026-12-02T00:00:00.000Z", "cwd": "/bench/cwd"}) + "\n")
        written, parent, turn, clock = 0, None, 0, 1764633600000
        while written < count:
            if small:
                batch = [("message", {"message": {"role": "user", "content": [{"type": "text", "text": f"m{written}"}],
                                                  "timestamp": clock}})]
            else:
                batch = [("message", {"message": m}) for m in messages(rng, turn, clock)]
                if turn % 50 == 7:
                    batch.insert(0, ("model_change", {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}))
                if turn % 40 == 3:
                    batch.insert(0, ("thinking_level_change", {"thinkingLevel": rng.choice(["low", "high"])}))
            for kind, members in batch:
                if written == count:
                    break
                entry_id = f"{written:08x}"
                # Now and then a branch: the new entry continues from an entry a little way back.
                if not small and parent and written % 997 == 0:
                    parent = f"{written - 9:08x}"
                seconds = written // 10
                stamp = f"2026-12-01T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{written % 1000:03d}Z"
                f.write(compact({"type": kind, "id": entry_id, "parentId": parent, "timestamp": stamp, **members}) + "\n")
                parent, written = entry_id, written + 1
            turn, clock = turn + 1, clock + 4
    os.rename(out + ".tmp", out)


def main():
    args = [a for a in sys.argv[1:] if a != "--small"]
    small = "--small" in sys.argv[1:]
    if len(args) != 2:
        sys.exit("usage: generate.py OUT ENTRIES [--small]")
    out, count = args[0], int(args[1])
    meta = f"{count} {'small' if small else 'realistic'} v1"
    if os.path.exists(out) and os.path.exists(out + ".meta") and open(out + ".meta").read() == meta:
        return
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    generate(out, count, small)
    with open(out + ".meta", "w") as f:
        f.write(meta)


if __name__ == "__main__":
    main()

"""Sessions (issue 26): libagent.Session over the C ABI's agent_session_* (pi-coding-agent's
session files), as a context manager, and attached to an Agent(session=...)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import libagent
from libagent import (Agent, InvalidArgumentError, InvalidHandleError, InvalidStateError, NotASessionError, Session,
                      SessionIOError, SessionLockedError)
from conftest import roles, text_reply


def user(text, timestamp=1):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def assistant(text, timestamp=2):
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "faux", "provider": "test",
            "model": "m1", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": timestamp}


def message(m):
    return {"type": "message", "message": m}


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_a_new_file_is_written_with_the_first_message_and_reopens(tmp_path):
    path = tmp_path / "chat.jsonl"
    with Session.open(path, cwd=str(tmp_path)) as session:
        assert session.path == str(path) and not session.exists
        assert session.leaf_id is None and session.entries == [] and session.messages == []
        assert session.header["type"] == "session" and session.header["cwd"] == str(tmp_path)
        session.append({"type": "thinking_level_change", "thinkingLevel": "off"})
        assert not path.exists()  # nothing is written before the first user or assistant message
        first = session.append(message(user("hello")))
        second = session.append(message(assistant("hi")))
        assert session.exists and session.leaf_id == second
        entries = session.entries
        assert [e["id"] for e in entries][1:] == [first, second] and entries[2]["parentId"] == first
        assert [e["type"] for e in lines_of(path)] == ["session", "thinking_level_change", "message", "message"]
        assert roles(session.messages) == ["user", "assistant"]
        assert session.context["thinkingLevel"] == "off"
    with Session.open(path) as again:
        assert again.entries == entries and again.leaf_id == second
        assert again.header == lines_of(path)[0]


def test_branches_labels_summaries_and_forks(tmp_path):
    with Session.open(tmp_path / "tree.jsonl") as session:
        a = session.append(message(user("one")))
        b = session.append(message(assistant("two")))
        session.branch(a)
        c = session.append(message(assistant("other two")))
        assert [e["id"] for e in session.branch_path] == [a, c]
        assert [m["content"][0]["text"] for m in session.messages] == ["one", "other two"]
        label = session.label(b, "first answer")
        assert session.entries[-1] == {**session.entries[-1], "type": "label", "targetId": b, "label": "first answer"}
        assert session.leaf_id == label
        summary = session.branch_with_summary(a, {"summary": "We tried another answer.", "from_hook": False})
        entry = session.entries[-1]
        assert entry["id"] == summary and entry["type"] == "branch_summary" and entry["parentId"] == a
        assert entry["summary"] == "We tried another answer." and entry["fromHook"] is False
        assert len(session.llm_messages) == 2  # the user message, the summary as a user message
        session.reset_leaf()
        assert session.leaf_id is None and session.messages == []
        root = session.append(message(user("a new root")))
        assert session.entries[-1]["parentId"] is None and session.leaf_id == root
        old = session.path
        session.fork(c)
        assert session.path != old and os.path.dirname(session.path) == os.path.dirname(old)
        assert [e["id"] for e in session.entries] == [a, c]
        assert [e["type"] for e in lines_of(session.path)] == ["session", "message", "message"]


def test_errors_are_the_exceptions_of_their_codes(tmp_path):
    path = tmp_path / "locked.jsonl"
    with Session.open(path) as first:
        first.append(message(user("q")))
        first.append(message(assistant("a")))
        with pytest.raises(SessionLockedError) as locked:
            Session.open(path)
        assert locked.value.status == -18 and str(path) in locked.value.message
        with pytest.raises(InvalidArgumentError):
            first.branch("no-such-id")
    (tmp_path / "notes.txt").write_text("just some notes\nnot a session\n")
    with pytest.raises(NotASessionError) as not_a_session:
        Session.open(tmp_path / "notes.txt")
    assert not_a_session.value.status == -19 and isinstance(not_a_session.value, ValueError)
    assert (tmp_path / "notes.txt").read_text() == "just some notes\nnot a session\n"  # untouched
    (tmp_path / "future.jsonl").write_text(json.dumps({"type": "session", "version": 4, "id": "x", "cwd": "/"}) + "\n")
    with pytest.raises(NotASessionError):
        Session.open(tmp_path / "future.jsonl")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SessionIOError) as io_error:  # a directory that is a file: ENOTDIR
        with Session.create(blocker / "sessions") as session:
            session.append(message(user("q")))
            session.append(message(assistant("a")))
    assert io_error.value.status == -17 and isinstance(io_error.value, OSError)
    assert str(blocker) in io_error.value.message
    with Session.in_memory() as memory:
        with pytest.raises(InvalidArgumentError, match='no string "type"'):
            memory.append({"message": user("q")})
        with pytest.raises(InvalidArgumentError, match='"message" object'):
            memory.append({"type": "message", "message": "not an object"})
        assert memory.entries == []  # nothing appended
    with pytest.raises(libagent.InvalidJsonError, match='^durability must be "flush" or "fsync"'):
        Session.open(tmp_path / "x.jsonl", durability="sometimes")
    session = Session.in_memory()
    session.close()
    session.close()  # idempotent
    with pytest.raises(InvalidHandleError):
        session.append(message(user("after close")))


def test_in_memory_and_the_per_directory_layout(tmp_path):
    with Session.in_memory(cwd="/project") as session:
        session.append(message(user("q")))
        assert session.path is None and not session.exists and session.header["cwd"] == "/project"
    directory = Session.directory(tmp_path / "sessions", "/home/me/project")
    assert os.path.dirname(directory) == str(tmp_path / "sessions")
    assert os.path.basename(directory) == "--home-me-project--"
    with Session.continue_recent(directory, cwd="/home/me/project") as first:
        first.append(message(user("the first conversation")))
        first.append(message(assistant("noted")))
        first_path = first.path
    with Session.continue_recent(directory, cwd="/home/me/project") as again:
        assert again.path == first_path and len(again.messages) == 2
    with Session.create(directory, cwd="/home/me/project") as new:
        assert new.path != first_path and new.messages == []


def test_an_agent_appends_to_its_session_and_resumes_from_it(tmp_path):
    path = tmp_path / "agent.jsonl"
    with Session.open(path) as session, Agent(session=session, scripted=[text_reply("Hi!")]) as agent:
        agent.prompt("hello")
        assert roles(session.messages) == ["user", "assistant"]
        with pytest.raises(InvalidStateError):  # one agent per session
            Agent(session=session, scripted=[text_reply("x")])
    assert [e["message"]["role"] for e in lines_of(path) if e["type"] == "message"] == ["user", "assistant"]
    requests = []

    def model(request):
        requests.append(request["context"]["messages"])
        yield "Welcome back."

    with Session.open(path) as session:
        with Agent(session=session, stream_fn=model) as agent:
            assert roles(agent.messages) == ["user", "assistant"]  # the context at the leaf
            agent.prompt("again")
        assert [m["role"] for m in requests[0]] == ["user", "assistant", "user"]
        assert requests[0][0]["content"][0]["text"] == "hello"
    assert [e["message"]["role"] for e in lines_of(path) if e["type"] == "message"] == ["user", "assistant"] * 2
    with pytest.raises(TypeError):
        Agent(session=str(path), scripted=[text_reply("x")])


# The README's "resume a session" snippet for Python (SESSIONS_SNIPPETS.md), verbatim.
SNIPPET = '''
from libagent import Agent, Session

with Session.open("chat.jsonl") as session:               # a new file, or the conversation so far
    print("resumed", len(session.messages), "messages")
    with Agent(session=session, scripted=[{"content": [{"type": "text", "text": "Hi again!"}]}]) as agent:
        agent.prompt("hello")                              # appended to chat.jsonl as the run goes
'''


def test_the_readme_snippet_resumes(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(libagent.__file__)))
    runs = [subprocess.run([sys.executable, "-c", textwrap.dedent(SNIPPET)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60) for _ in range(2)]
    assert [r.stdout for r in runs] == ["resumed 0 messages\n", "resumed 2 messages\n"], [r.stderr for r in runs]
    assert len([e for e in lines_of(tmp_path / "chat.jsonl") if e["type"] == "message"]) == 4

"""The coding tool pack: one call gives an agent pi-coding-agent's tools for a root, with consent."""

import os
import subprocess
import sys
import threading
import time

import pytest

import libagent
from libagent import Agent, coding_tools, tool
from conftest import SAFETY_TIMEOUT, Gate, calls_reply, text_reply, tool_call


def results(messages):
    return {m["toolCallId"]: (m["isError"], libagent.message_text(m)) for m in messages if m["role"] == "toolResult"}


def test_the_pack_reads_edits_and_asks_before_writing(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    asked = []

    def consent(tool_name, args):
        asked.append((tool_name, args["path"]))
        return "Writing is not allowed here." if tool_name == "write" else True

    @tool
    def shout(text: str) -> str:
        "Upper-case a text."
        return text.upper()

    tools = coding_tools(tmp_path, consent=consent) + [shout]
    assert [t.name for t in tools] == ["read", "write", "edit", "ls", "find", "grep", "shout"]
    script = [
        calls_reply(tool_call("c1", "write", {"path": "b.txt", "content": "x"})),
        calls_reply(tool_call("c2", "edit", {"path": "a.txt", "edits": [{"oldText": "hello", "newText": "bye"}]})),
        calls_reply(tool_call("c3", "read", {"path": "a.txt"})),
        calls_reply(tool_call("c4", "read", {"path": "../outside.txt"})),
        calls_reply(tool_call("c5", "shout", {"text": "ok"})),
        text_reply("done"),
    ]
    with Agent(tools=tools, scripted=script) as agent:
        got = results(agent.prompt("go"))
    assert got["c1"] == (True, "Writing is not allowed here.")
    assert got["c2"] == (False, "Successfully replaced 1 block(s) in a.txt.")
    assert got["c3"] == (False, "bye\n")
    assert got["c4"][0] and "outside the root directory" in got["c4"][1]
    assert got["c5"] == (False, "OK")
    assert asked == [("write", "b.txt"), ("edit", "a.txt")]
    assert not (tmp_path / "b.txt").exists()


def test_a_consent_that_blocks_leaves_other_agents_running(tmp_path):
    """A consent waiting for its user (here an Event, 2 s at most) runs off libagent's runtime
    thread: other agents' prompts meanwhile finish at once, while it still waits."""
    asking, answer, answered = Gate(), threading.Event(), threading.Event()
    asked_on = []

    def consent(tool_name, args):
        asked_on.append(threading.current_thread().name)
        asking.open()
        answer.wait(2.0)
        answered.set()
        return True

    script = [calls_reply(tool_call("w1", "write", {"path": "a.txt", "content": "a"})), text_reply("written")]
    replies = [text_reply(f"quick {i}") for i in range(4)]
    with Agent(tools=coding_tools(tmp_path, consent=consent), scripted=script) as blocked, \
            Agent(scripted=replies) as other:
        other.prompt("warm up")
        run = blocked.start("write")
        asking.wait()
        times, texts = [], []
        for i in range(3):
            began = time.monotonic()
            texts.append(libagent.message_text(other.prompt(f"meanwhile {i}")[-1]))
            times.append(time.monotonic() - began)
        still_waiting = not answered.is_set()
        answer.set()
        outcome = run.wait(SAFETY_TIMEOUT)
    assert texts == ["quick 1", "quick 2", "quick 3"]
    assert still_waiting, f"the other agent's prompts waited for the consent ({times})"
    assert min(times) < 0.05, f"the other agent's prompts took {times} s while a consent was blocked"
    assert results(outcome.messages)["w1"] == (False, "Successfully wrote to a.txt")
    assert asked_on and asked_on[0].startswith("libagent-py-worker")
    assert (tmp_path / "a.txt").read_text() == "a"


def test_bash_is_off_unless_enabled_and_bad_arguments_fail_early(tmp_path):
    with pytest.raises(libagent.InvalidArgumentError, match="bash tool is disabled"):
        coding_tools(tmp_path, tools=["bash"])
    with pytest.raises(libagent.InvalidArgumentError, match="Cannot open the coding root"):
        coding_tools(os.path.join(tmp_path, "missing"))
    tools = coding_tools(tmp_path, tools=["bash"], bash=True)
    script = [calls_reply(tool_call("c1", "bash", {"command": "echo hi > made.txt; echo done"})), text_reply("ok")]
    with Agent(tools=tools, scripted=script) as agent:
        assert results(agent.prompt("go"))["c1"] == (False, "done\n")
    assert (tmp_path / "made.txt").read_text() == "hi\n"


def test_a_hard_link_from_outside_is_read_unless_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("secret needle\n")
    os.link(tmp_path / "secret.txt", root / "linked.txt")

    def read_linked(**options):
        script = [calls_reply(tool_call("c1", "read", {"path": "linked.txt"})), text_reply("done")]
        with Agent(tools=coding_tools(root, tools=["read"], **options), scripted=script) as agent:
            return results(agent.prompt("go"))["c1"]

    assert read_linked() == (False, "secret needle\n")
    refused, text = read_linked(refuse_hard_links=True)
    assert refused and "linked.txt has 2 hard links" in text and "secret" not in text


REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
ASSISTANT = os.path.join(REPO, "examples", "python", "assistant.py")
MODEL_VARIABLES = ("LIBAGENT_API", "LIBAGENT_BASE_URL", "LIBAGENT_MODEL", "LIBAGENT_PROVIDER",
                   "LIBAGENT_CONTEXT_WINDOW", "LIBAGENT_MAX_TOKENS")


def example_env(**variables):
    """The environment for an example: the libagent this test runs against, no model or API key
    from the caller's environment (LIBAGENT_API, ..., OPENAI_API_KEY, ...), then `variables`."""
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES and not k.endswith("_API_KEY")}
    return dict(env, PYTHONPATH=os.path.dirname(os.path.dirname(libagent.__file__)), **variables)


def test_the_python_assistant_example(tmp_path):
    """examples/python/assistant.py against the scripted model: a write approved, an edit declined."""
    import json

    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("The magic word is xyzzy.\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        calls_reply(tool_call("w1", "write", {"path": "new.txt", "content": "a\n"})),
        calls_reply(tool_call("e1", "edit", {"path": "notes.txt", "edits": [{"oldText": "xyzzy", "newText": "plugh"}]})),
        text_reply("All done."),
    ]))
    run = subprocess.run([sys.executable, ASSISTANT, "--root", str(root), "--script", str(script)],
                         input="change things\ny\nn\n", capture_output=True, text=True, timeout=60,
                         env=example_env())
    assert run.returncode == 0, run.stderr
    assert "> change things\n[tool] write" in run.stdout
    assert "Write new.txt? [y/N] y\n[result] Successfully wrote to new.txt\n" in run.stdout
    assert "Edit notes.txt? [y/N] n\n[error] the user declined: 'notes.txt' was not changed\n" in run.stdout
    assert run.stdout.endswith("All done.\n")
    assert (root / "new.txt").read_text() == "a\n"
    assert (root / "notes.txt").read_text() == "The magic word is xyzzy.\n"


def test_the_python_assistant_resumes_a_session(tmp_path):
    """examples/python/assistant.py --session FILE twice on a model endpoint: the second run says
    what it resumed and its request starts with the first run's messages; the file holds both
    runs. --continue then resumes the newest session of the root under --sessions-dir."""
    import json

    if os.path.join(REPO, "tests", "examples") not in sys.path:
        sys.path.insert(0, os.path.join(REPO, "tests", "examples"))
    from mock_endpoint import ANSWER, GOOD_KEY, MockEndpoint

    root, path = tmp_path / "root", tmp_path / "chat.jsonl"
    root.mkdir()

    def assistant(*args, text, **env):
        return subprocess.run([sys.executable, ASSISTANT, "--root", str(root), *args], input=text,
                              capture_output=True, text=True, timeout=60, env=example_env(**env))

    with MockEndpoint() as mock:
        model = dict(LIBAGENT_API="openai-completions", LIBAGENT_BASE_URL=f"http://127.0.0.1:{mock.port}/v1",
                     LIBAGENT_MODEL="mock-model", LIBAGENT_API_KEY=GOOD_KEY)
        first = assistant("--session", str(path), text="Remember the word xyzzy.\n", **model)
        assert first.returncode == 0, first.stderr
        assert f"new session {path}\n" in first.stderr
        second = assistant("--session", str(path), text="What was the word?\n", **model)
        assert second.returncode == 0, second.stderr
        assert f"resumed 2 messages from {path}\n" in second.stderr
        assert second.stdout == f"> What was the word?\n{ANSWER}\n"
        resumed = [m for m in json.loads(mock.requests[1]["body"])["messages"] if m["role"] != "system"]
    assert [m["role"] for m in resumed] == ["user", "assistant", "user"]
    assert "Remember the word xyzzy." in json.dumps(resumed[0]) and ANSWER in json.dumps(resumed[1])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["cwd"] == os.path.realpath(root)
    assert [e["message"]["role"] for e in lines if e["type"] == "message" and e["message"]["role"] != "system"] \
        == ["user", "assistant"] * 2

    sessions = tmp_path / "sessions"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([text_reply("Hello.")]))
    new = assistant("--script", str(script), "--continue", "--sessions-dir", str(sessions), text="hi\n")
    assert new.returncode == 0, new.stderr
    (layout,) = sessions.iterdir()
    assert layout.name == "--" + os.path.realpath(root).lstrip("/").replace("/", "-") + "--"
    (file,) = layout.iterdir()
    assert f"new session {file}\n" in new.stderr
    again = assistant("--script", str(script), "--continue", text="again\n", LIBAGENT_SESSIONS_DIR=str(sessions))
    assert again.returncode == 0, again.stderr
    assert f"resumed 2 messages from {file}\n" in again.stderr and list(layout.iterdir()) == [file]


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages", "openai-responses",
                                 "google-generative-ai"])
def test_the_python_assistant_example_on_a_model_endpoint(tmp_path, api):
    """examples/python/assistant.py on a real model (LIBAGENT_*, as chat.py): the loopback mock
    endpoint's streamed answer; a wrong key ends the session with the server's error (exit 1)."""
    if os.path.join(REPO, "tests", "examples") not in sys.path:
        sys.path.insert(0, os.path.join(REPO, "tests", "examples"))
    from mock_endpoint import ANSWER, GOOD_KEY, MockEndpoint

    with MockEndpoint() as mock:
        base_url = f"http://127.0.0.1:{mock.port}" + ("/v1" if api.startswith("openai-") else "")

        def assistant(key):
            env = example_env(LIBAGENT_API=api, LIBAGENT_BASE_URL=base_url, LIBAGENT_MODEL="mock-model",
                              LIBAGENT_API_KEY=key)
            return subprocess.run([sys.executable, ASSISTANT, "--root", str(tmp_path)], input="Say hello.\nAgain.\n",
                                  capture_output=True, text=True, timeout=60, env=env)

        good = assistant(GOOD_KEY)
        assert good.returncode == 0, good.stderr
        assert good.stdout == f"> Say hello.\n{ANSWER}\n> Again.\n{ANSWER}\n"
        assert len(mock.requests) == 2
        bad = assistant("wrong-key")
        assert bad.returncode == 1
        assert bad.stdout == "> Say hello.\n"
        assert "401" in bad.stderr and "invalid api key" in bad.stderr, bad.stderr
        assert len(mock.requests) == 3  # the failed request ended the session

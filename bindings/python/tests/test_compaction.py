"""Context management (issue 27) through the Python binding: Agent(compaction=..., retry=...),
the "compact" hook, Agent.compact / compact_async / start_compact, and the compaction and retry
events."""

import asyncio

import pytest

from libagent import AbortedError, Agent, BusyError, InvalidJsonError, ModelError, RunFailedError
from conftest import text_reply

WINDOWED_MODEL = {"id": "m1", "api": "faux", "provider": "test", "contextWindow": 200000}
OVERFLOW = {"content": [], "stopReason": "error", "errorMessage": "prompt is too long: 213462 tokens > 200000 maximum"}
OVERLOADED = {"content": [], "stopReason": "error", "errorMessage": "529 overloaded_error: Overloaded"}
CONTEXT_EVENTS = ("compaction_start", "compaction_end", "auto_retry_start", "auto_retry_end")


def history():
    """Four exchanges: enough to compact while keeping 20 tokens."""
    out = []
    for i in range(1, 5):
        out.append({"role": "user", "content": f"question {i} with enough words to be summarized", "timestamp": 1})
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i} with enough words too"}],
                    "api": "faux", "provider": "test", "model": "m1", "stopReason": "stop", "timestamp": 1})
    return out


class SummaryHook:
    """The compact hook: answers `answer` (None: the agent's own model), recording its inputs."""

    def __init__(self, answer):
        self.answer = answer
        self.inputs = []

    def __call__(self, request):
        self.inputs.append(request)
        return self.answer


def context_agent(script, hook, **extra):
    options = dict(system_prompt="Be terse.", model=WINDOWED_MODEL, messages=history(), scripted=script,
                   hooks={"compact": hook},
                   compaction={"enabled": True, "keep_recent_tokens": 20},
                   retry={"enabled": True, "base_delay_ms": 1, "max_delay_ms": 2})
    options.update(extra)
    return Agent(**options)


def record_context_events(agent):
    seen = []
    agent.subscribe(lambda event: seen.append((event.type, event.json())) if event.type in CONTEXT_EVENTS else None)
    return seen


def test_an_overflow_is_recovered_by_one_compaction_through_the_hook():
    hook = SummaryHook({"summary": "The user asked four questions."})
    with context_agent([OVERFLOW, text_reply("done")], hook) as agent:
        seen = record_context_events(agent)
        added = agent.prompt("and now?")
        assert added[-1]["content"][0]["text"] == "done"
        assert len(hook.inputs) == 1 and hook.inputs[0]["reason"] == "overflow"
        assert [kind for kind, _ in seen] == ["compaction_start", "compaction_end"]
        assert seen[0][1] == {"type": "compaction_start", "reason": "overflow"}
        end = seen[1][1]
        assert end["reason"] == "overflow" and end["willRetry"] is True and end["aborted"] is False
        assert end["result"]["summary"] == "The user asked four questions."
        assert end["result"]["tokensBefore"] > 0
        messages = agent.state["messages"]
        assert any(m["role"] == "compactionSummary" for m in messages)
        assert "prompt is too long" not in str(messages)


def test_an_overloaded_error_is_retried_once():
    hook = SummaryHook(None)
    with context_agent([OVERLOADED, text_reply("done")], hook) as agent:
        seen = record_context_events(agent)
        agent.prompt("and now?")
        assert [kind for kind, _ in seen] == ["auto_retry_start", "auto_retry_end"]
        start, end = seen[0][1], seen[1][1]
        assert (start["attempt"], start["maxAttempts"], start["delayMs"]) == (1, 3, 1)
        assert "overloaded" in start["errorMessage"]
        assert end == {"type": "auto_retry_end", "success": True, "attempt": 1}
        assert hook.inputs == []
        assert "overloaded_error" not in str(agent.state["messages"])


def test_without_the_options_nothing_is_retried():
    with Agent(model=WINDOWED_MODEL, scripted=[OVERLOADED, text_reply("done")]) as agent:
        with pytest.raises(ModelError, match="overloaded"):
            agent.prompt("and now?")


def test_compact_with_a_focus_then_nothing_left_to_compact():
    hook = SummaryHook({"summary": "Four questions, answered.", "details": {"note": 1}})
    with context_agent([text_reply("done")], hook) as agent:
        seen = record_context_events(agent)
        before = len(agent.state["messages"])
        outcome = agent.compact("keep the API design")
        assert outcome.status == "completed"
        assert hook.inputs[0]["reason"] == "manual" and hook.inputs[0]["focus"] == "keep the API design"
        assert len(agent.state["messages"]) < before
        assert [kind for kind, _ in seen] == ["compaction_start", "compaction_end"]
        assert seen[1][1]["reason"] == "manual" and seen[1][1]["result"]["details"] == {"note": 1}
        with pytest.raises(RunFailedError, match="Nothing to compact"):
            agent.compact()
        assert len(hook.inputs) == 1  # the hook was not asked


def test_a_cancelling_hook_leaves_the_transcript():
    hook = SummaryHook({"cancel": True})
    with context_agent([text_reply("done")], hook) as agent:
        before = agent.state["messages"]
        with pytest.raises(AbortedError):
            agent.compact()
        assert "focus" not in hook.inputs[0]
        assert agent.state["messages"] == before


def test_a_hook_that_raises_fails_the_compaction():
    def broken(request):
        raise RuntimeError("the summarizer is down")
    with context_agent([text_reply("done")], broken) as agent:
        before = agent.state["messages"]
        run = agent.start_compact()
        with pytest.raises(RunFailedError, match="the summarizer is down"):
            run.wait(timeout=20).check()
        assert agent.state["messages"] == before


def test_compact_async():
    hook = SummaryHook({"summary": "Four questions."})
    with context_agent([text_reply("done")], hook) as agent:
        outcome = asyncio.run(agent.compact_async(focus="names"))
        assert outcome.status == "completed"
        assert hook.inputs[0]["focus"] == "names"


def test_compact_during_a_run_is_busy():
    with context_agent([{"content": [{"type": "text", "text": "x"}], "waitForAbort": True}], SummaryHook(None)) as agent:
        run = agent.start("hello")
        with pytest.raises(BusyError):
            agent.compact()
        run.abort()
        assert run.wait(timeout=20).status == "aborted"


def test_an_option_error_names_what_the_caller_wrote():
    with pytest.raises(InvalidJsonError, match="base_delay_ms"):
        Agent(scripted=[], retry={"enabled": True, "base_delay_ms": -5})
    with pytest.raises(InvalidJsonError, match="reserve"):
        Agent(scripted=[], compaction={"enabled": True, "reserve": 1})


def test_configure_turns_retries_on_in_snake_case():
    with Agent(model=WINDOWED_MODEL, scripted=[OVERLOADED, text_reply("done")]) as agent:
        agent.configure(retry={"enabled": True, "base_delay_ms": 1, "max_retries": 1})
        seen = record_context_events(agent)
        agent.prompt("and now?")
        assert [kind for kind, _ in seen] == ["auto_retry_start", "auto_retry_end"]
        assert seen[0][1]["maxAttempts"] == 1
        with pytest.raises(InvalidJsonError, match="max_delay_ms"):
            agent.configure(retry={"max_delay_ms": "soon"})

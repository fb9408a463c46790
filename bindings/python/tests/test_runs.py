"""Run handles (C ABI 1.0 AgentRun): start without waiting, wait, abort one run, outcomes;
events as structs with their JSON on request."""

import asyncio

import pytest

import libagent
from libagent import Agent, RunOutcome
from conftest import SAFETY_TIMEOUT, Gate, calls_reply, roles, text_reply, tool_call


def test_start_returns_a_run_whose_outcome_carries_what_it_added():
    with Agent(scripted=[text_reply("hello", chunks=2)]) as agent:
        run = agent.start("hi")
        outcome = run.wait(SAFETY_TIMEOUT)
        assert run.done and run.outcome == outcome
        assert (outcome.status, outcome.stop_reason, outcome.error_message) == ("completed", "stop", "")
        assert outcome.message_count == 2 and roles(outcome.messages) == ["user", "assistant"]
        assert libagent.message_text(outcome.messages[1]) == "hello"
        assert outcome.check() is outcome
        assert agent.messages == outcome.messages


def test_a_run_that_has_not_settled_times_out_and_has_no_outcome():
    started, release = Gate(), Gate()

    def model(request):
        started.open()
        release.wait()
        yield "late"

    with Agent(stream_fn=model) as agent:
        run = agent.start("go")
        started.wait()
        assert run.outcome is None and not run.done
        with pytest.raises(libagent.AgentTimeoutError):
            run.wait(timeout=0)
        release.open()
        assert run.wait(SAFETY_TIMEOUT).status == "completed"


def test_aborting_a_settled_run_never_reaches_a_later_run():
    started, release = Gate(), Gate()

    def model(request):
        if request["context"]["messages"][-1]["content"][0]["text"] == "second":
            started.open()
            release.wait()
        yield "answer"

    with Agent(stream_fn=model) as agent:
        first = agent.start("first")
        assert first.wait(SAFETY_TIMEOUT).completed
        second = agent.start("second")
        started.wait()
        first.abort()  # settled: does nothing, above all not to the running second run
        release.open()
        outcome = second.wait(SAFETY_TIMEOUT)
        assert outcome.status == "completed" and outcome.stop_reason == "stop"


def test_run_abort_ends_that_run_with_an_aborted_outcome():
    started = Gate()

    def model(request):
        yield {"type": "start"}
        yield {"type": "text_start", "contentIndex": 0}
        started.open()
        while True:
            yield {"type": "text_delta", "contentIndex": 0, "delta": "."}

    with Agent(stream_fn=model) as agent:
        run = agent.start("go")
        started.wait()
        run.abort()
        outcome = run.wait(SAFETY_TIMEOUT)
        assert (outcome.status, outcome.stop_reason) == ("aborted", "aborted")
        with pytest.raises(libagent.AbortedError) as raised:
            outcome.check()
        assert raised.value.messages[-1]["stopReason"] == "aborted"


def test_a_busy_agent_refuses_to_start_and_the_refusal_starts_nothing():
    started, release = Gate(), Gate()

    def model(request):
        started.open()
        release.wait()
        yield "x"

    with Agent(stream_fn=model) as agent:
        run = agent.start("one")
        started.wait()
        with pytest.raises(libagent.BusyError):
            agent.start("two")
        release.open()
        assert roles(run.wait(SAFETY_TIMEOUT).messages) == ["user", "assistant"]


def test_prompt_async_returns_the_outcome_and_a_failed_run_raises():
    def failing(request):
        raise RuntimeError("no network")

    async def main():
        with Agent(scripted=[text_reply("fine")]) as agent:
            outcome = await agent.prompt_async("hi")
        with Agent(stream_fn=failing) as agent:
            with pytest.raises(libagent.ModelError) as raised:
                await agent.prompt_async("hi")
        return outcome, raised.value

    outcome, error = asyncio.run(asyncio.wait_for(main(), SAFETY_TIMEOUT))
    assert isinstance(outcome, RunOutcome) and outcome.status == "completed"
    assert libagent.message_text(outcome.messages[-1]) == "fine"
    assert error.status == "model_error" and error.message == "no network"
    assert error.messages[-1]["stopReason"] == "error"


def test_await_a_started_run():
    async def main():
        with Agent(scripted=[text_reply("awaited")]) as agent:
            return await agent.start("hi")

    outcome = asyncio.run(asyncio.wait_for(main(), SAFETY_TIMEOUT))
    assert libagent.message_text(outcome.messages[-1]) == "awaited"


def test_events_are_structs_with_their_json_on_request():
    script = [calls_reply(tool_call("c1", "echo", {"text": "hi"})), text_reply("abc", chunks=3)]
    seen, json_of_end = [], []

    @libagent.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    def listener(event):
        seen.append(event)
        if event.type == "tool_execution_end":
            json_of_end.append(event.json())

    with Agent(scripted=script, tools=[echo]) as agent:
        agent.subscribe(listener)
        agent.prompt("go")
    deltas = [e for e in seen if e.update == "text_delta"]
    assert [e.delta for e in deltas] == ["a", "b", "c"] and {e.content_index for e in deltas} == {0}
    assert all(e.type == "message_update" for e in deltas)
    starts = [e for e in seen if e.type == "tool_execution_start"]
    assert [(e.tool_call_id, e.tool_name, e.args_json) for e in starts] == [("c1", "echo", '{"text":"hi"}')]
    assert seen[0].type == "agent_start" and seen[0].update is None and seen[0].delta == ""
    assert json_of_end[0]["type"] == "tool_execution_end" and json_of_end[0]["toolCallId"] == "c1"
    with pytest.raises(libagent.InvalidArgumentError, match="no longer delivered"):
        seen[-1].json()  # read after its delivery


def test_an_async_listener_reads_the_event_json_after_awaiting():
    found = []

    async def listener(event):
        await asyncio.sleep(0)
        if event.type == "message_end":
            found.append(event.json()["message"]["role"])

    with Agent(scripted=[text_reply("x")]) as agent:
        agent.subscribe(listener)
        agent.prompt("go")
    assert found == ["user", "assistant"]


def test_a_listener_on_another_thread_answers_later_and_the_loop_waits():
    order = []

    async def slow_listener(event):
        if event.type == "agent_start":
            await asyncio.to_thread(order.append, "slow")

    with Agent(scripted=[text_reply("x")]) as agent:
        agent.subscribe(slow_listener)
        agent.subscribe(lambda event: order.append(event.type) if event.type == "agent_start" else None)
        agent.prompt("go")
    assert order == ["slow", "agent_start"]


def test_a_pulled_event_json_is_readable_until_the_next_take():
    with Agent(scripted=[text_reply("pulled")]) as agent:
        events = agent.events(until="agent_end")
        agent.prompt("go")
        first = events.get(timeout=0)
        assert first.type == "agent_start" and first.json()["type"] == "agent_start"
        second = events.get(timeout=0)
        assert second.type == "turn_start"
        assert first.json()["type"] == "agent_start"  # built while it was current: kept
        with pytest.raises(libagent.InvalidArgumentError, match="no longer delivered"):
            first.json("lean")  # not built then, and no longer current
        assert second.json("lean")["type"] == "turn_start"
        events.close()

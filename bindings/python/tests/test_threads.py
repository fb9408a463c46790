"""Threads: many threads on one agent, several agents at once, the runtime-thread rule, where
plain hooks and listeners run, close during a run, aborting a streaming model."""

import threading
import time

import pytest

import libagent
from libagent import Agent
from conftest import SAFETY_TIMEOUT, Gate, text_reply


def echo_model(request):
    last = request["context"]["messages"][-1]
    yield "echo: " + libagent.message_text(last)


def test_many_threads_drive_one_agent():
    successes, busy, errors = [], [], []
    refused = Gate()
    held = []

    def model(request):
        # The first reply waits until another thread's prompt was refused as busy, so both
        # outcomes are forced, not left to timing.
        if not held:
            held.append(True)
            refused.wait()
        yield from echo_model(request)

    with Agent(stream_fn=model) as agent:
        def worker(n):
            for i in range(10):
                try:
                    agent.prompt(f"t{n}-{i}")
                    successes.append(f"t{n}-{i}")
                except libagent.BusyError:
                    busy.append(n)
                    refused.open()
                except Exception as error:  # noqa: BLE001
                    errors.append(error)
                agent.follow_up(f"f{n}-{i}") if i == 5 else None
                agent.state  # concurrent reads
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(SAFETY_TIMEOUT)
        agent.wait_for_idle(SAFETY_TIMEOUT)
        messages = agent.messages
    assert errors == []
    assert successes, "at least one prompt ran"
    assert busy, "no prompt was refused while another ran"
    texts = [libagent.message_text(m) for m in messages]
    # every successful prompt's message is in the transcript, each answered by the model
    for prompt in successes:
        assert texts.count(prompt) == 1
        assert texts[texts.index(prompt) + 1] == "echo: " + prompt
    assert len(successes) + len(busy) == 80


def test_several_agents_at_once_stay_isolated():
    results = {}

    def drive(n):
        with Agent(system_prompt=f"agent {n}", stream_fn=echo_model) as agent:
            for i in range(5):
                agent.prompt(f"a{n}-{i}")
            results[n] = [libagent.message_text(m) for m in agent.messages if m["role"] != "system"]

    threads = [threading.Thread(target=drive, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SAFETY_TIMEOUT)
    assert sorted(results) == list(range(6))
    for n, texts in results.items():
        expected = []
        for i in range(5):
            expected += [f"a{n}-{i}", f"echo: a{n}-{i}"]
        assert texts == expected


def test_blocking_calls_inside_a_callback_raise_would_deadlock():
    caught = []
    with Agent(scripted=[text_reply("x"), text_reply("y")]) as agent:
        def listener(event):
            if event["type"] == "agent_start":
                for call in (lambda: agent.prompt("nested"), lambda: agent.wait_for_idle()):
                    try:
                        call()
                    except libagent.WouldDeadlockError as error:
                        caught.append(error.status)
        agent.subscribe(listener)
        agent.prompt("go")
    assert caught == [-9, -9]


def test_a_plain_hook_runs_off_the_runtime_thread_and_a_listener_on_it():
    """A plain hook that blocks holds up its own run only: another agent's prompt finishes
    meanwhile. Listeners stay on the runtime thread (they answer by returning)."""
    entered, release, released = Gate(), threading.Event(), threading.Event()
    where = {}

    def transform_context(value):
        where["hook"] = libagent._native.on_runtime_thread()
        entered.open()
        release.wait(2.0)
        released.set()
        return None

    def listener(event):
        if event.type == "agent_start":
            where["listener"] = libagent._native.on_runtime_thread()

    with Agent(scripted=[text_reply("slow")], hooks={"transform_context": transform_context}) as slow, \
            Agent(scripted=[text_reply("warm"), text_reply("quick")]) as other:
        slow.subscribe(listener)
        other.prompt("warm up")
        run = slow.start("go")
        entered.wait()
        began = time.monotonic()
        quick = other.prompt("meanwhile")
        elapsed = time.monotonic() - began
        still_waiting = not released.is_set()
        release.set()
        outcome = run.wait(SAFETY_TIMEOUT)
    assert libagent.message_text(quick[-1]) == "quick"
    assert still_waiting, f"the other agent's prompt waited for the hook ({elapsed:.3f} s)"
    assert libagent.message_text(outcome.messages[-1]) == "slow"
    assert where == {"hook": False, "listener": True}


def test_closing_the_agent_during_a_run_raises_freed_in_the_waiting_thread():
    started, release = Gate(), Gate()
    outcome = {}

    def model(request):
        started.open()
        release.wait()
        yield "too late"

    agent = Agent(stream_fn=model)

    def run():
        try:
            agent.prompt("go")
        except libagent.AgentError as error:
            outcome["error"] = error

    runner = threading.Thread(target=run)
    runner.start()
    started.wait()
    agent.close()
    runner.join(SAFETY_TIMEOUT)
    release.open()
    assert isinstance(outcome["error"], libagent.FreedError)
    assert outcome["error"].status == "freed"


def test_abort_stops_a_streaming_generator():
    closed = Gate()
    pushed = Gate()

    def model(request):
        try:
            yield {"type": "start"}
            yield {"type": "text_start", "contentIndex": 0}
            while True:
                yield {"type": "text_delta", "contentIndex": 0, "delta": "."}
                pushed.open()
        finally:
            closed.open()

    with Agent(stream_fn=model) as agent:
        def stopper(event):
            if event.get("assistantMessageEvent", {}).get("type") == "text_delta":
                agent.abort()
        agent.subscribe(stopper)
        with pytest.raises(libagent.AbortedError) as aborted:
            agent.prompt("go on forever")
        closed.wait()
    new = aborted.value.messages
    assert aborted.value.message == "Request was aborted"
    assert new[-1]["stopReason"] == "aborted"
    assert new[-1]["errorMessage"] == "Request was aborted"


def test_event_stream_read_with_for_on_another_thread():
    with Agent(scripted=[text_reply("pulled", chunks=2)]) as agent:
        events = agent.events(shape="lean", capacity=1, until="agent_end")
        with pytest.raises(libagent.AgentTimeoutError) as info:
            events.get(timeout=0)
        assert info.value.status == "timeout"
        types = []
        reader = threading.Thread(target=lambda: types.extend(event["type"] for event in events))
        reader.start()
        agent.prompt("go")  # capacity 1: the loop waits for the reader at every event
        reader.join(SAFETY_TIMEOUT)
        assert types[0] == "agent_start" and types[-1] == "agent_end"
        assert types.count("message_update") == 4  # text_start, two text_delta, text_end
        with pytest.raises(libagent.QueueClosedError):
            events.get(timeout=0)

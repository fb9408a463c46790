"""Host-pumped mode (C ABI 1.0 AgentDispatcher): an agent built with a Dispatcher calls Python
only inside dispatch() (or a blocking wait), on the pumping thread."""

import threading

import pytest

import libagent
from libagent import Agent, Dispatcher, tool
from conftest import SAFETY_TIMEOUT, roles, text_reply


def _threads_of_every_callback():
    """An agent's worth of callbacks (stream function, tool, hook, listener, prepare_arguments)
    that record the thread they ran on."""
    threads = []

    def model(request):
        threads.append(("stream_fn", threading.get_ident()))
        if not any(kind == "tool" for kind, _ in threads):
            return [{"type": "start"}, {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "work"},
                    {"type": "toolcall_end", "contentIndex": 0,
                     "toolCall": {"type": "toolCall", "id": "c1", "name": "work", "arguments": {"n": 2}}},
                    {"type": "done", "reason": "toolUse"}]
        return ["done"]

    def prepare(args):
        threads.append(("prepare_arguments", threading.get_ident()))
        return args

    @tool(prepare_arguments=prepare)
    def work(n: int) -> int:
        """Work."""
        threads.append(("tool", threading.get_ident()))
        return n * 2

    def hook(context):
        threads.append(("before_tool_call", threading.get_ident()))

    def listener(event):
        threads.append(("listener", threading.get_ident()))

    return threads, dict(stream_fn=model, tools=[work], hooks={"before_tool_call": hook}), listener


def test_every_callback_runs_on_the_pumping_thread():
    threads, options, listener = _threads_of_every_callback()
    with Dispatcher() as dispatcher, Agent(dispatcher=dispatcher, **options) as agent:
        agent.subscribe(listener)
        run = agent.start("go")
        # Nothing of the agent runs until the host pumps: wait until a callback is ready.
        assert dispatcher.wait(SAFETY_TIMEOUT)
        assert threads == []
        pumped = 0
        while not run.done:
            dispatcher.wait(SAFETY_TIMEOUT)
            pumped += dispatcher.dispatch(budget_ms=5)
        outcome = run.outcome
    assert outcome.status == "completed", outcome.error_message
    assert roles(outcome.messages) == ["user", "assistant", "toolResult", "assistant"]
    assert outcome.messages[2]["details"] == 4
    kinds = {kind for kind, _ in threads}
    assert kinds == {"stream_fn", "prepare_arguments", "tool", "before_tool_call", "listener"}
    assert {ident for _, ident in threads} == {threading.get_ident()}
    assert pumped >= 1


def test_a_blocking_prompt_pumps_on_the_calling_thread():
    threads, options, listener = _threads_of_every_callback()
    results = {}

    def host():
        with Dispatcher() as dispatcher, Agent(dispatcher=dispatcher, **options) as agent:
            agent.subscribe(listener)
            results["messages"] = agent.prompt("go")
            results["thread"] = threading.get_ident()

    worker = threading.Thread(target=host)
    worker.start()
    worker.join(SAFETY_TIMEOUT)
    assert roles(results["messages"]) == ["user", "assistant", "toolResult", "assistant"]
    assert {ident for _, ident in threads} == {results["thread"]}


def test_dispatch_with_nothing_ready_runs_nothing_and_wait_times_out():
    with Dispatcher() as dispatcher, Agent(dispatcher=dispatcher, scripted=[text_reply("x")]):
        assert dispatcher.dispatch() == 0
        assert dispatcher.wait(timeout=0) is False


def test_a_blocking_wait_inside_a_dispatched_callback_would_deadlock():
    caught = []
    with Dispatcher() as dispatcher, Agent(dispatcher=dispatcher, scripted=[text_reply("x")]) as agent:
        def listener(event):
            if event.type == "agent_start":
                try:
                    run.wait()
                except libagent.WouldDeadlockError as error:
                    caught.append(error.status)
        agent.subscribe(listener)
        run = agent.start("go")
        assert run.wait(SAFETY_TIMEOUT).completed
    assert caught == [libagent.WouldDeadlockError.status]


def test_a_closed_dispatcher_reports_an_invalid_handle():
    dispatcher = Dispatcher()
    dispatcher.close()
    dispatcher.close()  # idempotent
    with pytest.raises(libagent.InvalidHandleError):
        dispatcher.dispatch()


def test_a_blocking_prompt_inside_a_dispatched_callback_is_refused_before_it_starts():
    # libagent refuses a blocking wait inside a dispatch; the binding refuses the prompt before
    # starting it, so no run goes on that nobody waits for.
    caught = []
    with Dispatcher() as dispatcher:
        other = Agent(dispatcher=dispatcher, scripted=[text_reply("never")])
        with other, Agent(dispatcher=dispatcher, scripted=[text_reply("x")]) as agent:
            def listener(event):
                if event.type == "agent_start":
                    try:
                        other.prompt("nested")
                    except libagent.WouldDeadlockError as error:
                        caught.append(error.status)
            agent.subscribe(listener)
            run = agent.start("go")
            while not run.done:
                dispatcher.wait(SAFETY_TIMEOUT)
                dispatcher.dispatch()
            assert run.outcome.completed
            assert other.messages == []  # refused before it started
    assert caught == [libagent.WouldDeadlockError.status]

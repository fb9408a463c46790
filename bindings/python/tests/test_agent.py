"""The Agent class: construction, runs, state, queues, errors, lifecycle."""

import gc
import os
import re
import threading
import weakref
from pathlib import Path

import pytest

import libagent
from libagent import Agent, tool
from conftest import Gate, calls_reply, registry_size, roles, text_reply, tool_call, wait_until

MODEL = {"id": "scripted", "api": "faux", "provider": "libagent"}


def test_library_is_bundled_in_the_package():
    if os.environ.get("LIBAGENT_LIBRARY"):
        pytest.skip("LIBAGENT_LIBRARY overrides the bundled library")
    assert Path(libagent.LIBRARY_PATH).parent == Path(libagent.__file__).parent
    # The package is versioned with the library it bundles.
    assert libagent.version() == libagent.__version__ == "1.0.0"


def test_prompt_returns_the_new_messages_and_state_reflects_them():
    with Agent(system_prompt="Be brief.", model=MODEL, thinking_level="low",
               scripted=[text_reply("Hello there!", chunks=3)]) as agent:
        new = agent.prompt("hi")
        assert roles(new) == ["user", "assistant"]
        assert libagent.message_text(new[-1]) == "Hello there!"
        state = agent.state
        assert state["systemPrompt"] == "Be brief."
        assert state["model"]["id"] == "scripted"
        assert state["thinkingLevel"] == "low"
        assert state["isStreaming"] is False
        # the transcript starts with the system message carrying the prompt
        assert roles(state["messages"]) == ["system", "user", "assistant"]
        assert agent.messages[-1] == new[-1]


def test_prompt_with_a_message_dict_and_a_list():
    with Agent(scripted=[text_reply("one"), text_reply("two")]) as agent:
        agent.prompt(libagent.user_message("first"))
        new = agent.prompt([libagent.user_message("a"), libagent.user_message("b")])
        assert [libagent.message_text(m) for m in new] == ["a", "b", "two"]


def test_an_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError) as info:
        Agent(scripted=[], bogus_option=1)
    assert str(info.value) == "Agent() got an unexpected keyword argument 'bogus_option'"
    with Agent(scripted=[]) as agent:
        with pytest.raises(TypeError, match="^configure\\(\\) got an unexpected keyword argument 'not_a_setting'$"):
            agent.configure(not_a_setting=True)


# What a Python caller never wrote: C parameters, JSON keys, JavaScript functions.
FOREIGN_NAMES = re.compile(r"\b\w+_json\b|\bagent_\w+|streamFn|setDefault|initialState|[a-z]+(Ms|Mode|Prompt|Level)\b")


def test_error_texts_use_python_names():
    failures = []
    with Agent(scripted=[]) as agent:
        for bad in (lambda: agent.configure(steering_mode=5), lambda: agent.configure(max_retry_delay_ms="soon"),
                    lambda: agent.set_messages([{"no": "role"}]), lambda: agent.set_messages([1]),
                    lambda: agent.steer({"no": "role"}), lambda: agent.set_scripted_model([5])):
            with pytest.raises(libagent.AgentError) as info:
                bad()
            failures.append(info.value.message)
    for bad_options in ({"system_prompt": 5}, {"thinking_level": "loud"}, {"messages": [{"no": "role"}]},
                        {"model": 5}, {"initial_state": {"tools": []}}):
        with pytest.raises(libagent.AgentError) as info:
            Agent(scripted=[], **bad_options)
        failures.append(info.value.message)
    with Agent(scripted=[]) as agent:
        agent.set_stream_fn(None)  # no model and no process-wide default: the reference's text
        with pytest.raises(libagent.AgentError) as info:
            agent.prompt("hi")
        failures.append(info.value.message)
    assert "set_default_stream_fn" in failures[-1]
    assert "system_prompt" in failures[6] and "thinking_level" in failures[7]
    assert [text for text in failures if FOREIGN_NAMES.search(text)] == []


def test_without_a_model_agent_new_fails_with_no_stream_fn():
    with pytest.raises(libagent.NoStreamFnError) as info:
        Agent(system_prompt="x")
    assert info.value.status == -13
    assert info.value.message


def test_default_stream_fn_is_used_by_agents_built_later(baseline):
    libagent.set_default_stream_fn(lambda request: ["from the default"])
    try:
        with Agent() as agent:
            assert libagent.message_text(agent.prompt("x")[-1]) == "from the default"
    finally:
        libagent.set_default_stream_fn(None)
    wait_until(lambda: registry_size() == baseline, "the default stream fn to be released")


def test_prompt_during_a_run_raises_busy_error():
    gate, started = Gate(), Gate()

    def model(request):
        started.open()
        gate.wait()
        yield "done"

    with Agent(stream_fn=model) as agent:
        runner = threading.Thread(target=agent.prompt, args=("first",))
        runner.start()
        started.wait()
        with pytest.raises(libagent.BusyError) as info:
            agent.prompt("second")
        assert info.value.status == -5
        assert "already processing" in info.value.message
        with pytest.raises(libagent.BusyError):
            agent.reset()
        gate.open()
        runner.join()
        assert [libagent.message_text(m) for m in agent.messages] == ["first", "done"]


def test_continue_without_messages_is_invalid_state():
    with Agent(scripted=[]) as agent:
        with pytest.raises(libagent.InvalidStateError) as info:
            agent.continue_()
        assert info.value.status == -6


def test_continue_resumes_from_a_user_message():
    with Agent(scripted=[text_reply("resumed")], messages=[libagent.user_message("pending question")]) as agent:
        new = agent.continue_()
        assert roles(new) == ["assistant"]
        assert libagent.message_text(new[0]) == "resumed"


def test_follow_up_queue_peek_clear_and_delivery():
    with Agent(scripted=[text_reply("first answer"), text_reply("second answer")]) as agent:
        agent.follow_up("and then?")
        assert agent.has_queued_messages()
        assert libagent.message_text(agent.peek_queued_messages()[0]) == "and then?"
        agent.steer("dropped")
        agent.clear_steering_queue()
        new = agent.prompt("start")
        assert [libagent.message_text(m) for m in new] == ["start", "first answer", "and then?", "second answer"]
        assert not agent.has_queued_messages()
        agent.follow_up("x")
        agent.clear_all_queues()
        assert not agent.has_queued_messages()


def test_steering_from_a_listener_reaches_the_next_turn():
    @tool
    def noop() -> str:
        """Does nothing."""
        return "ok"

    script = [calls_reply(tool_call("c1", "noop", {})), text_reply("steered")]
    with Agent(scripted=script, tools=[noop]) as agent:
        def listener(event):
            if event["type"] == "tool_execution_start":
                agent.steer("change of plan")
        agent.subscribe(listener)
        new = agent.prompt("go")
        assert roles(new) == ["user", "assistant", "toolResult", "user", "assistant"]
        assert libagent.message_text(new[3]) == "change of plan"


def test_reset_configure_and_set_messages():
    with Agent(scripted=[text_reply("a")]) as agent:
        agent.prompt("x")
        agent.reset()
        assert agent.messages == []
        agent.configure(thinking_level="high", steering_mode="all", session_id="s-1")
        state = agent.state
        assert (state["thinkingLevel"], state["steeringMode"], state["sessionId"]) == ("high", "all", "s-1")
        with pytest.raises(TypeError, match="not_a_setting"):
            agent.configure(not_a_setting=True)
        agent.set_messages([libagent.user_message("restored")])
        assert [libagent.message_text(m) for m in agent.messages] == ["restored"]
        with pytest.raises(libagent.InvalidJsonError):
            agent.set_messages([{"no": "role"}])


def test_subscribe_and_unsubscribe():
    with Agent(scripted=[text_reply("one", chunks=2), text_reply("two")]) as agent:
        seen = []
        subscription = agent.subscribe(lambda event: seen.append(event["type"]))
        agent.prompt("x")
        assert seen[0] == "agent_start" and seen[-1] == "agent_end"
        assert seen.count("message_update") >= 2
        count = len(seen)
        subscription.unsubscribe()
        subscription.unsubscribe()  # idempotent
        agent.prompt("y")
        assert len(seen) == count


def test_lean_events_carry_deltas_without_partials():
    with Agent(scripted=[text_reply("abcdef", chunks=3)]) as agent:
        deltas = []

        def listener(event):
            update = event.get("assistantMessageEvent", {})
            if update.get("type") == "text_delta":
                deltas.append(update["delta"])
                assert "partial" not in update
        agent.subscribe(listener, shape="lean")
        agent.prompt("x")
        assert "".join(deltas) == "abcdef" and len(deltas) == 3


def test_a_failing_listener_fails_the_run():
    def listener(event):
        if event["type"] == "message_end":
            raise RuntimeError("listener exploded")

    with Agent(scripted=[text_reply("hi")]) as agent:
        agent.subscribe(listener)
        with pytest.raises(libagent.RunFailedError) as info:
            agent.prompt("x")
        assert info.value.status == "failed"
        assert "listener exploded" in info.value.message


def test_closed_agent_reports_invalid_handle_and_close_is_idempotent():
    agent = Agent(scripted=[])
    agent.close()
    agent.close()
    assert agent.closed
    with pytest.raises(libagent.InvalidHandleError) as info:
        agent.state
    assert info.value.status == -2


def test_context_manager_releases_every_callback(baseline):
    def model(request):
        yield "hi"

    def hook(value):
        return None

    def work() -> str:
        """Work."""
        return "done"

    refs = [weakref.ref(model), weakref.ref(hook), weakref.ref(work)]
    with Agent(stream_fn=model, tools=[tool(work)], hooks={"transform_context": hook}) as agent:
        listener = lambda event: None  # noqa: E731
        refs.append(weakref.ref(listener))
        agent.subscribe(listener)
        agent.prompt("x")
        assert registry_size() > baseline
    assert agent.closed
    del model, hook, work, listener
    wait_until(lambda: registry_size() == baseline, "finalizers to release every registration")
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_replacing_a_hook_or_unsubscribing_releases_the_old_callback(baseline):
    with Agent(scripted=[]) as agent:
        agent.set_hook("beforeToolCall", lambda value: None)
        first = registry_size()
        agent.set_hook("before_tool_call", lambda value: None)
        wait_until(lambda: registry_size() == first, "the replaced hook to be released")
        agent.set_hook("before_tool_call", None)
        subscription = agent.subscribe(lambda event: None)
        subscription.unsubscribe()
        wait_until(lambda: registry_size() == baseline, "hook and listener to be released")
        with pytest.raises(ValueError):
            agent.set_hook("no_such_hook", lambda value: None)


def test_an_unreferenced_agent_is_closed_by_the_garbage_collector(baseline):
    agent = Agent(stream_fn=lambda request: ["x"], tools=[tool(lambda: "y", name="y")])
    ref = weakref.ref(agent)
    del agent
    gc.collect()
    assert ref() is None
    wait_until(lambda: registry_size() == baseline, "the collected agent's callbacks to be released")


EXIT_SCRIPT = """
import libagent
from libagent import Agent, tool

@tool
def ping() -> str:
    "Ping."
    return "pong"

script = [{"content": [{"type": "toolCall", "id": "c1", "name": "ping", "arguments": {}}]},
          {"content": [{"type": "text", "text": "done"}]}]
for _ in range(3):
    with Agent(scripted=script, tools=[ping]) as agent:
        agent.prompt("go")
left_open = Agent(scripted=script, tools=[ping])
left_open.prompt("go")
print("ok")
"""


def test_the_interpreter_exits_cleanly_while_libagent_still_owes_finalizers():
    # After agent_free, libagent runs the tools' finalizers later on its runtime thread; one
    # reaching Python during interpreter finalization would abort the process.
    import subprocess
    import sys
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True,
                                timeout=60)
        assert (result.returncode, result.stdout.strip()) == (0, "ok"), result.stderr

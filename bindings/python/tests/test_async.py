"""asyncio: async tools, hooks and stream functions, prompt_async, async for over events."""

import asyncio

import pytest

import libagent
from libagent import Agent, tool
from conftest import SAFETY_TIMEOUT, calls_reply, roles, text_reply, tool_call


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, SAFETY_TIMEOUT))


def test_prompt_async_runs_coroutines_on_the_callers_loop():
    loops = {}

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        loops["tool"] = asyncio.get_running_loop()
        await asyncio.sleep(0)
        return key.upper()

    async def before_tool_call(context):
        loops["hook"] = asyncio.get_running_loop()
        return None

    async def main():
        script = [calls_reply(tool_call("c1", "lookup", {"key": "abc"})), text_reply("found")]
        with Agent(scripted=script, tools=[lookup], hooks={"before_tool_call": before_tool_call}) as agent:
            outcome = await agent.prompt_async("find abc")
        return asyncio.get_running_loop(), outcome

    loop, outcome = run(main())
    assert loops["tool"] is loop and loops["hook"] is loop
    assert (outcome.status, outcome.stop_reason, outcome.error_message) == ("completed", "stop", "")
    assert outcome.message_count == 4
    assert libagent.message_text(outcome.messages[2]) == "ABC"


def test_async_tool_with_blocking_prompt_runs_on_the_background_loop():
    @tool
    async def slow(n: int) -> int:
        """Double later."""
        await asyncio.sleep(0.001)
        return n * 2

    with Agent(scripted=[calls_reply(tool_call("c1", "slow", {"n": 21})), text_reply("ok")], tools=[slow]) as agent:
        new = agent.prompt("go")
    assert new[2]["details"] == 42


def test_async_generator_stream_function():
    async def model(request):
        for piece in ("async ", "streamed ", "text"):
            await asyncio.sleep(0)
            yield piece

    async def main():
        with Agent(stream_fn=model) as agent:
            return (await agent.prompt_async("hi")).messages

    new = run(main())
    assert libagent.message_text(new[-1]) == "async streamed text"
    assert new[-1]["stopReason"] == "stop"


def test_coroutine_stream_function_returning_a_final_message():
    async def model(request):
        await asyncio.sleep(0)
        return {"role": "assistant", "content": [{"type": "text", "text": "final only"}], "api": "py",
                "provider": "py", "model": "m", "stopReason": "stop", "timestamp": 0,
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}

    with Agent(stream_fn=model) as agent:
        new = agent.prompt("hi")
    assert libagent.message_text(new[-1]) == "final only"


def test_async_for_over_the_event_queue_matches_the_listener():
    async def main():
        with Agent(scripted=[text_reply("streamed answer", chunks=4)]) as agent:
            pushed = []
            agent.subscribe(lambda event: pushed.append(event))
            pulled = []
            async with agent.events(until="agent_end") as events:
                run_task = asyncio.create_task(agent.prompt_async("hi"))
                async for event in events:
                    pulled.append(event)
                await run_task
            return pushed, pulled

    pushed, pulled = run(main())
    assert pulled == pushed
    assert pulled[-1].type == "agent_end"
    deltas = [e.delta for e in pulled if e.update == "text_delta"]
    assert "".join(deltas) == "streamed answer"


def test_event_stream_ends_when_the_agent_is_closed():
    async def main():
        agent = Agent(scripted=[text_reply("x")])
        events = agent.events(shape="lean")
        await agent.prompt_async("hi")
        agent.close()
        return [event["type"] async for event in events]

    types = run(main())
    assert types[0] == "agent_start" and types[-1] == "agent_end"


def test_cancelling_prompt_async_aborts_the_run():
    async def main():
        started = asyncio.Event()

        async def model(request):
            yield {"type": "start"}
            started.set()
            await asyncio.sleep(3600)  # cancelled by the abort
            yield {"type": "done", "reason": "stop"}

        with Agent(stream_fn=model) as agent:
            task = asyncio.create_task(agent.prompt_async("wait"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.to_thread(agent.wait_for_idle, SAFETY_TIMEOUT)
            return agent.messages

    messages = run(main())
    assert roles(messages) == ["user", "assistant"]
    assert messages[-1]["stopReason"] == "aborted"


def test_async_listener_is_awaited_before_the_loop_continues():
    order = []

    async def listener(event):
        await asyncio.sleep(0)
        order.append(event["type"])

    with Agent(scripted=[text_reply("x")]) as agent:
        agent.subscribe(listener)
        agent.subscribe(lambda event: order.append("sync:" + event["type"]))
        agent.prompt("go")
    # every async listener call finished before the next listener saw the same event
    assert order[:2] == ["agent_start", "sync:agent_start"]
    assert order[-2:] == ["agent_end", "sync:agent_end"]

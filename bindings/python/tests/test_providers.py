"""The built-in providers from Python, against the loopback mock endpoint of tests/examples, and
failed or aborted runs surfacing as exceptions."""

import os
import socket
import sys
import threading
import types

import pytest

from conftest import Gate, libagent, text_reply

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "examples"))
from mock_endpoint import ANSWER, GOOD_KEY, MockEndpoint  # noqa: E402


@pytest.fixture
def mock():
    with MockEndpoint() as endpoint:
        yield endpoint


def model(mock, api="openai-completions", provider="acme-local"):
    base = f"http://127.0.0.1:{mock.port}" + ("/v1" if api.startswith("openai-") else "")
    return {"id": "mock-model", "api": api, "provider": provider, "baseUrl": base, "reasoning": False,
            "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 32000, "maxTokens": 1000}


def key_hook(key):
    seen = []

    def get_api_key(provider):
        seen.append(provider)
        return key
    return get_api_key, seen


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages", "openai-responses",
                                 "google-generative-ai"])
def test_a_model_with_a_provider_api_talks_to_the_endpoint(mock, api):
    get_api_key, seen = key_hook(GOOD_KEY)
    with libagent.Agent(model=model(mock, api), hooks={"get_api_key": get_api_key}) as agent:
        added = agent.prompt("hello")
    assert libagent.message_text(added[-1]) == ANSWER
    assert added[-1]["stopReason"] == "stop"
    assert seen == ["acme-local"]
    assert len(mock.requests) == 1
    assert b"hello" in mock.requests[0]["body"]


def test_the_key_comes_from_the_providers_environment_variable(mock, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
    with libagent.Agent(model=model(mock, provider="openai")) as agent:
        assert libagent.message_text(agent.prompt("hi")[-1]) == ANSWER
    assert mock.requests[0]["headers"]["authorization"] == "Bearer " + GOOD_KEY


def test_a_failed_request_raises_model_error_with_the_servers_message(mock):
    get_api_key, _ = key_hook("wrong-key")
    with libagent.Agent(model=model(mock), hooks={"get_api_key": get_api_key}) as agent:
        with pytest.raises(libagent.ModelError) as raised:
            agent.prompt("hello")
        assert raised.value.status == libagent.ModelError.status
        assert "401" in raised.value.message and "invalid api key" in raised.value.message
        assert raised.value.messages[-1]["stopReason"] == "error"
        assert raised.value.messages[-1]["errorMessage"] == raised.value.message
        # The agent stays usable: the next run fails the same way, asynchronously too.
        import asyncio
        with pytest.raises(libagent.ModelError, match="invalid api key"):
            asyncio.run(agent.prompt_async("again"))
    assert len(mock.requests) == 2


def test_a_missing_key_raises_model_error_naming_the_provider(mock, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with libagent.Agent(model=model(mock, provider="openai")) as agent:
        with pytest.raises(libagent.ModelError, match="openai"):
            agent.prompt("hello")
    assert mock.requests == []


def test_an_aborted_run_raises_aborted_error_not_model_error():
    started = Gate()
    with libagent.Agent(scripted=[{"content": [], "waitForAbort": True}, text_reply("after")]) as agent:
        agent.subscribe(lambda event: started.open() if event["type"] == "message_start" else None)
        outcome = {}

        def run():
            try:
                agent.prompt("wait")
            except libagent.AgentError as error:
                outcome["error"] = error
        thread = threading.Thread(target=run)
        thread.start()
        started.wait()
        agent.abort()
        thread.join(20)
        assert isinstance(outcome["error"], libagent.AbortedError)
        assert not isinstance(outcome["error"], libagent.ModelError)
        assert outcome["error"].messages[-1]["stopReason"] == "aborted"
        assert libagent.message_text(agent.prompt("next")[-1]) == "after"


def test_use_providers_false_keeps_the_old_requirement_with_python_names(mock):
    with pytest.raises(libagent.NoStreamFnError) as raised:
        libagent.Agent(model=model(mock), use_providers=False)
    assert "stream_fn" in raised.value.message and "use_providers" in raised.value.message
    assert "streamFn" not in raised.value.message and "setDefaultStreamFn" not in raised.value.message
    with pytest.raises(ValueError, match="use_providers"):
        libagent.Agent(scripted=[], use_providers=True)


def test_an_unknown_api_names_every_api_the_providers_speak():
    with pytest.raises(libagent.NoStreamFnError) as raised:
        libagent.Agent(model={"id": "x", "api": "faux", "provider": "p"})
    assert libagent.PROVIDER_APIS == ("openai-completions", "anthropic-messages", "openai-responses",
                                      "google-generative-ai")
    for api in libagent.PROVIDER_APIS:
        assert api in raised.value.message


def test_use_providers_true_and_the_method_select_them(mock):
    get_api_key, _ = key_hook(GOOD_KEY)
    with libagent.Agent(model={"id": "x", "api": "faux", "provider": "p"}, use_providers=True) as agent:
        with pytest.raises(libagent.ModelError, match="No API provider registered for api: faux"):
            agent.prompt("hi")
    with libagent.Agent(scripted=[], model=model(mock), hooks={"get_api_key": get_api_key}) as agent:
        agent.use_providers()
        assert libagent.message_text(agent.prompt("hi")[-1]) == ANSWER


def test_provider_options_are_keyword_arguments_and_errors_use_their_names(mock):
    get_api_key, _ = key_hook(GOOD_KEY)
    with libagent.Agent(model=model(mock), hooks={"get_api_key": get_api_key}, max_retry_delay_ms=500) as agent:
        assert agent.state["maxRetryDelayMs"] == 500
        assert libagent.message_text(agent.prompt("hi")[-1]) == ANSWER
        with pytest.raises(libagent.InvalidJsonError, match='"max_retry_delay_ms"'):
            agent.configure(max_retry_delay_ms="soon")
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_retry_delay'"):
        libagent.Agent(model=model(mock), max_retry_delay=1)


def test_transport_options_reach_the_providers():
    # A server that accepts and never answers: the idle timeout ends the request.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        get_api_key, _ = key_hook(GOOD_KEY)
        quiet = model(types.SimpleNamespace(port=port))
        with libagent.Agent(model=quiet, hooks={"get_api_key": get_api_key}, idle_timeout_ms=200,
                            max_retries=0, timeout_ms=60000, connect_timeout_ms=5000) as agent:
            with pytest.raises(libagent.ModelError, match=r"\(idle_timeout_ms\)"):
                agent.prompt("hello")
    with pytest.raises(libagent.InvalidJsonError, match='"idle_timeout_ms"'):
        libagent.Agent(model=quiet, idle_timeout_ms=-1)


def test_a_process_wide_default_takes_precedence_and_a_missing_model_is_named_in_python(mock):
    libagent.set_default_scripted_model([text_reply("from the default")])
    try:
        with libagent.Agent(model=model(mock)) as agent:
            assert libagent.message_text(agent.prompt("hi")[-1]) == "from the default"
    finally:
        libagent.set_default_stream_fn(None)
    assert mock.requests == []
    with libagent.Agent(scripted=[]) as agent:
        agent.set_stream_fn(None)  # no default left: the run fails, in Python's terms
        with pytest.raises(libagent.ModelError) as raised:
            agent.prompt("hi")
        assert "stream_fn" in raised.value.message and "setDefaultStreamFn" not in raised.value.message

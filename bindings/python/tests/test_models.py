"""The model catalogue from Python: find_model by "provider/id", list_models, the error of an
unknown name, and a catalogue model as an agent's model."""

import pytest

import libagent
from libagent import Agent, UnknownModelError, find_model, list_models


def test_find_model_gives_the_catalogue_facts():
    model = find_model("anthropic/claude-sonnet-4-5")
    assert list(model)[:5] == ["id", "name", "api", "provider", "baseUrl"]  # pi-ai's order
    assert model["api"] == "anthropic-messages"
    assert model["baseUrl"] == "https://api.anthropic.com"
    assert (model["contextWindow"], model["maxTokens"]) == (200000, 64000)
    assert model["cost"] == {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
    # The id holds a slash: the name splits at its first one.
    routed = find_model("openrouter/anthropic/claude-sonnet-4.5")
    assert (routed["provider"], routed["id"]) == ("openrouter", "anthropic/claude-sonnet-4.5")


def test_an_unknown_model_is_a_lookup_error_naming_it():
    with pytest.raises(UnknownModelError) as raised:
        find_model("anthropic/claude-nonexistent")
    message = str(raised.value)
    assert "Unknown model 'anthropic/claude-nonexistent'" in message
    assert "no model 'claude-nonexistent' for provider 'anthropic'" in message
    assert message.endswith("; libagent.list_models() lists the models.")
    assert "agent_model_list" not in message
    assert isinstance(raised.value, LookupError) and isinstance(raised.value, libagent.InvalidArgumentError)
    with pytest.raises(UnknownModelError, match='name a model as "provider/id"'):
        find_model("claude-sonnet-4-5")


def test_list_models():
    anthropic = list_models("anthropic")
    assert {model["provider"] for model in anthropic} == {"anthropic"}
    assert any(model["id"] == "claude-sonnet-4-5" for model in anthropic)
    everything = list_models()
    assert len(everything) > len(anthropic)
    assert {"anthropic", "openai", "google"} <= {model["provider"] for model in everything}
    with pytest.raises(UnknownModelError, match="Unknown provider 'nobody'"):
        list_models("nobody")


def test_a_catalogue_model_is_an_agents_model():
    model = find_model("google/gemini-2.5-flash")
    with Agent(model=model, use_providers=True) as agent:
        assert agent.state["model"] == model

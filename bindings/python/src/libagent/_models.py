"""The model catalogue built into libagent: pi-ai 1.6.0's models by "provider/id", each a model
dict ready for `Agent(model=...)` (api, baseUrl, contextWindow, maxTokens, reasoning, input, and
cost in dollars per million tokens, which the built-in providers price usage with).

    from libagent import Agent, find_model

    with Agent(model=find_model("anthropic/claude-sonnet-4-5")) as agent:   # key: ANTHROPIC_API_KEY
        agent.prompt("hello")
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import _native as native
from ._errors import InvalidArgumentError

# How libagent's messages end for a C caller; Python callers list with list_models().
_C_HINT = "; agent_model_list"


class UnknownModelError(InvalidArgumentError, LookupError):
    """The catalogue has no model of that name (or no provider of that name)."""


def _in_python(error: Exception) -> Exception:
    if isinstance(error, InvalidArgumentError):
        head = error.message.split(_C_HINT)[0]
        return UnknownModelError(f"{head.rstrip('.')}; libagent.list_models() lists the models.")
    return error


def find_model(name: str) -> Dict[str, Any]:
    """The catalogue's model named "provider/id" (split at the first slash:
    "openrouter/anthropic/claude-sonnet-4.5" is OpenRouter's "anthropic/claude-sonnet-4.5"), its
    keys in pi-ai's order. Raises UnknownModelError (a LookupError and ValueError) naming an
    unknown model; InvalidStateError when the library was built without the catalogue."""
    data = name.encode("utf-8")
    try:
        return native.take_json(native.lib.agent_model_find, data, len(data))
    except InvalidArgumentError as error:
        raise _in_python(error) from None


def list_models(provider: Optional[str] = None) -> List[Dict[str, Any]]:
    """The catalogue's models of `provider` (every provider's when None), in pi-ai's order.
    Raises UnknownModelError for a provider the catalogue does not have."""
    data = None if provider is None else provider.encode("utf-8")
    try:
        return native.take_json(native.lib.agent_model_list, *native.text(data))
    except InvalidArgumentError as error:
        raise _in_python(error) from None

"""A terminal chat with a real model through libagent's built-in providers.

    LIBAGENT_API=openai-completions LIBAGENT_BASE_URL=http://127.0.0.1:8080/v1 \\
    LIBAGENT_MODEL=qwen2.5-coder-7b LIBAGENT_API_KEY=none python examples/python/chat.py

Configuration (as examples/c/assistant.c):
  LIBAGENT_API        openai-completions | anthropic-messages | openai-responses | google-generative-ai
  LIBAGENT_BASE_URL   e.g. http://127.0.0.1:8080/v1 (llama.cpp), https://api.anthropic.com,
                      https://generativelanguage.googleapis.com/v1beta (Gemini)
  LIBAGENT_MODEL      the model id the server knows, or a model of libagent's catalogue
                      ("anthropic/claude-sonnet-4-5"), which gives the API, base URL, provider,
                      limits and prices (the other variables, when set, override them)
  LIBAGENT_PROVIDER   optional (default openai / anthropic / google: picks the key's environment
                      variable, OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...)
  LIBAGENT_API_KEY    optional: the key to send instead (any value for servers without auth)
  LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS   optional (default: the catalogue's, else 128000, 4096)

Type a message per line; the answer streams in. Ctrl-D quits. A failed request (wrong key, URL
or model) prints the server's error and exits with status 1.
"""

import os
import sys

import libagent

APIS = {"openai-completions": "openai", "anthropic-messages": "anthropic", "openai-responses": "openai",
        "google-generative-ai": "google"}


def model_from_env():
    api, base_url, model_id = (os.environ.get(name, "") for name in
                               ("LIBAGENT_API", "LIBAGENT_BASE_URL", "LIBAGENT_MODEL"))
    catalogued = unknown = None
    if model_id:
        try:  # a model of libagent's catalogue ("anthropic/claude-sonnet-4-5")?
            catalogued = libagent.find_model(model_id)
        except libagent.UnknownModelError as error:
            unknown = error
    if catalogued is not None:
        # The catalogue's facts; the variables, when set, override them.
        model = dict(catalogued, api=api or catalogued["api"], baseUrl=base_url or catalogued["baseUrl"],
                     provider=os.environ.get("LIBAGENT_PROVIDER") or catalogued["provider"],
                     contextWindow=int(os.environ.get("LIBAGENT_CONTEXT_WINDOW") or catalogued["contextWindow"]),
                     maxTokens=int(os.environ.get("LIBAGENT_MAX_TOKENS") or catalogued["maxTokens"]))
        if model["api"] not in APIS:
            sys.exit(f"error: {model_id} speaks the API {model['api']!r}, which the built-in providers do not: "
                     "choose another model")
        return model
    missing = [name for name, value in (("LIBAGENT_API", api), ("LIBAGENT_BASE_URL", base_url),
                                        ("LIBAGENT_MODEL", model_id)) if not value]
    if missing and unknown is not None and "/" in model_id:
        sys.exit(f"error: LIBAGENT_MODEL: {unknown}; or describe the model with LIBAGENT_API and LIBAGENT_BASE_URL")
    if missing:
        sys.exit("error: set " + ", ".join(missing) + " (see the top of examples/python/chat.py)")
    if api not in APIS:
        sys.exit(f"error: LIBAGENT_API must be one of {', '.join(APIS)}, not {api!r}")
    return {
        "id": model_id, "name": model_id, "api": api,
        "provider": os.environ.get("LIBAGENT_PROVIDER") or APIS[api],
        "baseUrl": base_url, "reasoning": False, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": int(os.environ.get("LIBAGENT_CONTEXT_WINDOW", "128000")),
        "maxTokens": int(os.environ.get("LIBAGENT_MAX_TOKENS", "4096")),
    }


def api_key(provider):
    """The get_api_key hook: LIBAGENT_API_KEY when set, else None (the provider's variable)."""
    return os.environ.get("LIBAGENT_API_KEY") or None


def print_text(event):
    # The event's fields cost nothing: no JSON is built for a text delta.
    if event.update == "text_delta":
        print(event.delta, end="", flush=True)


def main():
    # A model whose api the built-in providers speak and no stream_fn: the providers answer.
    with libagent.Agent(system_prompt="You are a helpful assistant. Be brief.", model=model_from_env(),
                        hooks={"get_api_key": api_key}) as agent:
        agent.subscribe(print_text)
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                agent.prompt(line.strip())
            except libagent.ModelError as error:  # the request failed: error.message says why
                print(f"\nerror: {error.message}", file=sys.stderr)
                return 1
            except libagent.AbortedError:
                print("\n(aborted)", file=sys.stderr)
                continue
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

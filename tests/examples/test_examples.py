#!/usr/bin/env python3
"""Runs the chat examples of the C++, Go and Python bindings against the loopback mock endpoint
(mock_endpoint.py), as a user would: LIBAGENT_* variables, a line on stdin. For each example and
each API: the good key streams the mock's answer and exits 0; a wrong key makes the request fail
with 401, which the example reports on stderr with exit status 1; nothing on stdout claims an
answer. Each example also takes a model of libagent's catalogue by name
(LIBAGENT_MODEL=anthropic/claude-sonnet-4-5 and the mock's URL): its API, id and maxTokens reach
the request.

usage: test_examples.py NAME=COMMAND...   (COMMAND is split on spaces)
Prints one line per check and "examples-tests: N passed, M failed"; exits 1 on any failure.
"""

import json
import os
import subprocess
import sys

from mock_endpoint import ANSWER, GOOD_KEY, MockEndpoint

TIMEOUT = 60  # a guard against hangs only


def run(command, mock, api, key):
    base = f"http://127.0.0.1:{mock.port}" + ("/v1" if api.startswith("openai-") else "")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LIBAGENT_API=api, LIBAGENT_BASE_URL=base, LIBAGENT_MODEL="mock-model", LIBAGENT_API_KEY=key)
    return subprocess.run(command, input="Say hello.\n", capture_output=True, text=True, env=env, timeout=TIMEOUT)


def check(name, command, mock):
    failures = []
    for api in ("openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai"):
        before = len(mock.requests)
        ok = run(command, mock, api, GOOD_KEY)
        if ok.returncode != 0 or ANSWER not in ok.stdout or len(mock.requests) != before + 1:
            failures.append(f"{api}, good key: exit {ok.returncode}, stdout {ok.stdout!r}, stderr {ok.stderr!r}")
        bad = run(command, mock, api, "wrong-key")
        if bad.returncode != 1 or "401" not in bad.stderr or "invalid api key" not in bad.stderr \
                or ANSWER in bad.stdout:
            failures.append(f"{api}, wrong key: exit {bad.returncode}, stdout {bad.stdout!r}, stderr {bad.stderr!r}")
    return failures


def check_catalogue(command, mock):
    """LIBAGENT_MODEL names a catalogue model; only the base URL (the mock) and the key are set."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and (k == "LIBAGENT_LIBRARY" or not k.startswith("LIBAGENT_"))}
    env.update(LIBAGENT_MODEL="anthropic/claude-sonnet-4-5", LIBAGENT_BASE_URL=f"http://127.0.0.1:{mock.port}",
               LIBAGENT_API_KEY=GOOD_KEY)
    before = len(mock.requests)
    ok = subprocess.run(command, input="Say hello.\n", capture_output=True, text=True, env=env, timeout=TIMEOUT)
    if ok.returncode != 0 or ANSWER not in ok.stdout or len(mock.requests) != before + 1:
        return [f"catalogue model: exit {ok.returncode}, stdout {ok.stdout!r}, stderr {ok.stderr!r}"]
    request = mock.requests[-1]
    body = json.loads(request["body"])
    if request["path"].split("?")[0] != "/v1/messages" or body.get("model") != "claude-sonnet-4-5" \
            or body.get("max_tokens") != 64000:
        return [f"catalogue model: request {request['path']} model {body.get('model')} max_tokens {body.get('max_tokens')}"]
    return []


def main():
    passed = failed = 0
    with MockEndpoint() as mock:
        for spec in sys.argv[1:]:
            name, command = spec.split("=", 1)
            failures = check(name, command.split(), mock)
            failures += check_catalogue(command.split(), mock)
            if failures:
                failed += 1
                print(f"FAIL  {name}: " + "; ".join(failures), flush=True)
            else:
                passed += 1
                print(f"ok    {name} (a streamed answer; a 401 reported as an error)", flush=True)
    print(f"examples-tests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes libagent's own openai-completions fixtures (tests/providers/fixtures/1xx-oc-*.json).
Their expected traces are recorded with the kit's oracle (pi-ai 1.6.0), see README.md."""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "sk-proj-test-0123456789abcdef"


def model(**over):
    m = {"id": "gpt-4o-mini", "name": "GPT-4o mini", "api": "openai-completions", "provider": "openai",
         "baseUrl": "{{BASE_URL}}/v1", "reasoning": False, "input": ["text", "image"],
         "cost": {"input": 0.15, "output": 0.6, "cacheRead": 0.075, "cacheWrite": 0},
         "contextWindow": 128000, "maxTokens": 16384}
    m.update(over)
    return m


def chunk(delta=None, finish=None, usage=None, cid="chatcmpl-x1", mdl="served-model", choices=True):
    c = {"id": cid, "object": "chat.completion.chunk", "created": 1750000000, "model": mdl}
    c["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []
    if usage is not None:
        c["usage"] = usage
    return "data: " + json.dumps(c, separators=(",", ":")) + "\n\n"


SSE = {"content-type": "text/event-stream"}
USER = {"role": "user", "content": "Hi", "timestamp": 1}
SYSTEM = {"role": "system", "content": "Be brief.", "timestamp": 0}
DONE = "data: [DONE]\n\n"

fixtures = {
    "101-oc-retry-delay-above-cap": {
        "description": "A 429 whose retry-after exceeds options.maxRetryDelayMs fails at once with pi-ai's text; no second request.",
        "request": {"model": model(), "context": {"messages": [SYSTEM, USER]},
                    "options": {"apiKey": KEY, "maxRetries": 2, "maxRetryDelayMs": 5000}},
        "responses": [{"status": 429, "headers": {"content-type": "application/json", "retry-after": "120"},
                       "body": json.dumps({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})}],
    },
    "102-oc-connection-closed-before-headers": {
        "description": "The server closes the connection without answering: Node's connection error text, no start event.",
        "request": {"model": model(), "context": {"messages": [USER]}, "options": {"apiKey": KEY}},
        "responses": [{"noHeaders": True, "end": "disconnect"}],
    },
    "103-oc-openrouter-reasoning-details": {
        "description": "OpenRouter: attribution and session headers, reasoning {effort}, reasoning_details deltas merged into the thinking signature, and a replayed signed turn.",
        "request": {
            "model": model(id="anthropic/claude-sonnet-4.5", provider="openrouter", reasoning=True,
                           baseUrl="{{BASE_URL}}/api/v1"),
            "context": {"messages": [SYSTEM,
                {"role": "user", "content": "First?", "timestamp": 1},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Think A", "thinkingSignature": json.dumps([{"type": "reasoning.text", "text": "Think A", "index": 0, "format": "anthropic-claude-v1", "signature": "sigA"}], separators=(",", ":"))},
                    {"type": "text", "text": "One."}],
                 "api": "openai-completions", "provider": "openrouter", "model": "anthropic/claude-sonnet-4.5",
                 "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                 "stopReason": "stop", "timestamp": 2},
                {"role": "user", "content": "Second?", "timestamp": 3}]},
            "options": {"apiKey": "sk-or-test", "reasoning": "medium", "sessionId": "sess-103",
                        "identity": {"attribution": {"name": "pi", "url": "https://pi.dev", "categories": ["cli-agent", "coding"]}}},
        },
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "content": "", "reasoning_details": [{"type": "reasoning.text", "text": "Let me ", "index": 0, "format": "anthropic-claude-v1"}]}, mdl="anthropic/claude-sonnet-4.5"),
            chunk({"reasoning_details": [{"type": "reasoning.text", "text": "think.", "index": 0, "format": "anthropic-claude-v1", "signature": "sigB"}]}, mdl="anthropic/claude-sonnet-4.5"),
            chunk({"content": "Two."}, mdl="anthropic/claude-sonnet-4.5"),
            chunk({}, finish="stop", usage={"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}, mdl="anthropic/claude-sonnet-4.5"),
            DONE]}],
    },
    "104-oc-error-chunk-with-metadata": {
        "description": "An error object inside the stream (OpenRouter style, with metadata.raw): the stream fails with message + raw, no text_end.",
        "request": {"model": model(), "context": {"messages": [USER]}, "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "content": "Partial"}),
            'data: {"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream overloaded","provider_name":"X"}}}\n\n']}],
    },
    "105-oc-finish-content-filter": {
        "description": "finish_reason content_filter: stop reason error with `Provider finish_reason: content_filter`, blocks closed first.",
        "request": {"model": model(), "context": {"messages": [USER]}, "options": {"apiKey": KEY, "temperature": 0.2, "maxTokens": 100}},
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "content": "I can"}), chunk({}, finish="content_filter"), DONE]}],
    },
    "106-oc-aborted-before-call": {
        "description": "The signal is aborted before the call: no request, one aborted error event.",
        "request": {"model": model(), "context": {"messages": [USER]}, "options": {"apiKey": KEY}},
        "responses": [],
        "abortAfterEvents": 0,
    },
    "107-oc-deepseek-thinking": {
        "description": "DeepSeek: max_tokens field, thinking {type: enabled} + reasoning_effort, no store, reasoning_content replayed and added empty on assistant turns, prompt_cache_hit_tokens usage.",
        "request": {
            "model": model(id="deepseek-reasoner", provider="deepseek", reasoning=True, input=["text"],
                           contextWindow=65536, maxTokens=8192),
            "context": {"messages": [SYSTEM,
                {"role": "user", "content": "Q1", "timestamp": 1},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "r1", "thinkingSignature": "reasoning_content"}, {"type": "text", "text": "A1"}],
                 "api": "openai-completions", "provider": "deepseek", "model": "deepseek-reasoner",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                 "stopReason": "stop", "timestamp": 2},
                {"role": "assistant", "content": [{"type": "text", "text": "A2"}],
                 "api": "openai-completions", "provider": "deepseek", "model": "deepseek-reasoner",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                 "stopReason": "stop", "timestamp": 3},
                {"role": "user", "content": "Q2", "timestamp": 4}]},
            "options": {"apiKey": "sk-ds-test", "reasoning": "high"},
        },
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "reasoning_content": "Hmm"}, mdl="deepseek-reasoner"),
            chunk({"content": "A3"}, mdl="deepseek-reasoner"),
            chunk({}, finish="stop", usage={"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34, "prompt_cache_hit_tokens": 12, "completion_tokens_details": {"reasoning_tokens": 2}}, mdl="deepseek-reasoner"),
            DONE]}],
    },
    "108-oc-tool-results-with-images": {
        "description": "Tool results with images: text joined by newline, image-only result `(see attached image)`, empty result `(no tool output)`, the images as one user message; an orphaned call gets `No result provided`; errored assistant turns are dropped.",
        "request": {
            "model": model(),
            "context": {"messages": [SYSTEM,
                {"role": "user", "content": [{"type": "text", "text": "Look"}, {"type": "text", "text": ""}], "timestamp": 1},
                {"role": "assistant", "content": [{"type": "text", "text": "broken"}], "api": "openai-completions", "provider": "openai", "model": "gpt-4o-mini",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                 "stopReason": "error", "errorMessage": "x", "timestamp": 2},
                {"role": "assistant", "content": [
                    {"type": "toolCall", "id": "call_a", "name": "shot", "arguments": {"n": 1}},
                    {"type": "toolCall", "id": "call_b", "name": "shot", "arguments": {}},
                    {"type": "toolCall", "id": "call_c", "name": "note", "arguments": {"t": "x"}},
                    {"type": "toolCall", "id": "call_d", "name": "note", "arguments": {}}],
                 "api": "openai-completions", "provider": "openai", "model": "gpt-4o-mini",
                 "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                 "stopReason": "toolUse", "timestamp": 3},
                {"role": "toolResult", "toolCallId": "call_a", "toolName": "shot", "content": [{"type": "text", "text": "line1"}, {"type": "text", "text": "line2"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}], "isError": False, "timestamp": 4},
                {"role": "toolResult", "toolCallId": "call_b", "toolName": "shot", "content": [{"type": "image", "data": "BBBB", "mimeType": "image/jpeg"}], "isError": False, "timestamp": 5},
                {"role": "toolResult", "toolCallId": "call_c", "toolName": "note", "content": [], "isError": True, "timestamp": 6},
                {"role": "user", "content": "Now?", "timestamp": 7}]},
            "options": {"apiKey": KEY},
        },
        "responses": [{"status": 200, "headers": SSE, "chunks": [chunk({"role": "assistant", "content": "Seen."}), chunk({}, finish="stop"), DONE]}],
    },
    "109-oc-no-finish-reason-supported-false": {
        "description": "compat.supportsFinishReason false and no finish_reason: a stream with a tool call ends as toolUse; tool call id arriving in a later chunk; usage inside choices[0].",
        "request": {"model": model(provider="llama-local", compat={"supportsFinishReason": False, "supportsStore": False, "supportsUsageInStreaming": False, "maxTokensField": "max_tokens"}),
                    "context": {"messages": [
                        {"role": "system", "content": "Tools.", "toolsAdded": [{"name": "ls", "description": "List.", "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}}], "timestamp": 0},
                        USER]},
                    "options": {"apiKey": "none", "toolChoice": "auto"}},
        "responses": [{"status": 200, "headers": SSE, "body":
            chunk({"role": "assistant", "tool_calls": [{"index": 0, "function": {"name": "ls", "arguments": "{\"dir\""}}]}, cid="")
            + chunk({"tool_calls": [{"index": 0, "id": "call_late", "function": {"arguments": ": \"/tmp\"}"}}]}, cid="c-2")
            + 'data: {"id":"c-2","choices":[{"index":0,"delta":{},"usage":{"prompt_tokens":11,"completion_tokens":7}}]}\n\n'}],
    },
    "110-oc-developer-role-and-cache-key": {
        "description": "A reasoning model of provider openai: developer role, reasoning_effort from thinkingLevelMap, prompt_cache_key (enabled by compat), options.headers override and null-removal of a model header.",
        "request": {"model": model(id="o4-mini", reasoning=True, headers={"x-test-model": "m", "x-test-drop": "d"},
                                   thinkingLevelMap={"low": "minimal-ish"}, compat={"promptCacheKeyMode": "enabled"}),
                    "context": {"messages": [
                        {"role": "system", "content": "Sys.", "sections": {"env": "<env/>"}, "timestamp": 0}, USER,
                        {"role": "system", "content": "Later note.", "sections": {"env": None}, "timestamp": 2}]},
                    "options": {"apiKey": KEY, "reasoning": "low", "sessionId": "s" * 70,
                                "headers": {"x-test-model": "o", "x-test-drop": None, "x-test-req": "r"}}},
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "content": "ok"}, mdl="o4-mini"), chunk({}, finish="length"), DONE]}],
    },
    "111-oc-http-errors-plain-and-empty": {
        "description": "A 503 with a plain-text body retried once by backoff, then a 502 with an empty body: `502 status code (no body)`.",
        "request": {"model": model(), "context": {"messages": [USER]}, "options": {"apiKey": KEY, "maxRetries": 1}},
        "responses": [{"status": 503, "headers": {"content-type": "text/plain", "retry-after-ms": "20"}, "body": "upstream unavailable"},
                      {"status": 502, "headers": {"x-should-retry": "false"}}],
    },
}

os.makedirs(os.path.join(HERE, "fixtures"), exist_ok=True)
for name, fixture in fixtures.items():
    with open(os.path.join(HERE, "fixtures", name + ".json"), "w") as f:
        json.dump(fixture, f, indent=2, ensure_ascii=False)
        f.write("\n")
print(len(fixtures), "fixtures written")

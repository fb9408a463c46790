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

ZERO_USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def turn(content, provider="openai", api="openai-completions", mdl="gpt-4o-mini", stop="toolUse", ts=2):
    return {"role": "assistant", "content": content, "api": api, "provider": provider, "model": mdl,
            "usage": ZERO_USAGE, "stopReason": stop, "timestamp": ts}


def call(cid, name="ls", args=None):
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args if args is not None else {"d": "/"}}


def result(cid, text, name="ls", ts=3):
    return {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": [{"type": "text", "text": text}],
            "isError": False, "timestamp": ts}


# Tool-call ids of a foreign (Responses API) turn: `call_id|item_id`, some far over 40 units.
LONG_ITEM = "fc_" + "A+/=" * 20
PIPE_IDS = ["call_short|fc_1", "call_abcdefghijklmnop|" + LONG_ITEM, "call_é😀x|item+/=" + "z" * 40,
            "call_only|", "call_" + "q" * 45 + "|" + LONG_ITEM]
PLAIN_LONG = "toolu_" + "0123456789" * 5
ANSWER = [chunk({"role": "assistant", "content": "ok"}), chunk({}, finish="stop"), DONE]


def foreign_ids_context():
    ids = PIPE_IDS + [PLAIN_LONG]
    return {"messages": [SYSTEM, USER,
        turn([call(i) for i in ids], provider="github-copilot", api="openai-responses", mdl="gpt-5"),
        *[result(i, "r%d" % n) for n, i in enumerate(ids)],
        {"role": "user", "content": "Next", "timestamp": 4}]}


def openrouter_usage(**billing):
    usage = {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
             "prompt_tokens_details": {"cached_tokens": 200}}
    usage.update(billing)
    return usage


def openrouter_fixture(description, billing, **model_over):
    over = {"id": "qwen/qwen3-coder", "provider": "openrouter", "baseUrl": "{{BASE_URL}}/api/v1",
            "cost": {"input": 0.3, "output": 1.2, "cacheRead": 0.03, "cacheWrite": 0}}
    over.update(model_over)
    return {"description": description,
            "request": {"model": model(**over), "context": {"messages": [USER]}, "options": {"apiKey": "sk-or-test"}},
            "responses": [{"status": 200, "headers": SSE, "chunks": [
                chunk({"role": "assistant", "content": "Hello"}, mdl="qwen/qwen3-coder"),
                chunk({}, finish="stop", mdl="qwen/qwen3-coder"),
                chunk(usage=openrouter_usage(**billing), choices=False, mdl="qwen/qwen3-coder"), DONE]}]}


def system(content="", ts=0, **fields):
    m = {"role": "system", "content": content, "timestamp": ts}
    m.update(fields)
    return m


def tool(name):
    return {"name": name, "description": "The %s tool." % name,
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}


MID_COMPAT = {"supportsMidConvoSystemMessages": True, "supportsMidConvoToolAdditions": True}

fixtures.update({
    "112-oc-long-tool-call-ids-hashed": {
        "description": "Provider openai replaying a foreign Responses turn: `call|item` ids sanitized per UTF-16 unit and joined, past 40 units shortened with pi-ai's shortHash (8 base-36 characters), an empty item id dropped, a plain id cut at 40; tool results follow their calls.",
        "request": {"model": model(), "context": foreign_ids_context(), "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": ANSWER}],
    },
    "113-oc-long-tool-call-ids-other-provider": {
        "description": "The same foreign turn for a non-openai provider (vLLM): pipe ids hashed the same way, a plain long id kept whole.",
        "request": {"model": model(id="qwen3", provider="vllm", baseUrl="{{BASE_URL}}/v1"), "context": foreign_ids_context(),
                    "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": ANSWER}],
    },
    "114-oc-openrouter-cost-reported": openrouter_fixture(
        "OpenRouter reports the billed cost (is_byok false): usage.cost.total becomes it, totalFromProvider true; the per-kind costs stay the catalog's.",
        {"cost": 0.00042, "is_byok": False}),
    "115-oc-openrouter-cost-byok": openrouter_fixture(
        "OpenRouter BYOK, base URL on openrouter.ai with another provider name: the fee plus the upstream prompt and completion costs (upstream_inference_cost null).",
        {"cost": 0.0001, "is_byok": True, "cost_details": {"upstream_inference_cost": None,
         "upstream_inference_prompt_cost": 0.0005, "upstream_inference_completions_cost": 0.00025}},
        provider="custom-router", baseUrl="{{BASE_URL}}/openrouter.ai/api/v1"),
    "116-oc-openrouter-cost-incomplete": openrouter_fixture(
        "OpenRouter BYOK without cost_details: incomplete accounting keeps the catalog cost, totalFromProvider false.",
        {"cost": 0.0001, "is_byok": True}),
    "117-oc-mid-convo-system-tool-additions": {
        "description": "supportsMidConvoSystemMessages + supportsMidConvoToolAdditions: later system messages stay in place as updates (`Updated system prompt section`, `Removed system prompt section`), tools they add go out as a `{role: system, tools}` message there, the top-level tools are the leading message's.",
        "request": {"model": model(id="kimi-k3", provider="moonshotai", compat=MID_COMPAT),
                    "context": {"messages": [
                        system("Be brief.", sections={"env": "<env a/>", "rules": "R1"}, toolsAdded=[tool("read")]), USER,
                        turn([{"type": "text", "text": "Hello."}], provider="moonshotai", mdl="kimi-k3", stop="stop"),
                        system("Note: user is admin.", ts=3, sections={"env": "<env b/>", "rules": None}, toolsAdded=[tool("write")]),
                        {"role": "user", "content": "Edit it", "timestamp": 4},
                        system(ts=5, toolsAdded=[tool("grep")]),
                        system(ts=6, sections={"extra": "E"})]},
                    "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": ANSWER}],
    },
    "118-oc-mid-convo-system-tool-removal": {
        "description": "Mid-conversation tool additions with a removal: the top-level tools become the state after the last removal or redefinition, later additions stay in place; a developer-role reasoning model.",
        "request": {"model": model(id="o4-mini", reasoning=True, compat=MID_COMPAT),
                    "context": {"messages": [
                        system("Sys.", toolsAdded=[tool("a")]), USER,
                        system("Add b.", ts=2, toolsAdded=[tool("b")]),
                        {"role": "user", "content": "More", "timestamp": 3},
                        system(ts=4, toolsRemoved=[{"name": "a"}], toolsAdded=[tool("c")]),
                        {"role": "user", "content": "Again", "timestamp": 5},
                        system("Add d.", ts=6, toolsAdded=[tool("d")])]},
                    "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": ANSWER}],
    },
    "119-oc-mid-convo-system-without-tool-additions": {
        "description": "supportsMidConvoSystemMessages alone, transcript starting with a user message: every system message is rendered as an update in place, all tools top-level.",
        "request": {"model": model(id="local", provider="vllm", compat={"supportsMidConvoSystemMessages": True}),
                    "context": {"messages": [
                        USER,
                        system("Base.", ts=2, sections={"s": "S1"}, toolsAdded=[tool("a")]),
                        {"role": "user", "content": "More", "timestamp": 3},
                        system(ts=4, toolsAdded=[tool("b")]),
                        system("", ts=5, sections={"s": None})]},
                    "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": ANSWER}],
    },
    "121-oc-duplicate-tool-call-ids": {
        "description": "Two streamed tool calls with the same id at indexes 0 and 1. pi-ai keys a call by its index, else by its id, and gives a block its index only once: the second call's opening entry lands in the first block (by id), its arguments in a new block without id or name; an entry without index is matched by the id.",
        "request": {"model": model(), "context": {"messages": [USER]}, "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_dup", "type": "function", "function": {"name": "ls", "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"d\":\"a\"}"}}]}),
            chunk({"tool_calls": [{"index": 1, "id": "call_dup", "type": "function", "function": {"name": "cat", "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{\"f\":\"b\"}"}}]}),
            chunk({"tool_calls": [{"id": "call_dup", "function": {"arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 2, "id": "call_other", "function": {"name": "rm", "arguments": "{}"}}]}),
            chunk({"tool_calls": [{"index": 3, "id": "call_other", "function": {"arguments": ""}}]}),
            chunk({}, finish="tool_calls"), DONE]}],
    },
    "122-oc-split-surrogate-in-reasoning-details": {
        "description": "OpenRouter reasoning_details whose text splits a surrogate pair across two events (no event shows the details): the thinking signature holds the joined character.",
        "request": {"model": model(id="anthropic/claude-sonnet-4.5", provider="openrouter", reasoning=True,
                                   baseUrl="{{BASE_URL}}/api/v1"),
                    "context": {"messages": [USER]}, "options": {"apiKey": "sk-or-test", "reasoning": "low"}},
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "content": "", "reasoning_details": [{"type": "reasoning.text", "text": "Hmm \ud83e", "index": 0, "format": "anthropic-claude-v1"}]}),
            chunk({"reasoning_details": [{"type": "reasoning.text", "text": "\udd14 ok", "index": 0, "format": "anthropic-claude-v1", "signature": "s"}]}),
            chunk({"content": "Done."}),
            chunk({}, finish="stop"), DONE]}],
    },
})

# Fixtures whose pi-ai events hold half a surrogate pair: only requests and result are compared.
result_only = {
    "120-oc-split-surrogate-pair": {
        "description": "A UTF-16 surrogate pair split across two SSE events (a lone \\ud83d escape, then \\ude00) in text, reasoning and tool-call arguments: pi-ai's strings join them. Its events hold the lone halves, which a Rust string cannot: only the requests and the result are compared.",
        "request": {"model": model(id="qwen3", provider="vllm", reasoning=True), "context": {"messages": [USER]},
                    "options": {"apiKey": KEY}},
        "responses": [{"status": 200, "headers": SSE, "chunks": [
            chunk({"role": "assistant", "reasoning_content": "Think \ud83e"}),
            chunk({"reasoning_content": "\udd14!"}),
            chunk({"content": "Hi \ud83d"}),
            chunk({"content": "\ude00 there \ud83d"}),
            chunk({"content": "\ude4f"}),
            chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "emit", "arguments": "{\"e\":\"\ud83d"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\ude80\"}"}}]}),
            chunk({}, finish="tool_calls"), DONE]}],
    },
}

os.makedirs(os.path.join(HERE, "fixtures"), exist_ok=True)
for name, fixture in fixtures.items():
    with open(os.path.join(HERE, "fixtures", name + ".json"), "w") as f:
        json.dump(fixture, f, indent=2, ensure_ascii=False)
        f.write("\n")
os.makedirs(os.path.join(HERE, "result-only", "fixtures"), exist_ok=True)
for name, fixture in result_only.items():
    with open(os.path.join(HERE, "result-only", "fixtures", name + ".json"), "w") as f:
        json.dump(fixture, f, indent=2, ensure_ascii=False)
        f.write("\n")
print(len(fixtures) + len(result_only), "fixtures written")

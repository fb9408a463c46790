#!/usr/bin/env python3
"""Writes the anthropic-messages fixtures 201-243 of tests/providers/fixtures (and 244 of result-only/fixtures) (record their traces with the kit oracle: node record.mjs FIXTURES_DIR OUT_DIR)."""
import json, os, sys
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
KEY = "sk-ant-api03-test-0123456789abcdef"
def model(**kw):
    m = {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "api": "anthropic-messages",
         "provider": "anthropic", "baseUrl": "{{BASE_URL}}", "reasoning": True, "input": ["text", "image"],
         "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
         "contextWindow": 200000, "maxTokens": 64000}
    m.update(kw)
    return m
def ev(name, data):
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'), ensure_ascii=False)}\n\n"
def msg_start(id="msg_01Test", model="claude-sonnet-4-5-20250929", inp=10, out=1, **usage):
    u = {"input_tokens": inp, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
         "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}, "output_tokens": out}
    u.update(usage)
    return ev("message_start", {"type": "message_start", "message": {"model": model, "id": id, "type": "message",
        "role": "assistant", "content": [], "stop_reason": None, "stop_sequence": None, "usage": u}})
def block_start(i, block): return ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": block})
def delta(i, d): return ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
def text(i, t): return delta(i, {"type": "text_delta", "text": t})
def block_stop(i): return ev("content_block_stop", {"type": "content_block_stop", "index": i})
def msg_delta(reason, out=5, details=None, **usage):
    d = {"stop_reason": reason, "stop_sequence": None}
    if details is not None: d["stop_details"] = details
    u = {"output_tokens": out}; u.update(usage)
    return ev("message_delta", {"type": "message_delta", "delta": d, "usage": u})
MSG_STOP = ev("message_stop", {"type": "message_stop"})
def text_block(i, *parts):
    return [block_start(i, {"type": "text", "text": ""})] + [text(i, p) for p in parts] + [block_stop(i)]
def user(t, ts=1): return {"role": "user", "content": t, "timestamp": ts}
def system(t, **kw):
    m = {"role": "system", "content": t, "timestamp": 0}; m.update(kw); return m
def ok(chunks, **kw):
    r = {"status": 200, "headers": dict(SSE_HEADERS), "chunks": chunks}; r.update(kw); return r
def fixture(name, description, mdl, messages, options, responses, **kw):
    f = {"description": description, "request": {"model": mdl, "context": {"messages": messages}, "options": options},
         "responses": responses}
    f.update(kw)
    with open(os.path.join(OUT, name + ".json"), "w") as fh:
        json.dump(f, fh, indent=2, ensure_ascii=False); fh.write("\n")
def asst(content, stop="toolUse", **kw):
    m = {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
         "model": "claude-sonnet-4-5", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": stop, "timestamp": 2}
    m.update(kw); return m
TOOL = {"name": "read", "description": "Read a file.", "parameters": {"type": "object",
        "properties": {"path": {"type": "string"}}, "required": ["path"]}}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

fixture("201-am-redacted-thinking-signature-pieces",
  "Anthropic: a redacted_thinking block, a thinking block whose signature arrives in three signature_delta pieces (no events), text; stop_reason max_tokens → length; thinking_end carries the joined signature.",
  model(), [user("Think hard.")], {"apiKey": KEY, "reasoning": "high"},
  [ok([msg_start(), block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}), block_stop(0),
       block_start(1, {"type": "thinking", "thinking": "", "signature": ""}),
       delta(1, {"type": "thinking_delta", "thinking": "Let me think"}), delta(1, {"type": "thinking_delta", "thinking": " about it."}),
       delta(1, {"type": "signature_delta", "signature": "EqQB"}), delta(1, {"type": "signature_delta", "signature": "CgIYAhIM"}),
       delta(1, {"type": "signature_delta", "signature": "1gbcDa9G"}), block_stop(1)] + text_block(2, "Partial answer")
      + [msg_delta("max_tokens", out=64000, output_tokens_details={"thinking_tokens": 120}), MSG_STOP])])

fixture("202-am-refusal-with-explanation",
  "Anthropic: stop_reason refusal with stop_details.explanation: the stream ends with an error event carrying the explanation; rawStopReason refusal; text kept with its text_end.",
  model(), [user("Do something bad.")], {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "I can't") + [msg_delta("refusal", details={"type": "refusal", "category": "cyber", "explanation": "This request violates the usage policy."}), MSG_STOP])])

fixture("203-am-refusal-sensitive-unknown",
  "Anthropic: stop_reason refusal with a null stop_details: the fixed text `The model refused to complete the request`.",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "No.") + [msg_delta("refusal", details=None), MSG_STOP])])

fixture("204-am-stop-sensitive",
  "Anthropic: stop_reason sensitive → error `Provider stopped with: sensitive`.",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "Hm") + [msg_delta("sensitive"), MSG_STOP])])

fixture("205-am-unknown-stop-reason",
  "Anthropic: an unknown stop_reason fails at once with `Unhandled stop reason: X`; rawStopReason is set, the delta's usage is not applied, later events are not read.",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "Hello") + [msg_delta("model_context_window_exceeded", out=99), MSG_STOP])])

fixture("206-am-ended-before-message-stop",
  "Anthropic: message_start, a text block and a message_delta with end_turn, but the body ends without message_stop → `Anthropic stream ended before message_stop` (blocks already ended stay ended).",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "Hello") + [msg_delta("end_turn")])])

fixture("207-am-no-stop-reason",
  "Anthropic: a body with only a ping, an event without an event: line and a comment → `Anthropic stream ended without a stop reason` after start.",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([": keep-alive\n\n", ev("ping", {"type": "ping"}), "data: {\"type\":\"message_start\"}\n\n"])])

fixture("208-am-oauth-claude-code",
  "Anthropic OAuth key (sk-ant-oat): Bearer auth, x-app cli, claude-code + oauth betas, the Claude Code system block first, tool names in Claude Code casing (read → Read) and mapped back on the tool call; assistant tool_use replayed as Read.",
  model(), [system("You are helpful.", toolsAdded=[TOOL, {"name": "my_tool", "description": "Custom.", "parameters": {"type": "object", "properties": {}}}]),
            user("Read a.txt"),
            asst([{"type": "toolCall", "id": "toolu_01A", "name": "read", "arguments": {"path": "a.txt"}}]),
            {"role": "toolResult", "toolCallId": "toolu_01A", "toolName": "read", "content": [{"type": "text", "text": "hello"}], "isError": False, "timestamp": 3},
            user("Again", 4)],
  {"apiKey": "sk-ant-oat01-test-token"},
  [ok([msg_start(), block_start(0, {"type": "tool_use", "id": "toolu_01B", "name": "Read", "input": {}}),
       delta(0, {"type": "input_json_delta", "partial_json": "{\"path\":"}), delta(0, {"type": "input_json_delta", "partial_json": "\"a.txt\"}"}),
       block_stop(0), msg_delta("tool_use"), MSG_STOP])])

fixture("209-am-cache-none-session-affinity",
  "Anthropic: cacheRetention none (no cache_control anywhere, no session affinity although compat asks for it), temperature, metadata.user_id (other keys dropped), toolChoice string → {type}, fine-grained tool streaming beta when eager input streaming is off, model and option headers (null removes one).",
  model(reasoning=False, headers={"x-test-model": "m", "x-test-removed": "gone"},
        compat={"sendSessionAffinityHeaders": True, "supportsEagerToolInputStreaming": False}),
  [system("Sys.", toolsAdded=[TOOL]), user("Hi")],
  {"apiKey": KEY, "cacheRetention": "none", "sessionId": "sess-1", "temperature": 0.2,
   "metadata": {"user_id": "u-1", "other": "x"}, "toolChoice": "any", "headers": {"x-test-removed": None, "X-Test-Option": "o"}},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("210-am-openrouter-affinity-attribution",
  "Anthropic API via OpenRouter: session affinity x-session-id (OpenRouter format), attribution headers, cache retention long on a model without long retention support (no ttl); OpenRouter's billed cost replaces the total.",
  model(provider="openrouter", id="anthropic/claude-sonnet-4.5", compat={"supportsLongCacheRetention": False}),
  [system("Sys."), user("Hi")],
  {"apiKey": "sk-or-test", "sessionId": "sess-or", "cacheRetention": "long",
   "identity": {"attribution": {"name": "pi", "url": "https://pi.dev", "categories": ["cli-agent"]}}},
  [ok([msg_start(model="anthropic/claude-sonnet-4.5")] + text_block(0, "Hi") + [msg_delta("end_turn", out=3, cost=0.0123, is_byok=False), MSG_STOP])])

fixture("211-am-tool-result-images",
  "Anthropic request: tool results with images (text + image → block array; image-only → `(see attached image)` first; an error result's image moves after all results with a caption); a user message with a blank text block dropped; an unsigned thinking block replayed as text; a redacted one as redacted_thinking; a foreign model's tool call id normalized.",
  model(reasoning=False),
  [user([{"type": "text", "text": "  "}, {"type": "text", "text": "Look"}]),
   asst([{"type": "thinking", "thinking": "unsigned thought"}, {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "REDACTED==", "redacted": True},
         {"type": "toolCall", "id": "call|a.b", "name": "shot", "arguments": {}}, {"type": "toolCall", "id": "toolu_2", "name": "shot", "arguments": {}},
         {"type": "toolCall", "id": "toolu_3", "name": "shot", "arguments": {}}]),
   {"role": "toolResult", "toolCallId": "call|a.b", "toolName": "shot", "content": [{"type": "text", "text": "screen"}, {"type": "image", "data": PNG, "mimeType": "image/png"}], "isError": False, "timestamp": 3},
   {"role": "toolResult", "toolCallId": "toolu_2", "toolName": "shot", "content": [{"type": "image", "data": PNG, "mimeType": "image/png"}], "isError": False, "timestamp": 4},
   {"role": "toolResult", "toolCallId": "toolu_3", "toolName": "shot", "content": [{"type": "text", "text": "failed"}, {"type": "image", "data": PNG, "mimeType": "image/png"}], "isError": True, "timestamp": 5}],
  {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "Seen") + [msg_delta("end_turn"), MSG_STOP])])

fixture("212-am-529-retried",
  "HTTP 529 overloaded with retry-after-ms, maxRetries 1: retried; the identical second request streams the answer.",
  model(), [user("Hi")], {"apiKey": KEY, "maxRetries": 1},
  [{"status": 529, "headers": {"content-type": "application/json", "retry-after-ms": "20"},
    "body": "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"},
   ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("213-am-http-error-texts",
  "HTTP 500 with a plain-text body (not JSON), retried once by backoff, then HTTP 400 whose JSON body has a top-level message: `400 <message>`.",
  model(), [user("Hi")], {"apiKey": KEY, "maxRetries": 1},
  [{"status": 500, "headers": {"content-type": "text/plain"}, "body": "upstream exploded"},
   {"status": 400, "headers": {"content-type": "application/json"}, "body": "{\"message\":\"bad thing\",\"type\":\"error\"}"}])

fixture("214-am-retry-delay-too-long",
  "HTTP 429 with retry-after 120 s above maxRetryDelayMs 5000: fails at once with `Server requested 120s retry delay (max: 5s). 429 ...`.",
  model(), [user("Hi")], {"apiKey": KEY, "maxRetries": 3, "maxRetryDelayMs": 5000},
  [{"status": 429, "headers": {"content-type": "application/json", "retry-after": "120"},
    "body": "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Slow down\"}}"}])

fixture("215-am-abort-before-call",
  "The signal is aborted before the call: no request, an aborted error event `This operation was aborted` without start.",
  model(), [user("Hi")], {"apiKey": KEY}, [], abortAfterEvents=0)

fixture("216-am-connection-dropped",
  "The server closes the connection inside an SSE event: the text so far, no text_end, Node's transport error text.",
  model(), [user("Hi")], {"apiKey": KEY},
  [{"status": 200, "headers": dict(SSE_HEADERS), "body": "".join([msg_start()] + text_block(0, "Hello there")[:2]) + "event: content_block_delta\ndata: {\"type\":\"content_blo",
    "end": "disconnect"}])

fixture("217-am-thinking-budget-clamped",
  "options.reasoning xhigh on a model without xhigh → high; custom thinkingBudgets; maxTokens 3000 + budget capped by model.maxTokens 8000, budget clamped to leave 1024 answer tokens; temperature dropped with thinking.",
  model(maxTokens=8000), [user("Hi")], {"apiKey": KEY, "reasoning": "xhigh", "maxTokens": 3000, "temperature": 0.5, "thinkingBudgets": {"high": 7500}},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("218-am-unusual-blocks",
  "Anthropic stream oddities: server_tool_use and web_search_tool_result blocks create nothing; deltas for unknown indices and mismatched types are ignored; a text block starting with non-empty text; a tool_use with initial input and no deltas ends with {} arguments; stop_reason pause_turn → stop; message_delta usage with cache fields and an input transformation diagnostic.",
  model(), [user("Search")], {"apiKey": KEY},
  [ok([msg_start(), block_start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
       delta(0, {"type": "input_json_delta", "partial_json": "{\"query\":\"x\"}"}), block_stop(0),
       block_start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}), block_stop(1),
       block_start(2, {"type": "text", "text": "Start: "}), text(2, "more"), delta(2, {"type": "thinking_delta", "thinking": "ignored"}),
       text(7, "unknown index"), block_stop(2),
       block_start(3, {"type": "tool_use", "id": "toolu_X", "name": "read", "input": {"path": "initial"}}), block_stop(3),
       ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": 40, "cache_read_input_tokens": 7, "cache_creation": {"ephemeral_1h_input_tokens": 0}},
           "input_transformations": [{"type": "truncated", "path": "messages.0", "reason": None}]}), MSG_STOP])])

fixture("219-am-adaptive-thinking-effort",
  "compat.forceAdaptiveThinking with options.reasoning medium: thinking {type: adaptive, display}, output_config.effort medium, no interleaved beta, max_tokens not raised.",
  model(compat={"forceAdaptiveThinking": True}), [user("Hi")], {"apiKey": KEY, "reasoning": "medium"},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("220-am-mid-convo-system-native-tools",
  "compat.supportsMidConvoSystemMessages + supportsMidConvoToolChanges: a later system message with a section update, an added and a removed tool becomes a system message of text, tool_removal and tool_addition blocks before the next assistant turn; the deferred placeholder tool; inline-tools beta; cache_control on the last user block.",
  model(compat={"supportsMidConvoSystemMessages": True, "supportsMidConvoToolChanges": True}),
  [system("Base.", toolsAdded=[TOOL, {"name": "old", "description": "Old.", "parameters": {"type": "object", "properties": {}}}]), user("One"),
   asst([{"type": "text", "text": "Done one."}], stop="stop"),
   system("", sections={"rules": "Be brief."}, toolsAdded=[{"name": "new", "description": "New.", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}], toolsRemoved=[{"name": "old"}], timestamp=3),
   user("Two", 4)],
  {"apiKey": KEY},
  [ok([msg_start()] + text_block(0, "Two done.") + [msg_delta("end_turn"), MSG_STOP])])

fixture("221-am-fallback-model-cost",
  "compat.allowedFallbackModels: fallbacks in the body and the server-side-fallback beta; the response comes from the fallback model, whose cost applies; a configured anthropic-beta option header would replace the list (not here).",
  model(compat={"allowedFallbackModels": [{"provider": "anthropic", "model": "claude-haiku-4-5", "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}}]}),
  [user("Hi")], {"apiKey": KEY},
  [ok([msg_start(model="claude-haiku-4-5", inp=100, out=1), block_start(0, {"type": "fallback"}), block_stop(0)] + text_block(0, "Hi") + [msg_delta("end_turn", out=20), MSG_STOP])])

fixture("222-am-managed-effort",
  "compat.supportsMidConvoEffort: adaptive thinking with block_binding, output_config effort low, effort markers (a system message with output_config) before a replayed assistant turn that had providerThinkingLevel and at the end; both betas; providerThinkingLevel on the reply.",
  model(compat={"supportsMidConvoEffort": True}),
  [user("One"), asst([{"type": "text", "text": "Ok."}], stop="stop", providerThinkingLevel="medium"), user("Two", 3)],
  {"apiKey": KEY, "reasoning": "low", "temperature": 0.3},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("223-am-strict-tools",
  "compat.supportsStrictTools: a tool preferring strict JSON-schema sampling is sent strict with the rewritten schema; one whose schema is unsupported (minimum) falls back to non-strict; configured anthropic-beta model header replaces the computed betas.",
  model(compat={"supportsStrictTools": True}, headers={"anthropic-beta": "custom-beta-1, custom-beta-2,custom-beta-1"}),
  [system("S.", toolsAdded=[
     {"name": "strict_one", "description": "A.", "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}, "constrainedSampling": {"type": "json_schema", "strict": "prefer"}},
     {"name": "loose_one", "description": "B.", "parameters": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}, "constrainedSampling": {"type": "json_schema", "strict": "prefer"}}]),
   user("Hi")], {"apiKey": KEY, "reasoning": "minimal"},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("224-am-strict-required-unsupported",
  "A tool requiring strict sampling on a model without strict tools: buildParams throws, an error event without start and no request.",
  model(), [system("S.", toolsAdded=[{"name": "must", "description": "M.", "parameters": {"type": "object", "properties": {}}, "constrainedSampling": {"type": "json_schema", "strict": "require"}}]), user("Hi")],
  {"apiKey": KEY}, [])

fixture("225-am-auth-header-no-key",
  "No apiKey but an x-api-key option header: no throw; the header is sent as given; an error event in the SSE stream with a non-JSON data text.",
  model(), [user("Hi")], {"headers": {"x-api-key": "from-header"}},
  [ok([msg_start()] + text_block(0, "Hi") + ["event: error\ndata: plain text failure\n\n"])])

fixture("226-am-missing-key-throws",
  "Neither apiKey nor an auth header (a blank authorization header does not count): streamSimple throws synchronously; no request.",
  model(), [user("Hi")], {"headers": {"authorization": "  "}}, [])
body = "".join([msg_start()] + text_block(0, "héllo ✓ wörld") + [msg_delta("end_turn"), MSG_STOP]).replace("\n", "\r\n")
cuts = []
b = body.encode()
# cut inside multi-byte characters and inside CRLF pairs
for needle in ["é".encode(), "✓".encode(), "ö".encode()]:
    i = b.index(needle); cuts.append(i + 1)
i = b.index(b"\r\n\r\n"); cuts.append(i + 1); cuts.append(i + 3)
cuts = sorted(set(cuts))
fixture("227-am-crlf-split-utf8",
  "Anthropic SSE with CRLF line ends, written in pieces cut inside multi-byte characters and between CR and LF: same events as whole lines.",
  model(), [user("Hi")], {"apiKey": KEY},
  [{"status": 200, "headers": dict(SSE_HEADERS), "body": body, "splitAtBytes": cuts}])

raw_ctrl = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tab\there \\q"}}\n\n'
fixture("228-am-repaired-json-and-cr-lines",
  "An event whose JSON has a raw tab and an invalid escape inside a string (repaired, as pi-ai's parseJsonWithRepair does); events separated by bare CR line ends; the last event has no trailing blank line (dispatched at the end of the body).",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([msg_start().replace("\n", "\r"), block_start(0, {"type": "text", "text": ""}), raw_ctrl, block_stop(0), msg_delta("end_turn"), MSG_STOP.rstrip("\n")])])

fixture("229-am-message-start-without-usage",
  "message_start without message.usage: responseId and responseModel are set, then pi-ai's property read on undefined fails the stream with V8's TypeError text.",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok([ev("message_start", {"type": "message_start", "message": {"id": "msg_NoUsage", "model": "claude-sonnet-4-5"}}), MSG_STOP])])

fixture("230-am-delta-without-start",
  "message_delta before any message_start (no start usage): usage from the delta only, no cacheWrite1h; stop_reason end_turn; message_stop without message_start is fine.",
  model(), [user("Hi")], {"apiKey": KEY},
  [ok(text_block(0, "orphan") + [ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"input_tokens": 5, "output_tokens": 2}}), MSG_STOP])])

fixture("231-am-http-errors-empty-and-nested",
  "HTTP 503 with an empty body retried (maxRetries 2, x-should-retry true beats the status rules), then 400 with x-should-retry true and a JSON body whose message is an object; the third response 404 with an empty body: `404 status code (no body)`.",
  model(), [user("Hi")], {"apiKey": KEY, "maxRetries": 2},
  [{"status": 503, "headers": {"retry-after-ms": "10"}, "body": ""},
   {"status": 400, "headers": {"x-should-retry": "true", "retry-after-ms": "10", "content-type": "application/json"}, "body": "{\"message\":{\"detail\":\"nested\"}}"},
   {"status": 404, "headers": {}, "body": ""}])

fixture("232-am-connection-closed-before-headers",
  "The server closes the connection without answering: Node's `Connection error.` text with the socket cause; not retried by default.",
  model(), [user("Hi")], {"apiKey": KEY},
  [{"noHeaders": True, "end": "disconnect"}])

fixture("233-am-interleaved-blocks-usage-cost-tiers",
  "Two text blocks with a thinking block between them (interleaved thinking), deltas sent in one write; cost tiers switch rates above an input size; message_delta usage with nulls keeps start values.",
  model(cost={"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75, "tiers": [{"inputTokensAbove": 1000, "input": 6, "output": 22.5, "cacheRead": 0.6, "cacheWrite": 7.5}]}),
  [user("Hi")], {"apiKey": KEY, "reasoning": "low"},
  [ok(["".join([msg_start(inp=1500, out=1, cache_read_input_tokens=200)] + text_block(0, "A", "B")
       + [block_start(1, {"type": "thinking", "thinking": "", "signature": ""}), delta(1, {"type": "thinking_delta", "thinking": "hmm"}), delta(1, {"type": "signature_delta", "signature": "SIG"}), block_stop(1)]
       + text_block(2, "C")
       + [ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"input_tokens": None, "output_tokens": 50, "cache_read_input_tokens": None}}), MSG_STOP])])])

fixture("234-am-abort-mid-thinking",
  "Abort after the 4th event (a thinking delta) while the server stalls: no thinking_end, aborted with `Request was aborted`; the signature streamed so far is kept.",
  model(), [user("Hi")], {"apiKey": KEY, "reasoning": "medium"},
  [{"status": 200, "headers": dict(SSE_HEADERS), "chunks": [msg_start(), block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
     delta(0, {"type": "thinking_delta", "thinking": "one"}), delta(0, {"type": "signature_delta", "signature": "PART"}),
     delta(0, {"type": "thinking_delta", "thinking": " two"})], "end": "stall"}],
  abortAfterEvents=4)

STRICT_TOOL = {"name": "strict_one", "description": "A.", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               "constrainedSampling": {"type": "json_schema", "strict": "prefer"}}
LIMIT_400 = {"status": 400, "headers": {"content-type": "application/json"},
             "body": "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Too many strict tools (21). The maximum is 20.\"}}"}
fixture("235-am-strict-tool-limit-fallback",
  "Strict tools over Claude's limits: the 400 invalid_request_error is answered by resending with the preferring tools non-strict; the reply carries an anthropic_strict_tools_fallback diagnostic from its start.",
  model(compat={"supportsStrictTools": True}), [system("S.", toolsAdded=[STRICT_TOOL]), user("Hi")], {"apiKey": KEY, "sessionId": "strict-session"},
  [LIMIT_400, ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("236-am-strict-tool-limit-fallback-fails",
  "The strict-limit fallback's resend fails too (HTTP 500): the error message without start keeps the diagnostic.",
  model(compat={"supportsStrictTools": True}), [system("S.", toolsAdded=[STRICT_TOOL]), user("Hi")], {"apiKey": KEY},
  [LIMIT_400, {"status": 500, "headers": {"content-type": "application/json"}, "body": "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}"}])

THREADS = {"supportsMessageThreads": True}
def thread_error(code, message="thread rejected"):
    details = {} if code is None else {"details": {"error_code": code}}
    return {"status": 400, "headers": {"content-type": "application/json"},
            "body": json.dumps({"type": "error", "error": dict({"type": "invalid_request_error", "message": message}, **details)}, separators=(",", ":"))}
fixture("237-am-message-thread-create",
  "compat.supportsMessageThreads with a sessionId: the first request of the session creates a thread (`thread: {type: create}`) and sends the message-threads beta.",
  model(compat=THREADS), [system("S."), user("Hi")], {"apiKey": KEY, "sessionId": "thread-session-1"},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("238-am-message-thread-not-found",
  "A thread request rejected with error_code thread_not_found is resent once as a new thread; the reply carries an anthropic_thread_fallback diagnostic.",
  model(compat=THREADS), [user("Hi")], {"apiKey": KEY, "sessionId": "thread-session-2"},
  [thread_error("thread_not_found"), ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("239-am-message-thread-unsupported",
  "An endpoint that rejects the `thread` field without an error code (400, message mentions thread): resent without `thread` (the beta stays); the diagnostic's reason is the status.",
  model(compat=THREADS), [user("Hi")], {"apiKey": KEY, "sessionId": "thread-session-3"},
  [thread_error(None, "thread: Extra inputs are not permitted"), ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("240-am-message-thread-other-error",
  "A thread request rejected for another reason (prompt too long) is not resent: the error as is, no diagnostic.",
  model(compat=THREADS), [user("Hi")], {"apiKey": KEY, "sessionId": "thread-session-4", "disableContinuation": False},
  [thread_error(None, "prompt is too long: 300000 tokens > 200000 maximum")])

fixture("241-am-message-thread-disabled",
  "disableContinuation true: no `thread` field, but the beta of a threads session; cacheRetention none would drop the session entirely (not here).",
  model(compat=THREADS), [user("Hi")], {"apiKey": KEY, "sessionId": "thread-session-5", "disableContinuation": True},
  [ok([msg_start()] + text_block(0, "Hi") + [msg_delta("end_turn"), MSG_STOP])])

fixture("242-am-reasoning-off-option",
  "options.reasoning \"off\" is truthy for pi-ai's anthropic streamSimple: thinking enabled with no budget for the level, so max_tokens is NaN (sent as null) and budget_tokens the 1024 minimum; the agent never passes \"off\". The server's 400 is the result.",
  model(), [user("Hi")], {"apiKey": KEY, "reasoning": "off"},
  [{"status": 400, "headers": {"content-type": "application/json"},
    "body": "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: Input should be a valid integer\"}}"}])

# Split surrogate pairs: the SSE data carries `\ud83d` escapes (ensure_ascii), one half per event.
def ev_escaped(name, data):
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
def delta_escaped(i, d):
    return ev_escaped("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})

fixture("243-am-split-surrogate-in-signature",
  "A thinking signature whose surrogate pair is split across two signature_delta events (no event between them): thinking_end carries the joined character.",
  model(), [user("Think.")], {"apiKey": KEY, "reasoning": "low"},
  [ok([msg_start(), block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
       delta(0, {"type": "thinking_delta", "thinking": "Hmm."}),
       delta_escaped(0, {"type": "signature_delta", "signature": "EqQB\ud83d"}),
       delta_escaped(0, {"type": "signature_delta", "signature": "\ude00Cg"}), block_stop(0)]
      + text_block(1, "Ok") + [msg_delta("end_turn"), MSG_STOP])])

# pi-ai's events hold the lone halves here (a Rust string cannot): only requests and result compared.
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "result-only", "fixtures")
fixture("244-am-split-surrogate-pair",
  "Surrogate pairs split across two events in text, thinking and input_json deltas: pi-ai's strings join them. Its events hold the lone halves, which a Rust string cannot: only the requests and the result are compared.",
  model(), [user("Hi")], {"apiKey": KEY, "reasoning": "low"},
  [ok([msg_start(), block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
       delta_escaped(0, {"type": "thinking_delta", "thinking": "Think \ud83e"}),
       delta_escaped(0, {"type": "thinking_delta", "thinking": "\udd14!"}),
       delta(0, {"type": "signature_delta", "signature": "sig"}), block_stop(0),
       block_start(1, {"type": "text", "text": ""}),
       delta_escaped(1, {"type": "text_delta", "text": "Hi \ud83d"}),
       delta_escaped(1, {"type": "text_delta", "text": "\ude00 there"}), block_stop(1),
       block_start(2, {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}),
       delta_escaped(2, {"type": "input_json_delta", "partial_json": "{\"path\":\"\ud83d"}),
       delta_escaped(2, {"type": "input_json_delta", "partial_json": "\ude80.txt\"}"}), block_stop(2),
       msg_delta("tool_use"), MSG_STOP])])

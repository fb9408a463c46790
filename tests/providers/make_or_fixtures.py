#!/usr/bin/env python3
"""Writes the openai-responses fixtures 270-2xx of tests/providers/fixtures (record their traces with the kit oracle: node record.mjs FIXTURES_DIR OUT_DIR)."""
import json, os, sys
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}
KEY = "sk-proj-test-0123456789abcdef"
ZERO_USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
def model(**kw):
    m = {"id": "gpt-5-mini", "name": "GPT-5 Mini", "api": "openai-responses", "provider": "openai",
         "baseUrl": "{{BASE_URL}}/v1", "reasoning": True, "input": ["text", "image"],
         "cost": {"input": 0.25, "output": 2, "cacheRead": 0.025, "cacheWrite": 0},
         "contextWindow": 400000, "maxTokens": 128000,
         "thinkingLevelMap": {"off": None, "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": None, "max": None}}
    m.update(kw)
    return m
SEQ = [0]
def ev(name, data, named=True):
    data = dict(data)
    if "type" not in data: data["type"] = name
    data["sequence_number"] = SEQ[0]; SEQ[0] += 1
    head = f"event: {name}\n" if named else ""
    return head + f"data: {json.dumps(data, separators=(',', ':'), ensure_ascii=False)}\n\n"
RESP_ID = "resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
def response(status="completed", usage=None, output=None, **kw):
    r = {"id": RESP_ID, "object": "response", "created_at": 1755000000, "status": status, "error": None,
         "incomplete_details": None, "model": "gpt-5-mini-2025-08-07", "output": output or [], "service_tier": "default",
         "usage": usage}
    r.update(kw)
    return r
def usage(inp=20, out=10, cached=0, reasoning=0, **kw):
    u = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": out,
         "output_tokens_details": {"reasoning_tokens": reasoning}, "total_tokens": inp + out}
    u.update(kw)
    return u
def created(): return ev("response.created", {"response": response("in_progress")})
def added(i, item): return ev("response.output_item.added", {"output_index": i, "item": item})
def done(i, item): return ev("response.output_item.done", {"output_index": i, "item": item})
def msg_item(id, text=None, phase=None):
    item = {"id": id, "type": "message", "status": "in_progress" if text is None else "completed",
            "content": [] if text is None else [{"type": "output_text", "annotations": [], "text": text}], "role": "assistant"}
    if phase: item["phase"] = phase
    return item
def text_delta(i, id, d): return ev("response.output_text.delta", {"item_id": id, "output_index": i, "content_index": 0, "delta": d})
def message(i, id, *parts, phase=None):
    return [added(i, msg_item(id, phase=phase))] + [text_delta(i, id, p) for p in parts] + [done(i, msg_item(id, "".join(parts), phase))]
def completed(**kw): return ev("response.completed", {"response": response(**kw)})
def user(t, ts=1): return {"role": "user", "content": t, "timestamp": ts}
def system(t, **kw):
    m = {"role": "system", "content": t, "timestamp": 0}; m.update(kw); return m
def asst(content, stop="stop", **kw):
    m = {"role": "assistant", "content": content, "api": "openai-responses", "provider": "openai", "model": "gpt-5-mini",
         "usage": ZERO_USAGE, "stopReason": stop, "timestamp": 2}
    m.update(kw); return m
def result(id, name, content, ts=3, error=False):
    return {"role": "toolResult", "toolCallId": id, "toolName": name, "content": content, "isError": error, "timestamp": ts}
def ok(chunks, **kw):
    r = {"status": 200, "headers": dict(SSE_HEADERS), "chunks": chunks}; r.update(kw); return r
def error_response(status, body, **headers):
    h = {"content-type": "application/json"}; h.update(headers)
    return {"status": status, "headers": h, "body": body if isinstance(body, str) else json.dumps(body, separators=(',', ':'))}
def fixture(name, description, mdl, messages, options, responses, **kw):
    SEQ[0] = 0
    f = {"description": description, "request": {"model": mdl, "context": {"messages": messages}, "options": options},
         "responses": responses}
    f.update(kw)
    with open(os.path.join(OUT, name + ".json"), "w") as fh:
        json.dump(f, fh, indent=2, ensure_ascii=False); fh.write("\n")
TOOL = {"name": "read", "description": "Read a file.", "parameters": {"type": "object",
        "properties": {"path": {"type": "string"}}, "required": ["path"]}}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
MSG = "msg_0a1b2c3d4e5f60718293a4b5c6d7e8f9"

def chunks(parts):
    return parts

fixture("270-or-error-event-mid-stream",
  "A named `error` SSE event after some text: the SDK's API error without status, errorMessage = data.message; no text_end.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created(), added(0, msg_item(MSG)), text_delta(0, MSG, "Hel"), text_delta(0, MSG, "lo"),
       ev("error", {"code": "server_error", "message": "The server had an error while processing your request. Sorry about that!", "param": None})])])

def body_500():
    return {"error": {"message": "The server had an error processing your request.", "type": "server_error", "param": None, "code": None}}
fixture("271-or-500-retries-exhausted",
  "HTTP 500 (retry-after-ms 10) retried once (maxRetries 1), then a plain-text 503: the error text of the last response, `OpenAI API error (503): 503 <text>`.",
  model(), [user("Hello")], {"apiKey": KEY, "maxRetries": 1},
  [error_response(500, body_500(), **{"retry-after-ms": "10"}),
   {"status": 503, "headers": {"content-type": "text/plain"}, "body": "upstream connect error or disconnect/reset before headers"}])

fixture("272-or-error-type-without-event-name",
  "An error chunk without the `event: error` line and without an `error` member: pi-ai's `Error Code <code>: <message>`.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created(), ev("error", {"code": "rate_limit_exceeded", "message": "Rate limit reached for requests", "param": None}, named=False)])])

fixture("273-or-response-failed",
  "response.failed with an error object: `<code>: <message>`, rawStopReason = the response status; the streamed text stays.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created(), added(0, msg_item(MSG)), text_delta(0, MSG, "Partial"),
       ev("response.failed", {"response": response("failed", error={"code": "server_error", "message": "Something went wrong"})})])])

REASONING_ID = "rs_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
def reasoning_item(summary=None, encrypted="gAAAAABenc-test-0001", status=None):
    item = {"id": REASONING_ID, "type": "reasoning", "summary": [{"type": "summary_text", "text": s} for s in (summary or [])]}
    if encrypted is not None: item["encrypted_content"] = encrypted
    return item
fixture("274-or-incomplete-max-output-tokens-flex",
  "response.incomplete with reason max_output_tokens → stopReason length, rawStopReason `incomplete.max_output_tokens`; reasoning_text deltas; cached input tokens; service_tier flex halves the cost; options.maxTokens 8 → max_output_tokens 16.",
  model(cost={"input": 1.25, "output": 10, "cacheRead": 0.125, "cacheWrite": 0}), [user("Write a poem")], {"apiKey": KEY, "reasoning": "medium", "maxTokens": 8},
  [ok([created(), added(0, {"id": REASONING_ID, "type": "reasoning", "summary": []}),
       ev("response.reasoning_text.delta", {"item_id": REASONING_ID, "output_index": 0, "content_index": 0, "delta": "Plan a"}),
       ev("response.reasoning_text.delta", {"item_id": REASONING_ID, "output_index": 0, "content_index": 0, "delta": " short poem."}),
       done(0, {"id": REASONING_ID, "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Plan a short poem."}], "encrypted_content": "gAAAAABenc-test-0002"}),
       ] + message(1, MSG, "Roses are", " red") + [
       ev("response.incomplete", {"response": response("incomplete", usage=usage(1200, 16, cached=1000, reasoning=8),
            incomplete_details={"reason": "max_output_tokens"}, service_tier="flex")})])])

fixture("275-or-incomplete-content-filter",
  "response.incomplete with reason content_filter → error `Response incomplete: content_filter` after the blocks ended; usage kept; priority tier doubles the cost.",
  model(), [user("Hello")], {"apiKey": KEY, "serviceTier": "priority"},
  [ok([created()] + message(0, MSG, "I can") + [
       ev("response.incomplete", {"response": response("incomplete", usage=usage(30, 3), incomplete_details={"reason": "content_filter"}, service_tier="priority")})])])

CALL = "call_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
FC = "fc_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
FC2 = "fc_1b2c3d4e5f60718293a4b5c6d7e8f90a"
def fc_item(id, call, name, arguments="", status="in_progress"):
    return {"id": id, "type": "function_call", "status": status, "arguments": arguments, "call_id": call, "name": name}
def args_delta(i, id, d): return ev("response.function_call_arguments.delta", {"item_id": id, "output_index": i, "delta": d})
def args_done(i, id, a): return ev("response.function_call_arguments.done", {"item_id": id, "output_index": i, "arguments": a})
fixture("276-or-function-call-arguments-restart",
  "A function call opened with arguments already in the item (taken without an event), more deltas, then arguments.done with text that does not continue them (restart without an event) and the done item; a second call that arrives only as output_item.done (block opened there); a refusal delta in a message; stop → toolUse.",
  model(), [system("You read files.", toolsAdded=[TOOL]), user("Read a and b", 1)], {"apiKey": KEY},
  [ok([created(), added(0, fc_item(FC, CALL, "read", '{"pa')), args_delta(0, FC, 'th":"a'), args_delta(0, FC, '.txt"'),
       args_done(0, FC, '{"path":"b.txt"}'), done(0, fc_item(FC, CALL, "read", '{"path":"b.txt"}', "completed")),
       done(1, fc_item(FC2, "call_Second000000000000000", "read", '{"path":"c.txt"}', "completed")),
       added(2, msg_item(MSG)), ev("response.refusal.delta", {"item_id": MSG, "output_index": 2, "content_index": 0, "delta": "No more."}),
       done(2, {"id": MSG, "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "refusal", "refusal": "No more."}]}),
       completed(usage=usage(50, 20))])])

fixture("277-or-stream-ends-without-terminal-event",
  "The body ends after a completed message item but without response.completed: text_end, then `OpenAI Responses stream ended before a terminal response event` (reason error).",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created()] + message(0, MSG, "Hi", " there"))])

fixture("278-or-malformed-sse-json",
  "Truncated JSON in an SSE event: the SDK's fixed error text, later events never read.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created(), added(0, msg_item(MSG)), text_delta(0, MSG, "Hi"), "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\n\n"] + [completed()])])

fixture("279-or-http-400-body-without-error",
  "HTTP 400 whose JSON body has no `error` member: the SDK keeps the whole body as the error; its message already carries the JSON.",
  model(), [user("Hello")], {"apiKey": KEY},
  [error_response(400, {"message": "Invalid 'input[0].content'", "code": "invalid_value"})])

fixture("280-or-http-401-string-error",
  "HTTP 401 whose `error` is a string: no error object, `OpenAI API error (401): 401 \"<string>\"`; provider other than openai names itself in the prefix.",
  model(provider="example-host"), [user("Hello")], {"apiKey": KEY},
  [error_response(401, {"error": "Incorrect API key provided"})])

fixture("281-or-http-502-empty-body",
  "HTTP 502 with an empty body, not retried (maxRetries 0): `OpenAI API error (502): 502 status code (no body)`.",
  model(), [user("Hello")], {"apiKey": KEY},
  [{"status": 502, "headers": {}, "body": ""}])

FOREIGN_CALL = "call_Fo1Re2Ig3N4|item_from_router_0001"
LONG_ID = "msg_" + "a" * 70
fixture("282-or-replay-mapping-variants",
  "Request mapping: supportsDeveloperRole false → system role; reasoning model without options.reasoning and no `off` mapping → reasoning effort none; a different model of the same provider/API (reasoning dropped, message id kept, function_call id omitted); a foreign `call|item` id from OpenRouter → fc_<hash>; legacy and over-long text signatures, a commentary phase, two text blocks (msg_pi_N_1); unsigned thinking not sent; tool results with an image (array output) and image only; an empty user turn skipped; temperature, serviceTier, toolChoice object, cacheRetention long, model/option headers with null removal.",
  model(thinkingLevelMap={"minimal": "minimal", "low": "low", "medium": "medium", "high": "high"}, compat={"supportsDeveloperRole": False},
        headers={"x-test-model": "m", "x-test-drop": "d"}),
  [system("Be brief.", toolsAdded=[TOOL]), user("Start"),
   asst([{"type": "thinking", "thinking": "plain thought"},
         {"type": "text", "text": "First.", "textSignature": "msg_legacy_plain_id"},
         {"type": "text", "text": "Second.", "textSignature": json.dumps({"v": 1, "id": LONG_ID, "phase": "commentary"})},
         {"type": "toolCall", "id": "call_Same000000000000000001|fc_same_model_item_0001", "name": "read", "arguments": {"path": "x"}}], stop="toolUse"),
   result("call_Same000000000000000001|fc_same_model_item_0001", "read",
          [{"type": "text", "text": "x contents"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]),
   asst([{"type": "thinking", "thinking": "other model thought", "thinkingSignature": json.dumps({"id": "rs_other", "type": "reasoning", "summary": []})},
         {"type": "text", "text": "From gpt-5.", "textSignature": json.dumps({"v": 1, "id": "msg_other_model"})},
         {"type": "toolCall", "id": "call_Other00000000000000001|fc_other_model_item_01", "name": "read", "arguments": {"path": "y"}}],
        stop="toolUse", model="gpt-5"),
   result("call_Other00000000000000001|fc_other_model_item_01", "read", [{"type": "image", "data": PNG, "mimeType": "image/png"}], ts=4),
   {"role": "user", "content": [], "timestamp": 5},
   asst([{"type": "text", "text": "Routed."}, {"type": "toolCall", "id": FOREIGN_CALL, "name": "read", "arguments": {"path": "z"}}],
        stop="toolUse", provider="openrouter", model="openai/gpt-5"),
   result(FOREIGN_CALL, "read", [], ts=6),
   user("Done?", 7)],
  {"apiKey": KEY, "temperature": 0.3, "serviceTier": "flex", "toolChoice": {"type": "function", "name": "read"},
   "cacheRetention": "long", "sessionId": "sess-282", "headers": {"x-test-drop": None, "x-test-option": "o"}},
  [ok([created()] + message(0, MSG, "Yes.") + [completed(usage=usage(100, 5), service_tier="flex")])])

fixture("283-or-backfill-phase-diagnostics",
  "A reasoning item done without encrypted_content gets it from response.completed's output (signature rewritten); a message in the final_answer phase (stop reason set at once; phase in the textSignature); input_transformations removals (not turn_boundary) become a diagnostic.",
  model(), [user("Hello")], {"apiKey": KEY, "reasoning": "high"},
  [ok([created(), added(0, {"id": REASONING_ID, "type": "reasoning", "summary": []}),
       ev("response.reasoning_summary_text.delta", {"item_id": REASONING_ID, "output_index": 0, "summary_index": 0, "delta": "Thinking."}),
       ev("response.reasoning_summary_part.done", {"item_id": REASONING_ID, "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": "Thinking."}}),
       done(0, reasoning_item(["Thinking."], encrypted=None)),
       ] + message(1, MSG, "Final.", phase="final_answer") + [
       completed(usage=usage(40, 12, reasoning=6), output=[reasoning_item(["Thinking."], encrypted="gAAAAABbackfilled"), msg_item(MSG, "Final.", "final_answer")],
                 input_transformations=[{"type": "reasoning", "id": "rs_old1", "action": "removed", "reason": "prefix_mismatch"},
                                        {"type": "reasoning", "id": "rs_old2", "action": "removed", "reason": "turn_boundary"}])])])

fixture("284-or-aborted-before-call",
  "The signal is aborted before the call: no request, an `aborted` error `Request aborted`.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created()])], abortAfterEvents=0)

fixture("285-or-missing-api-key-throws",
  "No apiKey and no authorization header: streamSimple throws `No API key for provider: openai`; no request.",
  model(), [user("Hello")], {},
  [])

fixture("286-or-connection-dropped-mid-stream",
  "The server closes the connection after some text: no text_end, Node's `terminated` text.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created(), added(0, msg_item(MSG)), text_delta(0, MSG, "Hel")], end="disconnect")])

fixture("287-or-openrouter-session-authorization-header",
  "OpenRouter host: the key from an explicit authorization header, `x-session-id` affinity, prompt_cache_key cut to 64 characters, compat.supportsStrictMode + a strict-preferring tool → strict schema, reasoning `xhigh` clamped to high.",
  model(provider="openrouter", id="openai/gpt-5-mini", compat={"supportsStrictMode": True}),
  [system("Tools.", toolsAdded=[dict(TOOL, constrainedSampling={"type": "json_schema", "strict": "prefer"}),
                                {"name": "note", "description": "Take a note.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["text"]},
                                 "constrainedSampling": {"type": "json_schema", "strict": "prefer"}}]),
   user("Hi")],
  {"headers": {"Authorization": "Bearer sk-or-header-key"}, "sessionId": "s" * 80, "reasoning": "xhigh"},
  [ok([created()] + message(0, MSG, "Hi.") + [completed(usage=usage(10, 2))])])

fixture("288-or-chatgpt-usage-limit-hint",
  "HTTP 429 whose error code is a ChatGPT subscription's usage limit (not retried by default): the error text gets pi-ai's hint of where to check the usage.",
  model(), [user("Hello")], {"apiKey": KEY},
  [error_response(429, {"error": {"message": "You have hit your usage limit.", "type": "usage_limit_reached",
                                  "code": "subscription_sharing_usage_limit_exceeded"}})])

fixture("289-or-mid-convo-system-and-options",
  "compat.supportsMidConvoSystemMessages: a later system message goes out in place as its update text; promptCacheKeyMode disabled (no prompt_cache_key) with PI_CACHE_RETENTION=long from options.env (prompt_cache_retention 24h); supportsMaxOutputTokens false; toolChoice and temperature null are sent as null; reasoning off with an `off` mapping → that effort; xai always includes encrypted reasoning; model and option samplingParams merged last.",
  model(provider="xai", thinkingLevelMap={"off": "minimal", "low": "low", "high": "high"},
        samplingParams={"top_p": 0.9, "temperature": 0.5},
        compat={"supportsMidConvoSystemMessages": True, "promptCacheKeyMode": "disabled", "supportsMaxOutputTokens": False}),
  [system("Base prompt.", sections={"env": "cwd: /a"}, toolsAdded=[TOOL]), user("Hi", 1),
   asst([{"type": "text", "text": "Hello."}], provider="xai"),
   system("", sections={"env": "cwd: /b"}, timestamp=3), user("Again", 4)],
  {"apiKey": KEY, "reasoning": "off", "toolChoice": None, "temperature": None, "sessionId": "sess-289",
   "env": {"PI_CACHE_RETENTION": "long"}, "samplingParams": {"top_p": 0.5}},
  [ok([created()] + message(0, MSG, "Ok.") + [completed(usage=usage(10, 2))])])

fixture("290-or-http-422-body-without-error-or-message",
  "HTTP 422 whose JSON body has neither `error` nor `message`: the SDK's message is `<status> <body JSON>`, which already carries the body, so it is kept as is.",
  model(), [user("Hello")], {"apiKey": KEY},
  [error_response(422, {"detail": "Unprocessable input", "loc": ["body", "input"]})])

fixture("291-or-unfinished-tool-call",
  "response.completed while a function call never got its output_item.done: the stream fails naming the call (pi-ai refuses to hand over arguments that may be cut off).",
  model(), [system("Tools.", toolsAdded=[TOOL]), user("Read a", 1)], {"apiKey": KEY},
  [ok([created(), added(0, fc_item(FC, CALL, "read")), args_delta(0, FC, '{"path":"a'),
       completed(usage=usage(30, 8))])])

fixture("292-or-unknown-response-status",
  "response.completed with a status pi-ai does not know: usage and rawStopReason are kept, then `Unhandled stop reason: expired`.",
  model(), [user("Hello")], {"apiKey": KEY},
  [ok([created()] + message(0, MSG, "Hi") + [completed(status="expired", usage=usage(12, 3))])])

fixture("293-or-incomplete-without-reason-fast-tier",
  "response.incomplete without incomplete_details: `Response incomplete without a provider reason`; the `fast` tier of gpt-5.5 multiplies the cost by 2.5.",
  model(id="gpt-5.5"), [user("Hello")], {"apiKey": KEY},
  [ok([created()] + message(0, MSG, "Hi") + [ev("response.incomplete", {"response": response("incomplete", usage=usage(100, 40, cached=20), service_tier="fast")})])])

fixture("294-or-abort-mid-reasoning",
  "Abort after the 4th event (a reasoning summary delta) while the server stalls: no thinking_end, an `aborted` error with the stream-ended text.",
  model(), [user("Hello")], {"apiKey": KEY, "reasoning": "low"},
  [ok([created(), added(0, {"id": REASONING_ID, "type": "reasoning", "summary": []}),
       ev("response.reasoning_summary_text.delta", {"item_id": REASONING_ID, "output_index": 0, "summary_index": 0, "delta": "Let me"}),
       ev("response.reasoning_summary_text.delta", {"item_id": REASONING_ID, "output_index": 0, "summary_index": 0, "delta": " think."})],
      end="stall")], abortAfterEvents=4)

PATCH_TOOL = {"name": "apply_patch", "description": "Apply a patch.",
              "parameters": {"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]},
              "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": "start: /(.|\\n)+/", "openai_regex": "^.+$"}}}
CTC = "ctc_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
def ctc_item(id, call, name, input=None, status="in_progress"):
    item = {"id": id, "type": "custom_tool_call", "status": status, "call_id": call, "name": name}
    if input is not None: item["input"] = input
    return item
def input_delta(i, id, d): return ev("response.custom_tool_call_input.delta", {"item_id": id, "output_index": i, "delta": d})
fixture("295-or-grammar-tools",
  "compat.supportsOpenAIGrammarTools: a grammar tool goes out as a custom tool (lark preferred); a same-model grammar call is replayed as custom_tool_call with its input (and its result as custom_tool_call_output), a function call whose item id is ctc_ loses it; the stream's custom_tool_call input deltas become the JSON text of the arguments (escaped), input.done closes them; a second custom call arrives with its whole input in the added item.",
  model(compat={"supportsOpenAIGrammarTools": True}),
  [system("Patch files.", toolsAdded=[PATCH_TOOL, TOOL]), user("Fix it", 1),
   asst([{"type": "toolCall", "id": "call_Patch0000000000000001|ctc_previous_0001", "name": "apply_patch", "arguments": {"patch": "*** old\n"}},
         {"type": "toolCall", "id": "call_Read00000000000000001|ctc_wrong_type_01", "name": "read", "arguments": {"path": "a"}}], stop="toolUse"),
   result("call_Patch0000000000000001|ctc_previous_0001", "apply_patch", [{"type": "text", "text": "applied"}]),
   result("call_Read00000000000000001|ctc_wrong_type_01", "read", [{"type": "text", "text": "a text"}]),
   user("Again", 4)],
  {"apiKey": KEY},
  [ok([created(), added(0, ctc_item(CTC, CALL, "apply_patch", "")),
       input_delta(0, CTC, "*** Begin"), input_delta(0, CTC, " \"quoted\"\n"), input_delta(0, CTC, ""),
       ev("response.custom_tool_call_input.done", {"item_id": CTC, "output_index": 0, "input": "*** Begin \"quoted\"\n*** End"}),
       done(0, ctc_item(CTC, CALL, "apply_patch", "*** Begin \"quoted\"\n*** End", "completed")),
       added(1, ctc_item("ctc_second000000000000000000000000", "call_Second000000000000000", "apply_patch", "whole\tinput")),
       done(1, ctc_item("ctc_second000000000000000000000000", "call_Second000000000000000", "apply_patch", "whole\tinput", "completed")),
       completed(usage=usage(60, 30))])])

fixture("296-or-grammar-tool-without-variant",
  "A grammar tool without a usable variant on a model taking grammar tools: the stream fails before any request with pi-ai's text.",
  model(compat={"supportsOpenAIGrammarTools": True}),
  [system("Patch files.", toolsAdded=[dict(PATCH_TOOL, constrainedSampling={"type": "grammar", "variants": {"openai_lark": "  "}})]), user("Fix it", 1)],
  {"apiKey": KEY},
  [])

NOTE_TOOL = {"name": "note", "description": "Take a note.", "parameters": {"type": "object",
             "properties": {"text": {"type": "string"}}, "required": ["text"]}}
fixture("297-or-tool-search-and-configuration-updates",
  "compat.supportsMidConvoSystemMessages + supportsToolSearch: a tool added mid-conversation is loaded in place by a client tool_search_call/tool_search_output pair (hashed call id, defer_loading), the earlier tools stay top-level; compat.supportsMidConvoEffort: the level travels in configuration_update items (before a same-model turn that recorded one, and at the end), the request's effort is fixed at medium and the message carries providerThinkingLevel.",
  model(compat={"supportsMidConvoSystemMessages": True, "supportsToolSearch": True, "supportsMidConvoEffort": True}),
  [system("Tools.", toolsAdded=[TOOL]), user("Hi", 1),
   asst([{"type": "text", "text": "Hello.", "textSignature": json.dumps({"v": 1, "id": "msg_turn_one"})}], providerThinkingLevel="low"),
   system("", toolsAdded=[NOTE_TOOL], timestamp=3), user("Take a note", 4)],
  {"apiKey": KEY, "reasoning": "high"},
  [ok([created()] + message(0, MSG, "Noted.") + [completed(usage=usage(20, 4))])])

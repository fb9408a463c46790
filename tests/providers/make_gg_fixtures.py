#!/usr/bin/env python3
"""Writes the google-generative-ai fixtures 350-371 of tests/providers/fixtures (record their traces with the kit
oracle: node record.mjs FIXTURES_DIR OUT_DIR)."""
import json, os, sys
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
SSE_HEADERS = {"content-type": "text/event-stream", "content-disposition": "attachment", "x-content-type-options": "nosniff"}
KEY = "AIzaSyTest-0123456789abcdefghijklmnopqr"
ZERO_USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
def model(id="gemini-2.5-flash", **kw):
    m = {"id": id, "name": id, "api": "google-generative-ai", "provider": "google", "baseUrl": "{{BASE_URL}}/v1beta",
         "reasoning": True, "input": ["text", "image"], "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0.03, "cacheWrite": 0},
         "contextWindow": 1048576, "maxTokens": 65536}
    m.update(kw)
    return m
LEVELS = {"off": None, "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": None, "max": None}
def data(obj, end="\r\n\r\n"):
    return "data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + end
def chunk(parts=None, finish=None, usage=None, rid="resp-gg-0001", mv="gemini-2.5-flash", **kw):
    c = {}
    if parts is not None:
        cand = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish: cand["finishReason"] = finish
        c["candidates"] = [cand]
    elif finish:
        c["candidates"] = [{"finishReason": finish, "index": 0}]
    if usage: c["usageMetadata"] = usage
    c.update(kw)
    c["modelVersion"] = mv
    if rid: c["responseId"] = rid
    return c
def usage(prompt, cand=None, thoughts=None, cached=None):
    u = {"promptTokenCount": prompt}
    if cand is not None: u["candidatesTokenCount"] = cand
    total = prompt + (cand or 0) + (thoughts or 0)
    u["totalTokenCount"] = total
    if cached is not None: u["cachedContentTokenCount"] = cached
    if thoughts is not None: u["thoughtsTokenCount"] = thoughts
    return u
def user(t, ts=1): return {"role": "user", "content": t, "timestamp": ts}
def system(t, **kw):
    m = {"role": "system", "content": t, "timestamp": 0}; m.update(kw); return m
def asst(content, mdl="gemini-2.5-flash", stop="toolUse", api="google-generative-ai", provider="google", ts=2):
    return {"role": "assistant", "content": content, "api": api, "provider": provider, "model": mdl,
            "usage": ZERO_USAGE, "stopReason": stop, "timestamp": ts}
def result(id, name, text, is_error=False, images=(), ts=3):
    content = [{"type": "text", "text": text}] if text is not None else []
    content += [{"type": "image", "data": d, "mimeType": "image/png"} for d in images]
    return {"role": "toolResult", "toolCallId": id, "toolName": name, "content": content, "isError": is_error, "timestamp": ts}
def ok(chunks, **kw):
    r = {"status": 200, "headers": dict(SSE_HEADERS), "chunks": chunks}; r.update(kw); return r
def fixture(name, description, mdl, messages, options, responses, **kw):
    opts = {"apiKey": KEY}; opts.update(options)
    f = {"description": description, "request": {"model": mdl, "context": {"messages": messages}, "options": opts},
         "responses": responses}
    f.update(kw)
    with open(os.path.join(OUT, name + ".json"), "w") as fh:
        json.dump(f, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
WEATHER = {"name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}

fixture("350-gg-prompt-blocked-no-candidates",
    "A prompt blocked by Gemini's safety filter: one chunk with promptFeedback.blockReason and usage but no candidates; no block is opened, the usage is kept, and the stream fails with `Google stream ended without a finish reason`.",
    model(), [user("Tell me how to pick a lock.")], {},
    [ok([data({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]},
               "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "modelVersion": "gemini-2.5-flash", "responseId": "blk-0001"})])])

fixture("351-gg-function-calls-without-id",
    "Gemini 2.5: function calls without ids, and one repeating a wire id already used in the message. pi-ai names such calls `<name>_<Date.now()>_<counter>` (clock and process history); libagent uses `<name>_<responseId>_<n>`, n the call's position among the response's tool calls (from 1), so the expected trace is the oracle's as recorded and the comparison masks both kinds of generated id (tests/providers/masks.json). Gemini 2.x is sent no ids, so replay does not depend on them.",
    model(), [system("You are a travel assistant.", toolsAdded=[WEATHER]), user("Weather in Oslo, Rome and Lima?")], {},
    [ok([data(chunk([{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
                     {"functionCall": {"id": "w1", "name": "get_weather", "args": {"city": "Rome"}}}], rid="fc-resp-7")),
         data(chunk([{"functionCall": {"id": "w1", "name": "get_weather", "args": {"city": "Lima"}}},
                     {"functionCall": {"name": "get_weather"}}], finish="STOP", usage=usage(30, 24), rid="fc-resp-7"))])])

fixture("352-gg-500-retried-then-500-error",
    "HTTP 500 with a JSON body, retried once (maxRetries 1, pi-ai's backoff: Gemini's SDK errors carry no headers, so retry-after-ms is ignored), then a plain-text 503 that ends the request: the SDK wraps the text as {error: {message, code, status: reason phrase}}.",
    model(), [user("Hi")], {"maxRetries": 1},
    [{"status": 500, "headers": {"content-type": "application/json; charset=UTF-8", "retry-after-ms": "20"},
      "body": "{\n  \"error\": {\n    \"code\": 500,\n    \"message\": \"An internal error has occurred.\",\n    \"status\": \"INTERNAL\"\n  }\n}\n"},
     {"status": 503, "headers": {"content-type": "text/plain"}, "body": "upstream connect error"}])

fixture("353-gg-safety-stop-after-text",
    "finishReason SAFETY after some text: the text block is closed (text_end), then the error `Provider stopped with: SAFETY` with rawStopReason SAFETY and the usage.",
    model(), [user("Write a story.")], {},
    [ok([data(chunk([{"text": "Once upon a time"}])),
         data(chunk([{"text": ""}], finish="SAFETY", usage=usage(6, 4)))])])

fixture("354-gg-error-chunk-in-stream",
    "An error object inside the stream (after some text): the SDK fails with `got status: <error.status>. <the chunk's JSON>`; no text_end.",
    model(), [user("Hi")], {},
    [ok([data(chunk([{"text": "Hel"}])),
         data({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})])])

fixture("355-gg-connection-dropped-mid-stream",
    "The server closes the connection inside the second event: the text so far, no text_end, Node's `terminated: other side closed (UND_ERR_SOCKET)`.",
    model(), [user("Hi")], {},
    [ok([data(chunk([{"text": "Hello"}])), data(chunk([{"text": " there, friend"}]))], disconnectAfterBytes=200)])

fixture("356-gg-incomplete-json-at-end",
    "The body ends inside an event (no delimiter after the last data): the SDK's `Incomplete JSON segment at the end`; the text block stays open.",
    model(), [user("Hi")], {},
    [ok([data(chunk([{"text": "Hello"}])), data(chunk([{"text": " world"}], finish="STOP"), end="")])])

fixture("357-gg-http-400-json-and-key-header",
    "HTTP 400 with a JSON body (API key invalid): the compact JSON of the whole body, key order kept; not retried. model.headers and options.headers (an x-test header and a null that removes one) merge case-insensitively; no accept header given, so fetch's */*.",
    model(headers={"X-Test-Model": "m", "X-Test-Drop": "gone"}), [user("Hi")],
    {"maxRetries": 2, "headers": {"x-test-option": "o", "x-test-drop": None}},
    [{"status": 400, "headers": {"content-type": "application/json; charset=UTF-8"},
      "body": "{\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"INVALID_ARGUMENT\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"API_KEY_INVALID\",\"domain\":\"googleapis.com\"}]}}"}])

fixture("358-gg-aborted-before-call",
    "The signal is aborted before the call: pi-ai's `Request aborted` (reason aborted), no request, no start.",
    model(), [user("Hi")], {}, [], abortAfterEvents=0)

fixture("359-gg-missing-api-key-throws",
    "No apiKey: streamSimple throws `No API key for provider: google` synchronously (an x-goog-api-key header does not replace the key); no request.",
    model(), [user("Hi")], {"apiKey": "", "headers": {"x-goog-api-key": "AIzaHeader"}}, [])

fixture("360-gg-unknown-finish-reason",
    "A finishReason pi-ai does not know: `Unhandled stop reason: BRAND_NEW` at once (rawStopReason set), the open text block not closed.",
    model(), [user("Hi")], {},
    [ok([data(chunk([{"text": "Hi"}])), data(chunk([{"text": "!"}], finish="BRAND_NEW", usage=usage(2, 2)))])])

fixture("361-gg-gemini2-replay-tool-images",
    "Gemini 2.5 request mapping: no tool-call ids sent; tool-result images follow as a separate user turn (`Tool result image:`); an image-only result says `(see attached image)`; an empty result sends an empty output; a same-model text part with a valid base64 textSignature keeps it; an empty unsigned text block is dropped; a signed empty thinking block is kept; a tool call whose result is missing gets `No result provided`; an errored assistant turn is dropped; reasoning low → thinkingBudget 2048 from thinkingBudgets; toolChoice any → ANY; const rewritten as enum (not inside properties names or default).",
    model(id="gemini-2.5-flash"),
    [system("Agent.", toolsAdded=[{"name": "shot", "description": "Screenshot.", "parameters": {
        "type": "object", "properties": {"mode": {"const": "full", "default": {"const": 1}}, "const": {"type": "number", "const": 3},
        "scale": {"anyOf": [{"const": 1}, {"const": 2}, {"const": True}]}}, "required": ["mode"]}}]),
     user([{"type": "text", "text": "Take two screenshots."}], ts=1),
     asst([{"type": "thinking", "thinking": "", "thinkingSignature": "c2lnbmVkLWVtcHR5"},
           {"type": "text", "text": "", "textSignature": ""},
           {"type": "text", "text": "On it.", "textSignature": "dGV4dC1zaWc="},
           {"type": "toolCall", "id": "shot_1", "name": "shot", "arguments": {"mode": "full"}, "thoughtSignature": "Zm4tc2ln"},
           {"type": "toolCall", "id": "shot_2", "name": "shot", "arguments": {"mode": "full"}},
           {"type": "toolCall", "id": "shot_3", "name": "shot", "arguments": {"mode": "full"}}]),
     result("shot_1", "shot", "captured", images=[PNG]),
     result("shot_2", "shot", None, images=[PNG]),
     asst([{"type": "text", "text": "partial"}], stop="error", ts=4),
     result("shot_3", "shot", "", ts=4),
     user("Thanks.", ts=5)],
    {"reasoning": "low", "thinkingBudgets": {"low": 2048}, "toolChoice": "any"},
    [ok([data(chunk([{"text": "Done."}], finish="STOP", usage=usage(50, 2)))])])

fixture("362-gg-strict-tool-validated-minimal-level",
    "Gemini 3 with a tool asking for strict sampling: the strict schema (optional properties nullable, all required, additionalProperties false) and functionCallingConfig VALIDATED; reasoning minimal maps to thinkingLevel MINIMAL; a thinking part signed with a second signature keeps the last one.",
    model(id="gemini-3-flash-preview", thinkingLevelMap=LEVELS),
    [system("Agent.", toolsAdded=[{"name": "edit", "description": "Edit a file.", "constrainedSampling": {"type": "json_schema", "strict": "prefer"},
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer"}}, "required": ["path"]}}]),
     user("Fix it.")],
    {"reasoning": "minimal"},
    [ok([data(chunk([{"text": "Thinking", "thought": True, "thoughtSignature": "Zmlyc3Q="}], mv="gemini-3-flash-preview")),
         data(chunk([{"text": " more", "thought": True, "thoughtSignature": "c2Vjb25k"}], mv="gemini-3-flash-preview")),
         data(chunk([{"functionCall": {"id": "e1", "name": "edit", "args": {"path": "a.ts", "line": None}}}], finish="STOP",
                    usage=usage(40, 9, thoughts=12), mv="gemini-3-flash-preview"))])])

fixture("363-gg-connection-closed-before-headers",
    "The server closes the connection before any response: fetch's `fetch failed: other side closed (UND_ERR_SOCKET)`; not retried although maxRetries is 2 (the Google SDK's connection errors carry no status, so pi-ai's retry wrapper passes them on).",
    model(), [user("Hi")], {"maxRetries": 2},
    [{"noHeaders": True, "end": "disconnect"}, {"noHeaders": True, "end": "disconnect"}])

FRAMED = (": keep-alive\n\n" + data(chunk([{"text": "Gr"}], rid=None), end="\n\n")
          + "event: message\n" + data(chunk([{"text": "IGNORED"}]), end="\r\r")
          + data(chunk([{"text": "üße"}], rid="first-id"), end="\r\r")
          + data(chunk([{"text": "hm", "thought": True}], rid="second-id"), end="\r\n\r\n")
          + data(chunk([{"text": ""}, {"text": " done"}], finish="STOP", usage=usage(3, 4, thoughts=1))))
FRAMED_BYTES = FRAMED.encode()
INSIDE_U = FRAMED_BYTES.index("ü".encode()) + 1
fixture("364-gg-sse-framing",
    "The Google SDK's event splitting: \\n\\n, \\r\\r and \\r\\n\\r\\n end events; an `event:` line or a comment before the data makes the event ignored; writes cut inside the delimiters and inside a multi-byte character; an empty text part; text, thinking, then text again (three blocks); responseId from the first chunk that has one.",
    model(), [user("Hi")], {},
    [{"status": 200, "headers": dict(SSE_HEADERS), "body": FRAMED,
      "splitAtBytes": sorted({5, 13, 14, INSIDE_U, FRAMED_BYTES.index(b"\r\r") + 1, FRAMED_BYTES.index(b"\r\n\r\n") + 2})}])

fixture("365-gg-tool-choice-none-no-tools-reasoning-off",
    "options.reasoning off on a budget model → thinkingBudget 0; toolChoice none with tools → NONE; temperature 0 kept; a system message with tools and empty content → no systemInstruction; a user message with only an image.",
    model(id="gemini-2.0-flash"),
    [system("", toolsAdded=[WEATHER]), user([{"type": "image", "data": PNG, "mimeType": "image/png"}])],
    {"reasoning": "off", "toolChoice": "none", "temperature": 0},
    [ok([data(chunk([{"text": "A pixel."}], finish="STOP", usage=usage(260, 3), mv="gemini-2.0-flash"))])])

fixture("366-gg-cross-model-replay-ids-gemini3",
    "Gemini 3.1 Pro replaying turns of other models: an Anthropic turn (thinking dropped, toolu_ id kept, signature-less functionCall with id), a Gemini 2.5 turn (same provider, other model: thought signature dropped, text signature dropped), ids with characters outside [a-zA-Z0-9_-] sanitized and cut at 64; MAX_TOKENS → length with a functionCall (stays length).",
    model(id="gemini-3.1-pro-preview", thinkingLevelMap=dict(LEVELS, minimal=None)),
    [user("Start."),
     asst([{"type": "thinking", "thinking": "Claude thoughts", "thinkingSignature": "c2ln"},
           {"type": "toolCall", "id": "toolu_01ABC.def/ghi", "name": "read", "arguments": {"p": 1}}],
          mdl="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic"),
     result("toolu_01ABC.def/ghi", "read", "one"),
     asst([{"type": "thinking", "thinking": "Flash thoughts", "thinkingSignature": "Zmxhc2g="},
           {"type": "text", "text": "Reading more.", "textSignature": "dGV4dA=="},
           {"type": "toolCall", "id": "x" * 70 + "!", "name": "read", "arguments": {"p": 2}, "thoughtSignature": "Zm4="}],
          mdl="gemini-2.5-flash", ts=4),
     result("x" * 70 + "!", "read", "two", ts=5),
     user("Go on.", ts=6)],
    {"reasoning": "xhigh"},
    [ok([data(chunk([{"text": "Next"}, {"functionCall": {"id": "n1", "name": "read", "args": {}}}], finish="MAX_TOKENS",
                    usage=usage(120, 30, thoughts=5), mv="gemini-3.1-pro-preview"))])])

fixture("367-gg-429-retried-then-429",
    "A 429 JSON error retried once (maxRetries 1, pi-ai's backoff), then a second 429 whose body carries RetryInfo details (ignored: no server delay is honoured) ends the request with the compact JSON of the body.",
    model(), [user("Hi")], {"maxRetries": 1},
    [{"status": 429, "headers": {"content-type": "application/json"}, "body": "{\"error\":{\"code\":429,\"message\":\"Quota exceeded\",\"status\":\"RESOURCE_EXHAUSTED\"}}"},
     {"status": 429, "headers": {"content-type": "application/json"}, "body": "{\"error\":{\"code\":429,\"message\":\"Quota exceeded again\",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"30s\"}]}}"}])

fixture("368-gg-level-mapping-unknown-throws",
    "A thinkingLevelMap entry Gemini does not know (high → ultra) on a level model: streamSimple throws `Unsupported Google thinking level mapping for google/gemini-3-pro-preview: high -> ultra`; no request.",
    model(id="gemini-3-pro-preview", thinkingLevelMap=dict(LEVELS, high="ultra")), [user("Hi")], {"reasoning": "high"}, [])

fixture("369-gg-invalid-model-id",
    "A model id the Google SDK refuses (`..` could leave the URL path): `invalid model parameter` as an error event, no request, no start.",
    model(id="../secrets"), [user("Hi")], {}, [])

fixture("370-gg-header-key-wins-sdk-content-type-stays",
    "options.headers with its own x-goog-api-key (the SDK then does not add the apiKey's) and `content-type: null` (pi-ai's null removes only its own layers: the SDK's application/json stays), and an `accept` of its own (fetch adds none).",
    model(), [user("Hi")], {"headers": {"X-Goog-Api-Key": "AIzaFromHeader", "content-type": None, "Accept": "text/event-stream"}},
    [ok([data(chunk([{"text": "Hi."}], finish="STOP", usage=usage(2, 2)))])])

NO_MAX = model(reasoning=False)
del NO_MAX["maxTokens"]
fixture("371-gg-no-max-tokens-sends-null",
    "A model without maxTokens and no options.maxTokens: pi-ai's clamp gives NaN, which goes out as `maxOutputTokens: null` (no limit); no thinkingConfig for a non-reasoning model.",
    NO_MAX, [user("Hi")], {},
    [ok([data(chunk([{"text": "Hi."}], finish="STOP", usage=usage(2, 2)))])])

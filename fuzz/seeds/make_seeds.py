#!/usr/bin/env python3
"""Writes the hand-made seed corpora of the byte-oriented fuzz targets (ffi_json, partial_json,
schema_args) into fuzz/corpus/<target>/. Structured targets (stream_events, api_sequences) keep
seeds produced by short fuzz runs, minimized with `cargo fuzz cmin`. Run from fuzz/."""
import hashlib
import json
import os

SEP = b"\xff"


def write(target, items):
    out = os.path.join("corpus", target)
    os.makedirs(out, exist_ok=True)
    for item in items:
        data = item if isinstance(item, bytes) else item.encode()
        name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


MODEL = '{"id":"m1","api":"faux","provider":"test"}'
MSG = '{"role":"user","content":"hi","timestamp":1}'
ASSISTANT = ('{"role":"assistant","content":[{"type":"text","text":"yo"}],"api":"faux","provider":"test",'
             '"model":"m1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,'
             '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}')
TOOL_RESULT = '{"role":"toolResult","toolCallId":"c1","toolName":"t","content":[{"type":"text","text":"r"}],"isError":false,"timestamp":3}'

# ffi_json: one selector byte (value % 16 picks the entry point), then the payload.
ffi = [
    # 0 options
    "0" + json.dumps({"initialState": {"systemPrompt": "Be brief.", "model": json.loads(MODEL), "thinkingLevel": "low",
                                       "messages": [json.loads(MSG)]}, "steeringMode": "all", "followUpMode": "one-at-a-time",
                      "toolExecution": "sequential", "sessionId": "s", "transport": "sse",
                      "thinkingBudgets": {"low": 10}, "maxRetryDelayMs": 5, "identity": {"user": "u"}}),
    "0{}", "0null", "0{\"bogus\":1}", "0{\"initialState\":{\"messages\":[{\"role\":1}]}}", b"0{\"initialState\":{\"systemPrompt\":\"\xc3\x28\"}}",
    # 1 prompt
    "1\"hello\"", "1" + MSG, "1[" + MSG + "," + ASSISTANT + "]", "1[]", "1{\"role\":\"custom\",\"x\":[1,2]}", "1{\"content\":\"x\"}",
    b"1\"\xed\xa0\x80\"", "1\"\\ud800\"", "1" + "[" * 600 + "]" * 600,
    # 2 prompt_text (text 0xFF images)
    b"2look" + SEP + b'[{"type":"image","data":"AAAA","mimeType":"image/png"}]', b"2look" + SEP + b"[]", b"2only text",
    b"2x" + SEP + b'[{"type":"text"}]',
    # 3 steer, 4 follow-up
    "3" + MSG, "3\"text\"", "4" + MSG, "4{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"data\":\"\",\"mimeType\":\"x\"}]}",
    # 5 set_messages (+ continue)
    "5[" + MSG + "]", "5[" + MSG + "," + ASSISTANT + "]", "5[" + MSG + "," + ASSISTANT.replace("\"text\",\"text\":\"yo\"", "\"toolCall\",\"id\":\"c1\",\"name\":\"t\",\"arguments\":{}") + "," + TOOL_RESULT + "]",
    "5[]", "5{}",
    # 6 configure
    "6{\"thinkingLevel\":\"high\",\"toolExecution\":\"parallel\"}", "6{\"model\":" + MODEL + "}", "6{\"sessionId\":null,\"identity\":null}",
    "6{\"steeringMode\":\"bogus\"}", "6{\"maxRetryDelayMs\":-1}",
    # 7 tool definitions
    '7{"name":"t","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["a"]}}',
    '7{"name":"t","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"^[0-9]+$"}}}}',
    '7{"name":"t","parameters":{"$ref":"#/$defs/x","$defs":{"x":{"$ref":"#/$defs/x"}}}}',
    '7{"name":"t","parameters":true,"executionMode":"sequential","label":"T"}', '7{"name":"t","parameters":{"type":"object","additionalProperties":false}}',
    '7{"label":"no name"}',
    # 8/9 scripted models
    '8[{"content":[{"type":"text","text":"hello","chunks":3}]}]',
    '8[{"content":[{"type":"toolCall","id":"c1","name":"t","argsText":"{\\"a\\":1,","chunks":4}]},{"content":[{"type":"text","text":"ok"}]}]',
    '8[{"content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"x","deltas":["a","b"]}],"usage":{"input":1}}]',
    '9[{"content":[],"stopReason":"error","errorMessage":"boom"}]', '9[{"content":[],"throw":"bad"}]', '9[{"content":[],"delayMs":5}]',
    '9[{"content":[{"type":"text","text":"w"}],"waitForAbort":true}]', "9{}",
    # 10 events_open options
    ":{\"capacity\":1,\"shape\":\"lean\"}", ":{\"capacity\":0}", ":{\"shape\":\"full\"}", ":null", ":{\"capacity\":1e300}",
    # 11 pushed stream events (0xFF-separated, the last piece is the final answer)
    b";" + SEP.join([b'{"type":"start"}', b'{"type":"text_start","contentIndex":0}', b'{"type":"text_delta","contentIndex":0,"delta":"hi"}',
                     b'{"type":"text_end","contentIndex":0}', b'{"type":"done","reason":"stop"}', b""]),
    b";" + SEP.join([b'{"type":"toolcall_start","contentIndex":0,"id":"c1","toolName":"t"}', b'{"type":"toolcall_delta","contentIndex":0,"delta":"{\\"a\\":"}',
                     b'{"type":"toolcall_delta","contentIndex":0,"delta":"1}"}', b'{"type":"toolcall_end","contentIndex":0}', b'{"type":"done","reason":"toolUse"}', b""]),
    b";" + SEP.join([b'{"type":"text_delta","contentIndex":5,"delta":"x"}', ASSISTANT.encode()]),
    b";" + SEP.join([b'{"type":"start"}', b'{"type":"error","reason":"aborted","errorMessage":"stop"}', b"null"]),
    b";" + SEP.join([b'{"type":"start","partial":' + ASSISTANT.encode() + b"}", b"{}"]),
    # 12 hook answers: kind byte then answer
    b"<\x00[" + MSG.encode() + b"]", b"<\x01[]", b"<\x02\"key\"", b"<\x03{\"block\":true,\"reason\":\"no\"}", b"<\x03{\"terminate\":true}",
    b"<\x04{\"content\":[{\"type\":\"text\",\"text\":\"over\"}],\"isError\":true}", b"<\x05{\"action\":\"end\"}", b"<\x05{\"action\":\"continue\"}",
    b"<\x06{\"context\":{\"messages\":[],\"tools\":[\"t\"]},\"thinkingLevel\":\"off\"}", b"<\x07{\"messages\":[" + MSG.encode() + b"]}", b"<\x08null",
    # 13 tool answers (odd kind: fail first), 14 prepareArguments answers
    b"=\x00{\"content\":[{\"type\":\"text\",\"text\":\"r\"}],\"details\":{\"k\":1}}", b"=\x01boom", b"=\x00[]", b"=\x00{\"content\":\"notalist\"}",
    b">\x00{\"a\":\"12\",\"b\":5}", b">\x00{}", b">\x00[1]",
    # 15 default scripted model
    '?[{"content":[{"type":"text","text":"default"}]}]', "?[]",
]
write("ffi_json", ffi)

# partial_json: argument text, cut into deltas at 0xFF bytes.
pj = [
    b'{"path": "src/ma' + SEP + b'in.rs", "limit": 2' + SEP + b"0}",
    b'{"a":[1,2,{"b":nu' + SEP + b"ll}]}", b'{"s":"\\u00' + SEP + b'e9\\ud83d' + SEP + b'\\ude00"}', b'{"x":tr' + SEP + b"ue,\"y\":fal" + SEP + b"se}",
    b'{"n":-1.5e' + SEP + b"+10}", b"{", b"", b"   ", b"[1,2]", b'"str"', b"42", b'{"a":1}{"b":2}', b'{"a":"unterminated',
    b'{"a":"\\', b'{"a":"line\nbreak"}', b'{"a":"tab\there"}', b'{"k\\"ey":"v"}', b"{'single':1}", b'{"a":1,}', b'{"a":.5}',
    b'{"deep":' + b'{"d":' * 40 + b"1" + b"}" * 40 + b"}", b"[" * 700, b'{"a":"\xc3' + SEP + b'\xa9"}', b'{"a":"\\x41"}',
    b'{"emoji":"\xf0\x9f\x98' + SEP + b'\x80"}', b'{"a":NaN,"b":Infinity}', b'{"a":[],"b":{},"c":""}', b'{"dup":1,"dup":2}',
    b'{"0":"idx","b":1,"1":2}', b'{"a":1e400}',
]
write("partial_json", pj)

# schema_args: schema NUL arguments.
def sa(schema, args):
    return json.dumps(schema).encode() + b"\x00" + (args if isinstance(args, bytes) else json.dumps(args).encode())

obj = lambda props, **kw: dict({"type": "object", "properties": props}, **kw)
sch = [
    sa(obj({"a": {"type": "number"}, "b": {"type": "string"}}, required=["a"]), {"a": "12", "b": 5}),
    sa(obj({"a": {"type": "integer"}}), {"a": "1.5"}),
    sa(obj({"a": {"type": "boolean"}}), {"a": "true"}),
    sa(obj({"a": {"type": "null"}}), {"a": ""}),
    sa(obj({"a": {"type": ["string", "null"]}}), {"a": None}),
    sa(obj({"a": {"type": "array", "items": {"type": "number"}}}), {"a": ["1", "x"]}),
    sa(obj({"a": {"enum": ["x", 1, None]}}), {"a": "y"}),
    sa(obj({"a": {"const": {"k": [1]}}}), {"a": {"k": [1]}}),
    sa(obj({"a": {"anyOf": [{"type": "string"}, {"type": "number"}]}}), {"a": True}),
    sa(obj({"a": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}), {"a": 1}),
    sa(obj({"a": {"allOf": [{"minimum": 1}, {"maximum": 3}]}}), {"a": 5}),
    sa(obj({"a": {"not": {"type": "string"}}}), {"a": "s"}),
    sa(obj({"a": {"type": "string", "pattern": "^\\d+$", "minLength": 2, "maxLength": 4}}), {"a": "12345"}),
    sa(obj({"a": {"type": "string", "pattern": "(unclosed"}}), {"a": "x"}),
    sa(obj({"a": {"type": "string", "format": "email"}, "b": {"format": "uri"}, "c": {"format": "date-time"}, "d": {"format": "regex"}}),
       {"a": "x@", "b": "::", "c": "2020-13-01", "d": "("}),
    sa(obj({"a": {"type": "number", "multipleOf": 0.1, "exclusiveMinimum": 0}}), {"a": 0.3}),
    sa(obj({}, additionalProperties=False), {"extra": 1}),
    sa(obj({}, patternProperties={"^x": {"type": "number"}}, additionalProperties={"type": "string"}), {"x1": "n", "y": 2}),
    sa(obj({}, propertyNames={"maxLength": 2}, minProperties=1, maxProperties=2), {"abc": 1, "b": 2, "c": 3}),
    sa({"type": "object", "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
       {"next": {"next": {"next": 1}}}),
    sa({"$ref": "#"}, {"a": 1}),
    sa({"$ref": "#/definitions/missing"}, {}),
    sa({"type": "object", "dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}}, {"a": 1, "c": 2}),
    sa({"type": "object", "if": {"properties": {"k": {"const": 1}}}, "then": {"required": ["x"]}, "else": {"required": ["y"]}}, {"k": 1}),
    sa({"type": "object", "unevaluatedProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}),
    sa({"type": "array", "prefixItems": [{"type": "string"}], "items": False, "minItems": 1, "uniqueItems": True, "contains": {"type": "number"}}, ["a", 1]),
    sa({"type": "array", "items": [{"type": "string"}], "additionalItems": False}, ["a", "b"]),
    sa({"discriminator": {"propertyName": "kind"}, "oneOf": [obj({"kind": {"const": "a"}, "x": {"type": "number"}}),
                                                             obj({"kind": {"const": "b"}, "y": {"type": "string"}})]}, {"kind": "b", "y": 1}),
    sa(True, {"anything": [1]}), sa(False, {}), sa([], {}), sa("string schema", {}),
    sa(obj({"a": {"type": "string"}}), b'"not an object"'), sa(obj({"a": {"type": "number"}}), b"[1,2]"),
    sa(obj({"a": {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "integer"}}}}}}}),
       {"a": {"b": [{"c": "7"}, {"c": "x"}]}}),
    sa(obj({"a": {"type": "string", "default": "d"}, "n": {"type": ["number", "null"]}}, required=["a"]), {"n": None}),
]
write("schema_args", sch)


# session_lines: the lines of a session file after its header, as pi and libagent write them and
# as hand edits, other versions and crashes leave them.
def entry(i, parent, message, kind="message"):
    return (f'{{"type":"{kind}","id":"e{i}","parentId":{json.dumps(parent)},'
            f'"timestamp":"2026-01-01T00:00:0{i}.000Z","message":{message}}}')


def chain(messages):
    """Message entries each the child of the one before."""
    return "\n".join(entry(i + 1, f"e{i}" if i else None, m) for i, m in enumerate(messages))


CONVERSATION = "\n".join([
    entry(1, None, MSG), entry(2, "e1", ASSISTANT), entry(3, "e2", TOOL_RESULT),
    '{"type":"model_change","id":"e4","parentId":"e3","timestamp":"t","provider":"p","modelId":"m"}',
    '{"type":"thinking_level_change","id":"e5","parentId":"e4","timestamp":"t","thinkingLevel":"high"}',
    entry(6, "e5", '{"role":"user","content":"caf\u00e9 \\"q\\" \\n\\t\\u001f \u2713","timestamp":1.5}'),
])
sessions = [
    CONVERSATION,
    CONVERSATION + "\n",
    CONVERSATION[:-7],  # cut off mid-line
    CONVERSATION + '\n{"type":"label","id":"l1","parentId":"e6","timestamp":"t","targetId":"e2","label":"mark"}',
    CONVERSATION + '\n{"type":"compaction","id":"c1","parentId":"e6","timestamp":"t","summary":"s","firstKeptEntryId":"e3","tokensBefore":9}'
    + "\n" + entry(8, "c1", MSG),
    "\n".join([entry(1, None, MSG), "", "not json", "[1,2]", entry(2, "e1", MSG), "{", entry(3, "e1", MSG)]),
    # Valid JSON the scan leaves to the parser, one kind a line, every line on the leaf's path:
    # spaces, other escapes and number forms, repeated and array-index keys, escaped ids, null
    # content, deep nesting, a carriage return; keys alike in their first bytes and length.
    chain([
        '{"role":"user","content":"\\/\\u0041\\ud83d\\ude00"}',
        '{"role":"user","content":"x","timestamp":1.0}',
        '{"role":"user","content":[1e21]}', '{"role":"user","content":[1E5]}',
        '{"role":"user","content":[-0]}', '{"role":"user","content":[0.10]}',
        '{"role":"user","content":[1e-7]}', '{"role":"user","content":[123456789012345678]}',
        '{"role":"user","content":[0.30000000000000004,1.5e300,5e-324]}',
        '{"role":"user","content":"x","n":{"b":1,"b":2}}',
        '{"role":"user","content":"x","abcdefgh1":1,"abcdefgh1":2}',
        '{"role":"user","content":"x","abcdefgh1":1,"abcdefgh2":2,"abcdefgh1x":3}',
        '{"role":"assistant","content":{"0":1,"a":2}}',
        '{"role":"user","content":null}',
        '{"role":"user","content":' + "[" * 40 + "]" * 40 + "}",
        '{"role":"user", "content":"x"}',
        '{"role":"user","role":"assistant","content":"x"}',
    ]),
    "\n".join([
        '{"type": "message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}',
        '{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"x"}}\r',
        '{"type":"message","id":"c","id":"c","parentId":"b","message":{"role":"user","content":"x"}}',
        '{"type":"message","id":"d\\"","parentId":"b","message":{"role":"user","content":"x"}}',
        '{"type":"message","id":"e","parentId":"d\\"","message":{"role":"user","content":"x"}}',
    ]),
    # A repeated id, a custom entry.
    "\n".join([
        entry(1, None, MSG), entry(2, "e1", MSG), entry(1, "e2", MSG),
        '{"type":"custom","id":"u1","parentId":"e1","timestamp":"t","customType":"x","data":{"k":[1,2]}}',
    ]),
]
write("session_lines", [s.encode() for s in sessions] + [b"\xff\xfe" + CONVERSATION.encode(),
                                                          entry(1, None, MSG).encode() + b"\n\xc3(\xa0"])

# http_response: a read-size byte, then what a server sends back: heads and bodies of every
# framing (chunked with extensions and trailers, content-length, until close), interim answers,
# and broken ones.
SSE = b"event: ping\ndata: {}\n\n"
responses = [
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    + b"%x\r\n" % len(SSE) + SSE + b"\r\n" + b"3;ext=1\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
    + b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 2\r\n\r\n{}",
    b"HTTP/1.0 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\nA \r\n0123456789\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcd\r\n",
    b"HTTP/1.1 999 Odd\r\n\r\n",
    b"HTTP/2 200\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"p" * 70000 + b"\r\n\r\n",
]
write("http_response", [bytes([size]) + r for r in responses for size in (255, 1, 7)])

# provider_events: an API byte (0 openai-completions, 1 anthropic-messages, 2 openai-responses,
# 3 google-generative-ai), a read-size byte, then a response body: the successful bodies of the
# provider kits' fixtures (../shared/providers, SHARED to override), each read whole and 7 bytes
# at a time.
APIS = {"openai-completions": 0, "anthropic-messages": 1, "openai-responses": 2, "google-generative-ai": 3}
shared = os.environ.get("SHARED", os.path.join("..", "..", "shared"))
bodies = []
for folder in ("providers/fixtures", "providers/more/fixtures"):
    directory = os.path.join(shared, folder)
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        with open(os.path.join(directory, name)) as f:
            fixture = json.load(f)
        api = APIS.get(fixture["request"]["model"].get("api"))
        for response in fixture["responses"]:
            if api is not None and response.get("status") == 200 and response.get("chunks"):
                body = "".join(response["chunks"]).encode()
                bodies += [bytes([api, 255]) + body, bytes([api, 7]) + body]
if not bodies:
    raise SystemExit(f"no provider fixtures under {shared}: set SHARED")
write("provider_events", bodies)
print("seeds written")

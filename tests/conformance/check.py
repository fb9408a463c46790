"""Strict checking of a scenario (kit README §2): an unknown field, a missing required field, a
wrong type or an unsupported operation is a ScenarioError, never a silent pass."""

from __future__ import annotations

THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"]
QUEUE_MODES = ["all", "one-at-a-time"]
TOOL_EXECUTION = ["parallel", "sequential"]
STOP_REASONS = ["stop", "length", "toolUse", "error", "aborted"]
EVENT_TYPES = [
    "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
    "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
]
OPS = {
    "prompt": ["text", "images", "message", "messages", "await"],
    "continue": ["await"],
    "steer": ["text", "message"],
    "followUp": ["text", "message"],
    "abort": [],
    "waitForIdle": [],
    "reset": [],
    "set": ["field", "value", "thenPushToSource"],
    "clearSteeringQueue": [],
    "clearFollowUpQueue": [],
    "clearAllQueues": [],
    "peekQueuedMessages": [],
    "hasQueuedMessages": [],
    "snapshot": ["label"],
    "subscribe": ["listener"],
    "unsubscribe": ["listener"],
}
SET_FIELDS = [
    "model", "thinkingLevel", "tools", "messages", "steeringMode", "followUpMode", "toolExecution",
    "sessionId", "transport", "thinkingBudgets", "maxRetryDelayMs", "identity",
]
NULLABLE_SET_FIELDS = ["sessionId", "transport", "thinkingBudgets", "maxRetryDelayMs", "identity"]
HOOK_MATCH = {
    "beforeToolCall": ["index", "toolName", "toolCallId"],
    "afterToolCall": ["index", "toolName", "toolCallId"],
    "finishTurn": ["index"],
    "prepareRequest": ["index"],
    "prepareNextTurn": ["index"],
    "prepareNextTurnWithContext": ["index"],
    "transformContext": ["index"],
    "convertToLlm": ["index"],
}


class ScenarioError(Exception):
    pass


def fail(message: str):
    raise ScenarioError(message)


def is_object(value) -> bool:
    return isinstance(value, dict)


def check_object(value, where, allowed, required=()):
    if not is_object(value):
        fail(f"{where}: expected an object")
    for key in value:
        if key != "comment" and key not in allowed:
            fail(f'{where}: unknown field "{key}"')
    for key in required:
        if key not in value:
            fail(f'{where}: missing field "{key}"')
    return value


def check_array(value, where):
    if not isinstance(value, list):
        fail(f"{where}: expected an array")
    return value


def check_string(value, where):
    if not isinstance(value, str):
        fail(f"{where}: expected a string")
    return value


def check_bool(value, where):
    if not isinstance(value, bool):
        fail(f"{where}: expected a boolean")
    return value


def check_integer(value, where, minimum=0):
    integral = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer():
        integral = True
    if not integral or value < minimum:
        fail(f"{where}: expected an integer >= {minimum}")
    return int(value)


def check_enum(value, where, options):
    if value not in options or not isinstance(value, str):
        fail(f"{where}: expected one of {', '.join(options)}")
    return value


def check_message(value, where):
    # Messages are passed to the agent verbatim (README §2.3); the oracle checks no more.
    return value


def check_messages(value, where):
    for i, message in enumerate(check_array(value, where)):
        check_message(message, f"{where}[{i}]")
    return value


class Checker:
    def __init__(self, scenario):
        self.s = scenario
        self.tool_keys: set[str] = set()
        self.listener_ids: set[str] = {"L1"}

    def model(self, key, where):
        models = self.s.get("models") or {}
        if not isinstance(key, str) or key not in models:
            fail(f'{where}: unknown model "{key}"')

    def tool(self, key, where):
        if not isinstance(key, str) or key not in self.tool_keys:
            fail(f'{where}: unknown tool "{key}"')

    def run(self):
        s = self.s
        check_object(
            s, "scenario",
            ["name", "description", "models", "tools", "agent", "hooks", "responses", "listeners",
             "triggers", "script"],
            ["name", "script"],
        )
        check_string(s["name"], "name")
        if "description" in s:
            check_string(s["description"], "description")
        if "models" in s:
            if not is_object(s["models"]):
                fail("models: expected an object")
            for key, model in s["models"].items():
                check_object(model, f"models.{key}", list(model.keys()) if is_object(model) else [],
                             ["id", "api", "provider"])
                for field in ("id", "api", "provider"):
                    check_string(model[field], f"models.{key}.{field}")
        for i, tool in enumerate(check_array(s.get("tools", []), "tools")):
            self.tool_def(tool, f"tools[{i}]")
            key = tool.get("key", tool["name"])
            if key in self.tool_keys:
                fail(f'tools[{i}]: duplicate tool key "{key}"')
            self.tool_keys.add(key)
        for i, listener in enumerate(check_array(s.get("listeners", []), "listeners")):
            at = f"listeners[{i}]"
            check_object(listener, at, ["id", "subscribe", "throwAt"], ["id"])
            check_string(listener["id"], f"{at}.id")
            if listener["id"] in self.listener_ids:
                fail(f'{at}: duplicate listener id "{listener["id"]}"')
            self.listener_ids.add(listener["id"])
            if "subscribe" in listener:
                check_bool(listener["subscribe"], f"{at}.subscribe")
            if "throwAt" in listener:
                throw = check_object(listener["throwAt"], f"{at}.throwAt", ["type", "nth", "message"],
                                     ["type", "message"])
                check_enum(throw["type"], f"{at}.throwAt.type", EVENT_TYPES)
                if "nth" in throw:
                    check_integer(throw["nth"], f"{at}.throwAt.nth", 1)
                check_string(throw["message"], f"{at}.throwAt.message")
        if "agent" in s:
            self.agent(s["agent"])
        if "hooks" in s:
            self.hooks(s["hooks"])
        for i, response in enumerate(check_array(s.get("responses", []), "responses")):
            self.response(response, f"responses[{i}]")
        for i, trigger in enumerate(check_array(s.get("triggers", []), "triggers")):
            at = f"triggers[{i}]"
            check_object(trigger, at, ["on", "ops"], ["on", "ops"])
            on = check_object(trigger["on"], f"{at}.on",
                              ["type", "nth", "subtype", "role", "toolCallId", "toolName"], ["type"])
            check_enum(on["type"], f"{at}.on.type", EVENT_TYPES)
            if "nth" in on:
                check_integer(on["nth"], f"{at}.on.nth", 1)
            for field in ("subtype", "role", "toolCallId", "toolName"):
                if field in on:
                    check_string(on[field], f"{at}.on.{field}")
            self.ops(trigger["ops"], f"{at}.ops", True)
        self.ops(s["script"], "script", False)

    def tool_def(self, tool, where):
        check_object(
            tool, where,
            ["key", "name", "label", "description", "parameters", "executionMode", "prepareArguments",
             "default", "calls"],
            ["name"],
        )
        check_string(tool["name"], f"{where}.name")
        for field in ("key", "label", "description"):
            if field in tool:
                check_string(tool[field], f"{where}.{field}")
        if "parameters" in tool and not is_object(tool["parameters"]):
            fail(f"{where}.parameters: expected an object")
        if "executionMode" in tool:
            check_enum(tool["executionMode"], f"{where}.executionMode", TOOL_EXECUTION)
        if "prepareArguments" in tool:
            spec = check_object(tool["prepareArguments"], f"{where}.prepareArguments", ["rename", "defaults"])
            for j, rename in enumerate(check_array(spec.get("rename", []), f"{where}.prepareArguments.rename")):
                at = f"{where}.prepareArguments.rename[{j}]"
                check_object(rename, at, ["from", "to"], ["from", "to"])
                check_string(rename["from"], f"{at}.from")
                check_string(rename["to"], f"{at}.to")
            if "defaults" in spec and not is_object(spec["defaults"]):
                fail(f"{where}.prepareArguments.defaults: expected an object")
        if "default" in tool:
            self.invocation(tool["default"], f"{where}.default")
        if "calls" in tool:
            if not is_object(tool["calls"]):
                fail(f"{where}.calls: expected an object")
            for call_id, invocation in tool["calls"].items():
                self.invocation(invocation, f"{where}.calls.{call_id}")

    def invocation(self, inv, where):
        check_object(inv, where, ["steps", "result", "throw", "onAbort", "lateUpdate"])
        if "result" in inv and "throw" in inv:
            fail(f'{where}: give "result" or "throw", not both')
        if "throw" in inv:
            check_string(inv["throw"], f"{where}.throw")
        if "result" in inv and not is_object(inv["result"]):
            fail(f"{where}.result: expected an object")
        for i, step in enumerate(check_array(inv.get("steps", []), f"{where}.steps")):
            at = f"{where}.steps[{i}]"
            check_object(step, at, ["wait", "update"])
            if ("wait" in step) == ("update" in step):
                fail(f'{at}: expected exactly one of "wait", "update"')
            if "wait" in step:
                check_integer(step["wait"], f"{at}.wait")
        if "onAbort" in inv:
            on_abort = check_object(inv["onAbort"], f"{where}.onAbort", ["result", "throw"])
            if ("result" in on_abort) == ("throw" in on_abort):
                fail(f'{where}.onAbort: expected exactly one of "result", "throw"')
            if "throw" in on_abort:
                check_string(on_abort["throw"], f"{where}.onAbort.throw")
            if "result" in on_abort and not is_object(on_abort["result"]):
                fail(f"{where}.onAbort.result: expected an object")
        if "lateUpdate" in inv:
            late = check_object(inv["lateUpdate"], f"{where}.lateUpdate", ["afterMs", "partialResult"],
                                ["partialResult"])
            if "afterMs" in late:
                check_integer(late["afterMs"], f"{where}.lateUpdate.afterMs")

    def agent(self, agent):
        check_object(agent, "agent", ["initialState", "toolExecution", "steeringMode", "followUpMode",
                                      "sessionId", "transport", "thinkingBudgets", "maxRetryDelayMs",
                                      "identity"])
        if "initialState" in agent:
            init = check_object(agent["initialState"], "agent.initialState",
                                ["systemPrompt", "model", "thinkingLevel", "tools", "messages"])
            if "systemPrompt" in init:
                check_string(init["systemPrompt"], "agent.initialState.systemPrompt")
            if "model" in init:
                self.model(init["model"], "agent.initialState.model")
            if "thinkingLevel" in init:
                check_enum(init["thinkingLevel"], "agent.initialState.thinkingLevel", THINKING_LEVELS)
            if "tools" in init:
                for i, key in enumerate(check_array(init["tools"], "agent.initialState.tools")):
                    self.tool(key, f"agent.initialState.tools[{i}]")
            if "messages" in init:
                check_messages(init["messages"], "agent.initialState.messages")
        if "toolExecution" in agent:
            check_enum(agent["toolExecution"], "agent.toolExecution", TOOL_EXECUTION)
        for field in ("steeringMode", "followUpMode"):
            if field in agent:
                check_enum(agent[field], f"agent.{field}", QUEUE_MODES)
        for field in ("sessionId", "transport"):
            if field in agent:
                check_string(agent[field], f"agent.{field}")
        for field in ("thinkingBudgets", "identity"):
            if field in agent and not is_object(agent[field]):
                fail(f"agent.{field}: expected an object")
        if "maxRetryDelayMs" in agent and not _is_number(agent["maxRetryDelayMs"]):
            fail("agent.maxRetryDelayMs: expected a number")

    def hooks(self, hooks):
        check_object(hooks, "hooks", list(HOOK_MATCH))
        for hook, rules in hooks.items():
            if hook == "comment":
                continue
            for i, rule in enumerate(check_array(rules, f"hooks.{hook}")):
                at = f"hooks.{hook}[{i}]"
                check_object(rule, at, ["match", "ops", "delayMs", "throw", "result"])
                if "match" in rule:
                    match = check_object(rule["match"], f"{at}.match", HOOK_MATCH[hook])
                    if "index" in match:
                        check_integer(match["index"], f"{at}.match.index", 1)
                if "ops" in rule:
                    self.ops(rule["ops"], f"{at}.ops", True)
                if "delayMs" in rule:
                    check_integer(rule["delayMs"], f"{at}.delayMs")
                if "throw" in rule and "result" in rule:
                    fail(f'{at}: give "result" or "throw", not both')
                if "throw" in rule:
                    check_string(rule["throw"], f"{at}.throw")
                if "result" in rule:
                    self.hook_result(hook, rule["result"], f"{at}.result")

    def hook_result(self, hook, result, where):
        if hook == "beforeToolCall":
            check_object(result, where, ["block", "reason", "terminate"])
        elif hook == "afterToolCall":
            check_object(result, where, ["content", "details", "isError", "terminate", "usage",
                                         "structuredContent"])
        elif hook == "finishTurn":
            check_object(result, where, ["action"], ["action"])
            check_enum(result["action"], f"{where}.action", ["continue", "end"])
        elif hook in ("prepareRequest", "prepareNextTurn", "prepareNextTurnWithContext"):
            allowed = {
                "prepareRequest": ["model", "thinkingLevel", "context"],
                "prepareNextTurn": ["model", "thinkingLevel", "messages"],
                "prepareNextTurnWithContext": ["model", "thinkingLevel", "context", "messages"],
            }[hook]
            check_object(result, where, allowed)
            if "model" in result:
                self.model(result["model"], f"{where}.model")
            if "thinkingLevel" in result:
                check_enum(result["thinkingLevel"], f"{where}.thinkingLevel", THINKING_LEVELS)
            if "context" in result:
                self.transform(result["context"], f"{where}.context")
            if "messages" in result:
                check_messages(result["messages"], f"{where}.messages")
        elif hook == "transformContext":
            self.transform(result, where)
        elif hook == "convertToLlm":
            if not is_object(result):
                fail(f"{where}: expected an object")
            for role, action in result.items():
                check_enum(action, f"{where}.{role}", ["keep", "user", "drop"])

    def transform(self, steps, where):
        for i, step in enumerate(check_array(steps, where)):
            at = f"{where}[{i}]"
            check_object(step, at, ["keepLast", "keepSystemAndLast", "dropRoles", "append", "prepend"])
            keys = [k for k in step if k != "comment"]
            if len(keys) != 1:
                fail(f"{at}: expected exactly one transform step")
            name = keys[0]
            if name in ("keepLast", "keepSystemAndLast"):
                check_integer(step[name], f"{at}.{name}")
            elif name == "dropRoles":
                for j, role in enumerate(check_array(step[name], f"{at}.{name}")):
                    check_string(role, f"{at}.{name}[{j}]")
            else:
                check_messages(step[name], f"{at}.{name}")

    def response(self, response, where):
        check_object(response, where, ["content", "stopReason", "errorMessage", "usage", "delayMs",
                                       "throw", "waitForAbort", "stallAfter", "abortMessage"])
        if "throw" in response:
            check_string(response["throw"], f"{where}.throw")
            others = [k for k in response if k not in ("throw", "comment")]
            if others:
                fail(f'{where}: "throw" cannot be combined with {", ".join(others)}')
            return
        if "stopReason" in response:
            check_enum(response["stopReason"], f"{where}.stopReason", STOP_REASONS)
        for field in ("errorMessage", "abortMessage"):
            if field in response:
                check_string(response[field], f"{where}.{field}")
        if "usage" in response and not is_object(response["usage"]):
            fail(f"{where}.usage: expected an object")
        if "delayMs" in response:
            check_integer(response["delayMs"], f"{where}.delayMs")
        if "waitForAbort" in response:
            check_bool(response["waitForAbort"], f"{where}.waitForAbort")
        if "stallAfter" in response:
            if response.get("waitForAbort") is not True:
                fail(f'{where}: "stallAfter" needs "waitForAbort": true')
            check_integer(response["stallAfter"], f"{where}.stallAfter")
        for i, block in enumerate(check_array(response.get("content", []), f"{where}.content")):
            at = f"{where}.content[{i}]"
            if not is_object(block):
                fail(f"{at}: expected an object")
            kind = block.get("type")
            if kind in ("text", "thinking"):
                check_object(block, at, ["type", kind, "chunks", "deltas", "signature"], [kind])
                check_string(block[kind], f"{at}.{kind}")
                if "signature" in block:
                    check_string(block["signature"], f"{at}.signature")
            elif kind == "toolCall":
                check_object(block, at, ["type", "id", "name", "arguments", "argsText", "chunks", "deltas"],
                             ["id", "name"])
                check_string(block["id"], f"{at}.id")
                check_string(block["name"], f"{at}.name")
                if "argsText" in block:
                    if "arguments" in block:
                        fail(f'{at}: give "arguments" or "argsText", not both')
                    check_string(block["argsText"], f"{at}.argsText")
                elif "arguments" in block and not is_object(block["arguments"]):
                    fail(f"{at}.arguments: expected an object")
            else:
                fail(f"{at}.type: expected text, thinking or toolCall")
            if "deltas" in block:
                if "chunks" in block:
                    fail(f'{at}: give "chunks" or "deltas", not both')
                for j, delta in enumerate(check_array(block["deltas"], f"{at}.deltas")):
                    check_string(delta, f"{at}.deltas[{j}]")
            elif "chunks" in block:
                check_integer(block["chunks"], f"{at}.chunks", 1)

    def ops(self, ops, where, nested):
        for i, op in enumerate(check_array(ops, where)):
            at = f"{where}[{i}]"
            if not is_object(op):
                fail(f"{at}: expected an object")
            name = op.get("op")
            if not isinstance(name, str) or name not in OPS:
                fail(f'{at}.op: unknown operation "{name}"')
            check_object(op, at, ["op", *OPS[name]])
            if "await" in op:
                check_bool(op["await"], f"{at}.await")
            if nested and (name == "waitForIdle" or op.get("await") is False):
                fail(f'{at}: "{name}" cannot run inside a listener or hook')
            if name == "prompt":
                forms = [k for k in ("text", "message", "messages") if k in op]
                if len(forms) != 1:
                    fail(f'{at}: expected exactly one of "text", "message", "messages"')
                if "images" in op:
                    if "text" not in op:
                        fail(f'{at}: "images" needs "text"')
                    for j, image in enumerate(check_array(op["images"], f"{at}.images")):
                        if not is_object(image):
                            fail(f"{at}.images[{j}]: expected an object")
                if "text" in op:
                    check_string(op["text"], f"{at}.text")
                if "message" in op:
                    check_message(op["message"], f"{at}.message")
                if "messages" in op:
                    check_messages(op["messages"], f"{at}.messages")
            elif name in ("steer", "followUp"):
                if ("text" in op) == ("message" in op):
                    fail(f'{at}: expected exactly one of "text", "message"')
                if "text" in op:
                    check_string(op["text"], f"{at}.text")
                else:
                    check_message(op["message"], f"{at}.message")
            elif name == "set":
                self.set_op(op, at)
            elif name in ("subscribe", "unsubscribe"):
                if op.get("listener") not in self.listener_ids:
                    fail(f"{at}.listener: unknown listener")
            elif name == "snapshot":
                if "label" in op and op["label"] is not None:
                    check_string(op["label"], f"{at}.label")

    def set_op(self, op, at):
        field = check_enum(op.get("field"), f"{at}.field", SET_FIELDS)
        if "value" not in op:
            fail(f'{at}: missing field "value"')
        value = op["value"]
        if value is None:
            if field not in NULLABLE_SET_FIELDS:
                fail(f'{at}.value: "{field}" cannot be null')
        elif field == "model":
            self.model(value, f"{at}.value")
        elif field == "thinkingLevel":
            check_enum(value, f"{at}.value", THINKING_LEVELS)
        elif field in ("steeringMode", "followUpMode"):
            check_enum(value, f"{at}.value", QUEUE_MODES)
        elif field == "toolExecution":
            check_enum(value, f"{at}.value", TOOL_EXECUTION)
        elif field == "tools":
            for j, key in enumerate(check_array(value, f"{at}.value")):
                self.tool(key, f"{at}.value[{j}]")
        elif field == "messages":
            check_messages(value, f"{at}.value")
        elif field in ("sessionId", "transport"):
            check_string(value, f"{at}.value")
        elif field in ("thinkingBudgets", "identity"):
            if not is_object(value):
                fail(f"{at}.value: expected an object")
        elif field == "maxRetryDelayMs" and not _is_number(value):
            fail(f"{at}.value: expected a number")
        if "thenPushToSource" in op:
            if field not in ("messages", "tools"):
                fail(f'{at}: "thenPushToSource" applies to "messages" and "tools" only')
            if field == "tools":
                self.tool(op["thenPushToSource"], f"{at}.thenPushToSource")
            else:
                check_message(op["thenPushToSource"], f"{at}.thenPushToSource")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_scenario(scenario) -> None:
    Checker(scenario).run()

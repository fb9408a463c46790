#!/usr/bin/env node
// Reference side of workload W5, the real-model path (BENCHMARKS.md, "W5"): pi-agent-core 1.6.0's
// Agent with pi-ai 1.6.0's streamSimple as its stream function, against the loopback SSE server
// (bench/sse_server.py). Prints one JSON line, as bench.mjs does.
//
//   node --expose-gc w5.mjs W5 --port PORT --api openai-completions|anthropic-messages
//        [--deltas 2000] [--agents 1]

import { Agent } from "@earendil-works/pi-agent-core";
import { streamSimple } from "@earendil-works/pi-ai/compat";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const api = arg("api", "openai-completions");
const deltas = Number(arg("deltas", 2000));
const agents = Number(arg("agents", 1));
const port = Number(arg("port", 0));
if (!port || !["openai-completions", "anthropic-messages"].includes(api)) {
  console.error("usage: node w5.mjs W5 --port PORT --api openai-completions|anthropic-messages [--deltas N] [--agents A]");
  process.exit(2);
}

// The server reads N from the path; the providers append /chat/completions or /v1/messages.
const openai = api === "openai-completions";
const MODEL = {
  id: "bench-model", name: "bench-model", api, provider: openai ? "openai" : "anthropic",
  baseUrl: openai ? `http://127.0.0.1:${port}/n${deltas}/v1` : `http://127.0.0.1:${port}/n${deltas}`,
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1000000, maxTokens: 100000,
};

const ADD = {
  name: "add", label: "Add", description: "Add two numbers.",
  parameters: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  },
  execute: async (_id, args) => ({ content: [{ type: "text", text: String(args.a + args.b) }], details: {} }),
};

// Reads each event's type, as the other workloads' listener; also counts what shows that the
// response really streamed (text deltas) and that the tool ran.
const counter = { events: 0, text_deltas: 0, tool_runs: 0, errors: 0 };
const trace = !!process.env.BENCH_TRACE; // print every event to stderr, to check the runs
function listener(event) {
  if (trace) {
    const { partial: _partial, ...update } = event.assistantMessageEvent ?? {};
    console.error(JSON.stringify({ ...event, assistantMessageEvent: event.assistantMessageEvent && update }));
  }
  if (event.type) counter.events++;
  if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") counter.text_deltas++;
  if (event.type === "tool_execution_end") counter.tool_runs++;
  if (event.type === "message_end" && event.message.stopReason === "error") {
    if (counter.errors++ === 0) console.error(`w5: model error: ${event.message.errorMessage}`);
  }
}

function makeAgent(model) {
  return new Agent({
    initialState: { systemPrompt: "You are a benchmark.", model, tools: [ADD] },
    streamFn: streamSimple,
    getApiKey: () => "bench-key",
    toolExecution: "parallel",
  });
}

// One prompt first, not measured (nor on libagent's side): one-time setup (pi-ai loads a
// provider's module on its first request) is not a per-delta cost.
const warm = makeAgent({ ...MODEL, baseUrl: MODEL.baseUrl.replace(`/n${deltas}`, "/n1") });
await warm.prompt("go");
const warmEnd = warm.state.messages.at(-1);
if (warmEnd.stopReason !== "stop") {
  console.error(`w5: the warm-up run ended with ${warmEnd.stopReason}: ${warmEnd.errorMessage}`);
  process.exit(1);
}

const list = [];
for (let i = 0; i < agents; i++) {
  const agent = makeAgent(MODEL);
  agent.subscribe(listener);
  list.push(agent);
}

global.gc?.();
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
await Promise.all(list.map((agent) => agent.prompt("go")));
const wall = Number(process.hrtime.bigint() - t0) / 1e6;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
if (counter.errors) process.exit(1);
console.log(JSON.stringify({
  workload: "W5", params: { api, deltas, agents },
  wall_ms: +wall.toFixed(3), cpu_ms: +cpuMs.toFixed(3),
  events: counter.events, text_deltas: counter.text_deltas, tool_runs: counter.tool_runs,
  us_per_delta: +((cpuMs * 1000) / (agents * deltas)).toFixed(3),
}));

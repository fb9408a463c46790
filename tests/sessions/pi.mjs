// The reference's side of the session interop test (tests/sessions/interop.py): pi-coding-agent
// 1.6.0's own SessionManager, installed by pi.sh (the directory is PI_DIR).
//
//   node pi.mjs context SESSION.jsonl OUT.json [LEAF]
//                                                opens the file as pi resumes it and writes what
//                                                pi's context builder makes of its leaf (or of the
//                                                entry LEAF, after pi's branch to it)
//   node pi.mjs write SESSION.jsonl OUT.json     writes a new session through pi's API (tool
//                                                calls and results, a model and a thinking-level
//                                                change, a branch, a label, a compaction), then
//                                                its context as above
//
// OUT.json: {"context": {"messages", "thinkingLevel", "model"}, "leafId", "entryCount"}.
// pi-coding-agent's package entry wants Node 22: its modules are imported by file path.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const piDir = process.env.PI_DIR;
if (!piDir) throw new Error("PI_DIR must name the directory tests/sessions/pi.sh installed the reference into");
const core = join(resolve(piDir), "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { SessionManager } = await import(join(core, "session-manager.js"));

const CWD = "/interop/cwd";
const zeroCost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
const usage = (input, output) => ({ input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
  cost: zeroCost });
let clock = 1764633600000; // message timestamps: fixed, increasing
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: clock++ });
const assistant = (content, model, stopReason) => ({ role: "assistant", content, api: "faux", provider: model[0],
  model: model[1], usage: usage(10, 5), stopReason, timestamp: clock++ });
const toolResult = (toolCallId, toolName, text) => ({ role: "toolResult", toolCallId, toolName,
  content: [{ type: "text", text }], isError: false, timestamp: clock++ });

function record(session, out) {
  const result = { context: session.buildSessionContext(), leafId: session.getLeafId(),
    entryCount: session.getEntries().length };
  writeFileSync(out, JSON.stringify(result, null, 1) + "\n");
}

/** A conversation with everything a session file holds beyond plain messages. */
function write(file) {
  const session = SessionManager.open(file, undefined, CWD); // a path that does not exist yet: a new session there
  const m1 = ["test", "m1"], m2 = ["test2", "m2"];
  session.appendModelChange(...m1);
  session.appendThinkingLevelChange("low");
  const firstPrompt = session.appendMessage(user("list the files"));
  session.appendMessage(assistant([{ type: "text", text: "Looking." },
    { type: "toolCall", id: "call_ls", name: "ls", arguments: { path: "." } }], m1, "toolUse"));
  session.appendMessage(toolResult("call_ls", "ls", "a.txt\nb.txt"));
  const answered = session.appendMessage(assistant([{ type: "text", text: "Two files: a.txt and b.txt." }], m1, "stop"));
  session.appendModelChange(...m2);
  session.appendMessage(user("delete them"));
  session.appendMessage(assistant([{ type: "text", text: "Deleted (abandoned branch)." }], m2, "stop"));
  // Back to the answer, and a second branch from there.
  session.branch(answered);
  session.appendThinkingLevelChange("high");
  const kept = session.appendMessage(user("read a.txt"));
  session.appendMessage(assistant([{ type: "toolCall", id: "call_read", name: "read", arguments: { path: "a.txt" } }],
    m2, "toolUse"));
  session.appendMessage(toolResult("call_read", "read", "hello from a"));
  session.appendMessage(assistant([{ type: "text", text: "It says hello." }], m2, "stop"));
  session.appendLabelChange(firstPrompt, "start");
  session.appendCompaction("The user listed two files and read a.txt.", kept, 4321,
    { readFiles: ["a.txt"], modifiedFiles: [] });
  session.appendMessage(user("thanks"));
  session.appendMessage(assistant([{ type: "text", text: "You are welcome." }], m2, "stop"));
}

const [command, file, out, leaf] = process.argv.slice(2);
if (command === "write") {
  write(file);
  record(SessionManager.open(file), out); // as pi resumes it: a fresh open of the file
} else if (command === "context") {
  const session = SessionManager.open(file);
  if (leaf) session.branch(leaf);
  record(session, out);
} else {
  throw new Error(`usage: node pi.mjs context|write SESSION.jsonl OUT.json [LEAF] (got ${command})`);
}

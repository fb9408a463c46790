// The reference's side of the session bench (bench/sessions.sh): pi-coding-agent 1.6.0's
// SessionManager.open of FILE and buildSessionContext at its leaf, timed, and the process's memory.
//
//   PI_DIR=build/sessions-pi node --expose-gc session_open.mjs FILE
//
// Prints one JSON line: {"side":"reference","entries","messages","open_ms","context_ms","total_ms",
// "rss_open_bytes" (RSS growth from before the open to after the context, the session still held),
// "rss_after_open_bytes" (RSS growth from before the open to after it), "peak_rss_bytes"}. pi-coding-agent's package entry wants Node 22: its module is imported by path.
import { join, resolve } from "node:path";

const file = process.argv[2];
const core = join(resolve(process.env.PI_DIR), "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { SessionManager } = await import(join(core, "session-manager.js"));

global.gc?.();
const rssBefore = process.memoryUsage().rss;
const t0 = process.hrtime.bigint();
const session = SessionManager.open(file);
const t1 = process.hrtime.bigint();
const rssAfterOpen = process.memoryUsage().rss - rssBefore;
const context = session.buildSessionContext();
const t2 = process.hrtime.bigint();
const rssOpen = process.memoryUsage().rss - rssBefore;
const ms = (a, b) => Number(b - a) / 1e6;
console.log(JSON.stringify({
  side: "reference", entries: session.getEntries().length, messages: context.messages.length,
  open_ms: +ms(t0, t1).toFixed(1), context_ms: +ms(t1, t2).toFixed(1), total_ms: +ms(t0, t2).toFixed(1),
  rss_after_open_bytes: rssAfterOpen, rss_open_bytes: rssOpen, peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
}));

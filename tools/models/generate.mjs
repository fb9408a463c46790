#!/usr/bin/env node
// Writes libagent's model catalogue (src/models/catalogue.jsonl) from pi-ai 1.6.0's built-in
// chat models: one model per line, in pi-ai's order (providers as `getBuiltinProviders()` lists
// them, models as `getBuiltinModels(provider)` does), each the object pi-ai's
// `getModel(provider, id)` returns restricted to the members below, in pi-ai's member order.
//
//   node tools/models/generate.mjs [--out FILE]      (make models; make models-check diffs)
//
// pi-ai is installed pinned into build/models-oracle/ (npm, no lock file) unless already there.
// The data is facts, not code: nothing of pi-ai's logic is copied.
//
// Members kept:
// - every model: id, name, api, provider, baseUrl, reasoning, thinkingLevelMap (which thinking
//   levels the model takes, read by the providers and by the agent's level checks), input,
//   cost (per million tokens: input, output, cacheRead, cacheWrite, and pi-ai's `tiers` where
//   the price depends on the prompt's size; the providers price usage with them),
//   contextWindow, maxTokens;
// - models whose api the built-in providers speak (src/providers, `APIS`): headers and compat
//   too, which those providers send or act on when talking to that endpoint.
// Left out: type (always "chat" here), inputLimits, promptCache and the gateway-only members
// (lab, enabled, providers, free), which nothing in libagent reads.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PI_AI = "@earendil-works/pi-ai";
const PI_AI_VERSION = "1.6.0";
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const ORACLE = join(REPO, "build", "models-oracle");
const SPOKEN_APIS = new Set(["openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai"]);
const EVERY_MODEL = new Set(["id", "name", "api", "provider", "baseUrl", "reasoning", "thinkingLevelMap", "input",
    "cost", "contextWindow", "maxTokens"]);
const SPOKEN_ONLY = new Set(["headers", "compat"]);
const REQUIRED = ["id", "name", "api", "provider", "contextWindow", "maxTokens", "cost"];

function argument(name, fallback) {
    const at = process.argv.indexOf(name);
    return at < 0 ? fallback : process.argv[at + 1];
}

function installedVersion() {
    const manifest = join(ORACLE, "node_modules", PI_AI, "package.json");
    return existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).version : undefined;
}

function installPiAi() {
    if (installedVersion() === PI_AI_VERSION) return;
    mkdirSync(ORACLE, { recursive: true });
    console.error(`models: installing ${PI_AI}@${PI_AI_VERSION} into ${ORACLE}`);
    execFileSync("npm", ["install", "--no-package-lock", "--no-save", "--no-audit", "--no-fund", "--loglevel=error",
        `${PI_AI}@${PI_AI_VERSION}`], { cwd: ORACLE, stdio: "inherit" });
    const version = installedVersion();
    if (version !== PI_AI_VERSION) {
        throw new Error(`npm installed ${PI_AI} ${version ?? "(nothing)"} into ${ORACLE}, not ${PI_AI_VERSION}`);
    }
}

function project(model) {
    const kept = {};
    for (const [key, value] of Object.entries(model)) {
        if (EVERY_MODEL.has(key) || (SPOKEN_ONLY.has(key) && SPOKEN_APIS.has(model.api))) kept[key] = value;
    }
    for (const key of REQUIRED) {
        if (kept[key] === undefined) throw new Error(`${model.provider}/${model.id} has no ${key}`);
    }
    return kept;
}

installPiAi();
const piAi = join(ORACLE, "node_modules", PI_AI, "dist");
const { getBuiltinModel, getBuiltinModels, getBuiltinProviders } = await import(
    pathToFileURL(join(piAi, "providers", "all.js")).href);

const lines = [];
for (const provider of getBuiltinProviders()) {
    // Names are "provider/id", split at the first slash: model ids may hold slashes, providers not.
    if (provider.includes("/")) throw new Error(`provider ${provider} has a slash in its name`);
    for (const model of getBuiltinModels(provider)) {
        if (getBuiltinModel(provider, model.id) !== model || model.provider !== provider) {
            throw new Error(`${provider}/${model.id} is not what getModel returns for that name`);
        }
        lines.push(JSON.stringify(project(model)));
    }
}

const out = resolve(argument("--out", join(REPO, "src", "models", "catalogue.jsonl")));
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, lines.join("\n") + "\n");
console.error(`models: ${lines.length} models of ${getBuiltinProviders().length} providers (${PI_AI} ${PI_AI_VERSION}) -> ${out}`);

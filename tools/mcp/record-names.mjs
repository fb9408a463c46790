// Records the tool names the reference gives the MCP test servers (run by hand, not in make test):
//   node tools/mcp/record-names.mjs PI_NODE_MODULES SERVERS_NODE_MODULES HTTP_URL > tests/mcp/reference_names.json
// PI_NODE_MODULES holds @earendil-works/pi-mcp 1.6.0 (pi-coding-agent 1.6.0's MCP client), e.g. from
// `npm install @earendil-works/pi-coding-agent@1.6.0` in a scratch directory; SERVERS_NODE_MODULES
// is build/mcp-servers/node_modules (tests/mcp/setup.sh); HTTP_URL is tests/mcp/http_server.py's
// URL. The reference's own client lists each server's tools and its createMcpToolName names them,
// with pi-coding-agent's rule for names taken by another tool (its MCP extension's `assignName`:
// a name owned by a different tool, already given in this list, or the plain name of two tools).
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";

const [piModules, serverModules, httpUrl] = process.argv.slice(2);
if (!httpUrl) throw new Error("usage: record-names.mjs PI_NODE_MODULES SERVERS_NODE_MODULES HTTP_URL");
// The package exports ESM only ("import"), so it is imported by its file.
const mcp = await import(pathToFileURL(join(piModules, "@earendil-works/pi-mcp/dist/index.js")).href);

const root = mkdtempSync(join(tmpdir(), "mcp-names-"));
const servers = {
    everything: () => new mcp.StdioTransport({ command: "node", args: [join(serverModules, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"] }),
    filesystem: () => new mcp.StdioTransport({ command: "node", args: [join(serverModules, "@modelcontextprotocol/server-filesystem/dist/index.js"), root] }),
    pyhttp: () => new mcp.StreamableHttpTransport({ url: httpUrl }),
};

const owners = new Map();
const names = {};
for (const [server, transport] of Object.entries(servers)) {
    const client = new mcp.McpClient({ name: "record-names", version: "1.0.0" });
    await client.connect(transport());
    const tools = await client.listTools();
    await client.close();
    const current = new Set();
    const plain = [...new Set(tools.map((tool) => tool.name))].map((tool) => mcp.createMcpToolName(server, tool));
    for (const tool of tools) {
        const owner = `${server}\0${tool.name}`;
        const name = mcp.createMcpToolName(server, tool.name, (candidate) => {
            const existing = owners.get(candidate);
            return (existing !== undefined && existing !== owner) || current.has(candidate) ||
                plain.indexOf(candidate) !== plain.lastIndexOf(candidate);
        });
        owners.set(name, owner);
        current.add(name);
        names[`${server}/${tool.name}`] = name;
    }
}
console.log(JSON.stringify({
    recordedWith: "@earendil-works/pi-mcp 1.6.0 (pi-coding-agent 1.6.0) by tools/mcp/record-names.mjs",
    names,
}, null, 2));
process.exit(0);

// MCP servers' tools as agent tools: the servers of a standard `mcpServers` configuration,
// connected in the background; an agent given the set (Options.Mcp) takes their current tools at
// each turn.
using System;
using LibAgent.Interop;

namespace LibAgent
{
    public sealed unsafe class Mcp : NativeHandle
    {
        Mcp(ulong id) : base(id) { }

        /// <summary>Starts the servers of `configJson` (`{"mcpServers": {...}}`) and returns at
        /// once. A wrong server entry does not throw: that server is reported failed by
        /// ServersJson(); a configuration that is not JSON or has no "mcpServers" object throws
        /// AgentException (InvalidJson).</summary>
        public static Mcp Connect(string configJson)
        {
            byte[] c = Util.Utf8(configJson);
            AgentMcp mcp;
            fixed (byte* p = c) Util.Check(Native.agent_mcp_connect(p, Util.Len(c), &mcp));
            return new Mcp(mcp.id);
        }

        internal AgentMcp Handle { get { return new AgentMcp { id = Live }; } }

        /// <summary>Waits until no server is still connecting or `timeoutMs` passed; true when
        /// every server settled. Refused inside a libagent callback or a dispatch.</summary>
        public bool Wait(int timeoutMs)
        {
            Util.RefuseBlocking("Mcp.Wait");
            byte settled;
            Util.Check(Native.agent_mcp_wait(Handle, (ulong)Math.Max(0, timeoutMs), &settled));
            return settled != 0;
        }

        /// <summary>The servers: `[{"name", "state", "toolCount", "lastError", "skipped"}]`.</summary>
        public string ServersJson()
        {
            byte* json;
            UIntPtr len;
            Util.Check(Native.agent_mcp_servers_json(Handle, &json, &len));
            return Util.TakeString(json, len);
        }

        /// <summary>The ready servers' tools now: `[{"name", "label", "description", "parameters"}]`,
        /// named `mcp__&lt;server&gt;__&lt;tool&gt;` as pi-coding-agent names them.</summary>
        public string ToolsJson()
        {
            byte* json;
            UIntPtr len;
            Util.Check(Native.agent_mcp_tools_json(Handle, &json, &len));
            return Util.TakeString(json, len);
        }

        /// <summary>Ends every server and waits for them (a stdio server's process group is gone
        /// when it returns). Closing twice is harmless.</summary>
        public void Close()
        {
            Util.RefuseBlocking("Mcp.Close");
            Util.Check(Native.agent_mcp_close(Handle));
        }

        protected override void Free(ulong id, bool disposing)
        {
            Util.Check(Native.agent_mcp_free(new AgentMcp { id = id }));
        }
    }
}

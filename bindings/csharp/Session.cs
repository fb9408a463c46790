// Session files (pi's SessionManager): an agent built on a Session starts from its context and
// appends what it commits.
using System;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>Which part of a session Session.Get returns (`AGENT_SESSION_*`).</summary>
    public enum SessionPart
    {
        Header = Native.AGENT_SESSION_HEADER,
        Entries = Native.AGENT_SESSION_ENTRIES,
        Branch = Native.AGENT_SESSION_BRANCH,
        Context = Native.AGENT_SESSION_CONTEXT,
        Llm = Native.AGENT_SESSION_LLM,
        LeafId = Native.AGENT_SESSION_LEAF_ID,
        File = Native.AGENT_SESSION_FILE,
    }

    public sealed unsafe class Session : NativeHandle
    {
        Session(ulong id) : base(id) { }

        static string Settings(string cwd, string durability)
        {
            if (cwd == null && durability == null) return null;
            var map = new System.Collections.Generic.Dictionary<string, object>();
            if (cwd != null) map["cwd"] = cwd;
            if (durability != null) map["durability"] = durability;
            return Json.Serialize(map);
        }

        static Session Make(int kind, string path, string cwd, string durability)
        {
            byte[] p = Util.Utf8(path ?? ""), o = Util.Utf8(Settings(cwd, durability));
            AgentSession s;
            fixed (byte* pp = p)
            fixed (byte* op = o)
            {
                switch (kind)
                {
                    case 0: Util.Check(Native.agent_session_open(pp, Util.Len(p), op, Util.Len(o), &s)); break;
                    case 1: Util.Check(Native.agent_session_create(pp, Util.Len(p), op, Util.Len(o), &s)); break;
                    case 2: Util.Check(Native.agent_session_continue_recent(pp, Util.Len(p), op, Util.Len(o), &s)); break;
                    default: Util.Check(Native.agent_session_in_memory(op, Util.Len(o), &s)); break;
                }
            }
            return new Session(s.id);
        }

        /// <summary>Opens (or starts at) the session file `path`; `durability`: "flush" or "fsync".</summary>
        public static Session Open(string path, string cwd = null, string durability = null) { return Make(0, path, cwd, durability); }

        /// <summary>A new session whose file goes into the directory `dir`.</summary>
        public static Session Create(string dir, string cwd = null, string durability = null) { return Make(1, dir, cwd, durability); }

        /// <summary>The newest session of `cwd` in `dir`, else a new one there.</summary>
        public static Session ContinueRecent(string dir, string cwd = null, string durability = null) { return Make(2, dir, cwd, durability); }

        public static Session InMemory(string cwd = null) { return Make(3, null, cwd, null); }

        internal AgentSession Handle { get { return new AgentSession { id = Live }; } }

        /// <summary>Appends an entry (JSON without id, parentId and timestamp); returns its id.</summary>
        public string Append(string entryJson)
        {
            byte[] b = Util.Utf8(entryJson);
            byte* id;
            UIntPtr len;
            fixed (byte* p = b) Util.Check(Native.agent_session_append(Handle, p, Util.Len(b), &id, &len));
            return Util.TakeString(id, len);
        }

        /// <summary>Moves the leaf to `entryId` (null: the next entry is a new root).</summary>
        public void Branch(string entryId)
        {
            byte[] b = Util.Utf8(entryId);
            fixed (byte* p = b) Util.Check(Native.agent_session_branch(Handle, p, Util.Len(b)));
        }

        /// <summary>Moves the leaf to `entryId` (null: a new root) and appends there a
        /// `branch_summary` entry (`{"summary", "details"?, ...}`) for the branch left behind;
        /// returns its id.</summary>
        public string BranchWithSummary(string entryId, string summaryJson)
        {
            byte[] e = Util.Utf8(entryId), b = Util.Utf8(summaryJson);
            byte* id;
            UIntPtr len;
            fixed (byte* ep = e)
            fixed (byte* bp = b)
                Util.Check(Native.agent_session_branch_with_summary(Handle, ep, Util.Len(e), bp, Util.Len(b), &id, &len));
            return Util.TakeString(id, len);
        }

        /// <summary>The estimated size of the context at the leaf: `{"tokens", ...}`.</summary>
        public string EstimateJson()
        {
            byte* json;
            UIntPtr len;
            Util.Check(Native.agent_session_estimate(Handle, &json, &len));
            return Util.TakeString(json, len);
        }

        /// <summary>Replaces the session by the path from the root to `entryId`.</summary>
        public void Fork(string entryId)
        {
            byte[] b = Util.Utf8(entryId);
            fixed (byte* p = b) Util.Check(Native.agent_session_fork(Handle, p, Util.Len(b)));
        }

        /// <summary>One part of the session as JSON.</summary>
        public string Get(SessionPart part)
        {
            byte* json;
            UIntPtr len;
            Util.Check(Native.agent_session_get(Handle, (int)part, &json, &len));
            return Util.TakeString(json, len);
        }

        protected override void Free(ulong id, bool disposing)
        {
            Util.Check(Native.agent_session_free(new AgentSession { id = id }));
        }
    }
}

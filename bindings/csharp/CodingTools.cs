// The coding tool pack (pi-coding-agent's read, write, edit, ls, find, grep, bash), confined to a
// root directory, with a consent callback before anything changes.
using System;
using System.Collections.Generic;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>The coding tools for `Root`; add them with Options.CodingTools. Each agent gets
    /// its own pack (its consent runs where that agent's callbacks run).</summary>
    public sealed class CodingTools
    {
        public CodingTools(string root) { Root = root; }

        public string Root { get; private set; }
        /// <summary>Enables `bash` (off by default: it is not confined to the root).</summary>
        public bool Bash { get; set; }
        /// <summary>Which tools (null: all but bash, or all seven with Bash).</summary>
        public string[] Only { get; set; }
        /// <summary>`bash`'s default timeout (null: 120 s).</summary>
        public int? BashTimeoutMs { get; set; }
        public bool RefuseHardLinks { get; set; }
        /// <summary>Asked before `write`, `edit` and `bash` change anything: answer Allow() or
        /// Refuse(reason), now or later. Null allows everything.</summary>
        public Action<ConsentRequest> Consent { get; set; }

        /// <summary>Sets Consent from a yes/no function.</summary>
        public CodingTools AskConsent(Func<ConsentRequest, bool> allow)
        {
            Consent = request =>
            {
                if (allow(request)) request.Allow();
                else request.Refuse("The user refused " + request.Tool + ".");
            };
            return this;
        }

        string OptionsJson()
        {
            var map = new Dictionary<string, object>();
            if (Bash) map["bash"] = true;
            if (Only != null) map["tools"] = Only;
            if (BashTimeoutMs.HasValue) map["bashTimeoutMs"] = BashTimeoutMs.Value;
            if (RefuseHardLinks) map["refuseHardLinks"] = true;
            return Json.Serialize(map);
        }

        /// <summary>The pack's native tools for one agent (the caller frees them).</summary>
        internal unsafe AgentTool[] NewNative(bool inline)
        {
            var site = new Callbacks.HookSite { Inline = inline, Consent = true };
            Action<ConsentRequest> consent = Consent;
            if (consent != null) site.Fn = call => consent((ConsentRequest)call);
            IntPtr userData = consent != null ? Util.Pin(site) : IntPtr.Zero;
            byte[] root = Util.Utf8(Root ?? ""), options = Util.Utf8(OptionsJson());
            var tools = new AgentTool[8];
            UIntPtr count;
            IntPtr error;
            fixed (byte* r = root)
            fixed (byte* o = options)
            fixed (AgentTool* t = tools)
                error = Native.agent_coding_tools_new(r, Util.Len(root), o, Util.Len(options),
                    consent != null ? Callbacks.Hook : null, userData, consent != null ? Util.Release : null,
                    t, (UIntPtr)tools.Length, &count);
            if (error != IntPtr.Zero && userData != IntPtr.Zero) Util.Unpin(userData);
            Util.Check(error);
            Array.Resize(ref tools, (int)count.ToUInt64());
            return tools;
        }
    }
}

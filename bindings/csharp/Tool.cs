// Tools, hooks, consent and stream functions: the host code libagent calls. Every native
// callback is a static method (IL2CPP-safe) behind one process-wide delegate; `user_data` is a
// GCHandle of the site (the host function and where it runs), released by libagent's finalizer.
using System;
using System.Threading;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>A tool the model can call: its definition and the function that runs it. The
    /// same Tool may serve several agents (each gets its own native tool).</summary>
    public sealed unsafe class Tool
    {
        public string Name { get; private set; }
        /// <summary>The definition: `{"name", "label"?, "description"?, "parameters"?, ...}`.</summary>
        public string DefinitionJson { get; private set; }
        readonly Action<ToolCall> execute;

        Tool(string name, string definitionJson, Action<ToolCall> execute)
        {
            if (execute == null) throw new ArgumentNullException("execute");
            Name = name;
            DefinitionJson = definitionJson;
            this.execute = execute;
        }

        static string Definition(string name, string description, string parametersJson)
        {
            if (string.IsNullOrEmpty(name)) throw new ArgumentException("A tool needs a name.");
            return "{\"name\":" + Json.Quote(name) + ",\"description\":" + Json.Quote(description ?? "") +
                   ",\"parameters\":" + (parametersJson ?? "{\"type\":\"object\",\"properties\":{}}") + "}";
        }

        /// <summary>A tool whose function returns its text result (an exception fails the call).
        /// `parametersJson`: a JSON schema (null: no parameters).</summary>
        public static Tool Create(string name, string description, string parametersJson, Func<ToolCall, string> fn)
        {
            if (fn == null) throw new ArgumentNullException("fn");
            return new Tool(name, Definition(name, description, parametersJson), call => call.Complete(fn(call)));
        }

        /// <summary>A tool that answers its ToolCall itself, now or later, from any thread.</summary>
        public static Tool CreateDeferred(string name, string description, string parametersJson, Action<ToolCall> fn)
        {
            return new Tool(name, Definition(name, description, parametersJson), fn);
        }

        /// <summary>A tool from a full definition JSON (`executionMode`, `label`, ...).</summary>
        public static Tool FromDefinition(string definitionJson, Action<ToolCall> fn)
        {
            string name = Json.Get(Json.Parse(definitionJson), "name") as string;
            return new Tool(name, definitionJson, fn);
        }

        // ---- native side -------------------------------------------------------------------------

        sealed class Site
        {
            public Action<ToolCall> Execute;
            public bool Inline;
        }

        /// <summary>A native tool for one agent (the caller frees its handle).</summary>
        internal unsafe AgentTool NewNative(bool inline)
        {
            IntPtr userData = Util.Pin(new Site { Execute = execute, Inline = inline });
            byte[] def = Util.Utf8(DefinitionJson);
            AgentTool tool;
            IntPtr error;
            fixed (byte* p = def) error = Native.agent_tool_new(p, Util.Len(def), ExecuteCallback, userData, Util.Release, &tool);
            if (error != IntPtr.Zero) Util.Unpin(userData); // the finalizer runs only for a tool made
            Util.Check(error);
            return tool;
        }

        static readonly AgentToolExecuteFn ExecuteCallback = OnExecute;

        [AOT.MonoPInvokeCallback(typeof(AgentToolExecuteFn))]
        static unsafe void OnExecute(IntPtr userData, byte* id, UIntPtr idLen, byte* args, UIntPtr argsLen, AgentToolCall call)
        {
            Util.Enter();
            try
            {
                var site = Util.Site<Site>(userData);
                var toolCall = new ToolCall(call, Util.Text(id, idLen), Util.Text(args, argsLen));
                Util.Schedule(site.Inline, RunTool, new object[] { site.Execute, toolCall });
            }
            catch (Exception e) { FailTool(call, e); }
            finally { Util.Leave(); }
        }

        static readonly WaitCallback RunTool = state =>
        {
            var pair = (object[])state;
            var call = (ToolCall)pair[1];
            try { ((Action<ToolCall>)pair[0])(call); }
            catch (Exception e)
            {
                try { call.Fail(Util.Message(e)); }
                catch (AgentException) { } // already answered before it threw
                catch (Exception other) { Util.Report(other); }
            }
        };

        static unsafe void FailTool(AgentToolCall call, Exception e)
        {
            byte[] b = Util.Utf8Message(Util.Message(e));
            fixed (byte* p = b) Util.Take(Native.agent_tool_call_fail(call, p, Util.Len(b)));
        }
    }

    /// <summary>Which hook (`AGENT_HOOK_*`, SPEC §7.1).</summary>
    public enum HookKind
    {
        ConvertToLlm = Native.AGENT_HOOK_CONVERT_TO_LLM,
        TransformContext = Native.AGENT_HOOK_TRANSFORM_CONTEXT,
        GetApiKey = Native.AGENT_HOOK_GET_API_KEY,
        BeforeToolCall = Native.AGENT_HOOK_BEFORE_TOOL_CALL,
        AfterToolCall = Native.AGENT_HOOK_AFTER_TOOL_CALL,
        FinishTurn = Native.AGENT_HOOK_FINISH_TURN,
        PrepareRequest = Native.AGENT_HOOK_PREPARE_REQUEST,
        PrepareNextTurn = Native.AGENT_HOOK_PREPARE_NEXT_TURN,
        PrepareNextTurnWithContext = Native.AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT,
        Compact = Native.AGENT_HOOK_COMPACT,
    }

    /// <summary>The trampolines of hooks, consent and stream functions.</summary>
    internal static unsafe class Callbacks
    {
        internal sealed class HookSite
        {
            public Action<HookCall> Fn;
            public bool Inline;
            public bool Consent; // the coding tools' consent: its call is a ConsentRequest
        }

        internal sealed class StreamSite
        {
            public Action<StreamCall> Fn;
            public bool Inline;
        }

        public static readonly AgentHookFn Hook = OnHook;
        public static readonly AgentStreamFn Stream = OnStream;

        [AOT.MonoPInvokeCallback(typeof(AgentHookFn))]
        static unsafe void OnHook(IntPtr userData, byte* input, UIntPtr inputLen, AgentHookCall call)
        {
            Util.Enter();
            try
            {
                var site = Util.Site<HookSite>(userData);
                string json = Util.Text(input, inputLen);
                HookCall hookCall = site.Consent ? new ConsentRequest(call, json) : new HookCall(call, json);
                Util.Schedule(site.Inline, RunHook, new object[] { site.Fn, hookCall });
            }
            catch (Exception e)
            {
                byte[] b = Util.Utf8Message(Util.Message(e));
                fixed (byte* p = b) Util.Take(Native.agent_hook_call_fail(call, p, Util.Len(b)));
            }
            finally { Util.Leave(); }
        }

        static readonly WaitCallback RunHook = state =>
        {
            var pair = (object[])state;
            var call = (HookCall)pair[1];
            try { ((Action<HookCall>)pair[0])(call); }
            catch (Exception e)
            {
                try { call.Fail(Util.Message(e)); }
                catch (AgentException) { } // already answered before it threw
                catch (Exception other) { Util.Report(other); }
            }
        };

        [AOT.MonoPInvokeCallback(typeof(AgentStreamFn))]
        static unsafe void OnStream(IntPtr userData, byte* request, UIntPtr requestLen, AgentStream stream)
        {
            Util.Enter();
            try
            {
                var site = Util.Site<StreamSite>(userData);
                var call = new StreamCall(stream, Util.Text(request, requestLen));
                Util.Schedule(site.Inline, RunStream, new object[] { site.Fn, call });
            }
            catch (Exception e)
            {
                byte[] b = Util.Utf8Message(Util.Message(e));
                fixed (byte* p = b) Util.Take(Native.agent_stream_fail(stream, p, Util.Len(b)));
            }
            finally { Util.Leave(); }
        }

        static readonly WaitCallback RunStream = state =>
        {
            var pair = (object[])state;
            var call = (StreamCall)pair[1];
            try { ((Action<StreamCall>)pair[0])(call); }
            catch (Exception e)
            {
                try { call.Fail(Util.Message(e)); }
                catch (AgentException) { } // already answered before it threw
                catch (Exception other) { Util.Report(other); }
            }
        };

        /// <summary>A hook that answers with what `fn` returns (JSON, null: nothing).</summary>
        public static Action<HookCall> Returning(Func<string, string> fn)
        {
            if (fn == null) return null;
            return call => call.Complete(fn(call.InputJson));
        }
    }
}

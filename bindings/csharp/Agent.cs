// The agent: an owning wrapper of an AgentHandle.
using System;
using System.Collections.Generic;
using System.Threading;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>An agent (SPEC §7). Start runs with Start/StartContinue (a Run, whose failure is
    /// its Outcome) or the blocking Prompt/Continue (which throw a RunException for a run that
    /// did not complete). Dispose frees it (an active run ends Freed).</summary>
    public sealed unsafe class Agent : NativeHandle
    {
        readonly bool inline;

        /// <summary>The dispatcher of a host-pumped agent (null otherwise).</summary>
        public Dispatcher Dispatcher { get; private set; }

        public Agent(Options options) : this(options, Build(options)) { }

        Agent(Options options, ulong id) : base(id)
        {
            inline = options.Dispatcher != null;
            Dispatcher = options.Dispatcher;
        }

        static ulong Build(Options o)
        {
            if (o == null) throw new ArgumentNullException("options");
            int models = (o.ScriptedModelJson != null ? 1 : 0) + (o.StreamFn != null ? 1 : 0) + (o.Providers ? 1 : 0);
            if (models > 1) throw new ArgumentException("Give one model: ScriptedModelJson, StreamFn or UseProviders(), not several.");
            bool inline = o.Dispatcher != null;
            byte[] json = Util.Utf8(o.ToJson());
            AgentOptions options;
            fixed (byte* p = json) Util.Check(Native.agent_options_new(p, Util.Len(json), &options));
            try
            {
                var tools = new List<AgentTool>();
                foreach (Tool tool in o.Tools) tools.Add(tool.NewNative(inline));
                if (o.CodingTools != null) tools.AddRange(o.CodingTools.NewNative(inline));
                IntPtr error = IntPtr.Zero;
                foreach (AgentTool tool in tools)
                {
                    if (error == IntPtr.Zero) error = Native.agent_options_add_tool(options, tool);
                    Util.Take(Native.agent_tool_free(tool)); // the options hold their own reference
                }
                Util.Check(error);
                if (o.ScriptedModelJson != null)
                {
                    byte[] script = Util.Utf8(o.ScriptedModelJson);
                    fixed (byte* p = script) Util.Check(Native.agent_options_set_scripted_model(options, p, Util.Len(script)));
                }
                else if (o.StreamFn != null)
                {
                    IntPtr site = Util.Pin(new Callbacks.StreamSite { Fn = o.StreamFn, Inline = inline });
                    Util.Check(Native.agent_options_set_stream_fn(options, Callbacks.Stream, site, Util.Release));
                }
                else if (o.Providers) Util.Check(Native.agent_options_use_providers(options));
                foreach (KeyValuePair<HookKind, Action<HookCall>> hook in o.Hooks)
                {
                    if (hook.Value == null) continue;
                    IntPtr site = Util.Pin(new Callbacks.HookSite { Fn = hook.Value, Inline = inline });
                    Util.Check(Native.agent_options_set_hook(options, (int)hook.Key, Callbacks.Hook, site, Util.Release));
                }
                if (o.Dispatcher != null) Util.Check(Native.agent_options_set_dispatcher(options, o.Dispatcher.Handle));
                if (o.Session != null) Util.Check(Native.agent_options_set_session(options, o.Session.Handle));
                if (o.Mcp != null) Util.Check(Native.agent_options_add_mcp(options, o.Mcp.Handle));
            }
            catch
            {
                Util.Take(Native.agent_options_free(options));
                throw;
            }
            AgentHandle agent;
            Util.Check(Native.agent_new(options, &agent)); // consumes the options
            return agent.id;
        }

        internal AgentHandle Handle { get { return new AgentHandle { id = Live }; } }

        protected override void Free(ulong id, bool disposing)
        {
            if (disposing)
            {
                Util.Check(Native.agent_free(new AgentHandle { id = id }));
                return;
            }
            // A forgotten agent: agent_free waits for a callback of the agent that is running, and
            // that callback might wait for the finalizer thread (GC.WaitForPendingFinalizers):
            // free it from the thread pool, never from the finalizer thread.
            ThreadPool.QueueUserWorkItem(_ => Util.Take(Native.agent_free(new AgentHandle { id = id })));
        }

        // ---- runs --------------------------------------------------------------------------------

        /// <summary>Starts a run on a text prompt and returns at once. `done` (optional) is called
        /// with the Outcome where the agent's callbacks run (inside Dispatch when host-pumped).
        /// AgentException Busy while another run is active.</summary>
        public Run Start(string text, Action<Outcome> done = null)
        {
            byte[] b = Util.Utf8(text ?? throw new ArgumentNullException("text"));
            AgentHandle h = Handle;
            return Run.Start(this, (fn, ud, run) =>
            {
                fixed (byte* p = b) return Native.agent_prompt_text(h, p, Util.Len(b), null, UIntPtr.Zero, fn, ud, run);
            }, done);
        }

        /// <summary>Starts a run on a message object or an array of messages (JSON).</summary>
        public Run StartMessages(string messagesJson, Action<Outcome> done = null)
        {
            byte[] b = Util.Utf8(messagesJson ?? throw new ArgumentNullException("messagesJson"));
            AgentHandle h = Handle;
            return Run.Start(this, (fn, ud, run) =>
            {
                fixed (byte* p = b) return Native.agent_prompt(h, p, Util.Len(b), fn, ud, run);
            }, done);
        }

        /// <summary>Starts a `continue()` run (from the transcript as it is).</summary>
        public Run StartContinue(Action<Outcome> done = null)
        {
            AgentHandle h = Handle;
            return Run.Start(this, (fn, ud, run) => Native.agent_continue(h, fn, ud, run), done);
        }

        /// <summary>Starts compacting the conversation now (`focus`: what the summary should keep).</summary>
        public Run StartCompact(string focus = null, Action<Outcome> done = null)
        {
            byte[] b = Util.Utf8(focus);
            AgentHandle h = Handle;
            return Run.Start(this, (fn, ud, run) =>
            {
                fixed (byte* p = b) return Native.agent_compact(h, p, Util.Len(b), fn, ud, run);
            }, done);
        }

        Outcome Block(string what, Func<Run> start)
        {
            Util.RefuseBlocking(what);
            using (Run run = start()) return run.Wait().Check();
        }

        /// <summary>Runs a text prompt and waits until it settled: its Outcome, or ModelErrorException,
        /// RunAbortedException, RunFailedException. Refused inside callbacks and dispatches.</summary>
        public Outcome Prompt(string text) { return Block("Agent.Prompt()", () => Start(text)); }

        public Outcome Continue() { return Block("Agent.Continue()", () => StartContinue()); }

        public Outcome Compact(string focus = null) { return Block("Agent.Compact()", () => StartCompact(focus)); }

        /// <summary>Queues a steering message (a text becomes a user message).</summary>
        public void Steer(string text) { SendText(true, UserMessageJson(text)); }

        /// <summary>Queues a follow-up message (a text becomes a user message).</summary>
        public void FollowUp(string text) { SendText(false, UserMessageJson(text)); }

        void SendText(bool steer, string json)
        {
            byte[] b = Util.Utf8(json);
            fixed (byte* p = b)
                Util.Check(steer ? Native.agent_steer(Handle, p, Util.Len(b)) : Native.agent_follow_up(Handle, p, Util.Len(b)));
        }

        public static string UserMessageJson(string text)
        {
            long now = (long)(DateTime.UtcNow - new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc)).TotalMilliseconds;
            return "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":" + Json.Quote(text ?? "") + "}],\"timestamp\":" + now + "}";
        }

        /// <summary>Aborts the active run, whichever it is (nothing when idle).</summary>
        public void Abort() { Util.Check(Native.agent_abort(Handle)); }

        /// <summary>Waits until no run is active (false after `timeoutMs`; -1: no limit).</summary>
        public bool WaitForIdle(int timeoutMs = -1)
        {
            Util.RefuseBlocking("Agent.WaitForIdle()");
            int result;
            Util.EnterHost(); // a host-pumped run is dispatched here while it waits
            try { Util.Check(Native.agent_wait_for_idle(Handle, timeoutMs, &result)); }
            finally { Util.LeaveHost(); }
            return result == Native.AGENT_WAIT_DONE;
        }

        /// <summary>`reset()`: clears the transcript, queues and error (Busy during a run).</summary>
        public void Reset() { Util.Check(Native.agent_reset(Handle)); }

        // ---- state -------------------------------------------------------------------------------

        /// <summary>The number of messages in the transcript (O(1): fine for every frame).</summary>
        public int MessageCount
        {
            get
            {
                UIntPtr count;
                Util.Check(Native.agent_get_message_count(Handle, &count));
                return (int)count.ToUInt64();
            }
        }

        /// <summary>The transcript's message at `index`, as JSON.</summary>
        public string Message(int index)
        {
            byte* json;
            UIntPtr len;
            Util.Check(Native.agent_get_message(Handle, (UIntPtr)index, &json, &len));
            return Util.TakeString(json, len);
        }

        /// <summary>The transcript as a JSON array.</summary>
        public string MessagesJson
        {
            get
            {
                byte* json;
                UIntPtr len;
                Util.Check(Native.agent_get_messages(Handle, UIntPtr.Zero, (UIntPtr)int.MaxValue, &json, &len));
                return Util.TakeString(json, len);
            }
        }

        /// <summary>A snapshot of the whole state (costs the transcript's size).</summary>
        public string StateJson
        {
            get
            {
                byte* json;
                UIntPtr len;
                Util.Check(Native.agent_get_state(Handle, &json, &len));
                return Util.TakeString(json, len);
            }
        }

        public void SetMessages(string messagesJson)
        {
            byte[] b = Util.Utf8(messagesJson);
            fixed (byte* p = b) Util.Check(Native.agent_set_messages(Handle, p, Util.Len(b)));
        }

        /// <summary>Changes reassignable settings from a JSON object (`model`, `thinkingLevel`, ...).</summary>
        public void Configure(string patchJson)
        {
            byte[] b = Util.Utf8(patchJson);
            fixed (byte* p = b) Util.Check(Native.agent_configure(Handle, p, Util.Len(b)));
        }

        /// <summary>Replaces the tools (effective at the next run).</summary>
        public void SetTools(IEnumerable<Tool> tools, CodingTools codingTools = null)
        {
            var handles = new List<AgentTool>();
            try
            {
                foreach (Tool tool in tools) handles.Add(tool.NewNative(inline));
                if (codingTools != null) handles.AddRange(codingTools.NewNative(inline));
                AgentTool[] array = handles.ToArray();
                fixed (AgentTool* p = array) Util.Check(Native.agent_set_tools(Handle, p, (UIntPtr)array.Length));
            }
            finally
            {
                foreach (AgentTool tool in handles) Util.Take(Native.agent_tool_free(tool));
            }
        }

        /// <summary>Installs (null: removes) a hook answered with what it returns (JSON, or null for
        /// "returns nothing"), from the next run on.</summary>
        public void SetHook(HookKind kind, Func<string, string> hook) { SetDeferredHook(kind, Callbacks.Returning(hook)); }

        /// <summary>Installs (null: removes) a hook that answers its HookCall itself, now or later.</summary>
        public void SetDeferredHook(HookKind kind, Action<HookCall> hook)
        {
            if (hook == null)
            {
                Util.Check(Native.agent_set_hook(Handle, (int)kind, null, IntPtr.Zero, null));
                return;
            }
            IntPtr site = Util.Pin(new Callbacks.HookSite { Fn = hook, Inline = inline });
            IntPtr error = Native.agent_set_hook(Handle, (int)kind, Callbacks.Hook, site, Util.Release);
            if (error != IntPtr.Zero) Util.Unpin(site);
            Util.Check(error);
        }

        /// <summary>Talks to the model through the built-in providers from the next run on.</summary>
        public void UseProviders() { Util.Check(Native.agent_use_providers(Handle)); }

        // ---- events ------------------------------------------------------------------------------

        /// <summary>Calls `listener` for every event, in order, where the agent's callbacks run
        /// (libagent's thread: keep it short; inside Dispatch when host-pumped). An exception
        /// fails the run. Dispose the Subscription to unsubscribe.</summary>
        public Subscription Subscribe(Action<Event> listener)
        {
            if (listener == null) throw new ArgumentNullException("listener");
            IntPtr site = Util.Pin(new Subscription.Site { Fn = listener });
            ulong id;
            IntPtr error = Native.agent_subscribe(Handle, Subscription.Listener, site, Util.Release, &id);
            if (error != IntPtr.Zero) Util.Unpin(site);
            Util.Check(error);
            return new Subscription(this, id);
        }

        /// <summary>A lossless pull queue of every event from now on (`capacity` events before the
        /// loop waits for the host to take one).</summary>
        public EventQueue OpenQueue(int capacity = 1024)
        {
            byte[] b = Util.Utf8("{\"capacity\":" + capacity + "}");
            AgentQueue queue;
            fixed (byte* p = b) Util.Check(Native.agent_queue_open(Handle, p, Util.Len(b), &queue));
            return new EventQueue(queue.id);
        }

        /// <summary>The library's version ("1.0.0").</summary>
        public static string Version
        {
            get
            {
                byte* v = Native.agent_version();
                int n = 0;
                while (v[n] != 0) n++;
                return Util.Text(v, (UIntPtr)n);
            }
        }

        /// <summary>How many host objects (tools, hooks, listeners, pending runs) libagent still
        /// holds through GCHandles: 0 once every agent is gone and its finalizers ran.</summary>
        public static int LiveHostObjects { get { return Volatile.Read(ref Util.Pinned); } }

        /// <summary>Fails when the loaded library does not serve this binding's header version.</summary>
        public static void CheckVersion() { Util.Check(Native.agent_version_check(1, 0)); }
    }
}

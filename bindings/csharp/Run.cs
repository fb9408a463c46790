// A run (agent_prompt, agent_continue, agent_compact) and how it ended.
using System;
using System.Collections.Generic;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>How a run ended (`AGENT_RUN_*`).</summary>
    public enum RunStatus
    {
        Running = Native.AGENT_RUN_RUNNING,
        Completed = Native.AGENT_RUN_COMPLETED,
        ModelError = Native.AGENT_RUN_MODEL_ERROR,
        Aborted = Native.AGENT_RUN_ABORTED,
        Failed = Native.AGENT_RUN_FAILED,
        Freed = Native.AGENT_RUN_FREED,
    }

    /// <summary>What a settled run did: its status, the last assistant message's stopReason, why
    /// it did not complete, and the messages it added to the transcript.</summary>
    public sealed class Outcome
    {
        public RunStatus Status { get; private set; }
        public string StopReason { get; private set; }
        public string ErrorMessage { get; private set; }
        /// <summary>The messages the run added, as a JSON array.</summary>
        public string MessagesJson { get; private set; }

        internal Outcome(RunStatus status, string stopReason, string errorMessage, string messagesJson)
        {
            Status = status;
            StopReason = stopReason;
            ErrorMessage = errorMessage;
            MessagesJson = messagesJson;
        }

        public bool Completed { get { return Status == RunStatus.Completed; } }

        /// <summary>The messages the run added (parsed).</summary>
        public List<object> Messages { get { return (List<object>)Json.Parse(MessagesJson); } }

        /// <summary>The text of the last assistant message the run added ("" when none).</summary>
        public string Text
        {
            get
            {
                List<object> messages = Messages;
                for (int i = messages.Count - 1; i >= 0; i--)
                    if ((string)Json.Get(messages[i], "role") == "assistant") return MessageText(messages[i]);
                return "";
            }
        }

        /// <summary>The concatenated text blocks of a parsed message.</summary>
        public static string MessageText(object message)
        {
            object content = Json.Get(message, "content");
            if (content is string) return (string)content;
            var sb = new StringBuilder();
            var blocks = content as List<object>;
            if (blocks != null)
                foreach (object block in blocks)
                    if ((string)Json.Get(block, "type") == "text") sb.Append((string)Json.Get(block, "text"));
            return sb.ToString();
        }

        /// <summary>This outcome, or the RunException of a run that did not complete.</summary>
        public Outcome Check()
        {
            switch (Status)
            {
                case RunStatus.Completed: return this;
                case RunStatus.ModelError: throw new ModelErrorException(this);
                case RunStatus.Aborted: throw new RunAbortedException(this);
                default: throw new RunFailedException(this);
            }
        }

        public override string ToString() { return Status + (ErrorMessage.Length > 0 ? ": " + ErrorMessage : ""); }
    }

    /// <summary>A run in progress: wait for it (Wait, or await Task), abort it, read its Outcome.
    /// Dispose drops the handle; the run goes on and still settles.</summary>
    public sealed unsafe class Run : NativeHandle
    {
        readonly Site site;
        readonly Agent agent; // keeps the agent alive while its run is referenced

        /// <summary>The agent running it.</summary>
        public Agent Agent { get { return agent; } }

        internal sealed class Site
        {
            public readonly TaskCompletionSource<Outcome> Settled =
                new TaskCompletionSource<Outcome>(TaskCreationOptions.RunContinuationsAsynchronously);
            public volatile Outcome Outcome;
            public Action<Outcome> Done;
        }

        Run(ulong id, Site site, Agent agent) : base(id)
        {
            this.site = site;
            this.agent = agent;
        }

        internal delegate IntPtr Starter(AgentDoneFn done, IntPtr userData, AgentRun* outRun);

        internal static unsafe Run Start(Agent agent, Starter starter, Action<Outcome> done)
        {
            var site = new Site { Done = done };
            IntPtr userData = Util.Pin(site);
            AgentRun run;
            IntPtr error = starter(DoneCallback, userData, &run);
            if (error != IntPtr.Zero)
            {
                Util.Unpin(userData); // no `done` for a run that did not start
                Util.Check(error);
            }
            return new Run(run.id, site, agent);
        }

        static readonly AgentDoneFn DoneCallback = OnDone;

        // `done` has no finalizer: it is called exactly once, and releases the site itself.
        [AOT.MonoPInvokeCallback(typeof(AgentDoneFn))]
        static unsafe void OnDone(IntPtr userData, AgentRun run, AgentRunOutcome* outcome)
        {
            Util.Enter();
            try
            {
                var site = Util.Site<Site>(userData);
                Util.Unpin(userData);
                string messages = "[]";
                byte* json;
                UIntPtr len;
                if (Native.agent_run_messages(run, &json, &len) == IntPtr.Zero) messages = Util.TakeString(json, len);
                var result = new Outcome((RunStatus)outcome->status, Util.Text(outcome->stop_reason),
                    Util.Text(outcome->error_message), messages);
                site.Outcome = result;
                if (site.Done != null)
                {
                    try { site.Done(result); }
                    catch (Exception e) { Util.Report(e); }
                }
                site.Settled.TrySetResult(result);
            }
            catch (Exception e) { Util.Report(e); }
            finally { Util.Leave(); }
        }

        protected override void Free(ulong id, bool disposing)
        {
            Util.Check(Native.agent_run_free(new AgentRun { id = id }));
        }

        /// <summary>Completes with the Outcome when the run settled (continuations never run on
        /// libagent's thread).</summary>
        public Task<Outcome> Task { get { return site.Settled.Task; } }

        public bool IsDone { get { return site.Outcome != null; } }

        /// <summary>The outcome once settled, else null.</summary>
        public Outcome Outcome { get { return site.Outcome; } }

        /// <summary>Aborts this run (nothing once it settled).</summary>
        public void Abort() { Util.Check(Native.agent_run_abort(new AgentRun { id = Live })); }

        /// <summary>Waits until the run settled and returns its Outcome (null after `timeoutMs`;
        /// -1: no limit). A host-pumped run is dispatched on this thread while it waits. Refused
        /// inside a callback or a dispatch, where the run could never finish.</summary>
        public unsafe Outcome Wait(int timeoutMs = -1)
        {
            if (site.Outcome != null) return site.Outcome;
            Util.RefuseBlocking("Run.Wait()");
            int result;
            Util.EnterHost(); // a host-pumped run is dispatched here while it waits
            try { Util.Check(Native.agent_run_wait(new AgentRun { id = Live }, timeoutMs, &result)); }
            finally { Util.LeaveHost(); }
            return result == Native.AGENT_WAIT_DONE ? site.Outcome : null;
        }
    }
}

// Events: listeners (Agent.Subscribe) and the pull queue (Agent.OpenQueue).
using System;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>Which event (`AGENT_EVENT_*`, SPEC §2.7).</summary>
    public enum EventType
    {
        AgentStart = Native.AGENT_EVENT_AGENT_START,
        AgentEnd = Native.AGENT_EVENT_AGENT_END,
        TurnStart = Native.AGENT_EVENT_TURN_START,
        TurnEnd = Native.AGENT_EVENT_TURN_END,
        MessageStart = Native.AGENT_EVENT_MESSAGE_START,
        MessageUpdate = Native.AGENT_EVENT_MESSAGE_UPDATE,
        MessageEnd = Native.AGENT_EVENT_MESSAGE_END,
        ToolExecutionStart = Native.AGENT_EVENT_TOOL_EXECUTION_START,
        ToolExecutionUpdate = Native.AGENT_EVENT_TOOL_EXECUTION_UPDATE,
        ToolExecutionEnd = Native.AGENT_EVENT_TOOL_EXECUTION_END,
        CompactionStart = Native.AGENT_EVENT_COMPACTION_START,
        CompactionEnd = Native.AGENT_EVENT_COMPACTION_END,
        AutoRetryStart = Native.AGENT_EVENT_AUTO_RETRY_START,
        AutoRetryEnd = Native.AGENT_EVENT_AUTO_RETRY_END,
    }

    /// <summary>The assistant stream event of a MessageUpdate (`AGENT_UPDATE_*`).</summary>
    public enum UpdateType
    {
        None = Native.AGENT_UPDATE_NONE,
        Start = Native.AGENT_UPDATE_START,
        TextStart = Native.AGENT_UPDATE_TEXT_START,
        TextDelta = Native.AGENT_UPDATE_TEXT_DELTA,
        TextEnd = Native.AGENT_UPDATE_TEXT_END,
        ThinkingStart = Native.AGENT_UPDATE_THINKING_START,
        ThinkingDelta = Native.AGENT_UPDATE_THINKING_DELTA,
        ThinkingEnd = Native.AGENT_UPDATE_THINKING_END,
        ToolCallStart = Native.AGENT_UPDATE_TOOLCALL_START,
        ToolCallDelta = Native.AGENT_UPDATE_TOOLCALL_DELTA,
        ToolCallEnd = Native.AGENT_UPDATE_TOOLCALL_END,
        Other = Native.AGENT_UPDATE_OTHER,
    }

    /// <summary>Which JSON shape Event.Json builds (`AGENT_EVENT_SHAPE_*`).</summary>
    public enum EventShape
    {
        Full = Native.AGENT_EVENT_SHAPE_FULL,
        Lean = Native.AGENT_EVENT_SHAPE_LEAN,
    }

    /// <summary>One event. Its fields are copies (cost O(1) each); Json() builds the event's JSON
    /// while the event is still valid: inside the listener, on its thread, or until the next
    /// call on the queue that gave it (an AgentException with InvalidArgument afterwards).</summary>
    public sealed unsafe class Event
    {
        readonly AgentEvent raw;

        internal Event(AgentEvent* e)
        {
            raw = *e;
            Type = (EventType)e->kind;
            Update = (UpdateType)e->update;
            ContentIndex = (int)e->content_index.ToUInt64();
            Delta = Util.Text(e->delta);
            ToolCallId = Util.Text(e->tool_call_id);
            ToolName = Util.Text(e->tool_name);
            ArgsJson = Util.Text(e->args_json);
        }

        public EventType Type { get; private set; }
        public UpdateType Update { get; private set; }
        public int ContentIndex { get; private set; }
        /// <summary>`*_delta` updates: the new text; else "".</summary>
        public string Delta { get; private set; }
        /// <summary>`tool_execution_*`: the tool call's id and tool name; else "".</summary>
        public string ToolCallId { get; private set; }
        public string ToolName { get; private set; }
        /// <summary>`tool_execution_start` and `_update`: the arguments' JSON; else "".</summary>
        public string ArgsJson { get; private set; }

        public string Json(EventShape shape = EventShape.Full)
        {
            AgentEvent copy = raw;
            AgentStr json;
            Util.Check(Native.agent_event_json(&copy, (int)shape, &json));
            return Util.Text(json);
        }

        public override string ToString() { return Type + (Update != UpdateType.None ? "/" + Update : ""); }
    }

    /// <summary>A listener's subscription: Dispose unsubscribes.</summary>
    public sealed unsafe class Subscription : IDisposable
    {
        readonly Agent agent;
        readonly ulong id;
        bool disposed;

        internal Subscription(Agent agent, ulong id)
        {
            this.agent = agent;
            this.id = id;
        }

        public void Dispose()
        {
            lock (this)
            {
                if (disposed || agent.IsDisposed) return;
                disposed = true;
            }
            Util.Check(Native.agent_unsubscribe(new AgentHandle { id = agent.Live }, id));
        }

        internal sealed class Site
        {
            public Action<Event> Fn;
        }

        public static readonly AgentListenerFn Listener = OnEvent;

        // A listener answers by returning (its event is readable only then), so it always runs
        // inline: on the runtime thread, or inside the dispatch of a host-pumped agent. An
        // exception fails the run (SPEC §7.11) through a deferred reply.
        [AOT.MonoPInvokeCallback(typeof(AgentListenerFn))]
        static unsafe int OnEvent(IntPtr userData, AgentEvent* e)
        {
            Util.Enter();
            try
            {
                Util.Site<Site>(userData).Fn(new Event(e));
                return Native.AGENT_LISTENER_CONTINUE;
            }
            catch (Exception ex)
            {
                AgentReply reply;
                if (Native.agent_event_defer(e, &reply) != IntPtr.Zero) { Util.Report(ex); return Native.AGENT_LISTENER_CONTINUE; }
                byte[] b = Util.Utf8Message(Util.Message(ex));
                fixed (byte* p = b) Util.Take(Native.agent_reply_fail(reply, p, Util.Len(b)));
                return Native.AGENT_LISTENER_LATER;
            }
            finally { Util.Leave(); }
        }
    }

    /// <summary>A lossless pull queue of the agent's events (for hosts that poll). Next(0) never
    /// waits; a wait is refused inside callbacks. Dispose closes it.</summary>
    public sealed unsafe class EventQueue : NativeHandle
    {
        internal EventQueue(ulong id) : base(id) { }

        /// <summary>Whether the agent was disposed of and every event was taken.</summary>
        public bool IsClosed { get; private set; }

        /// <summary>The next event, or null when none came within `timeoutMs` (0: no wait, -1:
        /// no limit) or the queue is closed (IsClosed).</summary>
        public Event Next(int timeoutMs = 0)
        {
            if (timeoutMs != 0) Util.RefuseBlocking("EventQueue.Next() with a timeout");
            AgentEvent e;
            int next;
            Util.Check(Native.agent_queue_next(new AgentQueue { id = Live }, timeoutMs, &e, &next));
            if (next == Native.AGENT_NEXT_CLOSED) IsClosed = true;
            return next == Native.AGENT_NEXT_EVENT ? new Event(&e) : null;
        }

        protected override void Free(ulong id, bool disposing)
        {
            Util.Check(Native.agent_queue_close(new AgentQueue { id = id }));
        }
    }
}

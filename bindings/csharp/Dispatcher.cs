// Host-pumped mode: agents built with a Dispatcher call host code only inside Dispatch, on the
// thread that pumps it (a game engine's main thread, from Update()).
using System;
using LibAgent.Interop;

namespace LibAgent
{
    public sealed unsafe class Dispatcher : NativeHandle
    {
        public Dispatcher() : base(Create()) { }

        static ulong Create()
        {
            AgentDispatcher d;
            Util.Check(Native.agent_dispatcher_new(&d));
            return d.id;
        }

        internal AgentDispatcher Handle { get { return new AgentDispatcher { id = Live }; } }

        /// <summary>Runs the callbacks that are ready, on this thread, until none is or `budgetMs`
        /// passed (-1: no limit; overrun by at most one callback). Returns how many task steps
        /// ran. Call it once per frame.</summary>
        public int Dispatch(int budgetMs)
        {
            UIntPtr ran;
            Util.EnterHost();
            Util.Enter(); // a blocking wait from a callback in here could never finish
            try { Util.Check(Native.agent_dispatch(Handle, budgetMs, &ran)); }
            finally
            {
                Util.Leave();
                Util.LeaveHost();
            }
            return (int)ran.ToUInt64();
        }

        /// <summary>Waits until a callback is ready (true) or `timeoutMs` passed (false).</summary>
        public bool Wait(int timeoutMs)
        {
            Util.RefuseBlocking("Dispatcher.Wait()");
            int result;
            Util.Check(Native.agent_dispatcher_wait(Handle, timeoutMs, &result));
            return result == Native.AGENT_WAIT_DONE;
        }

        /// <summary>Frees the dispatcher after running the finalizers and `done` calls still
        /// queued on this thread. Dispose of it after the agents built with it.</summary>
        protected override void Free(ulong id, bool disposing)
        {
            Util.Check(Native.agent_dispatcher_free(new AgentDispatcher { id = id }));
        }
    }
}

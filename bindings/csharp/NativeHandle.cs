// SafeHandle-style ownership of a libagent handle (a 64-bit generation-checked id, not a pointer,
// so SafeHandle itself does not fit on 32-bit players): released exactly once, by Dispose or, when
// the owner forgot, by the finalizer. A stale id is reported by libagent, never used.
using System;
using System.Runtime.ConstrainedExecution;
using System.Threading;

namespace LibAgent
{
    public abstract class NativeHandle : CriticalFinalizerObject, IDisposable
    {
        long id;

        internal NativeHandle(ulong id) { this.id = (long)id; }

        /// <summary>The handle's id (0 once disposed).</summary>
        public ulong Id { get { return (ulong)Interlocked.Read(ref id); } }

        public bool IsDisposed { get { return Id == 0; } }

        /// <summary>The live id; ObjectDisposedException once disposed.</summary>
        internal ulong Live
        {
            get
            {
                ulong value = Id;
                if (value == 0) throw new ObjectDisposedException(GetType().Name, GetType().Name + " was disposed of: create a new one.");
                return value;
            }
        }

        /// <summary>Frees the native handle (the C `*_free` of its kind).</summary>
        protected abstract void Free(ulong id, bool disposing);

        public void Dispose()
        {
            ulong value = (ulong)Interlocked.Exchange(ref id, 0);
            GC.SuppressFinalize(this);
            if (value == 0) return;
            Util.EnterHost(); // a free may run callbacks (a freed run's done) on this thread
            try { Free(value, true); }
            finally { Util.LeaveHost(); }
        }

        ~NativeHandle()
        {
            ulong value = (ulong)Interlocked.Exchange(ref id, 0);
            if (value == 0) return;
            try { Free(value, false); }
            catch (Exception e) { Util.Report(e); }
        }
    }
}

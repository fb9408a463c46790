// The binding's plumbing over the generated declarations (Native.g.cs): UTF-8 texts as
// (pointer, length), owned errors turned into exceptions, owned strings copied and freed, host
// objects handed to libagent as GCHandles, and where host code is running.
using System;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using LibAgent.Interop;

#if !UNITY_5_3_OR_NEWER
namespace AOT
{
    /// <summary>Marks a static method that native code calls back, so that IL2CPP (which compiles
    /// ahead of time) generates its reverse P/Invoke wrapper. Unity's UnityEngine defines the same
    /// attribute; IL2CPP recognizes it by name, so this copy serves builds outside Unity.</summary>
    [AttributeUsage(AttributeTargets.Method)]
    internal sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type type) { }
    }
}
#endif

namespace LibAgent
{
    internal static unsafe class Util
    {
        static readonly UTF8Encoding Strict = new UTF8Encoding(false, true);

        /// <summary>A text as UTF-8 bytes plus a NUL (so that even "" pins to a non-null pointer;
        /// the length passed is `Len`, without it); null stays null. Lone surrogates cannot be
        /// UTF-8: they are refused here, in the caller's language, rather than replaced.</summary>
        public static byte[] Utf8(string text)
        {
            if (text == null) return null;
            try
            {
                var bytes = new byte[Strict.GetByteCount(text) + 1];
                Strict.GetBytes(text, 0, text.Length, bytes, 0);
                return bytes;
            }
            catch (EncoderFallbackException)
            {
                throw new ArgumentException("The text holds a lone UTF-16 surrogate, which UTF-8 cannot encode: pass well-formed text.");
            }
        }

        static readonly UTF8Encoding Lenient = new UTF8Encoding(false, false);

        /// <summary>A failure message as UTF-8 (plus a NUL): never throws, a lone surrogate becomes
        /// U+FFFD, so that reporting an error cannot fail in turn.</summary>
        public static byte[] Utf8Message(string text)
        {
            text = text ?? "";
            var bytes = new byte[Lenient.GetByteCount(text) + 1];
            Lenient.GetBytes(text, 0, text.Length, bytes, 0);
            return bytes;
        }

        public static UIntPtr Len(byte[] bytes) { return new UIntPtr(bytes == null ? 0u : (uint)bytes.Length - 1); }

        /// <summary>`len` bytes of UTF-8 at `ptr` as a string ("" for none).</summary>
        public static string Text(byte* ptr, UIntPtr len)
        {
            long n = (long)len.ToUInt64();
            return ptr == null || n == 0 ? "" : Encoding.UTF8.GetString(ptr, checked((int)n));
        }

        public static string Text(AgentStr s) { return Text(s.ptr, s.len); }

        /// <summary>Throws the exception of an owned `AgentError*` (freeing it); nothing for NULL.</summary>
        public static void Check(IntPtr error)
        {
            Exception e = Take(error);
            if (e != null) throw e;
        }

        /// <summary>The exception of an owned `AgentError*`, freed (null for NULL).</summary>
        public static AgentException Take(IntPtr error)
        {
            if (error == IntPtr.Zero) return null;
            int code = Native.agent_error_code(error);
            UIntPtr len;
            byte* msg = Native.agent_error_message(error, &len);
            string message = Text(msg, len);
            Native.agent_error_free(error);
            return AgentException.For((ErrorCode)code, message);
        }

        /// <summary>An owned string written by libagent, copied and freed.</summary>
        public static string TakeString(byte* text, UIntPtr len)
        {
            try { return Text(text, len); }
            finally { Native.agent_string_free(text); }
        }

        // ---- host objects handed to libagent ------------------------------------------------

        /// <summary>`user_data` for a host object: a strong GCHandle, freed by `Release` when
        /// libagent drops its last reference (so the object outlives every callback).</summary>
        public static IntPtr Pin(object site)
        {
            Interlocked.Increment(ref Pinned);
            return GCHandle.ToIntPtr(GCHandle.Alloc(site));
        }

        /// <summary>How many host objects libagent holds (Agent.LiveHostObjects).</summary>
        public static int Pinned;

        public static T Site<T>(IntPtr userData) where T : class { return (T)GCHandle.FromIntPtr(userData).Target; }

        /// <summary>Frees a handle from `Pin` (for a call that failed before libagent owned it).</summary>
        public static void Unpin(IntPtr userData)
        {
            GCHandle.FromIntPtr(userData).Free();
            Interlocked.Decrement(ref Pinned);
        }

        // One delegate per callback type, alive for the whole process: native code may call it
        // at any time, and IL2CPP needs a static method behind every delegate it hands out.
        public static readonly AgentFinalizer Release = ReleaseSite;

        [AOT.MonoPInvokeCallback(typeof(AgentFinalizer))]
        static void ReleaseSite(IntPtr userData)
        {
            Enter();
            try { Unpin(userData); }
            catch (Exception e) { Report(e); }
            finally { Leave(); }
        }

        // ---- where host code runs ------------------------------------------------------------

        [ThreadStatic] static int callbackDepth; // inside a callback or Dispatcher.Dispatch
        [ThreadStatic] static int hostDepth;     // inside a call of ours that may run callbacks here
        [ThreadStatic] static bool threadSeen;

        /// <summary>Whether the calling thread is inside a libagent callback or a dispatch, where a
        /// blocking wait could never finish.</summary>
        public static bool InCallback { get { return callbackDepth > 0 || Native.agent_is_runtime_thread() != 0; } }

        /// <summary>Entering a callback.</summary>
        public static void Enter()
        {
            callbackDepth++;
            if (threadSeen || hostDepth > 0) return;
            threadSeen = true;
            // A callback outside every host call of ours is on one of libagent's threads, which
            // became a managed thread here and never ends.
            MonoExit.DontWaitForThisThread();
        }

        public static void Leave() { callbackDepth--; }

        /// <summary>Entering a host call that may run callbacks on this thread (a dispatch, a
        /// blocking wait of a host-pumped run, a free that runs a `done`).</summary>
        public static void EnterHost() { hostDepth++; }

        public static void LeaveHost() { hostDepth--; }

        public static void RefuseBlocking(string what)
        {
            if (InCallback)
                throw new AgentException(ErrorCode.WouldDeadlock, what + " would wait inside a libagent callback or a dispatch, where the run can never finish: use Start() and its Run's Task or Done, or call it from another thread.");
        }

        /// <summary>Runs `work` now on this thread (host-pumped agents, whose callbacks belong on
        /// the pumping thread) or on the thread pool (so that libagent's runtime thread, which
        /// every agent shares, never waits for host code).</summary>
        public static void Schedule(bool inline, WaitCallback work, object state)
        {
            if (inline) work(state);
            else ThreadPool.QueueUserWorkItem(work, state);
        }

        /// <summary>An exception that has no call left to answer: written to stderr, never thrown
        /// into native frames.</summary>
        public static void Report(Exception e)
        {
            try { Console.Error.WriteLine("libagent: exception in a callback: " + e); }
            catch { }
        }

        public static string Message(Exception e) { return string.IsNullOrEmpty(e.Message) ? e.GetType().Name : e.Message; }
    }

    /// <summary>Desktop Mono's exit aborts every background thread that ever ran managed code and
    /// waits until it ends, so a process whose libagent threads called back would never exit
    /// (they wait in native code, where an abort never lands). Mono skips threads flagged
    /// DONT_MANAGE (1), as it does its own service threads: the flag is set on libagent's threads
    /// through Mono's InternalThread (reflection finds nothing on .NET, which never waits for
    /// such threads; Unity's and IL2CPP's runtimes manage their own shutdown: compiled out).</summary>
    internal static class MonoExit
    {
#if UNITY_5_3_OR_NEWER || LIBAGENT_NO_MONO_EXIT
        public static void DontWaitForThisThread() { }
#else
        const BindingFlags Private = BindingFlags.NonPublic | BindingFlags.Instance;
        static readonly FieldInfo InternalThread = typeof(Thread).GetField("internal_thread", Private);
        static readonly FieldInfo Flags = InternalThread == null ? null : InternalThread.FieldType.GetField("flags", Private);
        const long DontManage = 1; // MONO_THREAD_FLAG_DONT_MANAGE

        public static void DontWaitForThisThread()
        {
            if (Flags == null || Flags.FieldType != typeof(IntPtr)) return;
            try
            {
                object thread = InternalThread.GetValue(Thread.CurrentThread);
                Flags.SetValue(thread, new IntPtr(((IntPtr)Flags.GetValue(thread)).ToInt64() | DontManage));
            }
            catch (Exception e) { Util.Report(e); }
        }
#endif
    }
}

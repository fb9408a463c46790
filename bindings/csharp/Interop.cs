// The binding's plumbing over the generated declarations (Native.g.cs): UTF-8 texts as
// (pointer, length), owned errors turned into exceptions, owned strings copied and freed, host
// objects handed to libagent as GCHandles, and where host code is running.
using System;
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
        public static IntPtr Pin(object site) { return GCHandle.ToIntPtr(GCHandle.Alloc(site)); }

        public static T Site<T>(IntPtr userData) where T : class { return (T)GCHandle.FromIntPtr(userData).Target; }

        /// <summary>Frees a handle from `Pin` (for a call that failed before libagent owned it).</summary>
        public static void Unpin(IntPtr userData) { GCHandle.FromIntPtr(userData).Free(); }

        // One delegate per callback type, alive for the whole process: native code may call it
        // at any time, and IL2CPP needs a static method behind every delegate it hands out.
        public static readonly AgentFinalizer Release = ReleaseSite;

        [AOT.MonoPInvokeCallback(typeof(AgentFinalizer))]
        static void ReleaseSite(IntPtr userData)
        {
            try { GCHandle.FromIntPtr(userData).Free(); }
            catch (Exception e) { Report(e); }
        }

        // ---- where host code runs ------------------------------------------------------------

        [ThreadStatic] static int callbackDepth;

        /// <summary>Whether the calling thread is inside a libagent callback or a dispatch, where a
        /// blocking wait could never finish.</summary>
        public static bool InCallback { get { return callbackDepth > 0 || Native.agent_is_runtime_thread() != 0; } }

        public static void Enter() { callbackDepth++; }

        public static void Leave() { callbackDepth--; }

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
}

// Errors as exceptions: every failed C call becomes an AgentException carrying its AGENT_ERR_*
// status; the blocking helpers (Agent.Prompt & co.) turn a run that did not complete into one of
// the Run*Exception types. A run started with Agent.Start reports failure as its Outcome instead.
using System;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>The `AGENT_ERR_*` status of a failed call (values from agent.h).</summary>
    public enum ErrorCode
    {
        Ok = Native.AGENT_OK,
        Null = Native.AGENT_ERR_NULL,
        InvalidHandle = Native.AGENT_ERR_INVALID_HANDLE,
        InvalidUtf8 = Native.AGENT_ERR_INVALID_UTF8,
        InvalidJson = Native.AGENT_ERR_INVALID_JSON,
        Busy = Native.AGENT_ERR_BUSY,
        InvalidState = Native.AGENT_ERR_INVALID_STATE,
        AlreadyCompleted = Native.AGENT_ERR_ALREADY_COMPLETED,
        StreamClosed = Native.AGENT_ERR_STREAM_CLOSED,
        WouldDeadlock = Native.AGENT_ERR_WOULD_DEADLOCK,
        NoStreamFn = Native.AGENT_ERR_NO_STREAM_FN,
        InvalidArgument = Native.AGENT_ERR_INVALID_ARGUMENT,
        Internal = Native.AGENT_ERR_INTERNAL,
        Io = Native.AGENT_ERR_IO,
        Locked = Native.AGENT_ERR_LOCKED,
        NotASession = Native.AGENT_ERR_NOT_A_SESSION,
    }

    /// <summary>A libagent call failed: `Status` says how, `Message` what to do.</summary>
    public class AgentException : Exception
    {
        public ErrorCode Status { get; private set; }

        public AgentException(ErrorCode status, string message) : base(message) { Status = status; }

        internal static AgentException For(ErrorCode status, string message)
        {
            return new AgentException(status, message);
        }
    }

    /// <summary>A blocking run (Agent.Prompt, Continue, Compact) did not complete: its Outcome
    /// says how it ended and what it added to the transcript.</summary>
    public class RunException : AgentException
    {
        public Outcome Outcome { get; private set; }

        internal RunException(ErrorCode status, Outcome outcome, string message) : base(status, message) { Outcome = outcome; }
    }

    /// <summary>The run ended with stopReason "error" (a failed model request, stream function or
    /// hook); `Message` is the assistant message's errorMessage.</summary>
    public sealed class ModelErrorException : RunException
    {
        internal ModelErrorException(Outcome outcome) : base(ErrorCode.Ok, outcome, outcome.ErrorMessage) { }
    }

    /// <summary>The run was aborted.</summary>
    public sealed class RunAbortedException : RunException
    {
        internal RunAbortedException(Outcome outcome) : base(ErrorCode.Ok, outcome, "The run was aborted.") { }
    }

    /// <summary>The run failed (a listener failed while it was failing, nothing to compact, or the
    /// agent was freed during the run).</summary>
    public sealed class RunFailedException : RunException
    {
        internal RunFailedException(Outcome outcome)
            : base(ErrorCode.Ok, outcome, outcome.Status == RunStatus.Freed ? "The agent was disposed of while the run was active." : outcome.ErrorMessage) { }
    }
}

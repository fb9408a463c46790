// Calls libagent waits for an answer to: a tool execution, a hook (also the coding tools'
// consent) and a stream function's request. Each is answered exactly once, now or later, from
// any thread; an exception thrown by host code answers it as a failure.
using System;
using System.Collections.Generic;
using LibAgent.Interop;

namespace LibAgent
{
    /// <summary>One execution of a Tool: its id and arguments; answer it with Complete,
    /// CompleteJson or Fail (a Tool built from a function answers with what it returns).</summary>
    public sealed unsafe class ToolCall
    {
        readonly AgentToolCall call;
        Dictionary<string, object> args;

        internal ToolCall(AgentToolCall call, string id, string argumentsJson)
        {
            this.call = call;
            Id = id;
            ArgumentsJson = argumentsJson;
        }

        public string Id { get; private set; }

        /// <summary>The validated arguments as JSON.</summary>
        public string ArgumentsJson { get; private set; }

        /// <summary>The arguments, parsed.</summary>
        public Dictionary<string, object> Arguments
        {
            get { return args ?? (args = Json.Parse(ArgumentsJson) as Dictionary<string, object> ?? new Dictionary<string, object>()); }
        }

        /// <summary>The argument `name` as a string (null when absent or not a string).</summary>
        public string Arg(string name) { return Json.Get(Arguments, name) as string; }

        public bool IsAborted
        {
            get
            {
                bool aborted;
                Util.Check(Native.agent_tool_call_is_aborted(call, (byte*)&aborted));
                return aborted;
            }
        }

        /// <summary>Reports progress: a partial AgentToolResult as JSON.</summary>
        public void Update(string partialResultJson)
        {
            byte[] b = Util.Utf8(partialResultJson);
            fixed (byte* p = b) Util.Check(Native.agent_tool_call_update(call, p, Util.Len(b)));
        }

        /// <summary>Answers with a text result.</summary>
        public void Complete(string text) { CompleteJson(ToolResultJson(text)); }

        /// <summary>Answers with an AgentToolResult object (`{"content":[...],"details":...}`).</summary>
        public void CompleteJson(string resultJson)
        {
            byte[] b = Util.Utf8(resultJson);
            fixed (byte* p = b) Util.Check(Native.agent_tool_call_complete(call, p, Util.Len(b)));
        }

        /// <summary>Answers with a failure: the tool threw `message`.</summary>
        public void Fail(string message)
        {
            byte[] b = Util.Utf8Message(message);
            fixed (byte* p = b) Util.Check(Native.agent_tool_call_fail(call, p, Util.Len(b)));
        }

        /// <summary>`{"content":[{"type":"text","text":...}]}`.</summary>
        public static string ToolResultJson(string text)
        {
            return "{\"content\":[{\"type\":\"text\",\"text\":" + Json.Quote(text ?? "") + "}]}";
        }
    }

    /// <summary>A hook's call: its input JSON; answer it with Complete (JSON, or null for
    /// "returns nothing") or Fail.</summary>
    public class HookCall
    {
        readonly AgentHookCall call;

        internal HookCall(AgentHookCall call, string inputJson)
        {
            this.call = call;
            InputJson = inputJson;
        }

        public string InputJson { get; private set; }

        public unsafe bool IsAborted
        {
            get
            {
                bool aborted;
                Util.Check(Native.agent_hook_call_is_aborted(call, (byte*)&aborted));
                return aborted;
            }
        }

        public unsafe void Complete(string resultJson)
        {
            byte[] bytes = Util.Utf8(resultJson);
            fixed (byte* p = bytes) Util.Check(Native.agent_hook_call_complete(call, p, Util.Len(bytes)));
        }

        public unsafe void Fail(string message)
        {
            byte[] bytes = Util.Utf8Message(message);
            fixed (byte* p = bytes) Util.Check(Native.agent_hook_call_fail(call, p, Util.Len(bytes)));
        }
    }

    /// <summary>The coding tools' question before `write`, `edit` or `bash` changes anything:
    /// Allow() or Refuse(reason) (the model sees the reason as the tool's error).</summary>
    public sealed class ConsentRequest : HookCall
    {
        internal ConsentRequest(AgentHookCall call, string inputJson) : base(call, inputJson)
        {
            object input = Json.Parse(inputJson);
            Tool = Json.Get(input, "tool") as string;
            ToolCallId = Json.Get(input, "toolCallId") as string;
            ArgumentsJson = Json.Serialize(Json.Get(input, "args"));
        }

        /// <summary>Which tool asks: "write", "edit" or "bash".</summary>
        public string Tool { get; private set; }
        public string ToolCallId { get; private set; }
        public string ArgumentsJson { get; private set; }

        public void Allow() { Complete(null); }

        public void Refuse(string reason)
        {
            Complete("{\"allow\":false,\"reason\":" + Json.Quote(reason ?? "Refused.") + "}");
        }
    }

    /// <summary>A stream function's request (a custom model): push assistant stream events, then
    /// End, a terminal event, or Fail.</summary>
    public sealed unsafe class StreamCall
    {
        readonly AgentStream stream;

        internal StreamCall(AgentStream stream, string requestJson)
        {
            this.stream = stream;
            RequestJson = requestJson;
        }

        /// <summary>`{"model", "context": {"messages", ...}, "options": {...}}`.</summary>
        public string RequestJson { get; private set; }

        public bool IsAborted
        {
            get
            {
                bool aborted;
                Util.Check(Native.agent_stream_is_aborted(stream, (byte*)&aborted));
                return aborted;
            }
        }

        /// <summary>Pushes one assistant stream event (SPEC §3.2) as JSON.</summary>
        public void Push(string eventJson)
        {
            byte[] b = Util.Utf8(eventJson);
            fixed (byte* p = b) Util.Check(Native.agent_stream_push(stream, p, Util.Len(b)));
        }

        public void PushTextDelta(int contentIndex, string text)
        {
            byte[] bytes = Util.Utf8(text);
            fixed (byte* p = bytes)
                Util.Check(Native.agent_stream_push_text_delta(stream, (UIntPtr)contentIndex, p, Util.Len(bytes)));
        }

        public void PushBlockStart(BlockKind kind, int contentIndex)
        {
            Util.Check(Native.agent_stream_push_block_start(stream, (int)kind, (UIntPtr)contentIndex));
        }

        public void PushBlockEnd(BlockKind kind, int contentIndex)
        {
            Util.Check(Native.agent_stream_push_block_end(stream, (int)kind, (UIntPtr)contentIndex));
        }

        /// <summary>Ends the stream with its final assistant message (JSON).</summary>
        public void End(string finalMessageJson)
        {
            byte[] b = Util.Utf8(finalMessageJson);
            fixed (byte* p = b) Util.Check(Native.agent_stream_end(stream, p, Util.Len(b)));
        }

        public void Fail(string message)
        {
            byte[] b = Util.Utf8Message(message);
            fixed (byte* p = b) Util.Check(Native.agent_stream_fail(stream, p, Util.Len(b)));
        }
    }

    /// <summary>A streamed content block's type (`AGENT_BLOCK_*`).</summary>
    public enum BlockKind
    {
        Text = Native.AGENT_BLOCK_TEXT,
        Thinking = Native.AGENT_BLOCK_THINKING,
        ToolCall = Native.AGENT_BLOCK_TOOLCALL,
    }
}

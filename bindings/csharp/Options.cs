// How an agent is built: a managed description, turned into libagent's options by the Agent
// constructor (so that every callback knows whether it runs on a dispatcher's thread).
using System;
using System.Collections.Generic;

namespace LibAgent
{
    public sealed class Options
    {
        public string SystemPrompt { get; set; }
        /// <summary>The model object (Models.Find, Models.Custom), as JSON.</summary>
        public string ModelJson { get; set; }
        /// <summary>"off", "minimal", "low", "medium", "high", "xhigh" or "max".</summary>
        public string ThinkingLevel { get; set; }
        /// <summary>The initial transcript: a JSON array of messages.</summary>
        public string MessagesJson { get; set; }
        /// <summary>Host-pumped mode: every callback runs inside Dispatcher.Dispatch.</summary>
        public Dispatcher Dispatcher { get; set; }
        /// <summary>The agent starts from the session's context and appends to it.</summary>
        public Session Session { get; set; }
        public CodingTools CodingTools { get; set; }
        /// <summary>MCP servers whose current tools the agent takes at each turn (its first
        /// prompt waits up to 10 s for servers still connecting).</summary>
        public Mcp Mcp { get; set; }
        /// <summary>The built-in scripted model: a JSON array of responses (tests, demos).</summary>
        public string ScriptedModelJson { get; set; }
        /// <summary>A model of one's own: push the answer to each request into its StreamCall.</summary>
        public Action<StreamCall> StreamFn { get; set; }
        internal bool Providers;

        internal readonly List<Tool> Tools = new List<Tool>();
        internal readonly Dictionary<HookKind, Action<HookCall>> Hooks = new Dictionary<HookKind, Action<HookCall>>();
        internal readonly Dictionary<string, object> Settings = new Dictionary<string, object>();

        /// <summary>Talks to the model (ModelJson's `api` and `baseUrl`) through libagent's
        /// built-in providers; the API key comes from the GetApiKey hook or the provider's
        /// environment variable.</summary>
        public Options UseProviders()
        {
            Providers = true;
            return this;
        }

        public Options AddTool(Tool tool)
        {
            if (tool == null) throw new ArgumentNullException("tool");
            Tools.Add(tool);
            return this;
        }

        /// <summary>A hook called with its input JSON, answered with what it returns: JSON, or null
        /// for "returns nothing" (an exception is the hook's failure).</summary>
        public Options SetHook(HookKind kind, Func<string, string> hook) { return SetDeferredHook(kind, Callbacks.Returning(hook)); }

        /// <summary>A hook that answers its HookCall itself, now or later, from any thread.</summary>
        public Options SetDeferredHook(HookKind kind, Action<HookCall> hook)
        {
            Hooks[kind] = hook;
            return this;
        }

        /// <summary>The API key for every request (a GetApiKey hook answering `key`).</summary>
        public Options ApiKey(string key) { return SetHook(HookKind.GetApiKey, _ => Json.Quote(key)); }

        /// <summary>Any other option of agent_options_new as raw JSON: Set("toolExecution",
        /// "\"sequential\""), Set("retry", "{\"enabled\":true}"), ...</summary>
        public Options Set(string name, string valueJson)
        {
            Settings[name] = new Json.Raw(valueJson);
            return this;
        }

        internal string ToJson()
        {
            var map = new Dictionary<string, object>(Settings);
            var initial = new Dictionary<string, object>();
            if (SystemPrompt != null) initial["systemPrompt"] = SystemPrompt;
            if (ModelJson != null) initial["model"] = new Json.Raw(ModelJson);
            if (ThinkingLevel != null) initial["thinkingLevel"] = ThinkingLevel;
            if (MessagesJson != null) initial["messages"] = new Json.Raw(MessagesJson);
            if (initial.Count > 0) map["initialState"] = initial;
            return Json.Serialize(map);
        }
    }
}

// libagent's model catalogue (pi-ai 1.6.0's built-in chat models).
using LibAgent.Interop;

namespace LibAgent
{
    public static unsafe class Models
    {
        /// <summary>The model `"provider/id"` as a JSON object ready for Options.ModelJson
        /// (AgentException InvalidArgument for a name the catalogue does not have).</summary>
        public static string Find(string name)
        {
            byte[] b = Util.Utf8(name ?? "");
            byte* json;
            System.UIntPtr len;
            fixed (byte* p = b) Util.Check(Native.agent_model_find(p, Util.Len(b), &json, &len));
            return Util.TakeString(json, len);
        }

        /// <summary>A JSON array of the models of `provider` (null: every provider).</summary>
        public static string List(string provider = null)
        {
            byte[] b = Util.Utf8(provider);
            byte* json;
            System.UIntPtr len;
            fixed (byte* p = b) Util.Check(Native.agent_model_list(p, Util.Len(b), &json, &len));
            return Util.TakeString(json, len);
        }

        /// <summary>A model object for an endpoint of one's own (an OpenAI-compatible server, a
        /// local model): `api` is "openai-completions", "anthropic-messages", "openai-responses"
        /// or "google-generative-ai".</summary>
        public static string Custom(string api, string provider, string id, string baseUrl)
        {
            return "{\"id\":" + Json.Quote(id) + ",\"name\":" + Json.Quote(id) + ",\"api\":" + Json.Quote(api) +
                   ",\"provider\":" + Json.Quote(provider) + ",\"baseUrl\":" + Json.Quote(baseUrl) +
                   ",\"reasoning\":false,\"input\":[\"text\"],\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0}" +
                   ",\"contextWindow\":128000,\"maxTokens\":4096}";
        }
    }
}

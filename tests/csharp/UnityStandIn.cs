// The few UnityEngine names examples/csharp/AssistantBehaviour.cs and the README's Unity snippet
// use, so that they compile without Unity; the test calls Start/Update/OnDestroy by reflection,
// as Unity does.
namespace UnityEngine
{
    public class MonoBehaviour { }

    public static class Application
    {
        public static string dataPath { get { return System.IO.Directory.GetCurrentDirectory(); } }
    }

    public static class Debug
    {
        public static void Log(object message) { System.Console.WriteLine(message); }
    }
}

namespace AOT
{
    /// <summary>UnityEngine's attribute, for the binding's Unity configuration (make csharp-test
    /// builds it with UNITY_5_3_OR_NEWER, where the binding relies on Unity's).</summary>
    [System.AttributeUsage(System.AttributeTargets.Method)]
    public sealed class MonoPInvokeCallbackAttribute : System.Attribute
    {
        public MonoPInvokeCallbackAttribute(System.Type type) { }
    }
}

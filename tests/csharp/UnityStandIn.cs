// The two UnityEngine names examples/csharp/AssistantBehaviour.cs uses, so that it compiles
// without Unity; the test calls Start/Update/OnDestroy by reflection, as Unity does.
namespace UnityEngine
{
    public class MonoBehaviour { }

    public static class Debug
    {
        public static void Log(object message) { System.Console.WriteLine(message); }
    }
}

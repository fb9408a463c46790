// examples/csharp/AssistantBehaviour.cs driven as Unity would: Start, then Update once per frame
// of a simulated 60 Hz loop (2 ms budget per frame), then OnDestroy; the model is the loopback
// mock (tests/csharp/mock_model.py) through libagent's providers, asked to call `write`.
using System;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Threading;

static class ExampleTests
{
    static void Call(object target, string method)
    {
        target.GetType().GetMethod(method, BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public).Invoke(target, null);
    }

    public static void Run(Action<string, Action> test, string baseUrl)
    {
        test("example: AssistantBehaviour in a 60 Hz frame loop streams an answer and runs a tool on the main thread", () =>
        {
            // The first pass warms Mono's JIT, which compiles each callback path at its first
            // call (IL2CPP players compile ahead of time); the second is measured.
            Scene(baseUrl, false);
            Scene(baseUrl, true);
        });
    }

    static void Scene(string baseUrl, bool measured)
    {
        {
            string root = Path.Combine(Path.GetTempPath(), "libagent-cs-unity-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(root);
            try
            {
                var consents = new System.Collections.Generic.List<string>();
                var assistant = new AssistantBehaviour
                {
                    BaseUrl = baseUrl,
                    ModelId = "mock-model",
                    ApiKey = "test-key",
                    Root = root,
                    Question = "CALL write {\"path\":\"hello.txt\",\"content\":\"hello\"}",
                    AskUser = request => { consents.Add(request.Tool); return true; },
                    // A scene that takes a millisecond per event: a frame's budget lets a few run.
                    ShowEvent = e => Thread.Sleep(1),
                };
                Call(assistant, "Start");
                int frames = 0;
                double worstFrame = 0;
                var frame = Stopwatch.StartNew();
                while (!assistant.Finished && frames < 1200) // 20 s of frames: a guard against hangs
                {
                    frame.Restart();
                    var update = Stopwatch.StartNew();
                    Call(assistant, "Update");
                    worstFrame = Math.Max(worstFrame, update.Elapsed.TotalMilliseconds);
                    frames++;
                    int rest = 16 - (int)frame.ElapsedMilliseconds;
                    if (rest > 0) Thread.Sleep(rest);
                }
                Call(assistant, "OnDestroy");
                if (!assistant.Finished) throw new Exception("the assistant did not finish within 1200 frames");
                if (!assistant.Outcome.Completed) throw new Exception("the run did not complete: " + assistant.Outcome);
                string answer = assistant.Answer.ToString();
                if (!answer.StartsWith("Done: ")) throw new Exception("the streamed answer: <" + answer + ">");
                if (answer != assistant.Outcome.Text) throw new Exception("streamed <" + answer + "> but the run's text is <" + assistant.Outcome.Text + ">");
                if (!assistant.ToolsRun.Contains("write")) throw new Exception("the write tool did not run: " + string.Join(",", assistant.ToolsRun));
                if (consents.Count != 1 || consents[0] != "write") throw new Exception("consent asked: " + string.Join(",", consents));
                if (File.ReadAllText(Path.Combine(root, "hello.txt")) != "hello") throw new Exception("the file was not written");
                if (assistant.OffThreadCallbacks != 0) throw new Exception(assistant.OffThreadCallbacks + " callbacks off the main thread");
                // A frame overruns its budget by one callback at most: no callback starts once the
                // budget was spent before the previous one returned. (Wall-clock frame times are
                // not asserted: a single step of the debug library, or the thread being preempted
                // on a busy machine, may take longer than a frame.)
                if (measured && assistant.ExtraLateCallbacks != 0)
                    throw new Exception(assistant.ExtraLateCallbacks + " callbacks started after their frame's budget was spent before the previous one returned");
                if (measured) Console.WriteLine("     (" + frames + " frames at 60 Hz, 2 ms budget; longest Update " + worstFrame.ToString("F1") + " ms)");
            }
            finally { Directory.Delete(root, true); }
        }
    }
}

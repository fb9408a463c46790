// libagent quickstart (C#): the conversation of examples/c/quickstart.c, host-pumped as a game
// engine would run it. A multi-turn agent with a system prompt and two real tools (list a
// directory, read a file), answered by libagent's built-in scripted model, which calls both
// tools; every callback runs inside dispatcher.Dispatch(2) on this thread, a 2 ms slice of each
// 60 Hz "frame". Streamed text is printed as it arrives; a transcript summary ends it.
//
//     make csharp-test    (builds it with mcs and runs it under Mono against target/debug)
//
// For a real model: ModelJson = Models.Find("anthropic/claude-sonnet-4-5"), options.UseProviders()
// (the API key from ANTHROPIC_API_KEY or options.ApiKey(...)) instead of ScriptedModelJson.
using System;
using System.IO;
using System.Linq;
using System.Threading;
using LibAgent;

static class Quickstart
{
    const string Script = @"[
      {""content"": [
        {""type"": ""text"", ""text"": ""Let me look at the project: its files and its README."", ""chunks"": 6},
        {""type"": ""toolCall"", ""id"": ""call_1"", ""name"": ""list_dir"", ""arguments"": {""path"": "".""}},
        {""type"": ""toolCall"", ""id"": ""call_2"", ""name"": ""read_file"", ""arguments"": {""path"": ""README.md""}, ""chunks"": 3}]},
      {""content"": [{""type"": ""text"", ""chunks"": 8, ""text"":
        ""This is libagent: a Rust agent runtime with a C ABI. The listing shows its sources, tests and examples; the README explains how to run the demo and the tests.""}]}
    ]";

    const string PathParameter = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}";

    static int Main()
    {
        Tool listDir = Tool.Create("list_dir", "List a directory", PathParameter, call =>
            string.Join("\n", Directory.GetFileSystemEntries(call.Arg("path")).Select(Path.GetFileName)
                .Where(name => !name.StartsWith(".")).OrderBy(name => name, StringComparer.Ordinal)));
        Tool readFile = Tool.Create("read_file", "Read a file", PathParameter, call =>
            string.Join("\n", File.ReadLines(call.Arg("path")).Take(6)));

        using (var dispatcher = new Dispatcher())
        {
            var options = new Options
            {
                SystemPrompt = "You are a helpful project guide.",
                ModelJson = "{\"id\":\"scripted\",\"api\":\"faux\",\"provider\":\"libagent\"}",
                ScriptedModelJson = Script,
                Dispatcher = dispatcher, // every callback below runs inside dispatcher.Dispatch
            };
            options.AddTool(listDir).AddTool(readFile);
            using (var agent = new Agent(options))
            {
                agent.Subscribe(e =>
                {
                    if (e.Update == UpdateType.TextDelta) Console.Write(e.Delta);
                    else if (e.Update == UpdateType.TextEnd) Console.WriteLine();
                    else if (e.Type == EventType.ToolExecutionStart) Console.WriteLine("  -> " + e.ToolName + " " + e.ArgsJson);
                    else if (e.Type == EventType.ToolExecutionEnd) Console.WriteLine("  <- " + e.ToolName);
                });
                Console.WriteLine("> What is this project?");
                Run run = agent.Start("What is this project?");
                while (!run.IsDone) // the game loop: a 2 ms slice of each 60 Hz frame
                {
                    dispatcher.Dispatch(2);
                    Thread.Sleep(16);
                }
                Outcome outcome = run.Outcome;
                if (!outcome.Completed)
                {
                    Console.Error.WriteLine("The run did not complete: " + outcome);
                    return 1;
                }
                Console.WriteLine("Transcript: " + agent.MessageCount + " messages (system prompt, user, assistant with 2 tool calls, 2 tool results, assistant).");
            }
        }
        return 0;
    }
}

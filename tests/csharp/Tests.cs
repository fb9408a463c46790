// The C# binding's suite, a console program run under Mono against the real libagent
// (LD_LIBRARY_PATH=target/debug): runs, tools in parallel, hooks, listeners, abort, host-pumped
// dispatch on one thread, errors, the coding tools confined to a root, a provider against a
// loopback mock (tests/csharp/mock_model.py), sessions, GC pressure while callbacks are pending,
// and the Unity-shaped example (examples/csharp/AssistantBehaviour.cs) in a simulated frame loop.
// Prints one line per test and "csharp-tests: N passed, N failed"; exits 1 on any failure.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using LibAgent;

static class Tests
{
    const int SafetyMs = 20000; // a guard against hangs, never an assertion about speed

    static int passed, failed;
    static string mockBaseUrl;

    // ---- helpers -----------------------------------------------------------------------------

    static void Check(bool condition, string what)
    {
        if (!condition) throw new Exception("expected: " + what);
    }

    static void Equal<T>(T expected, T actual, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new Exception(what + ": expected <" + expected + ">, got <" + actual + ">");
    }

    static void Contains(string haystack, string needle, string what)
    {
        if (haystack == null || !haystack.Contains(needle))
            throw new Exception(what + ": expected <" + needle + "> in <" + haystack + ">");
    }

    static T Throws<T>(Action action, string what) where T : Exception
    {
        try { action(); }
        catch (T e) { return e; }
        catch (Exception e) { throw new Exception(what + ": expected " + typeof(T).Name + ", got " + e.GetType().Name + ": " + e.Message); }
        throw new Exception(what + ": expected " + typeof(T).Name + ", nothing was thrown");
    }

    static void WaitUntil(Func<bool> condition, string what)
    {
        var clock = Stopwatch.StartNew();
        while (!condition())
        {
            if (clock.ElapsedMilliseconds > SafetyMs) throw new Exception("timed out waiting for " + what);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            Thread.Sleep(5);
        }
    }

    static string Text(string text) { return "{\"content\":[{\"type\":\"text\",\"text\":" + Json.Quote(text) + "}]}"; }

    static string Call(string id, string name, string argumentsJson)
    {
        return "{\"type\":\"toolCall\",\"id\":\"" + id + "\",\"name\":\"" + name + "\",\"arguments\":" + argumentsJson + "}";
    }

    static string Calls(params string[] calls) { return "{\"content\":[" + string.Join(",", calls) + "]}"; }

    static string Script(params string[] replies) { return "[" + string.Join(",", replies) + "]"; }

    static Tool Echo(List<string> seen = null)
    {
        return Tool.Create("echo", "Echoes its text.", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
            call =>
            {
                if (seen != null) lock (seen) seen.Add(call.Arg("text"));
                return "echo: " + call.Arg("text");
            });
    }

    static List<object> Parse(string json) { return (List<object>)Json.Parse(json); }

    static string Role(object message) { return (string)Json.Get(message, "role"); }

    static string TempDir()
    {
        string dir = Path.Combine(Path.GetTempPath(), "libagent-cs-" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(dir);
        return dir;
    }

    // LIBAGENT_CS_TESTS=word,word runs only the tests whose names contain one of the words.
    static readonly string[] Only = (Environment.GetEnvironmentVariable("LIBAGENT_CS_TESTS") ?? "")
        .Split(new[] { ',' }, StringSplitOptions.RemoveEmptyEntries);

    static void Test(string name, Action body)
    {
        if (Only.Length > 0 && !Only.Any(word => name.Contains(word))) return;
        Exception error = null;
        var thread = new Thread(() =>
        {
            try { body(); }
            catch (Exception e) { error = e; }
        });
        thread.Start();
        if (!thread.Join(60000)) error = new Exception("the test did not finish within 60 s (a hang)");
        if (error == null)
        {
            passed++;
            Console.WriteLine("ok   " + name);
        }
        else
        {
            failed++;
            Console.WriteLine("FAIL " + name + ": " + error);
        }
        if (thread.IsAlive)
        {
            Console.WriteLine("csharp-tests: " + passed + " passed, " + failed + " failed (stopped at a hang)");
            Environment.Exit(1);
        }
    }

    // ---- runs --------------------------------------------------------------------------------

    static void Runs()
    {
        Test("version: the loaded library serves this binding", () =>
        {
            Agent.CheckVersion();
            Contains(Agent.Version, "1.", "version");
        });

        Test("IL2CPP shape: every delegate handed to native code is a static [MonoPInvokeCallback] method, allocated once", () =>
        {
            var flags = System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Instance |
                        System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic;
            int checkedCount = 0;
            foreach (Type type in typeof(Agent).Assembly.GetTypes())
                foreach (var field in type.GetFields(flags))
                {
                    if (field.FieldType.Namespace != "LibAgent.Interop" || !typeof(Delegate).IsAssignableFrom(field.FieldType)) continue;
                    if (field.Name.StartsWith("<")) continue; // the compiler's cache of a method group conversion
                    Check(field.IsStatic && field.IsInitOnly, type.Name + "." + field.Name + " is static readonly");
                    var callback = (Delegate)field.GetValue(null);
                    Check(callback.Method.IsStatic, type.Name + "." + field.Name + " targets a static method");
                    var attribute = callback.Method.GetCustomAttributes(false).FirstOrDefault(a => a.GetType().Name == "MonoPInvokeCallbackAttribute");
                    Check(attribute != null, callback.Method.Name + " is marked [MonoPInvokeCallback]");
                    checkedCount++;
                }
            Check(checkedCount >= 6, "the callbacks were found (" + checkedCount + ")");
        });

        Test("library names: `agent` here, `__Internal` in the Unity iOS build of the same sources", () =>
        {
            Func<System.Reflection.Assembly, string> lib = assembly =>
            {
                var method = assembly.GetType("LibAgent.Interop.Native").GetMethod("agent_version");
                var import = (System.Runtime.InteropServices.DllImportAttribute)method.GetCustomAttributes(
                    typeof(System.Runtime.InteropServices.DllImportAttribute), false).Single();
                return import.Value;
            };
            Equal("agent", lib(typeof(Agent).Assembly), "this build");
            string ios = Path.Combine(Path.GetDirectoryName(typeof(Agent).Assembly.Location), "LibAgent-ios.dll");
            Check(File.Exists(ios), "make csharp-test built " + ios);
            Equal("__Internal", lib(System.Reflection.Assembly.LoadFile(ios)), "the UNITY_IOS build");
        });

        Test("prompt: a scripted answer, the run's messages and the transcript", () =>
        {
            using (var agent = new Agent(new Options { SystemPrompt = "Be brief.", ScriptedModelJson = Script(Text("Hi there, héllo ✓")) }))
            {
                Outcome outcome = agent.Prompt("Hello ✓");
                Equal(RunStatus.Completed, outcome.Status, "status");
                Equal("Hi there, héllo ✓", outcome.Text, "answer (UTF-8 both ways)");
                Equal("stop", outcome.StopReason, "stopReason");
                var messages = outcome.Messages;
                Equal(2, messages.Count, "messages added");
                Equal("user", Role(messages[0]), "first role");
                Equal("Hello ✓", Outcome.MessageText(messages[0]), "the prompt as sent");
                Equal(3, agent.MessageCount, "transcript length (the system prompt, user, assistant)");
                Contains(agent.Message(2), "Hi there", "message 2");
                Contains(agent.StateJson, "Be brief.", "state");
            }
        });

        Test("start: a Run's Task, done callback and Wait agree", () =>
        {
            using (var agent = new Agent(new Options { ScriptedModelJson = Script(Text("one")) }))
            {
                Outcome fromDone = null;
                using (Run run = agent.Start("go", o => fromDone = o))
                {
                    Check(run.Task.Wait(SafetyMs), "the task completes");
                    Outcome waited = run.Wait();
                    Check(ReferenceEquals(waited, run.Task.Result), "Wait and Task give the same Outcome");
                    Check(ReferenceEquals(waited, fromDone), "done got it too");
                    Check(run.IsDone, "IsDone");
                    Equal("one", waited.Text, "text");
                }
            }
        });

        Test("a model error is the run's Outcome, and ModelErrorException from Prompt", () =>
        {
            string failing = "{\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"the model broke\"}";
            using (var agent = new Agent(new Options { ScriptedModelJson = Script(failing, failing) }))
            {
                Outcome outcome = agent.Start("go").Wait();
                Equal(RunStatus.ModelError, outcome.Status, "status");
                Equal("the model broke", outcome.ErrorMessage, "errorMessage");
                var e = Throws<ModelErrorException>(() => agent.Prompt("again"), "Prompt");
                Equal("the model broke", e.Message, "exception message");
                Equal(RunStatus.ModelError, e.Outcome.Status, "exception's outcome");
            }
        });

        Test("steer, follow-up and continue", () =>
        {
            using (var agent = new Agent(new Options { ScriptedModelJson = Script(Text("first"), Text("second"), Text("third")) }))
            {
                agent.Prompt("a");
                agent.FollowUp("later");
                agent.SetMessages(agent.MessagesJson); // round trip
                Outcome o = agent.Continue();
                Equal("second", o.Text, "continue answered from the follow-up");
                Contains(agent.MessagesJson, "later", "follow-up in the transcript");
                agent.Reset();
                Equal(0, agent.MessageCount, "reset");
            }
        });
    }

    // ---- tools, hooks, listeners -------------------------------------------------------------

    static void ToolsAndHooks()
    {
        Test("tools: arguments in, result out; an exception is the tool's error", () =>
        {
            var seen = new List<string>();
            Tool broken = Tool.Create("broken", "Fails.", null, call => { throw new InvalidOperationException("tool exploded \ud800"); });
            var options = new Options
            {
                ScriptedModelJson = Script(Calls(Call("c1", "echo", "{\"text\":\"ä✓\"}"), Call("c2", "broken", "{}")), Text("done")),
            };
            options.AddTool(Echo(seen)).AddTool(broken);
            using (var agent = new Agent(options))
            {
                var messages = agent.Prompt("use tools").Messages;
                Equal(new[] { "ä✓" }.Length, seen.Count, "echo ran once");
                Equal("ä✓", seen[0], "its argument");
                var results = messages.Where(m => Role(m) == "toolResult").ToList();
                Equal(2, results.Count, "two tool results");
                Equal("echo: ä✓", Outcome.MessageText(results[0]), "echo's result");
                Equal(false, (bool)Json.Get(results[0], "isError"), "echo ok");
                Equal(true, (bool)Json.Get(results[1], "isError"), "broken is an error");
                Contains(Outcome.MessageText(results[1]), "tool exploded \ufffd", "the exception's message (a lone surrogate replaced)");
            }
        });

        Test("tools run in parallel (neither runs on libagent's thread)", () =>
        {
            var started = new CountdownEvent(2);
            int onRuntimeThread = 0;
            Func<ToolCall, string> body = call =>
            {
                if (Environment.StackTrace.Contains("OnExecute")) Interlocked.Increment(ref onRuntimeThread);
                started.Signal();
                // Each waits for the other to have started: only parallel execution finishes.
                if (!started.Wait(SafetyMs)) throw new Exception("the other tool never started");
                return "ok " + call.Id;
            };
            var options = new Options { ScriptedModelJson = Script(Calls(Call("a", "left", "{}"), Call("b", "right", "{}")), Text("both")) };
            options.AddTool(Tool.Create("left", "", null, body)).AddTool(Tool.Create("right", "", null, body));
            using (var agent = new Agent(options))
            {
                var results = agent.Prompt("go").Messages.Where(m => Role(m) == "toolResult").ToList();
                Equal("ok a", Outcome.MessageText(results[0]), "left");
                Equal("ok b", Outcome.MessageText(results[1]), "right");
                Equal(0, onRuntimeThread, "tools ran on the thread pool");
            }
        });

        Test("deferred tool: answered later from another thread, with progress", () =>
        {
            var updates = new List<string>();
            Tool later = Tool.CreateDeferred("later", "", null, call => new Thread(() =>
            {
                Thread.Sleep(20);
                call.Update("{\"content\":[{\"type\":\"text\",\"text\":\"half\"}]}");
                call.Complete("finished");
            }).Start());
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c", "later", "{}")), Text("ok")) };
            options.AddTool(later);
            using (var agent = new Agent(options))
            using (agent.Subscribe(e => { if (e.Type == EventType.ToolExecutionUpdate) lock (updates) updates.Add(e.Json()); }))
            {
                var result = agent.Prompt("go").Messages.First(m => Role(m) == "toolResult");
                Equal("finished", Outcome.MessageText(result), "result");
                Equal(1, updates.Count, "one update event");
                Contains(updates[0], "half", "the update's partial result");
            }
        });

        Test("hooks: beforeToolCall blocks a call, transformContext sees the messages", () =>
        {
            var seen = new List<string>();
            string contextSeen = null;
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c1", "echo", "{\"text\":\"x\"}")), Text("ok")) };
            options.AddTool(Echo(seen));
            options.SetHook(HookKind.BeforeToolCall, input => "{\"block\":true,\"reason\":\"not today\"}");
            options.SetHook(HookKind.TransformContext, input => { contextSeen = input; return null; });
            using (var agent = new Agent(options))
            {
                var result = agent.Prompt("go").Messages.First(m => Role(m) == "toolResult");
                Equal(0, seen.Count, "the tool never ran");
                Equal(true, (bool)Json.Get(result, "isError"), "blocked is an error");
                Contains(Outcome.MessageText(result), "not today", "the reason");
                Contains(contextSeen, "go", "the hook's input");
            }
        });

        Test("hooks: a deferred hook answered later from another thread; Agent.SetHook replaces it", () =>
        {
            var seen = new List<string>();
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c1", "echo", "{\"text\":\"x\"}")), Text("ok"), Calls(Call("c2", "echo", "{\"text\":\"y\"}")), Text("ok")) };
            options.AddTool(Echo(seen));
            options.SetDeferredHook(HookKind.BeforeToolCall, call => new Thread(() =>
            {
                Thread.Sleep(10);
                call.Complete(null); // allow
            }).Start());
            using (var agent = new Agent(options))
            {
                agent.Prompt("first");
                Equal(1, seen.Count, "allowed later, the tool ran");
                agent.SetHook(HookKind.BeforeToolCall, input => "{\"block\":true,\"reason\":\"now blocked\"}");
                var result = agent.Prompt("second").Messages.First(m => Role(m) == "toolResult");
                Equal(1, seen.Count, "the new hook blocked the second call");
                Contains(Outcome.MessageText(result), "now blocked", "reason");
            }
        });

        Test("a hook that throws fails the run's request", () =>
        {
            var options = new Options { ScriptedModelJson = Script(Text("never")) };
            options.SetHook(HookKind.TransformContext, (Func<string, string>)(input => { throw new Exception("hook refused"); }));
            using (var agent = new Agent(options))
            {
                Outcome o = agent.Start("go").Wait();
                Equal(RunStatus.ModelError, o.Status, "status");
                Contains(o.ErrorMessage, "hook refused", "message");
            }
        });

        Test("listeners: every event in order, deltas, JSON while valid, unsubscribe", () =>
        {
            var events = new List<Event>();
            var deltas = new System.Text.StringBuilder();
            string firstJson = null;
            using (var agent = new Agent(new Options { ScriptedModelJson = Script("{\"content\":[{\"type\":\"text\",\"text\":\"abcdef\",\"chunks\":3}]}", Text("x")) }))
            {
                var sub = agent.Subscribe(e =>
                {
                    events.Add(e);
                    if (firstJson == null) firstJson = e.Json(EventShape.Lean);
                    if (e.Update == UpdateType.TextDelta) deltas.Append(e.Delta);
                });
                agent.Prompt("go");
                Equal(EventType.AgentStart, events.First().Type, "first");
                Equal(EventType.AgentEnd, events.Last().Type, "last");
                Equal("abcdef", deltas.ToString(), "deltas");
                Check(events.Count(e => e.Update == UpdateType.TextDelta) == 3, "three deltas");
                Contains(firstJson, "agent_start", "event JSON");
                var stale = Throws<AgentException>(() => events[0].Json(), "JSON after the callback");
                Equal(ErrorCode.InvalidArgument, stale.Status, "stale event status");
                sub.Dispose();
                int count = events.Count;
                agent.Prompt("again");
                Equal(count, events.Count, "no events after unsubscribing");
            }
        });

        Test("a listener that throws fails the run", () =>
        {
            using (var agent = new Agent(new Options { ScriptedModelJson = Script(Text("x")) }))
            using (agent.Subscribe(e => { if (e.Type == EventType.MessageEnd) throw new Exception("listener broke"); }))
            {
                Outcome o = agent.Start("go").Wait();
                Check(o.Status != RunStatus.Completed, "the run did not complete: " + o);
                Contains(o.ErrorMessage, "listener broke", "message");
            }
        });

        Test("custom stream function: a model written in C#", () =>
        {
            string requestSeen = null;
            var options = new Options
            {
                StreamFn = call =>
                {
                    requestSeen = call.RequestJson;
                    call.Push("{\"type\":\"start\"}");
                    call.PushBlockStart(BlockKind.Text, 0);
                    call.PushTextDelta(0, "from ");
                    call.PushTextDelta(0, "C#");
                    call.PushBlockEnd(BlockKind.Text, 0);
                    call.End("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"from C#\"}],\"stopReason\":\"stop\",\"api\":\"x\",\"provider\":\"x\",\"model\":\"x\",\"usage\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":0,\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}},\"timestamp\":0}");
                },
            };
            using (var agent = new Agent(options))
            {
                Equal("from C#", agent.Prompt("hi").Text, "answer");
                Contains(requestSeen, "\"messages\"", "request JSON");
            }
        });

        Test("abort: a run waiting on a tool ends Aborted; the tool sees it", () =>
        {
            var entered = new ManualResetEventSlim();
            ToolCall pending = null;
            Tool wait = Tool.CreateDeferred("wait", "", null, call => { pending = call; entered.Set(); });
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c", "wait", "{}")), Text("never")) };
            options.AddTool(wait);
            using (var agent = new Agent(options))
            using (Run run = agent.Start("go"))
            {
                Check(entered.Wait(SafetyMs), "the tool started");
                run.Abort();
                WaitUntil(() => pending.IsAborted, "the tool call to see the abort");
                pending.Fail("stopped");
                Outcome o = run.Wait(SafetyMs);
                Equal(RunStatus.Aborted, o.Status, "status");
                Throws<RunAbortedException>(() => o.Check(), "Check");
            }
        });
    }

    // ---- host-pumped dispatch, queues, errors ------------------------------------------------

    static void Dispatch()
    {
        Test("host-pumped: every callback on the pumping thread, blocking waits refused there", () =>
        {
            int pump = Thread.CurrentThread.ManagedThreadId;
            var offThread = new List<string>();
            Action<string> here = what => { if (Thread.CurrentThread.ManagedThreadId != pump) lock (offThread) offThread.Add(what); };
            Exception refused = null;
            using (var dispatcher = new Dispatcher())
            {
                var options = new Options
                {
                    Dispatcher = dispatcher,
                    ScriptedModelJson = Script(Calls(Call("c1", "echo", "{\"text\":\"a\"}"), Call("c2", "echo", "{\"text\":\"b\"}")), Text("pumped")),
                };
                options.AddTool(Tool.Create("echo", "", null, call => { here("tool"); return call.Arg("text"); }));
                options.SetHook(HookKind.BeforeToolCall, input => { here("hook"); return null; });
                using (var agent = new Agent(options))
                {
                    Run run = null;
                    agent.Subscribe(e =>
                    {
                        here("listener");
                        if (e.Type == EventType.AgentEnd && refused == null)
                            try { run.Wait(); } catch (Exception ex) { refused = ex; }
                    });
                    Outcome doneOutcome = null;
                    run = agent.Start("go", o => { here("done"); doneOutcome = o; });
                    var clock = Stopwatch.StartNew();
                    while (!run.IsDone && clock.ElapsedMilliseconds < SafetyMs)
                    {
                        dispatcher.Dispatch(2);
                        Thread.Sleep(1);
                    }
                    Check(run.IsDone, "the run settled while pumped");
                    Equal("pumped", doneOutcome.Text, "answer");
                    Equal(0, offThread.Count, "callbacks off the pumping thread: " + string.Join(",", offThread));
                    Check(refused is AgentException && ((AgentException)refused).Status == ErrorCode.WouldDeadlock,
                        "Run.Wait inside a dispatched listener is refused with WouldDeadlock: " + refused);
                }
            }
        });

        Test("host-pumped: Run.Wait from the host thread dispatches while it waits", () =>
        {
            int pump = Thread.CurrentThread.ManagedThreadId;
            int toolThread = -1;
            using (var dispatcher = new Dispatcher())
            {
                var options = new Options { Dispatcher = dispatcher, ScriptedModelJson = Script(Calls(Call("c", "t", "{}")), Text("ok")) };
                options.AddTool(Tool.Create("t", "", null, call => { toolThread = Thread.CurrentThread.ManagedThreadId; return "r"; }));
                using (var agent = new Agent(options))
                {
                    Equal("ok", agent.Prompt("go").Text, "answer");
                    Equal(pump, toolThread, "the tool ran on the waiting thread");
                }
            }
        });

        Test("pull queue: every event, lossless, JSON until the next call", () =>
        {
            using (var agent = new Agent(new Options { ScriptedModelJson = Script(Text("queued")) }))
            using (EventQueue queue = agent.OpenQueue(4096))
            {
                agent.Prompt("go");
                var types = new List<EventType>();
                string json = null;
                Event e;
                while ((e = queue.Next(0)) != null)
                {
                    types.Add(e.Type);
                    if (e.Type == EventType.MessageEnd) json = e.Json();
                }
                Equal(EventType.AgentStart, types.First(), "first");
                Equal(EventType.AgentEnd, types.Last(), "last");
                Contains(json, "queued", "message_end JSON");
                Check(!queue.IsClosed, "open while the agent lives");
                agent.Dispose();
                Check(queue.Next(0) == null && queue.IsClosed, "closed once the agent is gone");
            }
        });

        Test("errors: status codes and sentences, nothing half-changed", () =>
        {
            var e = Throws<AgentException>(() => new Agent(new Options()), "no model");
            Equal(ErrorCode.NoStreamFn, e.Status, "no stream fn");
            e = Throws<AgentException>(() => new Agent(new Options { ScriptedModelJson = "[" }), "bad script");
            Equal(ErrorCode.InvalidJson, e.Status, "malformed JSON");
            e = Throws<AgentException>(() => new Agent(new Options { ScriptedModelJson = "[]" }.Set("noSuchOption", "1")), "unknown option");
            Equal(ErrorCode.InvalidJson, e.Status, "unknown option");
            Contains(e.Message, "noSuchOption", "names the option");
            e = Throws<AgentException>(() => Models.Find("nowhere/nothing"), "unknown model");
            Equal(ErrorCode.InvalidArgument, e.Status, "unknown model");
            Throws<ArgumentException>(() => Tool.Create("", "", null, c => ""), "nameless tool");
            Throws<ArgumentException>(() => Models.Find("bad\ud800"), "lone surrogate");
            var entered = new ManualResetEventSlim();
            var release = new ManualResetEventSlim();
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c", "slow", "{}")), Text("ok")) };
            options.AddTool(Tool.Create("slow", "", null, c => { entered.Set(); release.Wait(SafetyMs); return "r"; }));
            var agent = new Agent(options);
            using (Run run = agent.Start("go"))
            {
                Check(entered.Wait(SafetyMs), "tool started");
                e = Throws<AgentException>(() => agent.Start("again"), "busy");
                Equal(ErrorCode.Busy, e.Status, "busy");
                string before = Json.Serialize(Json.Get(Json.Parse(agent.StateJson), "thinkingLevel"));
                e = Throws<AgentException>(() => agent.Configure("{\"thinkingLevel\":\"loud\",\"steeringMode\":\"all\"}"), "bad configure");
                Equal(ErrorCode.InvalidJson, e.Status, "bad value");
                Contains(e.Message, "thinkingLevel", "names the field");
                var state = Json.Parse(agent.StateJson);
                Equal(before, Json.Serialize(Json.Get(state, "thinkingLevel")), "thinking level unchanged");
                Equal("one-at-a-time", (string)Json.Get(state, "steeringMode"), "nothing of the patch applied");
                release.Set();
                Equal(RunStatus.Completed, run.Wait(SafetyMs).Status, "the first run finished");
            }
            agent.Dispose();
            agent.Dispose(); // idempotent
            Throws<ObjectDisposedException>(() => agent.Prompt("x"), "disposed agent");
        });

        Test("dispose during a run: the run ends Freed, Prompt raises RunFailedException", () =>
        {
            var entered = new ManualResetEventSlim();
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c", "hang", "{}")), Text("never")) };
            options.AddTool(Tool.CreateDeferred("hang", "", null, c => entered.Set()));
            var agent = new Agent(options);
            Run run = agent.Start("go");
            Check(entered.Wait(SafetyMs), "tool started");
            agent.Dispose();
            Equal(RunStatus.Freed, run.Wait(SafetyMs).Status, "freed");
            Throws<RunFailedException>(() => run.Outcome.Check(), "Check");
        });
    }

    // ---- coding tools, providers, sessions ---------------------------------------------------

    static void Packs()
    {
        Test("coding tools: confined to the root, consent asked before a write", () =>
        {
            string root = TempDir();
            string outside = TempDir();
            try
            {
                File.WriteAllText(Path.Combine(root, "notes.txt"), "inside the root\n");
                File.WriteAllText(Path.Combine(outside, "secret.txt"), "outside\n");
                var asked = new List<string>();
                var options = new Options
                {
                    CodingTools = new CodingTools(root).AskConsent(r => { lock (asked) asked.Add(r.Tool + ":" + r.ArgumentsJson); return !r.ArgumentsJson.Contains("refused.txt"); }),
                    ScriptedModelJson = Script(
                        Calls(Call("r1", "read", "{\"path\":\"notes.txt\"}"),
                              Call("r2", "read", "{\"path\":" + Json.Quote(Path.Combine(outside, "secret.txt")) + "}"),
                              Call("r3", "read", "{\"path\":\"../" + Path.GetFileName(outside) + "/secret.txt\"}")),
                        Calls(Call("w1", "write", "{\"path\":\"made.txt\",\"content\":\"written\"}"),
                              Call("w2", "write", "{\"path\":\"refused.txt\",\"content\":\"no\"}")),
                        Text("done")),
                };
                options.Set("toolExecution", "\"sequential\"");
                using (var agent = new Agent(options))
                {
                    var results = agent.Prompt("work").Messages.Where(m => Role(m) == "toolResult").ToList();
                    Equal(5, results.Count, "five tool results");
                    Contains(Outcome.MessageText(results[0]), "inside the root", "read inside");
                    Equal(true, (bool)Json.Get(results[1], "isError"), "absolute path outside refused");
                    Equal(true, (bool)Json.Get(results[2], "isError"), ".. outside refused");
                    Check(!Outcome.MessageText(results[1]).Contains("outside\n") && !Outcome.MessageText(results[2]).Contains("outside\n"), "nothing of the secret");
                    Equal(false, (bool)Json.Get(results[3], "isError"), "allowed write");
                    Equal("written", File.ReadAllText(Path.Combine(root, "made.txt")), "the file written");
                    Equal(true, (bool)Json.Get(results[4], "isError"), "refused write");
                    Contains(Outcome.MessageText(results[4]), "The user refused write.", "the refusal's reason");
                    Check(!File.Exists(Path.Combine(root, "refused.txt")), "the refused file was not written");
                    Equal(2, asked.Count, "consent asked for the two writes only");
                }
                Throws<AgentException>(() => new Agent(new Options { CodingTools = new CodingTools(Path.Combine(root, "missing")), ScriptedModelJson = "[]" }), "missing root");
            }
            finally
            {
                Directory.Delete(root, true);
                Directory.Delete(outside, true);
            }
        });

        Test("providers: openai-completions against a loopback mock; a bad key is a model error", () =>
        {
            string model = Models.Custom("openai-completions", "acme", "mock-model", mockBaseUrl);
            var options = new Options { ModelJson = model }.UseProviders().ApiKey("test-key");
            var deltas = new System.Text.StringBuilder();
            using (var agent = new Agent(options))
            using (agent.Subscribe(e => { if (e.Update == UpdateType.TextDelta) deltas.Append(e.Delta); }))
            {
                Equal("Hello from the C# mock.", agent.Prompt("hi").Text, "answer");
                Equal("Hello from the C# mock.", deltas.ToString(), "streamed");
            }
            using (var agent = new Agent(new Options { ModelJson = model }.UseProviders().ApiKey("wrong")))
            {
                var e = Throws<ModelErrorException>(() => agent.Prompt("hi"), "bad key");
                Contains(e.Message, "invalid api key", "the endpoint's message");
            }
        });

        Test("providers: a tool call from the mock model runs the tool", () =>
        {
            var options = new Options { ModelJson = Models.Custom("openai-completions", "acme", "mock-model", mockBaseUrl) }
                .UseProviders().ApiKey("test-key").AddTool(Echo());
            using (var agent = new Agent(options))
                Equal("Done: echo: via http", agent.Prompt("CALL echo {\"text\":\"via http\"}").Text, "answer after the tool");
        });

        Test("models: the catalogue", () =>
        {
            string list = Models.List("anthropic");
            var models = Parse(list);
            Check(models.Count > 0, "anthropic has models");
            string first = (string)Json.Get(models[0], "id");
            Contains(Models.Find("anthropic/" + first), "anthropic-messages", "find by name");
        });

        Test("mcp: a server's tools reach the agent, a wrong entry fails alone, close ends the server", () =>
        {
            string server = Path.GetFullPath(Path.Combine("tests", "mcp", "hostile", "server.py"));
            string config = "{\"mcpServers\":{\"h\":{\"command\":\"python3\",\"args\":[" + Json.Quote(server) + ",\"tools\"],\"timeout\":30},"
                + "\"old\":{\"type\":\"sse\",\"url\":\"http://127.0.0.1:9/sse\"}}}";
            Equal(ErrorCode.InvalidJson, Throws<AgentException>(() => Mcp.Connect("{\"servers\":{}}"), "no mcpServers").Status, "no mcpServers");
            using (var mcp = Mcp.Connect(config))
            {
                Check(mcp.Wait(30000), "the servers settle");
                var servers = Parse(mcp.ServersJson());
                Equal("ready", (string)Json.Get(servers[0], "state"), "the stdio server");
                Equal("failed", (string)Json.Get(servers[1], "state"), "the sse entry");
                Contains((string)Json.Get(servers[1], "lastError"), "SSE", "the sse entry's reason");
                Contains(mcp.ToolsJson(), "mcp__h__echo", "the tools, named as pi names them");
                var options = new Options { Mcp = mcp, ScriptedModelJson = Script(
                    Calls(Call("c1", "mcp__h__echo", "{\"text\":\"over mcp\"}")), Text("done")) };
                using (var agent = new Agent(options))
                {
                    agent.Prompt("use the server");
                    Contains(agent.MessagesJson, "echo: over mcp", "the tool's result in the transcript");
                }
                mcp.Close();
                Equal("closed", (string)Json.Get(Parse(mcp.ServersJson())[0], "state"), "closed");
            }
        });

        Test("sessions: an agent appends to its file; a new agent resumes from it", () =>
        {
            string dir = TempDir();
            try
            {
                string path = Path.Combine(dir, "s.jsonl");
                using (var session = Session.Open(path, cwd: dir))
                using (var agent = new Agent(new Options { Session = session, ScriptedModelJson = Script(Text("remembered")) }))
                {
                    agent.Prompt("remember this");
                    Contains(session.Get(SessionPart.Entries), "remembered", "entries");
                }
                Contains(File.ReadAllText(path), "remember this", "the file");
                using (var session = Session.Open(path))
                using (var agent = new Agent(new Options { Session = session, ScriptedModelJson = Script(Text("again")) }))
                {
                    Equal(2, agent.MessageCount, "resumed transcript");
                    string id = session.Append("{\"type\":\"session_info\",\"name\":\"named\"}");
                    Check(id.Length > 0, "appended entry id");
                }
                using (var locked = Session.Open(path))
                {
                    var e = Throws<AgentException>(() => Session.Open(path), "second open");
                    Equal(ErrorCode.Locked, e.Status, "locked");
                }
                File.WriteAllText(Path.Combine(dir, "not.jsonl"), "{\"type\":\"message\"}\n");
                Equal(ErrorCode.NotASession, Throws<AgentException>(() => Session.Open(Path.Combine(dir, "not.jsonl")), "not a session").Status, "not a session");
                using (var memory = Session.InMemory())
                {
                    Contains(memory.Get(SessionPart.File), "\"path\":null", "in memory");
                    string first = memory.Append("{\"type\":\"message\",\"message\":" + Agent.UserMessageJson("one") + "}");
                    memory.Append("{\"type\":\"message\",\"message\":" + Agent.UserMessageJson("two") + "}");
                    string summary = memory.BranchWithSummary(first, "{\"summary\":\"went elsewhere\"}");
                    Equal(Json.Quote(summary), memory.Get(SessionPart.LeafId), "the summary is the leaf");
                    string branch = memory.Get(SessionPart.Branch);
                    Contains(branch, "went elsewhere", "summary on the branch");
                    Check(!branch.Contains("\"two\""), "the abandoned entry is off the branch");
                    Check(Convert.ToDouble(Json.Get(Json.Parse(memory.EstimateJson()), "tokens")) > 0, "an estimate");
                    var bad = Throws<AgentException>(() => memory.Branch("no-such-entry"), "unknown entry");
                    Equal(ErrorCode.InvalidArgument, bad.Status, "unknown entry");
                }
            }
            finally { Directory.Delete(dir, true); }
        });
    }

    // ---- GC pressure ---------------------------------------------------------------------------

    const int Agents = 40;

    // Agents never disposed (their finalizers free them), tools that collect, listeners that
    // allocate, collections while runs are pending. A method of its own, so that no frame of the
    // caller keeps its objects alive.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    static void GcRound(int[] counts)
    {
        var runs = new List<Run>();
        for (int i = 0; i < Agents; i++)
        {
            var options = new Options { ScriptedModelJson = Script(Calls(Call("c", "t", "{}")), Text("r" + i)) };
            options.AddTool(Tool.Create("t", "", null, call =>
            {
                GC.Collect();
                Interlocked.Increment(ref counts[1]);
                return "x";
            }));
            var agent = new Agent(options);
            agent.Subscribe(e => { if (e.Type == EventType.MessageUpdate) new byte[1024].ToString(); });
            runs.Add(agent.Start("go", o => Interlocked.Increment(ref counts[0])));
            if (i % 8 == 0) { GC.Collect(); GC.WaitForPendingFinalizers(); }
        }
        for (int k = 0; k < 20; k++) { GC.Collect(); GC.WaitForPendingFinalizers(); }
        foreach (Run run in runs) Equal(RunStatus.Completed, run.Wait(SafetyMs).Status, "every run completed");
    }

    static void Collections()
    {
        Test("GC pressure: collections while callbacks are pending lose nothing, release everything", () =>
        {
            int before = Agent.LiveHostObjects;
            int[] counts = new int[2]; // done calls, tool runs
            for (int round = 0; round < 2; round++) GcRound(counts);
            int done = counts[0], toolRuns = counts[1];
            Equal(2 * Agents, done, "every done called once");
            Equal(2 * Agents, toolRuns, "every tool ran once");
            // The agents were never disposed: their finalizers free them, and libagent's finalizers
            // release every host object they held.
            WaitUntil(() => Agent.LiveHostObjects == before, "every host object released (" + Agent.LiveHostObjects + " left of " + before + ")");
        });

        Test("GC pressure: a host-pumped agent collected between frames", () =>
        {
            int before = Agent.LiveHostObjects;
            int done = 0;
            using (var dispatcher = new Dispatcher())
            {
                for (int i = 0; i < 10; i++)
                {
                    var options = new Options { Dispatcher = dispatcher, ScriptedModelJson = Script(Text("x")) };
                    options.AddTool(Echo());
                    StartAndForget(options, () => Interlocked.Increment(ref done));
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    dispatcher.Dispatch(2);
                }
                var clock = Stopwatch.StartNew();
                while (done < 10 && clock.ElapsedMilliseconds < SafetyMs)
                {
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    dispatcher.Dispatch(-1);
                    Thread.Sleep(1);
                }
            }
            Equal(10, done, "every done called, completed or freed");
            WaitUntil(() => Agent.LiveHostObjects == before, "every host object released");
        });
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    static void StartAndForget(Options options, Action done)
    {
        new Agent(options).Start("go", o => done()).Dispose();
    }

    static void StartMock()
    {
        string script = Environment.GetEnvironmentVariable("LIBAGENT_CS_MOCK") ?? Path.Combine("tests", "csharp", "mock_model.py");
        var info = new ProcessStartInfo("python3", "\"" + script + "\"")
        {
            UseShellExecute = false,
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
        };
        Process mock = Process.Start(info);
        string line = mock.StandardOutput.ReadLine();
        if (line == null || !line.StartsWith("PORT ")) throw new Exception("the mock endpoint did not start: " + line);
        mockBaseUrl = "http://127.0.0.1:" + line.Substring(5).Trim() + "/v1";
        AppDomain.CurrentDomain.ProcessExit += (s, e) => { try { mock.StandardInput.Close(); mock.WaitForExit(2000); } catch { } };
    }

    static int Main(string[] args)
    {
        StartMock();
        Runs();
        ToolsAndHooks();
        Dispatch();
        Packs();
        Collections();
        ExampleTests.Run(Test, mockBaseUrl);
        Console.WriteLine("csharp-tests: " + passed + " passed, " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }
}

// A coding assistant inside a Unity scene (the shape of a MonoBehaviour: Start, Update,
// OnDestroy). Host-pumped: libagent calls this object only from dispatcher.Dispatch in Update(),
// on Unity's main thread, so every callback may touch the scene; each frame gives the agent a
// budget of FrameBudgetMs (a dispatch overruns it by at most one callback).
//
// It asks a real model through libagent's built-in providers (an OpenAI-compatible endpoint at
// BaseUrl), with the coding tools confined to Root; writes and edits wait for the player's
// consent (AskUser: here a function; in a game, a dialog answered in a later frame through
// ConsentRequest.Allow/Refuse).
//
// In Unity: put LibAgent's sources (bindings/csharp) and the native library in Assets/Plugins
// (README, "C# (Unity, Godot)"), add this component to a GameObject, fill in the fields.
using System;
using System.Diagnostics;
using System.Text;
using System.Threading;
using LibAgent;
using UnityEngine;

public class AssistantBehaviour : MonoBehaviour
{
    public string BaseUrl = "http://127.0.0.1:8080/v1";
    public string ModelId = "local-model";
    public string ApiKey = "";
    public string Root = ".";
    public string Question = "What is in this directory?";
    public int FrameBudgetMs = 2;
    /// <summary>Whether the player allows a write, edit or bash call (null: refuse them all).</summary>
    public Func<ConsentRequest, bool> AskUser;
    /// <summary>The scene's own reaction to each event (a UI refresh, a sound), if any.</summary>
    public Action<Event> ShowEvent;

    Dispatcher dispatcher;
    Agent agent;
    Run run;
    int mainThread;

    // What the scene shows (and the test checks).
    public readonly StringBuilder Answer = new StringBuilder();
    public readonly System.Collections.Generic.List<string> ToolsRun = new System.Collections.Generic.List<string>();
    public bool Finished { get; private set; }
    public Outcome Outcome { get; private set; }
    /// <summary>Callbacks that came on another thread than Start's (must stay 0).</summary>
    public int OffThreadCallbacks { get; private set; }
    /// <summary>Callbacks that started although the budget was spent before the previous one
    /// returned (libagent checks the budget before each callback after a dispatch's first: must
    /// stay 0). The budget is counted from the frame's first callback, which libagent's own
    /// clock cannot follow, so a preempted thread never makes a callback look late.</summary>
    public int ExtraLateCallbacks { get; private set; }

    readonly Stopwatch frameClock = new Stopwatch();
    double firstCallbackStart = -1, lastCallbackEnd;

    void Start()
    {
        mainThread = Thread.CurrentThread.ManagedThreadId;
        dispatcher = new Dispatcher();
        var options = new Options
        {
            SystemPrompt = "You are a coding assistant inside a game editor. Be brief.",
            ModelJson = Models.Custom("openai-completions", "local", ModelId, BaseUrl),
            Dispatcher = dispatcher,
            CodingTools = new CodingTools(Root).AskConsent(request => Timed(() => AskUser != null && AskUser(request))),
        }.UseProviders().ApiKey(ApiKey);
        agent = new Agent(options);
        agent.Subscribe(e => Timed(() => { OnEvent(e); return true; }));
        run = agent.Start(Question, outcome => Timed(() =>
        {
            Outcome = outcome;
            Finished = true;
            if (!outcome.Completed) UnityEngine.Debug.Log("assistant: " + outcome);
            return true;
        }));
    }

    void OnEvent(Event e)
    {
        if (e.Update == UpdateType.TextDelta) Answer.Append(e.Delta); // show it in a text field
        else if (e.Type == EventType.ToolExecutionStart) ToolsRun.Add(e.ToolName);
        if (ShowEvent != null) ShowEvent(e);
    }

    void Update()
    {
        frameClock.Restart();
        firstCallbackStart = -1;
        dispatcher.Dispatch(FrameBudgetMs);
    }

    void OnDestroy()
    {
        if (run != null) run.Dispose();
        if (agent != null) agent.Dispose();       // an active run ends; its done is queued...
        if (dispatcher != null) dispatcher.Dispose(); // ...and runs here, on this thread
    }

    // Every callback of this object passes here: it checks the thread and the frame budget.
    T Timed<T>(Func<T> callback)
    {
        if (Thread.CurrentThread.ManagedThreadId != mainThread) OffThreadCallbacks++;
        double now = frameClock.Elapsed.TotalMilliseconds;
        if (firstCallbackStart < 0) firstCallbackStart = now;
        else if (lastCallbackEnd - firstCallbackStart > FrameBudgetMs) ExtraLateCallbacks++;
        try { return callback(); }
        finally { lastCallbackEnd = frameClock.Elapsed.TotalMilliseconds; }
    }
}

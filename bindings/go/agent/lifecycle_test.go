package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libagent/libagent/bindings/go/agent"
)

// After all tests: every pinned Go value was released exactly once.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		for i := 0; i < 10000 && agent.LiveHandles() != 0; i++ {
			runtime.GC()
			runtime.Gosched()
		}
		if n := agent.LiveHandles(); n != 0 {
			fmt.Fprintf(os.Stderr, "leak: %d cgo handles still pinned after all tests\n", n)
			code = 1
		}
		if n := agent.FinalizerMisuses(); n != 0 {
			fmt.Fprintf(os.Stderr, "%d finalizer calls for handles that were not live\n", n)
			code = 1
		}
	}
	os.Exit(code)
}

// quickModel answers every request with one short text, pushed from the stream goroutine.
func quickModel(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
	for _, ev := range []string{`{"type":"start"}`, `{"type":"text_start","contentIndex":0}`,
		`{"type":"text_delta","contentIndex":0,"delta":"ok"}`, `{"type":"text_end","contentIndex":0}`} {
		if err := s.Push(json.RawMessage(ev)); err != nil {
			return nil // aborted or closed: the run is over
		}
	}
	reason := `{"type":"done","reason":"stop"}`
	if ctx.Err() != nil {
		reason = `{"type":"error","reason":"aborted","errorMessage":"aborted"}`
	}
	s.Push(json.RawMessage(reason))
	return nil
}

// Many goroutines drive one agent at once: prompts (most are refused as busy), steering,
// follow-ups, aborts, cancelled contexts, state reads, queue reads, subscriptions and event
// channels. Nothing may fail other than with the documented errors, and the agent ends
// consistent and idle.
func TestManyGoroutinesDriveOneAgent(t *testing.T) {
	echo := agent.NewTool("echo", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		return agent.TextResult("echo"), nil
	})
	a := mustNew(t, agent.Options{StreamFunc: quickModel, Tools: []*agent.Tool{echo}})
	var completed, busy, cancelled atomic.Int64
	var unexpected sync.Map
	note := func(what string, err error) {
		if err != nil {
			unexpected.Store(what+": "+err.Error(), true)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 12; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				switch (g + i) % 6 {
				case 0, 1:
					_, err := a.Prompt(context.Background(), fmt.Sprintf("g%d-%d", g, i))
					switch {
					case err == nil:
						completed.Add(1)
					case errors.Is(err, agent.ErrBusy):
						busy.Add(1)
					case errors.Is(err, agent.ErrAborted): // another goroutine's Abort ended it
						cancelled.Add(1)
					default:
						note("prompt", err)
					}
				case 2:
					// A prompt whose context is cancelled while it runs: it finished, was
					// refused, or returns the context's error.
					ctx, cancel := context.WithCancel(context.Background())
					result := make(chan error, 1)
					go func() { result <- errOf(a.Prompt(ctx, "racing a cancel")) }()
					cancel()
					switch err := <-result; {
					case err == nil:
						completed.Add(1)
					case errors.Is(err, context.Canceled):
						cancelled.Add(1)
					case errors.Is(err, agent.ErrBusy):
						busy.Add(1)
					case errors.Is(err, agent.ErrAborted): // another goroutine's Abort ended it
						cancelled.Add(1)
					default:
						note("prompt with a cancelled context", err)
					}
					// A prompt whose context was cancelled before: never runs.
					if _, err := a.Prompt(ctx, "cancelled"); !errors.Is(err, context.Canceled) {
						note("prompt with a context cancelled before", fmt.Errorf("returned %v", err))
					}
					// An asynchronous prompt's result: done, or ended by another goroutine's abort.
					ch, err := a.PromptAsync("async")
					if err == nil {
						if err := settled(ch); err != nil && !errors.Is(err, agent.ErrAborted) {
							note("async result", err)
						}
					} else if !errors.Is(err, agent.ErrBusy) {
						note("async", err)
					}
				case 3:
					note("steer", a.Steer(agent.UserMessage("steer")))
					note("follow", a.FollowUp(agent.UserMessage("follow")))
					note("abort", a.Abort())
				case 4:
					s, err := a.State()
					note("state", err)
					if err == nil && len(s.Messages) > 0 && !json.Valid(s.Messages[0]) {
						note("state", errors.New("invalid message JSON"))
					}
					_, err = a.QueuedMessages()
					note("queued", err)
					_, err = a.HasQueuedMessages()
					note("has", err)
				case 5:
					unsubscribe := a.Subscribe(func(agent.Event) {})
					ctx, cancel := context.WithCancel(context.Background())
					ch := a.Events(ctx)
					go func() {
						for range ch {
						}
					}()
					cancel()
					unsubscribe()
				}
			}
		}()
	}
	wg.Wait()
	unexpected.Range(func(k, _ any) bool { t.Errorf("unexpected error %s", k); return true })
	// Which outcomes the storm sees depends on timing; TestStormOutcomesForced forces each one.
	if completed.Load()+cancelled.Load() == 0 {
		t.Fatalf("completed %d, busy %d, cancelled %d", completed.Load(), busy.Load(), cancelled.Load())
	}
	if err := a.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Whether a run completes amid the storm of aborts and follow-ups depends on timing; once
	// it is over, one does.
	if err := a.ClearAllQueues(); err != nil {
		t.Fatal(err)
	}
	if out, err := a.Prompt(context.Background(), "after the storm"); err != nil || out.Status != agent.RunCompleted {
		t.Fatalf("a prompt after the storm: %+v, %v", out, err)
	}
	s, err := a.State()
	if err != nil || s.IsStreaming || len(s.PendingToolCalls) != 0 {
		t.Fatalf("final state %+v %v", s, err)
	}
	// The transcript alternates sensibly: every assistant message follows a user message or
	// another assistant's turn; nothing is malformed.
	ms := transcript(t, a)
	if len(ms) == 0 || ms[0].Role != "user" {
		t.Fatalf("transcript starts with %s", roles(ms))
	}
	for i, m := range ms {
		ok := false
		switch m.Role {
		case "user":
			ok = true
		case "assistant":
			ok = i > 0
		case "toolResult":
			ok = i > 0 && (ms[i-1].Role == "assistant" || ms[i-1].Role == "toolResult")
		}
		if !ok {
			t.Fatalf("message %d (%s) is out of place: %s", i, m.Role, roles(ms))
		}
	}
	a.ClearAllQueues()
	if _, err := a.Prompt(context.Background(), "final"); err != nil {
		t.Fatal(err)
	}
	if ms := transcript(t, a); ms[len(ms)-1].text() != "ok" {
		t.Fatalf("final answer %+v", ms[len(ms)-1])
	}
}

// The outcomes the storm above may or may not see, each forced by a model that holds its reply
// until released: a prompt refused as busy, a run ended by another goroutine's Abort, a prompt
// whose context is cancelled while it runs, and a run that completes.
func TestStormOutcomesForced(t *testing.T) {
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	held := func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return quickModel(ctx, req, s)
	}
	a := mustNew(t, agent.Options{StreamFunc: held})
	waitEntered := func() {
		t.Helper()
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the model was never called")
		}
	}

	// While a run is held: another prompt is refused, then an Abort ends the run.
	run, err := a.PromptAsync("held")
	if err != nil {
		t.Fatal(err)
	}
	waitEntered()
	if _, err := a.Prompt(context.Background(), "refused"); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("a prompt during a run: %v, want ErrBusy", err)
	}
	if err := a.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := settled(run); !errors.Is(err, agent.ErrAborted) {
		t.Fatalf("an aborted run: %v, want ErrAborted", err)
	}

	// A prompt whose context is cancelled while its run is held returns the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- errOf(a.Prompt(ctx, "cancelled while held")) }()
	waitEntered()
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("a prompt cancelled while it runs: %v, want context.Canceled", err)
	}
	if err := a.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Released, a run completes.
	close(release)
	if out, err := a.Prompt(context.Background(), "completes"); err != nil || out.Status != agent.RunCompleted {
		t.Fatalf("a released run: %+v, %v", out, err)
	}
}

// Many agents at once, each on its own goroutine, each with its own tool state.
func TestManyAgentsAtOnce(t *testing.T) {
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("agent-%d", i)
			tool := agent.NewTypedTool("whoami", "", func(ctx context.Context, args struct {
				Tag string `json:"tag"`
			}) (agent.Result, error) {
				return agent.TextResult(id + "/" + args.Tag), nil
			})
			a, err := agent.New(agent.Options{Model: testModel, Tools: []*agent.Tool{tool}, ScriptedModel: script(
				toolCalls(call{"c1", "whoami", map[string]any{"tag": id}}), text("done "+id, 2))})
			if err != nil {
				errs <- err
				return
			}
			defer a.Close()
			var deltas strings.Builder
			a.Subscribe(func(e agent.Event) { deltas.WriteString(e.Delta) })
			if _, err := a.Prompt(context.Background(), "who?"); err != nil {
				errs <- err
				return
			}
			ms := transcript(t, a)
			if ms[2].text() != id+"/"+id || ms[3].text() != "done "+id || !strings.HasSuffix(deltas.String(), "done "+id) {
				errs <- fmt.Errorf("%s: transcript %+v", id, ms)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Every Go value the library holds is released once the agent is gone: tools (also shared by
// several agents), prepareArguments, stream functions, hooks, listeners, abort registrations.
func TestFinalizersReleaseEveryHandle(t *testing.T) {
	eventually(t, "earlier tests' handles to be released", func() bool { return agent.LiveHandles() == 0 })
	shared := agent.NewTool("shared", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		return agent.TextResult("x"), nil
	})
	shared.PrepareArguments = func(args json.RawMessage) (json.RawMessage, error) { return nil, nil }
	noop := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return nil, nil }
	var agents []*agent.Agent
	for i := 0; i < 3; i++ {
		a, err := agent.New(agent.Options{Model: testModel, Tools: []*agent.Tool{shared}, StreamFunc: quickModel,
			Hooks: agent.Hooks{TransformContext: noop, BeforeToolCall: noop}})
		if err != nil {
			t.Fatal(err)
		}
		a.Subscribe(func(agent.Event) {})
		agents = append(agents, a)
	}
	// Per agent: tool + prepareArguments + stream function + 2 hooks + listener = 6.
	if got := agent.LiveRegistrations(); got != 18 {
		t.Fatalf("live handles %d, want 18", got)
	}
	for _, a := range agents {
		if _, err := a.Prompt(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
	}
	// The agent keeps every tool it ever had in its registry (by name) until it is freed; a
	// tool of the same name replaces the old one: its Execute and prepareArguments handles go.
	replacement := agent.NewTool("shared", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		return agent.TextResult("y"), nil
	})
	if err := agents[0].SetTools(replacement); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replaced tool to be released", func() bool { return agent.LiveRegistrations() == 17 })
	for _, a := range agents {
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every handle to be released", func() bool { return agent.LiveHandles() == 0 })
	if agent.FinalizerMisuses() != 0 {
		t.Fatal("a finalizer ran twice")
	}
}

// An agent that is never closed is freed by the runtime cleanup once unreachable.
func TestUnreachableAgentIsFreedByCleanup(t *testing.T) {
	eventually(t, "earlier tests' handles to be released", func() bool { return agent.LiveHandles() == 0 })
	before := agent.CleanupsRun()
	func() {
		for i := 0; i < 4; i++ {
			a, err := agent.New(agent.Options{Model: testModel, StreamFunc: quickModel, Tools: []*agent.Tool{
				agent.NewTool("t", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
					return agent.TextResult("x"), nil
				})}})
			if err != nil {
				t.Fatal(err)
			}
			a.Subscribe(func(agent.Event) {}) // must not capture a: the handle table would keep it alive
			if _, err := a.Prompt(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
		}
	}()
	eventually(t, "the cleanups to free the agents", func() bool { return agent.CleanupsRun() == before+4 })
	eventually(t, "their handles to be released", func() bool { return agent.LiveHandles() == 0 })
}

func TestCloseDuringARunAndAfterwards(t *testing.T) {
	started := make(chan struct{})
	var streamCause atomic.Value
	a, err := agent.New(agent.Options{Model: testModel, StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		s.Push(json.RawMessage(`{"type":"start"}`))
		close(started)
		<-ctx.Done()
		streamCause.Store(context.Cause(ctx))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	events := a.Events(context.Background())
	done, err := a.PromptAsync("go")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var e *agent.Error
	if err := settled(done); !errors.As(err, &e) || e.Status != agent.ErrFreed || !errors.Is(err, agent.ErrFreed) {
		t.Fatalf("run outcome after Close: %#v", err)
	}
	eventually(t, "the stream's ctx to be cancelled", func() bool { return streamCause.Load() != nil })
	for range events { // closes
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.State(); !errors.Is(err, agent.ErrInvalidHandle) || !strings.Contains(err.Error(), "freed agent") {
		t.Fatalf("State after Close: %v", err)
	}
	if _, err := a.Prompt(context.Background(), "x"); !errors.Is(err, agent.ErrInvalidHandle) {
		t.Fatalf("Prompt after Close: %v", err)
	}
	a.Subscribe(func(agent.Event) {})() // a no-op, releases its handle
}

// Close from inside the agent's own callbacks: a listener (runtime thread) and a tool goroutine.
func TestCloseInsideCallbacks(t *testing.T) {
	var a *agent.Agent
	a = mustNew(t, agent.Options{ScriptedModel: script(text("abc def", 3))})
	a.Subscribe(func(e agent.Event) {
		if e.UpdateType == "text_delta" {
			a.Close()
		}
	})
	if _, err := a.Prompt(context.Background(), "go"); !errors.Is(err, agent.ErrFreed) {
		t.Fatalf("listener close: %v", err)
	}
	var b *agent.Agent
	closer := agent.NewTool("closer", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		b.Close()
		<-ctx.Done() // the run is cancelled
		return agent.TextResult("late"), nil
	})
	b = mustNew(t, agent.Options{Tools: []*agent.Tool{closer}, ScriptedModel: script(toolCalls(call{"c1", "closer", map[string]any{}}))})
	if _, err := b.Prompt(context.Background(), "go"); !errors.Is(err, agent.ErrFreed) {
		t.Fatalf("tool close: %v", err)
	}
}

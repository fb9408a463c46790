package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

// drain receives from ch until an agent_end event (or the channel closes).
func drain(ch <-chan agent.Event) []agent.Event {
	var out []agent.Event
	for e := range ch {
		out = append(out, e)
		if e.Type == "agent_end" {
			break
		}
	}
	return out
}

func describe(events []agent.Event) string {
	var parts []string
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s/%s/%d/%s/%s/%s%s", e.Type, e.UpdateType, e.ContentIndex, e.Delta, e.ToolCallID, e.ToolName, e.ArgsJSON))
	}
	return strings.Join(parts, ",")
}

// The channel delivers exactly what listeners see, in the same order, also through a queue of
// capacity 2 (the loop waits for the reader), over several runs.
func TestEventsChannelIsLosslessAndOrdered(t *testing.T) {
	tool := agent.NewTool("t", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		agent.Progress(ctx, agent.TextResult("half"))
		return agent.TextResult("done"), nil
	})
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{tool}, EventQueueCapacity: 2, EventShape: agent.ShapeFull, ScriptedModel: script(
		text("one two three four five", 5), toolCalls(call{"c1", "t", map[string]any{}}, call{"c2", "t", map[string]any{}}),
		text("six seven", 2))})
	var seen []agent.Event
	a.Subscribe(func(e agent.Event) { seen = append(seen, e) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := a.Events(ctx)
	var got []agent.Event
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got = append(got, drain(ch)...)
		got = append(got, drain(ch)...)
	}()
	if _, err := a.Prompt(context.Background(), "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(context.Background(), "second"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if describe(got) != describe(seen) {
		t.Fatalf("channel:  %s\nlistener: %s", describe(got), describe(seen))
	}
	if strings.Count(describe(got), "agent_end") != 2 || strings.Count(describe(got), "tool_execution_update") != 2 ||
		!strings.HasPrefix(describe(got), "agent_start//0///,turn_start//0///,message_start//0///") ||
		!strings.Contains(describe(got), "tool_execution_start//0//c1/t{},") ||
		!strings.Contains(describe(got), "message_update/text_delta/0/one //,") {
		t.Fatalf("events %s", describe(got))
	}
	for i := range got {
		if string(got[i].JSON) != string(seen[i].JSON) {
			t.Fatalf("event %d differs:\n%s\n%s", i, got[i].JSON, seen[i].JSON)
		}
	}
}

func TestEventShapes(t *testing.T) {
	for _, tc := range []struct {
		shape       agent.EventShape
		partial     bool
		listenerNil bool
	}{{agent.ShapeFull, true, false}, {agent.ShapeLean, false, false}, {agent.ShapeNone, false, true}} {
		a := mustNew(t, agent.Options{EventShape: tc.shape, ScriptedModel: script(text("abc def", 2))})
		var listened []agent.Event
		a.Subscribe(func(e agent.Event) { listened = append(listened, e) })
		ctx, cancel := context.WithCancel(context.Background())
		ch := a.Events(ctx)
		done, err := a.PromptAsync("go")
		if err != nil {
			t.Fatal(err)
		}
		pulled := drain(ch)
		settled(done)
		cancel()
		for _, e := range pulled {
			if (e.JSON == nil) != tc.listenerNil { // no JSON unless asked, on both paths
				t.Fatalf("shape %d: channel JSON %q", tc.shape, e.JSON)
			}
			if e.Type == "message_update" && strings.Contains(string(e.JSON), `"partial":`) != tc.partial {
				t.Fatalf("shape %d: channel event %s", tc.shape, e.JSON)
			}
		}
		for _, e := range listened {
			if (e.JSON == nil) != tc.listenerNil {
				t.Fatalf("shape %d: listener JSON %q", tc.shape, e.JSON)
			}
			if e.Type == "message_update" && !tc.listenerNil && strings.Contains(string(e.JSON), `"partial":`) != tc.partial {
				t.Fatalf("shape %d: listener event %s", tc.shape, e.JSON)
			}
		}
		if describe(pulled) != describe(listened) {
			t.Fatalf("shape %d: %s vs %s", tc.shape, describe(pulled), describe(listened))
		}
	}
}

func TestEventsChannelClosesOnCancelAndOnClose(t *testing.T) {
	a, err := agent.New(agent.Options{Model: testModel, ScriptedModel: script(text("a", 1), text("b", 1))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	idle := a.Events(ctx)
	cancel()
	for range idle { // closes although nothing happened
	}
	// Events of a finished run stay readable after Close, then the channel closes.
	kept := a.Events(context.Background())
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	var n int
	var last agent.Event
	for e := range kept {
		n++
		last = e
	}
	if n == 0 || last.Type != "agent_end" {
		t.Fatalf("%d events after close, last %q", n, last.Type)
	}
	if _, ok := <-a.Events(context.Background()); ok {
		t.Fatal("Events on a closed agent delivered something")
	}
}

func TestSubscribeAndUnsubscribe(t *testing.T) {
	// The counters are the process's: earlier tests' agents must be gone first.
	eventually(t, "earlier tests' handles to be released", func() bool { return agent.LiveHandles() == 0 })
	a := mustNew(t, agent.Options{ScriptedModel: script(text("a", 1), text("b", 1))})
	var first, second []string
	// Registrations, not every live handle: a finished run's abort registration is released
	// whenever the library drops the run's signal, which this test does not wait for.
	before := agent.LiveRegistrations()
	unsubscribe := a.Subscribe(func(e agent.Event) { first = append(first, e.Type) })
	a.Subscribe(func(e agent.Event) { second = append(second, e.Type) })
	if agent.LiveRegistrations() != before+2 {
		t.Fatalf("live registrations %d, want %d", agent.LiveRegistrations(), before+2)
	}
	a.Prompt(context.Background(), "one")
	unsubscribe()
	unsubscribe() // idempotent
	eventually(t, "the listener's handle to be released", func() bool { return agent.LiveRegistrations() == before+1 })
	a.Prompt(context.Background(), "two")
	if len(first) == 0 || len(second) != 2*len(first) {
		t.Fatalf("first %d events, second %d", len(first), len(second))
	}
}

// A panicking listener fails the run instead of unwinding into the library.
func TestListenerPanicFailsTheRun(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: script(text("abc", 1))})
	a.Subscribe(func(e agent.Event) {
		if e.Type == "message_end" {
			panic("listener exploded")
		}
	})
	// The failure path emits message_end again, the listener fails again: the run's promise
	// rejects (AGENT_ERR_RUN_FAILED) with the panic's text.
	_, err := a.Prompt(context.Background(), "go")
	var e *agent.Error
	if !errors.As(err, &e) || e.Status != agent.ErrRunFailed || e.Message != "panic in Go callback: listener exploded" {
		t.Fatalf("Prompt: %#v", err)
	}
	// A panic at agent_end fails the run the same way, after the transcript was recorded.
	b := mustNew(t, agent.Options{ScriptedModel: script(text("abc", 1))})
	b.Subscribe(func(e agent.Event) {
		if e.Type == "agent_end" {
			panic("late listener")
		}
	})
	if _, err := b.Prompt(context.Background(), "go"); !errors.Is(err, agent.ErrRunFailed) {
		t.Fatalf("Prompt: %v", err)
	}
	if s, _ := b.State(); s.ErrorMessage != "panic in Go callback: late listener" {
		t.Fatalf("errorMessage %q", s.ErrorMessage)
	}
}

// Waiting inside a listener (on the runtime thread) would deadlock: refused, not hung.
func TestBlockingCallsInsideAListenerAreRefused(t *testing.T) {
	var a *agent.Agent
	var promptErr, waitErr error
	a = mustNew(t, agent.Options{ScriptedModel: script(text("abc", 1))})
	a.Subscribe(func(e agent.Event) {
		if e.Type == "agent_start" {
			_, promptErr = a.Prompt(context.Background(), "nested")
			waitErr = a.WaitIdle(context.Background())
		}
	})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(promptErr, agent.ErrWouldDeadlock) || !errors.Is(waitErr, agent.ErrWouldDeadlock) {
		t.Fatalf("nested Prompt: %v; WaitIdle: %v", promptErr, waitErr)
	}
}

package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

// threadLog records, for every callback, whether it ran inside Dispatch (or a pumping wait)
// on the pumping thread.
type threadLog struct {
	mu      sync.Mutex
	pumping bool // set around the pump's Dispatch / Prompt calls
	tid     int
	calls   map[string]int
	strays  []string // callbacks that ran elsewhere
}

func (l *threadLog) record(what string) {
	tid := syscall.Gettid()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pumping || tid != l.tid {
		l.strays = append(l.strays, what)
	}
	l.calls[what]++
}

func (l *threadLog) pump(on bool) {
	l.mu.Lock()
	l.pumping = on
	l.mu.Unlock()
}

func (l *threadLog) count(what string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[what]
}

// A host-pumped agent calls every callback (stream function, listener, tool, hook, consumed
// notification, run completion) only inside Dispatch, on the goroutine locked to its thread.
func TestDispatcherRunsEveryCallbackInsideDispatchOnItsThread(t *testing.T) {
	log := &threadLog{calls: map[string]int{}}
	d, err := agent.NewDispatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	requests := 0
	model := func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		log.record("stream")
		s.OnConsumed(func() { log.record("consumed") })
		requests++
		if requests == 1 { // a tool call, then a text
			for _, ev := range []string{`{"type":"start"}`,
				`{"type":"toolcall_start","contentIndex":0,"id":"c1","toolName":"probe"}`,
				`{"type":"toolcall_delta","contentIndex":0,"delta":"{}"}`,
				`{"type":"toolcall_end","contentIndex":0}`, `{"type":"done","reason":"toolUse"}`} {
				s.Push(json.RawMessage(ev))
			}
			return nil
		}
		s.Push(json.RawMessage(`{"type":"start"}`))
		s.Push(json.RawMessage(`{"type":"text_start","contentIndex":0}`))
		s.PushTextDelta(0, "pumped")
		s.Push(json.RawMessage(`{"type":"text_end","contentIndex":0}`))
		return s.Push(json.RawMessage(`{"type":"done","reason":"stop"}`))
	}
	probe := agent.NewTool("probe", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		log.record("tool")
		return agent.TextResult("probed"), nil
	})
	a := mustNew(t, agent.Options{Dispatcher: d, StreamFunc: model, Tools: []*agent.Tool{probe},
		Hooks: agent.Hooks{TransformContext: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			log.record("hook")
			return nil, nil
		}}})
	a.Subscribe(func(e agent.Event) { log.record("listener") })

	outcomes := make(chan agent.Outcome, 2)
	failures := make(chan error, 4)
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		log.mu.Lock()
		log.tid = syscall.Gettid()
		log.mu.Unlock()

		// Pumping by hand: nothing runs before Dispatch, nor inside Wait.
		run, err := a.PromptAsync("first")
		if err != nil {
			failures <- err
			return
		}
		if n := log.count("listener"); n != 0 {
			failures <- fmt.Errorf("%d listener calls before any Dispatch", n)
		}
		for {
			select {
			case <-run.Done():
				outcomes <- run.Outcome()
				// Prompt of a host-pumped agent dispatches while it waits, on this thread.
				log.pump(true)
				requests = 0
				out, err := a.Prompt(context.Background(), "second")
				log.pump(false)
				if err != nil {
					failures <- err
				}
				outcomes <- out
				return
			default:
			}
			if _, err := d.Wait(-1); err != nil {
				failures <- err
				return
			}
			log.pump(true)
			_, err := d.Dispatch(-1)
			log.pump(false)
			if err != nil {
				failures <- err
				return
			}
		}
	}()
	<-pumped
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if out := <-outcomes; out.Status != agent.RunCompleted || out.MessageCount != 4 {
			t.Fatalf("run %d: %+v", i, out)
		}
	}
	for _, what := range []string{"stream", "consumed", "tool", "hook", "listener"} {
		if log.count(what) == 0 {
			t.Errorf("no %s callback ran", what)
		}
	}
	if len(log.strays) > 0 {
		t.Fatalf("callbacks outside Dispatch or off the pumping thread: %v", log.strays)
	}
}

// Abort notifications of a host-pumped run run inside Dispatch too, on the pumping thread.
func TestDispatcherRunsAbortNotificationsInsideDispatch(t *testing.T) {
	log := &threadLog{calls: map[string]int{}}
	agent.ObserveAborts(func() { log.record("abort") })
	defer agent.ObserveAborts(nil)
	d, err := agent.NewDispatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var run *agent.Run
	var toolCause error
	stop := agent.NewTool("stop", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		log.record("tool")
		run.Abort() // its notification comes later, never inside this call
		toolCause = context.Cause(ctx)
		return agent.TextResult("stopped"), nil
	})
	a := mustNew(t, agent.Options{Dispatcher: d, Tools: []*agent.Tool{stop},
		ScriptedModel: script(toolCalls(call{"c1", "stop", map[string]any{}}), text("never", 1))})
	failures := make(chan error, 1)
	go func() {
		defer close(failures)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		log.mu.Lock()
		log.tid = syscall.Gettid()
		log.mu.Unlock()
		var err error
		if run, err = a.PromptAsync("go"); err != nil {
			failures <- err
			return
		}
		for run.Outcome().Status == agent.RunRunning {
			d.Wait(-1)
			log.pump(true)
			_, err := d.Dispatch(-1)
			log.pump(false)
			if err != nil {
				failures <- err
				return
			}
		}
	}()
	for err := range failures {
		t.Fatal(err)
	}
	if out := run.Outcome(); out.Status != agent.RunAborted {
		t.Fatalf("outcome %+v", out)
	}
	if toolCause != nil || log.count("tool") != 1 || log.count("abort") == 0 {
		t.Fatalf("tool ctx %v, calls %v", toolCause, log.calls)
	}
	if len(log.strays) > 0 {
		t.Fatalf("callbacks outside Dispatch or off the pumping thread: %v", log.strays)
	}
}

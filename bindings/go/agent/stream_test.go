package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

var deltaEvents = []string{
	`{"type":"start"}`,
	`{"type":"thinking_start","contentIndex":0}`,
	`{"type":"thinking_delta","contentIndex":0,"delta":"Plan"}`,
	`{"type":"thinking_end","contentIndex":0}`,
	`{"type":"text_start","contentIndex":1}`,
	`{"type":"text_delta","contentIndex":1,"delta":"Hel"}`,
	`{"type":"text_delta","contentIndex":1,"delta":"lo."}`,
	`{"type":"text_end","contentIndex":1}`,
	`{"type":"done","reason":"stop"}`,
}

// A producer goroutine pushes delta-form events in lock step with OnConsumed.
func TestStreamFuncPushesFromAnotherGoroutineInLockStep(t *testing.T) {
	var request atomic.Pointer[agent.StreamRequest]
	var stream atomic.Pointer[agent.Stream]
	var consumed atomic.Int64
	var producerErr atomic.Value
	var wg sync.WaitGroup
	a := mustNew(t, agent.Options{SystemPrompt: "sys", StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		request.Store(req)
		stream.Store(s)
		next := make(chan struct{}, len(deltaEvents))
		if err := s.OnConsumed(func() { consumed.Add(1); next <- struct{}{} }); err != nil {
			return err
		}
		wg.Add(1)
		go func() { // any goroutine may push
			defer wg.Done()
			for i, ev := range deltaEvents {
				if err := s.Push(json.RawMessage(ev)); err != nil {
					producerErr.Store(err)
					return
				}
				if i < len(deltaEvents)-1 {
					<-next
				}
			}
		}()
		return nil
	}})
	var text strings.Builder
	a.Subscribe(func(e agent.Event) {
		if e.UpdateType == "text_delta" {
			text.WriteString(e.Delta)
		}
	})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err, _ := producerErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Hello." || consumed.Load() < int64(len(deltaEvents)-1) {
		t.Fatalf("text %q, consumed %d", text.String(), consumed.Load())
	}
	// The run is over: its stream no longer takes events.
	if err := stream.Load().Push(map[string]string{"type": "start"}); !errors.Is(err, agent.ErrStreamClosed) {
		t.Fatalf("push after the run: %v", err)
	}
	req := request.Load()
	var model agent.Model
	json.Unmarshal(req.Model, &model)
	if model.ID != "m1" || len(req.Context.Messages) != 2 || !strings.Contains(string(req.Context.Messages[1]), "hello") ||
		!strings.Contains(string(req.Options), "identity") {
		t.Fatalf("request %s", req.Raw)
	}
	ms := transcript(t, a)
	if ms[1].text() != "Hello." || !strings.Contains(string(ms[1].Content), `"thinking":"Plan"`) {
		t.Fatalf("assistant %s", ms[1].Content)
	}
}

func TestStreamFuncFailures(t *testing.T) {
	run := func(fn agent.StreamFunc) message {
		a := mustNew(t, agent.Options{StreamFunc: fn})
		_, err := a.Prompt(context.Background(), "go")
		ms := transcript(t, a)
		last := ms[len(ms)-1]
		var failed *agent.Error // a failed stream function fails the run with its message
		failedAsExpected := errors.As(err, &failed) && failed.Status == agent.ErrModelError && failed.Message == last.Error
		if (last.StopReason == "error") != failedAsExpected || (last.StopReason != "error" && err != nil) {
			t.Fatalf("Prompt = %v, last message %+v", err, last)
		}
		return last
	}
	m := run(func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		return errors.New("provider unreachable")
	})
	if m.StopReason != "error" || m.Error != "provider unreachable" {
		t.Fatalf("error before push: %+v", m)
	}
	m = run(func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		s.Push(json.RawMessage(`{"type":"start"}`))
		s.Push(json.RawMessage(`{"type":"text_start","contentIndex":0}`))
		s.Push(json.RawMessage(`{"type":"text_delta","contentIndex":0,"delta":"half"}`))
		return errors.New("connection reset")
	})
	if m.StopReason != "error" || m.Error != "connection reset" || m.text() != "half" {
		t.Fatalf("error after push: %+v", m)
	}
	m = run(func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		panic("model exploded")
	})
	if m.StopReason != "error" || !strings.Contains(m.Error, "panic in Go callback: model exploded") {
		t.Fatalf("panic: %+v", m)
	}
	m = run(func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		if err := s.Push(json.RawMessage(`{"delta":1}`)); !errors.Is(err, agent.ErrInvalidJSON) {
			return errors.New("malformed event accepted")
		}
		final := json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"Final."}],"api":"faux",` +
			`"provider":"test","model":"m1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,` +
			`"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}`)
		if err := s.Complete(final); err != nil {
			return err
		}
		if err := s.Complete(nil); !errors.Is(err, agent.ErrAlreadyCompleted) {
			return errors.New("second answer accepted")
		}
		return nil
	})
	if m.StopReason != "stop" || m.text() != "Final." {
		t.Fatalf("complete with a final message: %+v", m)
	}
}

func TestCtxCancellationAbortsStream(t *testing.T) {
	var cause atomic.Value
	started := make(chan struct{})
	a := mustNew(t, agent.Options{StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		s.Push(json.RawMessage(`{"type":"start"}`))
		close(started)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		if !s.Aborted() {
			return errors.New("stream does not report the abort")
		}
		return s.Push(map[string]string{"type": "error", "reason": "aborted", "errorMessage": "Request was aborted"})
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := a.Prompt(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Prompt: %v", err)
	}
	if c, _ := cause.Load().(error); !errors.Is(c, agent.ErrAborted) {
		t.Fatalf("stream ctx cause = %v", c)
	}
	ms := transcript(t, a)
	if last := ms[len(ms)-1]; last.StopReason != "aborted" {
		t.Fatalf("last message %+v", last)
	}
	// A ctx that is already done starts nothing.
	if _, err := a.Prompt(ctx, "not sent"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Prompt with a done ctx: %v", err)
	}
	if len(transcript(t, a)) != len(ms) {
		t.Fatal("a run started with a done ctx")
	}
}

func TestHooks(t *testing.T) {
	var apiKeys, transforms atomic.Int64
	var requestOptions atomic.Value
	danger := agent.NewTool("danger", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		return agent.Result{}, errors.New("must not run")
	})
	safe := agent.NewTool("safe", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		return agent.TextResult("safe ran"), nil
	})
	a := mustNew(t, agent.Options{
		Tools:         []*agent.Tool{danger, safe},
		ScriptedModel: script(toolCalls(call{"c1", "danger", map[string]any{}}, call{"c2", "safe", map[string]any{}}), text("ok", 1)),
		Hooks: agent.Hooks{
			GetAPIKey: func(ctx context.Context, provider string) (string, error) {
				apiKeys.Add(1)
				if provider != "test" {
					return "", errors.New("unexpected provider " + provider)
				}
				return "key-123", nil
			},
			TransformContext: func(ctx context.Context, messages json.RawMessage) (json.RawMessage, error) {
				transforms.Add(1)
				return nil, nil // unchanged
			},
			BeforeToolCall: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				var v struct {
					ToolCall struct{ Name string } `json:"toolCall"`
				}
				json.Unmarshal(in, &v)
				if v.ToolCall.Name == "danger" {
					return json.RawMessage(`{"block":true,"reason":"not allowed"}`), nil
				}
				return nil, nil
			},
			AfterToolCall: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"details":{"audited":true}}`), nil
			},
		},
	})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	if ms[2].text() != "not allowed" || !ms[2].IsError || ms[3].text() != "safe ran" || string(ms[3].Details) != `{"audited":true}` {
		t.Fatalf("tool results %+v %+v", ms[2], ms[3])
	}
	if apiKeys.Load() != 2 || transforms.Load() != 2 {
		t.Fatalf("hook calls: getApiKey %d, transformContext %d", apiKeys.Load(), transforms.Load())
	}
	// A stream function sees the key; a failing hook fails the run; a removed hook is not called.
	a.SetStreamFunc(func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		requestOptions.Store(string(req.Options))
		return s.Push(json.RawMessage(`{"type":"done","reason":"stop"}`))
	})
	if _, err := a.Prompt(context.Background(), "key?"); err != nil {
		t.Fatal(err)
	}
	if o, _ := requestOptions.Load().(string); !strings.Contains(o, `"apiKey":"key-123"`) {
		t.Fatalf("request options %s", o)
	}
	a.SetHook(agent.HookGetAPIKey, nil)
	a.SetHook(agent.HookPrepareRequest, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("prepare failed")
	})
	calls := apiKeys.Load()
	if _, err := a.Prompt(context.Background(), "again"); !errors.Is(err, agent.ErrModelError) ||
		!strings.Contains(err.Error(), "prepare failed") {
		t.Fatalf("Prompt = %v", err)
	}
	if s, _ := a.State(); s.ErrorMessage != "prepare failed" {
		t.Fatalf("errorMessage %q", s.ErrorMessage)
	}
	if apiKeys.Load() != calls {
		t.Fatal("a removed hook was called")
	}
	// A panicking hook fails the run too.
	a.SetHook(agent.HookPrepareRequest, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		panic("hook exploded")
	})
	if _, err := a.Prompt(context.Background(), "panic"); !errors.Is(err, agent.ErrModelError) {
		t.Fatalf("Prompt = %v", err)
	}
	if s, _ := a.State(); s.ErrorMessage != "panic in Go callback: hook exploded" {
		t.Fatalf("errorMessage %q", s.ErrorMessage)
	}
	// A hook answering malformed JSON fails its call with the library's text.
	a.SetHook(agent.HookPrepareRequest, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`[1]`), nil
	})
	if _, err := a.Prompt(context.Background(), "malformed"); !errors.Is(err, agent.ErrModelError) {
		t.Fatalf("Prompt = %v", err)
	}
	if s, _ := a.State(); !strings.Contains(s.ErrorMessage, "hook answer rejected") || !strings.Contains(s.ErrorMessage, "JSON object") {
		t.Fatalf("errorMessage %q", s.ErrorMessage)
	}
}

func TestProcessWideDefaultModel(t *testing.T) {
	defer agent.SetDefaultStreamFunc(nil)
	if err := agent.SetDefaultScriptedModel(json.RawMessage(`{}`)); !errors.Is(err, agent.ErrInvalidJSON) {
		t.Fatalf("bad default script: %v", err)
	}
	if err := agent.SetDefaultScriptedModel(script(text("from the default", 1))); err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, agent.Options{})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if ms := transcript(t, a); ms[1].text() != "from the default" {
		t.Fatalf("transcript %+v", ms)
	}
	before := agent.LiveRegistrations()
	if err := agent.SetDefaultStreamFunc(quickModel); err != nil {
		t.Fatal(err)
	}
	b := mustNew(t, agent.Options{}) // captures the Go default
	if _, err := b.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if ms := transcript(t, b); ms[1].text() != "ok" {
		t.Fatalf("transcript %+v", ms)
	}
	if err := agent.SetDefaultStreamFunc(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.New(agent.Options{}); !errors.Is(err, agent.ErrNoStreamFn) {
		t.Fatalf("New without any model: %v", err)
	}
	b.Close() // the last holder of the Go default
	eventually(t, "the default's handle to be released", func() bool { return agent.LiveRegistrations() == before })
}

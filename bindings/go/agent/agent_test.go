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

func TestVersionMatchesCrate(t *testing.T) {
	if got, want := agent.Version(), cargoVersion(t); got != want {
		t.Fatalf("Version() = %q, want %q", got, want)
	}
	if err := agent.CheckVersion(); err != nil {
		t.Fatalf("CheckVersion: %v", err)
	}
}

func TestPromptStreamsTextAndRecordsTranscript(t *testing.T) {
	a := mustNew(t, agent.Options{SystemPrompt: "Be brief.", ScriptedModel: script(text("Hello there, human.", 4))})
	var deltas []string
	var types []string
	a.Subscribe(func(e agent.Event) {
		types = append(types, e.Type)
		if e.UpdateType == "text_delta" {
			deltas = append(deltas, e.Delta)
		}
		if e.JSON != nil {
			t.Errorf("event JSON %q built though no EventShape asked for it", e.JSON)
		}
		var head struct{ Type string }
		if err := e.Decode(&head); err != nil || head.Type != e.Type { // JSON on request
			t.Errorf("Decode in the listener: %v, type %q, want %q", err, head.Type, e.Type)
		}
	})
	outcome, err := a.Prompt(context.Background(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if outcome != (agent.Outcome{Status: agent.RunCompleted, StopReason: "stop", MessageCount: 2}) {
		t.Fatalf("outcome = %+v", outcome)
	}
	if len(deltas) != 4 || strings.Join(deltas, "") != "Hello there, human." {
		t.Fatalf("deltas = %q", deltas)
	}
	if types[0] != "agent_start" || types[len(types)-1] != "agent_end" {
		t.Fatalf("event types = %v", types)
	}
	ms := fullTranscript(t, a)
	if roles(ms) != "system,user,assistant" || ms[0].text() != "Be brief." || ms[1].text() != "hi" ||
		ms[2].text() != "Hello there, human." || ms[2].StopReason != "stop" {
		t.Fatalf("transcript = %+v", ms)
	}
}

func TestNewFailsWithStatusAndMessage(t *testing.T) {
	_, err := agent.New(agent.Options{})
	var e *agent.Error
	if !errors.As(err, &e) || e.Status != agent.ErrNoStreamFn || !strings.Contains(e.Message, "No model to talk to") {
		t.Fatalf("New without a model: %#v", err)
	}
	if !errors.Is(err, agent.ErrNoStreamFn) || errors.Is(err, agent.ErrBusy) {
		t.Fatalf("errors.Is on %v", err)
	}
	_, err = agent.New(agent.Options{ScriptedModel: json.RawMessage(`{"not":"an array"}`)})
	if !errors.Is(err, agent.ErrInvalidJSON) || !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("bad script: %#v", err)
	}
	_, err = agent.New(agent.Options{ScriptedModel: script(), Tools: []*agent.Tool{{Name: "x"}}})
	if !errors.Is(err, agent.ErrNull) {
		t.Fatalf("tool without Execute: %v", err)
	}
	if agent.LiveHandles() < 0 || agent.FinalizerMisuses() != 0 {
		t.Fatal("handle accounting broken")
	}
}

func TestErrorValuesCarryStatusAndLibraryText(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: script()})
	cases := []struct {
		err    error
		status agent.Status
		text   string
	}{
		{a.Steer(json.RawMessage(`{"content":"x"}`)), agent.ErrInvalidJSON, "the message must be a message"},
		{a.FollowUp(json.RawMessage(`nope`)), agent.ErrInvalidJSON, "the message is not valid JSON"},
		{a.SetMessages([]json.RawMessage{json.RawMessage(`{"role":1}`)}), agent.ErrInvalidJSON, "messages[0] must be a message"},
		{errOf(a.Continue(context.Background())), agent.ErrInvalidState, "No messages to continue from"},
		{a.SetHook(agent.HookKind(10), func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }),
			agent.ErrInvalidArgument, "Unknown hook kind 10"},
		{a.Configure(map[string]any{"bogus": 1}), agent.ErrInvalidJSON, "bogus"},
	}
	for i, c := range cases {
		var e *agent.Error
		if !errors.As(c.err, &e) || e.Status != c.status || !strings.Contains(e.Message, c.text) {
			t.Errorf("case %d: got %#v, want status %v with %q", i, c.err, c.status, c.text)
			continue
		}
		if !errors.Is(c.err, c.status) || !strings.Contains(c.err.Error(), c.text) {
			t.Errorf("case %d: errors.Is / Error() wrong: %v", i, c.err)
		}
	}
}

// Errors are owned per call; goroutines move between OS threads. Many
// goroutines failing differently at once must each get their own message.
func TestErrorTextBelongsToTheFailingCall(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: script()})
	ops := []struct {
		run  func() error
		text string
	}{
		{func() error { return a.Steer(json.RawMessage(`{"content":"x"}`)) }, "the message must be a message"},
		{func() error { return a.FollowUp(json.RawMessage(`[`)) }, "the message is not valid JSON"},
		{func() error { return a.SetMessages([]json.RawMessage{json.RawMessage(`{"role":1}`)}) }, "messages[0] must be a message"},
		{func() error { return errOf(a.Continue(context.Background())) }, "No messages to continue from"},
		{func() error { _, err := a.State(); return err }, ""}, // successes in between
	}
	var wg sync.WaitGroup
	var failures atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				op := ops[(g+i)%len(ops)]
				err := op.run()
				if op.text == "" {
					if err != nil {
						failures.Add(1)
					}
					continue
				}
				var e *agent.Error
				if !errors.As(err, &e) || !strings.Contains(e.Message, op.text) {
					failures.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d calls got another call's error text (or none)", n)
	}
}

func TestBusyWhileARunIsActive(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	a := mustNew(t, agent.Options{StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		close(started)
		<-release
		return s.Complete(nil)
	}})
	done, err := a.PromptAsync("first")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := a.Prompt(context.Background(), "second"); !errors.Is(err, agent.ErrBusy) ||
		!strings.Contains(err.Error(), "Agent is already processing") {
		t.Fatalf("second prompt: %v", err)
	}
	if err := a.Reset(); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("reset: %v", err)
	}
	s, _ := a.State()
	if !s.IsStreaming {
		t.Fatal("state: not streaming during the run")
	}
	close(release)
	if err := settled(done); !errors.Is(err, agent.ErrModelError) ||
		!strings.Contains(err.Error(), "Stream ended without a done or error event") {
		t.Fatalf("run = %v", err)
	}
	ms := transcript(t, a)
	if last := ms[len(ms)-1]; last.StopReason != "error" { // ended without a message (SPEC 3.5)
		t.Fatalf("last = %+v", last)
	}
}

func TestStateDecodesEveryField(t *testing.T) {
	retry := int64(1500)
	a := mustNew(t, agent.Options{
		SystemPrompt: "sys", ThinkingLevel: agent.ThinkingHigh, ScriptedModel: script(),
		SteeringMode: agent.QueueAll, FollowUpMode: agent.QueueOneAtATime, ToolExecution: agent.ToolsSequential,
		SessionID: "s-1", Transport: "sse", MaxRetryDelayMs: &retry,
		Tools: []*agent.Tool{agent.NewTool("echo", "Echo", json.RawMessage(`{"type":"object"}`),
			func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) { return agent.TextResult("x"), nil })},
		Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"earlier","timestamp":1}`)},
	})
	s, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	var model agent.Model
	json.Unmarshal(s.Model, &model)
	if s.SystemPrompt != "sys" || model.ID != "m1" || s.ThinkingLevel != agent.ThinkingHigh ||
		s.SteeringMode != agent.QueueAll || s.FollowUpMode != agent.QueueOneAtATime ||
		s.ToolExecution != agent.ToolsSequential || s.SessionID != "s-1" || s.Transport != "sse" ||
		s.MaxRetryDelayMs == nil || *s.MaxRetryDelayMs != 1500 || s.IsStreaming ||
		len(s.Tools) != 1 || s.Tools[0].Name != "echo" || s.Tools[0].Description != "Echo" {
		t.Fatalf("state = %+v", s)
	}
	if len(s.Messages) != 2 || !strings.Contains(string(s.Messages[1]), "earlier") {
		t.Fatalf("messages = %s", s.Messages)
	}
	if err := a.SetThinkingLevel(agent.ThinkingLow); err != nil {
		t.Fatal(err)
	}
	if err := a.SetModel(agent.Model{ID: "m2", API: "faux", Provider: "test"}); err != nil {
		t.Fatal(err)
	}
	s, _ = a.State()
	json.Unmarshal(s.Model, &model)
	if s.ThinkingLevel != agent.ThinkingLow || model.ID != "m2" {
		t.Fatalf("after configure: %+v", s)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if ms := fullTranscript(t, a); roles(ms) != "system" {
		t.Fatalf("after reset: %v", roles(ms))
	}
}

func TestQueuesSteerAndFollowUp(t *testing.T) {
	var a *agent.Agent
	steered := false
	a = mustNew(t, agent.Options{ScriptedModel: script(text("One.", 2), text("Two.", 1), text("Three.", 1))})
	a.Subscribe(func(e agent.Event) {
		if e.UpdateType == "text_delta" && !steered {
			steered = true
			if err := a.Steer(agent.UserMessage("steer now")); err != nil { // from inside a listener
				t.Error(err)
			}
		}
	})
	if err := a.FollowUp(agent.UserMessage("and then?")); err != nil {
		t.Fatal(err)
	}
	if has, err := a.HasQueuedMessages(); err != nil || !has {
		t.Fatalf("has queued: %v %v", has, err)
	}
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	want := "user,assistant,user,assistant,user,assistant"
	if roles(ms) != want || ms[2].text() != "steer now" || ms[4].text() != "and then?" || ms[5].text() != "Three." {
		t.Fatalf("transcript %s: %+v", roles(ms), ms)
	}
	a.Steer(agent.UserMessage("s1"))
	a.FollowUp(agent.UserMessage("f1"))
	q, err := a.QueuedMessages()
	if err != nil || len(q) != 1 || !strings.Contains(string(q[0]), "s1") {
		t.Fatalf("peek: %s %v", q, err)
	}
	a.ClearSteeringQueue()
	q, _ = a.QueuedMessages()
	if len(q) != 1 || !strings.Contains(string(q[0]), "f1") {
		t.Fatalf("peek after clearing steering: %s", q)
	}
	a.ClearAllQueues()
	if has, _ := a.HasQueuedMessages(); has {
		t.Fatal("queues not cleared")
	}
}

func TestContinueFromUserTail(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: script(text("Continued.", 1))})
	if err := a.SetMessages([]json.RawMessage{agent.UserMessage("pending question")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Continue(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	if roles(ms) != "user,assistant" || ms[1].text() != "Continued." {
		t.Fatalf("transcript %+v", ms)
	}
	_, err := a.Continue(context.Background())
	if !errors.Is(err, agent.ErrInvalidState) || !strings.Contains(err.Error(), "Cannot continue from message role: assistant") {
		t.Fatalf("continue from assistant: %v", err)
	}
}

func TestPromptWithImagesAndMessages(t *testing.T) {
	var requests []string
	var mu sync.Mutex
	a := mustNew(t, agent.Options{StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		mu.Lock()
		requests = append(requests, string(req.Raw))
		mu.Unlock()
		s.Push(map[string]any{"type": "start"})
		return s.Push(map[string]any{"type": "done", "reason": "stop"})
	}})
	if _, err := a.Prompt(context.Background(), "look\x00here", agent.Image{Data: "aGk=", MimeType: "image/png"}); !errors.Is(err, agent.ErrInvalidArgument) {
		t.Fatalf("NUL with images: %v", err)
	}
	if _, err := a.Prompt(context.Background(), "look", agent.Image{Data: "aGk=", MimeType: "image/png"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(context.Background(), "nul\x00inside"); err != nil { // sent as a JSON string
		t.Fatal(err)
	}
	if _, err := a.PromptMessages(context.Background(), map[string]any{"role": "user", "content": "as a message", "timestamp": 5},
		json.RawMessage(`{"role":"note","text":"custom","timestamp":6}`)); err != nil {
		t.Fatal(err)
	}
	if len(requests) != 3 || !strings.Contains(requests[0], `{"type":"image","data":"aGk=","mimeType":"image/png"}`) ||
		!strings.Contains(requests[1], `nul\u0000inside`) || !strings.Contains(requests[2], "as a message") {
		t.Fatalf("requests = %q", requests)
	}
	ms := transcript(t, a)
	if !strings.Contains(roles(ms), "note") {
		t.Fatalf("custom message missing: %s", roles(ms))
	}
}

func TestRuntimeIsConfiguredOnlyBeforeFirstUse(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: script(text("a", 1))})
	if _, err := a.Prompt(context.Background(), "go"); err != nil { // the runtime is running now
		t.Fatal(err)
	}
	err := agent.ConfigureRuntime(4)
	var e *agent.Error
	if !errors.As(err, &e) || e.Status != agent.ErrInvalidState || e.Message == "" {
		t.Fatalf("ConfigureRuntime after first use: %#v", err)
	}
}

func TestWaitIdleFollowsTheRunAndTheContext(t *testing.T) {
	release := make(chan struct{})
	a := mustNew(t, agent.Options{StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		<-release
		return s.Push(json.RawMessage(`{"type":"done","reason":"stop"}`))
	}})
	if err := a.WaitIdle(context.Background()); err != nil {
		t.Fatalf("idle agent: %v", err)
	}
	done, err := a.PromptAsync("go")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.WaitIdle(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitIdle with a done ctx during a run: %v", err)
	}
	close(release)
	if err := a.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done.Done(): // settled before WaitIdle returned
		if err := done.Err(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("WaitIdle returned before the run's outcome was delivered")
	}
}

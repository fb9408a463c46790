package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

// Context management (issue 27) through the Go binding: Options.Compaction / Options.Retry,
// Hooks.Compact, Compact / CompactAsync and the typed compaction and retry events.

var windowedModel = agent.Model{ID: "m1", API: "faux", Provider: "test", ContextWindow: 200000}

// history is four exchanges, enough for a compaction that keeps 20 tokens.
func history() []json.RawMessage {
	var out []json.RawMessage
	for i := 1; i <= 4; i++ {
		out = append(out,
			json.RawMessage(fmt.Sprintf(`{"role":"user","content":"question %d with enough words to be summarized","timestamp":1}`, i)),
			json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"answer %d with enough words too"}],`+
				`"api":"faux","provider":"test","model":"m1","stopReason":"stop","timestamp":1}`, i)))
	}
	return out
}

func failed(message string) map[string]any {
	return map[string]any{"content": []any{}, "stopReason": "error", "errorMessage": message}
}

const overflowText = "prompt is too long: 213462 tokens > 200000 maximum"

// contextEvents records the compaction and retry events a listener saw.
type contextEvents struct {
	mu     sync.Mutex
	events []agent.Event
}

func (c *contextEvents) listen(e agent.Event) {
	if e.Compaction != nil || e.Retry != nil {
		c.mu.Lock()
		c.events = append(c.events, e)
		c.mu.Unlock()
	}
}

func (c *contextEvents) types() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.events {
		out = append(out, e.Type)
	}
	return out
}

// summaryHook answers the compact hook with `answer` (nil: the agent's own model), counting calls.
type summaryHook struct {
	mu     sync.Mutex
	calls  int
	inputs []string
	answer json.RawMessage
}

func (h *summaryHook) fn(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	h.inputs = append(h.inputs, string(input))
	return h.answer, nil
}

func contextOptions(hook *summaryHook, responses ...map[string]any) agent.Options {
	return agent.Options{
		SystemPrompt:  "Be terse.",
		Model:         windowedModel,
		Messages:      history(),
		ScriptedModel: script(responses...),
		Hooks:         agent.Hooks{Compact: hook.fn},
		Compaction:    &agent.CompactionOptions{Enabled: true, KeepRecentTokens: 20},
		Retry:         &agent.RetryOptions{Enabled: true, BaseDelayMs: 1, MaxDelayMs: 2},
	}
}

func transcriptText(t *testing.T, a *agent.Agent) string {
	t.Helper()
	state, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range state.Messages {
		b.Write(m)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestAnOverflowIsRecoveredByOneCompactionThroughTheHook(t *testing.T) {
	hook := &summaryHook{answer: json.RawMessage(`{"summary":"The user asked four questions."}`)}
	a := mustNew(t, contextOptions(hook, failed(overflowText), text("done", 1)))
	var seen contextEvents
	a.Subscribe(seen.listen)
	outcome, err := a.Prompt(context.Background(), "and now?")
	if err != nil || outcome.StopReason != "stop" {
		t.Fatalf("Prompt: %v %+v", err, outcome)
	}
	if hook.calls != 1 || !strings.Contains(hook.inputs[0], `"reason":"overflow"`) {
		t.Fatalf("the hook was asked %d times: %v", hook.calls, hook.inputs)
	}
	if got := strings.Join(seen.types(), ","); got != "compaction_start,compaction_end" {
		t.Fatalf("events: %s", got)
	}
	start, end := seen.events[0].Compaction, seen.events[1].Compaction
	if start.Reason != "overflow" || end.Reason != "overflow" || !end.WillRetry || end.Aborted || end.ErrorMessage != "" {
		t.Fatalf("compaction events: %+v %+v", start, end)
	}
	if end.Result == nil || end.Result.Summary != "The user asked four questions." || end.Result.TokensBefore <= 0 ||
		end.Result.EstimatedTokensAfter <= 0 || end.Result.FirstKeptEntryID == "" {
		t.Fatalf("compaction result: %+v", end.Result)
	}
	if !strings.Contains(string(seen.events[1].JSON), `"type":"compaction_end"`) {
		t.Fatalf("JSON: %s", seen.events[1].JSON)
	}
	messages := transcriptText(t, a)
	if !strings.Contains(messages, `"role":"compactionSummary"`) || strings.Contains(messages, "prompt is too long") {
		t.Fatalf("transcript after the recovery:\n%s", messages)
	}
}

func TestAnOverloadedErrorIsRetriedOnce(t *testing.T) {
	hook := &summaryHook{}
	a := mustNew(t, contextOptions(hook, failed("529 overloaded_error: Overloaded"), text("done", 1)))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	events := a.Events(ctx) // the pull queue carries the typed events too
	var seen contextEvents
	a.Subscribe(seen.listen)
	if _, err := a.Prompt(context.Background(), "and now?"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen.types(), ","); got != "auto_retry_start,auto_retry_end" {
		t.Fatalf("events: %s", got)
	}
	start, end := seen.events[0].Retry, seen.events[1].Retry
	if start.Attempt != 1 || start.MaxAttempts != 3 || start.DelayMs != 1 || !strings.Contains(start.ErrorMessage, "overloaded") {
		t.Fatalf("auto_retry_start: %+v", start)
	}
	if !end.Success || end.Attempt != 1 || end.FinalError != "" {
		t.Fatalf("auto_retry_end: %+v", end)
	}
	if hook.calls != 0 {
		t.Fatalf("a retry compacted: %d hook calls", hook.calls)
	}
	if messages := transcriptText(t, a); strings.Contains(messages, "overloaded_error") {
		t.Fatalf("the failed attempt stayed:\n%s", messages)
	}
	for e := range events {
		if e.Retry != nil {
			if e.Type != "auto_retry_start" || e.Retry.DelayMs != 1 {
				t.Fatalf("queued retry event: %+v %+v", e, e.Retry)
			}
			return
		}
	}
	t.Fatal("no retry event came through Events")
}

func TestWithoutTheOptionsNothingIsRetried(t *testing.T) {
	hook := &summaryHook{}
	opts := contextOptions(hook, failed("529 overloaded_error: Overloaded"), text("done", 1))
	opts.Retry, opts.Compaction = nil, nil // the library's default: off
	a := mustNew(t, opts)
	_, err := a.Prompt(context.Background(), "and now?")
	var e *agent.Error
	if !errors.As(err, &e) || e.Status != agent.ErrModelError || !strings.Contains(e.Message, "overloaded") {
		t.Fatalf("Prompt: %v", err)
	}
}

func TestCompactWithAFocus(t *testing.T) {
	hook := &summaryHook{answer: json.RawMessage(`{"summary":"Four questions, answered.","details":{"note":1}}`)}
	a := mustNew(t, contextOptions(hook, text("done", 1)))
	var seen contextEvents
	a.Subscribe(seen.listen)
	before := len(history())
	outcome, err := a.Compact(context.Background(), "keep the API design")
	if err != nil || outcome.Status != agent.RunCompleted {
		t.Fatalf("Compact: %v %+v", err, outcome)
	}
	if !strings.Contains(hook.inputs[0], `"reason":"manual"`) || !strings.Contains(hook.inputs[0], `"focus":"keep the API design"`) {
		t.Fatalf("hook input: %s", hook.inputs[0])
	}
	state, _ := a.State()
	if len(state.Messages) >= before {
		t.Fatalf("%d messages after compacting %d", len(state.Messages), before)
	}
	if got := strings.Join(seen.types(), ","); got != "compaction_start,compaction_end" {
		t.Fatalf("events: %s", got)
	}
	if end := seen.events[1].Compaction; end.Reason != "manual" || string(end.Result.Details) != `{"note":1}` {
		t.Fatalf("compaction_end: %+v %+v", end, end.Result)
	}

	// Nothing older than the kept part is left: the run fails, saying so.
	run, err := a.CompactAsync("")
	if err != nil {
		t.Fatal(err)
	}
	outcome, err = run.Wait(context.Background())
	if !errors.Is(err, agent.ErrRunFailed) || !strings.Contains(outcome.ErrorMessage, "Nothing to compact") {
		t.Fatalf("second Compact: %v %+v", err, outcome)
	}
}

func TestACancellingHookLeavesTheTranscript(t *testing.T) {
	hook := &summaryHook{answer: json.RawMessage(`{"cancel":true}`)}
	a := mustNew(t, contextOptions(hook, text("done", 1)))
	before := transcriptText(t, a)
	_, err := a.Compact(context.Background(), "")
	if !errors.Is(err, agent.ErrAborted) {
		t.Fatalf("Compact: %v", err)
	}
	if strings.Contains(hook.inputs[0], `"focus"`) {
		t.Fatalf("an empty focus was sent: %s", hook.inputs[0])
	}
	if after := transcriptText(t, a); after != before {
		t.Fatalf("the transcript changed:\n%s\n%s", before, after)
	}
}

func TestCompactingDuringARunIsBusy(t *testing.T) {
	a := mustNew(t, contextOptions(&summaryHook{}, map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "x"}}, "waitForAbort": true}))
	run, err := a.PromptAsync("hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CompactAsync("x"); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("CompactAsync during a run: %v", err)
	}
	run.Abort()
	run.Wait(context.Background())
}

func TestAContextOptionErrorNamesTheGoField(t *testing.T) {
	opts := contextOptions(&summaryHook{}, text("done", 1))
	opts.Retry = &agent.RetryOptions{Enabled: true, BaseDelayMs: -5}
	_, err := agent.New(opts)
	var e *agent.Error
	if !errors.As(err, &e) || e.Status != agent.ErrInvalidJSON || !strings.Contains(e.Message, "Options.Retry.BaseDelayMs") {
		t.Fatalf("New: %v", err)
	}
}

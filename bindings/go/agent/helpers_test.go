package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/libagent/libagent/bindings/go/agent"
)

// Generous: only keeps a broken test from hanging; no assertion depends on time.
const patience = 30 * time.Second

var testModel = agent.Model{ID: "m1", API: "faux", Provider: "test"}

// text is a scripted response streaming `s` in `chunks` deltas.
func text(s string, chunks int) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s, "chunks": chunks}}}
}

// toolCalls is a scripted response calling tools: id -> name, args.
type call struct {
	id, name string
	args     any
}

func toolCalls(calls ...call) map[string]any {
	content := []any{}
	for _, c := range calls {
		content = append(content, map[string]any{"type": "toolCall", "id": c.id, "name": c.name, "arguments": c.args})
	}
	return map[string]any{"content": content}
}

func script(responses ...map[string]any) []map[string]any {
	return append([]map[string]any{}, responses...)
}

func mustNew(t testing.TB, opts agent.Options) *agent.Agent {
	t.Helper()
	if opts.Model == nil {
		opts.Model = testModel
	}
	a, err := agent.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// eventually polls cond (with GC, so that finalizers and cleanups get their chance).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
	}
}

// message is the decoded view of a transcript message the tests look at.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stopReason"`
	Error      string          `json:"errorMessage"`
	IsError    bool            `json:"isError"`
	ToolName   string          `json:"toolName"`
	Details    json.RawMessage `json:"details"`
}

func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	json.Unmarshal(m.Content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "")
}

// transcript is the conversation without system messages (prompt and tool declarations).
func transcript(t testing.TB, a *agent.Agent) []message {
	t.Helper()
	var out []message
	for _, m := range fullTranscript(t, a) {
		if m.Role != "system" {
			out = append(out, m)
		}
	}
	return out
}

func fullTranscript(t testing.TB, a *agent.Agent) []message {
	t.Helper()
	s, err := a.State()
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	out := make([]message, len(s.Messages))
	for i, raw := range s.Messages {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	return out
}

func roles(ms []message) string {
	var r []string
	for _, m := range ms {
		r = append(r, m.Role)
	}
	return strings.Join(r, ",")
}

func cargoVersion(t testing.TB) string {
	b, err := os.ReadFile("../../../Cargo.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "version = ") {
			return strings.Trim(strings.TrimPrefix(line, "version = "), `"`)
		}
	}
	t.Fatal("no version in Cargo.toml")
	return ""
}

// errOf keeps the error of a run's (Outcome, error).
func errOf(_ agent.Outcome, err error) error { return err }

// settled waits for an asynchronous run and returns its error as Prompt would.
func settled(r *agent.Run) error {
	_, err := r.Wait(context.Background())
	return err
}

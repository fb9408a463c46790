package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libagent/libagent/bindings/go/agent"
)

func TestCodingToolsAskBeforeWritingAndStayInTheRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	tools, err := agent.CodingTools(root, agent.CodingOptions{
		Consent: func(ctx context.Context, tool string, args json.RawMessage) error {
			mu.Lock()
			asked = append(asked, tool)
			mu.Unlock()
			if tool == "write" {
				return errors.New("Writing is not allowed here.")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, name string, args any) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}}}
	}
	script := []any{
		call("c1", "write", map[string]any{"path": "b.txt", "content": "x"}),
		call("c2", "edit", map[string]any{"path": "a.txt", "edits": []any{map[string]any{"oldText": "hello", "newText": "bye"}}}),
		call("c3", "read", map[string]any{"path": "../outside.txt"}),
		map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}},
	}
	a, err := agent.New(agent.Options{Tools: tools, ScriptedModel: script})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	raw, err := a.StateJSON()
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"toolCallId"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, v := range state.Messages {
		if v.Role == "toolResult" {
			var blocks []struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(v.Content, &blocks); err != nil {
				t.Fatal(err)
			}
			texts[v.ToolCallID] = blocks[0].Text
		}
	}
	if texts["c1"] != "Writing is not allowed here." {
		t.Errorf("write: %q", texts["c1"])
	}
	if texts["c2"] != "Successfully replaced 1 block(s) in a.txt." {
		t.Errorf("edit: %q", texts["c2"])
	}
	if !strings.Contains(texts["c3"], "outside the root directory") {
		t.Errorf("read outside: %q", texts["c3"])
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, ",") != "write,edit" {
		t.Errorf("asked: %v", asked)
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt was written")
	}
	got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
	if string(got) != "bye\n" {
		t.Errorf("a.txt: %q", got)
	}
}

func TestCodingToolsCheckTheirOptions(t *testing.T) {
	if _, err := agent.CodingTools(t.TempDir(), agent.CodingOptions{Tools: []string{"bash"}}); err == nil ||
		!strings.Contains(err.Error(), "bash tool is disabled") {
		t.Errorf("bash without Bash: %v", err)
	}
	if _, err := agent.CodingTools(filepath.Join(t.TempDir(), "missing"), agent.CodingOptions{}); err == nil ||
		!strings.Contains(err.Error(), "Cannot open the coding root") {
		t.Errorf("missing root: %v", err)
	}
	tools, err := agent.CodingTools(t.TempDir(), agent.CodingOptions{Bash: true})
	if err != nil || len(tools) != 7 || tools[6].Name != "bash" {
		t.Errorf("with bash: %v %v", len(tools), err)
	}
}

// A file hard-linked into the root from outside is read by default; RefuseHardLinks refuses it.
func TestCodingToolsRefuseHardLinksWhenAsked(t *testing.T) {
	outer := t.TempDir()
	root := filepath.Join(outer, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outer, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(root, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	readLinked := func(refuse bool) message {
		tools, err := agent.CodingTools(root, agent.CodingOptions{Tools: []string{"read"}, RefuseHardLinks: refuse})
		if err != nil {
			t.Fatal(err)
		}
		a := mustNew(t, agent.Options{Tools: tools, ScriptedModel: script(
			toolCalls(call{"c1", "read", map[string]any{"path": "linked.txt"}}), text("done", 1))})
		if _, err := a.Prompt(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
		for _, m := range transcript(t, a) {
			if m.Role == "toolResult" {
				return m
			}
		}
		t.Fatal("no tool result")
		return message{}
	}
	if got := readLinked(false); got.IsError || got.text() != "secret needle\n" {
		t.Errorf("default: %v %q", got.IsError, got.text())
	}
	got := readLinked(true)
	if !got.IsError || !strings.Contains(got.text(), "linked.txt has 2 hard links") || strings.Contains(got.text(), "secret") {
		t.Errorf("refused: %v %q", got.IsError, got.text())
	}
}

// A consent waiting for its user runs on a goroutine of its own: another agent's prompt
// finishes meanwhile, while the consent still waits.
func TestABlockingConsentLeavesOtherAgentsRunning(t *testing.T) {
	asking, answer, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	tools, err := agent.CodingTools(t.TempDir(), agent.CodingOptions{
		Consent: func(ctx context.Context, tool string, args json.RawMessage) error {
			defer close(returned)
			close(asking)
			select {
			case <-answer:
			case <-time.After(2 * time.Second):
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	blocked := mustNew(t, agent.Options{Tools: tools, ScriptedModel: script(
		toolCalls(call{"w1", "write", map[string]any{"path": "a.txt", "content": "a"}}), text("written", 1))})
	other := mustNew(t, agent.Options{ScriptedModel: script(text("warm", 1), text("quick", 1))})
	if _, err := other.Prompt(context.Background(), "warm up"); err != nil {
		t.Fatal(err)
	}
	run, err := blocked.PromptAsync("write")
	if err != nil {
		t.Fatal(err)
	}
	<-asking
	began := time.Now()
	if _, err := other.Prompt(context.Background(), "meanwhile"); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(began)
	select {
	case <-returned:
		t.Fatalf("another agent's prompt waited for the consent (%v)", elapsed)
	default:
	}
	close(answer)
	if err := settled(run); err != nil {
		t.Fatal(err)
	}
}

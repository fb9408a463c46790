// The libagent quickstart in Go: a multi-turn agent with a system prompt and two real tools
// (list a directory, read a file), answered by the built-in scripted model, which decides to
// call both tools in parallel. Streamed text is printed as it arrives; tool calls and results
// are shown; a short transcript summary ends the run. Run it from the repository root:
//
//	make example-go
//
// To use a real model, replace ScriptedModel with a StreamFunc (see realModel below).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/libagent/libagent/bindings/go/agent"
)

type pathArgs struct {
	Path string `json:"path" jsonschema:"description=A path relative to the working directory"`
}

var listDir = agent.NewTypedTool("list_dir", "List a directory", func(ctx context.Context, a pathArgs) (agent.Result, error) {
	entries, err := os.ReadDir(a.Path)
	if err != nil {
		return agent.Result{}, err // becomes an error tool result the model sees
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return agent.TextResult(strings.Join(names, "\n")), nil
})

var readFile = agent.NewTypedTool("read_file", "Read a file", func(ctx context.Context, a pathArgs) (agent.Result, error) {
	data, err := os.ReadFile(a.Path)
	if err != nil {
		return agent.Result{}, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	return agent.TextResult(strings.Join(lines[:min(6, len(lines))], "")), nil
})

// The scripted model's answers: one response per request.
var script = []any{
	map[string]any{"content": []any{
		map[string]any{"type": "text", "text": "Let me look at the project: its files and its README.", "chunks": 6},
		map[string]any{"type": "toolCall", "id": "call_1", "name": "list_dir", "arguments": map[string]any{"path": "."}},
		map[string]any{"type": "toolCall", "id": "call_2", "name": "read_file", "arguments": map[string]any{"path": "README.md"}, "chunks": 3},
	}},
	map[string]any{"content": []any{map[string]any{"type": "text", "chunks": 8, "text": "This is libagent: a Rust agent runtime with a C ABI. " +
		"The listing shows its sources, tests and examples; the README explains how to run the demo and the tests."}}},
}

func main() {
	a, err := agent.New(agent.Options{
		SystemPrompt:  "You are a helpful project guide.",
		Model:         agent.Model{ID: "scripted", API: "faux", Provider: "libagent"},
		Tools:         []*agent.Tool{listDir, readFile},
		ScriptedModel: script, // a real model: StreamFunc: realModel
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "libagent error:", err)
		os.Exit(1)
	}
	defer a.Close()

	// Listeners run on the library's thread, in order: keep them quick. Events carry their
	// type, delta and tool names as fields; Decode builds an event's JSON only when asked.
	a.Subscribe(func(e agent.Event) {
		switch {
		case e.UpdateType == "text_delta":
			fmt.Print(e.Delta)
		case e.Type == "tool_execution_start":
			var v struct {
				Args json.RawMessage `json:"args"`
			}
			e.Decode(&v)
			fmt.Printf("  -> %s %s\n", e.ToolName, v.Args)
		case e.Type == "tool_execution_end":
			var v struct {
				Result agent.Result `json:"result"`
			}
			e.Decode(&v)
			text := strings.ReplaceAll(v.Result.Content[0].Text, "\n", " | ")
			fmt.Printf("  <- %s: %.70s...\n", e.ToolName, text)
		case e.Type == "message_end":
			var v struct {
				Message struct{ Role string } `json:"message"`
			}
			if e.Decode(&v); v.Message.Role == "assistant" {
				fmt.Println()
			}
		}
	})

	fmt.Println("> What is this project?")
	if _, err := a.Prompt(context.Background(), "What is this project?"); err != nil {
		fmt.Fprintln(os.Stderr, "libagent error:", err)
		os.Exit(1)
	}
	state, err := a.State()
	if err != nil {
		fmt.Fprintln(os.Stderr, "libagent error:", err)
		os.Exit(1)
	}
	fmt.Printf("Transcript: %d messages (system prompt, user, assistant with 2 tool calls, 2 tool results, assistant).\n",
		len(state.Messages))
}

// realModel sketches a stream function for a real provider: it runs on its own goroutine,
// pushes assistant stream events as the HTTP response arrives, and returns when it is done.
// ctx is cancelled when the run is aborted.
func realModel(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
	// resp := callProvider(ctx, req.Model, req.Context.Messages, req.Options) ...
	s.Push(map[string]any{"type": "start"})
	s.Push(map[string]any{"type": "text_start", "contentIndex": 0})
	s.Push(map[string]any{"type": "text_delta", "contentIndex": 0, "delta": "Hello"})
	s.Push(map[string]any{"type": "text_end", "contentIndex": 0})
	// Provider errors: {"type":"error","reason":"error","errorMessage":"..."} or return an error.
	return s.Push(map[string]any{"type": "done", "reason": "stop"})
}

var _ agent.StreamFunc = realModel

package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

type readArgs struct {
	Path  string `json:"path" jsonschema:"description=The file to read"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1"`
	Mode  string `json:"mode,omitempty" jsonschema:"enum=text,enum=binary"`
}

func TestTypedToolSchemaDerivation(t *testing.T) {
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string   `json:"type"`
			Description string   `json:"description"`
			Minimum     *float64 `json:"minimum"`
			Enum        []string `json:"enum"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
		Schema               string   `json:"$schema"`
		Ref                  string   `json:"$ref"`
	}
	raw := agent.SchemaFor[readArgs]()
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	p := schema.Properties
	if schema.Type != "object" || schema.Schema != "" || schema.Ref != "" ||
		p["path"].Type != "string" || p["path"].Description != "The file to read" ||
		p["limit"].Type != "integer" || p["limit"].Minimum == nil || *p["limit"].Minimum != 1 ||
		strings.Join(p["mode"].Enum, ",") != "text,binary" ||
		strings.Join(schema.Required, ",") != "path" ||
		schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Fatalf("schema = %s", raw)
	}
	// The agent declares the derived schema to the model.
	tool := agent.NewTypedTool("read", "Read a file", func(ctx context.Context, a readArgs) (agent.Result, error) {
		return agent.TextResult(a.Path), nil
	})
	a := mustNew(t, agent.Options{ScriptedModel: script(), Tools: []*agent.Tool{tool}})
	s, _ := a.State()
	if len(s.Tools) != 1 || string(s.Tools[0].Parameters) != string(raw) || s.Tools[0].Label != "read" {
		t.Fatalf("declared tools = %+v", s.Tools)
	}
}

func TestTypedToolDecodesValidatedArguments(t *testing.T) {
	var got []readArgs
	tool := agent.NewTypedTool("read", "Read a file", func(ctx context.Context, a readArgs) (agent.Result, error) {
		got = append(got, a) // sequential tools: no data race
		return agent.Result{Content: []agent.Content{{Type: "text", Text: "read " + a.Path}}, Details: map[string]int{"limit": a.Limit}}, nil
	})
	tool.ExecutionMode = "sequential"
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{tool}, ScriptedModel: script(
		toolCalls(
			call{"c1", "read", map[string]any{"path": "a.txt", "limit": "5"}}, // coerced to 5 by the schema
			call{"c2", "read", map[string]any{"limit": 2}},                    // missing required path
			call{"c3", "read", map[string]any{"path": "b.txt", "mode": "weird"}},
		),
		text("Done.", 1))})
	if _, err := a.Prompt(context.Background(), "read"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (readArgs{Path: "a.txt", Limit: 5}) {
		t.Fatalf("executed with %+v", got)
	}
	ms := transcript(t, a)
	if roles(ms) != "user,assistant,toolResult,toolResult,toolResult,assistant" {
		t.Fatalf("roles %s", roles(ms))
	}
	if ms[2].IsError || ms[2].text() != "read a.txt" || string(ms[2].Details) != `{"limit":5}` {
		t.Fatalf("c1 result %+v", ms[2])
	}
	if !ms[3].IsError || !strings.Contains(ms[3].text(), "path") || !ms[4].IsError || !strings.Contains(ms[4].text(), "mode") {
		t.Fatalf("validation results %+v / %+v", ms[3], ms[4])
	}
}

func TestToolErrorsAndPanicsBecomeErrorResults(t *testing.T) {
	panicsBefore := agent.CallbackPanics()
	failing := agent.NewTool("failing", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		return agent.Result{}, errors.New("disk full")
	})
	panicking := agent.NewTool("panicking", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		panic("tool exploded")
	})
	flagged := agent.NewTool("flagged", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		r := agent.TextResult("soft failure")
		r.IsError = true
		return r, nil
	})
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{failing, panicking, flagged}, ScriptedModel: script(
		toolCalls(call{"c1", "failing", map[string]any{}}, call{"c2", "panicking", map[string]any{}},
			call{"c3", "flagged", map[string]any{}}, call{"c4", "missing", map[string]any{}}),
		text("Recovered.", 1))})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	byName := map[string]message{}
	for _, m := range ms {
		if m.Role == "toolResult" {
			byName[m.ToolName] = m
		}
	}
	if m := byName["failing"]; !m.IsError || m.text() != "disk full" {
		t.Fatalf("failing: %+v", m)
	}
	if m := byName["panicking"]; !m.IsError || !strings.Contains(m.text(), "panic in Go callback: tool exploded") {
		t.Fatalf("panicking: %+v", m)
	}
	if m := byName["flagged"]; !m.IsError || m.text() != "soft failure" {
		t.Fatalf("flagged: %+v", m)
	}
	if m := byName["missing"]; !m.IsError || !strings.Contains(m.text(), "missing") {
		t.Fatalf("missing: %+v", m)
	}
	if ms[len(ms)-1].text() != "Recovered." {
		t.Fatal("the run did not go on after the tool failures")
	}
	if agent.CallbackPanics() != panicsBefore+1 {
		t.Fatalf("panics recovered: %d", agent.CallbackPanics()-panicsBefore)
	}
}

func TestToolProgressUpdates(t *testing.T) {
	var late atomic.Pointer[agent.ToolCall]
	slow := agent.NewTypedTool("slow", "Works in steps", func(ctx context.Context, a struct {
		Steps int `json:"steps"`
	}) (agent.Result, error) {
		for i := 1; i <= a.Steps; i++ {
			if err := agent.Progress(ctx, agent.TextResult(fmt.Sprintf("%d/%d", i, a.Steps))); err != nil {
				return agent.Result{}, err
			}
		}
		late.Store(agent.CurrentToolCall(ctx))
		return agent.TextResult("finished"), nil
	})
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{slow}, ScriptedModel: script(
		toolCalls(call{"c1", "slow", map[string]any{"steps": 3}}), text("ok", 1))})
	var updates []string
	a.Subscribe(func(e agent.Event) {
		if e.Type == "tool_execution_update" {
			var u struct {
				ToolCallID    string       `json:"toolCallId"`
				PartialResult agent.Result `json:"partialResult"`
			}
			if err := e.Decode(&u); err != nil {
				t.Error(err)
			}
			updates = append(updates, u.ToolCallID+":"+u.PartialResult.Content[0].Text)
		}
	})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(updates, ",") != "c1:1/3,c1:2/3,c1:3/3" {
		t.Fatalf("updates = %v", updates)
	}
	if err := late.Load().Update(agent.TextResult("too late")); !errors.Is(err, agent.ErrAlreadyCompleted) {
		t.Fatalf("update after the answer: %v", err)
	}
	if err := agent.Progress(context.Background(), agent.TextResult("x")); !errors.Is(err, agent.ErrInvalidArgument) {
		t.Fatalf("progress outside a tool: %v", err)
	}
}

func TestPrepareArgumentsRewritesAndFails(t *testing.T) {
	add := agent.NewTypedTool("add", "", func(ctx context.Context, a struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (agent.Result, error) {
		return agent.TextResult(fmt.Sprint(a.A + a.B)), nil
	})
	add.PrepareArguments = func(args json.RawMessage) (json.RawMessage, error) {
		var xy struct{ X, Y *int }
		json.Unmarshal(args, &xy)
		if xy.X == nil {
			return nil, errors.New("x is required")
		}
		return json.Marshal(map[string]int{"a": *xy.X, "b": *xy.Y})
	}
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{add}, ScriptedModel: script(
		toolCalls(call{"c1", "add", map[string]any{"x": 1, "y": 2}}, call{"c2", "add", map[string]any{"y": 2}}),
		text("ok", 1))})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	if ms[2].text() != "3" || ms[2].IsError || !ms[3].IsError || !strings.Contains(ms[3].text(), "x is required") {
		t.Fatalf("results %+v %+v", ms[2], ms[3])
	}
}

// Cancelling Prompt's ctx aborts the run; the tool sees its own ctx cancelled with ErrAborted.
func TestCtxCancellationAbortsRunningTool(t *testing.T) {
	entered := make(chan struct{})
	var cause atomic.Value
	blocking := agent.NewTool("block", "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
		close(entered)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return agent.Result{}, ctx.Err()
	})
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{blocking}, ScriptedModel: script(
		toolCalls(call{"c1", "block", map[string]any{}}), text("never", 1))})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	_, err := a.Prompt(ctx, "go")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Prompt: %v", err)
	}
	eventually(t, "the tool to observe the abort", func() bool { return cause.Load() != nil })
	if c := cause.Load().(error); !errors.Is(c, agent.ErrAborted) {
		t.Fatalf("tool ctx cause = %v", c)
	}
	s, _ := a.State()
	if s.IsStreaming {
		t.Fatal("Prompt returned before the run settled")
	}
	ms := transcript(t, a)
	for _, m := range ms {
		if m.text() == "never" {
			t.Fatalf("the run went on after the abort: %+v", ms)
		}
	}
	if roles(ms) != "user,assistant,toolResult,assistant" || !ms[2].IsError || ms[3].StopReason != "aborted" {
		t.Fatalf("transcript after the abort: %+v", ms)
	}
	// The agent is usable again.
	if err := a.SetScriptedModel(script(text("again", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(context.Background(), "again"); err != nil {
		t.Fatal(err)
	}
}

func TestSetToolsReplacesTheToolSet(t *testing.T) {
	mk := func(name string) *agent.Tool {
		return agent.NewTool(name, "", nil, func(ctx context.Context, c *agent.ToolCall) (agent.Result, error) {
			return agent.TextResult(name + " ran"), nil
		})
	}
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{mk("one")}, ScriptedModel: script(
		toolCalls(call{"c1", "one", map[string]any{}}, call{"c2", "two", map[string]any{}}), text("ok", 1))})
	if err := a.SetTools(mk("two")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	if !ms[2].IsError || ms[3].IsError || ms[3].text() != "two ran" {
		t.Fatalf("results %+v %+v", ms[2], ms[3])
	}
	if err := a.SetTools(); err != nil {
		t.Fatal(err)
	}
	if s, _ := a.State(); len(s.Tools) != 0 {
		t.Fatalf("tools %+v", s.Tools)
	}
}

// Tools run on goroutines, so a tool may block, e.g. on a whole run of another agent.
func TestToolRunsASubAgent(t *testing.T) {
	sub := mustNew(t, agent.Options{ScriptedModel: script(text("42", 1))})
	ask := agent.NewTypedTool("ask", "Ask the expert", func(ctx context.Context, a struct {
		Question string `json:"question"`
	}) (agent.Result, error) {
		if _, err := sub.Prompt(ctx, a.Question); err != nil {
			return agent.Result{}, err
		}
		ms := transcript(t, sub)
		return agent.TextResult("expert says " + ms[len(ms)-1].text()), nil
	})
	a := mustNew(t, agent.Options{Tools: []*agent.Tool{ask}, ScriptedModel: script(
		toolCalls(call{"c1", "ask", map[string]any{"question": "meaning of life?"}}), text("It is 42.", 1))})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := transcript(t, a)
	if ms[2].text() != "expert says 42" || ms[3].text() != "It is 42." {
		t.Fatalf("transcript %+v", ms)
	}
	if sm := transcript(t, sub); sm[0].text() != "meaning of life?" {
		t.Fatalf("sub-agent transcript %+v", sm)
	}
}

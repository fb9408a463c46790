package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/libagent/libagent/bindings/go/agent"
)

func Example() {
	type args struct {
		City string `json:"city" jsonschema:"description=The city"`
	}
	weather := agent.NewTypedTool("weather", "Current weather", func(ctx context.Context, a args) (agent.Result, error) {
		return agent.TextResult("Sunny in " + a.City), nil
	})
	a, err := agent.New(agent.Options{
		SystemPrompt: "Be brief.",
		Tools:        []*agent.Tool{weather},
		ScriptedModel: []any{ // the built-in scripted model: one response per request
			map[string]any{"content": []any{map[string]any{"type": "toolCall", "id": "c1", "name": "weather",
				"arguments": map[string]any{"city": "Paris"}}}},
			map[string]any{"content": []any{map[string]any{"type": "text", "text": "It is sunny in Paris.", "chunks": 3}}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	a.Subscribe(func(e agent.Event) {
		switch {
		case e.UpdateType == "text_delta":
			fmt.Printf("[%s]", e.Delta)
		case e.Type == "tool_execution_end":
			var end struct {
				Result agent.Result `json:"result"`
			}
			e.Decode(&end)
			fmt.Println("tool:", end.Result.Content[0].Text)
		}
	})
	if _, err := a.Prompt(context.Background(), "Weather in Paris?"); err != nil {
		panic(err)
	}
	fmt.Println()
	// Output:
	// tool: Sunny in Paris
	// [It is s][unny in][ Paris.]
}

func ExampleAgent_Events() {
	a, _ := agent.New(agent.Options{EventShape: agent.ShapeLean,
		ScriptedModel: []any{map[string]any{"content": []any{map[string]any{"type": "text", "text": "Hi!"}}}}})
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := a.Events(ctx) // fed from the library's pull queue, in order
	done, _ := a.PromptAsync("hello")
	var types []string
	for e := range events {
		types = append(types, e.Type)
		if e.Type == "agent_end" {
			break
		}
	}
	settled(done)
	fmt.Println(strings.Join(types[:4], " "), "...", types[len(types)-1])
	// Output: agent_start turn_start message_start message_end ... agent_end
}

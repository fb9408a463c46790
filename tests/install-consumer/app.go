// A program outside the libagent repository: it depends on the Go module through a `replace`
// directive and links the libagent installed under a prefix, found by pkg-config.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/libagent/libagent/bindings/go/agent"
)

func main() {
	a, err := agent.New(agent.Options{SystemPrompt: "Be brief.",
		ScriptedModel: []map[string]any{{"content": []map[string]any{{"type": "text", "text": "Hi from an installed libagent!"}}}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer a.Close()
	a.Subscribe(func(e agent.Event) {
		if e.UpdateType == "text_delta" {
			fmt.Print(e.Delta)
		}
	})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("\nlibagent %s\n", agent.Version())
}

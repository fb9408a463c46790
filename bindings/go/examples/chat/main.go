// Command chat talks to a real model through libagent's built-in providers: type a message per
// line, the answer streams in; Ctrl-D quits. A failed request (wrong key, URL or model) prints
// the server's error and exits with status 1.
//
// The model: LIBAGENT_API, LIBAGENT_BASE_URL, LIBAGENT_MODEL and optional LIBAGENT_PROVIDER,
// LIBAGENT_API_KEY, LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS, as for examples/c/assistant.c
// (read by ../internal/envmodel, which the assistant example shares).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/libagent/libagent/bindings/go/agent"
	"github.com/libagent/libagent/bindings/go/examples/internal/envmodel"
)

func run() int {
	options, err := envmodel.Options() // the model, answered by the built-in providers
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	options.SystemPrompt = "You are a helpful assistant. Be brief."
	bot, err := agent.New(options)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	defer bot.Close()
	bot.Subscribe(func(e agent.Event) {
		if e.UpdateType == "text_delta" {
			fmt.Print(e.Delta)
		}
	})
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if line == "" {
			continue
		}
		_, err := bot.Prompt(context.Background(), line)
		var failed *agent.Error
		switch {
		case errors.Is(err, agent.ErrAborted):
			fmt.Fprintln(os.Stderr, "\n(aborted)")
		case errors.As(err, &failed) && failed.Status == agent.ErrModelError:
			fmt.Fprintln(os.Stderr, "\nerror:", failed.Message) // the request failed: the server's text
			return 1
		case err != nil:
			fmt.Fprintln(os.Stderr, "\nerror:", err)
			return 1
		default:
			fmt.Println()
		}
	}
	return 0
}

func main() { os.Exit(run()) }

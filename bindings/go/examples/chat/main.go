// Command chat talks to a real model through libagent's built-in providers: type a message per
// line, the answer streams in; Ctrl-D quits. A failed request (wrong key, URL or model) prints
// the server's error and exits with status 1.
//
// Configuration (as examples/c/assistant.c):
//
//	LIBAGENT_API        openai-completions | anthropic-messages
//	LIBAGENT_BASE_URL   e.g. http://127.0.0.1:8080/v1 (llama.cpp), https://api.anthropic.com
//	LIBAGENT_MODEL      the model id the server knows
//	LIBAGENT_PROVIDER   optional (default openai / anthropic: picks the key's environment
//	                    variable, OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)
//	LIBAGENT_API_KEY    optional: the key to send instead (any value for servers without auth)
//	LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS   optional (default 128000, 4096)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	agent "github.com/libagent/libagent/bindings/go"
)

func envNumber(name string, fallback int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return fallback
}

func modelFromEnv() (agent.Model, error) {
	api, baseURL, id := os.Getenv("LIBAGENT_API"), os.Getenv("LIBAGENT_BASE_URL"), os.Getenv("LIBAGENT_MODEL")
	if api == "" || baseURL == "" || id == "" {
		return agent.Model{}, errors.New("set LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL")
	}
	provider := os.Getenv("LIBAGENT_PROVIDER")
	switch {
	case provider != "":
	case api == "openai-completions":
		provider = "openai"
	case api == "anthropic-messages":
		provider = "anthropic"
	default:
		return agent.Model{}, fmt.Errorf("LIBAGENT_API must be openai-completions or anthropic-messages, not %q", api)
	}
	return agent.Model{ID: id, Name: id, API: api, Provider: provider, BaseURL: baseURL,
		ContextWindow: envNumber("LIBAGENT_CONTEXT_WINDOW", 128000), MaxTokens: envNumber("LIBAGENT_MAX_TOKENS", 4096)}, nil
}

// apiKey is the GetAPIKey hook: LIBAGENT_API_KEY when set, else null (the provider's variable).
func apiKey(ctx context.Context, provider json.RawMessage) (json.RawMessage, error) {
	if key := os.Getenv("LIBAGENT_API_KEY"); key != "" {
		return json.Marshal(key)
	}
	return nil, nil
}

func run() int {
	model, err := modelFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	bot, err := agent.New(agent.Options{
		SystemPrompt: "You are a helpful assistant. Be brief.",
		Model:        model,
		UseProviders: true, // the built-in providers speak HTTP to model.BaseURL
		Hooks:        agent.Hooks{GetAPIKey: apiKey},
	})
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
		err := bot.Prompt(context.Background(), line)
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

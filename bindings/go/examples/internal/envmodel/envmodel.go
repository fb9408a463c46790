// Package envmodel reads the real model the examples talk to from the environment, as
// examples/c/assistant.c does:
//
//	LIBAGENT_API        openai-completions | anthropic-messages | openai-responses | google-generative-ai
//	LIBAGENT_BASE_URL   e.g. http://127.0.0.1:8080/v1 (llama.cpp), https://api.anthropic.com,
//	                    https://generativelanguage.googleapis.com/v1beta (Gemini)
//	LIBAGENT_MODEL      the model id the server knows, or a model of libagent's catalogue
//	                    ("anthropic/claude-sonnet-4-5"), which gives the API, base URL, provider,
//	                    limits and prices (the other variables, when set, override them)
//	LIBAGENT_PROVIDER   optional (default openai / anthropic / google: picks the key's environment
//	                    variable, OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...)
//	LIBAGENT_API_KEY    optional: the key to send instead (any value for servers without auth)
//	LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS   optional (default: the catalogue's, else 128000, 4096)
package envmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/libagent/libagent/bindings/go/agent"
)

// errUnset: none of LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL is set.
var errUnset = errors.New("set LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL")

// Options are the agent options for the configured model: the model, the built-in providers
// (which speak HTTP to its base URL) and the GetAPIKey hook.
func Options() (agent.Options, error) {
	model, err := modelFromEnv()
	if err != nil {
		return agent.Options{}, err
	}
	return agent.Options{Model: model, UseProviders: true, Hooks: agent.Hooks{GetAPIKey: apiKey}}, nil
}

// OptionsOrScripted are Options or, when none of LIBAGENT_API, LIBAGENT_BASE_URL and
// LIBAGENT_MODEL is set, the built-in scripted model with the responses in the file scriptPath.
func OptionsOrScripted(scriptPath string) (agent.Options, error) {
	options, err := Options()
	switch {
	case !errors.Is(err, errUnset):
		return options, err
	case scriptPath == "":
		return options, errors.New("no model: set LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL, or give a script")
	}
	options.ScriptedModel, err = os.ReadFile(scriptPath)
	return options, err
}

func modelFromEnv() (any, error) {
	api, baseURL, id := os.Getenv("LIBAGENT_API"), os.Getenv("LIBAGENT_BASE_URL"), os.Getenv("LIBAGENT_MODEL")
	if api == "" && baseURL == "" && id == "" {
		return agent.Model{}, errUnset
	}
	catalogued, unknown := agent.FindModel(id) // a model of libagent's catalogue?
	if unknown == nil {
		return fromCatalogue(catalogued, api, baseURL)
	}
	if api == "" || baseURL == "" || id == "" {
		if id != "" && strings.Contains(id, "/") && errors.Is(unknown, agent.ErrInvalidArgument) {
			var failure *agent.Error
			errors.As(unknown, &failure)
			head, _, _ := strings.Cut(failure.Message, "; agent.ListModels")
			return agent.Model{}, fmt.Errorf("LIBAGENT_MODEL: %s; or describe the model with all of LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL", head)
		}
		return agent.Model{}, errors.New("set all of LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL")
	}
	provider := os.Getenv("LIBAGENT_PROVIDER")
	if provider == "" {
		provider = defaultProviders[api]
	}
	if _, ok := defaultProviders[api]; !ok {
		return agent.Model{}, fmt.Errorf("LIBAGENT_API must be openai-completions, anthropic-messages, openai-responses or google-generative-ai, not %q", api)
	}
	return agent.Model{ID: id, Name: id, API: api, Provider: provider, BaseURL: baseURL,
		ContextWindow: envNumber("LIBAGENT_CONTEXT_WINDOW", 128000), MaxTokens: envNumber("LIBAGENT_MAX_TOKENS", 4096)}, nil
}

// The provider (hence the key's environment variable) of each API the built-in providers speak.
var defaultProviders = map[string]string{"openai-completions": "openai", "openai-responses": "openai",
	"anthropic-messages": "anthropic", "google-generative-ai": "google"}

// fromCatalogue is the catalogue's model object with the variables that are set in place of its
// api, baseUrl, provider, contextWindow and maxTokens (appended: in a JSON object libagent reads,
// a repeated member's last value wins and keeps its first place).
func fromCatalogue(model agent.CatalogModel, api, baseURL string) (any, error) {
	if api == "" {
		api = model.API
	}
	if _, ok := defaultProviders[api]; !ok {
		return nil, fmt.Errorf("%s/%s speaks the API %q, which the built-in providers do not: choose another model", model.Provider, model.ID, api)
	}
	overrides := map[string]any{"api": api, "contextWindow": envNumber("LIBAGENT_CONTEXT_WINDOW", model.ContextWindow),
		"maxTokens": envNumber("LIBAGENT_MAX_TOKENS", model.MaxTokens)}
	if baseURL != "" {
		overrides["baseUrl"] = baseURL
	}
	if provider := os.Getenv("LIBAGENT_PROVIDER"); provider != "" {
		overrides["provider"] = provider
	}
	extra, err := json.Marshal(overrides)
	if err != nil {
		return nil, err
	}
	whole := append(append([]byte{}, model.JSON[:len(model.JSON)-1]...), ',')
	return json.RawMessage(append(whole, extra[1:]...)), nil
}

func envNumber(name string, fallback int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return fallback
}

// apiKey is the GetAPIKey hook: LIBAGENT_API_KEY when set, else none (the provider's variable).
func apiKey(ctx context.Context, provider string) (string, error) {
	return os.Getenv("LIBAGENT_API_KEY"), nil
}

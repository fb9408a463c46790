package agent_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

func TestFindModelGivesTheCatalogueFacts(t *testing.T) {
	model, err := agent.FindModel("anthropic/claude-sonnet-4-5")
	if err != nil {
		t.Fatalf("FindModel: %v", err)
	}
	if model.API != "anthropic-messages" || model.BaseURL != "https://api.anthropic.com" ||
		model.ContextWindow != 200000 || model.MaxTokens != 64000 {
		t.Fatalf("model %+v", model)
	}
	if model.Cost != (agent.ModelCost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}) {
		t.Fatalf("cost %+v", model.Cost)
	}
	if !bytes.HasPrefix(model.JSON, []byte(`{"id":"claude-sonnet-4-5","name":`)) {
		t.Fatalf("JSON %s", model.JSON)
	}
	// The id holds a slash: the name splits at its first one.
	routed, err := agent.FindModel("openrouter/anthropic/claude-sonnet-4.5")
	if err != nil || routed.Provider != "openrouter" || routed.ID != "anthropic/claude-sonnet-4.5" {
		t.Fatalf("FindModel(openrouter/...): %+v, %v", routed, err)
	}
}

func TestFindModelNamesAnUnknownModel(t *testing.T) {
	_, err := agent.FindModel("anthropic/claude-nonexistent")
	if !errors.Is(err, agent.ErrInvalidArgument) {
		t.Fatalf("FindModel(unknown) = %v, want ErrInvalidArgument", err)
	}
	message := err.Error()
	for _, want := range []string{"Unknown model 'anthropic/claude-nonexistent'", "no model 'claude-nonexistent' for provider 'anthropic'",
		`agent.ListModels("") lists the models.`} {
		if !strings.Contains(message, want) {
			t.Errorf("error %q does not contain %q", message, want)
		}
	}
	if strings.Contains(message, "agent_model_list") {
		t.Errorf("error %q names the C function", message)
	}
	if _, err := agent.FindModel("claude-sonnet-4-5"); !errors.Is(err, agent.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), `name a model as "provider/id"`) {
		t.Errorf("FindModel(no provider) = %v", err)
	}
}

func TestListModels(t *testing.T) {
	anthropic, err := agent.ListModels("anthropic")
	if err != nil {
		t.Fatalf("ListModels(anthropic): %v", err)
	}
	found := false
	for _, model := range anthropic {
		if model.Provider != "anthropic" {
			t.Fatalf("ListModels(anthropic) holds %s/%s", model.Provider, model.ID)
		}
		found = found || model.ID == "claude-sonnet-4-5"
	}
	if !found {
		t.Fatal("ListModels(anthropic) lacks claude-sonnet-4-5")
	}
	all, err := agent.ListModels("")
	if err != nil || len(all) <= len(anthropic) {
		t.Fatalf("ListModels(\"\"): %d models, %v", len(all), err)
	}
	if _, err := agent.ListModels("nobody"); !errors.Is(err, agent.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "Unknown provider 'nobody'") {
		t.Fatalf("ListModels(nobody) = %v", err)
	}
}

// A catalogue model is an Options.Model: the agent gets the whole object.
func TestCatalogModelAsTheAgentsModel(t *testing.T) {
	model, err := agent.FindModel("google/gemini-2.5-flash")
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, agent.Options{Model: model, UseProviders: true})
	state, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(state.Model, model.JSON) {
		t.Fatalf("state model %s, want %s", state.Model, model.JSON)
	}
}

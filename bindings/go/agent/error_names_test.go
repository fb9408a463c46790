package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

// What a Go caller never wrote: C parameters and functions, JSON keys, JavaScript functions.
var foreignNames = regexp.MustCompile(`\b\w+_json\b|\bagent_\w+|streamFn|setDefault|initialState|\([a-z]+[A-Z]\w*\)`)

func TestErrorTextsUseGoNames(t *testing.T) {
	var texts []string
	collect := func(what string, err error) {
		t.Helper()
		var e *agent.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: want an *agent.Error, got %v", what, err)
		}
		texts = append(texts, e.Message)
	}
	a := mustNew(t, agent.Options{ScriptedModel: script()})
	collect("SetMessages", a.SetMessages([]json.RawMessage{json.RawMessage(`{"no":"role"}`)}))
	collect("Steer", a.Steer(map[string]any{"no": "role"}))
	collect("Configure", a.Configure(map[string]any{"steeringMode": 5}))
	collect("Configure JSON", a.Configure(json.RawMessage(`{"model":`)))
	collect("SetScriptedModel", a.SetScriptedModel(json.RawMessage(`[`)))
	collect("SetThinkingLevel", a.SetThinkingLevel("loud"))
	_, err := agent.New(agent.Options{ScriptedModel: script(), ThinkingLevel: "loud"})
	collect("New", err)
	if !strings.Contains(texts[len(texts)-1], "Options.ThinkingLevel") {
		t.Errorf("New with a bad thinking level: %q does not name Options.ThinkingLevel", texts[len(texts)-1])
	}
	_, err = agent.New(agent.Options{ScriptedModel: script(), Messages: []json.RawMessage{json.RawMessage(`{}`)}})
	collect("New with messages", err)
	if !strings.Contains(texts[len(texts)-1], "Options.Messages[0]") {
		t.Errorf("New with a bad message: %q does not name Options.Messages[0]", texts[len(texts)-1])
	}
	// A run without a model: the reference's text names JavaScript's streamFn.
	b := mustNew(t, agent.Options{ScriptedModel: script()})
	if err := b.SetStreamFunc(nil); err != nil {
		t.Fatal(err)
	}
	collect("Prompt without a model", errOf(b.Prompt(context.Background(), "hi")))
	if !strings.Contains(texts[len(texts)-1], "SetDefaultStreamFunc") {
		t.Errorf("a run without a model: %q does not name SetDefaultStreamFunc", texts[len(texts)-1])
	}
	for _, text := range texts {
		if foreignNames.MatchString(text) {
			t.Errorf("error text names something a Go caller never wrote: %q", text)
		}
	}
}

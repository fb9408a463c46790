package agent

// #include "shim.h"
import "C"

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
)

// CatalogModel is a model of libagent's catalogue (pi-ai 1.6.0's built-in chat models), as
// FindModel and ListModels give it. Pass it as Options.Model: the agent gets the whole object
// (JSON), including what the typed fields leave out (compat, headers, thinkingLevelMap).
type CatalogModel struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	API           string    `json:"api"`
	Provider      string    `json:"provider"`
	BaseURL       string    `json:"baseUrl"`
	Reasoning     bool      `json:"reasoning"`
	Input         []string  `json:"input"` // "text", "image"
	Cost          ModelCost `json:"cost"`
	ContextWindow int       `json:"contextWindow"`
	MaxTokens     int       `json:"maxTokens"`
	// JSON is the model object as the catalogue has it, members in pi-ai's order.
	JSON json.RawMessage `json:"-"`
}

// ModelCost is a model's price in dollars per million tokens (pi-ai's `cost`; some models
// also have prices for long prompts, in JSON's "tiers").
type ModelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// MarshalJSON gives the catalogue's object (the typed fields when JSON is empty).
func (m CatalogModel) MarshalJSON() ([]byte, error) {
	if len(m.JSON) > 0 {
		return m.JSON, nil
	}
	type fieldsOnly CatalogModel
	return json.Marshal(fieldsOnly(m))
}

// FindModel returns the catalogue's model named "provider/id", e.g.
// "anthropic/claude-sonnet-4-5" (the name splits at its first slash: "openrouter/anthropic/
// claude-sonnet-4.5" is OpenRouter's "anthropic/claude-sonnet-4.5"). An unknown name is an
// *Error matching ErrInvalidArgument whose message names it; a library built without the
// catalogue gives ErrInvalidState.
func FindModel(name string) (CatalogModel, error) {
	var out *C.char
	var n C.size_t
	p, pn := ctext(name)
	err := modelsError(check(C.agent_model_find(p, pn, &out, &n)))
	runtime.KeepAlive(name)
	if err != nil {
		return CatalogModel{}, err
	}
	return parseModel(json.RawMessage(takeString(out, n)))
}

// ListModels returns the catalogue's models of provider ("" for every provider), in pi-ai's
// order. An unknown provider is an *Error matching ErrInvalidArgument.
func ListModels(provider string) ([]CatalogModel, error) {
	var out *C.char
	var n C.size_t
	var err error
	if provider == "" {
		err = check(C.agent_model_list(nil, 0, &out, &n))
	} else {
		p, pn := ctext(provider)
		err = check(C.agent_model_list(p, pn, &out, &n))
		runtime.KeepAlive(provider)
	}
	if err != nil {
		return nil, modelsError(err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(takeString(out, n)), &raws); err != nil {
		return nil, &Error{Status: ErrInternal, Message: "the model list is not a JSON array: " + err.Error()}
	}
	models := make([]CatalogModel, 0, len(raws))
	for _, raw := range raws {
		model, err := parseModel(raw)
		if err != nil {
			return nil, err
		}
		models = append(models, model)
	}
	return models, nil
}

func parseModel(raw json.RawMessage) (CatalogModel, error) {
	var model CatalogModel
	if err := json.Unmarshal(raw, &model); err != nil {
		return CatalogModel{}, &Error{Status: ErrInternal, Message: "a catalogue model does not parse: " + err.Error()}
	}
	model.JSON = raw
	return model, nil
}

// cModelsHint is how libagent's messages end for a C caller; Go callers list with ListModels.
const cModelsHint = "; agent_model_list"

func modelsError(err error) error {
	var failure *Error
	if !errors.As(err, &failure) {
		return err
	}
	if head, _, found := strings.Cut(failure.Message, cModelsHint); found {
		failure.Message = head + `; agent.ListModels("") lists the models.`
	}
	return failure
}

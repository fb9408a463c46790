package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
)

// HookKind names a hook (SPEC 7.1).
type HookKind int32

// The hook kinds of <libagent/agent.h>.
const (
	HookConvertToLLM               HookKind = 0
	HookTransformContext           HookKind = 1
	HookGetAPIKey                  HookKind = 2
	HookBeforeToolCall             HookKind = 3
	HookAfterToolCall              HookKind = 4
	HookFinishTurn                 HookKind = 5
	HookPrepareRequest             HookKind = 6
	HookPrepareNextTurn            HookKind = 7
	HookPrepareNextTurnWithContext HookKind = 8
	// HookCompact supplies a compaction's summary: input {reason, preparation, focus?}, answer
	// {"summary", "details"?}, {"cancel": true}, or nil for the agent's own model's summary.
	HookCompact HookKind = 9
)

// HookFunc is a hook: it gets the hook's argument as JSON and answers JSON (nil: the default
// behaviour / no change). It runs on a goroutine of its own; ctx is cancelled when the run
// aborts. A returned error (or a panic) is the hook throwing: it fails the run.
type HookFunc func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// APIKeyFunc is the getApiKey hook: it gets the provider's name ("openai", ...) and answers
// the API key as plain text ("": none, the provider's environment variable applies). It runs
// on a goroutine of its own, as a HookFunc does.
type APIKeyFunc func(ctx context.Context, provider string) (string, error)

// Hook is f as a HookFunc, for SetHook(HookGetAPIKey, ...): the binding decodes the provider
// and encodes the key as the JSON string libagent expects.
func (f APIKeyFunc) Hook() HookFunc {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var provider string
		if err := json.Unmarshal(input, &provider); err != nil {
			return nil, err
		}
		key, err := f(ctx, provider)
		if err != nil || key == "" {
			return nil, err
		}
		return json.Marshal(key)
	}
}

// Hooks are the hooks of an agent; nil fields are not installed. The input and answer shapes
// are those of <libagent/agent.h> (AGENT_HOOK_*), but for GetAPIKey, which takes and answers
// plain text.
type Hooks struct {
	ConvertToLLM               HookFunc
	TransformContext           HookFunc
	GetAPIKey                  APIKeyFunc
	BeforeToolCall             HookFunc
	AfterToolCall              HookFunc
	FinishTurn                 HookFunc
	PrepareRequest             HookFunc
	PrepareNextTurn            HookFunc
	PrepareNextTurnWithContext HookFunc
	Compact                    HookFunc // see HookCompact
}

func (h *Hooks) byKind() map[HookKind]HookFunc {
	var apiKey HookFunc
	if h.GetAPIKey != nil {
		apiKey = h.GetAPIKey.Hook()
	}
	all := map[HookKind]HookFunc{
		HookConvertToLLM: h.ConvertToLLM, HookTransformContext: h.TransformContext,
		HookGetAPIKey: apiKey, HookBeforeToolCall: h.BeforeToolCall,
		HookAfterToolCall: h.AfterToolCall, HookFinishTurn: h.FinishTurn,
		HookPrepareRequest: h.PrepareRequest, HookPrepareNextTurn: h.PrepareNextTurn,
		HookPrepareNextTurnWithContext: h.PrepareNextTurnWithContext, HookCompact: h.Compact,
	}
	for kind, fn := range all {
		if fn == nil {
			delete(all, kind)
		}
	}
	return all
}

type hookEntry struct {
	fn     HookFunc
	inline bool // the agent is host-pumped: fn runs inside Dispatch
}

// SetHook installs (nil fn: removes) a hook; the next run captures it. fn takes and answers
// JSON, also for HookGetAPIKey (a JSON string; APIKeyFunc.Hook encodes a plain key).
func (a *Agent) SetHook(kind HookKind, fn HookFunc) error {
	if fn == nil {
		return a.call(C.agent_set_hook(a.h, C.AgentHookKind(kind), nil, nil, nil))
	}
	ud := pin(&hookEntry{fn: fn, inline: a.pumped})
	err := a.call(C.ga_set_hook(a.h, C.AgentHookKind(kind), ud))
	if err != nil {
		unpin(ud)
	}
	return err
}

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
)

// HookFunc is a hook: it gets the hook's argument as JSON and answers JSON (nil: the default
// behaviour / no change). It runs on a goroutine of its own; ctx is cancelled when the run
// aborts. A returned error (or a panic) is the hook throwing: it fails the run.
type HookFunc func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// Hooks are the hooks of an agent; nil fields are not installed. The input and answer shapes
// are those of <libagent/agent.h> (AGENT_HOOK_*).
type Hooks struct {
	ConvertToLLM               HookFunc
	TransformContext           HookFunc
	GetAPIKey                  HookFunc
	BeforeToolCall             HookFunc
	AfterToolCall              HookFunc
	FinishTurn                 HookFunc
	PrepareRequest             HookFunc
	PrepareNextTurn            HookFunc
	PrepareNextTurnWithContext HookFunc
}

func (h *Hooks) byKind() map[HookKind]HookFunc {
	all := map[HookKind]HookFunc{
		HookConvertToLLM: h.ConvertToLLM, HookTransformContext: h.TransformContext,
		HookGetAPIKey: h.GetAPIKey, HookBeforeToolCall: h.BeforeToolCall,
		HookAfterToolCall: h.AfterToolCall, HookFinishTurn: h.FinishTurn,
		HookPrepareRequest: h.PrepareRequest, HookPrepareNextTurn: h.PrepareNextTurn,
		HookPrepareNextTurnWithContext: h.PrepareNextTurnWithContext,
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

// SetHook installs (nil fn: removes) a hook; the next run captures it.
func (a *Agent) SetHook(kind HookKind, fn HookFunc) error {
	if fn == nil {
		return a.call(C.agent_set_hook(a.h, C.AgentHookKind(kind), nil, nil, nil))
	}
	ud := pin(&hookEntry{fn: fn, inline: a.pumped})
	err := a.call(C.agent_set_hook(a.h, C.AgentHookKind(kind), C.ga_hook, userData(ud), C.ga_finalize))
	if err != nil {
		unpin(ud)
	}
	return err
}

package agent

// The exported Go side of every libagent callback. They run on the library's runtime thread
// (a foreign thread for Go) and must return quickly: work that may block (tools, hooks, stream
// functions) is handed to a goroutine, which answers the call later (answers are callable from
// any thread). For an agent built with a Dispatcher the callbacks run inside Dispatch, on the
// host's thread, and that work runs inline there. Each one recovers from panics: a panic never
// unwinds into Rust; it fails the call instead.

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
)

func panicMessage(r any) string {
	callbackPanics.Add(1)
	return fmt.Sprintf("panic in Go callback: %v", r)
}

// spawn runs work on a goroutine of its own, or inline inside Dispatch for a host-pumped agent.
func spawn(inline bool, work func()) {
	if inline {
		work()
	} else {
		go work()
	}
}

// jsonArg is an answer for libagent: nil is "returns nothing" (a NULL pointer).
func jsonArg(result json.RawMessage) (*C.char, C.size_t) {
	if result == nil {
		return nil, 0
	}
	return ctext(string(result))
}

func failHook(call C.AgentHookCall, message string) {
	p, n := ctext(message)
	C.agent_error_free(C.agent_hook_call_fail(call, p, n)) // already answered: nothing to do
}

func completeHook(call C.AgentHookCall, result json.RawMessage) error {
	p, n := jsonArg(result)
	return check(C.agent_hook_call_complete(call, p, n))
}

//export goAgentFinalize
func goAgentFinalize(ud C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			finalizerMisuses.Add(1)
			panicMessage(r)
		}
	}()
	if entry, ok := value(ud).(*abortEntry); ok {
		entry.cancel(context.Canceled) // the call's registration is gone: its work is over
	}
	unpin(ud)
}

//export goAgentDone
func goAgentDone(ud C.uintptr_t, outcome *C.AgentRunOutcome) {
	defer func() {
		if r := recover(); r != nil {
			panicMessage(r)
		}
	}()
	run := value(ud).(*Run)
	unpin(ud) // `done` has no finalizer: it is called exactly once, so it releases its handle
	run.outcome = Outcome{
		Status:       RunStatus(outcome.status),
		StopReason:   goStr(outcome.stop_reason),
		ErrorMessage: goStr(outcome.error_message),
		MessageCount: int(outcome.message_count),
	}
	close(run.done)
}

//export goAgentAbort
func goAgentAbort(ud C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			panicMessage(r)
		}
	}()
	if observe := abortObserved.Load(); observe != nil {
		(*observe)()
	}
	value(ud).(*abortEntry).cancel(ErrAborted)
}

// abortObserved, when set (by tests), is called by every abort notification.
var abortObserved atomic.Pointer[func()]

//export goAgentHook
func goAgentHook(ud C.uintptr_t, input *C.char, inputLen C.size_t, call C.AgentHookCall) {
	defer func() {
		if r := recover(); r != nil {
			failHook(call, panicMessage(r))
		}
	}()
	entry := value(ud).(*hookEntry)
	in := json.RawMessage(goString(input, inputLen))
	ctx, cancel := callContext(func(ud C.uintptr_t) *C.AgentError {
		return C.ga_hook_call_on_abort(call, ud)
	})
	spawn(entry.inline, func() {
		defer cancel(nil)
		defer func() {
			if r := recover(); r != nil {
				failHook(call, panicMessage(r))
			}
		}()
		out, err := entry.fn(ctx, in)
		if err != nil {
			failHook(call, err.Error())
			return
		}
		if cerr := completeHook(call, out); cerr != nil {
			failHook(call, "hook answer rejected: "+cerr.Error())
		}
	})
}

//export goAgentStream
func goAgentStream(ud C.uintptr_t, request *C.char, requestLen C.size_t, stream C.AgentStream) {
	s := &Stream{h: stream}
	defer func() {
		if r := recover(); r != nil {
			s.Fail(panicMessage(r))
		}
	}()
	entry := value(ud).(*streamEntry)
	raw := json.RawMessage(goString(request, requestLen))
	ctx, cancel := callContext(func(ud C.uintptr_t) *C.AgentError {
		return C.ga_stream_on_abort(stream, ud)
	})
	spawn(entry.inline, func() {
		defer cancel(nil)
		defer func() {
			if r := recover(); r != nil {
				s.Fail(panicMessage(r))
			}
		}()
		req := &StreamRequest{Raw: raw}
		if err := json.Unmarshal(raw, req); err != nil {
			s.Fail("decoding the request: " + err.Error())
			return
		}
		if err := entry.fn(ctx, req, s); err != nil {
			s.Fail(err.Error())
		}
	})
}

//export goAgentConsumed
func goAgentConsumed(ud C.uintptr_t, stream C.AgentStream) {
	defer func() {
		if r := recover(); r != nil {
			(&Stream{h: stream}).Fail(panicMessage(r))
		}
	}()
	value(ud).(func())()
}

//export goAgentToolExecute
func goAgentToolExecute(ud C.uintptr_t, id *C.char, idLen C.size_t, args *C.char, argsLen C.size_t, call C.AgentToolCall) {
	tc := &ToolCall{ID: goString(id, idLen), Args: json.RawMessage(goString(args, argsLen)), h: call}
	defer func() {
		if r := recover(); r != nil {
			tc.fail(panicMessage(r))
		}
	}()
	entry := value(ud).(*toolEntry)
	ctx, cancel := callContext(func(ud C.uintptr_t) *C.AgentError {
		return C.ga_tool_call_on_abort(call, ud)
	})
	spawn(entry.inline, func() { entry.tool.run(ctx, cancel, tc) })
}

//export goAgentPrepare
func goAgentPrepare(ud C.uintptr_t, args *C.char, argsLen C.size_t, call C.AgentHookCall) {
	defer func() {
		if r := recover(); r != nil {
			failHook(call, panicMessage(r))
		}
	}()
	// prepareArguments is synchronous: it answers before returning.
	out, err := value(ud).(*toolEntry).tool.PrepareArguments(json.RawMessage(goString(args, argsLen)))
	if err != nil {
		failHook(call, err.Error())
		return
	}
	if cerr := completeHook(call, out); cerr != nil {
		failHook(call, "prepareArguments answer rejected: "+cerr.Error())
	}
}

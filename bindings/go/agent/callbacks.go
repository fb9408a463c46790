package agent

// The exported Go side of every libagent callback. They run on the library's runtime thread
// (a foreign thread for Go) and must return quickly: work that may block (tools, hooks, stream
// functions) is handed to a goroutine, which answers the call later (agent_call_complete is
// callable from any thread). Each one recovers from panics: a panic never unwinds into Rust; it
// fails the call instead.

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
)

func panicMessage(r any) string {
	callbackPanics.Add(1)
	return fmt.Sprintf("panic in Go callback: %v", r)
}

// failCall answers a call with a failure, ignoring an answer that already happened.
func failCall(call C.uintptr_t, message string) {
	p := cstr(message)
	defer freeStr(p)
	C.ga_call_fail(call, p, nil)
}

// completeCall answers a call with JSON (nil: "returns nothing").
func completeCall(call C.uintptr_t, result json.RawMessage) error {
	var p *C.char
	if result != nil {
		p = cstr(string(result))
		defer freeStr(p)
	}
	var errText *C.char
	return check(C.ga_call_complete(call, p, &errText), errText)
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
func goAgentDone(ud C.uintptr_t, status C.int32_t, message *C.char) {
	defer func() {
		if r := recover(); r != nil {
			panicMessage(r)
		}
	}()
	entry := value(ud).(*doneEntry)
	unpin(ud) // `done` has no finalizer: it is called exactly once, so it releases its handle
	var err error
	if status != 0 {
		err = &Error{Status: Status(status), Message: C.GoString(message)}
	} else {
		err = runOutcome(entry.agent)
	}
	entry.ch <- err // buffered (1): never blocks
}

//export goAgentAbort
func goAgentAbort(ud C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			panicMessage(r)
		}
	}()
	value(ud).(*abortEntry).cancel(ErrAborted)
}

//export goAgentHook
func goAgentHook(ud C.uintptr_t, input *C.char, call C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			failCall(call, panicMessage(r))
		}
	}()
	fn := value(ud).(*hookEntry).fn
	in := json.RawMessage(C.GoString(input))
	ctx, cancel := callContext(call)
	go func() {
		defer cancel(nil)
		defer func() {
			if r := recover(); r != nil {
				failCall(call, panicMessage(r))
			}
		}()
		out, err := fn(ctx, in)
		if err != nil {
			failCall(call, err.Error())
			return
		}
		if cerr := completeCall(call, out); cerr != nil {
			failCall(call, "hook answer rejected: "+cerr.Error())
		}
	}()
}

//export goAgentStream
func goAgentStream(ud C.uintptr_t, request *C.char, stream C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			failCall(stream, panicMessage(r))
		}
	}()
	fn := value(ud).(*streamEntry).fn
	raw := json.RawMessage(C.GoString(request))
	s := &Stream{call: stream}
	ctx, cancel := callContext(stream)
	go func() {
		defer cancel(nil)
		defer func() {
			if r := recover(); r != nil {
				failCall(stream, panicMessage(r))
			}
		}()
		req := &StreamRequest{Raw: raw}
		if err := json.Unmarshal(raw, req); err != nil {
			failCall(stream, "decoding the request: "+err.Error())
			return
		}
		if err := fn(ctx, req, s); err != nil {
			failCall(stream, err.Error())
		}
	}()
}

//export goAgentConsumed
func goAgentConsumed(ud C.uintptr_t, stream C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			failCall(stream, panicMessage(r))
		}
	}()
	value(ud).(func())()
}

//export goAgentListener
func goAgentListener(ud C.uintptr_t, info *C.GaEventInfo, call C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			failCall(call, panicMessage(r)) // a failing listener fails the run (SPEC 7.11)
		}
	}()
	ev := Event{Type: C.GoString(info._type)}
	if info.update_type != nil {
		ev.UpdateType = C.GoString(info.update_type)
	}
	if info.delta != nil {
		ev.Delta = C.GoStringN(info.delta, C.int(info.delta_len))
	}
	if info.json != nil {
		ev.JSON = json.RawMessage(C.GoString(info.json))
	}
	value(ud).(*listenerEntry).fn(ev)
	completeCall(call, nil)
}

//export goAgentToolExecute
func goAgentToolExecute(ud C.uintptr_t, id *C.char, args *C.char, call C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			failCall(call, panicMessage(r))
		}
	}()
	tool := value(ud).(*Tool)
	tc := &ToolCall{ID: C.GoString(id), Args: json.RawMessage(C.GoString(args)), call: call}
	ctx, cancel := callContext(call)
	go tool.run(ctx, cancel, tc)
}

//export goAgentPrepare
func goAgentPrepare(ud C.uintptr_t, args *C.char, call C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			failCall(call, panicMessage(r))
		}
	}()
	// prepareArguments is synchronous: it answers before returning.
	out, err := value(ud).(*Tool).PrepareArguments(json.RawMessage(C.GoString(args)))
	if err != nil {
		failCall(call, err.Error())
		return
	}
	if cerr := completeCall(call, out); cerr != nil {
		failCall(call, "prepareArguments answer rejected: "+cerr.Error())
	}
}

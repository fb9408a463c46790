package agent

// #include "shim.h"
import "C"

import (
	"encoding/json"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"unsafe"
)

// Every Go value the library holds as user_data is pinned in a cgo.Handle; the library's
// finalizer callback (or, for `done`, the callback itself) deletes it. liveHandles counts
// them, so tests can prove that nothing leaks and nothing is released twice.
var (
	liveHandles      atomic.Int64
	liveAborts       atomic.Int64 // the part of liveHandles that are abort registrations
	callbackPanics   atomic.Int64 // panics recovered at the C boundary (user code or binding bugs)
	cleanupsRun      atomic.Int64 // agents freed by the runtime cleanup (never closed)
	finalizerMisuses atomic.Int64 // finalizer calls for a handle that was not live (must stay 0)
)

func pin(v any) C.uintptr_t {
	liveHandles.Add(1)
	if _, ok := v.(*abortEntry); ok {
		liveAborts.Add(1)
	}
	return C.uintptr_t(cgo.NewHandle(v))
}

func unpin(ud C.uintptr_t) {
	if _, ok := value(ud).(*abortEntry); ok {
		liveAborts.Add(-1)
	}
	cgo.Handle(ud).Delete()
	liveHandles.Add(-1)
}

func value(ud C.uintptr_t) any { return cgo.Handle(ud).Value() }

// check turns a libagent error into a Go error (nil for success) and frees it: the error is
// the caller's, so its code and message belong to this call whatever thread it ran on.
func check(e *C.AgentError) error {
	if e == nil {
		return nil
	}
	var n C.size_t
	p := C.agent_error_message(e, &n)
	err := &Error{Status: Status(C.agent_error_code(e)), Message: goText(C.GoStringN(p, C.int(n)))}
	C.agent_error_free(e)
	return err
}

// ctext passes s to libagent as (pointer, length) without copying: libagent copies what it
// keeps, and Go string data holds no Go pointers.
func ctext(s string) (*C.char, C.size_t) {
	if len(s) == 0 {
		return C.ga_empty(), 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// goString copies a borrowed (pointer, length) text.
func goString(p *C.char, n C.size_t) string {
	if p == nil || n == 0 {
		return ""
	}
	return C.GoStringN(p, C.int(n))
}

func goStr(s C.AgentStr) string { return goString(s.ptr, s.len) }

// takeString copies and frees a string returned by libagent.
func takeString(p *C.char, n C.size_t) string {
	if p == nil {
		return ""
	}
	s := goString(p, n)
	C.agent_string_free(p)
	return s
}

// toJSON renders v for the library: json.RawMessage, []byte and string-typed JSON pass
// through as they are; everything else goes through encoding/json.
func toJSON(v any) (string, error) {
	switch v := v.(type) {
	case json.RawMessage:
		return string(v), nil
	case []byte:
		return string(v), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", &Error{Status: ErrInvalidJSON, Message: err.Error()}
	}
	return string(b), nil
}

// withJSON renders v and calls fn with it as a (pointer, length) text.
func withJSON(v any, fn func(*C.char, C.size_t) error) error {
	s, err := toJSON(v)
	if err != nil {
		return err
	}
	p, n := ctext(s)
	err = fn(p, n)
	runtime.KeepAlive(s)
	return err
}

package agent

// #include "shim.h"
import "C"

import (
	"encoding/json"
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

// check turns a status and the error text the shim copied into an error (nil on success).
func check(status C.AgentStatus, errText *C.char) error {
	if status == 0 {
		return nil
	}
	message := ""
	if errText != nil {
		message = C.GoString(errText)
		C.free(unsafe.Pointer(errText))
	}
	return &Error{Status: Status(status), Message: goText(message)}
}

// cstr copies s into C memory (nil for the empty string when nullable); free with freeStr.
func cstr(s string) *C.char { return C.CString(s) }

func freeStr(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

// takeString copies and frees a string returned by libagent.
func takeString(p *C.char) string {
	if p == nil {
		return ""
	}
	s := C.GoString(p)
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

// withJSON renders v and calls fn with it as a C string.
func withJSON(v any, fn func(*C.char) error) error {
	text, err := toJSON(v)
	if err != nil {
		return err
	}
	p := cstr(text)
	defer freeStr(p)
	return fn(p)
}

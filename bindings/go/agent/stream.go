package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
)

// StreamRequest is one request to the model (SPEC 3.1).
type StreamRequest struct {
	Model   json.RawMessage `json:"model"`
	Context struct {
		Messages []json.RawMessage `json:"messages"`
	} `json:"context"`
	Options json.RawMessage `json:"options"` // reasoning, sessionId, apiKey, identity, ...
	Raw     json.RawMessage `json:"-"`       // the whole request
}

// StreamFunc performs one request: it pushes assistant stream events (SPEC 3.2) into s, from
// this goroutine or any other, and ends the stream with a "done"/"error" event, s.Complete or
// s.Fail. It runs on a goroutine of its own; ctx is cancelled when the run aborts (cause
// ErrAborted) and when StreamFunc returns, so return only when the response is finished. A
// returned error (or a panic) fails the stream: before any push, the stream function failed;
// after, an "error" event with that message.
type StreamFunc func(ctx context.Context, req *StreamRequest, s *Stream) error

type streamEntry struct {
	fn     StreamFunc
	inline bool // the agent is host-pumped: fn runs inside Dispatch
}

// Stream is the response of one request.
type Stream struct{ h C.AgentStream }

// Push pushes one stream event: any JSON-marshalable object with a "type" (a map, a struct,
// json.RawMessage). It never blocks; after the terminal event it returns ErrStreamClosed.
func (s *Stream) Push(event any) error {
	return withJSON(event, func(p *C.char, n C.size_t) error { return check(C.agent_stream_push(s.h, p, n)) })
}

// PushTextDelta pushes a text_delta without building JSON (see Push).
func (s *Stream) PushTextDelta(contentIndex int, delta string) error {
	p, n := ctext(delta)
	return check(C.agent_stream_push_text_delta(s.h, C.size_t(contentIndex), p, n))
}

// Complete ends the stream with a final assistant message (nil: without one, which yields an
// error message, SPEC 3.5).
func (s *Stream) Complete(final any) error {
	if final == nil {
		return check(C.agent_stream_end(s.h, nil, 0))
	}
	return withJSON(final, func(p *C.char, n C.size_t) error { return check(C.agent_stream_end(s.h, p, n)) })
}

// Fail ends the stream with a failure (see StreamFunc).
func (s *Stream) Fail(message string) error {
	p, n := ctext(message)
	return check(C.agent_stream_fail(s.h, p, n))
}

// Aborted says whether the run of this request was aborted (false once the stream is over).
func (s *Stream) Aborted() bool {
	var aborted C.bool
	if check(C.agent_stream_is_aborted(s.h, &aborted)) != nil {
		return false // the stream is over
	}
	return bool(aborted)
}

// OnConsumed registers fn, called on the runtime thread each time a pushed event was fully
// processed (delivered to every listener): a lock-step producer pushes the next event from it.
// fn must be quick.
func (s *Stream) OnConsumed(fn func()) error {
	ud := pin(fn)
	err := check(C.ga_stream_on_consumed(s.h, ud))
	if err != nil {
		unpin(ud)
	}
	return err
}

// SetDefaultStreamFunc sets (nil: clears) the process-wide default model (setDefaultStreamFn):
// agents built afterwards without a StreamFunc or ScriptedModel use it.
func SetDefaultStreamFunc(fn StreamFunc) error {
	if fn == nil {
		return check(C.agent_set_default_stream_fn(nil, nil, nil))
	}
	ud := pin(&streamEntry{fn: fn})
	err := check(C.ga_set_default_stream_fn(ud))
	if err != nil {
		unpin(ud)
	}
	return err
}

// SetDefaultScriptedModel makes the built-in scripted model with this script the process-wide
// default model.
func SetDefaultScriptedModel(script any) error {
	return withJSON(script, func(p *C.char, n C.size_t) error { return check(C.agent_set_default_scripted_model(p, n)) })
}

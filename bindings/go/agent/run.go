package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"time"
)

// ErrAborted is the cause of a callback's context when its run was aborted.
var ErrAborted = errors.New("libagent: run aborted")

// RunStatus says how a run ended.
type RunStatus int32

// The run statuses of <libagent/agent.h> (AGENT_RUN_*).
const (
	RunRunning    RunStatus = 0 // not settled yet
	RunCompleted  RunStatus = 1 // its last assistant message did not stop with "error" or "aborted"
	RunModelError RunStatus = 2 // stopReason "error": the model request, stream function or a hook failed
	RunAborted    RunStatus = 3 // stopReason "aborted"
	RunFailed     RunStatus = 4 // a listener failed while the run was failing
	RunFreed      RunStatus = 5 // the agent was closed during the run
)

// Outcome is what a run did.
type Outcome struct {
	Status RunStatus
	// StopReason is the stopReason of the last assistant message the run added ("" when none).
	StopReason string
	// ErrorMessage says why the run did not complete ("" when it did).
	ErrorMessage string
	// MessageCount is how many messages the run added to the transcript (Run.Messages).
	MessageCount int
}

// Err is the outcome as Prompt reports it: nil for a completed run, else an *Error with
// ErrModelError, ErrRunAborted (which also matches ErrAborted), ErrRunFailed or ErrFreed and
// the run's error message.
func (o Outcome) Err() error {
	status, ok := map[RunStatus]Status{RunModelError: ErrModelError, RunAborted: ErrRunAborted,
		RunFailed: ErrRunFailed, RunFreed: ErrFreed}[o.Status]
	if !ok {
		return nil
	}
	return &Error{Status: status, Message: goText(o.ErrorMessage)}
}

// Run is one run started by PromptAsync, PromptMessagesAsync or ContinueAsync: a future of its
// Outcome. Cancelling or aborting a Run reaches that run only, never a later one.
type Run struct {
	h       C.AgentRun
	pumped  bool
	done    chan struct{}
	outcome Outcome // written before done is closed
}

// Done is closed when the run settled.
func (r *Run) Done() <-chan struct{} { return r.done }

// Outcome is the run's outcome; its Status is RunRunning until Done is closed.
func (r *Run) Outcome() Outcome {
	select {
	case <-r.done:
		return r.outcome
	default:
		return Outcome{Status: RunRunning}
	}
}

// Err is the run's error as Prompt returns it (nil while it runs and when it completed).
func (r *Run) Err() error { return r.Outcome().Err() }

// Wait returns the run's outcome once it settled, and its error as Prompt returns it. When ctx
// is done first, the run is aborted (this run only); Wait still waits for it to settle and
// then returns an error wrapping ctx's cause too.
//
// The run of an agent built with a Dispatcher is dispatched by Wait on the calling thread while
// it waits (as Dispatch does): call it from the goroutine that pumps the dispatcher.
func (r *Run) Wait(ctx context.Context) (Outcome, error) {
	if r.pumped {
		return r.pump(ctx)
	}
	select {
	case <-r.done:
		return r.outcome, r.outcome.Err()
	case <-ctx.Done():
		return r.cancelled(ctx, func() { <-r.done })
	}
}

// cancelled aborts the run, waits for it to settle and reports ctx's cause with its outcome.
func (r *Run) cancelled(ctx context.Context, settle func()) (Outcome, error) {
	r.Abort()
	settle()
	if err := r.outcome.Err(); err != nil {
		return r.outcome, errors.Join(context.Cause(ctx), err)
	}
	return r.outcome, context.Cause(ctx)
}

// pump waits for a host-pumped run with agent_run_wait, which dispatches on this thread, in
// slices so that ctx is observed.
func (r *Run) pump(ctx context.Context) (Outcome, error) {
	settle := func(slice C.int64_t) error {
		var result C.AgentWaitResult
		for {
			if err := check(C.agent_run_wait(r.h, slice, &result)); err != nil {
				return err
			}
			if result == C.AGENT_WAIT_DONE {
				<-r.done // closed by `done`, which returned before the wait ended
				return nil
			}
			if slice > 0 && ctx.Err() != nil {
				return nil
			}
		}
	}
	if err := settle(50); err != nil {
		return r.Outcome(), err
	}
	select {
	case <-r.done:
		runtime.KeepAlive(r)
		return r.outcome, r.outcome.Err()
	default:
	}
	out, err := r.cancelled(ctx, func() { settle(-1) })
	runtime.KeepAlive(r)
	return out, err
}

// Abort aborts this run's signal (nothing happens once it settled: a later run is never
// reached). It does not wait.
func (r *Run) Abort() error {
	err := check(C.agent_run_abort(r.h))
	runtime.KeepAlive(r) // the cleanup must not free the handle during the call
	return err
}

// Messages returns the messages the run added to the transcript so far, in order.
func (r *Run) Messages() ([]json.RawMessage, error) {
	var out *C.char
	var n C.size_t
	err := check(C.agent_run_messages(r.h, &out, &n))
	runtime.KeepAlive(r)
	if err != nil {
		return nil, err
	}
	var messages []json.RawMessage
	err = json.Unmarshal([]byte(takeString(out, n)), &messages)
	return messages, err
}

// Image is an image block of a prompt.
type Image struct {
	Data     string `json:"data"` // base64
	MimeType string `json:"mimeType"`
}

// Prompt starts a run with a text prompt (and images), waits until it settled and returns its
// outcome. A run that ends with an error (stopReason "error": a failed model request, e.g. a
// wrong key or URL) also returns an *Error with Status ErrModelError and the run's
// errorMessage; an aborted run (Abort) one with ErrRunAborted, which also matches
// errors.Is(err, ErrAborted). When ctx is cancelled first, this run is aborted; Prompt still
// waits for it to settle and then returns an error wrapping ctx's error.
func (a *Agent) Prompt(ctx context.Context, text string, images ...Image) (Outcome, error) {
	return a.wait(ctx, a.promptStart(text, images))
}

// PromptMessages starts a run with messages (each a message object, JSON-marshalable) and
// waits for it like Prompt.
func (a *Agent) PromptMessages(ctx context.Context, messages ...any) (Outcome, error) {
	return a.wait(ctx, a.messagesStart(messages))
}

// Continue continues from the current transcript (SPEC 7.7) and waits like Prompt.
func (a *Agent) Continue(ctx context.Context) (Outcome, error) {
	return a.wait(ctx, a.continueStart())
}

// PromptAsync starts a run like Prompt and returns it at once. Errors starting the run (e.g.
// ErrBusy) are returned directly.
func (a *Agent) PromptAsync(text string, images ...Image) (*Run, error) {
	return a.start(a.promptStart(text, images))
}

// PromptMessagesAsync is PromptMessages without waiting.
func (a *Agent) PromptMessagesAsync(messages ...any) (*Run, error) {
	return a.start(a.messagesStart(messages))
}

// ContinueAsync is Continue without waiting.
func (a *Agent) ContinueAsync() (*Run, error) { return a.start(a.continueStart()) }

// Compact compacts the conversation now and waits like Prompt: the older messages are replaced
// by a summary (from Hooks.Compact or the agent's own model) and the recent ones kept; focus
// ("": none) says what the summary should keep in particular. Its events are compaction_start
// and compaction_end with Reason "manual". When there is nothing to compact or no summary could
// be made the run fails (ErrRunFailed); an abort or a hook that cancels ends it aborted. Either
// way the transcript (and session) stay as they were.
func (a *Agent) Compact(ctx context.Context, focus string) (Outcome, error) {
	return a.wait(ctx, a.compactStart(focus))
}

// CompactAsync is Compact without waiting.
func (a *Agent) CompactAsync(focus string) (*Run, error) { return a.start(a.compactStart(focus)) }

func (a *Agent) compactStart(focus string) starter {
	return func(ud C.uintptr_t, out *C.AgentRun) error {
		if strings.IndexByte(focus, 0) >= 0 {
			return &Error{Status: ErrInvalidArgument, Message: "The compaction focus contains a NUL byte."}
		}
		p, n := ctext(focus)
		return a.call(C.ga_compact(a.h, p, n, ud, out))
	}
}

// starter starts a run with `done` called with ud.
type starter func(ud C.uintptr_t, out *C.AgentRun) error

func (a *Agent) continueStart() starter {
	return func(ud C.uintptr_t, out *C.AgentRun) error {
		return a.call(C.ga_continue(a.h, ud, out))
	}
}

func (a *Agent) promptStart(text string, images []Image) starter {
	if len(images) == 0 {
		encoded, _ := json.Marshal(text) // a JSON string: NUL bytes survive, escaped
		return func(ud C.uintptr_t, out *C.AgentRun) error {
			p, n := ctext(string(encoded))
			return a.call(C.ga_prompt(a.h, p, n, ud, out))
		}
	}
	type block struct {
		Type string `json:"type"`
		Image
	}
	blocks := make([]block, len(images))
	for i, img := range images {
		blocks[i] = block{"image", img}
	}
	encoded, _ := json.Marshal(blocks)
	return func(ud C.uintptr_t, out *C.AgentRun) error {
		if strings.IndexByte(text, 0) >= 0 {
			return &Error{Status: ErrInvalidArgument, Message: "text contains a NUL byte (not representable with images)."}
		}
		p, n := ctext(text)
		q, m := ctext(string(encoded))
		return a.call(C.ga_prompt_text(a.h, p, n, q, m, ud, out))
	}
}

func (a *Agent) messagesStart(messages []any) starter {
	values := make([]any, len(messages))
	for i, m := range messages {
		values[i] = rawOrValue(m)
	}
	encoded, err := json.Marshal(values)
	return func(ud C.uintptr_t, out *C.AgentRun) error {
		if err != nil {
			return &Error{Status: ErrInvalidJSON, Message: err.Error()}
		}
		p, n := ctext(string(encoded))
		return a.call(C.ga_prompt(a.h, p, n, ud, out))
	}
}

func (a *Agent) start(fn starter) (*Run, error) {
	r := &Run{pumped: a.pumped, done: make(chan struct{})}
	ud := pin(r) // released by `done`, which is called exactly once for a started run
	var h C.AgentRun
	if err := fn(ud, &h); err != nil {
		unpin(ud) // `done` is not called when the run did not start
		return nil, err
	}
	r.h = h
	runtime.AddCleanup(r, func(h C.AgentRun) { C.agent_error_free(C.agent_run_free(h)) }, h)
	return r, nil
}

// errWouldDeadlock refuses a blocking wait on the runtime thread, where the run could never
// go on.
func (a *Agent) errWouldDeadlock(what string) error {
	if !C.agent_is_runtime_thread() {
		return nil
	}
	return &Error{Status: ErrWouldDeadlock, Message: what + " cannot wait inside a callback on the library's runtime thread: the run could never go on."}
}

func (a *Agent) wait(ctx context.Context, fn starter) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	if err := a.errWouldDeadlock("Prompt"); err != nil {
		return Outcome{}, err
	}
	r, err := a.start(fn)
	if err != nil {
		return Outcome{}, err
	}
	return r.Wait(ctx)
}

// Abort aborts the active run (nothing happens when idle). It does not wait.
func (a *Agent) Abort() error { return a.call(C.agent_abort(a.h)) }

// WaitIdle returns when no run is active, or with ctx's error.
func (a *Agent) WaitIdle(ctx context.Context) error {
	if err := a.errWouldDeadlock("WaitIdle"); err != nil {
		return err
	}
	const slice = 100 // ms per blocking wait, so that ctx is observed
	for {
		var result C.AgentWaitResult
		if err := a.call(C.agent_wait_for_idle(a.h, slice, &result)); err != nil {
			return err
		}
		if result == C.AGENT_WAIT_DONE {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}

// UserMessage builds a user message with the current time.
func UserMessage(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": time.Now().UnixMilli()})
	return b
}

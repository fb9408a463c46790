package agent

// #include "shim.h"
import "C"

import (
	"runtime"
	"sync"
	"time"
)

// Dispatcher runs the callbacks of host-pumped agents (Options.Dispatcher) on the host's
// thread: listeners, tools, hooks, stream functions and run completions of those agents run
// only inside Dispatch (and inside Run.Wait / Prompt / WaitIdle of such an agent, which
// dispatch while they wait), on the calling thread, never on libagent's runtime thread; tools,
// hooks and stream functions then run inline there instead of on goroutines of their own. The
// network and timers keep running on the runtime. Pump it from one goroutine locked to its OS
// thread (runtime.LockOSThread), e.g. a UI or game loop's thread:
//
//	runtime.LockOSThread()
//	for !quit {
//		d.Dispatch(2 * time.Millisecond) // the frame's budget
//		...
//	}
//
// Several agents may share one dispatcher. Close it after the agents that use it.
type Dispatcher struct {
	h         C.AgentDispatcher
	closeOnce sync.Once
	cleanup   runtime.Cleanup
}

// NewDispatcher creates a dispatcher.
func NewDispatcher() (*Dispatcher, error) {
	var h C.AgentDispatcher
	if err := check(C.agent_dispatcher_new(&h)); err != nil {
		return nil, err
	}
	d := &Dispatcher{h: h}
	d.cleanup = runtime.AddCleanup(d, func(h C.AgentDispatcher) { C.agent_error_free(C.agent_dispatcher_free(h)) }, h)
	return d, nil
}

// Dispatch runs the callbacks that are ready, on the calling thread, until none is ready or
// budget has passed (checked between callbacks, after at least one; a negative budget: no
// limit). It returns how many ran, at once when none was ready.
func (d *Dispatcher) Dispatch(budget time.Duration) (int, error) {
	ms := C.int64_t(-1)
	if budget >= 0 {
		ms = C.int64_t(budget.Milliseconds())
	}
	var ran C.size_t
	err := check(C.agent_dispatch(d.h, ms, &ran))
	runtime.KeepAlive(d)
	return int(ran), err
}

// Wait blocks until a callback is ready to dispatch (true) or timeout passed (false; a negative
// timeout: no limit): for a host that sleeps until "a run finished or a tool call is waiting".
func (d *Dispatcher) Wait(timeout time.Duration) (bool, error) {
	ms := C.int64_t(-1)
	if timeout >= 0 {
		ms = C.int64_t(timeout.Milliseconds())
	}
	var result C.AgentWaitResult
	err := check(C.agent_dispatcher_wait(d.h, ms, &result))
	runtime.KeepAlive(d)
	return err == nil && result == C.AGENT_WAIT_DONE, err
}

// Close frees the dispatcher: it first runs, on the calling thread, the finalizers still queued
// (those of agents closed before it); agents still open keep it. Idempotent.
func (d *Dispatcher) Close() error {
	var err error
	d.closeOnce.Do(func() {
		d.cleanup.Stop()
		err = check(C.agent_dispatcher_free(d.h))
	})
	return err
}

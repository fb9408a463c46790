/* C side of the Go binding: trampolines with the exact libagent callback types that forward
 * to the exported Go functions (callbacks.go). Every libagent function is called from Go
 * directly: errors are owned AgentError objects, so nothing has to be read on the failing
 * thread.
 *
 * user_data is a runtime/cgo.Handle (an integer, not an address); ga_ud turns it into the
 * void * libagent carries, so Go never converts an integer into an unsafe.Pointer. */
#ifndef LIBAGENT_GO_SHIM_H
#define LIBAGENT_GO_SHIM_H

#include <stdint.h>
#include <stdlib.h>

#include <libagent/agent.h>

static inline void *ga_ud(uintptr_t handle) { return (void *)handle; }

/* "" for empty Go strings (Go's empty string may have no data pointer). */
static inline const char *ga_empty(void) { return ""; }

extern const AgentFinalizer ga_finalize;
extern const AgentDoneFn ga_done;
extern const AgentHookFn ga_hook;
extern const AgentStreamFn ga_stream;
extern const AgentAbortFn ga_abort;
extern const AgentConsumedFn ga_consumed;
extern const AgentToolExecuteFn ga_tool_execute;
extern const AgentPrepareArgumentsFn ga_prepare;
extern const AgentListenerFn ga_listener;

#endif

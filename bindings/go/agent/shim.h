/* C side of the Go binding: trampolines with the exact libagent callback types that forward
 * to the exported Go functions (callbacks.go). Every libagent function is called from Go
 * directly: errors are owned AgentError objects, so nothing has to be read on the failing
 * thread.
 *
 * user_data is a runtime/cgo.Handle (an integer, not an address). It crosses into C as
 * uintptr_t and becomes the void * libagent carries only here, in C: a small integer held in a
 * Go unsafe.Pointer (even as a cgo call's argument) makes the Go runtime throw "invalid pointer
 * found on stack" when a callback running inside that call grows the goroutine's stack. So every
 * libagent function that takes user_data is called through a wrapper below. */
#ifndef LIBAGENT_GO_SHIM_H
#define LIBAGENT_GO_SHIM_H

#include <stdint.h>
#include <stdlib.h>

#include <libagent/agent.h>

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

/* libagent's functions that take user_data, with a cgo.Handle in its place and this binding's
 * trampolines as the callbacks. */
static inline AgentError *ga_options_set_stream_fn(AgentOptions o, uintptr_t ud) {
    return agent_options_set_stream_fn(o, ga_stream, (void *)ud, ga_finalize);
}
static inline AgentError *ga_options_set_hook(AgentOptions o, AgentHookKind kind, uintptr_t ud) {
    return agent_options_set_hook(o, kind, ga_hook, (void *)ud, ga_finalize);
}
static inline AgentError *ga_set_stream_fn(AgentHandle a, uintptr_t ud) {
    return agent_set_stream_fn(a, ga_stream, (void *)ud, ga_finalize);
}
static inline AgentError *ga_set_default_stream_fn(uintptr_t ud) {
    return agent_set_default_stream_fn(ga_stream, (void *)ud, ga_finalize);
}
static inline AgentError *ga_set_hook(AgentHandle a, AgentHookKind kind, uintptr_t ud) {
    return agent_set_hook(a, kind, ga_hook, (void *)ud, ga_finalize);
}
static inline AgentError *ga_subscribe(AgentHandle a, uintptr_t ud, uint64_t *out_id) {
    return agent_subscribe(a, ga_listener, (void *)ud, ga_finalize, out_id);
}
static inline AgentError *ga_hook_call_on_abort(AgentHookCall call, uintptr_t ud) {
    return agent_hook_call_on_abort(call, ga_abort, (void *)ud, ga_finalize);
}
static inline AgentError *ga_stream_on_abort(AgentStream stream, uintptr_t ud) {
    return agent_stream_on_abort(stream, ga_abort, (void *)ud, ga_finalize);
}
static inline AgentError *ga_tool_call_on_abort(AgentToolCall call, uintptr_t ud) {
    return agent_tool_call_on_abort(call, ga_abort, (void *)ud, ga_finalize);
}
static inline AgentError *ga_stream_on_consumed(AgentStream stream, uintptr_t ud) {
    return agent_stream_on_consumed(stream, ga_consumed, (void *)ud, ga_finalize);
}
static inline AgentError *ga_continue(AgentHandle a, uintptr_t ud, AgentRun *out) {
    return agent_continue(a, ga_done, (void *)ud, out);
}
static inline AgentError *ga_compact(AgentHandle a, const char *p, size_t n, uintptr_t ud, AgentRun *out) {
    return agent_compact(a, p, n, ga_done, (void *)ud, out);
}
static inline AgentError *ga_prompt(AgentHandle a, const char *p, size_t n, uintptr_t ud, AgentRun *out) {
    return agent_prompt(a, p, n, ga_done, (void *)ud, out);
}
static inline AgentError *ga_prompt_text(AgentHandle a, const char *p, size_t n, const char *q, size_t m,
                                         uintptr_t ud, AgentRun *out) {
    return agent_prompt_text(a, p, n, q, m, ga_done, (void *)ud, out);
}
static inline AgentError *ga_tool_new(const char *p, size_t n, uintptr_t ud, AgentTool *out) {
    return agent_tool_new(p, n, ga_tool_execute, (void *)ud, ga_finalize, out);
}
static inline AgentError *ga_tool_set_prepare_arguments(AgentTool tool, uintptr_t ud) {
    return agent_tool_set_prepare_arguments(tool, ga_prepare, (void *)ud, ga_finalize);
}
/* consent and finalizer may be NULL (no consent hook). */
static inline AgentError *ga_coding_tools_new(const char *root, size_t root_len, const char *p, size_t n,
                                              AgentHookFn consent, uintptr_t ud, AgentFinalizer fin,
                                              AgentTool *out, size_t capacity, size_t *count) {
    return agent_coding_tools_new(root, root_len, p, n, consent, (void *)ud, fin, out, capacity, count);
}

#endif

/* C side of the Go binding: wrappers that return the status of one libagent call and, on
 * failure, a copy of agent_last_error() read on the same OS thread in the same C call (the
 * error text is thread-local, and a goroutine may move between threads between two cgo calls);
 * and trampolines with the exact callback signatures that forward to the exported Go functions.
 *
 * Handles (AgentHandle*, AgentCall*, ...) cross into Go as uintptr_t: they are opaque tokens,
 * not addresses, so Go never holds them in pointer-typed memory. Every `char **err` result is
 * malloc'd (free with free()) and written only on failure. */
#ifndef LIBAGENT_GO_SHIM_H
#define LIBAGENT_GO_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent.h"

/* What a listener trampoline gathers about an event in one crossing. */
typedef struct {
    const char *type;
    const char *update_type; /* NULL unless message_update */
    const char *delta;       /* not NUL-terminated; NULL unless a *_delta update */
    size_t delta_len;
    const char *json;        /* NULL when the subscription asked for no JSON */
} GaEventInfo;

AgentStatus ga_runtime_configure(uint32_t workers, char **err);
AgentStatus ga_set_default_stream_fn(uintptr_t ud, char **err); /* ud 0: clears */
AgentStatus ga_set_default_scripted_model(const char *script, char **err);

AgentStatus ga_options_new(const char *json, uintptr_t *out, char **err);
AgentStatus ga_options_free(uintptr_t options, char **err);
AgentStatus ga_options_add_tool(uintptr_t options, uintptr_t tool, char **err);
AgentStatus ga_options_set_stream_fn(uintptr_t options, uintptr_t ud, char **err);
AgentStatus ga_options_set_scripted_model(uintptr_t options, const char *script, char **err);
AgentStatus ga_options_set_hook(uintptr_t options, int32_t kind, uintptr_t ud, char **err);
AgentStatus ga_options_use_providers(uintptr_t options, char **err);

AgentStatus ga_new(uintptr_t options, uintptr_t *out, char **err);
AgentStatus ga_free(uintptr_t agent, char **err);
AgentStatus ga_prompt(uintptr_t agent, const char *input_json, uintptr_t ud, char **err);
AgentStatus ga_prompt_text(uintptr_t agent, const char *text, const char *images_json, uintptr_t ud, char **err);
AgentStatus ga_continue(uintptr_t agent, uintptr_t ud, char **err);
AgentStatus ga_steer(uintptr_t agent, const char *message_json, char **err);
AgentStatus ga_follow_up(uintptr_t agent, const char *message_json, char **err);
AgentStatus ga_abort(uintptr_t agent, char **err);
AgentStatus ga_wait_for_idle(uintptr_t agent, int64_t timeout_ms, char **err);
AgentStatus ga_reset(uintptr_t agent, char **err);
AgentStatus ga_peek_queued_messages(uintptr_t agent, char **out_json, char **err);
AgentStatus ga_has_queued_messages(uintptr_t agent, bool *out, char **err);
AgentStatus ga_clear_steering_queue(uintptr_t agent, char **err);
AgentStatus ga_clear_follow_up_queue(uintptr_t agent, char **err);
AgentStatus ga_clear_all_queues(uintptr_t agent, char **err);
AgentStatus ga_get_state(uintptr_t agent, char **out_json, char **err);
AgentStatus ga_set_messages(uintptr_t agent, const char *messages_json, char **err);
AgentStatus ga_set_tools(uintptr_t agent, const uintptr_t *tools, size_t count, char **err);
AgentStatus ga_configure(uintptr_t agent, const char *patch_json, char **err);
AgentStatus ga_set_hook(uintptr_t agent, int32_t kind, uintptr_t ud, char **err);
AgentStatus ga_clear_hook(uintptr_t agent, int32_t kind, char **err);
AgentStatus ga_set_stream_fn(uintptr_t agent, uintptr_t ud, char **err);
AgentStatus ga_set_scripted_model(uintptr_t agent, const char *script, char **err);
AgentStatus ga_use_providers(uintptr_t agent, char **err);
/* The last settled run's outcome; `*message` (an agent_string_free string) only on success. */
AgentStatus ga_last_run_outcome(uintptr_t agent, int32_t *status, char **message, char **err);

AgentStatus ga_call_complete(uintptr_t call, const char *result_json, char **err);
AgentStatus ga_call_fail(uintptr_t call, const char *message, char **err);
AgentStatus ga_call_is_aborted(uintptr_t call, bool *out, char **err);
AgentStatus ga_call_on_abort(uintptr_t call, uintptr_t ud, char **err);
AgentStatus ga_tool_call_update(uintptr_t call, const char *partial_json, char **err);
AgentStatus ga_stream_push(uintptr_t stream, const char *event_json, char **err);
AgentStatus ga_stream_on_consumed(uintptr_t stream, uintptr_t ud, char **err);

/* `with_json`: 0 = no JSON, 1 = full shape, 2 = lean shape. */
AgentStatus ga_subscribe(uintptr_t agent, int with_json, uintptr_t ud, uint64_t *out_id, char **err);
AgentStatus ga_unsubscribe(uintptr_t agent, uint64_t id, char **err);
AgentStatus ga_events_open(uintptr_t agent, const char *options_json, uintptr_t *out, char **err);
AgentStatus ga_events_next(uintptr_t queue, int64_t timeout_ms, char **out_json, char **err);
AgentStatus ga_events_close(uintptr_t queue, char **err);

AgentStatus ga_coding_tool_new(const char *root, const char *options_json, uintptr_t ud, uintptr_t *out, char **err);
AgentStatus ga_tool_new(const char *definition_json, uintptr_t ud, uintptr_t *out, char **err);
AgentStatus ga_tool_set_prepare_arguments(uintptr_t tool, uintptr_t ud, char **err);
AgentStatus ga_tool_free(uintptr_t tool, char **err);

#endif

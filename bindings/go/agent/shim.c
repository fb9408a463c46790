/* See shim.h. */
#include <string.h>

#include "shim.h"
#include "_cgo_export.h"

/* Copies this thread's error text when `status` is a failure: the same C call that failed. */
static AgentStatus ret(AgentStatus status, char **err) {
    if (status != AGENT_OK && err) *err = strdup(agent_last_error());
    return status;
}

#define H(type, value) ((type *)(value))

/* --- trampolines: exact C callback types -> exported Go functions ------------------------- */

static void fin_tramp(void *ud) { goAgentFinalize((uintptr_t)ud); }

static void done_tramp(void *ud, AgentStatus status, const char *error) {
    goAgentDone((uintptr_t)ud, status, (char *)error);
}

static void hook_tramp(void *ud, const char *input, AgentCall *call) {
    goAgentHook((uintptr_t)ud, (char *)input, (uintptr_t)call);
}

static void stream_tramp(void *ud, const char *request, AgentStream *stream) {
    goAgentStream((uintptr_t)ud, (char *)request, (uintptr_t)stream);
}

static void abort_tramp(void *ud) { goAgentAbort((uintptr_t)ud); }

static void consumed_tramp(void *ud, AgentStream *stream) { goAgentConsumed((uintptr_t)ud, (uintptr_t)stream); }

static void tool_tramp(void *ud, const char *id, const char *args, AgentToolCall *call) {
    goAgentToolExecute((uintptr_t)ud, (char *)id, (char *)args, (uintptr_t)call);
}

static void prepare_tramp(void *ud, const char *args, AgentCall *call) {
    goAgentPrepare((uintptr_t)ud, (char *)args, (uintptr_t)call);
}

/* Listeners: everything about the event is read here, in one crossing into Go. */
static void listen(void *ud, const AgentEvent *event, AgentCall *call, int shape) {
    GaEventInfo info = {0};
    agent_event_type(event, &info.type);
    agent_event_update_type(event, &info.update_type);
    agent_event_delta(event, &info.delta, &info.delta_len);
    if (shape >= 0) agent_event_json(event, shape, &info.json);
    goAgentListener((uintptr_t)ud, &info, (uintptr_t)call);
}
static void listen_none(void *ud, const AgentEvent *e, AgentCall *c) { listen(ud, e, c, -1); }
static void listen_full(void *ud, const AgentEvent *e, AgentCall *c) { listen(ud, e, c, AGENT_EVENT_SHAPE_FULL); }
static void listen_lean(void *ud, const AgentEvent *e, AgentCall *c) { listen(ud, e, c, AGENT_EVENT_SHAPE_LEAN); }

/* --- wrappers -------------------------------------------------------------------------------- */

AgentStatus ga_runtime_configure(uint32_t workers, char **err) { return ret(agent_runtime_configure(workers), err); }
AgentStatus ga_set_default_stream_fn(uintptr_t ud, char **err) {
    return ret(agent_set_default_stream_fn(ud ? stream_tramp : NULL, (void *)ud, ud ? fin_tramp : NULL), err);
}
AgentStatus ga_set_default_scripted_model(const char *script, char **err) {
    return ret(agent_set_default_scripted_model(script), err);
}

AgentStatus ga_options_new(const char *json, uintptr_t *out, char **err) {
    AgentOptions *options = NULL;
    AgentStatus status = agent_options_new(json, &options);
    if (status == AGENT_OK) *out = (uintptr_t)options;
    return ret(status, err);
}
AgentStatus ga_options_free(uintptr_t options, char **err) { return ret(agent_options_free(H(AgentOptions, options)), err); }
AgentStatus ga_options_add_tool(uintptr_t options, uintptr_t tool, char **err) {
    return ret(agent_options_add_tool(H(AgentOptions, options), H(AgentTool, tool)), err);
}
AgentStatus ga_options_set_stream_fn(uintptr_t options, uintptr_t ud, char **err) {
    return ret(agent_options_set_stream_fn(H(AgentOptions, options), stream_tramp, (void *)ud, fin_tramp), err);
}
AgentStatus ga_options_set_scripted_model(uintptr_t options, const char *script, char **err) {
    return ret(agent_options_set_scripted_model(H(AgentOptions, options), script), err);
}
AgentStatus ga_options_set_hook(uintptr_t options, int32_t kind, uintptr_t ud, char **err) {
    return ret(agent_options_set_hook(H(AgentOptions, options), kind, hook_tramp, (void *)ud, fin_tramp), err);
}
AgentStatus ga_options_use_providers(uintptr_t options, char **err) {
    return ret(agent_options_use_providers(H(AgentOptions, options)), err);
}

AgentStatus ga_new(uintptr_t options, uintptr_t *out, char **err) {
    AgentHandle *agent = NULL;
    AgentStatus status = agent_new(H(AgentOptions, options), &agent);
    if (status == AGENT_OK) *out = (uintptr_t)agent;
    return ret(status, err);
}
AgentStatus ga_free(uintptr_t agent, char **err) { return ret(agent_free(H(AgentHandle, agent)), err); }
AgentStatus ga_prompt(uintptr_t agent, const char *input_json, uintptr_t ud, char **err) {
    return ret(agent_prompt(H(AgentHandle, agent), input_json, done_tramp, (void *)ud), err);
}
AgentStatus ga_prompt_text(uintptr_t agent, const char *text, const char *images_json, uintptr_t ud, char **err) {
    return ret(agent_prompt_text(H(AgentHandle, agent), text, images_json, done_tramp, (void *)ud), err);
}
AgentStatus ga_continue(uintptr_t agent, uintptr_t ud, char **err) {
    return ret(agent_continue(H(AgentHandle, agent), done_tramp, (void *)ud), err);
}
AgentStatus ga_steer(uintptr_t agent, const char *message_json, char **err) {
    return ret(agent_steer(H(AgentHandle, agent), message_json), err);
}
AgentStatus ga_follow_up(uintptr_t agent, const char *message_json, char **err) {
    return ret(agent_follow_up(H(AgentHandle, agent), message_json), err);
}
AgentStatus ga_abort(uintptr_t agent, char **err) { return ret(agent_abort(H(AgentHandle, agent)), err); }
AgentStatus ga_wait_for_idle(uintptr_t agent, int64_t timeout_ms, char **err) {
    return ret(agent_wait_for_idle(H(AgentHandle, agent), timeout_ms), err);
}
AgentStatus ga_reset(uintptr_t agent, char **err) { return ret(agent_reset(H(AgentHandle, agent)), err); }
AgentStatus ga_peek_queued_messages(uintptr_t agent, char **out_json, char **err) {
    return ret(agent_peek_queued_messages(H(AgentHandle, agent), out_json), err);
}
AgentStatus ga_has_queued_messages(uintptr_t agent, bool *out, char **err) {
    return ret(agent_has_queued_messages(H(AgentHandle, agent), out), err);
}
AgentStatus ga_clear_steering_queue(uintptr_t agent, char **err) {
    return ret(agent_clear_steering_queue(H(AgentHandle, agent)), err);
}
AgentStatus ga_clear_follow_up_queue(uintptr_t agent, char **err) {
    return ret(agent_clear_follow_up_queue(H(AgentHandle, agent)), err);
}
AgentStatus ga_clear_all_queues(uintptr_t agent, char **err) { return ret(agent_clear_all_queues(H(AgentHandle, agent)), err); }
AgentStatus ga_get_state(uintptr_t agent, char **out_json, char **err) {
    return ret(agent_get_state(H(AgentHandle, agent), out_json), err);
}
AgentStatus ga_set_messages(uintptr_t agent, const char *messages_json, char **err) {
    return ret(agent_set_messages(H(AgentHandle, agent), messages_json), err);
}
AgentStatus ga_set_tools(uintptr_t agent, const uintptr_t *tools, size_t count, char **err) {
    AgentTool *stack[16];
    AgentTool **list = count <= 16 ? stack : malloc(count * sizeof *list);
    if (!list) return AGENT_ERR_INTERNAL;
    for (size_t i = 0; i < count; i++) list[i] = H(AgentTool, tools[i]);
    AgentStatus status = ret(agent_set_tools(H(AgentHandle, agent), count ? list : NULL, count), err);
    if (list != stack) free(list);
    return status;
}
AgentStatus ga_configure(uintptr_t agent, const char *patch_json, char **err) {
    return ret(agent_configure(H(AgentHandle, agent), patch_json), err);
}
AgentStatus ga_set_hook(uintptr_t agent, int32_t kind, uintptr_t ud, char **err) {
    return ret(agent_set_hook(H(AgentHandle, agent), kind, hook_tramp, (void *)ud, fin_tramp), err);
}
AgentStatus ga_clear_hook(uintptr_t agent, int32_t kind, char **err) {
    return ret(agent_set_hook(H(AgentHandle, agent), kind, NULL, NULL, NULL), err);
}
AgentStatus ga_set_stream_fn(uintptr_t agent, uintptr_t ud, char **err) {
    /* ud 0: no stream function (the process-wide default) */
    return ret(agent_set_stream_fn(H(AgentHandle, agent), ud ? stream_tramp : NULL, (void *)ud, ud ? fin_tramp : NULL), err);
}
AgentStatus ga_set_scripted_model(uintptr_t agent, const char *script, char **err) {
    return ret(agent_set_scripted_model(H(AgentHandle, agent), script), err);
}
AgentStatus ga_use_providers(uintptr_t agent, char **err) {
    return ret(agent_use_providers(H(AgentHandle, agent)), err);
}
AgentStatus ga_last_run_outcome(uintptr_t agent, int32_t *status, char **message, char **err) {
    return ret(agent_last_run_outcome(H(AgentHandle, agent), status, message), err);
}

AgentStatus ga_call_complete(uintptr_t call, const char *result_json, char **err) {
    return ret(agent_call_complete(H(AgentCall, call), result_json), err);
}
AgentStatus ga_call_fail(uintptr_t call, const char *message, char **err) {
    return ret(agent_call_fail(H(AgentCall, call), message), err);
}
AgentStatus ga_call_is_aborted(uintptr_t call, bool *out, char **err) {
    return ret(agent_call_is_aborted(H(AgentCall, call), out), err);
}
AgentStatus ga_call_on_abort(uintptr_t call, uintptr_t ud, char **err) {
    return ret(agent_call_on_abort(H(AgentCall, call), abort_tramp, (void *)ud, fin_tramp), err);
}
AgentStatus ga_tool_call_update(uintptr_t call, const char *partial_json, char **err) {
    return ret(agent_tool_call_update(H(AgentToolCall, call), partial_json), err);
}
AgentStatus ga_stream_push(uintptr_t stream, const char *event_json, char **err) {
    return ret(agent_stream_push(H(AgentStream, stream), event_json), err);
}
AgentStatus ga_stream_on_consumed(uintptr_t stream, uintptr_t ud, char **err) {
    return ret(agent_stream_on_consumed(H(AgentStream, stream), consumed_tramp, (void *)ud, fin_tramp), err);
}

AgentStatus ga_subscribe(uintptr_t agent, int with_json, uintptr_t ud, uint64_t *out_id, char **err) {
    AgentListenerFn fn = with_json == 1 ? listen_full : with_json == 2 ? listen_lean : listen_none;
    return ret(agent_subscribe(H(AgentHandle, agent), fn, (void *)ud, fin_tramp, out_id), err);
}
AgentStatus ga_unsubscribe(uintptr_t agent, uint64_t id, char **err) {
    return ret(agent_unsubscribe(H(AgentHandle, agent), id), err);
}
AgentStatus ga_events_open(uintptr_t agent, const char *options_json, uintptr_t *out, char **err) {
    AgentEventQueue *queue = NULL;
    AgentStatus status = agent_events_open(H(AgentHandle, agent), options_json, &queue);
    if (status == AGENT_OK) *out = (uintptr_t)queue;
    return ret(status, err);
}
AgentStatus ga_events_next(uintptr_t queue, int64_t timeout_ms, char **out_json, char **err) {
    return ret(agent_events_next(H(AgentEventQueue, queue), timeout_ms, out_json), err);
}
AgentStatus ga_events_close(uintptr_t queue, char **err) { return ret(agent_events_close(H(AgentEventQueue, queue)), err); }

AgentStatus ga_tool_new(const char *definition_json, uintptr_t ud, uintptr_t *out, char **err) {
    AgentTool *tool = NULL;
    AgentStatus status = agent_tool_new(definition_json, tool_tramp, (void *)ud, fin_tramp, &tool);
    if (status == AGENT_OK) *out = (uintptr_t)tool;
    return ret(status, err);
}
AgentStatus ga_tool_set_prepare_arguments(uintptr_t tool, uintptr_t ud, char **err) {
    return ret(agent_tool_set_prepare_arguments(H(AgentTool, tool), prepare_tramp, (void *)ud, fin_tramp), err);
}
AgentStatus ga_tool_free(uintptr_t tool, char **err) { return ret(agent_tool_free(H(AgentTool, tool)), err); }

AgentStatus ga_coding_tool_new(const char *root, const char *options_json, uintptr_t ud, uintptr_t *out, char **err) {
    AgentTool *tools[1] = {NULL};
    size_t count = 0;
    AgentStatus status = agent_coding_tools_new(root, options_json, ud ? hook_tramp : NULL, (void *)ud,
                                                ud ? fin_tramp : NULL, tools, 1, &count);
    if (status == AGENT_OK) *out = (uintptr_t)tools[0];
    return ret(status, err);
}

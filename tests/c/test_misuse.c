/* Misuse: NULL for every pointer, null, freed and forged handles of every kind (agent, options,
 * tool, call, run, queue, dispatcher, event), handles of one kind passed as another, invalid UTF-8, malformed JSON and
 * wrong JSON shapes; failed registrations take no reference (their finalizer is not run). */
#include "check.h"

#define BAD_UTF8 "\"caf\xc3\x28\""

static atomic_int finalized, listener_ran;
static void noop_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)ud, (void)id, (void)id_len, (void)args, (void)args_len;
    agent_error_free(agent_tool_call_complete(call, NULL, 0));
}
static void noop_hook(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)ud, (void)input, (void)input_len;
    agent_error_free(agent_hook_call_complete(call, NULL, 0));
}
static void noop_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)ud, (void)request, (void)request_len;
    agent_error_free(agent_stream_end(stream, NULL, 0));
}
static void noop_abort(void *ud) { (void)ud; }
static void noop_consumed(void *ud, AgentStream stream) { (void)ud, (void)stream; }

/* A hook call used as the other kinds, and every bad answer (each leaves the call open). */
static atomic_int hook_ran;
static void misused_hook(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)ud, (void)input, (void)input_len;
    atomic_fetch_add(&hook_ran, 1);
    AgentToolCall as_tool = {call.id};
    AgentStream as_stream = {call.id};
    CHECK_ERR(agent_tool_call_update(as_tool, "{}", NTS), AGENT_ERR_INVALID_HANDLE, "call is not a tool call.");
    CHECK_ERR(agent_tool_call_complete(as_tool, NULL, 0), AGENT_ERR_INVALID_HANDLE, "call is not a tool call.");
    CHECK_ERR(agent_stream_push(as_stream, "{\"type\":\"start\"}", NTS), AGENT_ERR_INVALID_HANDLE, "call is not a stream.");
    CHECK_ERR(agent_stream_on_consumed(as_stream, noop_consumed, NULL, NULL), AGENT_ERR_INVALID_HANDLE, "is not a stream.");
    CHECK_ERR(agent_hook_call_is_aborted(call, NULL), AGENT_ERR_NULL, "out_aborted is NULL");
    CHECK_ERR(agent_hook_call_on_abort(call, NULL, NULL, NULL), AGENT_ERR_NULL, "on_abort is NULL");
    CHECK_ERR(agent_hook_call_fail(call, NULL, NTS), AGENT_ERR_NULL, "message is NULL");
    CHECK_ERR(agent_hook_call_fail(call, "\xff", NTS), AGENT_ERR_INVALID_UTF8, "message is not valid UTF-8");
    CHECK_ERR(agent_hook_call_complete(call, "\"\xff\"", NTS), AGENT_ERR_INVALID_UTF8, "result_json is not valid UTF-8");
    CHECK_ERR(agent_hook_call_complete(call, "nul", NTS), AGENT_ERR_INVALID_JSON, "result_json is not valid JSON");
    CHECK_OK(agent_hook_call_complete(call, NULL, 0));
}

/* NULL out-parameters of the event functions, from a listener. */
static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (atomic_fetch_add(&listener_ran, 1) == 0) {
        CHECK_ERR(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, NULL), AGENT_ERR_NULL, "out_json is NULL");
        CHECK_ERR(agent_event_defer(event, NULL), AGENT_ERR_NULL, "out_reply is NULL");
        AgentStr json;
        CHECK_ERR(agent_event_json(event, 9, &json), AGENT_ERR_INVALID_ARGUMENT, "Unknown event shape 9");
    }
    return AGENT_LISTENER_CONTINUE;
}

int main(void) {
    const uint64_t forged[] = {1, 0x1000, 0xdeadbeefcafef00dULL, 0x00000001ffffffffULL};
    const size_t nforged = sizeof forged / sizeof forged[0];
    char *out = NULL;
    bool flag = false;
    uint64_t id = 0;
    AgentWaitResult waited;

    /* A live agent, a freed agent, and their options. */
    AgentOptions options = {0};
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]", NTS));
    AgentHandle agent = {0}, freed = {0};
    CHECK_OK(agent_new(options, &agent));
    CHECK_OK(agent_set_default_scripted_model("[]", NTS));
    CHECK_OK(agent_new((AgentOptions){0}, &freed));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL));
    CHECK_OK(agent_free(freed));
    AgentTool tool = {0}, freed_tool = {0};
    CHECK_OK(agent_tool_new("{\"name\":\"t\"}", NTS, noop_tool, NULL, NULL, &tool));
    CHECK_OK(agent_tool_new("{\"name\":\"gone\"}", NTS, noop_tool, NULL, NULL, &freed_tool));
    CHECK_OK(agent_tool_free(freed_tool));

    /* Every function taking an agent: null, freed and forged handles, and a handle of another kind. */
    AgentHandle bad_agents[12];
    const char *bad_agent_text[12];
    size_t nbad = 0;
    bad_agents[nbad] = (AgentHandle){0}, bad_agent_text[nbad++] = "agent is the null handle.";
    bad_agents[nbad] = freed, bad_agent_text[nbad++] = "agent is a freed agent.";
    bad_agents[nbad] = (AgentHandle){tool.id}, bad_agent_text[nbad++] = "agent is not a valid agent.";
    for (size_t i = 0; i < nforged; i++) bad_agents[nbad] = (AgentHandle){forged[i]}, bad_agent_text[nbad++] = "agent is not a valid agent.";
    /* A live handle's slot with a generation that was never issued. */
    bad_agents[nbad] = (AgentHandle){agent.id + 7}, bad_agent_text[nbad++] = "agent is not a valid agent.";
    for (size_t i = 0; i < nbad; i++) {
        AgentHandle a = bad_agents[i];
        const char *t = bad_agent_text[i];
        AgentQueue queue = {0};
        AgentTool tools[1] = {tool};
        CHECK_ERR(agent_prompt(a, "\"x\"", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_prompt_text(a, "x", NTS, NULL, 0, NULL, NULL, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_continue(a, NULL, NULL, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_steer(a, "{\"role\":\"user\"}", NTS), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_follow_up(a, "{\"role\":\"user\"}", NTS), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_abort(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_wait_for_idle(a, 0, &waited), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_reset(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_peek_queued_messages(a, &out, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_has_queued_messages(a, &flag), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_clear_steering_queue(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_clear_follow_up_queue(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_clear_all_queues(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_get_state(a, &out, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_messages(a, "[]", NTS), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_tools(a, tools, 1), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_configure(a, "{}", NTS), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_hook(a, AGENT_HOOK_FINISH_TURN, noop_hook, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_stream_fn(a, noop_stream, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_scripted_model(a, "[]", NTS), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_subscribe(a, listener, &finalized, count_finalizer, &id), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_unsubscribe(a, 1), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_queue_open(a, NULL, 0, &queue), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_free(a), AGENT_ERR_INVALID_HANDLE, t);
    }
    CHECK(out == NULL);

    /* Options: null, freed, forged, another kind. */
    AgentOptions freed_options = {0};
    CHECK_OK(agent_options_new(NULL, 0, &freed_options));
    CHECK_OK(agent_options_free(freed_options));
    AgentOptions bad_options[8] = {{0}, freed_options, {agent.id}};
    const char *bad_options_text[8] = {"options is the null handle.", "options is a freed options object.",
                                       "options is not a valid options object."};
    size_t nbo = 3;
    for (size_t i = 0; i < nforged; i++) bad_options[nbo] = (AgentOptions){forged[i]}, bad_options_text[nbo++] = "not a valid options object";
    for (size_t i = 0; i < nbo; i++) {
        AgentOptions o = bad_options[i];
        const char *t = bad_options_text[i];
        AgentHandle a = {0};
        CHECK_ERR(agent_options_free(o), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_add_tool(o, tool), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_set_stream_fn(o, noop_stream, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_set_scripted_model(o, "[]", NTS), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_set_hook(o, AGENT_HOOK_GET_API_KEY, noop_hook, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, t);
        if (i > 0) CHECK_ERR(agent_new(o, &a), AGENT_ERR_INVALID_HANDLE, t); /* the null options: defaults */
        CHECK(a.id == 0);
    }

    /* Tools: null, freed, forged, another kind. */
    AgentTool bad_tools[8] = {{0}, freed_tool, {agent.id}};
    const char *bad_tools_text[8] = {"tool is the null handle.", "tool is a freed tool.", "tool is not a valid tool."};
    size_t nbt = 3;
    for (size_t i = 0; i < nforged; i++) bad_tools[nbt] = (AgentTool){forged[i]}, bad_tools_text[nbt++] = "tool is not a valid tool.";
    CHECK_OK(agent_options_new(NULL, 0, &options));
    for (size_t i = 0; i < nbt; i++) {
        AgentTool t = bad_tools[i];
        CHECK_ERR(agent_tool_free(t), AGENT_ERR_INVALID_HANDLE, bad_tools_text[i]);
        CHECK_ERR(agent_tool_set_prepare_arguments(t, NULL, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE,
                  bad_tools_text[i]);
        CHECK_ERR(agent_options_add_tool(options, t), AGENT_ERR_INVALID_HANDLE, bad_tools_text[i]);
        AgentTool list[2] = {tool, t};
        CHECK_ERR(agent_set_tools(agent, list, 2), AGENT_ERR_INVALID_HANDLE, "tools[1]");
    }
    CHECK_OK(agent_options_free(options));

    /* Calls, runs, queues, dispatchers and events: null, forged, another kind. */
    for (size_t i = 0; i < nforged + 2; i++) {
        uint64_t h = i < nforged ? forged[i] : i == nforged ? agent.id : 0;
        const char *call_text = h ? "call is not a valid call object." : "call is the null handle.";
        bool aborted;
        AgentEvent event;
        AgentNext next;
        AgentRunOutcome outcome;
        AgentStr json;
        CHECK_ERR(agent_hook_call_complete((AgentHookCall){h}, NULL, 0), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_hook_call_fail((AgentHookCall){h}, "x", NTS), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_hook_call_is_aborted((AgentHookCall){h}, &aborted), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_hook_call_on_abort((AgentHookCall){h}, noop_abort, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_tool_call_complete((AgentToolCall){h}, NULL, 0), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_tool_call_fail((AgentToolCall){h}, "x", NTS), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_tool_call_update((AgentToolCall){h}, "{}", NTS), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_tool_call_on_abort((AgentToolCall){h}, noop_abort, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_stream_push((AgentStream){h}, "{\"type\":\"start\"}", NTS), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_stream_end((AgentStream){h}, NULL, 0), AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_stream_on_consumed((AgentStream){h}, noop_consumed, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, call_text);
        CHECK_ERR(agent_reply_continue((AgentReply){h}), AGENT_ERR_INVALID_HANDLE, call_text);
        const char *queue_text = h ? "queue is not a valid event queue." : "queue is the null handle.";
        CHECK_ERR(agent_queue_next((AgentQueue){h}, 0, &event, &next), AGENT_ERR_INVALID_HANDLE, queue_text);
        CHECK_ERR(agent_queue_close((AgentQueue){h}), AGENT_ERR_INVALID_HANDLE, queue_text);
        const char *run_text = h ? "run is not a valid run." : "run is the null handle.";
        CHECK_ERR(agent_run_outcome((AgentRun){h}, &outcome), AGENT_ERR_INVALID_HANDLE, run_text);
        CHECK_ERR(agent_run_wait((AgentRun){h}, 0, &waited), AGENT_ERR_INVALID_HANDLE, run_text);
        CHECK_ERR(agent_run_abort((AgentRun){h}), AGENT_ERR_INVALID_HANDLE, run_text);
        CHECK_ERR(agent_run_messages((AgentRun){h}, &out, NULL), AGENT_ERR_INVALID_HANDLE, run_text);
        CHECK_ERR(agent_run_free((AgentRun){h}), AGENT_ERR_INVALID_HANDLE, run_text);
        CHECK_ERR(agent_dispatch((AgentDispatcher){h}, 0, NULL), AGENT_ERR_INVALID_HANDLE, "dispatcher");
        CHECK_ERR(agent_dispatcher_free((AgentDispatcher){h}), AGENT_ERR_INVALID_HANDLE, "dispatcher");
        /* An event struct that no source issued. */
        AgentEvent forged_event = {0};
        forged_event.source = h;
        forged_event.sequence = 1;
        CHECK_ERR(agent_event_json(&forged_event, AGENT_EVENT_SHAPE_LEAN, &json), AGENT_ERR_INVALID_ARGUMENT,
                  "event is no longer valid");
        AgentReply reply;
        CHECK_ERR(agent_event_defer(&forged_event, &reply), AGENT_ERR_INVALID_ARGUMENT, "event is no longer valid");
        CHECK(out == NULL);
    }
    {
        AgentStr json;
        AgentReply reply;
        CHECK_ERR(agent_event_json(NULL, AGENT_EVENT_SHAPE_FULL, &json), AGENT_ERR_NULL, "event is NULL.");
        CHECK_ERR(agent_event_defer(NULL, &reply), AGENT_ERR_NULL, "event is NULL.");
    }

    /* NULL pointer arguments of the agent functions. */
    AgentQueue queue = {0};
    CHECK_ERR(agent_prompt(agent, NULL, NTS, NULL, NULL, NULL), AGENT_ERR_NULL, "input_json is NULL.");
    CHECK_ERR(agent_prompt_text(agent, NULL, NTS, NULL, 0, NULL, NULL, NULL), AGENT_ERR_NULL, "text is NULL.");
    CHECK_ERR(agent_steer(agent, NULL, NTS), AGENT_ERR_NULL, "message_json is NULL.");
    CHECK_ERR(agent_follow_up(agent, NULL, NTS), AGENT_ERR_NULL, "message_json is NULL.");
    CHECK_ERR(agent_peek_queued_messages(agent, NULL, NULL), AGENT_ERR_NULL, "out_json is NULL.");
    CHECK_ERR(agent_wait_for_idle(agent, 0, NULL), AGENT_ERR_NULL, "out_result is NULL.");
    CHECK_ERR(agent_has_queued_messages(agent, NULL), AGENT_ERR_NULL, "out_has is NULL.");
    CHECK_ERR(agent_get_state(agent, NULL, NULL), AGENT_ERR_NULL, "out_state_json is NULL.");
    CHECK_ERR(agent_set_messages(agent, NULL, NTS), AGENT_ERR_NULL, "messages_json is NULL.");
    CHECK_ERR(agent_configure(agent, NULL, NTS), AGENT_ERR_NULL, "patch_json is NULL.");
    CHECK_ERR(agent_set_scripted_model(agent, NULL, NTS), AGENT_ERR_NULL, "script_json is NULL.");
    CHECK_ERR(agent_subscribe(agent, NULL, &finalized, count_finalizer, &id), AGENT_ERR_NULL, "listener is NULL.");
    CHECK_ERR(agent_subscribe(agent, listener, &finalized, count_finalizer, NULL), AGENT_ERR_NULL, "out_id is NULL.");
    CHECK_ERR(agent_queue_open(agent, NULL, 0, NULL), AGENT_ERR_NULL, "out_queue is NULL.");
    CHECK_ERR(agent_set_default_scripted_model(NULL, NTS), AGENT_ERR_NULL, "script_json is NULL.");
    CHECK_ERR(agent_tool_new(NULL, NTS, noop_tool, &finalized, count_finalizer, &tool), AGENT_ERR_NULL, "definition_json is NULL.");
    CHECK_ERR(agent_tool_new("{\"name\":\"t\"}", NTS, NULL, &finalized, count_finalizer, &tool), AGENT_ERR_NULL, "execute is NULL.");
    CHECK_ERR(agent_tool_new("{\"name\":\"t\"}", NTS, noop_tool, &finalized, count_finalizer, NULL), AGENT_ERR_NULL, "out_tool is NULL.");
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_ERR(agent_options_set_scripted_model(options, NULL, NTS), AGENT_ERR_NULL, "script_json is NULL.");
    CHECK_OK(agent_options_free(options));
    CHECK_OK(agent_queue_open(agent, NULL, 0, &queue));
    AgentEvent event;
    AgentNext next;
    CHECK_ERR(agent_queue_next(queue, 0, NULL, &next), AGENT_ERR_NULL, "out_event is NULL.");
    CHECK_ERR(agent_queue_next(queue, 0, &event, NULL), AGENT_ERR_NULL, "out_next is NULL.");
    CHECK_OK(agent_queue_close(queue));
    CHECK_ERR(agent_run_outcome((AgentRun){0}, NULL), AGENT_ERR_NULL, "out_outcome is NULL.");
    CHECK_ERR(agent_dispatcher_new(NULL), AGENT_ERR_NULL, "out_dispatcher is NULL.");

    /* Invalid UTF-8 in every string argument. */
    CHECK_ERR(agent_prompt(agent, BAD_UTF8, NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_UTF8, "input_json is not valid UTF-8");
    CHECK_ERR(agent_prompt_text(agent, "caf\xc3\x28", NTS, NULL, 0, NULL, NULL, NULL), AGENT_ERR_INVALID_UTF8, "text is not valid UTF-8");
    CHECK_ERR(agent_prompt_text(agent, "x", NTS, "[" BAD_UTF8 "]", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_UTF8, "images_json is not valid UTF-8");
    CHECK_ERR(agent_steer(agent, "{\"role\":" BAD_UTF8 "}", NTS), AGENT_ERR_INVALID_UTF8, "message_json is not valid UTF-8");
    CHECK_ERR(agent_follow_up(agent, "{\"role\":" BAD_UTF8 "}", NTS), AGENT_ERR_INVALID_UTF8, "message_json is not valid UTF-8");
    CHECK_ERR(agent_configure(agent, "{\"sessionId\":" BAD_UTF8 "}", NTS), AGENT_ERR_INVALID_UTF8, "patch_json is not valid UTF-8");
    CHECK_ERR(agent_set_scripted_model(agent, "[" BAD_UTF8 "]", NTS), AGENT_ERR_INVALID_UTF8, "script_json is not valid UTF-8");
    CHECK_ERR(agent_set_default_scripted_model("[" BAD_UTF8 "]", NTS), AGENT_ERR_INVALID_UTF8, "script_json is not valid UTF-8");
    CHECK_ERR(agent_queue_open(agent, "{\"capacity\":" BAD_UTF8 "}", NTS, &queue), AGENT_ERR_INVALID_UTF8, "options_json is not valid UTF-8");
    CHECK_ERR(agent_tool_new("{\"name\":" BAD_UTF8 "}", NTS, noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_UTF8,
              "definition_json is not valid UTF-8");

    /* Malformed JSON and wrong shapes. */
    CHECK_ERR(agent_prompt(agent, "{\"role\":", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json is not valid JSON");
    CHECK_ERR(agent_prompt(agent, "42", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json must be a message");
    CHECK_ERR(agent_prompt(agent, "{\"content\":\"x\"}", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json must be a message");
    CHECK_ERR(agent_prompt(agent, "[{\"role\":\"user\"},{\"role\":null}]", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON,
              "input_json[1] must be a message");
    CHECK_ERR(agent_prompt(agent, "\"a\" \"b\"", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json is not valid JSON");
    CHECK_ERR(agent_prompt_text(agent, "x", NTS, "{}", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON,
              "images_json must be a JSON array of image objects.");
    CHECK_ERR(agent_prompt_text(agent, "x", NTS, "[1]", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON, "images_json must be a JSON array");
    CHECK_ERR(agent_prompt_text(agent, "x", NTS, "[", NTS, NULL, NULL, NULL), AGENT_ERR_INVALID_JSON, "images_json is not valid JSON");
    CHECK_ERR(agent_steer(agent, "[]", NTS), AGENT_ERR_INVALID_JSON, "message_json must be a message");
    CHECK_ERR(agent_tool_new("{\"label\":\"no name\"}", NTS, noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_JSON,
              "definition_json must be a JSON object with a string \"name\".");
    CHECK_ERR(agent_tool_new("[\"t\"]", NTS, noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_JSON, "string \"name\"");
    CHECK_ERR(agent_tool_new("{\"name\":", NTS, noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_JSON,
              "definition_json is not valid JSON");
    /* Nothing of the above started a run. */
    char *state = state_of(agent);
    CHECK_HAS(state, "\"isStreaming\":false");
    CHECK_HAS(state, "\"messages\":[]");
    agent_string_free(state);

    /* None of the failed registrations took a reference: no finalizer ran. */
    CHECK_EQ_INT(atomic_load(&finalized), 0);

    /* Wrong-kind calls and bad answers inside a hook, NULL out-parameters inside a listener; an
     * image prompt. */
    CHECK_OK(agent_subscribe(agent, listener, &finalized, count_finalizer, &id));
    CHECK_OK(agent_set_hook(agent, AGENT_HOOK_TRANSFORM_CONTEXT, misused_hook, NULL, NULL));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "look", NTS, "[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}]", NTS, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    CHECK(atomic_load(&listener_ran) > 0);
    CHECK_EQ_INT(atomic_load(&hook_ran), 1);
    state = state_of(agent);
    CHECK_HAS(state, "{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}");
    agent_string_free(state);
    CHECK_OK(agent_tool_free(tool));
    CHECK_OK(agent_free(agent));
    WAIT_UNTIL(atomic_load(&finalized) == 1);
    printf("test_misuse: ok\n");
    return 0;
}

/* Misuse: NULL for every pointer, freed and forged handles of every kind (agent, options, tool,
 * call, queue, event), handles of one kind passed as another, invalid UTF-8, malformed JSON and
 * wrong JSON shapes; failed registrations take no reference (their finalizer is not run). */
#include "check.h"

#define BAD_UTF8 "\"caf\xc3\x28\""

static atomic_int finalized, listener_ran;
static void noop_tool(void *ud, const char *id, const char *args, AgentToolCall *call) {
    (void)ud, (void)id, (void)args;
    agent_call_complete(call, NULL);
}
static void noop_hook(void *ud, const char *input, AgentCall *call) {
    (void)ud, (void)input;
    agent_call_complete(call, NULL);
}
static void noop_stream(void *ud, const char *request, AgentStream *stream) {
    (void)ud, (void)request;
    agent_call_complete(stream, NULL);
}
static void noop_abort(void *ud) { (void)ud; }
static void noop_consumed(void *ud, AgentStream *stream) { (void)ud, (void)stream; }

/* Calls of the wrong kind, and every NULL out-parameter of the event views, from a listener. */
static void listener(void *ud, const AgentEvent *event, AgentCall *call) {
    (void)ud;
    if (atomic_fetch_add(&listener_ran, 1) == 0) {
        const char *text = NULL;
        size_t len = 0;
        CHECK_ERR(agent_tool_call_update(call, "{}"), AGENT_ERR_INVALID_HANDLE, "call is not a tool execution.");
        CHECK_ERR(agent_stream_push(call, "{\"type\":\"start\"}"), AGENT_ERR_INVALID_HANDLE, "call is not a stream.");
        CHECK_ERR(agent_stream_on_consumed(call, noop_consumed, NULL, NULL), AGENT_ERR_INVALID_HANDLE,
                  "stream is not a stream.");
        CHECK_ERR(agent_event_type(event, NULL), AGENT_ERR_NULL, "out_type is NULL");
        CHECK_ERR(agent_event_update_type(event, NULL), AGENT_ERR_NULL, "out_type is NULL");
        CHECK_ERR(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, NULL), AGENT_ERR_NULL, "out_json is NULL");
        CHECK_ERR(agent_event_delta(event, NULL, &len), AGENT_ERR_NULL, "out_text is NULL");
        CHECK_ERR(agent_event_delta(event, &text, NULL), AGENT_ERR_NULL, "out_len is NULL");
        CHECK_ERR(agent_call_is_aborted(call, NULL), AGENT_ERR_NULL, "out_aborted is NULL");
        CHECK_ERR(agent_call_on_abort(call, NULL, NULL, NULL), AGENT_ERR_NULL, "on_abort is NULL");
        CHECK_ERR(agent_call_fail(call, NULL), AGENT_ERR_NULL, "message is NULL");
        CHECK_ERR(agent_call_fail(call, "\xff"), AGENT_ERR_INVALID_UTF8, "message is not valid UTF-8");
        CHECK_ERR(agent_call_complete(call, "\"\xff\""), AGENT_ERR_INVALID_UTF8, "result_json is not valid UTF-8");
        CHECK_ERR(agent_call_complete(call, "nul"), AGENT_ERR_INVALID_JSON, "result_json is not valid JSON");
    }
    CHECK_OK(agent_call_complete(call, NULL));
}

int main(void) {
    void *forged[] = {(void *)(uintptr_t)1, (void *)(uintptr_t)0x1000, (void *)(uintptr_t)0xdeadbeefcafef00dULL,
                      (void *)(uintptr_t)0x00000001ffffffffULL};
    const size_t nforged = sizeof forged / sizeof forged[0];
    char *out = NULL;
    bool flag = false;
    uint64_t id = 0;

    /* A live agent, a freed agent, and their options. */
    AgentOptions *options = NULL;
    CHECK_OK(agent_options_new(NULL, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]"));
    AgentHandle *agent = NULL, *freed = NULL;
    CHECK_OK(agent_new(options, &agent));
    CHECK_OK(agent_set_default_scripted_model("[]"));
    CHECK_OK(agent_new(NULL, &freed));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL));
    CHECK_OK(agent_free(freed));
    AgentTool *tool = NULL, *freed_tool = NULL;
    CHECK_OK(agent_tool_new("{\"name\":\"t\"}", noop_tool, NULL, NULL, &tool));
    CHECK_OK(agent_tool_new("{\"name\":\"gone\"}", noop_tool, NULL, NULL, &freed_tool));
    CHECK_OK(agent_tool_free(freed_tool));

    /* Every function taking an agent: NULL, freed and forged handles, and a handle of another kind. */
    AgentHandle *bad_agents[12];
    const char *bad_agent_text[12];
    size_t nbad = 0;
    bad_agents[nbad] = NULL, bad_agent_text[nbad++] = "agent is NULL.";
    bad_agents[nbad] = freed, bad_agent_text[nbad++] = "agent is a freed agent.";
    bad_agents[nbad] = (AgentHandle *)tool, bad_agent_text[nbad++] = "agent is not a valid agent.";
    for (size_t i = 0; i < nforged; i++) bad_agents[nbad] = forged[i], bad_agent_text[nbad++] = "agent is not a valid agent.";
    /* A live handle's slot with a generation that was never issued. */
    bad_agents[nbad] = (AgentHandle *)((uintptr_t)agent + 7), bad_agent_text[nbad++] = "agent is not a valid agent.";
    for (size_t i = 0; i < nbad; i++) {
        AgentHandle *a = bad_agents[i];
        const char *t = bad_agent_text[i];
        AgentEventQueue *queue = NULL;
        AgentTool *tools[1] = {tool};
        CHECK_ERR(agent_prompt(a, "\"x\"", NULL, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_prompt_text(a, "x", NULL, NULL, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_continue(a, NULL, NULL), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_steer(a, "{\"role\":\"user\"}"), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_follow_up(a, "{\"role\":\"user\"}"), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_abort(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_wait_for_idle(a, 0), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_reset(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_peek_queued_messages(a, &out), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_has_queued_messages(a, &flag), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_clear_steering_queue(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_clear_follow_up_queue(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_clear_all_queues(a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_get_state(a, &out), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_messages(a, "[]"), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_tools(a, tools, 1), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_configure(a, "{}"), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_hook(a, AGENT_HOOK_FINISH_TURN, noop_hook, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_stream_fn(a, noop_stream, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_set_scripted_model(a, "[]"), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_subscribe(a, listener, &finalized, count_finalizer, &id), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_unsubscribe(a, 1), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_events_open(a, NULL, &queue), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_free(a), AGENT_ERR_INVALID_HANDLE, t);
    }
    CHECK(out == NULL);

    /* Options: NULL, freed, forged, another kind. */
    AgentOptions *freed_options = NULL;
    CHECK_OK(agent_options_new(NULL, &freed_options));
    CHECK_OK(agent_options_free(freed_options));
    AgentOptions *bad_options[8] = {freed_options, (AgentOptions *)agent};
    const char *bad_options_text[8] = {"options is a freed options object.", "options is not a valid options object."};
    size_t nbo = 2;
    for (size_t i = 0; i < nforged; i++) bad_options[nbo] = forged[i], bad_options_text[nbo++] = "not a valid options object";
    for (size_t i = 0; i < nbo; i++) {
        AgentOptions *o = bad_options[i];
        const char *t = bad_options_text[i];
        AgentHandle *a = NULL;
        CHECK_ERR(agent_options_free(o), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_add_tool(o, tool), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_set_stream_fn(o, noop_stream, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_set_scripted_model(o, "[]"), AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_options_set_hook(o, AGENT_HOOK_GET_API_KEY, noop_hook, &finalized, count_finalizer),
                  AGENT_ERR_INVALID_HANDLE, t);
        CHECK_ERR(agent_new(o, &a), AGENT_ERR_INVALID_HANDLE, t);
        CHECK(a == NULL);
    }
    CHECK_ERR(agent_options_free(NULL), AGENT_ERR_INVALID_HANDLE, "options is NULL.");

    /* Tools: NULL, freed, forged, another kind. */
    AgentTool *bad_tools[8] = {NULL, freed_tool, (AgentTool *)agent};
    const char *bad_tools_text[8] = {"tool is NULL.", "tool is a freed tool.", "tool is not a valid tool."};
    size_t nbt = 3;
    for (size_t i = 0; i < nforged; i++) bad_tools[nbt] = forged[i], bad_tools_text[nbt++] = "tool is not a valid tool.";
    CHECK_OK(agent_options_new(NULL, &options));
    for (size_t i = 0; i < nbt; i++) {
        AgentTool *t = bad_tools[i];
        CHECK_ERR(agent_tool_free(t), AGENT_ERR_INVALID_HANDLE, bad_tools_text[i]);
        CHECK_ERR(agent_tool_set_prepare_arguments(t, NULL, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE,
                  bad_tools_text[i]);
        CHECK_ERR(agent_options_add_tool(options, t), AGENT_ERR_INVALID_HANDLE, bad_tools_text[i]);
        AgentTool *list[2] = {tool, t};
        CHECK_ERR(agent_set_tools(agent, list, 2), AGENT_ERR_INVALID_HANDLE, "tools[1]");
    }
    CHECK_OK(agent_options_free(options));

    /* Calls, queues and events: NULL, forged, another kind. */
    for (size_t i = 0; i < nforged + 1; i++) {
        void *h = i < nforged ? forged[i] : (void *)agent;
        bool aborted;
        char *json = NULL;
        const char *text = NULL;
        size_t len;
        CHECK_ERR(agent_call_complete(h, NULL), AGENT_ERR_INVALID_HANDLE, "call is not a valid call object.");
        CHECK_ERR(agent_call_fail(h, "x"), AGENT_ERR_INVALID_HANDLE, "call is not a valid call object.");
        CHECK_ERR(agent_call_is_aborted(h, &aborted), AGENT_ERR_INVALID_HANDLE, "call is not a valid call object.");
        CHECK_ERR(agent_call_on_abort(h, noop_abort, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE,
                  "call is not a valid call object.");
        CHECK_ERR(agent_tool_call_update(h, "{}"), AGENT_ERR_INVALID_HANDLE, "call is not a valid call object.");
        CHECK_ERR(agent_stream_push(h, "{\"type\":\"start\"}"), AGENT_ERR_INVALID_HANDLE, "call is not a valid call object.");
        CHECK_ERR(agent_stream_on_consumed(h, noop_consumed, &finalized, count_finalizer), AGENT_ERR_INVALID_HANDLE,
                  "call is not a valid call object.");
        CHECK_ERR(agent_events_next(h, 0, &json), AGENT_ERR_INVALID_HANDLE, "queue is not a valid event queue.");
        CHECK_ERR(agent_events_close(h), AGENT_ERR_INVALID_HANDLE, "queue is not a valid event queue.");
        CHECK_ERR(agent_event_type(h, &text), AGENT_ERR_INVALID_HANDLE, "event is not a valid event.");
        CHECK_ERR(agent_event_update_type(h, &text), AGENT_ERR_INVALID_HANDLE, "event is not a valid event.");
        CHECK_ERR(agent_event_json(h, AGENT_EVENT_SHAPE_LEAN, &text), AGENT_ERR_INVALID_HANDLE, "event is not a valid event.");
        CHECK_ERR(agent_event_delta(h, &text, &len), AGENT_ERR_INVALID_HANDLE, "event is not a valid event.");
        CHECK(json == NULL && text == NULL);
    }
    {
        bool aborted;
        char *json = NULL;
        const char *text = NULL;
        size_t len;
        CHECK_ERR(agent_call_complete(NULL, NULL), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_call_fail(NULL, "x"), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_call_is_aborted(NULL, &aborted), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_call_on_abort(NULL, noop_abort, NULL, NULL), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_tool_call_update(NULL, "{}"), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_stream_push(NULL, "{}"), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_stream_on_consumed(NULL, noop_consumed, NULL, NULL), AGENT_ERR_NULL, "call is NULL.");
        CHECK_ERR(agent_events_next(NULL, 0, &json), AGENT_ERR_INVALID_HANDLE, "queue is NULL.");
        CHECK_ERR(agent_events_close(NULL), AGENT_ERR_INVALID_HANDLE, "queue is NULL.");
        CHECK_ERR(agent_event_type(NULL, &text), AGENT_ERR_INVALID_HANDLE, "event is NULL.");
        CHECK_ERR(agent_event_update_type(NULL, &text), AGENT_ERR_INVALID_HANDLE, "event is NULL.");
        CHECK_ERR(agent_event_json(NULL, AGENT_EVENT_SHAPE_FULL, &text), AGENT_ERR_INVALID_HANDLE, "event is NULL.");
        CHECK_ERR(agent_event_delta(NULL, &text, &len), AGENT_ERR_INVALID_HANDLE, "event is NULL.");
    }

    /* NULL pointer arguments of the agent functions. */
    AgentEventQueue *queue = NULL;
    CHECK_ERR(agent_prompt(agent, NULL, NULL, NULL), AGENT_ERR_NULL, "input_json is NULL.");
    CHECK_ERR(agent_prompt_text(agent, NULL, NULL, NULL, NULL), AGENT_ERR_NULL, "text is NULL.");
    CHECK_ERR(agent_steer(agent, NULL), AGENT_ERR_NULL, "message_json is NULL.");
    CHECK_ERR(agent_follow_up(agent, NULL), AGENT_ERR_NULL, "message_json is NULL.");
    CHECK_ERR(agent_peek_queued_messages(agent, NULL), AGENT_ERR_NULL, "out_json is NULL.");
    CHECK_ERR(agent_has_queued_messages(agent, NULL), AGENT_ERR_NULL, "out_has is NULL.");
    CHECK_ERR(agent_get_state(agent, NULL), AGENT_ERR_NULL, "out_state_json is NULL.");
    CHECK_ERR(agent_set_messages(agent, NULL), AGENT_ERR_NULL, "messages_json is NULL.");
    CHECK_ERR(agent_configure(agent, NULL), AGENT_ERR_NULL, "patch_json is NULL.");
    CHECK_ERR(agent_set_scripted_model(agent, NULL), AGENT_ERR_NULL, "script_json is NULL.");
    CHECK_ERR(agent_subscribe(agent, NULL, &finalized, count_finalizer, &id), AGENT_ERR_NULL, "listener is NULL.");
    CHECK_ERR(agent_subscribe(agent, listener, &finalized, count_finalizer, NULL), AGENT_ERR_NULL, "out_id is NULL.");
    CHECK_ERR(agent_events_open(agent, NULL, NULL), AGENT_ERR_NULL, "out_queue is NULL.");
    CHECK_ERR(agent_set_default_scripted_model(NULL), AGENT_ERR_NULL, "script_json is NULL.");
    CHECK_ERR(agent_tool_new(NULL, noop_tool, &finalized, count_finalizer, &tool), AGENT_ERR_NULL, "definition_json is NULL.");
    CHECK_ERR(agent_tool_new("{\"name\":\"t\"}", NULL, &finalized, count_finalizer, &tool), AGENT_ERR_NULL, "execute is NULL.");
    CHECK_ERR(agent_tool_new("{\"name\":\"t\"}", noop_tool, &finalized, count_finalizer, NULL), AGENT_ERR_NULL, "out_tool is NULL.");
    CHECK_OK(agent_options_new(NULL, &options));
    CHECK_ERR(agent_options_set_scripted_model(options, NULL), AGENT_ERR_NULL, "script_json is NULL.");
    CHECK_OK(agent_options_free(options));
    CHECK_OK(agent_events_open(agent, NULL, &queue));
    CHECK_ERR(agent_events_next(queue, 0, NULL), AGENT_ERR_NULL, "out_event_json is NULL.");
    CHECK_OK(agent_events_close(queue));

    /* Invalid UTF-8 in every string argument. */
    CHECK_ERR(agent_prompt(agent, BAD_UTF8, NULL, NULL), AGENT_ERR_INVALID_UTF8, "input_json is not valid UTF-8");
    CHECK_ERR(agent_prompt_text(agent, "caf\xc3\x28", NULL, NULL, NULL), AGENT_ERR_INVALID_UTF8, "text is not valid UTF-8");
    CHECK_ERR(agent_prompt_text(agent, "x", "[" BAD_UTF8 "]", NULL, NULL), AGENT_ERR_INVALID_UTF8, "images_json is not valid UTF-8");
    CHECK_ERR(agent_steer(agent, "{\"role\":" BAD_UTF8 "}"), AGENT_ERR_INVALID_UTF8, "message_json is not valid UTF-8");
    CHECK_ERR(agent_follow_up(agent, "{\"role\":" BAD_UTF8 "}"), AGENT_ERR_INVALID_UTF8, "message_json is not valid UTF-8");
    CHECK_ERR(agent_configure(agent, "{\"sessionId\":" BAD_UTF8 "}"), AGENT_ERR_INVALID_UTF8, "patch_json is not valid UTF-8");
    CHECK_ERR(agent_set_scripted_model(agent, "[" BAD_UTF8 "]"), AGENT_ERR_INVALID_UTF8, "script_json is not valid UTF-8");
    CHECK_ERR(agent_set_default_scripted_model("[" BAD_UTF8 "]"), AGENT_ERR_INVALID_UTF8, "script_json is not valid UTF-8");
    CHECK_ERR(agent_events_open(agent, "{\"shape\":" BAD_UTF8 "}", &queue), AGENT_ERR_INVALID_UTF8, "options_json is not valid UTF-8");
    CHECK_ERR(agent_tool_new("{\"name\":" BAD_UTF8 "}", noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_UTF8,
              "definition_json is not valid UTF-8");

    /* Malformed JSON and wrong shapes. */
    CHECK_ERR(agent_prompt(agent, "{\"role\":", NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json is not valid JSON");
    CHECK_ERR(agent_prompt(agent, "42", NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json must be a message");
    CHECK_ERR(agent_prompt(agent, "{\"content\":\"x\"}", NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json must be a message");
    CHECK_ERR(agent_prompt(agent, "[{\"role\":\"user\"},{\"role\":null}]", NULL, NULL), AGENT_ERR_INVALID_JSON,
              "input_json[1] must be a message");
    CHECK_ERR(agent_prompt(agent, "\"a\" \"b\"", NULL, NULL), AGENT_ERR_INVALID_JSON, "input_json is not valid JSON");
    CHECK_ERR(agent_prompt_text(agent, "x", "{}", NULL, NULL), AGENT_ERR_INVALID_JSON,
              "images_json must be a JSON array of image objects.");
    CHECK_ERR(agent_prompt_text(agent, "x", "[1]", NULL, NULL), AGENT_ERR_INVALID_JSON, "images_json must be a JSON array");
    CHECK_ERR(agent_prompt_text(agent, "x", "[", NULL, NULL), AGENT_ERR_INVALID_JSON, "images_json is not valid JSON");
    CHECK_ERR(agent_steer(agent, "[]"), AGENT_ERR_INVALID_JSON, "message_json must be a message");
    CHECK_ERR(agent_tool_new("{\"label\":\"no name\"}", noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_JSON,
              "definition_json must be a JSON object with a string \"name\".");
    CHECK_ERR(agent_tool_new("[\"t\"]", noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_JSON, "string \"name\"");
    CHECK_ERR(agent_tool_new("{\"name\":", noop_tool, NULL, NULL, &tool), AGENT_ERR_INVALID_JSON,
              "definition_json is not valid JSON");
    /* Nothing of the above started a run. */
    char *state = state_of(agent);
    CHECK_HAS(state, "\"isStreaming\":false");
    CHECK_HAS(state, "\"messages\":[]");
    agent_string_free(state);

    /* None of the failed registrations took a reference: no finalizer ran. */
    CHECK_EQ_INT(atomic_load(&finalized), 0);

    /* Wrong-kind calls and NULL out-parameters inside a listener; an image prompt. */
    CHECK_OK(agent_subscribe(agent, listener, &finalized, count_finalizer, &id));
    CHECK_OK(agent_prompt_text(agent, "look", "[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}]", NULL, NULL));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK(atomic_load(&listener_ran) > 0);
    state = state_of(agent);
    CHECK_HAS(state, "{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}");
    agent_string_free(state);
    CHECK_OK(agent_tool_free(tool));
    CHECK_OK(agent_free(agent));
    WAIT_UNTIL(atomic_load(&finalized) == 1);
    printf("test_misuse: ok\n");
    return 0;
}

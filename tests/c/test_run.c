/* A full run from C: parallel tools (one answering later from another thread, with progress
 * updates), prepareArguments, every hook kind, a listener reading the event struct (JSON on request) and
 * steering, a follow-up, then state reads, agent_set_messages, agent_set_tools, queues,
 * agent_continue, agent_reset, and finalizer counts. */
#include "check.h"

static AgentHandle g_agent;
static atomic_int hook_calls[9];
static atomic_int hook_finalized, tool_finalized, listener_finalized, prepare_finalized;
static atomic_int exec_add, exec_slow, prepare_calls, steered, deltas;
static char types[8192];
static char delta_text[1024];
static AgentEvent saved_event; /* a copy, used after its callback */
static pthread_t slow_thread;
static int slow_thread_started;

static const char *SCRIPT =
    "[{\"content\":[{\"type\":\"text\",\"text\":\"Let me compute.\",\"chunks\":3},"
    "  {\"type\":\"toolCall\",\"id\":\"call_add\",\"name\":\"add\",\"arguments\":{\"x\":1,\"y\":2}},"
    "  {\"type\":\"toolCall\",\"id\":\"call_slow\",\"name\":\"slow\",\"arguments\":{\"ms\":20},\"chunks\":2}]},"
    " {\"content\":[{\"type\":\"text\",\"text\":\"Sum is 3.\"}]},"
    " {\"content\":[{\"type\":\"text\",\"text\":\"Follow-up answered.\"}]},"
    " {\"content\":[{\"type\":\"text\",\"text\":\"Continued.\"}]}]";

/* --- tools ---------------------------------------------------------------------------------- */

static void prepare_add(void *ud, const char *args, size_t args_len, AgentHookCall call) {
    (void)args_len;
    (void)ud;
    atomic_fetch_add(&prepare_calls, 1);
    CHECK_HAS(args, "\"x\":1");
    /* Renames x/y to a/b; wrong JSON first, which leaves the call open. */
    CHECK_ERR(agent_hook_call_complete(call, "{\"a\":", NTS), AGENT_ERR_INVALID_JSON, "result_json is not valid JSON");
    CHECK_OK(agent_hook_call_complete(call, "{\"a\":1,\"b\":2}", NTS));
    CHECK_ERR(agent_hook_call_complete(call, NULL, 0), AGENT_ERR_ALREADY_COMPLETED, "already answered");
}

static void exec_add_fn(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud;
    atomic_fetch_add(&exec_add, 1);
    CHECK(strcmp(id, "call_add") == 0);
    CHECK_HAS(args, "\"a\":1");
    CHECK_HAS(args, "\"b\":2");
    bool aborted = true;
    CHECK_OK(agent_tool_call_is_aborted(call, &aborted));
    CHECK(!aborted);
    CHECK_OK(agent_tool_call_update(call, "{\"content\":[{\"type\":\"text\",\"text\":\"adding\"}],\"details\":{}}", NTS));
    CHECK_ERR(agent_tool_call_update(call, "{", NTS), AGENT_ERR_INVALID_JSON, "partial_result_json is not valid JSON");
    CHECK_ERR(agent_tool_call_complete(call, "[1]", NTS), AGENT_ERR_INVALID_JSON, "The answer must be a JSON object");
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"3\"}],\"details\":{\"sum\":3}}", NTS));
    CHECK_ERR(agent_tool_call_update(call, "{}", NTS), AGENT_ERR_ALREADY_COMPLETED, "already answered");
    CHECK_ERR(agent_tool_call_fail(call, "late", NTS), AGENT_ERR_ALREADY_COMPLETED, "already answered");
}

/* The slow tool answers from its own thread, after progress updates. */
static AgentToolCall slow_call;

static void *slow_worker(void *arg) {
    (void)arg;
    AgentToolCall call = slow_call;
    sleep_ms(20);
    CHECK_OK(agent_tool_call_update(call, "{\"content\":[{\"type\":\"text\",\"text\":\"50%\"}],\"details\":{}}", NTS));
    CHECK_OK(agent_tool_call_update(call, "{\"content\":[{\"type\":\"text\",\"text\":\"99%\"}],\"details\":{}}", NTS));
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"slept\"}],\"details\":{}}", NTS));
    CHECK_ERR(agent_tool_call_complete(call, NULL, 0), AGENT_ERR_ALREADY_COMPLETED, "The call was already answered.");
    CHECK_ERR(agent_tool_call_update(call, "{}", NTS), AGENT_ERR_ALREADY_COMPLETED, "already answered");
    return NULL;
}

static void exec_slow_fn(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud;
    (void)args;
    atomic_fetch_add(&exec_slow, 1);
    CHECK(strcmp(id, "call_slow") == 0);
    /* Parallel mode: every execute starts before any completion is processed. */
    CHECK_EQ_INT(atomic_load(&exec_add), 1);
    slow_call = call;
    CHECK(pthread_create(&slow_thread, NULL, slow_worker, NULL) == 0);
    slow_thread_started = 1;
}

static void count_finalizer_hook(void *ud) {
    (void)ud;
    atomic_fetch_add(&hook_finalized, 1);
}

/* --- hooks ---------------------------------------------------------------------------------- */

static void hook(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    int kind = (int)(intptr_t)ud;
    int n = atomic_fetch_add(&hook_calls[kind], 1);
    switch (kind) {
    case AGENT_HOOK_CONVERT_TO_LLM:
        CHECK(input[0] == '[');
        if (n == 0) CHECK_ERR(agent_hook_call_complete(call, "{}", NTS), AGENT_ERR_INVALID_JSON,
                              "The answer must be a JSON array of messages.");
        if (n == 0) CHECK_ERR(agent_hook_call_complete(call, "[{\"content\":\"x\"}]", NTS), AGENT_ERR_INVALID_JSON,
                              "The answer[0] must be a message");
        CHECK_OK(agent_hook_call_complete(call, NULL, 0)); /* the default conversion */
        break;
    case AGENT_HOOK_TRANSFORM_CONTEXT:
        CHECK(input[0] == '[');
        if (n == 1) CHECK_HAS(input, "steer now"); /* the steering message reached request 2 */
        CHECK_OK(agent_hook_call_complete(call, input, NTS)); /* unchanged, answered as an array */
        break;
    case AGENT_HOOK_GET_API_KEY:
        CHECK(strcmp(input, "\"test\"") == 0);
        CHECK_ERR(agent_hook_call_complete(call, "5", NTS), AGENT_ERR_INVALID_JSON, "The answer must be a JSON string or NULL.");
        CHECK_OK(agent_hook_call_complete(call, "\"key-123\"", NTS));
        break;
    case AGENT_HOOK_BEFORE_TOOL_CALL:
        CHECK_HAS(input, "\"toolCall\":");
        CHECK_HAS(input, "\"assistantMessage\":");
        CHECK_ERR(agent_hook_call_complete(call, "[1]", NTS), AGENT_ERR_INVALID_JSON, "The answer must be a JSON object or NULL.");
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));
        break;
    case AGENT_HOOK_AFTER_TOOL_CALL:
        CHECK_HAS(input, "\"result\":");
        CHECK_HAS(input, "\"isError\":false");
        if (strstr(input, "\"id\":\"call_add\""))
            CHECK_OK(agent_hook_call_complete(call, "{\"details\":{\"after\":true}}", NTS));
        else
            CHECK_OK(agent_hook_call_complete(call, "null", NTS));
        break;
    case AGENT_HOOK_FINISH_TURN:
        CHECK_HAS(input, "\"toolResults\":");
        CHECK_HAS(input, "\"newMessages\":");
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));
        break;
    case AGENT_HOOK_PREPARE_REQUEST:
        CHECK_HAS(input, "\"context\":");
        CHECK_HAS(input, "\"model\":");
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));
        break;
    case AGENT_HOOK_PREPARE_NEXT_TURN:
        CHECK(strcmp(input, "null") == 0);
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));
        break;
    case AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT:
        CHECK(input[0] == '{');
        CHECK_OK(agent_hook_call_complete(call, "{}", NTS));
        break;
    default:
        FAIL("unknown hook kind %d", kind);
    }
}

/* --- listener ------------------------------------------------------------------------------- */

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    static const char *names[] = {"agent_start", "agent_end", "turn_start", "turn_end", "message_start",
                                  "message_update", "message_end", "tool_execution_start",
                                  "tool_execution_update", "tool_execution_end", "compaction_start",
                                   "compaction_end", "auto_retry_start", "auto_retry_end"};
    CHECK(event->kind >= 0 && event->kind <= AGENT_EVENT_AUTO_RETRY_END);
    const char *type = names[event->kind];
    AgentStr full_json, lean_json, again;
    CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &full_json));
    CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &lean_json));
    CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &again));
    CHECK(full_json.ptr == again.ptr); /* built once */
    const char *full = full_json.ptr, *lean = lean_json.ptr, *delta = event->delta.ptr;
    size_t len = event->delta.len;
    CHECK_ERR(agent_event_json(event, 7, &again), AGENT_ERR_INVALID_ARGUMENT, "Unknown event shape 7");
    char expected[64];
    snprintf(expected, sizeof expected, "{\"type\":\"%s\"", type);
    CHECK(strncmp(full, expected, strlen(expected)) == 0);
    CHECK(strncmp(lean, expected, strlen(expected)) == 0);
    strncat(types, type, sizeof types - strlen(types) - 2);
    strcat(types, ",");
    if (event->kind == AGENT_EVENT_MESSAGE_UPDATE) {
        CHECK(event->update != AGENT_UPDATE_NONE);
        CHECK_HAS(full, "\"assistantMessageEvent\":");
        CHECK_HAS(full, "\"message\":");
        CHECK_NOT_HAS(lean, "\"partial\":");
        if (event->update == AGENT_UPDATE_TEXT_DELTA) {
            CHECK(delta != NULL && len > 0);
            strncat(delta_text, delta, len < 100 ? len : 100);
            char quoted[128];
            snprintf(quoted, sizeof quoted, "\"delta\":\"%.*s\"", (int)len, delta);
            CHECK_HAS(full, quoted);
            atomic_fetch_add(&deltas, 1);
            if (atomic_fetch_add(&steered, 1) == 0) {
                /* Steering from a listener, and a state read during the run. */
                CHECK_OK(agent_steer(g_agent, "{\"role\":\"user\",\"content\":\"steer now\",\"timestamp\":1}", NTS));
                char *state = state_of(g_agent);
                CHECK_HAS(state, "\"isStreaming\":true");
                CHECK_HAS(state, "\"streamingMessage\":");
                agent_string_free(state);
            }
        }
    } else {
        CHECK_EQ_INT(event->update, AGENT_UPDATE_NONE);
        CHECK_EQ_INT(len, 0);
    }
    if (saved_event.source == 0) saved_event = *event; /* agent_start */
    return AGENT_LISTENER_CONTINUE;
}

static AgentTool make_tool(const char *name, AgentToolExecuteFn fn) {
    char definition[512];
    snprintf(definition, sizeof definition,
             "{\"name\":\"%s\",\"label\":\"%s\",\"description\":\"test tool\",\"parameters\":{\"type\":\"object\"}}",
             name, name);
    AgentTool tool = {0};
    CHECK_OK(agent_tool_new(definition, NTS, fn, &tool_finalized, count_finalizer, &tool));
    return tool;
}

int main(void) {
    AgentTool add = make_tool("add", exec_add_fn), slow = make_tool("slow", exec_slow_fn);
    CHECK_OK(agent_tool_set_prepare_arguments(add, prepare_add, &prepare_finalized, count_finalizer));
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"systemPrompt\":\"sys\",\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_add_tool(options, add));
    CHECK_OK(agent_options_add_tool(options, slow));
    CHECK_OK(agent_options_set_scripted_model(options, SCRIPT, NTS));
    for (int kind = 0; kind <= AGENT_HOOK_PREPARE_NEXT_TURN; kind++)
        CHECK_OK(agent_options_set_hook(options, kind, hook, (void *)(intptr_t)kind, count_finalizer_hook));
    CHECK_OK(agent_new(options, &g_agent));
    uint64_t id = 0;
    CHECK_OK(agent_subscribe(g_agent, listener, &listener_finalized, count_finalizer, &id));

    /* A follow-up queued before the run: delivered when it would otherwise stop. */
    CHECK_OK(agent_follow_up(g_agent, "{\"role\":\"user\",\"content\":\"and then?\",\"timestamp\":2}", NTS));
    bool has = false;
    CHECK_OK(agent_has_queued_messages(g_agent, &has));
    CHECK(has);

    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(g_agent, "\"compute 1+2\"", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_COMPLETED);
    /* user, assistant, 2 results, steering, assistant, follow-up, assistant */
    CHECK_EQ_INT(outcome_of(run).message_count, 8);
    CHECK_OK(agent_run_free(run));
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
    if (slow_thread_started) pthread_join(slow_thread, NULL);

    CHECK_EQ_INT(atomic_load(&exec_add), 1);
    CHECK_EQ_INT(atomic_load(&exec_slow), 1);
    CHECK_EQ_INT(atomic_load(&prepare_calls), 1);
    CHECK(atomic_load(&deltas) >= 3);
    CHECK(strcmp(delta_text, "Let me compute.Sum is 3.Follow-up answered.") == 0 ||
          strncmp(delta_text, "Let me compute.", 15) == 0);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_PREPARE_REQUEST]), 3);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_TRANSFORM_CONTEXT]), 3);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_CONVERT_TO_LLM]), 3);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_GET_API_KEY]), 3);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_BEFORE_TOOL_CALL]), 2);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_AFTER_TOOL_CALL]), 2);
    CHECK(atomic_load(&hook_calls[AGENT_HOOK_FINISH_TURN]) >= 3);
    CHECK(atomic_load(&hook_calls[AGENT_HOOK_PREPARE_NEXT_TURN]) >= 2);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT]), 0);

    /* The event sequence: the run's start, tool executions with updates, and the end. */
    CHECK(strncmp(types, "agent_start,turn_start,message_start,message_end,", 49) == 0);
    CHECK_HAS(types, "tool_execution_start,tool_execution_update,");
    CHECK_EQ_INT(count_of(types, "tool_execution_update,"), 3);
    CHECK_EQ_INT(count_of(types, "tool_execution_end,"), 2);
    CHECK_EQ_INT(count_of(types, "agent_end,"), 1);
    CHECK(strcmp(types + strlen(types) - 19, "turn_end,agent_end,") == 0);
    /* An event does not outlive its callback (once later events came). */
    AgentStr json;
    CHECK_ERR(agent_event_json(&saved_event, AGENT_EVENT_SHAPE_FULL, &json), AGENT_ERR_INVALID_ARGUMENT,
              "event is no longer valid");

    /* The transcript: system, user, assistant+2 tool calls, 2 results, steering, assistant,
     * follow-up, assistant. */
    char *state = state_of(g_agent);
    CHECK_HAS(state, "\"isStreaming\":false");
    CHECK_HAS(state, "\"pendingToolCalls\":[]");
    CHECK_HAS(state, "\"after\":true");
    CHECK_HAS(state, "\"text\":\"slept\"");
    char *steer = strstr(state, "steer now"), *sum = strstr(state, "Sum is 3."), *follow = strstr(state, "and then?");
    CHECK(steer && sum && follow && steer < sum && sum < follow);
    CHECK_HAS(follow, "Follow-up answered.");
    agent_string_free(state);
    CHECK_OK(agent_has_queued_messages(g_agent, &has));
    CHECK(!has);

    /* continue(): from an assistant tail it fails with the reference text. */
    CHECK_ERR(agent_continue(g_agent, NULL, NULL, NULL), AGENT_ERR_INVALID_STATE,
              "Cannot continue from message role: assistant");

    /* agent_set_messages, then continue from a user tail, with a hook set after construction. */
    CHECK_ERR(agent_set_messages(g_agent, "{}", NTS), AGENT_ERR_INVALID_JSON, "messages_json must be a JSON array of messages.");
    CHECK_ERR(agent_set_messages(g_agent, "[{\"role\":1}]", NTS), AGENT_ERR_INVALID_JSON, "messages_json[0] must be a message");
    CHECK_ERR(agent_set_messages(g_agent, "[\"\xc3\x28\"]", NTS), AGENT_ERR_INVALID_UTF8, "messages_json is not valid UTF-8");
    CHECK_OK(agent_set_messages(g_agent, "[{\"role\":\"user\",\"content\":\"only me\",\"timestamp\":3}]", NTS));
    state = state_of(g_agent);
    CHECK_HAS(state, "only me");
    CHECK_NOT_HAS(state, "steer now");
    agent_string_free(state);
    CHECK_OK(agent_set_hook(g_agent, AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT, hook,
                            (void *)(intptr_t)AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT, count_finalizer_hook));
    CHECK_ERR(agent_set_hook(g_agent, 10, hook, NULL, NULL), AGENT_ERR_INVALID_ARGUMENT, "Unknown hook kind 10");
    /* Removing a hook: getApiKey is no longer called. */
    CHECK_OK(agent_set_hook(g_agent, AGENT_HOOK_GET_API_KEY, NULL, NULL, NULL));
    /* agent_set_tools: only `add` from now on. */
    AgentTool only_add[1] = {add};
    CHECK_ERR(agent_set_tools(g_agent, NULL, 1), AGENT_ERR_NULL, "tools is NULL");
    CHECK_OK(agent_set_tools(g_agent, only_add, 1));
    state = state_of(g_agent);
    CHECK_HAS(state, "\"name\":\"add\"");
    CHECK_NOT_HAS(state, "\"name\":\"slow\"");
    agent_string_free(state);
    int api_key_calls = atomic_load(&hook_calls[AGENT_HOOK_GET_API_KEY]);
    done[0] = 0;
    done[1] = 0;
    CHECK_OK(agent_continue(g_agent, record_done, done, &run));
    WAIT_RUN(run);
    /* The run added the declaration of the changed tools (SPEC 4.7) and the answer. */
    CHECK_EQ_INT(outcome_of(run).message_count, 2);
    char *added = NULL;
    CHECK_OK(agent_run_messages(run, &added, NULL));
    CHECK_HAS(added, "\"toolsAdded\":[{\"name\":\"add\"");
    CHECK_HAS(added, "Continued.");
    agent_string_free(added);
    CHECK_OK(agent_run_free(run));
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(atomic_load(&hook_calls[AGENT_HOOK_GET_API_KEY]), api_key_calls);
    state = state_of(g_agent);
    CHECK_HAS(state, "Continued.");
    agent_string_free(state);
    CHECK_OK(agent_set_tools(g_agent, NULL, 0));

    /* Queues: peek / has / clear. */
    CHECK_OK(agent_steer(g_agent, "{\"role\":\"user\",\"content\":\"s1\",\"timestamp\":4}", NTS));
    CHECK_OK(agent_steer(g_agent, "{\"role\":\"user\",\"content\":\"s2\",\"timestamp\":5}", NTS));
    CHECK_OK(agent_follow_up(g_agent, "{\"role\":\"user\",\"content\":\"f1\",\"timestamp\":6}", NTS));
    char *peek = NULL;
    CHECK_OK(agent_peek_queued_messages(g_agent, &peek, NULL));
    CHECK_HAS(peek, "s1");
    CHECK_NOT_HAS(peek, "f1");
    agent_string_free(peek);
    CHECK_OK(agent_clear_steering_queue(g_agent));
    CHECK_OK(agent_peek_queued_messages(g_agent, &peek, NULL));
    CHECK_HAS(peek, "f1");
    CHECK_NOT_HAS(peek, "s1");
    agent_string_free(peek);
    CHECK_OK(agent_clear_follow_up_queue(g_agent));
    CHECK_OK(agent_has_queued_messages(g_agent, &has));
    CHECK(!has);
    CHECK_OK(agent_peek_queued_messages(g_agent, &peek, NULL));
    CHECK(strcmp(peek, "[]") == 0);
    agent_string_free(peek);
    CHECK_OK(agent_steer(g_agent, "{\"role\":\"user\",\"content\":\"s3\",\"timestamp\":7}", NTS));
    CHECK_OK(agent_follow_up(g_agent, "{\"role\":\"user\",\"content\":\"f2\",\"timestamp\":8}", NTS));
    CHECK_OK(agent_clear_all_queues(g_agent));
    CHECK_OK(agent_has_queued_messages(g_agent, &has));
    CHECK(!has);
    CHECK_ERR(agent_steer(g_agent, "{\"content\":\"x\"}", NTS), AGENT_ERR_INVALID_JSON, "message_json must be a message");
    CHECK_ERR(agent_follow_up(g_agent, "nope", NTS), AGENT_ERR_INVALID_JSON, "message_json is not valid JSON");

    /* reset() keeps the system baseline only; continue then has nothing to continue from. */
    CHECK_OK(agent_reset(g_agent));
    state = state_of(g_agent);
    /* Only the system baseline stays (SPEC 7.16). */
    CHECK_HAS(state, "\"messages\":[{\"role\":\"system\"");
    CHECK_EQ_INT(count_of(state, "\"role\":"), 1);
    agent_string_free(state);
    CHECK_ERR(agent_continue(g_agent, NULL, NULL, NULL), AGENT_ERR_INVALID_STATE, "No messages to continue from");
    CHECK_OK(agent_set_messages(g_agent, "[]", NTS));
    CHECK_ERR(agent_continue(g_agent, NULL, NULL, NULL), AGENT_ERR_INVALID_STATE, "No messages to continue from");

    /* Unsubscribe: the listener's finalizer runs; a second unsubscribe fails. */
    CHECK_OK(agent_unsubscribe(g_agent, id));
    WAIT_UNTIL(atomic_load(&listener_finalized) == 1);
    CHECK_ERR(agent_unsubscribe(g_agent, id), AGENT_ERR_INVALID_ARGUMENT, "There is no subscription");

    /* Finalizers: tools survive the host's reference while the agent holds them. */
    CHECK_OK(agent_tool_free(add));
    CHECK_OK(agent_tool_free(slow));
    CHECK_ERR(agent_tool_free(add), AGENT_ERR_INVALID_HANDLE, "tool is a freed tool");
    CHECK_OK(agent_free(g_agent));
    WAIT_UNTIL(atomic_load(&tool_finalized) == 2);
    WAIT_UNTIL(atomic_load(&prepare_finalized) == 1);
    WAIT_UNTIL(atomic_load(&hook_finalized) == 9); /* 8 from the options, 1 set later */
    sleep_ms(50);
    CHECK_EQ_INT(atomic_load(&tool_finalized), 2);
    CHECK_EQ_INT(atomic_load(&prepare_finalized), 1);
    CHECK_EQ_INT(atomic_load(&hook_finalized), 9);
    CHECK_EQ_INT(atomic_load(&listener_finalized), 1);
    printf("test_run: ok\n");
    return 0;
}

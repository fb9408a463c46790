/* Host stream functions: a producer thread pushing delta-form events in lock step with
 * agent_stream_on_consumed, a final message given with agent_stream_end, failures before and
 * after the first push, a stream ended without a message, and pushes after the stream closed. */
#include "check.h"

static const char *EVENTS[] = {
    "{\"type\":\"start\"}",
    "{\"type\":\"thinking_start\",\"contentIndex\":0}",
    "{\"type\":\"thinking_delta\",\"contentIndex\":0,\"delta\":\"Plan\"}",
    "{\"type\":\"thinking_end\",\"contentIndex\":0,\"contentSignature\":\"sig1\"}",
    "{\"type\":\"text_start\",\"contentIndex\":1}",
    "{\"type\":\"text_delta\",\"contentIndex\":1,\"delta\":\"Read\"}",
    "{\"type\":\"text_delta\",\"contentIndex\":1,\"delta\":\"ing.\"}",
    "{\"type\":\"text_end\",\"contentIndex\":1}",
    "{\"type\":\"toolcall_start\",\"contentIndex\":2,\"id\":\"call_1\",\"toolName\":\"read\"}",
    "{\"type\":\"toolcall_delta\",\"contentIndex\":2,\"delta\":\"{\\\"pa\"}",
    "{\"type\":\"toolcall_delta\",\"contentIndex\":2,\"delta\":\"th\\\": \\\"src/ma\"}",
    "{\"type\":\"toolcall_delta\",\"contentIndex\":2,\"delta\":\"in.rs\\\", \\\"limit\\\": 2\"}",
    "{\"type\":\"toolcall_delta\",\"contentIndex\":2,\"delta\":\"0}\"}",
    "{\"type\":\"toolcall_end\",\"contentIndex\":2}",
    "{\"type\":\"done\",\"reason\":\"toolUse\"}",
};
#define EVENT_COUNT ((int)(sizeof EVENTS / sizeof EVENTS[0]))

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int consumed;
    AgentStream stream;
} producer = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, {0}};

static pthread_t producer_thread;
static atomic_int requests, consumed_finalized, consumed_on_runtime_thread, read_calls, stream_finalized;
static AgentStream closed_stream;
static char lean_args[256];
static pthread_t main_thread;

static void on_consumed(void *ud, AgentStream stream) {
    (void)ud;
    CHECK(stream.id == producer.stream.id);
    if (!pthread_equal(pthread_self(), main_thread) && !pthread_equal(pthread_self(), producer_thread))
        atomic_fetch_add(&consumed_on_runtime_thread, 1);
    pthread_mutex_lock(&producer.mu);
    producer.consumed++;
    pthread_cond_broadcast(&producer.cv);
    pthread_mutex_unlock(&producer.mu);
}

/* Pushes each event from this thread after the previous one was consumed (lock step). */
static void *produce(void *arg) {
    (void)arg;
    for (int i = 0; i < EVENT_COUNT; i++) {
        CHECK_OK(agent_stream_push(producer.stream, EVENTS[i], NTS));
        if (i == EVENT_COUNT - 1) break;
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += WAIT_MS / 1000;
        pthread_mutex_lock(&producer.mu);
        while (producer.consumed < i + 1)
            if (pthread_cond_timedwait(&producer.cv, &producer.mu, &deadline) != 0) FAIL("event %d was never consumed", i);
        pthread_mutex_unlock(&producer.mu);
    }
    /* The terminal event closed the stream. */
    WAIT_UNTIL(code_of(agent_stream_push(producer.stream, "{\"type\":\"start\"}", NTS)) == AGENT_ERR_STREAM_CLOSED);
    return NULL;
}

static void stream_fn(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    int n = atomic_fetch_add(&requests, 1);
    CHECK_HAS(request, "{\"model\":{\"id\":\"m1\"");
    CHECK_HAS(request, "\"context\":{");
    CHECK_HAS(request, "\"options\":{");
    bool aborted = true;
    CHECK_OK(agent_stream_is_aborted(stream, &aborted));
    CHECK(!aborted);
    if (n == 0) {
        CHECK_ERR(agent_stream_on_consumed(stream, NULL, NULL, NULL), AGENT_ERR_NULL, "on_consumed is NULL");
        CHECK_OK(agent_stream_on_consumed(stream, on_consumed, &consumed_finalized, count_finalizer));
        producer.stream = stream;
        CHECK(pthread_create(&producer_thread, NULL, produce, NULL) == 0);
    } else {
        CHECK_HAS(request, "\"toolResult\"");
        /* Malformed answers leave the stream open... */
        CHECK_ERR(agent_stream_push(stream, "{", NTS), AGENT_ERR_INVALID_JSON, "event_json is not valid JSON");
        CHECK_ERR(agent_stream_push(stream, "{\"delta\":1}", NTS), AGENT_ERR_INVALID_JSON, "string \"type\"");
        CHECK_ERR(agent_stream_push(stream, "{\"type\":\"\xff\"}", NTS), AGENT_ERR_INVALID_UTF8, "event_json is not valid UTF-8");
        CHECK_ERR(agent_stream_push(stream, NULL, NTS), AGENT_ERR_NULL, "event_json is NULL");
        CHECK_ERR(agent_stream_end(stream, "{\"content\":[]}", NTS), AGENT_ERR_INVALID_JSON, "final_message_json must be a message");
        /* ...then it ends with a final message given at once. */
        CHECK_OK(agent_stream_end(stream, "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"All read.\"}],"
                                             "\"api\":\"faux\",\"provider\":\"test\",\"model\":\"m1\",\"usage\":{\"input\":0,"
                                             "\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":0,\"cost\":{\"input\":0,"
                                             "\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}},\"stopReason\":\"stop\","
                                             "\"timestamp\":1}", NTS));
        CHECK_ERR(agent_stream_end(stream, NULL, 0), AGENT_ERR_ALREADY_COMPLETED, "already answered");
        closed_stream = stream;
    }
}

static void read_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud;
    atomic_fetch_add(&read_calls, 1);
    CHECK(strcmp(id, "call_1") == 0);
    CHECK(strcmp(args, "{\"path\":\"src/main.rs\",\"limit\":20}") == 0);
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"fn main() {}\"}],\"details\":{}}", NTS));
}

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->update == AGENT_UPDATE_TOOLCALL_DELTA) {
        AgentStr lean;
        CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &lean));
        const char *args = strstr(lean.ptr, "\"arguments\":");
        CHECK(args != NULL);
        snprintf(lean_args, sizeof lean_args, "%s", args);
    }
    return AGENT_LISTENER_CONTINUE;
}

/* --- failure modes ---------------------------------------------------------------------------- */

static void fail_before_push(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    (void)request;
    CHECK_OK(agent_stream_fail(stream, "provider unreachable", NTS));
    CHECK_ERR(agent_stream_fail(stream, "again", NTS), AGENT_ERR_ALREADY_COMPLETED, "already answered");
}

static void fail_after_push(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    (void)request;
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"half\"}", NTS));
    CHECK_OK(agent_stream_fail(stream, "connection reset", NTS));
}

static void end_without_message(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    (void)request;
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_end(stream, NULL, 0));
}

static char *run_with(AgentStreamFn fn, AgentRunStatus expected) {
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_stream_fn(options, fn, &stream_finalized, count_finalizer));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(agent, "[{\"role\":\"user\",\"content\":\"go\",\"timestamp\":1}]", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + expected);
    CHECK_EQ_INT(outcome_of(run).status, expected);
    CHECK_OK(agent_run_free(run));
    char *state = state_of(agent);
    CHECK_OK(agent_free(agent));
    return state;
}

int main(void) {
    main_thread = pthread_self();
    AgentTool read = {0};
    CHECK_OK(agent_tool_new("{\"name\":\"read\",\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                            "\"limit\":{\"type\":\"number\"}}}}", NTS,
                            read_tool, NULL, NULL, &read));
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_add_tool(options, read));
    CHECK_OK(agent_tool_free(read));
    CHECK_OK(agent_options_set_stream_fn(options, stream_fn, &stream_finalized, count_finalizer));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, listener, NULL, NULL, &id));
    AgentRun run;
    CHECK_OK(agent_prompt(agent, "\"read main\"", NTS, NULL, NULL, &run));
    WAIT_RUN(run);
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_COMPLETED);
    CHECK_STR(outcome.stop_reason, "stop");
    CHECK_EQ_INT(outcome.message_count, 4);
    CHECK_OK(agent_run_free(run));
    pthread_join(producer_thread, NULL);

    CHECK_EQ_INT(atomic_load(&requests), 2);
    CHECK_EQ_INT(atomic_load(&read_calls), 1);
    CHECK(producer.consumed >= EVENT_COUNT - 1);
    CHECK(atomic_load(&consumed_on_runtime_thread) == producer.consumed);
    CHECK(strncmp(lean_args, "\"arguments\":{\"path\":\"src/main.rs\",\"limit\":20}", 45) == 0);
    WAIT_UNTIL(atomic_load(&consumed_finalized) == 1);

    char *state = state_of(agent);
    CHECK_HAS(state, "{\"type\":\"thinking\",\"thinking\":\"Plan\",\"thinkingSignature\":\"sig1\"}");
    CHECK_HAS(state, "{\"type\":\"text\",\"text\":\"Reading.\"}");
    CHECK_HAS(state, "\"stopReason\":\"toolUse\"");
    CHECK_HAS(state, "fn main() {}");
    CHECK_HAS(state, "All read.");
    agent_string_free(state);

    /* A stream the loop no longer consumes: pushes and consumed registrations are refused. */
    CHECK_ERR(agent_stream_push(closed_stream, "{\"type\":\"start\"}", NTS), AGENT_ERR_STREAM_CLOSED,
              "The stream is closed: the agent no longer consumes it.");
    CHECK_ERR(agent_stream_on_consumed(closed_stream, on_consumed, NULL, NULL), AGENT_ERR_STREAM_CLOSED, "closed");
    CHECK_ERR(agent_stream_push(producer.stream, "{\"type\":\"start\"}", NTS), AGENT_ERR_STREAM_CLOSED, "closed");
    CHECK_OK(agent_free(agent));

    /* Failure before any push: the stream function failed (the run's failure path). */
    state = run_with(fail_before_push, AGENT_RUN_MODEL_ERROR);
    CHECK_HAS(state, "\"errorMessage\":\"provider unreachable\"");
    agent_string_free(state);
    /* After a push: an error event; the partial content is kept. */
    state = run_with(fail_after_push, AGENT_RUN_MODEL_ERROR);
    CHECK_HAS(state, "\"stopReason\":\"error\"");
    CHECK_HAS(state, "\"errorMessage\":\"connection reset\"");
    CHECK_HAS(state, "\"text\":\"half\"");
    agent_string_free(state);
    /* Ended without a terminal event or message: an error message (SPEC 3.5). */
    state = run_with(end_without_message, AGENT_RUN_MODEL_ERROR);
    CHECK_HAS(state, "\"stopReason\":\"error\"");
    agent_string_free(state);

    WAIT_UNTIL(atomic_load(&stream_finalized) == 4);
    sleep_ms(50);
    CHECK_EQ_INT(atomic_load(&stream_finalized), 4);
    CHECK_EQ_INT(atomic_load(&consumed_finalized), 1);
    printf("test_stream: ok\n");
    return 0;
}

/* Typed stream pushes (agent_stream_push_text_delta & co.): a response pushed through them gives
 * the same events as the same response pushed as JSON, a typed delta into a block of another
 * type fails the stream with the reference's text, and misuse gets a status and a message. */
#include "check.h"

/* The response, as JSON events; `typed` pushes the same events through the typed functions. */
static const char *EVENTS[] = {
    "{\"type\":\"start\"}",
    "{\"type\":\"thinking_start\",\"contentIndex\":0}",
    "{\"type\":\"thinking_delta\",\"contentIndex\":0,\"delta\":\"Plan\"}",
    "{\"type\":\"thinking_end\",\"contentIndex\":0}",
    "{\"type\":\"text_start\",\"contentIndex\":1}",
    "{\"type\":\"text_delta\",\"contentIndex\":1,\"delta\":\"Re\\u0000ad\"}",
    "{\"type\":\"text_delta\",\"contentIndex\":1,\"delta\":\"ing \\u00e9.\"}",
    "{\"type\":\"text_delta\",\"contentIndex\":1,\"delta\":\"\"}",
    "{\"type\":\"text_end\",\"contentIndex\":1}",
    "{\"type\":\"toolcall_start\",\"contentIndex\":2,\"id\":\"call_1\",\"toolName\":\"read\"}",
    "{\"type\":\"toolcall_delta\",\"contentIndex\":2,\"delta\":\"{\\\"pa\"}",
    "{\"type\":\"toolcall_delta\",\"contentIndex\":2,\"delta\":\"th\\\": \\\"a\\\"}\"}",
    "{\"type\":\"toolcall_end\",\"contentIndex\":2}",
    "{\"type\":\"toolcall_start\",\"contentIndex\":3}",
    "{\"type\":\"toolcall_end\",\"contentIndex\":3}",
    "{\"type\":\"done\",\"reason\":\"stop\"}",
};
#define EVENT_COUNT ((int)(sizeof EVENTS / sizeof EVENTS[0]))

/* Requests of the current run: the response has tool calls (of an unknown tool, which fail), so
 * the loop makes a second request, answered with an empty response. */
static atomic_int requests;

static int follow_up_request(AgentStream stream) {
    if (atomic_fetch_add(&requests, 1) == 0) return 0;
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", NTS));
    return 1;
}

static void json_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    (void)request;
    if (follow_up_request(stream)) return;
    for (int i = 0; i < EVENT_COUNT; i++) CHECK_OK(agent_stream_push(stream, EVENTS[i], NTS));
}

static void typed_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    (void)request;
    if (follow_up_request(stream)) return;
    CHECK_OK(agent_stream_push(stream, EVENTS[0], NTS));
    CHECK_OK(agent_stream_push_block_start(stream, AGENT_BLOCK_THINKING, 0));
    CHECK_OK(agent_stream_push_thinking_delta(stream, 0, "Plan", 4));
    CHECK_OK(agent_stream_push_block_end(stream, AGENT_BLOCK_THINKING, 0));
    CHECK_OK(agent_stream_push_block_start(stream, AGENT_BLOCK_TEXT, 1));
    CHECK_OK(agent_stream_push_text_delta(stream, 1, "Re\0ad", 5)); /* a NUL inside: length-delimited */
    CHECK_OK(agent_stream_push_text_delta(stream, 1, "ing \xc3\xa9.", 7));
    CHECK_OK(agent_stream_push_text_delta(stream, 1, NULL, 0)); /* an empty delta: still an event */
    CHECK_OK(agent_stream_push_block_end(stream, AGENT_BLOCK_TEXT, 1));
    CHECK_OK(agent_stream_push_toolcall_start(stream, 2, "call_1", NTS, "read", NTS));
    CHECK_OK(agent_stream_push_toolcall_delta(stream, 2, "{\"pa", 4));
    CHECK_OK(agent_stream_push_toolcall_delta(stream, 2, "th\": \"a\"}", 9));
    CHECK_OK(agent_stream_push_block_end(stream, AGENT_BLOCK_TOOLCALL, 2));
    CHECK_OK(agent_stream_push_block_start(stream, AGENT_BLOCK_TOOLCALL, 3));
    CHECK_OK(agent_stream_push_block_end(stream, AGENT_BLOCK_TOOLCALL, 3));
    CHECK_OK(agent_stream_push(stream, EVENTS[EVENT_COUNT - 1], NTS));
    /* The terminal event closed the stream for typed pushes too. */
    CHECK_ERR(agent_stream_push_text_delta(stream, 1, "x", 1), AGENT_ERR_STREAM_CLOSED, "closed");
    CHECK_ERR(agent_stream_push_block_end(stream, AGENT_BLOCK_TEXT, 1), AGENT_ERR_STREAM_CLOSED, "closed");
}

/* Misuse first (each leaves the stream as it was), then a text delta into a thinking block. */
static void mismatched_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud;
    (void)request;
    CHECK_ERR(agent_stream_push_text_delta((AgentStream){0}, 0, "x", 1), AGENT_ERR_INVALID_HANDLE, "call is the null handle");
    CHECK_ERR(agent_stream_push_text_delta(stream, 0, NULL, 3), AGENT_ERR_NULL, "text is NULL");
    CHECK_ERR(agent_stream_push_text_delta(stream, 0, "\xff\xfe", 2), AGENT_ERR_INVALID_UTF8, "not valid UTF-8");
    CHECK_ERR(agent_stream_push_block_start(stream, 7, 0), AGENT_ERR_INVALID_ARGUMENT, "Unknown block kind 7");
    CHECK_ERR(agent_stream_push_block_end(stream, -1, 0), AGENT_ERR_INVALID_ARGUMENT, "Unknown block kind -1");
    CHECK_ERR(agent_stream_push_toolcall_start(stream, 0, "\xff", NTS, NULL, 0), AGENT_ERR_INVALID_UTF8, "id is not valid UTF-8");
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_push_block_start(stream, AGENT_BLOCK_THINKING, 0));
    CHECK_OK(agent_stream_push_text_delta(stream, 0, "oops", 4));
}

/* Collects the lean JSON of every message_update (no timestamps), one per line. */
static char updates[8192];
static size_t updates_len;

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind == AGENT_EVENT_MESSAGE_UPDATE) {
        AgentStr json;
        CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        size_t n = json.len;
        if (updates_len + n + 2 >= sizeof updates) FAIL("updates overflow: %zu + %zu: %.300s", updates_len, n, json.ptr);
        memcpy(updates + updates_len, json.ptr, n);
        updates_len += n;
        updates[updates_len++] = '\n';
        updates[updates_len] = '\0';
        /* The struct carries the delta itself, NULs included (pointer + length). */
        if (event->update == AGENT_UPDATE_TEXT_DELTA && event->delta.len == 5)
            CHECK(memcmp(event->delta.ptr, "Re\0ad", 5) == 0);
    }
    return AGENT_LISTENER_CONTINUE;
}

/* Runs one prompt against `fn`; returns the updates seen (malloc'd) and the final state in
 * `*out_state`. */
static char *run_with(AgentStreamFn fn, AgentRunStatus expected, char **out_state) {
    updates_len = 0;
    updates[0] = '\0';
    atomic_store(&requests, 0);
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_stream_fn(options, fn, NULL, NULL));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, listener, NULL, NULL, &id));
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(agent, "\"go\"", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + expected);
    CHECK_EQ_INT(outcome_of(run).status, expected);
    CHECK_OK(agent_run_free(run));
    *out_state = state_of(agent);
    CHECK_OK(agent_free(agent));
    return strdup(updates);
}

int main(void) {
    char *json_state = NULL, *typed_state = NULL, *mismatch_state = NULL;
    char *json_updates = run_with(json_stream, AGENT_RUN_COMPLETED, &json_state);
    char *typed_updates = run_with(typed_stream, AGENT_RUN_COMPLETED, &typed_state);
    /* 14 updates: every event but start and done of the first response. */
    CHECK_EQ_INT(count_of(json_updates, "\n"), 14);
    if (strcmp(json_updates, typed_updates) != 0)
        FAIL("typed pushes gave other events:\n--- json\n%s--- typed\n%s", json_updates, typed_updates);
    CHECK_HAS(typed_updates, "\"delta\":\"Re\\u0000ad\"");
    CHECK_HAS(typed_updates, "\"content\":\"Re\\u0000ading \xc3\xa9.\"");
    CHECK_HAS(typed_updates, "\"toolCall\":{\"type\":\"toolCall\",\"id\":\"call_1\",\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}");
    CHECK_HAS(typed_state, "{\"type\":\"toolCall\",\"arguments\":{}}");
    CHECK_EQ_INT(atomic_load(&requests), 2);
    CHECK_HAS(typed_state, "\"stopReason\":\"stop\"");

    char *mismatch_updates = run_with(mismatched_stream, AGENT_RUN_MODEL_ERROR, &mismatch_state);
    CHECK_EQ_INT(count_of(mismatch_updates, "\n"), 1); /* thinking_start only */
    CHECK_HAS(mismatch_state, "\"errorMessage\":\"Received text_delta for non-text content\"");
    CHECK_HAS(mismatch_state, "\"stopReason\":\"error\"");

    free(json_updates);
    free(typed_updates);
    free(mismatch_updates);
    agent_string_free(json_state);
    agent_string_free(typed_state);
    agent_string_free(mismatch_state);
    printf("typed pushes: ok\n");
    return 0;
}

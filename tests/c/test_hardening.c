/* Issue 7, "also found": a stream answered after its terminal event, the stream backlog, option
 * values that libagent would otherwise ignore, cheap transcript reads, agent_events_open racing
 * agent_free, and a forked child. */
#include "check.h"

#ifndef _WIN32 /* fork() exists on POSIX systems only (make windows-test skips that part) */
#include <sys/wait.h>
#include <unistd.h>
#endif

/* A stream that pushes a whole response at once, then tries to answer again. */
static atomic_int second_complete, second_fail, push_after_done, backlog_seen = -1, on_runtime;
static void eager_stream(void *ud, const char *request, AgentStream *stream) {
    (void)ud, (void)request;
    atomic_store(&on_runtime, agent_is_runtime_thread());
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}"));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}"));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"hi\"}"));
    size_t backlog;
    CHECK_OK(agent_stream_backlog(stream, &backlog));
    atomic_store(&backlog_seen, (int)backlog);
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}"));
    atomic_store(&push_after_done, agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"x\"}"));
    atomic_store(&second_complete, agent_call_complete(stream, NULL));
    atomic_store(&second_fail, agent_call_fail(stream, "late"));
}

static AgentHandle *new_agent(const char *options_json) {
    AgentOptions *options;
    CHECK_OK(agent_options_new(options_json, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"one\"}]},"
                                                       "{\"content\":[{\"type\":\"text\",\"text\":\"two\"}]}]"));
    AgentHandle *agent;
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

static void *free_soon(void *agent) {
    agent_free(agent);
    return NULL;
}

int main(void) {
    /* A stream's answers after its terminal event are second answers. */
    AgentHandle *agent = new_agent(NULL);
    CHECK_OK(agent_set_stream_fn(agent, eager_stream, NULL, NULL));
    CHECK_OK(agent_prompt(agent, "\"hi\"", NULL, NULL));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_EQ_INT(atomic_load(&on_runtime), 1); /* callbacks run on the runtime thread */
    CHECK(!agent_is_runtime_thread());
    CHECK_EQ_INT(atomic_load(&backlog_seen), 3); /* all three still queued: pushed inside the call */
    CHECK_EQ_INT(atomic_load(&push_after_done), AGENT_ERR_STREAM_CLOSED);
    CHECK_EQ_INT(atomic_load(&second_complete), AGENT_ERR_ALREADY_COMPLETED);
    CHECK_EQ_INT(atomic_load(&second_fail), AGENT_ERR_ALREADY_COMPLETED);
    char *message;
    CHECK_OK(agent_get_message(agent, 1, &message));
    CHECK_HAS(message, "\"text\":\"hi\"");
    CHECK_NOT_HAS(message, "errorMessage");
    agent_string_free(message);
    CHECK_OK(agent_free(agent));

    /* Option values libagent would otherwise treat as defaults are refused, naming the field. */
    AgentOptions *options = NULL;
    CHECK_ERR(agent_options_new("{\"steeringMode\":\"every\"}", &options), AGENT_ERR_INVALID_JSON,
              "Option \"steeringMode\" must be one of \"one-at-a-time\", \"all\" (got \"every\")");
    CHECK(options == NULL);
    CHECK_ERR(agent_options_new("{\"toolExecution\":\"serial\"}", &options), AGENT_ERR_INVALID_JSON, "toolExecution");
    CHECK_ERR(agent_options_new("{\"maxRetryDelayMs\":-1}", &options), AGENT_ERR_INVALID_JSON, "must not be negative");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"thinkingLevel\":\"huge\"}}", &options), AGENT_ERR_INVALID_JSON,
              "initialState.thinkingLevel");
    agent = new_agent("{\"followUpMode\":\"all\",\"initialState\":{\"thinkingLevel\":\"xhigh\"}}");
    CHECK_ERR(agent_configure(agent, "{\"followUpMode\":\"one-at-a-time\",\"thinkingLevel\":\"loud\"}"),
              AGENT_ERR_INVALID_JSON, "thinkingLevel");
    char *state = state_of(agent);
    CHECK_HAS(state, "\"followUpMode\":\"all\""); /* nothing changed */
    CHECK_HAS(state, "\"thinkingLevel\":\"xhigh\"");
    agent_string_free(state);
    CHECK_ERR(agent_configure(agent, "{\"abortGraceMs\":-5}"), AGENT_ERR_INVALID_JSON, "abortGraceMs");
    CHECK_OK(agent_configure(agent, "{\"followUpMode\":\"one-at-a-time\",\"thinkingLevel\":\"off\"}"));

    /* Cheap reads: count, one message, a range (the last N). */
    size_t count = 99;
    CHECK_OK(agent_get_message_count(agent, &count));
    CHECK_EQ_INT(count, 0);
    char *json = NULL;
    CHECK_ERR(agent_get_message(agent, 0, &json), AGENT_ERR_INVALID_ARGUMENT, "index 0 is out of range");
    CHECK(json == NULL);
    CHECK_OK(agent_prompt(agent, "\"first\"", NULL, NULL));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_OK(agent_prompt(agent, "\"second\"", NULL, NULL));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_OK(agent_get_message_count(agent, &count));
    CHECK_EQ_INT(count, 4);
    CHECK_OK(agent_get_message(agent, 3, &json));
    CHECK_HAS(json, "\"text\":\"two\"");
    CHECK(json[0] == '{');
    agent_string_free(json);
    CHECK_OK(agent_get_messages(agent, count - 2, 2, &json)); /* the last two */
    CHECK(json[0] == '[');
    CHECK_HAS(json, "\"second\"");
    CHECK_HAS(json, "\"text\":\"two\"");
    CHECK_NOT_HAS(json, "\"first\"");
    CHECK_EQ_INT(count_of(json, "\"role\""), 2);
    agent_string_free(json);
    CHECK_OK(agent_get_messages(agent, 3, 100, &json)); /* clamped */
    CHECK_EQ_INT(count_of(json, "\"role\""), 1);
    agent_string_free(json);
    CHECK_OK(agent_get_messages(agent, 10, 1, &json)); /* past the end */
    CHECK(!strcmp(json, "[]"));
    agent_string_free(json);
    /* The range is the state's messages, byte for byte. */
    CHECK_OK(agent_get_messages(agent, 0, count, &json));
    state = state_of(agent);
    CHECK_HAS(state, json);
    agent_string_free(state);
    agent_string_free(json);
    CHECK_ERR(agent_get_message_count(agent, NULL), AGENT_ERR_NULL, "out_count is NULL");

    /* fork(): the child has no runtime thread, so runs are refused instead of never running.
     * Not under valgrind, whose leak check in the child reports the parent's runtime memory. */
#ifndef _WIN32
    if (!getenv("LIBAGENT_TEST_SLOW")) {
        fflush(stdout);
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            if (agent_prompt(agent, "\"in the child\"", NULL, NULL) != AGENT_ERR_INVALID_STATE) _exit(10);
            if (!strstr(agent_last_error(), "fork()")) _exit(11);
            if (agent_continue(agent, NULL, NULL) != AGENT_ERR_INVALID_STATE) _exit(12);
            size_t n = 0;
            if (agent_get_message_count(agent, &n) != AGENT_OK || n != 4) _exit(13);
            _exit(0);
        }
        int wstatus;
        CHECK(waitpid(child, &wstatus, 0) == child);
        CHECK(WIFEXITED(wstatus));
        CHECK_EQ_INT(WEXITSTATUS(wstatus), 0);
    }
#endif
    CHECK_OK(agent_free(agent));

    /* agent_events_open racing agent_free: every queue that opened is closed by the free. The
     * open is delayed by a varying amount so that both outcomes happen; each must have been seen
     * (more rounds until they were, within a bound), or the race was not exercised. */
    int opened = 0, refused = 0;
    for (int i = 0; i < 200 || ((!opened || !refused) && i < 4000); i++) {
        agent = new_agent(NULL);
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, free_soon, agent) == 0);
        if (i % 8) sleep_us((i % 8) * 25);
        AgentEventQueue *queue = NULL;
        AgentStatus status = agent_events_open(agent, NULL, &queue);
        CHECK(pthread_join(thread, NULL) == 0);
        if (status == AGENT_OK) {
            opened++;
            char *event = NULL;
            CHECK_ERR(agent_events_next(queue, WAIT_MS, &event), AGENT_ERR_CLOSED, "closed");
            CHECK_OK(agent_events_close(queue));
        } else {
            refused++;
            CHECK_EQ_INT(status, AGENT_ERR_INVALID_HANDLE);
            CHECK(queue == NULL);
        }
    }
    if (!opened || !refused) FAIL("events_open racing free: %d opened, %d refused; both must happen", opened, refused);

    printf("test_hardening: ok\n");
    return 0;
}

/* agent_free and other re-entrant calls from inside the remaining callback kinds: the stream
 * function, consumed and abort notifications, an agent_end listener and done; a new run started
 * from done; unsubscribing and closing a queue from inside a listener. */
#include "check.h"

static AgentHandle g_agent;
static atomic_int done_calls, done_status, callbacks_after_free, freed, free_checked;

static void done_cb(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    atomic_store(&done_status, 1000 + outcome->status);
    atomic_fetch_add(&done_calls, 1);
}

/* 0: free in the stream function; 1: in the consumed callback; 2: in the abort callback;
 * 3: in an agent_end listener. */
static int mode;

static void free_now(void) {
    if (atomic_exchange(&freed, 1)) {
        atomic_fetch_add(&callbacks_after_free, 1);
        return;
    }
    CHECK_OK(agent_free(g_agent));
    CHECK_EQ_INT(atomic_load(&done_calls), 1);
    CHECK_EQ_INT(atomic_load(&done_status), 1000 + AGENT_RUN_FREED);
    atomic_store(&free_checked, 1); /* main waits for this before reusing the counters */
}


static AgentStream abort_stream;

static void on_abort(void *ud) {
    (void)ud;
    free_now();
    CHECK_ERR(agent_stream_push(abort_stream, "{\"type\":\"error\",\"reason\":\"aborted\"}", NTS), AGENT_ERR_STREAM_CLOSED, "closed");
}

static void on_consumed(void *ud, AgentStream stream) {
    (void)ud;
    if (mode == 1) {
        free_now();
        CHECK_ERR(agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}", NTS), AGENT_ERR_STREAM_CLOSED,
                  "The stream is closed");
    } else if (mode == 2) {
        CHECK_OK(agent_abort(g_agent));
    }
}

static void stream_fn(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud, (void)request;
    if (mode == 0) {
        free_now();
        CHECK_ERR(agent_stream_push(stream, "{\"type\":\"start\"}", NTS), AGENT_ERR_STREAM_CLOSED, "closed");
        /* An answer after the free is accepted and discarded. */
        CHECK_OK(agent_stream_end(stream, NULL, 0));
        return;
    }
    CHECK_OK(agent_stream_on_consumed(stream, on_consumed, NULL, NULL));
    abort_stream = stream;
    CHECK_OK(agent_stream_on_abort(stream, on_abort, NULL, NULL));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
}

static void scenario_stream(int which) {
    mode = which;
    atomic_store(&done_calls, 0);
    atomic_store(&freed, 0);
    atomic_store(&free_checked, 0);
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_stream_fn(options, stream_fn, NULL, NULL));
    CHECK_OK(agent_new(options, &g_agent));
    CHECK_OK(agent_prompt(g_agent, "\"x\"", NTS, done_cb, NULL, NULL));
    WAIT_UNTIL(atomic_load(&free_checked) == 1);
    sleep_ms(20);
    CHECK_EQ_INT(atomic_load(&done_calls), 1);
}

/* An agent_end listener frees the agent. */
static AgentListenerAnswer end_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind == AGENT_EVENT_AGENT_END) free_now();
    return AGENT_LISTENER_CONTINUE;
}

/* done frees the agent (the run is over: nothing to cancel). */
static void done_free(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    atomic_store(&done_status, 1000 + outcome->status);
    atomic_fetch_add(&done_calls, 1);
    CHECK_OK(agent_free(g_agent));
}

/* done starts the next run. */
static atomic_int second_done;
static void done_second(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    CHECK_EQ_INT(outcome->status, AGENT_RUN_COMPLETED);
    atomic_fetch_add(&second_done, 1);
}
static void done_prompt(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    CHECK_EQ_INT(outcome->status, AGENT_RUN_COMPLETED);
    AgentErrorCode started = code_of(agent_prompt(g_agent, "\"second\"", NTS, done_second, NULL, NULL));
    if (started != AGENT_OK) {
        /* Still inside the first run's completion: refused with the reference text. */
        CHECK_EQ_INT(started, AGENT_ERR_BUSY);
        atomic_fetch_add(&second_done, 1);
    }
    atomic_fetch_add(&done_calls, 1);
}

/* A listener that unsubscribes itself and closes a queue from inside. */
static uint64_t self_id;
static AgentQueue inner_queue;
static atomic_int self_calls;
static AgentListenerAnswer self_listener(void *ud, const AgentEvent *event) {
    (void)ud, (void)event;
    atomic_fetch_add(&self_calls, 1);
    CHECK_OK(agent_unsubscribe(g_agent, self_id));
    CHECK_OK(agent_queue_close(inner_queue));
    return AGENT_LISTENER_CONTINUE;
}

static AgentHandle scripted_agent(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},"
                                                       " {\"content\":[{\"type\":\"text\",\"text\":\"b\"}]}]", NTS));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

int main(void) {
    for (int which = 0; which < 3; which++) scenario_stream(which);

    g_agent = scripted_agent();
    mode = 3;
    atomic_store(&done_calls, 0);
    atomic_store(&freed, 0);
    atomic_store(&free_checked, 0);
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, end_listener, NULL, NULL, &id));
    CHECK_OK(agent_prompt(g_agent, "\"x\"", NTS, done_cb, NULL, NULL));
    WAIT_UNTIL(atomic_load(&free_checked) == 1);

    g_agent = scripted_agent();
    atomic_store(&done_calls, 0);
    CHECK_OK(agent_prompt(g_agent, "\"x\"", NTS, done_free, NULL, NULL));
    WAIT_UNTIL(atomic_load(&done_calls) == 1);
    CHECK_EQ_INT(atomic_load(&done_status), 1000 + AGENT_RUN_COMPLETED);
    WAIT_UNTIL(code_of(agent_abort(g_agent)) == AGENT_ERR_INVALID_HANDLE);

    g_agent = scripted_agent();
    atomic_store(&done_calls, 0);
    CHECK_OK(agent_prompt(g_agent, "\"x\"", NTS, done_prompt, NULL, NULL));
    WAIT_UNTIL(atomic_load(&done_calls) == 1);
    WAIT_UNTIL(atomic_load(&second_done) == 1);
    WAIT_IDLE(g_agent);

    CHECK_OK(agent_queue_open(g_agent, "{\"capacity\":1}", NTS, &inner_queue));
    CHECK_OK(agent_subscribe(g_agent, self_listener, NULL, NULL, &self_id));
    CHECK_OK(agent_set_scripted_model(g_agent, "[{\"content\":[{\"type\":\"text\",\"text\":\"c\",\"chunks\":1}]}]", NTS));
    CHECK_OK(agent_prompt(g_agent, "\"y\"", NTS, NULL, NULL, NULL));
    WAIT_IDLE(g_agent);
    CHECK_EQ_INT(atomic_load(&self_calls), 1);
    CHECK_OK(agent_free(g_agent));

    CHECK_EQ_INT(atomic_load(&callbacks_after_free), 0);
    printf("test_free_inside: ok\n");
    return 0;
}

/* The event pull queue: the same event structs as a listener's, JSON in both shapes on request,
 * losslessness and order, backpressure with a small capacity, options errors, close while the
 * loop waits, CLOSED after agent_free, and WOULD_DEADLOCK when waiting on the runtime thread. */
#include "check.h"

static const char *SCRIPT = "[{\"content\":[{\"type\":\"text\",\"text\":\"one two three four\",\"chunks\":4}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"second\"}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"third\"}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"fourth\"}]}]";

static AgentQueue listener_queue;

/* Takes the next event (waiting up to `timeout_ms`); returns what agent_queue_next found. */
static AgentNext next_of(AgentQueue queue, int64_t timeout_ms, AgentEvent *event) {
    AgentNext next = -1;
    CHECK_OK(agent_queue_next(queue, timeout_ms, event, &next));
    return next;
}

/* Blocks in agent_queue_next until the queue is closed by another thread. */
static void *blocked_reader(void *arg) {
    AgentQueue queue = *(AgentQueue *)arg;
    AgentEvent event;
    AgentNext next = -1;
    AgentError *error = agent_queue_next(queue, -1, &event, &next);
    if (error) {
        intptr_t code = agent_error_code(error);
        agent_error_free(error);
        return (void *)code;
    }
    CHECK_EQ_INT(next, AGENT_NEXT_CLOSED);
    return (void *)(intptr_t)1;
}
static atomic_int listener_checked;

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    (void)event;
    AgentEvent taken;
    AgentNext next;
    if (atomic_fetch_add(&listener_checked, 1) == 0) {
        CHECK_ERR(agent_queue_next(listener_queue, 10, &taken, &next), AGENT_ERR_WOULD_DEADLOCK,
                  "agent_queue_next would wait on the runtime thread");
        CHECK_ERR(agent_queue_next(listener_queue, -1, &taken, &next), AGENT_ERR_WOULD_DEADLOCK, "runtime thread");
        /* A zero timeout never waits, so it is allowed. */
        CHECK_OK(agent_queue_next(listener_queue, 0, &taken, &next));
        CHECK(next == AGENT_NEXT_EVENT || next == AGENT_NEXT_TIMEOUT);
    }
    return AGENT_LISTENER_CONTINUE;
}

static AgentHandle new_agent(void) {
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_scripted_model(options, SCRIPT, NTS));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

static const char *type_names[] = {"agent_start", "agent_end", "turn_start", "turn_end", "message_start",
                                   "message_update", "message_end", "tool_execution_start",
                                   "tool_execution_update", "tool_execution_end", "compaction_start",
                                   "compaction_end", "auto_retry_start", "auto_retry_end"};

/* Takes events until agent_end, reading each one's JSON in `shape`; returns how many; appends
 * their types to `types` (from the struct, checked against the JSON). */
static int drain_run(AgentQueue queue, char *types, size_t cap, AgentEventShape shape) {
    int n = 0;
    for (;;) {
        AgentEvent event;
        CHECK_EQ_INT(next_of(queue, WAIT_MS, &event), AGENT_NEXT_EVENT);
        n++;
        CHECK(event.kind >= 0 && event.kind <= AGENT_EVENT_AUTO_RETRY_END);
        const char *name = type_names[event.kind];
        CHECK(strlen(types) + strlen(name) + 2 < cap);
        strcat(types, name);
        strcat(types, ",");
        AgentStr json;
        CHECK_OK(agent_event_json(&event, shape, &json));
        char prefix[64];
        snprintf(prefix, sizeof prefix, "{\"type\":\"%s\"", name);
        CHECK(strncmp(json.ptr, prefix, strlen(prefix)) == 0);
        if (event.kind == AGENT_EVENT_MESSAGE_UPDATE) {
            if (shape == AGENT_EVENT_SHAPE_LEAN) CHECK_NOT_HAS(json.ptr, "\"partial\":");
            else CHECK_HAS(json.ptr, "\"partial\":");
        }
        if (event.kind == AGENT_EVENT_AGENT_END) return n;
    }
}

int main(void) {
    AgentHandle agent = new_agent();
    AgentQueue queue = {0};

    /* Options errors. */
    CHECK_ERR(agent_queue_open(agent, "{", NTS, &queue), AGENT_ERR_INVALID_JSON, "options_json is not valid JSON");
    CHECK_ERR(agent_queue_open(agent, "[]", NTS, &queue), AGENT_ERR_INVALID_JSON, "options_json must be a JSON object.");
    CHECK_ERR(agent_queue_open(agent, "{\"capacity\":0}", NTS, &queue), AGENT_ERR_INVALID_JSON, "capacity must be an integer >= 1.");
    CHECK_ERR(agent_queue_open(agent, "{\"capacity\":\"8\"}", NTS, &queue), AGENT_ERR_INVALID_JSON, "capacity must be an integer");
    CHECK_ERR(agent_queue_open(agent, "{\"size\":1}", NTS, &queue), AGENT_ERR_INVALID_JSON, "Unknown option \"size\".");
    CHECK_ERR(agent_queue_open(agent, NULL, 0, NULL), AGENT_ERR_NULL, "out_queue is NULL");
    CHECK(queue.id == 0);

    AgentQueue full = {0}, lean = {0};
    CHECK_OK(agent_queue_open(agent, NULL, 0, &full));
    CHECK_OK(agent_queue_open(agent, "{\"capacity\":2}", NTS, &lean));
    AgentEvent event;
    CHECK_EQ_INT(next_of(full, 0, &event), AGENT_NEXT_TIMEOUT);
    CHECK_EQ_INT(next_of(full, 5, &event), AGENT_NEXT_TIMEOUT);
    AgentStr json;
    CHECK_ERR(agent_event_json(&event, 7, &json), AGENT_ERR_INVALID_ARGUMENT, "Unknown event shape 7");

    /* Backpressure: with nobody taking from the small queue, the run cannot finish. */
    AgentRun run;
    CHECK_OK(agent_prompt(agent, "\"count\"", NTS, NULL, NULL, &run));
    AgentWaitResult waited;
    CHECK_OK(agent_run_wait(run, 100, &waited));
    CHECK_EQ_INT(waited, AGENT_WAIT_TIMEOUT);
    char lean_types[4096] = "", full_types[4096] = "";
    int lean_count = drain_run(lean, lean_types, sizeof lean_types, AGENT_EVENT_SHAPE_LEAN);
    WAIT_RUN(run);
    CHECK_OK(agent_run_free(run));
    int full_count = drain_run(full, full_types, sizeof full_types, AGENT_EVENT_SHAPE_FULL);
    /* Lossless and in order, in both shapes. */
    CHECK_EQ_INT(lean_count, full_count);
    CHECK(strcmp(lean_types, full_types) == 0);
    CHECK(strncmp(full_types, "agent_start,turn_start,message_start,message_end,message_start,message_update,", 78) == 0);
    CHECK(count_of(full_types, "message_update,") >= 6);
    CHECK(strcmp(full_types + strlen(full_types) - 28, "message_end,turn_end,agent_end,") == 0 ||
          strcmp(full_types + strlen(full_types) - 19, "turn_end,agent_end,") == 0);
    CHECK_EQ_INT(next_of(full, 0, &event), AGENT_NEXT_TIMEOUT);

    /* Closing a queue the loop is waiting on lets the run go on. */
    CHECK_OK(agent_prompt(agent, "\"again\"", NTS, NULL, NULL, &run));
    CHECK_OK(agent_run_wait(run, 50, &waited));
    CHECK_EQ_INT(waited, AGENT_WAIT_TIMEOUT);
    CHECK_OK(agent_queue_close(lean));
    WAIT_RUN(run);
    CHECK_OK(agent_run_free(run));
    AgentNext next;
    CHECK_ERR(agent_queue_next(lean, 0, &event, &next), AGENT_ERR_INVALID_HANDLE, "queue is a freed");
    CHECK_ERR(agent_queue_close(lean), AGENT_ERR_INVALID_HANDLE, "queue is a freed");
    char again_types[4096] = "";
    drain_run(full, again_types, sizeof again_types, AGENT_EVENT_SHAPE_LEAN);

    /* Closing a queue wakes a reader blocked on it from another thread. A reader that had not
     * reached agent_queue_next yet sees a freed queue instead; the woken branch must happen
     * (more rounds, with a longer head start, until it did). */
    int woken = 0;
    for (int round = 0; round < 10 && !woken; round++) {
        AgentQueue idle_queue = {0};
        CHECK_OK(agent_queue_open(agent, NULL, 0, &idle_queue));
        pthread_t reader;
        CHECK(pthread_create(&reader, NULL, blocked_reader, &idle_queue) == 0);
        sleep_ms(20 * (round + 1));
        CHECK_OK(agent_queue_close(idle_queue));
        void *reader_status;
        pthread_join(reader, &reader_status);
        if ((intptr_t)reader_status == 1) woken = 1;
        else CHECK_EQ_INT((intptr_t)reader_status, AGENT_ERR_INVALID_HANDLE);
    }
    if (!woken) FAIL("no reader blocked in agent_queue_next was woken by the close");

    /* A listener cannot wait on a queue from the runtime thread. */
    CHECK_OK(agent_queue_open(agent, NULL, 0, &listener_queue));
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, listener, NULL, NULL, &id));
    CHECK_OK(agent_prompt(agent, "\"third\"", NTS, NULL, NULL, NULL));
    WAIT_IDLE(agent);
    CHECK(atomic_load(&listener_checked) > 0);
    CHECK_OK(agent_queue_close(listener_queue));

    /* After agent_free: what was queued can still be taken, then CLOSED. */
    AgentQueue small = {0};
    CHECK_OK(agent_queue_open(agent, "{\"capacity\":1}", NTS, &small));
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt(agent, "\"fourth\"", NTS, record_done, done, &run));
    CHECK_EQ_INT(next_of(small, WAIT_MS, &event), AGENT_NEXT_EVENT); /* the run is now blocked on the queue */
    CHECK_EQ_INT(event.kind, AGENT_EVENT_AGENT_START);
    CHECK_OK(agent_free(agent));
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_FREED);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_FREED);
    CHECK_OK(agent_run_free(run));
    int left = 0;
    while ((next = next_of(small, WAIT_MS, &event)) == AGENT_NEXT_EVENT) left++;
    CHECK(left <= 1);
    CHECK_EQ_INT(next, AGENT_NEXT_CLOSED);
    /* The big queue still holds the events of the later runs, then reports CLOSED. */
    while ((next = next_of(full, -1, &event)) == AGENT_NEXT_EVENT) {
    }
    CHECK_EQ_INT(next, AGENT_NEXT_CLOSED);
    CHECK_OK(agent_queue_close(small));
    CHECK_OK(agent_queue_close(full));
    /* Opening on a freed agent fails. */
    CHECK_ERR(agent_queue_open(agent, NULL, 0, &queue), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent");
    printf("test_events: ok\n");
    return 0;
}

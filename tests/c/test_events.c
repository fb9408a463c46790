/* The event pull queue: both shapes, losslessness and order, backpressure with a small
 * capacity, options errors, close while the loop waits, CLOSED after agent_free, and
 * WOULD_DEADLOCK when waiting on the runtime thread. */
#include "check.h"

static const char *SCRIPT = "[{\"content\":[{\"type\":\"text\",\"text\":\"one two three four\",\"chunks\":4}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"second\"}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"third\"}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"fourth\"}]}]";

static AgentEventQueue *listener_queue;

/* Blocks in agent_events_next until the queue is closed by another thread. */
static void *blocked_reader(void *queue) {
    char *json = NULL;
    AgentStatus status = agent_events_next(queue, -1, &json);
    CHECK(json == NULL);
    return (void *)(intptr_t)status;
}
static atomic_int listener_checked;

static void listener(void *ud, const AgentEvent *event, AgentCall *call) {
    (void)ud;
    (void)event;
    char *json = NULL;
    if (atomic_fetch_add(&listener_checked, 1) == 0) {
        CHECK_ERR(agent_events_next(listener_queue, 10, &json), AGENT_ERR_WOULD_DEADLOCK,
                  "agent_events_next would wait on the runtime thread");
        CHECK_ERR(agent_events_next(listener_queue, -1, &json), AGENT_ERR_WOULD_DEADLOCK, "runtime thread");
        /* A zero timeout never waits, so it is allowed. */
        AgentStatus status = agent_events_next(listener_queue, 0, &json);
        CHECK(status == AGENT_OK || status == AGENT_ERR_TIMEOUT);
        agent_string_free(json);
    }
    CHECK_OK(agent_call_complete(call, NULL));
}

static AgentHandle *new_agent(void) {
    AgentOptions *options = NULL;
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", &options));
    CHECK_OK(agent_options_set_scripted_model(options, SCRIPT));
    AgentHandle *agent = NULL;
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

/* Takes events until agent_end; returns how many; appends their types to `types`. */
static int drain_run(AgentEventQueue *queue, char *types, size_t cap, int lean) {
    int n = 0;
    for (;;) {
        char *json = NULL;
        CHECK_OK(agent_events_next(queue, WAIT_MS, &json));
        n++;
        CHECK(strncmp(json, "{\"type\":\"", 9) == 0);
        const char *end = strchr(json + 9, '"');
        strncat(types, json + 9, (size_t)(end - json - 9) < cap - strlen(types) - 2 ? (size_t)(end - json - 9) : 0);
        strcat(types, ",");
        if (strncmp(json, "{\"type\":\"message_update\"", 24) == 0) {
            if (lean) CHECK_NOT_HAS(json, "\"partial\":");
            else CHECK_HAS(json, "\"partial\":");
        }
        int last = strncmp(json, "{\"type\":\"agent_end\"", 19) == 0;
        agent_string_free(json);
        if (last) return n;
    }
}

int main(void) {
    AgentHandle *agent = new_agent();
    AgentEventQueue *queue = NULL;

    /* Options errors. */
    CHECK_ERR(agent_events_open(agent, "{", &queue), AGENT_ERR_INVALID_JSON, "options_json is not valid JSON");
    CHECK_ERR(agent_events_open(agent, "[]", &queue), AGENT_ERR_INVALID_JSON, "options_json must be a JSON object.");
    CHECK_ERR(agent_events_open(agent, "{\"capacity\":0}", &queue), AGENT_ERR_INVALID_JSON, "capacity must be an integer >= 1.");
    CHECK_ERR(agent_events_open(agent, "{\"capacity\":\"8\"}", &queue), AGENT_ERR_INVALID_JSON, "capacity must be an integer");
    CHECK_ERR(agent_events_open(agent, "{\"shape\":\"tiny\"}", &queue), AGENT_ERR_INVALID_JSON, "shape must be \"full\" or \"lean\".");
    CHECK_ERR(agent_events_open(agent, "{\"size\":1}", &queue), AGENT_ERR_INVALID_JSON, "Unknown option \"size\".");
    CHECK_ERR(agent_events_open(agent, NULL, NULL), AGENT_ERR_NULL, "out_queue is NULL");
    CHECK(queue == NULL);

    AgentEventQueue *full = NULL, *lean = NULL;
    CHECK_OK(agent_events_open(agent, NULL, &full));
    CHECK_OK(agent_events_open(agent, "{\"capacity\":2,\"shape\":\"lean\"}", &lean));
    char *json = NULL;
    CHECK_ERR(agent_events_next(full, 0, &json), AGENT_ERR_TIMEOUT, "No event arrived in time.");
    CHECK_ERR(agent_events_next(full, 5, &json), AGENT_ERR_TIMEOUT, "No event arrived in time.");
    CHECK(json == NULL);

    /* Backpressure: with nobody taking from the small queue, the run cannot finish. */
    CHECK_OK(agent_prompt(agent, "\"count\"", NULL, NULL));
    CHECK_ERR(agent_wait_for_idle(agent, 100), AGENT_ERR_TIMEOUT, "The run did not finish in time.");
    char lean_types[4096] = "", full_types[4096] = "";
    int lean_count = drain_run(lean, lean_types, sizeof lean_types, 1);
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    int full_count = drain_run(full, full_types, sizeof full_types, 0);
    /* Lossless and in order, in both shapes. */
    CHECK_EQ_INT(lean_count, full_count);
    CHECK(strcmp(lean_types, full_types) == 0);
    CHECK(strncmp(full_types, "agent_start,turn_start,message_start,message_end,message_start,message_update,", 78) == 0);
    CHECK(count_of(full_types, "message_update,") >= 6);
    CHECK(strcmp(full_types + strlen(full_types) - 28, "message_end,turn_end,agent_end,") == 0 ||
          strcmp(full_types + strlen(full_types) - 19, "turn_end,agent_end,") == 0);
    CHECK_ERR(agent_events_next(full, 0, &json), AGENT_ERR_TIMEOUT, "No event arrived in time.");

    /* Closing a queue the loop is waiting on lets the run go on. */
    CHECK_OK(agent_prompt(agent, "\"again\"", NULL, NULL));
    CHECK_ERR(agent_wait_for_idle(agent, 50), AGENT_ERR_TIMEOUT, "did not finish in time");
    CHECK_OK(agent_events_close(lean));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_ERR(agent_events_next(lean, 0, &json), AGENT_ERR_INVALID_HANDLE, "queue is a freed event queue");
    CHECK_ERR(agent_events_close(lean), AGENT_ERR_INVALID_HANDLE, "queue is a freed event queue");
    char again_types[4096] = "";
    drain_run(full, again_types, sizeof again_types, 0);

    /* Closing a queue wakes a reader blocked on it from another thread. A reader that had not
     * reached agent_events_next yet sees a freed queue instead; the woken branch must happen
     * (more rounds, with a longer head start, until it did). */
    int woken = 0;
    for (int round = 0; round < 10 && !woken; round++) {
        AgentEventQueue *idle_queue = NULL;
        CHECK_OK(agent_events_open(agent, NULL, &idle_queue));
        pthread_t reader;
        CHECK(pthread_create(&reader, NULL, blocked_reader, idle_queue) == 0);
        sleep_ms(20 * (round + 1));
        CHECK_OK(agent_events_close(idle_queue));
        void *reader_status;
        pthread_join(reader, &reader_status);
        if ((intptr_t)reader_status == AGENT_ERR_CLOSED) woken = 1;
        else CHECK_EQ_INT((intptr_t)reader_status, AGENT_ERR_INVALID_HANDLE);
    }
    if (!woken) FAIL("no reader blocked in agent_events_next was woken by the close");

    /* A listener cannot wait on a queue from the runtime thread. */
    CHECK_OK(agent_events_open(agent, "{\"shape\":\"full\"}", &listener_queue));
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, listener, NULL, NULL, &id));
    CHECK_OK(agent_prompt(agent, "\"third\"", NULL, NULL));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK(atomic_load(&listener_checked) > 0);
    CHECK_OK(agent_events_close(listener_queue));

    /* After agent_free: what was queued can still be taken, then CLOSED. */
    AgentEventQueue *small = NULL;
    CHECK_OK(agent_events_open(agent, "{\"capacity\":1}", &small));
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt(agent, "\"fourth\"", record_done, done));
    char *first = NULL;
    CHECK_OK(agent_events_next(small, WAIT_MS, &first)); /* the run is now blocked on the queue */
    CHECK_HAS(first, "agent_start");
    agent_string_free(first);
    CHECK_OK(agent_free(agent));
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_ERR_FREED);
    AgentStatus status;
    int left = 0;
    while ((status = agent_events_next(small, WAIT_MS, &json)) == AGENT_OK) {
        agent_string_free(json);
        left++;
    }
    CHECK(left <= 1);
    CHECK_ERR(status, AGENT_ERR_CLOSED, "The event queue is closed.");
    /* The big queue still holds the events of the later runs, then reports CLOSED. */
    while ((status = agent_events_next(full, -1, &json)) == AGENT_OK) agent_string_free(json);
    CHECK_ERR(status, AGENT_ERR_CLOSED, "The event queue is closed.");
    CHECK_OK(agent_events_close(small));
    CHECK_OK(agent_events_close(full));
    /* Opening on a freed agent fails. */
    CHECK_ERR(agent_events_open(agent, NULL, &queue), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent");
    printf("test_events: ok\n");
    return 0;
}

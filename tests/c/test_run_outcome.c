/* agent_last_run_outcome: how the last settled run ended (completed / model error / aborted),
 * read without the state, also inside `done`; and its misuse (NULL and stale handles, NULL
 * out-parameters, no settled run). */
#include "check.h"

#include <sched.h>

static AgentHandle *new_agent(const char *script) {
    AgentOptions *opts = NULL;
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", &opts));
    CHECK_OK(agent_options_set_scripted_model(opts, script));
    AgentHandle *agent = NULL;
    CHECK_OK(agent_new(opts, &agent));
    return agent;
}

/* Runs one prompt; `done` must report AGENT_OK (the reference's promise resolves). */
static void run_once(AgentHandle *agent) {
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt_text(agent, "hi", NULL, record_done, done));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_OK);
}

static void check_outcome(AgentHandle *agent, AgentStatus expected, const char *text) {
    AgentStatus status = 12345;
    char *message = NULL;
    CHECK_OK(agent_last_run_outcome(agent, &status, &message));
    CHECK_EQ_INT(status, expected);
    CHECK(message != NULL);
    if (*text == '\0') CHECK_EQ_INT(strlen(message), 0);
    else CHECK_HAS(message, text);
    agent_string_free(message);
}

/* What `done` saw through the accessor. */
typedef struct {
    AgentHandle *agent;
    AgentStatus call_status;
    AgentStatus outcome;
    char *message;
} InsideDone;

static void done_reading_outcome(void *ud, AgentStatus status, const char *error) {
    (void)status;
    (void)error;
    InsideDone *seen = ud;
    seen->call_status = agent_last_run_outcome(seen->agent, &seen->outcome, &seen->message);
}

/* Under contention: reader threads call the accessor while the main thread runs prompts that
 * alternately complete and fail. Every answer is one the header documents, a message is always
 * the outcome's own, and after each wait the outcome is that run's. */
static AgentHandle *contended;
static atomic_int stop_readers;
static atomic_int reads_ok, reads_between;

static void *read_outcomes(void *unused) {
    (void)unused;
    while (!atomic_load(&stop_readers)) {
        AgentStatus outcome = 12345;
        char *message = NULL;
        AgentStatus status = agent_last_run_outcome(contended, &outcome, &message);
        if (status == AGENT_OK) {
            if (outcome == AGENT_OK) CHECK_EQ_INT(strlen(message), 0);
            else if (outcome == AGENT_ERR_MODEL_ERROR) CHECK_HAS(message, "503 busy");
            else FAIL("outcome %d under contention", outcome);
            agent_string_free(message);
            atomic_fetch_add(&reads_ok, 1);
        } else {
            CHECK_EQ_INT(status, AGENT_ERR_INVALID_STATE); /* a run in progress (or none yet) */
            CHECK(message == NULL);
            atomic_fetch_add(&reads_between, 1);
        }
        sched_yield(); /* under valgrind, which runs one thread at a time, spinning readers starve the run */
    }
    return NULL;
}

static void outcome_under_contention(void) {
    enum { MAX_RUNS = 200, READERS = 4 };
    const int RUNS = getenv("LIBAGENT_TEST_SLOW") ? 20 : MAX_RUNS; /* valgrind: fewer */
    char script[MAX_RUNS * 96 + 8] = "[";
    for (int i = 0; i < RUNS; i++)
        strcat(script, i % 2 ? "{\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"503 busy\"},"
                             : "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]},");
    script[strlen(script) - 1] = ']';
    contended = new_agent(script);
    pthread_t readers[READERS];
    for (int i = 0; i < READERS; i++) CHECK(pthread_create(&readers[i], NULL, read_outcomes, NULL) == 0);
    for (int i = 0; i < RUNS; i++) {
        CHECK_OK(agent_prompt_text(contended, "hi", NULL, NULL, NULL));
        CHECK_OK(agent_wait_for_idle(contended, WAIT_MS));
        check_outcome(contended, i % 2 ? AGENT_ERR_MODEL_ERROR : AGENT_OK, i % 2 ? "503 busy" : "");
    }
    atomic_store(&stop_readers, 1);
    for (int i = 0; i < READERS; i++) CHECK(pthread_join(readers[i], NULL) == 0);
    /* Both answers were seen while runs came and went. */
    CHECK(atomic_load(&reads_ok) > 0);
    CHECK(atomic_load(&reads_between) > 0);
    CHECK_OK(agent_free(contended));
}

int main(void) {
    AgentStatus status = 0;
    char *message = NULL;

    /* Misuse: NULL, forged and (below) freed handles; NULL out_status. */
    CHECK_ERR(agent_last_run_outcome(NULL, &status, &message), AGENT_ERR_INVALID_HANDLE, "agent");
    CHECK_ERR(agent_last_run_outcome((AgentHandle *)(uintptr_t)0x1234, &status, NULL), AGENT_ERR_INVALID_HANDLE,
              "agent");

    /* A completed run. Before it there is nothing to report. */
    AgentHandle *agent = new_agent("[{\"content\":[{\"type\":\"text\",\"text\":\"fine\"}]},"
                                   "{\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"401 bad key\"},"
                                   "{\"throw\":\"the stream function threw\"},"
                                   "{\"content\":[],\"waitForAbort\":true},"
                                   "{\"content\":[{\"type\":\"text\",\"text\":\"again\"}]}]");
    CHECK_ERR(agent_last_run_outcome(agent, NULL, &message), AGENT_ERR_NULL, "out_status");
    CHECK_ERR(agent_last_run_outcome(agent, &status, &message), AGENT_ERR_INVALID_STATE, "No run has settled");
    run_once(agent);
    check_outcome(agent, AGENT_OK, "");
    CHECK_OK(agent_last_run_outcome(agent, &status, NULL)); /* the message is optional */
    CHECK_EQ_INT(status, AGENT_OK);

    /* A failed model request: `done` still says AGENT_OK, the outcome says why. */
    run_once(agent);
    check_outcome(agent, AGENT_ERR_MODEL_ERROR, "401 bad key");

    /* A stream function that failed is a model error too, with its message. */
    run_once(agent);
    check_outcome(agent, AGENT_ERR_MODEL_ERROR, "the stream function threw");

    /* While a run is active there is no outcome; an aborted run reports AGENT_ERR_ABORTED. */
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt_text(agent, "wait", NULL, record_done, done));
    CHECK_ERR(agent_last_run_outcome(agent, &status, &message), AGENT_ERR_INVALID_STATE, "A run is active");
    CHECK_OK(agent_abort(agent));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_OK);
    AgentStatus aborted = 0;
    CHECK_OK(agent_last_run_outcome(agent, &aborted, &message));
    CHECK_EQ_INT(aborted, AGENT_ERR_ABORTED);
    CHECK(strlen(message) > 0);
    agent_string_free(message);

    /* Inside `done`, the outcome of the run that is settling is already there. */
    InsideDone seen = {agent, 12345, 12345, NULL};
    CHECK_OK(agent_prompt_text(agent, "again", NULL, done_reading_outcome, &seen));
    CHECK_OK(agent_wait_for_idle(agent, WAIT_MS));
    CHECK_EQ_INT(seen.call_status, AGENT_OK);
    CHECK_EQ_INT(seen.outcome, AGENT_OK);
    CHECK(seen.message != NULL && seen.message[0] == '\0');
    agent_string_free(seen.message);

    /* reset forgets it; a freed handle is reported and out-parameters stay untouched. */
    CHECK_OK(agent_reset(agent));
    CHECK_ERR(agent_last_run_outcome(agent, &status, &message), AGENT_ERR_INVALID_STATE, "reset");
    CHECK_OK(agent_free(agent));
    status = 777;
    message = NULL;
    CHECK_ERR(agent_last_run_outcome(agent, &status, &message), AGENT_ERR_INVALID_HANDLE, "freed");
    CHECK_EQ_INT(status, 777);
    CHECK(message == NULL);
    outcome_under_contention();
    puts("test_run_outcome: ok");
    return 0;
}

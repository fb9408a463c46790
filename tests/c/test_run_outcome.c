/* agent_run_outcome: how a run ended (completed / model error / aborted), read through its run
 * handle without the state, also inside `done` (which gets the same outcome); outcomes stay with
 * their runs (a later run, reset or agent_free do not change them); misuse (null, forged and
 * freed run handles, NULL out-parameters); and reads from other threads while runs come and go. */
#include "check.h"

#include <sched.h>

static AgentHandle new_agent(const char *script) {
    AgentOptions opts = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &opts));
    CHECK_OK(agent_options_set_scripted_model(opts, script, NTS));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(opts, &agent));
    return agent;
}

/* Runs one prompt to its end; `done` must report the run's own status. */
static AgentRun run_once(AgentHandle agent) {
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "hi", NTS, NULL, 0, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + outcome_of(run).status);
    return run;
}

static void check_outcome(AgentRun run, AgentRunStatus expected, const char *text) {
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, expected);
    CHECK(outcome.error_message.ptr != NULL);
    CHECK(strlen(outcome.error_message.ptr) == outcome.error_message.len);
    if (*text == '\0') CHECK_EQ_INT(outcome.error_message.len, 0);
    else CHECK_HAS(outcome.error_message.ptr, text);
}

/* What `done` saw through the accessor, beside its argument. */
typedef struct {
    AgentRunStatus given, read;
    size_t given_count, read_count;
    int same_run;
} InsideDone;

static void done_reading_outcome(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    InsideDone *seen = ud;
    AgentRunOutcome read = outcome_of(run);
    seen->given = outcome->status;
    seen->given_count = outcome->message_count;
    seen->read = read.status;
    seen->read_count = read.message_count;
    seen->same_run = read.stop_reason.len == outcome->stop_reason.len &&
                     memcmp(read.stop_reason.ptr, outcome->stop_reason.ptr, read.stop_reason.len) == 0;
}

/* Under contention: reader threads read the current run's outcome while the main thread runs
 * prompts that alternately complete and fail. Every answer is one the header documents: RUNNING,
 * or the run's own final outcome; a freed run handle is reported. */
static _Atomic uint64_t current_run;
static atomic_int current_index;
static atomic_int stop_readers;
static atomic_int reads_settled, reads_running;

static void *read_outcomes(void *unused) {
    (void)unused;
    while (!atomic_load(&stop_readers)) {
        int index = atomic_load(&current_index);
        AgentRun run = {atomic_load(&current_run)};
        AgentRunOutcome outcome;
        AgentError *error = agent_run_outcome(run, &outcome);
        if (!error) {
            if (outcome.status == AGENT_RUN_RUNNING) {
                atomic_fetch_add(&reads_running, 1);
            } else if (run.id == atomic_load(&current_run) && index == atomic_load(&current_index)) {
                if (outcome.status == AGENT_RUN_COMPLETED) CHECK_EQ_INT(index % 2, 0);
                else if (outcome.status == AGENT_RUN_MODEL_ERROR) CHECK_EQ_INT(index % 2, 1);
                else FAIL("outcome %d under contention", outcome.status);
                atomic_fetch_add(&reads_settled, 1);
            }
        } else {
            CHECK_EQ_INT(agent_error_code(error), AGENT_ERR_INVALID_HANDLE); /* freed meanwhile (or none yet) */
            agent_error_free(error);
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
    AgentHandle contended = new_agent(script);
    pthread_t readers[READERS];
    for (int i = 0; i < READERS; i++) CHECK(pthread_create(&readers[i], NULL, read_outcomes, NULL) == 0);
    for (int i = 0; i < RUNS; i++) {
        AgentRun run;
        CHECK_OK(agent_prompt_text(contended, "hi", NTS, NULL, 0, NULL, NULL, &run));
        atomic_store(&current_index, i);
        atomic_store(&current_run, run.id);
        WAIT_RUN(run);
        check_outcome(run, i % 2 ? AGENT_RUN_MODEL_ERROR : AGENT_RUN_COMPLETED, i % 2 ? "503 busy" : "");
        sched_yield();
        atomic_store(&current_run, 0);
        CHECK_OK(agent_run_free(run));
    }
    atomic_store(&stop_readers, 1);
    for (int i = 0; i < READERS; i++) CHECK(pthread_join(readers[i], NULL) == 0);
    CHECK(atomic_load(&reads_settled) + atomic_load(&reads_running) > 0);
    CHECK_OK(agent_free(contended));
}

int main(void) {
    AgentRunOutcome outcome;

    /* Misuse: null and forged handles, an agent handle's id as a run's. */
    CHECK_ERR(agent_run_outcome((AgentRun){0}, &outcome), AGENT_ERR_INVALID_HANDLE, "run is the null handle");
    CHECK_ERR(agent_run_outcome((AgentRun){0x1234}, &outcome), AGENT_ERR_INVALID_HANDLE, "run");

    AgentHandle agent = new_agent("[{\"content\":[{\"type\":\"text\",\"text\":\"fine\"}]},"
                                   "{\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"401 bad key\"},"
                                   "{\"throw\":\"the stream function threw\"},"
                                   "{\"content\":[],\"waitForAbort\":true},"
                                   "{\"content\":[{\"type\":\"text\",\"text\":\"again\"}]}]");
    CHECK_ERR(agent_run_outcome((AgentRun){agent.id}, &outcome), AGENT_ERR_INVALID_HANDLE, "run");

    /* A completed run. */
    AgentRun completed = run_once(agent);
    CHECK_ERR(agent_run_outcome(completed, NULL), AGENT_ERR_NULL, "out_outcome");
    check_outcome(completed, AGENT_RUN_COMPLETED, "");
    CHECK_STR(outcome_of(completed).stop_reason, "stop");

    /* A failed model request: the outcome says why. */
    AgentRun failed = run_once(agent);
    check_outcome(failed, AGENT_RUN_MODEL_ERROR, "401 bad key");
    CHECK_STR(outcome_of(failed).stop_reason, "error");

    /* A stream function that failed is a model error too, with its message. */
    AgentRun threw = run_once(agent);
    check_outcome(threw, AGENT_RUN_MODEL_ERROR, "the stream function threw");

    /* While a run is active its outcome says RUNNING; an aborted run reports ABORTED. */
    atomic_int done[2] = {0, 0};
    AgentRun waiting;
    CHECK_OK(agent_prompt_text(agent, "wait", NTS, NULL, 0, record_done, done, &waiting));
    CHECK_EQ_INT(outcome_of(waiting).status, AGENT_RUN_RUNNING);
    CHECK_EQ_INT(outcome_of(waiting).message_count, 0);
    CHECK_OK(agent_run_abort(waiting));
    WAIT_RUN(waiting);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_ABORTED);
    outcome = outcome_of(waiting);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_ABORTED);
    CHECK_STR(outcome.stop_reason, "aborted");
    CHECK(outcome.error_message.len > 0);

    /* Inside `done`, the outcome of the run that is settling is already there, the same. */
    InsideDone seen = {12345, 12345, 0, 0, 0};
    AgentRun last;
    CHECK_OK(agent_prompt_text(agent, "again", NTS, NULL, 0, done_reading_outcome, &seen, &last));
    WAIT_RUN(last);
    CHECK_EQ_INT(seen.given, AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(seen.read, AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(seen.given_count, 2);
    CHECK_EQ_INT(seen.read_count, 2);
    CHECK(seen.same_run);

    /* Outcomes stay with their runs: reset and agent_free change none of them. */
    CHECK_OK(agent_reset(agent));
    check_outcome(failed, AGENT_RUN_MODEL_ERROR, "401 bad key");
    CHECK_OK(agent_free(agent));
    check_outcome(completed, AGENT_RUN_COMPLETED, "");
    check_outcome(threw, AGENT_RUN_MODEL_ERROR, "the stream function threw");
    char *messages = NULL;
    CHECK_OK(agent_run_messages(failed, &messages, NULL));
    CHECK_HAS(messages, "401 bad key");
    agent_string_free(messages);

    /* A freed run handle is reported and out-parameters stay untouched. */
    AgentRun runs[] = {completed, failed, threw, waiting, last};
    for (int i = 0; i < 5; i++) CHECK_OK(agent_run_free(runs[i]));
    outcome.status = 777;
    CHECK_ERR(agent_run_outcome(completed, &outcome), AGENT_ERR_INVALID_HANDLE, "freed");
    CHECK_EQ_INT(outcome.status, 777);
    CHECK_ERR(agent_run_free(completed), AGENT_ERR_INVALID_HANDLE, "freed");
    outcome_under_contention();
    puts("test_run_outcome: ok");
    return 0;
}

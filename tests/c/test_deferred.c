/* Deferred answers: a listener answering every event later from other threads (agent_event_defer
 * + agent_reply_continue), a hook doing the same, on_abort registered on a hook's call, and a
 * prompt given as one message object. */
#include "check.h"

#define MAX_THREADS 512
static pthread_t threads[MAX_THREADS];
static atomic_int nthreads, listener_events, hook_calls, abort_seen, abort_fin, registered;
static AgentHandle g_agent;

/* A deferred answer: a listener's reply or a hook's call. */
typedef struct {
    AgentReply reply;
    AgentHookCall hook;
} Answer;

static void *complete_later(void *arg) {
    Answer *answer = arg;
    sleep_ms(1);
    if (answer->reply.id) {
        CHECK_OK(agent_reply_continue(answer->reply));
        CHECK_ERR(agent_reply_continue(answer->reply), AGENT_ERR_ALREADY_COMPLETED, "already answered");
    } else {
        CHECK_OK(agent_hook_call_complete(answer->hook, NULL, 0));
        CHECK_ERR(agent_hook_call_complete(answer->hook, NULL, 0), AGENT_ERR_ALREADY_COMPLETED, "already answered");
    }
    free(answer);
    return NULL;
}

static void spawn_answer(Answer answer) {
    int n = atomic_fetch_add(&nthreads, 1);
    if (n >= MAX_THREADS) FAIL("too many threads");
    Answer *copy = malloc(sizeof *copy);
    *copy = answer;
    CHECK(pthread_create(&threads[n], NULL, complete_later, copy) == 0);
}

static void on_abort(void *ud) {
    (void)ud;
    atomic_fetch_add(&abort_seen, 1);
}

static AgentHookCall request_call; /* the prepareRequest hook's call, answered later */

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    atomic_fetch_add(&listener_events, 1);
    if (event->update == AGENT_UPDATE_TEXT_DELTA && atomic_fetch_add(&registered, 1) == 0) {
        CHECK_OK(agent_abort(g_agent));
        /* The prepareRequest call was answered: its handle is spent, its abort callback is not. */
        bool aborted = false;
        CHECK_ERR(agent_hook_call_is_aborted(request_call, &aborted), AGENT_ERR_ALREADY_COMPLETED, "already answered");
        CHECK_EQ_INT(atomic_load(&abort_seen), 0); /* never inside agent_abort */
    }
    Answer answer = {0};
    CHECK_OK(agent_event_defer(event, &answer.reply));
    spawn_answer(answer);
    return AGENT_LISTENER_LATER;
}

static void hook(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)ud, (void)input, (void)input_len;
    if (atomic_fetch_add(&hook_calls, 1) == 1) { /* prepareRequest */
        request_call = call;
        CHECK_OK(agent_hook_call_on_abort(call, on_abort, &abort_fin, count_finalizer));
    }
    Answer answer = {.hook = call};
    spawn_answer(answer);
}

int main(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"abcdef\",\"chunks\":3}],"
                                                       "\"waitForAbort\":true}]", NTS));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_TRANSFORM_CONTEXT, hook, NULL, NULL));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_PREPARE_REQUEST, hook, NULL, NULL));
    CHECK_OK(agent_new(options, &g_agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, listener, NULL, NULL, &id));
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(g_agent, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"one message\"}],\"timestamp\":5}", NTS,
                          record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_ABORTED);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_ABORTED);
    CHECK_OK(agent_run_free(run));
    for (int i = 0; i < atomic_load(&nthreads); i++) pthread_join(threads[i], NULL);
    CHECK_EQ_INT(atomic_load(&hook_calls), 2);
    CHECK(atomic_load(&listener_events) >= 8);
    WAIT_UNTIL(atomic_load(&abort_seen) == 1);
    char *state = state_of(g_agent);
    CHECK_HAS(state, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"one message\"}],\"timestamp\":5}");
    CHECK_HAS(state, "\"stopReason\":\"aborted\"");
    agent_string_free(state);
    CHECK_OK(agent_free(g_agent));
    WAIT_UNTIL(atomic_load(&abort_fin) == 1);
    printf("test_deferred: ok\n");
    return 0;
}

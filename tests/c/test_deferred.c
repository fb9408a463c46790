/* Deferred answers: a listener answering every event later from other threads, a hook doing the
 * same, on_abort registered on a listener's call, and a prompt given as one message object. */
#include "check.h"

#define MAX_THREADS 512
static pthread_t threads[MAX_THREADS];
static atomic_int nthreads, listener_events, hook_calls, abort_seen, abort_fin, registered;
static AgentHandle *g_agent;

static void *complete_later(void *call) {
    sleep_ms(1);
    CHECK_OK(agent_call_complete(call, NULL));
    CHECK_ERR(agent_call_complete(call, NULL), AGENT_ERR_ALREADY_COMPLETED, "already answered");
    return NULL;
}

static void spawn_answer(AgentCall *call) {
    int n = atomic_fetch_add(&nthreads, 1);
    if (n >= MAX_THREADS) FAIL("too many threads");
    CHECK(pthread_create(&threads[n], NULL, complete_later, call) == 0);
}

static void on_abort(void *ud) {
    (void)ud;
    atomic_fetch_add(&abort_seen, 1);
}

static void listener(void *ud, const AgentEvent *event, AgentCall *call) {
    (void)ud;
    const char *update = NULL;
    CHECK_OK(agent_event_update_type(event, &update));
    atomic_fetch_add(&listener_events, 1);
    if (update && strcmp(update, "text_delta") == 0 && atomic_fetch_add(&registered, 1) == 0) {
        CHECK_OK(agent_call_on_abort(call, on_abort, &abort_fin, count_finalizer));
        CHECK_OK(agent_abort(g_agent));
        bool aborted = false;
        CHECK_OK(agent_call_is_aborted(call, &aborted));
        CHECK(aborted);
        CHECK_EQ_INT(atomic_load(&abort_seen), 0); /* never inside agent_abort */
    }
    spawn_answer(call);
}

static void hook(void *ud, const char *input, AgentCall *call) {
    (void)ud, (void)input;
    atomic_fetch_add(&hook_calls, 1);
    spawn_answer(call);
}

int main(void) {
    AgentOptions *options;
    CHECK_OK(agent_options_new(NULL, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"abcdef\",\"chunks\":3}],"
                                                       "\"waitForAbort\":true}]"));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_TRANSFORM_CONTEXT, hook, NULL, NULL));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_PREPARE_REQUEST, hook, NULL, NULL));
    CHECK_OK(agent_new(options, &g_agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, listener, NULL, NULL, &id));
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt(g_agent, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"one message\"}],\"timestamp\":5}",
                          record_done, done));
    CHECK_OK(agent_wait_for_idle(g_agent, WAIT_MS));
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_OK);
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

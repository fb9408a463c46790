/* agent_runtime_configure(2): a multi-thread runtime. Runs several agents at once, with
 * callbacks on the worker threads, where blocking waits are refused. */
#include "check.h"

#define AGENTS 4
static pthread_t main_thread;
static atomic_int tool_calls, deadlock_checks;

static void tool_fn(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    AgentHandle agent = *(AgentHandle *)ud;
    (void)id, (void)args;
    CHECK(!pthread_equal(pthread_self(), main_thread));
    AgentWaitResult waited;
    CHECK_ERR(agent_wait_for_idle(agent, -1, &waited), AGENT_ERR_WOULD_DEADLOCK, "runtime thread");
    atomic_fetch_add(&deadlock_checks, 1);
    atomic_fetch_add(&tool_calls, 1);
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"details\":{}}", NTS));
}

int main(void) {
    main_thread = pthread_self();
    CHECK_OK(agent_runtime_configure(2));
    AgentHandle agents[AGENTS];
    AgentTool tools[AGENTS];
    for (int i = 0; i < AGENTS; i++) {
        AgentOptions options;
        CHECK_OK(agent_options_new(NULL, 0, &options));
        CHECK_OK(agent_options_set_scripted_model(
            options, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"a\",\"name\":\"t\",\"arguments\":{}},"
                     "{\"type\":\"toolCall\",\"id\":\"b\",\"name\":\"t\",\"arguments\":{}}]},"
                     " {\"content\":[{\"type\":\"text\",\"text\":\"finished\",\"chunks\":3}]}]", NTS));
        CHECK_OK(agent_new(options, &agents[i]));
        CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, tool_fn, &agents[i], NULL, &tools[i]));
        CHECK_OK(agent_set_tools(agents[i], &tools[i], 1));
        CHECK_OK(agent_tool_free(tools[i]));
        uint64_t id;
        CHECK_OK(agent_subscribe(agents[i], continue_listener, NULL, NULL, &id));
    }
    CHECK_ERR(agent_runtime_configure(1), AGENT_ERR_INVALID_STATE, "The runtime was already configured.");
    AgentRun runs[AGENTS];
    for (int i = 0; i < AGENTS; i++) CHECK_OK(agent_prompt(agents[i], "\"go\"", NTS, NULL, NULL, &runs[i]));
    for (int i = 0; i < AGENTS; i++) {
        WAIT_RUN(runs[i]);
        CHECK_EQ_INT(outcome_of(runs[i]).status, AGENT_RUN_COMPLETED);
        CHECK_OK(agent_run_free(runs[i]));
    }
    CHECK_EQ_INT(atomic_load(&tool_calls), 2 * AGENTS);
    CHECK_ERR(agent_runtime_configure(1), AGENT_ERR_INVALID_STATE, "The runtime is already running");
    for (int i = 0; i < AGENTS; i++) {
        char *state = state_of(agents[i]);
        CHECK_HAS(state, "\"text\":\"finished\"");
        agent_string_free(state);
        CHECK_OK(agent_free(agents[i]));
    }
    printf("test_multithread: ok\n");
    return 0;
}

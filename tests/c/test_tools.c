/* Tool outcomes from C: prepareArguments failing or not answering before it returns, execute
 * failing or answering nothing, beforeToolCall blocking or failing, an unknown tool, an
 * afterToolCall hook answering later from another thread, a failing hook failing the run, and
 * removing a prepareArguments shim (its finalizer runs once). */
#include "check.h"

#define PARAMS "\"parameters\":{\"type\":\"object\"}"

static _Atomic uint64_t silent_prepare_call; /* an AgentHookCall id */
static atomic_int prepare_fin, after_calls;
static pthread_t after_threads[16];
static atomic_int after_thread_count;

static void prep_fail(void *ud, const char *args, size_t args_len, AgentHookCall call) {
    (void)args_len;
    (void)ud, (void)args;
    CHECK_OK(agent_hook_call_fail(call, "bad args", NTS));
}

static void prep_silent(void *ud, const char *args, size_t args_len, AgentHookCall call) {
    (void)args_len;
    (void)ud, (void)args;
    atomic_store(&silent_prepare_call, call.id); /* never answered before returning */
}

static void exec_fail(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args;
    CHECK_OK(agent_tool_call_fail(call, "disk full", NTS));
}

static void exec_null(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args;
    CHECK_OK(agent_tool_call_complete(call, NULL, 0));
}

static void exec_never(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args, (void)call;
    FAIL("this tool must not run");
}

static void before(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud;
    if (strstr(input, "\"toolCall\":{\"type\":\"toolCall\",\"id\":\"c5\""))
        CHECK_OK(agent_hook_call_complete(call, "{\"block\":true,\"reason\":\"not allowed\"}", NTS));
    else if (strstr(input, "\"toolCall\":{\"type\":\"toolCall\",\"id\":\"c7\""))
        CHECK_OK(agent_hook_call_fail(call, "hook exploded", NTS));
    else
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));
}

static AgentHookCall after_call_ids[16];

static void *answer_after(void *arg) {
    sleep_ms(5);
    CHECK_OK(agent_hook_call_complete(*(AgentHookCall *)arg, NULL, 0));
    return NULL;
}

static void after(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud, (void)input;
    atomic_fetch_add(&after_calls, 1);
    int n = atomic_fetch_add(&after_thread_count, 1);
    after_call_ids[n] = call;
    CHECK(pthread_create(&after_threads[n], NULL, answer_after, &after_call_ids[n]) == 0);
}

static void prepare_request_fail(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud, (void)input;
    CHECK_OK(agent_hook_call_fail(call, "prepare failed", NTS));
}

static AgentTool tool(const char *name, AgentToolExecuteFn fn) {
    char definition[256];
    snprintf(definition, sizeof definition, "{\"name\":\"%s\",\"label\":\"%s\"," PARAMS "}", name, name);
    AgentTool t;
    CHECK_OK(agent_tool_new(definition, NTS, fn, NULL, NULL, &t));
    return t;
}

#define CALL(id, name) "{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":{}}"

int main(void) {
    AgentTool tools[] = {tool("prep_fail", exec_never), tool("prep_silent", exec_never), tool("failing", exec_fail),
                          tool("silent_null", exec_null), tool("blocked", exec_never), tool("hookfail", exec_never)};
    size_t count = sizeof tools / sizeof tools[0];
    CHECK_OK(agent_tool_set_prepare_arguments(tools[0], prep_fail, &prepare_fin, count_finalizer));
    CHECK_OK(agent_tool_set_prepare_arguments(tools[1], prep_silent, &prepare_fin, count_finalizer));
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(
        options, "[{\"content\":[" CALL("c1", "prep_fail") "," CALL("c2", "prep_silent") "," CALL("c3", "failing") ","
                 CALL("c4", "silent_null") "," CALL("c5", "blocked") "," CALL("c6", "missing") "," CALL("c7", "hookfail") "]},"
                 " {\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]", NTS));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_BEFORE_TOOL_CALL, before, NULL, NULL));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_AFTER_TOOL_CALL, after, NULL, NULL));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    CHECK_OK(agent_set_tools(agent, tools, count));
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(agent, "\"use tools\"", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    for (int i = 0; i < atomic_load(&after_thread_count); i++) pthread_join(after_threads[i], NULL);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_COMPLETED);
    char *state = state_of(agent);
    CHECK_EQ_INT(atomic_load(&after_calls), 2); /* only executed calls reach afterToolCall */

    CHECK_HAS(state, "\"text\":\"bad args\"");
    CHECK_HAS(state, "prepareArguments did not answer before returning");
    CHECK_HAS(state, "\"text\":\"disk full\"");
    CHECK_HAS(state, "Tool silent_null returned no result");
    CHECK_HAS(state, "\"text\":\"not allowed\"");
    CHECK_HAS(state, "\"text\":\"Tool missing not found\"");
    CHECK_HAS(state, "\"text\":\"hook exploded\"");
    CHECK_EQ_INT(count_of(state, "\"isError\":true"), 7);
    CHECK_HAS(state, "\"text\":\"done\"");
    agent_string_free(state);
    /* The unanswered prepareArguments call was retired when it returned. */
    CHECK(atomic_load(&silent_prepare_call) != 0);
    AgentHookCall silent = {atomic_load(&silent_prepare_call)};
    CHECK_ERR(agent_hook_call_complete(silent, NULL, 0), AGENT_ERR_ALREADY_COMPLETED, "already answered");

    /* Removing a shim runs its finalizer once. */
    CHECK_OK(agent_tool_set_prepare_arguments(tools[0], NULL, NULL, NULL));
    WAIT_UNTIL(atomic_load(&prepare_fin) == 1);

    /* A failing hook escapes the loop: the failure path records its message. */
    CHECK_OK(agent_set_scripted_model(agent, "[{\"content\":[{\"type\":\"text\",\"text\":\"unused\"}]}]", NTS));
    CHECK_OK(agent_set_hook(agent, AGENT_HOOK_PREPARE_REQUEST, prepare_request_fail, NULL, NULL));
    CHECK_OK(agent_prompt(agent, "\"again\"", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_MODEL_ERROR);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_MODEL_ERROR);
    CHECK_STR(outcome_of(run).error_message, "prepare failed");
    CHECK_OK(agent_run_free(run));
    state = state_of(agent);
    CHECK_HAS(state, "\"errorMessage\":\"prepare failed\"");
    CHECK_NOT_HAS(state, "unused");
    agent_string_free(state);

    CHECK_OK(agent_free(agent));
    for (size_t i = 0; i < count; i++) CHECK_OK(agent_tool_free(tools[i]));
    WAIT_UNTIL(atomic_load(&prepare_fin) == 2);
    printf("test_tools: ok\n");
    return 0;
}

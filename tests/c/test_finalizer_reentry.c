/* Issue 7, bug 1: no host code runs under a libagent lock. Every setter that replaces host data
 * (stream function, hook, tools, scripted model, listener, prepareArguments, process default,
 * options builder, consumed notification) runs the old value's finalizer; here each finalizer
 * calls back into the same object. Under the old code each of these deadlocked (the alarm
 * below turns a hang into a failure). */
#include "check.h"

#ifndef _WIN32 /* Windows (make windows-test) has no alarm(); the runner's timeout stands in */
#include <signal.h>
#include <unistd.h>
#endif

static AgentHandle agent;
static AgentOptions options;
static AgentTool tool;
static atomic_int reentered;

/* Finalizers that call back into the object whose setter dropped them. */
static void reenter_agent(void *ud) {
    (void)ud;
    char *state = NULL;
    CHECK_OK(agent_get_state(agent, &state, NULL));
    agent_string_free(state);
    CHECK_OK(agent_configure(agent, "{\"thinkingLevel\":\"low\"}", NTS));
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, continue_listener, NULL, NULL, &id));
    CHECK_OK(agent_unsubscribe(agent, id));
    atomic_fetch_add(&reentered, 1);
}

static void reenter_freed_agent(void *ud) {
    (void)ud;
    char *state = NULL;
    CHECK_ERR(agent_get_state(agent, &state, NULL), AGENT_ERR_INVALID_HANDLE, "freed agent");
    atomic_fetch_add(&reentered, 1);
}

static void reenter_options(void *ud) {
    (void)ud;
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_FINISH_TURN, NULL, NULL, NULL));
    atomic_fetch_add(&reentered, 1);
}

static void prepare_fn(void *ud, const char *args, size_t args_len, AgentHookCall call) {
    (void)args_len;
    (void)ud, (void)args;
    agent_error_free(agent_hook_call_complete(call, NULL, 0));
}

static void reenter_tool(void *ud) {
    (void)ud;
    CHECK_OK(agent_tool_set_prepare_arguments(tool, NULL, NULL, NULL));
    atomic_fetch_add(&reentered, 1);
}

static void reenter_default(void *ud) {
    (void)ud;
    /* agent_new reads the process-wide default under its lock. */
    AgentHandle other = {0};
    agent_error_free(agent_new((AgentOptions){0}, &other));
    if (other.id) CHECK_OK(agent_free(other));
    atomic_fetch_add(&reentered, 1);
}

static void never_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud, (void)request;
    agent_error_free(agent_stream_fail(stream, "unused", NTS));
}

static void hook_fn(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud, (void)input;
    agent_error_free(agent_hook_call_complete(call, NULL, 0));
}

static void tool_fn(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args;
    agent_error_free(agent_tool_call_complete(call, "{\"content\":[],\"details\":{}}", NTS));
}

/* A stream whose consumed notification is replaced from inside the old one's finalizer. */
static AgentStream current_stream;
static void consumed_noop(void *ud, AgentStream stream) { (void)ud, (void)stream; }
static void reenter_stream(void *ud) {
    (void)ud;
    size_t backlog;
    CHECK_OK(agent_stream_backlog(current_stream, &backlog));
    CHECK_OK(agent_stream_on_consumed(current_stream, consumed_noop, NULL, NULL));
    atomic_fetch_add(&reentered, 1);
}
static void replacing_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud, (void)request;
    current_stream = stream;
    CHECK_OK(agent_stream_on_consumed(stream, consumed_noop, NULL, reenter_stream));
    CHECK_OK(agent_stream_on_consumed(stream, consumed_noop, NULL, NULL));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", NTS));
}

#define EXPECT_REENTERED(n) CHECK_EQ_INT(atomic_load(&reentered), (n))

int main(void) {
#ifndef _WIN32
    alarm(60); /* a deadlock fails the test instead of hanging it */
#endif

    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_stream_fn(options, never_stream, NULL, reenter_options));
    CHECK_OK(agent_options_set_stream_fn(options, never_stream, NULL, NULL));
    EXPECT_REENTERED(1);
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_PREPARE_REQUEST, hook_fn, NULL, reenter_options));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_PREPARE_REQUEST, hook_fn, NULL, NULL));
    EXPECT_REENTERED(2);
    CHECK_OK(agent_options_set_stream_fn(options, never_stream, NULL, reenter_options));
    CHECK_OK(agent_options_set_scripted_model(options, "[]", NTS));
    EXPECT_REENTERED(3);
    CHECK_OK(agent_new(options, &agent));

    /* agent_set_stream_fn and agent_set_scripted_model. */
    CHECK_OK(agent_set_stream_fn(agent, never_stream, NULL, reenter_agent));
    CHECK_OK(agent_set_stream_fn(agent, never_stream, NULL, NULL));
    EXPECT_REENTERED(4);
    CHECK_OK(agent_set_stream_fn(agent, never_stream, NULL, reenter_agent));
    CHECK_OK(agent_set_scripted_model(agent, "[]", NTS));
    EXPECT_REENTERED(5);

    /* agent_set_hook, replacing and clearing. */
    CHECK_OK(agent_set_hook(agent, AGENT_HOOK_BEFORE_TOOL_CALL, hook_fn, NULL, reenter_agent));
    CHECK_OK(agent_set_hook(agent, AGENT_HOOK_BEFORE_TOOL_CALL, hook_fn, NULL, NULL));
    EXPECT_REENTERED(6);
    CHECK_OK(agent_set_hook(agent, AGENT_HOOK_BEFORE_TOOL_CALL, hook_fn, NULL, reenter_agent));
    CHECK_OK(agent_set_hook(agent, AGENT_HOOK_BEFORE_TOOL_CALL, NULL, NULL, NULL));
    EXPECT_REENTERED(7);

    /* agent_set_tools: a tool of the same name displaces the old one (the agent keeps the newest
     * tool of each name for hook results). */
    AgentTool first, second;
    CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, tool_fn, NULL, reenter_agent, &first));
    CHECK_OK(agent_set_tools(agent, &first, 1));
    CHECK_OK(agent_tool_free(first));
    CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, tool_fn, NULL, NULL, &second));
    CHECK_OK(agent_set_tools(agent, &second, 1));
    CHECK_OK(agent_tool_free(second));
    EXPECT_REENTERED(8);

    /* agent_unsubscribe. */
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, continue_listener, NULL, reenter_agent, &id));
    CHECK_OK(agent_unsubscribe(agent, id));
    EXPECT_REENTERED(9);

    /* agent_tool_set_prepare_arguments. */
    CHECK_OK(agent_tool_new("{\"name\":\"p\",\"parameters\":{\"type\":\"object\"}}", NTS, tool_fn, NULL, NULL, &tool));
    CHECK_OK(agent_tool_set_prepare_arguments(tool, prepare_fn, NULL, reenter_tool));
    CHECK_OK(agent_tool_set_prepare_arguments(tool, prepare_fn, NULL, NULL));
    EXPECT_REENTERED(10);
    CHECK_OK(agent_tool_free(tool));

    /* agent_set_default_stream_fn. */
    CHECK_OK(agent_set_default_stream_fn(never_stream, NULL, reenter_default));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL));
    EXPECT_REENTERED(11);

    /* agent_stream_on_consumed, replaced during a run. */
    CHECK_OK(agent_set_stream_fn(agent, replacing_stream, NULL, NULL));
    CHECK_OK(agent_prompt(agent, "\"hi\"", NTS, NULL, NULL, NULL));
    WAIT_IDLE(agent);
    EXPECT_REENTERED(12);

    /* agent_free: listeners dropped by the free may call back (the handle is freed by then). */
    CHECK_OK(agent_subscribe(agent, continue_listener, NULL, reenter_freed_agent, &id));
    CHECK_OK(agent_free(agent));
    EXPECT_REENTERED(13);

    printf("test_finalizer_reentry: ok\n");
    return 0;
}

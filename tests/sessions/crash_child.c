/* The child of the session crash test (tests/sessions/crash.py kills it with SIGKILL at random
 * moments): resumes the session file FILE with an agent (the scripted model, a host tool) and
 * prompts it in a loop until killed. Prompt k of child SEED commits four messages, each carrying a
 * key of its own: the user's text "u-SEED-k", the assistant's tool call id "c-SEED-k", the tool
 * result of that call, the assistant's text "a-SEED-k". After each message_end it writes
 * "COUNT ROLE KEY\n" to stdout (one write(2) per line, unbuffered): the library promises the
 * message's line is in the file before a listener sees message_end, so every line printed names a
 * message the file must hold. "ready\n" is printed once the agent is built on the session.
 *
 *   crash_child FILE SEED */
#include "check.h"

#include <unistd.h>

static int seed, prompt_index;
static atomic_int committed;

static void say(const char *line) {
    size_t len = strlen(line);
    if (write(STDOUT_FILENO, line, len) != (ssize_t)len) _exit(3);
}

static void echo_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)ud, (void)id, (void)id_len, (void)args_len;
    CHECK_HAS(args, "\"text\"");
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"echoed\"}],\"details\":{}}", NTS));
}

static AgentListenerAnswer on_event(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind != AGENT_EVENT_MESSAGE_END) return AGENT_LISTENER_CONTINUE;
    AgentStr json = {0};
    CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
    const char *role = strstr(json.ptr, "\"role\":\"user\"")         ? "user"
                       : strstr(json.ptr, "\"role\":\"toolResult\"") ? "toolResult"
                       : strstr(json.ptr, "\"role\":\"assistant\"")  ? "assistant"
                                                                     : NULL;
    if (!role) FAIL("a message of an unexpected role: %.300s", json.ptr);
    char key[64];
    if (strcmp(role, "user") == 0) snprintf(key, sizeof key, "u-%d-%d", seed, prompt_index);
    else if (strstr(json.ptr, "\"type\":\"toolCall\"") || strcmp(role, "toolResult") == 0)
        snprintf(key, sizeof key, "c-%d-%d", seed, prompt_index);
    else snprintf(key, sizeof key, "a-%d-%d", seed, prompt_index);
    CHECK_HAS(json.ptr, key); /* the message really carries the key the parent will look for */
    char line[128];
    snprintf(line, sizeof line, "%d %s %s\n", atomic_fetch_add(&committed, 1) + 1, role, key);
    say(line);
    return AGENT_LISTENER_CONTINUE;
}

int main(int argc, char **argv) {
    if (argc != 3) FAIL("usage: crash_child FILE SEED");
    seed = atoi(argv[2]);
    AgentSession session = {0};
    CHECK_OK(agent_session_open(argv[1], NTS, "{\"cwd\":\"/crash/cwd\"}", NTS, &session));
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[]", NTS));
    AgentTool tool = {0};
    CHECK_OK(agent_tool_new("{\"name\":\"echo\",\"label\":\"echo\",\"description\":\"echo\",\"parameters\":"
                            "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}",
                            NTS, echo_tool, NULL, NULL, &tool));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    CHECK_OK(agent_options_set_session(options, session));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    uint64_t subscription = 0;
    CHECK_OK(agent_subscribe(agent, on_event, NULL, NULL, &subscription));
    say("ready\n");
    for (prompt_index = 0; prompt_index < 100000; prompt_index++) {
        char script[512], text[64];
        snprintf(script, sizeof script,
                 "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"c-%d-%d\",\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}]},"
                 "{\"content\":[{\"type\":\"text\",\"text\":\"a-%d-%d\"}]}]",
                 seed, prompt_index, seed, prompt_index);
        CHECK_OK(agent_set_scripted_model(agent, script, NTS));
        snprintf(text, sizeof text, "u-%d-%d", seed, prompt_index);
        AgentRun run = {0};
        CHECK_OK(agent_prompt_text(agent, text, NTS, NULL, 0, NULL, NULL, &run));
        WAIT_RUN(run);
        AgentRunOutcome outcome = outcome_of(run);
        if (outcome.status != AGENT_RUN_COMPLETED)
            FAIL("prompt %d ended with %d: %.*s", prompt_index, outcome.status, (int)outcome.error_message.len,
                 outcome.error_message.ptr);
        CHECK_OK(agent_run_free(run));
    }
    FAIL("not killed after 100000 prompts");
}

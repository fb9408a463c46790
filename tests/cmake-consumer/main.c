/* Links libagent from its installed CMake package: checks the header's version macros against
 * the library's agent_version() at run time, then runs one scripted prompt. */
#include <stdio.h>
#include <string.h>

#include <libagent/agent.h>

int main(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR, AGENT_VERSION_PATCH);
    if (strcmp(agent_version(), AGENT_VERSION_STRING) != 0 || strcmp(agent_version(), expected) != 0) {
        fprintf(stderr, "version mismatch: library %s, header %s (%s)\n", agent_version(), AGENT_VERSION_STRING, expected);
        return 1;
    }
    AgentError *error = agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR);
    AgentOptions options = {0};
    AgentHandle agent = {0};
    AgentRun run = {0};
    AgentWaitResult waited = AGENT_WAIT_TIMEOUT;
    AgentRunOutcome outcome;
    char *state = NULL;
    if (!error) error = agent_options_new("{\"initialState\":{\"systemPrompt\":\"Be brief.\"}}", AGENT_NTS, &options);
    if (!error) error = agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"packaged ok\"}]}]", AGENT_NTS);
    if (!error) error = agent_new(options, &agent);
    if (!error) error = agent_prompt_text(agent, "hi", AGENT_NTS, NULL, 0, NULL, NULL, &run);
    if (!error) error = agent_run_wait(run, -1, &waited);
    if (!error) error = agent_run_outcome(run, &outcome);
    if (!error) error = agent_get_state(agent, &state, NULL);
    if (error) {
        fprintf(stderr, "libagent error: %s\n", agent_error_message(error, NULL));
        agent_error_free(error);
        return 1;
    }
    agent_error_free(agent_run_free(run));
    int ok = waited == AGENT_WAIT_DONE && outcome.status == AGENT_RUN_COMPLETED && strstr(state, "packaged ok") != NULL;
    agent_string_free(state);
    agent_error_free(agent_free(agent));
    printf("consumer: libagent %s, run %s\n", agent_version(), ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

/* Links libagent from its installed CMake package: checks the header's version macros against
 * the library's agent_version() at run time, then runs one scripted prompt. */
#include <stdio.h>
#include <string.h>

#include "agent.h"

int main(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR, AGENT_VERSION_PATCH);
    if (strcmp(agent_version(), AGENT_VERSION_STRING) != 0 || strcmp(agent_version(), expected) != 0) {
        fprintf(stderr, "version mismatch: library %s, header %s (%s)\n", agent_version(), AGENT_VERSION_STRING, expected);
        return 1;
    }
    AgentOptions *options = NULL;
    AgentHandle *agent = NULL;
    char *state = NULL;
    if (agent_options_new("{\"initialState\":{\"systemPrompt\":\"Be brief.\"}}", &options) != AGENT_OK ||
        agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"packaged ok\"}]}]") != AGENT_OK ||
        agent_new(options, &agent) != AGENT_OK || agent_prompt_text(agent, "hi", NULL, NULL, NULL) != AGENT_OK ||
        agent_wait_for_idle(agent, -1) != AGENT_OK || agent_get_state(agent, &state) != AGENT_OK) {
        fprintf(stderr, "libagent error: %s\n", agent_last_error());
        return 1;
    }
    int ok = strstr(state, "packaged ok") != NULL;
    agent_string_free(state);
    agent_free(agent);
    printf("consumer: libagent %s, run %s\n", agent_version(), ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

/* A C program outside the repository, built with `pkg-config --cflags --libs libagent` against
 * an installed prefix and run without LD_LIBRARY_PATH (libagent.pc carries the run path). */
#include <stdio.h>
#include <libagent/agent.h>

int main(void) {
    AgentError *error = agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR);
    if (error) {
        fprintf(stderr, "%s\n", agent_error_message(error, NULL));
        agent_error_free(error);
        return 1;
    }
    printf("libagent %s\n", agent_version());
    return 0;
}

/* Positive control for AddressSanitizer across the C boundary (tests/sanitizers/run.sh): a JSON
 * text without its terminating NUL is handed to libagent, which reads past the end of the heap
 * block. The overflow must be reported with `agent_options_new` in the stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libagent/agent.h>

int main(void) {
    char *text = malloc(2);
    memcpy(text, "{}", 2); /* no NUL on purpose */
    AgentOptions options = {0};
    AgentError *error = agent_options_new(text, AGENT_NTS, &options);
    if (!error) error = agent_options_free(options);
    agent_error_free(error);
    free(text);
    puts("no report");
    return 0;
}

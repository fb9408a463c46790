/* Positive control for AddressSanitizer across the C boundary (tests/sanitizers/run.sh): a JSON
 * text without its terminating NUL is handed to libagent, which reads past the end of the heap
 * block. The overflow must be reported with `agent_options_new` in the stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent.h"

int main(void) {
    char *text = malloc(2);
    memcpy(text, "{}", 2); /* no NUL on purpose */
    AgentOptions *options = NULL;
    if (agent_options_new(text, &options) == AGENT_OK) agent_options_free(options);
    free(text);
    puts("no report");
    return 0;
}

/* Positive control for UBSan across the C boundary (tests/sanitizers/run.sh): C code reads the
 * error text libagent returned (a heap block of its own) through a misaligned pointer, one byte in.
 * The load must be reported ("runtime error: load of misaligned address") and stop the program. */
#include <stdint.h>
#include <stdio.h>
#include <libagent/agent.h>

int main(void) {
    AgentOptions options = {0};
    AgentError *error = agent_options_new("{not json", AGENT_NTS, &options);
    const char *text = agent_error_message(error, NULL);
    if (!text || ((uintptr_t)text & 3) == 3) { /* +1 must be misaligned for a 4-byte load */
        puts("setup failed");
        return 2;
    }
    const uint32_t *word = (const uint32_t *)(text + 1); /* misaligned on purpose */
    printf("no report (%u)\n", (unsigned)*word);
    agent_error_free(error);
    return 0;
}

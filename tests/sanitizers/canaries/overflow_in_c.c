/* Positive control for AddressSanitizer (tests/sanitizers/run.sh): a deliberate heap overflow in
 * C. It must be reported ("AddressSanitizer: heap-buffer-overflow"). */
#include <stdio.h>
#include <stdlib.h>
#include <libagent/agent.h>

int main(void) {
    printf("libagent %s\n", agent_version());
    volatile char *bytes = malloc(16);
    bytes[16] = 'x'; /* one past the end on purpose */
    free((void *)bytes);
    puts("no report");
    return 0;
}

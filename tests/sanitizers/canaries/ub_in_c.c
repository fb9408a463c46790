/* Positive control for UBSan (tests/sanitizers/run.sh): a deliberate signed integer overflow in C,
 * built with the C tests' flags (-fsanitize=address,undefined -fno-sanitize-recover=undefined).
 * It must be reported ("runtime error: signed integer overflow") and stop the program. */
#include <limits.h>
#include <stdio.h>
#include <libagent/agent.h>

int main(int argc, char **argv) {
    (void)argv;
    printf("libagent %s\n", agent_version());
    int big = INT_MAX - 1;
    big += argc + 1; /* overflows on purpose: argc >= 1 */
    printf("no report (%d)\n", big);
    return 0;
}

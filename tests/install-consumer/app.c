/* A C program outside the repository, built with `pkg-config --cflags --libs libagent` against
 * an installed prefix and run without LD_LIBRARY_PATH (libagent.pc carries the run path). */
#include <stdio.h>
#include "agent.h"

int main(void) {
    printf("libagent %s\n", agent_version());
    return 0;
}

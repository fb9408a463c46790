/* A C snippet that configures options: the statements of a function given `opts`. */
#include "agent.h"

void snippet(AgentOptions *opts);
void snippet(AgentOptions *opts) {
/* SNIPPET */
}

/* A C snippet that configures options: the statements of a function given `opts`. */
#include <libagent/agent.h>

void snippet(AgentOptions opts);
void snippet(AgentOptions opts) {
/* SNIPPET */
}

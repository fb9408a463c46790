/* The control of tool_call_as_stream.c: the same call with a stream compiles. */
#include <libagent/agent.h>

void stream_fn(void *ud, const char *request, size_t len, AgentStream stream) {
    (void)ud, (void)request, (void)len;
    agent_error_free(agent_stream_push(stream, "{\"type\":\"start\"}", AGENT_NTS));
}

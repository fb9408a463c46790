/* MUST NOT COMPILE: a tool call is not a stream (tests/c/run.sh checks that cc refuses it). */
#include <libagent/agent.h>

void tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)ud, (void)id, (void)id_len, (void)args, (void)args_len;
    agent_error_free(agent_stream_push(call, "{\"type\":\"start\"}", AGENT_NTS));
}

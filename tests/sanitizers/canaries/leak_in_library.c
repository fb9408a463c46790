/* Positive control for LeakSanitizer (tests/sanitizers/run.sh, detect_leaks=1 as for the C tests):
 * an AgentError libagent allocated is never freed. The leak must be reported at exit with libagent's
 * `agent_options_new` in the allocation's stack. */
#include <stdio.h>
#include <libagent/agent.h>

/* Not inlined, and the pointer cleared: no copy of it stays reachable on the stack. */
__attribute__((noinline)) static int leak_an_error(void) {
    AgentOptions options = {0};
    AgentError *volatile error = agent_options_new("{not json", AGENT_NTS, &options);
    int code = agent_error_code(error);
    error = NULL; /* dropped without agent_error_free, on purpose */
    return code;
}

int main(void) {
    printf("error code %d; the error is leaked\n", leak_an_error());
    return 0;
}

/* Runs whose model is a built-in provider (src/providers) reading a streamed text of N, 2N and
 * 4N deltas over HTTP from tests/cost/sse_server.py on loopback: the response's bytes through the
 * HTTP client, the SSE parser, the provider's event mapping and the agent's stream, to a listener
 * through the C ABI. tests/cost/run.py runs it under callgrind (the server is another process, not
 * counted) and compares the instructions per delta of the larger runs with the smaller ones.
 *
 * usage: provider_work PORT N SCENARIO...   each run's instructions are dumped apart under
 *                                            callgrind (CALLGRIND_DUMP_STATS_AT "SCENARIO DELTAS")
 *   openai     api openai-completions, provider openai
 *   anthropic  api anthropic-messages, provider anthropic */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include <libagent/agent.h>

static void check(AgentError *error, const char *what) {
    if (error) {
        fprintf(stderr, "provider_work: %s failed (%d): %s\n", what, agent_error_code(error), agent_error_message(error, NULL));
        exit(1);
    }
}

static size_t seen;
static AgentListenerAnswer listener(void *ud, const AgentEvent *e) {
    (void)ud;
    if (e->update == AGENT_UPDATE_TEXT_DELTA) seen += e->delta.len;
    return AGENT_LISTENER_CONTINUE;
}

/* One agent, one prompt answered with `n` deltas by the server at `port`, freed again. */
static void run(int port, const char *scenario, int n) {
    int openai = !strcmp(scenario, "openai");
    char json[512];
    snprintf(json, sizeof json,
             "{\"initialState\":{\"model\":{\"id\":\"cost-%d\",\"name\":\"cost\",\"api\":\"%s\",\"provider\":\"%s\","
             "\"baseUrl\":\"http://127.0.0.1:%d/v1\",\"reasoning\":false,\"input\":[\"text\"],"
             "\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0},"
             "\"contextWindow\":100000,\"maxTokens\":1000}}}",
             n, openai ? "openai-completions" : "anthropic-messages", openai ? "openai" : "anthropic", port);
    seen = 0;
    AgentOptions options;
    check(agent_options_new(json, AGENT_NTS, &options), "options");
    check(agent_options_use_providers(options), "use providers");
    AgentHandle agent;
    check(agent_new(options, &agent), "agent");
    uint64_t id;
    check(agent_subscribe(agent, listener, NULL, NULL, &id), "subscribe");
    check(agent_prompt(agent, "\"go\"", AGENT_NTS, NULL, NULL, NULL), "prompt");
    AgentWaitResult waited;
    check(agent_wait_for_idle(agent, -1, &waited), "wait");
    check(agent_free(agent), "free");
    if (seen != (size_t)n * 8) { /* an error answer streams no text */
        fprintf(stderr, "provider_work: %s: the listener saw %zu bytes of text, not %d\n", scenario, seen, n * 8);
        exit(1);
    }
}

int main(int argc, char **argv) {
    int port = argc >= 4 ? atoi(argv[1]) : 0, n = argc >= 4 ? atoi(argv[2]) : 0;
    if (port <= 0 || n <= 0) {
        fprintf(stderr, "usage: provider_work PORT N SCENARIO...\n");
        return 2;
    }
    setenv("OPENAI_API_KEY", "cost-key", 1);
    setenv("ANTHROPIC_API_KEY", "cost-key", 1);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "openai") && strcmp(argv[i], "anthropic")) {
            fprintf(stderr, "provider_work: no scenario '%s'\n", argv[i]);
            return 2;
        }
        run(port, argv[i], n / 4); /* warm-up: one-time initialisation is not counted */
        for (int k = 1; k <= 4; k *= 2) {
            char label[64];
            snprintf(label, sizeof label, "%s %d", argv[i], k * n);
            CALLGRIND_ZERO_STATS;
            run(port, argv[i], k * n);
            CALLGRIND_DUMP_STATS_AT(label);
        }
    }
    printf("provider_work %d: ok\n", n);
    return 0;
}

/* A session file of N, 2N and 4N entries opened through the C ABI and its context built (every
 * line read, every message on the path spliced into the context's JSON). tests/cost/run.py writes
 * the files (ROOT/session-<entries>.jsonl, tests/sessions/generate.py: realistic turns, ~1 KB per
 * entry, so even N is read by two threads) and runs this under callgrind.
 *
 * usage: session_work ROOT N   each size's instructions dumped apart (CALLGRIND_DUMP_STATS_AT
 *                              "session SIZE") */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include <libagent/agent.h>

static void check(AgentError *error, const char *what) {
    if (error) {
        fprintf(stderr, "session_work: %s failed (%d): %s\n", what, agent_error_code(error), agent_error_message(error, NULL));
        exit(1);
    }
}

/* Opens ROOT/session-SIZE.jsonl, builds the context at its leaf, closes it. */
static void run(const char *root, int size) {
    char path[512];
    snprintf(path, sizeof path, "%s/session-%d.jsonl", root, size);
    AgentSession session;
    check(agent_session_open(path, AGENT_NTS, NULL, 0, &session), "agent_session_open");
    char *context = NULL;
    size_t len = 0;
    check(agent_session_get(session, AGENT_SESSION_CONTEXT, &context, &len), "agent_session_get(CONTEXT)");
    /* Most entries are messages on the path: the context holds at least one per two entries. */
    if (strncmp(context, "{\"messages\":[", 13) != 0 || len < (size_t)size * 100) {
        fprintf(stderr, "session_work: the context of %s is %zu bytes: %.60s\n", path, len, context);
        exit(1);
    }
    agent_string_free(context);
    check(agent_session_free(session), "agent_session_free");
}

int main(int argc, char **argv) {
    int n = argc == 3 ? atoi(argv[2]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: session_work ROOT N\n");
        return 2;
    }
    run(argv[1], n); /* warm-up: one-time initialisation (and the page cache) not counted */
    for (int k = 1; k <= 4; k *= 2) {
        char label[64];
        snprintf(label, sizeof label, "session %d", k * n);
        CALLGRIND_ZERO_STATS;
        run(argv[1], k * n);
        CALLGRIND_DUMP_STATS_AT(label);
    }
    puts("session_work: ok");
    return 0;
}

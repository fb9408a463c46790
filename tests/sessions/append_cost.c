/* The work of one append to a session file, at two file sizes (tests/sessions/append_cost.py):
 * opens FILE (agent_session_open), then appends APPENDS user messages one by one with
 * agent_session_append. Under callgrind (--instr-atstart=no: the open runs uninstrumented), each
 * append's instructions are dumped apart ("append K"); natively, the bytes the process read and
 * wrote during the appends (rchar/wchar of /proc/self/io) are printed:
 * "io APPENDS READ_BYTES WRITTEN_BYTES".
 *
 *   append_cost FILE APPENDS [canary]
 *
 * `canary`: every append is followed, inside the measured span, by agent_session_get(ENTRIES), work
 * that grows with the file: the judge must call that superlinear. */
#include "check.h"

#include <valgrind/callgrind.h>

/* rchar and wchar of /proc/self/io: bytes passed to read-like and write-like system calls. */
static void io_bytes(long long *read_bytes, long long *written_bytes) {
    FILE *f = fopen("/proc/self/io", "r");
    CHECK(f != NULL);
    char key[64];
    long long value;
    while (fscanf(f, "%63s %lld", key, &value) == 2) {
        if (strcmp(key, "rchar:") == 0) *read_bytes = value;
        if (strcmp(key, "wchar:") == 0) *written_bytes = value;
    }
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc < 3) FAIL("usage: append_cost FILE APPENDS [canary]");
    int appends = atoi(argv[2]);
    bool canary = argc > 3 && strcmp(argv[3], "canary") == 0;
    AgentSession session = {0};
    CHECK_OK(agent_session_open(argv[1], NTS, NULL, 0, &session));
    /* Reading /proc/self/io counts its own bytes: measured once with nothing between. */
    long long r0, w0, r1, w1, r2, w2;
    io_bytes(&r0, &w0);
    io_bytes(&r1, &w1);
    CALLGRIND_START_INSTRUMENTATION;
    for (int k = 0; k < appends; k++) {
        char entry[256];
        snprintf(entry, sizeof entry,
                 "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                 "\"append %06d\"}],\"timestamp\":1764633600000}}",
                 k);
        CALLGRIND_ZERO_STATS;
        CHECK_OK(agent_session_append(session, entry, NTS, NULL, NULL));
        if (canary) {
            char *entries = NULL;
            CHECK_OK(agent_session_get(session, AGENT_SESSION_ENTRIES, &entries, NULL));
            agent_string_free(entries);
        }
        char label[32];
        snprintf(label, sizeof label, "append %d", k);
        CALLGRIND_DUMP_STATS_AT(label);
    }
    CALLGRIND_STOP_INSTRUMENTATION; /* freeing the entries is not an append */
    io_bytes(&r2, &w2);
    CHECK_OK(agent_session_free(session));
    printf("io %d %lld %lld\n", appends, (r2 - r1) - (r1 - r0), (w2 - w1) - (w1 - w0));
    printf("ok\n");
    return 0;
}

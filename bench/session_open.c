/* libagent's side of the session bench (bench/sessions.sh): agent_session_open of FILE and
 * agent_session_get(AGENT_SESSION_CONTEXT) at its leaf, timed, and the process's memory.
 *
 *   session_open FILE
 *
 * Prints one JSON line: {"side":"libagent","entries","messages","open_ms","context_ms","total_ms",
 * "rss_after_open_bytes" (RSS growth from before the open to after it), "rss_open_bytes" (to after
 * the context, the session still held and the context's JSON freed), "peak_rss_bytes" (getrusage)}. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libagent/agent.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Resident set size now, from /proc/self/statm (pages). */
static long rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
        fprintf(stderr, "session_open: cannot read /proc/self/statm\n");
        exit(1);
    }
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static void check(AgentError *error, const char *what) {
    if (error) {
        fprintf(stderr, "session_open: %s failed: %s\n", what, agent_error_message(error, NULL));
        exit(1);
    }
}

/* Occurrences of `needle` in `text`. */
static long count_of(const char *text, const char *needle) {
    long n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: session_open FILE\n");
        return 2;
    }
    check(agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR), "agent_version_check");
    long rss_before = rss_bytes();
    double t0 = now_ms();
    AgentSession session = {0};
    check(agent_session_open(argv[1], AGENT_NTS, NULL, 0, &session), "agent_session_open");
    double t1 = now_ms();
    long rss_after_open = rss_bytes() - rss_before;
    char *context = NULL;
    size_t context_len = 0;
    check(agent_session_get(session, AGENT_SESSION_CONTEXT, &context, &context_len), "agent_session_get(CONTEXT)");
    double t2 = now_ms();
    /* Counted after the clock stopped: top-level messages of the context carry a "role" each,
     * and so do none of their members in this file. */
    long messages = count_of(context, "{\"role\":");
    agent_string_free(context);
    long rss_open = rss_bytes() - rss_before;
    struct rusage usage; /* before the entries' JSON below, which is not part of an open */
    getrusage(RUSAGE_SELF, &usage);
    char *entries = NULL;
    check(agent_session_get(session, AGENT_SESSION_ENTRIES, &entries, NULL), "agent_session_get(ENTRIES)");
    long entry_count = count_of(entries, "\"parentId\":");
    agent_string_free(entries);
    check(agent_session_free(session), "agent_session_free");
    printf("{\"side\":\"libagent\",\"entries\":%ld,\"messages\":%ld,\"open_ms\":%.1f,\"context_ms\":%.1f,"
           "\"total_ms\":%.1f,\"context_bytes\":%zu,\"rss_after_open_bytes\":%ld,\"rss_open_bytes\":%ld,"
           "\"peak_rss_bytes\":%ld}\n",
           entry_count, messages, t1 - t0, t2 - t1, t2 - t0, context_len, rss_after_open, rss_open,
           usage.ru_maxrss * 1024L);
    return 0;
}

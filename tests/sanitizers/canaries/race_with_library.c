/* Positive control for ThreadSanitizer across the C boundary (tests/sanitizers/run.sh): one
 * thread keeps rewriting a JSON text while libagent parses it on another thread. The race must be
 * reported with libagent's `agent_options_new` on one side; if it is not, the library's own
 * instrumentation (or the runtime it binds to) is not working. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers under -std=c11 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <libagent/agent.h>

static char options_text[4096];
static pthread_barrier_t start;
/* Relaxed: it orders nothing (no happens-before for TSan), it only keeps the writer writing
 * until the parser is done, so the two always overlap, however the threads are scheduled. */
static atomic_int parsed;

static void *rewrite(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < 200 || (!atomic_load_explicit(&parsed, memory_order_relaxed) && i < 100000000); i++)
        options_text[20] = (i & 1) ? ' ' : '\t'; /* racy on purpose */
    return NULL;
}

static void *parse(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 20; i++) {
        AgentOptions options = {0};
        AgentError *error = agent_options_new(options_text, AGENT_NTS, &options);
        if (!error) error = agent_options_free(options);
        agent_error_free(error);
    }
    atomic_store_explicit(&parsed, 1, memory_order_relaxed);
    return NULL;
}

int main(void) {
    pthread_t a, b;
    memset(options_text, ' ', sizeof options_text - 1);
    memcpy(options_text, "{\"sessionId\":\"s\"}", 17);
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&a, NULL, rewrite, NULL);
    pthread_create(&b, NULL, parse, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    puts("no report");
    return 0;
}

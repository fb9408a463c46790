/* Positive control for ThreadSanitizer (tests/sanitizers/run.sh): a deliberate data race between
 * two C threads. The run must be reported ("ThreadSanitizer: data race"); if it is not, the
 * sanitizer setup stopped intercepting and every TSan result of the suite would mean nothing. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers under -std=c11 */
#include <pthread.h>
#include <stdio.h>
#include <libagent/agent.h>

static int shared_counter;
static pthread_barrier_t start;

static void *bump(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 1000; i++) shared_counter++; /* unsynchronized on purpose */
    return NULL;
}

int main(void) {
    pthread_t a, b;
    printf("libagent %s\n", agent_version()); /* the library is loaded, as in every test */
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&a, NULL, bump, NULL);
    pthread_create(&b, NULL, bump, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("counter %d\n", shared_counter);
    return 0;
}

/* Tiny assertion helpers for the C tests of libagent: each failure prints where and why, with
 * agent_last_error(), and exits non-zero. */
#ifndef LIBAGENT_TEST_CHECK_H
#define LIBAGENT_TEST_CHECK_H

#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                              \
        fprintf(stderr, "\n  (agent_last_error: \"%s\")\n", agent_last_error());   \
        exit(1);                                                                   \
    } while (0)

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) FAIL("%s", #cond);                                            \
    } while (0)

/* `expr` must return AGENT_OK. */
#define CHECK_OK(expr)                                                             \
    do {                                                                           \
        AgentStatus s_ = (expr);                                                   \
        if (s_ != AGENT_OK) FAIL("%s returned %d, expected AGENT_OK", #expr, s_);  \
    } while (0)

/* `expr` must return `code`, and agent_last_error() must contain `text`. */
#define CHECK_ERR(expr, code, text)                                                \
    do {                                                                           \
        AgentStatus s_ = (expr);                                                   \
        if (s_ != (code)) FAIL("%s returned %d, expected %s (%d)", #expr, s_, #code, (code)); \
        if (!*(text)) FAIL("CHECK_ERR(%s): an empty expected text matches anything", #expr); \
        if (!strstr(agent_last_error(), (text)))                                   \
            FAIL("%s: error text does not contain \"%s\"", #expr, (text));         \
    } while (0)

/* `haystack` (a string) must contain `needle`. */
#define CHECK_HAS(haystack, needle)                                                \
    do {                                                                           \
        const char *h_ = (haystack);                                               \
        if (!h_ || !strstr(h_, (needle)))                                          \
            FAIL("\"%.400s\" does not contain \"%s\"", h_ ? h_ : "(null)", (needle)); \
    } while (0)

#define CHECK_NOT_HAS(haystack, needle)                                            \
    do {                                                                           \
        const char *h_ = (haystack);                                               \
        if (!h_) FAIL("CHECK_NOT_HAS(%s): the text is NULL", #haystack);           \
        if (strstr(h_, (needle)))                                                  \
            FAIL("\"%.400s\" contains \"%s\"", h_, (needle));                      \
    } while (0)

#define CHECK_EQ_INT(actual, expected)                                             \
    do {                                                                           \
        long long a_ = (long long)(actual), e_ = (long long)(expected);            \
        if (a_ != e_) FAIL("%s == %lld, expected %lld", #actual, a_, e_);          \
    } while (0)

/* Generous timeouts: they only keep a broken test from hanging. */
#define WAIT_MS 30000

static inline void sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&t, NULL);
}

static inline void sleep_ms(long ms) { sleep_us(ms * 1000); }

/* Polls `cond` until true or WAIT_MS passed. */
#define WAIT_UNTIL(cond)                                                           \
    do {                                                                           \
        long waited_ = 0;                                                          \
        while (!(cond)) {                                                          \
            if (waited_ >= WAIT_MS) FAIL("timed out waiting for %s", #cond);       \
            sleep_ms(2);                                                           \
            waited_ += 2;                                                          \
        }                                                                          \
    } while (0)

/* A finalizer that counts its calls in the atomic_int user_data points to. */
static inline void count_finalizer(void *user_data) { atomic_fetch_add((atomic_int *)user_data, 1); }

/* Counts occurrences of `needle` in `haystack`. */
static inline int count_of(const char *haystack, const char *needle) {
    int n = 0;
    for (const char *p = haystack; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The agent's state JSON (caller frees with agent_string_free). */
static inline char *state_of(AgentHandle *agent) {
    char *state = NULL;
    if (agent_get_state(agent, &state) != AGENT_OK) FAIL("agent_get_state failed");
    return state;
}

/* A listener that only continues. */
static inline void continue_listener(void *ud, const AgentEvent *event, AgentCall *call) {
    (void)ud;
    (void)event;
    agent_call_complete(call, NULL);
}

/* A done callback storing its status in the atomic_int user_data points to (+1000 so that
 * 0 means "not called"); it also counts calls in the next atomic_int. */
static inline void record_done(void *ud, AgentStatus status, const char *error) {
    (void)error;
    atomic_int *slots = ud;
    atomic_store(&slots[0], 1000 + status);
    atomic_fetch_add(&slots[1], 1);
}

#define MODEL_JSON "{\"id\":\"m1\",\"api\":\"faux\",\"provider\":\"test\"}"

#endif

/* Tiny assertion helpers for the C tests of libagent (ABI 1.x): each failure prints where and
 * why, with the returned error's code and text, and exits non-zero. */
#ifndef LIBAGENT_TEST_CHECK_H
#define LIBAGENT_TEST_CHECK_H

#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libagent/agent.h>

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                              \
        fprintf(stderr, "\n");                                                     \
        exit(1);                                                                   \
    } while (0)

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) FAIL("%s", #cond);                                            \
    } while (0)

/* `expr` (an AgentError*) must be NULL: success. */
#define CHECK_OK(expr)                                                             \
    do {                                                                           \
        AgentError *e_ = (expr);                                                   \
        if (e_) FAIL("%s failed with %d: \"%s\"", #expr, agent_error_code(e_),     \
                     agent_error_message(e_, NULL));                               \
    } while (0)

/* `expr` must fail with `code`, its message containing `text`; the error is freed. */
#define CHECK_ERR(expr, code, text)                                                \
    do {                                                                           \
        AgentError *e_ = (expr);                                                   \
        if (!e_) FAIL("%s succeeded, expected %s (%d)", #expr, #code, (code));     \
        const char *m_ = agent_error_message(e_, NULL);                            \
        if (agent_error_code(e_) != (code))                                        \
            FAIL("%s failed with %d (\"%s\"), expected %s (%d)", #expr,            \
                 agent_error_code(e_), m_, #code, (code));                         \
        if (!*(text)) FAIL("CHECK_ERR(%s): an empty expected text matches anything", #expr); \
        if (!strstr(m_, (text)))                                                   \
            FAIL("%s: error text \"%s\" does not contain \"%s\"", #expr, m_, (text)); \
        agent_error_free(e_);                                                      \
    } while (0)

/* The code of `expr`'s error (AGENT_OK on success); the error is freed. */
static inline AgentErrorCode code_of(AgentError *error) {
    AgentErrorCode code = agent_error_code(error);
    agent_error_free(error);
    return code;
}

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

/* An AgentStr must equal the NUL-terminated `expected`. */
#define CHECK_STR(agent_str, expected)                                             \
    do {                                                                           \
        AgentStr s_ = (agent_str);                                                 \
        const char *x_ = (expected);                                               \
        if (s_.len != strlen(x_) || memcmp(s_.ptr, x_, s_.len) != 0)               \
            FAIL("%s == \"%.*s\", expected \"%s\"", #agent_str, (int)s_.len,       \
                 s_.ptr ? s_.ptr : "", x_);                                        \
    } while (0)

/* Generous timeouts: they only keep a broken test from hanging. Under valgrind (tests/c/run.sh
 * sets LIBAGENT_TEST_SLOW), which runs one thread at a time and many times slower, a run that takes
 * a second natively can take a minute on a loaded machine: four minutes there (the runner's
 * `timeout` still ends a hang). */
#define WAIT_MS (getenv("LIBAGENT_TEST_SLOW") ? 240000L : 30000L)

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

/* Waits (generously) until the agent is idle; a timeout fails the test. */
#define WAIT_IDLE(agent)                                                           \
    do {                                                                           \
        AgentWaitResult w_ = -1;                                                   \
        CHECK_OK(agent_wait_for_idle((agent), WAIT_MS, &w_));                      \
        if (w_ != AGENT_WAIT_DONE) FAIL("agent_wait_for_idle(%s) timed out", #agent); \
    } while (0)

/* Waits (generously) until the run settled; a timeout fails the test. */
#define WAIT_RUN(run)                                                              \
    do {                                                                           \
        AgentWaitResult w_ = -1;                                                   \
        CHECK_OK(agent_run_wait((run), WAIT_MS, &w_));                             \
        if (w_ != AGENT_WAIT_DONE) FAIL("agent_run_wait(%s) timed out", #run);     \
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
static inline char *state_of(AgentHandle agent) {
    char *state = NULL;
    CHECK_OK(agent_get_state(agent, &state, NULL));
    return state;
}

/* A listener that only continues. */
static inline AgentListenerAnswer continue_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    (void)event;
    return AGENT_LISTENER_CONTINUE;
}

/* A done callback storing the run's status in the atomic_int user_data points to (+1000 so
 * that 0 means "not called"); it also counts calls in the next atomic_int. */
static inline void record_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)run;
    atomic_int *slots = ud;
    atomic_store(&slots[0], 1000 + outcome->status);
    atomic_fetch_add(&slots[1], 1);
}

/* The outcome of a settled run. */
static inline AgentRunOutcome outcome_of(AgentRun run) {
    AgentRunOutcome outcome;
    CHECK_OK(agent_run_outcome(run, &outcome));
    return outcome;
}

/* Options running tools one after another, holding `tools` (handed over: each handle is freed). */
static inline AgentOptions sequential_options_with(AgentTool *tools, size_t count) {
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"toolExecution\":\"sequential\"}", AGENT_NTS, &options));
    for (size_t i = 0; i < count; i++) {
        CHECK_OK(agent_options_add_tool(options, tools[i]));
        CHECK_OK(agent_tool_free(tools[i]));
    }
    return options;
}

/* NUL-terminated text arguments: most tests pass literals. */
#define NTS AGENT_NTS

#define MODEL_JSON "{\"id\":\"m1\",\"api\":\"faux\",\"provider\":\"test\"}"

#endif

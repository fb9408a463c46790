/* make soak: many agents driven through SOAK_RUNS runs (default 100000) from SOAK_THREADS driver
 * threads, with random aborts, steering, follow-ups, tool failures, tools answering late from
 * another thread, tools that never answer (the run is aborted and `abortGraceMs` gives up on
 * them; the host answers afterwards), host and scripted stream functions, subscriptions coming
 * and going, event queues, and agents freed mid-run and rebuilt.
 *
 * Checks (exit 1 on any failure):
 *  - every accepted run's `done` is called exactly once; by default (SOAK_STRICT_DONE=1) it has
 *    been called when agent_wait_for_idle returns AGENT_OK or agent_free returns;
 *  - every run settles (agent_wait_for_idle with a long hang guard);
 *  - no live handle leaks: once everything is freed, every registered finalizer ran exactly once;
 *  - RSS after warm-up (SOAK_WARMUP_PERCENT of the runs, default 50) grows < 2% by the end of the runs (read at both points
 *    with the same agents alive, after glibc's malloc_trim);
 *  - the thread count at the end equals the count at the start plus the runtime's workers.
 * Usage: soak <workers>   (agent_runtime_configure(workers); 1 = the single runtime thread)
 * Env: SOAK_RUNS, SOAK_THREADS (4), SOAK_WARMUP_PERCENT (50), SOAK_CHECK_RSS (1; 0 for short runs), SOAK_SEED, SOAK_STRICT_DONE (1), SOAK_REENTRANT_FINALIZERS (1:
 * finalizers call back into their agent). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libagent/agent.h>

#define AGENTS_PER_THREAD 3
#define MAX_THREADS 16
#define HANG_GUARD_MS 60000

static atomic_long registered, finalized, accepted, dones, double_dones, late_dones_checked;
static atomic_long runs_done, aborts, frees_mid_run, steers, hangs, late_answers, tool_calls, failures_seen;
static int strict_done = 1, reentrant = 1;
static uint32_t workers = 1;

#define FAIL(...)                                                                   \
    do {                                                                            \
        fprintf(stderr, "soak: FAILED at %s:%d: ", __FILE__, __LINE__);             \
        fprintf(stderr, __VA_ARGS__);                                               \
        fprintf(stderr, "\n");                                                      \
        exit(1);                                                                    \
    } while (0)
#define CHECK_OK(expr)                                                              \
    do {                                                                            \
        AgentError *e_ = (expr);                                                    \
        if (e_) FAIL("%s failed with %d: %s", #expr, agent_error_code(e_), agent_error_message(e_, NULL)); \
    } while (0)

/* The code of an error (AGENT_OK for none); the error is freed. */
static AgentErrorCode code_of(AgentError *error) {
    AgentErrorCode code = agent_error_code(error);
    agent_error_free(error);
    return code;
}

static unsigned next_rand(unsigned *state) {
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) & 0xffffff;
}

/* ---- finalizers ---------------------------------------------------------------------------- */

/* user_data of every registration: the agent it belongs to (for reentrant finalizers). */
typedef struct {
    AgentHandle agent;
    int kind;
    atomic_int finalized;
} Reg;

static void finalize(void *ud) {
    Reg *reg = ud;
    if (atomic_fetch_add(&reg->finalized, 1) != 0) FAIL("a finalizer ran twice");
    if (reentrant && reg->agent.id) {
        /* A finalizer may call back into its agent, alive or freed. */
        bool has = false;
        AgentErrorCode s = code_of(agent_has_queued_messages(reg->agent, &has));
        if (s != AGENT_OK && s != AGENT_ERR_INVALID_HANDLE) FAIL("reentrant finalizer got %d", s);
    }
    atomic_fetch_add(&finalized, 1);
    free(reg);
}

static Reg *new_reg(AgentHandle agent, int kind) {
    Reg *reg = calloc(1, sizeof *reg);
    reg->agent = agent;
    reg->kind = kind;
    atomic_fetch_add(&registered, 1);
    return reg;
}

/* ---- late answers: a thread answering tool calls some time after they were made ------------- */

#define LATE_CAP 4096
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    AgentToolCall calls[LATE_CAP];
    int head, tail, stop;
} late = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0}}, 0, 0, 0};

static const char *RESULT = "{\"content\":[{\"type\":\"text\",\"text\":\"r\"}],\"details\":{}}";

static void *late_answerer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&late.mu);
        while (late.head == late.tail && !late.stop) pthread_cond_wait(&late.cv, &late.mu);
        if (late.head == late.tail && late.stop) {
            pthread_mutex_unlock(&late.mu);
            return NULL;
        }
        AgentToolCall call = late.calls[late.head % LATE_CAP];
        late.head++;
        pthread_mutex_unlock(&late.mu);
        sched_yield();
        AgentErrorCode s = code_of(agent_tool_call_complete(call, RESULT, AGENT_NTS));
        if (s != AGENT_OK && s != AGENT_ERR_ALREADY_COMPLETED) FAIL("late answer got %d", s);
        atomic_fetch_add(&late_answers, 1);
    }
}

static void late_push(AgentToolCall call) {
    pthread_mutex_lock(&late.mu);
    if (late.tail - late.head >= LATE_CAP) FAIL("late queue full");
    late.calls[late.tail % LATE_CAP] = call;
    late.tail++;
    pthread_cond_signal(&late.cv);
    pthread_mutex_unlock(&late.mu);
}

/* ---- per-driver state ------------------------------------------------------------------------- */

typedef struct {
    int index;
    unsigned seed;
    long warm_runs, runs;
    AgentHandle agents[AGENTS_PER_THREAD];
    AgentTool tools[4];
    atomic_int needs_abort;                 /* a tool that never answers was called */
    pthread_mutex_t hang_mu;
    AgentToolCall hanging[64];                 /* calls of tools that never answer (answered later) */
    int hanging_count;
} Driver;

/* Tool kinds (user_data = Reg with kind = 100 + tool kind, plus the driver in a side table). */
static Driver *drivers[MAX_THREADS];
static pthread_barrier_t phase_barrier;

static void tool_exec(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)id, (void)args;
    Reg *reg = ud;
    int kind = reg->kind % 100;
    Driver *d = drivers[reg->kind / 100 - 1];
    atomic_fetch_add(&tool_calls, 1);
    switch (kind) {
    case 0:
        CHECK_OK(agent_tool_call_update(call, RESULT, AGENT_NTS));
        CHECK_OK(agent_tool_call_complete(call, RESULT, AGENT_NTS));
        break;
    case 1:
        CHECK_OK(agent_tool_call_fail(call, "tool failed", AGENT_NTS));
        break;
    case 2:
        late_push(call);
        break;
    default: /* never answers while the run lasts */
        pthread_mutex_lock(&d->hang_mu);
        if (d->hanging_count < 64) {
            d->hanging[d->hanging_count++] = call;
            atomic_store(&d->needs_abort, 1);
            atomic_fetch_add(&hangs, 1);
        } else {
            late_push(call);
        }
        pthread_mutex_unlock(&d->hang_mu);
        break;
    }
}

/* Pushes an event; false once the stream is closed (the agent was freed meanwhile). */
static bool push(AgentStream stream, const char *event) {
    AgentErrorCode s = code_of(agent_stream_push(stream, event, AGENT_NTS));
    if (s == AGENT_ERR_STREAM_CLOSED) return false;
    if (s != AGENT_OK) FAIL("agent_stream_push returned %d", s);
    return true;
}

static const char *TOOL_NAMES[4] = {"t_ok", "t_fail", "t_late", "t_hang"};

/* A host stream function: a tool call on the first request of a turn pair, text after a tool
 * result; honours the abort signal. user_data is a Reg whose kind carries the driver. */
static void host_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    Reg *reg = ud;
    Driver *d = drivers[reg->kind / 100 - 1];
    bool aborted = false;
    AgentErrorCode st = code_of(agent_stream_is_aborted(stream, &aborted));
    if (st != AGENT_OK && st != AGENT_ERR_STREAM_CLOSED && st != AGENT_ERR_ALREADY_COMPLETED) FAIL("is_aborted returned %d", st);
    if (aborted) {
        if (push(stream, "{\"type\":\"start\"}"))
            push(stream, "{\"type\":\"error\",\"reason\":\"aborted\",\"errorMessage\":\"Request was aborted\"}");
        return;
    }
    const char *last_role = NULL;
    for (const char *p = request; (p = strstr(p, "\"role\":\"")) != NULL; p += 8) last_role = p + 8;
    bool after_tool = last_role && strncmp(last_role, "toolResult", 10) == 0;
    unsigned r = next_rand(&d->seed);
    if (after_tool || r % 3 == 0) {
        static const char *TEXT[] = {"{\"type\":\"start\"}", "{\"type\":\"text_start\",\"contentIndex\":0}",
                                     "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"fine\"}",
                                     "{\"type\":\"text_end\",\"contentIndex\":0}", "{\"type\":\"done\",\"reason\":\"stop\"}"};
        for (int i = 0; i < 5 && push(stream, TEXT[i]); i++) {
        }
        return;
    }
    if (r % 7 == 1) {
        AgentErrorCode s = code_of(agent_stream_fail(stream, "provider unavailable", AGENT_NTS));
        if (s != AGENT_OK && s != AGENT_ERR_STREAM_CLOSED && s != AGENT_ERR_ALREADY_COMPLETED) FAIL("fail returned %d", s);
        atomic_fetch_add(&failures_seen, 1);
        return;
    }
    char event[256];
    int tools = 1 + (int)(r / 7 % 2);
    if (!push(stream, "{\"type\":\"start\"}")) return;
    for (int i = 0; i < tools; i++) {
        unsigned pick = next_rand(&d->seed) % 16;
        const char *name = TOOL_NAMES[pick < 9 ? 0 : pick < 12 ? 1 : pick < 15 ? 2 : 3];
        snprintf(event, sizeof event, "{\"type\":\"toolcall_start\",\"contentIndex\":%d,\"id\":\"c%d\",\"toolName\":\"%s\"}", i, i, name);
        if (!push(stream, event)) return;
        snprintf(event, sizeof event, "{\"type\":\"toolcall_delta\",\"contentIndex\":%d,\"delta\":\"{\\\"n\\\":%d}\"}", i, i);
        if (!push(stream, event)) return;
        snprintf(event, sizeof event, "{\"type\":\"toolcall_end\",\"contentIndex\":%d}", i);
        if (!push(stream, event)) return;
    }
    push(stream, "{\"type\":\"done\",\"reason\":\"toolUse\"}");
}

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind < AGENT_EVENT_AGENT_START || event->kind > AGENT_EVENT_AUTO_RETRY_END) FAIL("event kind %d", event->kind);
    return AGENT_LISTENER_CONTINUE;
}

/* One run's done record. */
typedef struct {
    atomic_int calls;
} Done;

static void on_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)run;
    Done *done = ud;
    if (outcome->status == AGENT_RUN_RUNNING) FAIL("done status %d", outcome->status);
    if (atomic_fetch_add(&done->calls, 1) != 0) atomic_fetch_add(&double_dones, 1);
    atomic_fetch_add(&dones, 1);
}

static const char *SCRIPT =
    "[{\"content\":[{\"type\":\"thinking\",\"thinking\":\"plan\"},{\"type\":\"toolCall\",\"id\":\"s1\",\"name\":\"t_ok\","
    "\"arguments\":{\"n\":1},\"chunks\":3}]},{\"content\":[{\"type\":\"text\",\"text\":\"scripted answer\",\"chunks\":4}]}]";

static AgentHandle build_agent(Driver *d) {
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":{\"id\":\"m1\",\"api\":\"faux\",\"provider\":\"test\"}}}", AGENT_NTS, &options));
    for (int t = 0; t < 4; t++) CHECK_OK(agent_options_add_tool(options, d->tools[t]));
    CHECK_OK(agent_options_set_scripted_model(options, SCRIPT, AGENT_NTS));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    CHECK_OK(agent_configure(agent, "{\"abortGraceMs\":2}", AGENT_NTS));
    /* A host stream function (replacing the script) on two agents out of three. */
    if (next_rand(&d->seed) % 3 != 0) {
        Reg *reg = new_reg(agent, (d->index + 1) * 100);
        CHECK_OK(agent_set_stream_fn(agent, host_stream, reg, finalize));
    }
    Reg *reg = new_reg(agent, 0);
    uint64_t id;
    CHECK_OK(agent_subscribe(agent, listener, reg, finalize, &id));
    return agent;
}

static void answer_hanging(Driver *d) {
    pthread_mutex_lock(&d->hang_mu);
    for (int i = 0; i < d->hanging_count; i++) {
        AgentErrorCode s = code_of(agent_tool_call_complete(d->hanging[i], RESULT, AGENT_NTS));
        if (s != AGENT_OK && s != AGENT_ERR_ALREADY_COMPLETED) FAIL("answer after grace got %d", s);
    }
    d->hanging_count = 0;
    atomic_store(&d->needs_abort, 0);
    pthread_mutex_unlock(&d->hang_mu);
}

static void check_done(Done *done, const char *when) {
    if (strict_done) {
        if (atomic_load(&done->calls) != 1) FAIL("done called %d times when %s returned", atomic_load(&done->calls), when);
    } else {
        long waited = 0;
        while (atomic_load(&done->calls) == 0) {
            if (waited++ > HANG_GUARD_MS * 10) FAIL("done never called");
            struct timespec t = {0, 100000};
            nanosleep(&t, NULL);
        }
        atomic_fetch_add(&late_dones_checked, 1);
    }
}

static void *drive(void *arg) {
    Driver *d = arg;
    for (int t = 0; t < 4; t++) {
        char def[200];
        snprintf(def, sizeof def, "{\"name\":\"%s\",\"parameters\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\"}}}}", TOOL_NAMES[t]);
        Reg *reg = new_reg((AgentHandle){0}, (d->index + 1) * 100 + t);
        CHECK_OK(agent_tool_new(def, AGENT_NTS, tool_exec, reg, finalize, &d->tools[t]));
    }
    for (int a = 0; a < AGENTS_PER_THREAD; a++) d->agents[a] = build_agent(d);

    for (long run = 0; run < d->runs; run++) {
        if (run == d->warm_runs) {
            /* The main thread measures RSS between these two barriers. */
            pthread_barrier_wait(&phase_barrier);
            pthread_barrier_wait(&phase_barrier);
        }
        int a = (int)(run % AGENTS_PER_THREAD);
        AgentHandle agent = d->agents[a];
        unsigned r = next_rand(&d->seed) % 100;
        Done *done = calloc(1, sizeof *done);
        if (r < 5) CHECK_OK(agent_configure(agent, (r & 1) ? "{\"toolExecution\":\"sequential\"}" : "{\"toolExecution\":\"parallel\"}", AGENT_NTS));
        AgentQueue queue = {0};
        if (r == 50) CHECK_OK(agent_queue_open(agent, "{\"capacity\":4}", AGENT_NTS, &queue));
        uint64_t extra_id = 0;
        if (r >= 90) {
            Reg *reg = new_reg(agent, 0);
            CHECK_OK(agent_subscribe(agent, listener, reg, finalize, &extra_id));
        }
        if (r >= 38 && r < 41) {
            /* Replace the stream function of the idle agent: the old one's finalizer runs (and,
             * with SOAK_REENTRANT_FINALIZERS, calls back into this agent). */
            Reg *reg = new_reg(agent, (d->index + 1) * 100);
            CHECK_OK(agent_set_stream_fn(agent, host_stream, reg, finalize));
        }
        CHECK_OK(agent_prompt(agent, "\"go\"", AGENT_NTS, on_done, done, NULL));
        atomic_fetch_add(&accepted, 1);
        if (r >= 10 && r < 20) {
            CHECK_OK(agent_steer(agent, "{\"role\":\"user\",\"content\":\"also this\",\"timestamp\":1}", AGENT_NTS));
            atomic_fetch_add(&steers, 1);
        } else if (r >= 20 && r < 25) {
            CHECK_OK(agent_follow_up(agent, "{\"role\":\"user\",\"content\":\"and then\",\"timestamp\":1}", AGENT_NTS));
        }
        if (r >= 25 && r < 35) {
            for (unsigned y = next_rand(&d->seed) % 50; y > 0; y--) sched_yield();
            CHECK_OK(agent_abort(agent));
            atomic_fetch_add(&aborts, 1);
        }
        if (r >= 35 && r < 38) {
            /* Free mid-run, then rebuild the agent. */
            for (unsigned y = next_rand(&d->seed) % 20; y > 0; y--) sched_yield();
            if (queue.id) {
                CHECK_OK(agent_queue_close(queue));
                queue.id = 0;
            }
            CHECK_OK(agent_free(agent));
            check_done(done, "agent_free");
            answer_hanging(d);
            atomic_fetch_add(&frees_mid_run, 1);
            d->agents[a] = build_agent(d);
        } else {
            long waited = 0;
            for (;;) {
                if (queue.id) {
                    AgentEvent event;
                    AgentNext next = AGENT_NEXT_EVENT;
                    while (next == AGENT_NEXT_EVENT) CHECK_OK(agent_queue_next(queue, 0, &event, &next));
                }
                AgentWaitResult waited_for;
                CHECK_OK(agent_wait_for_idle(agent, 5, &waited_for));
                if (waited_for == AGENT_WAIT_DONE) break;
                if (atomic_load(&d->needs_abort)) CHECK_OK(agent_abort(agent));
                if ((waited += 5) > HANG_GUARD_MS) FAIL("run %ld did not settle", run);
            }
            check_done(done, "agent_wait_for_idle");
            answer_hanging(d);
            if (extra_id) CHECK_OK(agent_unsubscribe(agent, extra_id));
            if (queue.id) CHECK_OK(agent_queue_close(queue));
            CHECK_OK(agent_reset(agent));
        }
        /* Records of runs whose done may still come are kept (non-strict mode): never freed. */
        if (atomic_load(&done->calls) == 1) free(done);
        atomic_fetch_add(&runs_done, 1);
    }
    pthread_barrier_wait(&phase_barrier);
    pthread_barrier_wait(&phase_barrier);
    for (int a = 0; a < AGENTS_PER_THREAD; a++) CHECK_OK(agent_free(d->agents[a]));
    for (int t = 0; t < 4; t++) CHECK_OK(agent_tool_free(d->tools[t]));
    answer_hanging(d);
    return NULL;
}

static long rss_pages(void) {
    malloc_trim(0);
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) FAIL("cannot read /proc/self/statm");
    fclose(f);
    return resident;
}

/* Bytes the program holds in malloc'ed blocks (glibc's mallinfo2): tells a leak (grows) from
 * allocator fragmentation (RSS grows, this does not). */
static long heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long)(info.uordblks + info.hblkhd);
}

static int thread_count(void) {
    char line[256];
    int threads = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &threads) == 1) break;
    if (f) fclose(f);
    return threads;
}

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : fallback;
}

int main(int argc, char **argv) {
    workers = argc > 1 ? (uint32_t)atoi(argv[1]) : 1;
    long total = env_long("SOAK_RUNS", 100000);
    int threads = (int)env_long("SOAK_THREADS", 4);
    unsigned seed = (unsigned)env_long("SOAK_SEED", 12345);
    strict_done = (int)env_long("SOAK_STRICT_DONE", 1);
    reentrant = (int)env_long("SOAK_REENTRANT_FINALIZERS", 1);
    long warmup_percent = env_long("SOAK_WARMUP_PERCENT", 50);
    int check_rss = (int)env_long("SOAK_CHECK_RSS", 1);
    if (warmup_percent < 1 || warmup_percent > 99) FAIL("SOAK_WARMUP_PERCENT must be 1..99");
    if (threads < 1 || threads > MAX_THREADS) FAIL("SOAK_THREADS must be 1..%d", MAX_THREADS);
    /* One glibc malloc arena: RSS then measures what the program holds rather than how
     * glibc's per-thread arenas fragment (with 4 runtime workers that alone moved RSS by
     * +1.7..+5.8 % between runs while the heap in use stayed flat). */
    mallopt(M_ARENA_MAX, 1);
    int threads_at_start = thread_count();
    CHECK_OK(agent_runtime_configure(workers));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    pthread_t answerer;
    pthread_create(&answerer, NULL, late_answerer, NULL);
    /* Each driver runs its share: the warm-up, then the rest; RSS is read at both points, with
     * the same agents and tools alive (the drivers wait on a barrier meanwhile). */
    pthread_barrier_init(&phase_barrier, NULL, (unsigned)threads + 1);
    pthread_t tids[MAX_THREADS];
    static Driver ds[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        ds[i].index = i;
        ds[i].seed = seed + (unsigned)i * 7919u;
        ds[i].runs = total / threads + (i < total % threads);
        ds[i].warm_runs = ds[i].runs * warmup_percent / 100;
        pthread_mutex_init(&ds[i].hang_mu, NULL);
        drivers[i] = &ds[i];
        pthread_create(&tids[i], NULL, drive, &ds[i]);
    }
    pthread_barrier_wait(&phase_barrier);
    long rss_warm = rss_pages(), heap_warm = heap_in_use();
    pthread_barrier_wait(&phase_barrier);
    pthread_barrier_wait(&phase_barrier);
    long rss_end = rss_pages(), heap_end = heap_in_use();
    pthread_barrier_wait(&phase_barrier);
    for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);
    /* Everything is freed: every finalizer runs (hang guard only). */
    long waited = 0;
    while (atomic_load(&finalized) != atomic_load(&registered)) {
        if (waited++ > HANG_GUARD_MS) FAIL("%ld of %ld finalizers ran", atomic_load(&finalized), atomic_load(&registered));
        usleep(1000);
    }
    pthread_mutex_lock(&late.mu);
    late.stop = 1;
    pthread_cond_signal(&late.cv);
    pthread_mutex_unlock(&late.mu);
    pthread_join(answerer, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    long page_kb = sysconf(_SC_PAGESIZE) / 1024;
    double growth = rss_warm ? 100.0 * (double)(rss_end - rss_warm) / (double)rss_warm : 0;
    int expected_threads = threads_at_start + (int)(workers > 1 ? workers : 1);
    /* A joined thread can still be counted for a moment (pthread_join returns when the thread
     * has finished, before the kernel has released it): a leaked thread stays, that one goes. */
    int threads_at_end = thread_count();
    for (int waited_ms = 0; threads_at_end > expected_threads && waited_ms < 2000; waited_ms++) {
        usleep(1000);
        threads_at_end = thread_count();
    }
    printf("soak workers=%u: %ld runs (%d driver threads) in %.1f s; done %ld/%ld accepted, double %ld; aborts %ld, "
           "frees mid-run %ld, steers %ld, tool calls %ld, never-answered tools %ld, late answers %ld, failed requests %ld; "
           "finalizers %ld/%ld; RSS %ld KiB after warm-up -> %ld KiB at the end (%+.2f%%); heap in use %ld -> %ld KiB; threads %d at start, %d at end "
           "(expected %d)\n",
           workers, atomic_load(&runs_done), threads, seconds, atomic_load(&dones), atomic_load(&accepted),
           atomic_load(&double_dones), atomic_load(&aborts), atomic_load(&frees_mid_run), atomic_load(&steers),
           atomic_load(&tool_calls), atomic_load(&hangs), atomic_load(&late_answers), atomic_load(&failures_seen),
           atomic_load(&finalized), atomic_load(&registered), rss_warm * page_kb, rss_end * page_kb, growth, heap_warm / 1024, heap_end / 1024,
           threads_at_start, threads_at_end, expected_threads);
    int failed = 0;
    if (atomic_load(&dones) != atomic_load(&accepted) || atomic_load(&double_dones) != 0) {
        fprintf(stderr, "soak: FAILED: done calls %ld for %ld accepted runs (%ld doubles)\n", atomic_load(&dones),
                atomic_load(&accepted), atomic_load(&double_dones));
        failed = 1;
    }
    if (atomic_load(&finalized) != atomic_load(&registered)) {
        fprintf(stderr, "soak: FAILED: %ld of %ld finalizers ran\n", atomic_load(&finalized), atomic_load(&registered));
        failed = 1;
    }
    if (check_rss && growth >= 2.0) {
        fprintf(stderr, "soak: FAILED: RSS grew %.2f%% after warm-up\n", growth);
        failed = 1;
    }
    if (threads_at_end != expected_threads) {
        fprintf(stderr, "soak: FAILED: %d threads at the end, expected %d\n", threads_at_end, expected_threads);
        failed = 1;
    }
    printf("soak: %d passed, %d failed\n", failed ? 0 : 1, failed);
    return failed;
}

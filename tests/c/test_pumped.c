/* Host-pumped mode (issue 25): every host callback of a dispatcher agent, finalizers and `done`
 * included, runs only inside agent_dispatch on the pumping thread, whichever thread frees,
 * unsubscribes or replaces what the callback belongs to; agent_dispatcher_free runs what is
 * still queued; and a dispatch overruns its budget by at most one callback. */
#include "check.h"

#include <stdbool.h>

static pthread_t pump_thread;
static atomic_bool in_dispatch;   /* set by the pumping thread around agent_dispatch */
static atomic_bool in_dispatcher_free; /* ... and around agent_dispatcher_free */
static atomic_int misplaced;      /* callbacks that ran elsewhere */

/* Pumps once, marking the call so callbacks can tell they run inside it. */
static size_t pump(AgentDispatcher dispatcher, int64_t budget_ms) {
    size_t ran = 0;
    atomic_store(&in_dispatch, true);
    CHECK_OK(agent_dispatch(dispatcher, budget_ms, &ran));
    atomic_store(&in_dispatch, false);
    return ran;
}

static void free_dispatcher(AgentDispatcher dispatcher) {
    atomic_store(&in_dispatcher_free, true);
    CHECK_OK(agent_dispatcher_free(dispatcher));
    atomic_store(&in_dispatcher_free, false);
}

/* Every callback calls this first: the pumping thread, inside a dispatch (or the free). */
static void confined(void) {
    bool inside = atomic_load(&in_dispatch) || atomic_load(&in_dispatcher_free);
    if (!pthread_equal(pthread_self(), pump_thread) || !inside) atomic_fetch_add(&misplaced, 1);
}

static atomic_int finalized, done_calls, done_status;

static void confined_finalizer(void *ud) {
    (void)ud;
    confined();
    atomic_fetch_add(&finalized, 1);
}

static void confined_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    confined();
    atomic_store(&done_status, outcome->status);
    atomic_fetch_add(&done_calls, 1);
}

/* A listener, hook, prepareArguments function and tool named PREFIX_listener, _hook, _prepare and
 * _tool, each running BODY() and answering at once. */
#define ANSWERING_CALLBACKS(PREFIX, BODY)                                                          \
    static AgentListenerAnswer PREFIX##_listener(void *ud, const AgentEvent *event) {              \
        (void)ud, (void)event;                                                                     \
        BODY();                                                                                    \
        return AGENT_LISTENER_CONTINUE;                                                            \
    }                                                                                              \
    static void PREFIX##_hook(void *ud, const char *input, size_t len, AgentHookCall call) {       \
        (void)ud, (void)input, (void)len;                                                          \
        BODY();                                                                                    \
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));                                         \
    }                                                                                              \
    static void PREFIX##_prepare(void *ud, const char *args, size_t len, AgentHookCall call) {     \
        (void)ud, (void)args, (void)len;                                                           \
        BODY();                                                                                    \
        CHECK_OK(agent_hook_call_complete(call, NULL, 0));                                         \
    }                                                                                              \
    static void PREFIX##_tool(void *ud, const char *id, size_t id_len, const char *args,           \
                              size_t args_len, AgentToolCall call) {                               \
        (void)ud, (void)id, (void)id_len, (void)args, (void)args_len;                              \
        BODY();                                                                                    \
        CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", NTS)); \
    }

ANSWERING_CALLBACKS(confined, confined)

/* A stream function that never answers: the run stays active until the agent is freed. */
static atomic_int streams_started;

static void stalled_stream(void *ud, const char *request, size_t len, AgentStream stream) {
    (void)ud, (void)request, (void)len, (void)stream;
    confined();
    atomic_fetch_add(&streams_started, 1);
}

/* ------------------------------------------------ finalizers and done from a foreign thread */

typedef struct {
    AgentHandle agent;
    uint64_t subscription;
    AgentTool tool;
} Worker;

static void *replace_and_free(void *arg) {
    Worker *w = arg;
    /* Each of these drops the last reference to something the agent held. */
    CHECK_OK(agent_unsubscribe(w->agent, w->subscription));
    CHECK_OK(agent_set_hook(w->agent, AGENT_HOOK_TRANSFORM_CONTEXT, confined_hook, NULL,
                            confined_finalizer)); /* 8 */
    CHECK_OK(agent_set_hook(w->agent, AGENT_HOOK_TRANSFORM_CONTEXT, NULL, NULL, NULL));
    CHECK_OK(agent_set_stream_fn(w->agent, stalled_stream, NULL, confined_finalizer)); /* 9 */
    /* During the run: cancels it (done: FREED) and drops the rest. */
    CHECK_OK(agent_free(w->agent));
    CHECK_OK(agent_tool_free(w->tool));
    return NULL;
}

static void test_finalizers_and_done_from_a_worker(void) {
    pump_thread = pthread_self();
    atomic_store(&misplaced, 0);
    atomic_store(&finalized, 0);
    atomic_store(&done_calls, 0);
    atomic_store(&streams_started, 0);
    AgentDispatcher dispatcher;
    CHECK_OK(agent_dispatcher_new(&dispatcher));
    AgentOptions options;
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    /* Hooks, stream function and tool given before the dispatcher: homed all the same. */
    CHECK_OK(agent_options_set_stream_fn(options, stalled_stream, NULL, confined_finalizer));          /* 1 */
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_BEFORE_TOOL_CALL, confined_hook, NULL,
                                    confined_finalizer));                                               /* 2 */
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, confined_tool, NULL,
                            confined_finalizer, &tool));                                                /* 3 */
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    /* Set after the agent was built: a prepareArguments shim follows the tool's home. */
    CHECK_OK(agent_tool_set_prepare_arguments(tool, confined_prepare, NULL, confined_finalizer));      /* 4 */
    uint64_t sub1, sub2, sub3;
    CHECK_OK(agent_subscribe(agent, confined_listener, NULL, confined_finalizer, &sub1));               /* 5 */
    CHECK_OK(agent_subscribe(agent, confined_listener, NULL, confined_finalizer, &sub2));               /* 6 */
    CHECK_OK(agent_subscribe(agent, confined_listener, NULL, confined_finalizer, &sub3));               /* 7 */
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, confined_done, NULL, &run));
    for (int i = 0; i < 2000 && atomic_load(&streams_started) == 0; i++) {
        AgentWaitResult ready;
        CHECK_OK(agent_dispatcher_wait(dispatcher, 10, &ready));
        pump(dispatcher, -1);
    }
    CHECK_EQ_INT(atomic_load(&streams_started), 1);
    /* On the pumping thread but outside a dispatch: queued too. */
    CHECK_OK(agent_unsubscribe(agent, sub2));
    CHECK_EQ_INT(atomic_load(&finalized), 0);

    /* A worker unsubscribes, replaces and frees while the run waits for the model: finalizers 5
     * (unsubscribed), 8 (a transform hook set and cleared), 1 (replaced; the run holds it until
     * the free), 9 (its replacement), 2 and 7 at the free, the tool's 3 and 4 when the worker
     * drops the tool's last reference; 6 was dropped above. */
    Worker w = {agent, sub1, tool};
    pthread_t worker;
    CHECK(pthread_create(&worker, NULL, replace_and_free, &w) == 0);
    pthread_join(worker, NULL);
    CHECK_EQ_INT(atomic_load(&misplaced), 0);
    CHECK_EQ_INT(atomic_load(&done_calls), 0);   /* queued for the next dispatch */
    CHECK_EQ_INT(atomic_load(&finalized), 0);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_FREED);

    pump(dispatcher, -1);
    CHECK_EQ_INT(atomic_load(&done_calls), 1);
    CHECK_EQ_INT(atomic_load(&done_status), AGENT_RUN_FREED);
    CHECK_EQ_INT(atomic_load(&finalized), 9);
    CHECK_EQ_INT(atomic_load(&misplaced), 0);
    CHECK_OK(agent_run_free(run));
    free_dispatcher(dispatcher);
    CHECK_EQ_INT(atomic_load(&finalized), 9);
    CHECK_EQ_INT(atomic_load(&misplaced), 0);
}

/* ------------------------------------------------ agent_dispatcher_free runs what is queued */

static void test_dispatcher_free_runs_the_queue(void) {
    pump_thread = pthread_self();
    atomic_store(&misplaced, 0);
    atomic_store(&finalized, 0);
    atomic_store(&done_calls, 0);
    atomic_store(&streams_started, 0);
    AgentDispatcher dispatcher;
    CHECK_OK(agent_dispatcher_new(&dispatcher));
    AgentOptions options;
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
    CHECK_OK(agent_options_set_stream_fn(options, stalled_stream, NULL, confined_finalizer));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    uint64_t sub;
    CHECK_OK(agent_subscribe(agent, confined_listener, NULL, confined_finalizer, &sub));
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, confined_done, NULL, NULL));
    for (int i = 0; i < 2000 && atomic_load(&streams_started) == 0; i++) {
        AgentWaitResult ready;
        CHECK_OK(agent_dispatcher_wait(dispatcher, 10, &ready));
        pump(dispatcher, -1);
    }
    CHECK_EQ_INT(atomic_load(&streams_started), 1);
    CHECK_OK(agent_free(agent));
    CHECK_EQ_INT(atomic_load(&done_calls), 0);
    CHECK_EQ_INT(atomic_load(&finalized), 0);
    /* No dispatch comes: freeing the dispatcher runs them, here. */
    free_dispatcher(dispatcher);
    CHECK_EQ_INT(atomic_load(&done_calls), 1);
    CHECK_EQ_INT(atomic_load(&done_status), AGENT_RUN_FREED);
    CHECK_EQ_INT(atomic_load(&finalized), 2);
    CHECK_EQ_INT(atomic_load(&misplaced), 0);
}

/* ------------------------------------------------ under contention */

#define RACERS 3
#define ROUNDS 12

static atomic_int subscribed; /* subscriptions made (each has a finalizer) */
static atomic_int hooks_set;  /* hooks set minus hook finalizers run */
static atomic_bool agent_gone;

static void hook_finalizer(void *ud) {
    (void)ud;
    confined();
    atomic_fetch_add(&hooks_set, -1);
}

typedef struct {
    AgentHandle agent;
    int index;
} Racer;

static void *race(void *arg) {
    Racer *r = arg;
    for (int i = 0; i < 40 && !atomic_load(&agent_gone); i++) {
        uint64_t sub;
        AgentError *e = agent_subscribe(r->agent, confined_listener, NULL, confined_finalizer, &sub);
        if (e) { /* the agent was freed meanwhile */
            CHECK_EQ_INT(agent_error_code(e), AGENT_ERR_INVALID_HANDLE);
            agent_error_free(e);
            break;
        }
        atomic_fetch_add(&subscribed, 1);
        if (i % 2 == 0) agent_error_free(agent_unsubscribe(r->agent, sub));
        e = agent_set_hook(r->agent, AGENT_HOOK_TRANSFORM_CONTEXT, confined_hook, NULL, hook_finalizer);
        if (e) agent_error_free(e);
        else atomic_fetch_add(&hooks_set, 1);
        if (i % 3 == 0) sleep_us(300);
    }
    if (r->index == 0) {
        sleep_us(500);
        CHECK_OK(agent_free(r->agent));
        atomic_store(&agent_gone, true);
    }
    return NULL;
}

static void test_racing_threads(void) {
    pump_thread = pthread_self();
    atomic_store(&misplaced, 0);
    for (int round = 0; round < ROUNDS; round++) {
        atomic_store(&finalized, 0);
        atomic_store(&done_calls, 0);
        atomic_store(&subscribed, 0);
        atomic_store(&agent_gone, false);
        atomic_store(&hooks_set, 0);
        AgentDispatcher dispatcher;
        CHECK_OK(agent_dispatcher_new(&dispatcher));
        AgentOptions options;
        CHECK_OK(agent_options_new(NULL, 0, &options));
        CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
        CHECK_OK(agent_options_set_scripted_model(
            options,
            "[{\"content\":[{\"type\":\"text\",\"text\":\"abcdefghijklmnopqrstuvwxyz\",\"chunks\":26}],"
            "\"waitForAbort\":true}]",
            NTS));
        AgentHandle agent;
        CHECK_OK(agent_new(options, &agent));
        CHECK_OK(agent_set_hook(agent, AGENT_HOOK_CONVERT_TO_LLM, confined_hook, NULL, hook_finalizer));
        atomic_fetch_add(&hooks_set, 1);
        CHECK_OK(agent_prompt_text(agent, "x", NTS, NULL, 0, confined_done, NULL, NULL));
        Racer racers[RACERS];
        pthread_t threads[RACERS];
        for (int i = 0; i < RACERS; i++) {
            racers[i] = (Racer){agent, i};
            CHECK(pthread_create(&threads[i], NULL, race, &racers[i]) == 0);
        }
        /* Pump with a small budget while they race (as a game loop would). */
        while (!atomic_load(&agent_gone)) {
            pump(dispatcher, 1);
            sleep_us(200);
        }
        for (int i = 0; i < RACERS; i++) pthread_join(threads[i], NULL);
        CHECK_EQ_INT(atomic_load(&misplaced), 0);
        for (int i = 0; i < 100 && atomic_load(&done_calls) == 0; i++) {
            pump(dispatcher, -1);
            if (atomic_load(&done_calls) == 0) sleep_ms(1);
        }
        pump(dispatcher, -1);
        CHECK_EQ_INT(atomic_load(&done_calls), 1);
        /* Every subscription's finalizer ran, and every hook's. */
        CHECK_EQ_INT(atomic_load(&hooks_set), 0);
        CHECK_EQ_INT(atomic_load(&finalized), atomic_load(&subscribed));
        int before_free = atomic_load(&finalized);
        free_dispatcher(dispatcher);
        CHECK_EQ_INT(atomic_load(&finalized), before_free); /* nothing was left */
        CHECK_EQ_INT(atomic_load(&misplaced), 0);
    }
}

/* ------------------------------------------------ the frame budget */

#define BUDGET_MS 3
#define CALLBACK_US 2000

/* Set and read by the pumping thread only (every callback runs on it). The budget is counted from
 * the frame's first callback (libagent's clock starts earlier, so nothing libagent did right
 * looks late when this thread is preempted): a callback that starts although the budget was spent
 * before the previous one returned broke the promise. */
static int64_t first_start_ns = -1, previous_end_ns;
static atomic_int late_callbacks, callbacks_run;

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Every callback: counts itself when it starts after the frame's budget, then takes about two
 * thirds of the budget. */
static void slow_callback(void) {
    confined();
    atomic_fetch_add(&callbacks_run, 1);
    if (first_start_ns < 0) first_start_ns = now_ns();
    else if (previous_end_ns - first_start_ns > BUDGET_MS * 1000000LL) atomic_fetch_add(&late_callbacks, 1);
    sleep_us(CALLBACK_US);
    previous_end_ns = now_ns();
}

ANSWERING_CALLBACKS(slow, slow_callback)

static void test_budget_overrun_by_one_callback_at_most(void) {
    pump_thread = pthread_self();
    atomic_store(&misplaced, 0);
    AgentDispatcher dispatcher;
    CHECK_OK(agent_dispatcher_new(&dispatcher));
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, slow_tool, NULL, NULL, &tool));
    CHECK_OK(agent_tool_set_prepare_arguments(tool, slow_prepare, NULL, NULL));
    enum { AGENTS = 2 };
    AgentHandle agents[AGENTS];
    AgentRun runs[AGENTS];
    for (int i = 0; i < AGENTS; i++) {
        AgentOptions options;
        CHECK_OK(agent_options_new(NULL, 0, &options));
        CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
        CHECK_OK(agent_options_set_scripted_model(
            options,
            "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"t\",\"arguments\":{}},"
            "{\"type\":\"toolCall\",\"id\":\"c2\",\"name\":\"t\",\"arguments\":{}}]},"
            "{\"content\":[{\"type\":\"text\",\"text\":\"abc\",\"chunks\":3}]}]",
            NTS));
        CHECK_OK(agent_options_add_tool(options, tool));
        CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_BEFORE_TOOL_CALL, slow_hook, NULL, NULL));
        CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_AFTER_TOOL_CALL, slow_hook, NULL, NULL));
        CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_TRANSFORM_CONTEXT, slow_hook, NULL, NULL));
        CHECK_OK(agent_new(options, &agents[i]));
        uint64_t sub;
        CHECK_OK(agent_subscribe(agents[i], slow_listener, NULL, NULL, &sub));
        CHECK_OK(agent_prompt_text(agents[i], "x", NTS, NULL, 0, NULL, NULL, &runs[i]));
    }
    int frames = 0;
    for (;;) {
        int settled = 0;
        for (int i = 0; i < AGENTS; i++) settled += outcome_of(runs[i]).status != AGENT_RUN_RUNNING;
        if (settled == AGENTS) break;
        CHECK(frames < 100000);
        AgentWaitResult ready;
        CHECK_OK(agent_dispatcher_wait(dispatcher, WAIT_MS, &ready));
        first_start_ns = -1;
        if (pump(dispatcher, BUDGET_MS) == 0) continue;
        frames++;
    }
    /* Per agent: 2 tool calls x (prepare, before, execute, after) + 2 transforms + ~20 events. */
    CHECK(atomic_load(&callbacks_run) >= AGENTS * 30);
    CHECK_EQ_INT(atomic_load(&late_callbacks), 0);
    CHECK(frames >= atomic_load(&callbacks_run) / 2);
    CHECK_EQ_INT(atomic_load(&misplaced), 0);
    for (int i = 0; i < AGENTS; i++) {
        CHECK_EQ_INT(outcome_of(runs[i]).status, AGENT_RUN_COMPLETED);
        CHECK_OK(agent_run_free(runs[i]));
        CHECK_OK(agent_free(agents[i]));
    }
    CHECK_OK(agent_tool_free(tool));
    free_dispatcher(dispatcher);
}

/* With an argument, runs only the tests whose name contains it. */
int main(int argc, char **argv) {
    struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"finalizers_and_done_from_a_worker", test_finalizers_and_done_from_a_worker},
        {"dispatcher_free_runs_the_queue", test_dispatcher_free_runs_the_queue},
        {"racing_threads", test_racing_threads},
        {"budget_overrun_by_one_callback_at_most", test_budget_overrun_by_one_callback_at_most},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (argc < 2 || strstr(tests[i].name, argv[1])) tests[i].run();
    printf("test_pumped: ok\n");
    return 0;
}

/* Issue 7, bug 2: `done` runs before agent_wait_for_idle and agent_free return, under every
 * interleaving. With 4 runtime workers, many runs: (1) polling agent_wait_for_idle(a, 0) until
 * AGENT_WAIT_DONE must find `done` finished; (2) agent_free right after agent_end was seen must find
 * `done` finished, and nothing may touch the done context after the free returned (the context
 * is poisoned and freed at once: valgrind/ASan would see a late write); (3) a done that frees
 * its own agent, and one that starts the next run, do not deadlock; (4) abort callbacks have run
 * before the run settles; (5) no finalizer of the agent runs after agent_free returned (a tool
 * the run still held). The old code failed (1) and (2) within a few hundred iterations: `done`
 * ran after the run was taken out of the state; (4) and (5) failed too (callbacks and the run's
 * task were dropped later on the runtime).
 * The races are forced, not hoped for: in (1) and (2) `done` holds on (up to a bound) until the host
 * has shown it is inside the window — a poll answered TIMEOUT while `done` ran, or agent_free about
 * to be called — and the rounds where that happened are counted and required. */
#include "check.h"

#include <sched.h>

/* Fewer under valgrind (tests/c/run.sh sets LIBAGENT_TEST_SLOW), which serializes threads. */
static int iterations(void) { return getenv("LIBAGENT_TEST_SLOW") ? 30 : 400; }

typedef struct {
    atomic_int started;      /* done entered */
    atomic_int host_in_race; /* the host is inside the window: polling or about to free */
    atomic_int finished;     /* done returned (set last) */
    atomic_int calls;
} DoneContext;

/* Holds `done` open until the host is inside the window (at most about a second, so a host that
 * never comes cannot hang the test), then a little longer so that a free is well under way. */
static void slow_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)run, (void)outcome;
    DoneContext *ctx = ud;
    atomic_fetch_add(&ctx->calls, 1);
    atomic_store(&ctx->started, 1);
    for (int waited = 0; waited < 1000 && !atomic_load(&ctx->host_in_race); waited++) sleep_us(1000);
    sleep_us(500);
    atomic_store(&ctx->finished, 1);
}

static atomic_int agent_ended;
static AgentListenerAnswer end_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind == AGENT_EVENT_AGENT_END) atomic_store(&agent_ended, 1);
    return AGENT_LISTENER_CONTINUE;
}

static AgentHandle scripted_agent(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},"
                                                       "{\"content\":[{\"type\":\"text\",\"text\":\"b\"}]}]", NTS));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

/* (3) done frees its own agent. */
static AgentHandle self_freeing;
static atomic_int self_free_status = 1;
static void free_in_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run, (void)outcome;
    atomic_store(&self_free_status, code_of(agent_free(self_freeing)));
}

/* (3) done starts the next run; waiting then covers that run too (it is the active one). */
static AgentHandle chaining;
static atomic_int chained_done;
static void chained(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run, (void)outcome;
    atomic_store(&chained_done, 1);
}
static void start_next(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run, (void)outcome;
    CHECK_OK(agent_prompt(chaining, "\"again\"", NTS, chained, NULL, NULL));
}

/* (4) a prepareRequest hook registering an abort callback; the scripted model waits for abort. */
static atomic_int hook_ran, abort_ran;
static void on_abort_cb(void *ud) {
    (void)ud;
    atomic_store(&abort_ran, 1);
}
static void register_abort(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud, (void)input;
    CHECK_OK(agent_hook_call_on_abort(call, on_abort_cb, NULL, NULL));
    CHECK_OK(agent_hook_call_complete(call, NULL, 0));
    atomic_store(&hook_ran, 1);
}

/* (5) a tool that never answers, held only by the agent. */
static atomic_int tool_started, tool_finalized;
static void silent_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args, (void)call;
    atomic_store(&tool_started, 1);
}

int main(void) {
    CHECK_OK(agent_runtime_configure(4));

    /* (1) wait_for_idle(a, 0) polled until OK. */
    AgentHandle agent = scripted_agent();
    int waits_during_done = 0; /* rounds where a poll answered TIMEOUT while done was running */
    for (int i = 0; i < iterations(); i++) {
        DoneContext ctx = {0};
        CHECK_OK(agent_reset(agent));
        CHECK_OK(agent_prompt(agent, "\"hi\"", NTS, slow_done, &ctx, NULL));
        AgentWaitResult waited;
        for (;;) {
            CHECK_OK(agent_wait_for_idle(agent, 0, &waited));
            if (waited == AGENT_WAIT_DONE) break;
            if (atomic_load(&ctx.started) && !atomic_load(&ctx.finished)) atomic_store(&ctx.host_in_race, 1);
            sched_yield();
        }
        if (!atomic_load(&ctx.finished)) FAIL("iteration %d: wait_for_idle returned before done finished", i);
        CHECK_EQ_INT(atomic_load(&ctx.calls), 1);
        waits_during_done += atomic_load(&ctx.host_in_race);
    }
    if (waits_during_done != iterations())
        FAIL("(1) polled while done was running in %d of %d rounds: the race was not forced", waits_during_done, iterations());
    CHECK_OK(agent_free(agent));

    /* (2) agent_free right after agent_end. */
    int frees_during_done = 0; /* rounds where agent_free was called while done was running */
    for (int i = 0; i < iterations(); i++) {
        agent = scripted_agent();
        uint64_t id;
        CHECK_OK(agent_subscribe(agent, end_listener, NULL, NULL, &id));
        DoneContext *ctx = calloc(1, sizeof *ctx);
        atomic_store(&agent_ended, 0);
        CHECK_OK(agent_prompt(agent, "\"hi\"", NTS, slow_done, ctx, NULL));
        while (!atomic_load(&agent_ended)) sched_yield();
        /* Every other round waits for done to begin, so that the free meets a running done
         * (which holds on until it is told the free is coming); the others free at once. */
        if (i % 2) WAIT_UNTIL(atomic_load(&ctx->started));
        frees_during_done += atomic_load(&ctx->started) && !atomic_load(&ctx->finished);
        atomic_store(&ctx->host_in_race, 1);
        CHECK_OK(agent_free(agent));
        /* Called once: either it finished the run normally, or the free cancelled it (FREED). */
        CHECK_EQ_INT(atomic_load(&ctx->calls), 1);
        if (!atomic_load(&ctx->finished)) FAIL("iteration %d: agent_free returned before done finished", i);
        memset(ctx, 0xff, sizeof *ctx);
        free(ctx);
    }
    if (frees_during_done < iterations() / 2)
        FAIL("(2) freed while done was running in %d of %d rounds: the race was not forced", frees_during_done, iterations());
    printf("test_done_ordering: waits during done %d, frees during done %d\n", waits_during_done, frees_during_done);

    /* (3) a done that frees its own agent does not wait for itself. */
    self_freeing = scripted_agent();
    CHECK_OK(agent_prompt(self_freeing, "\"hi\"", NTS, free_in_done, NULL, NULL));
    WAIT_UNTIL(atomic_load(&self_free_status) != 1);
    CHECK_EQ_INT(atomic_load(&self_free_status), AGENT_OK);

    /* (3) a done that starts the next run: a wait started afterwards covers the new run. */
    chaining = scripted_agent();
    CHECK_OK(agent_prompt(chaining, "\"hi\"", NTS, start_next, NULL, NULL));
    WAIT_UNTIL(atomic_load(&chained_done));
    WAIT_IDLE(chaining);
    size_t count;
    CHECK_OK(agent_get_message_count(chaining, &count));
    CHECK_EQ_INT(count, 4); /* two prompts, two answers */
    CHECK_EQ_INT(atomic_load(&chained_done), 1);
    CHECK_OK(agent_free(chaining));

    /* (4) abort callbacks run before the run settles. */
    for (int i = 0; i < iterations() / 4; i++) {
        AgentOptions options;
        CHECK_OK(agent_options_new(NULL, 0, &options));
        CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"waitForAbort\":true}]", NTS));
        CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_PREPARE_REQUEST, register_abort, NULL, NULL));
        CHECK_OK(agent_new(options, &agent));
        atomic_store(&hook_ran, 0);
        atomic_store(&abort_ran, 0);
        CHECK_OK(agent_prompt(agent, "\"hi\"", NTS, NULL, NULL, NULL));
        WAIT_UNTIL(atomic_load(&hook_ran));
        CHECK_OK(agent_abort(agent));
        WAIT_IDLE(agent);
        if (!atomic_load(&abort_ran)) FAIL("iteration %d: the run settled before its abort callback ran", i);
        CHECK_OK(agent_free(agent));
    }

    /* (5) the run's task still holds the tool when agent_free is called. */
    for (int i = 0; i < iterations() / 4; i++) {
        AgentOptions options;
        CHECK_OK(agent_options_new(NULL, 0, &options));
        CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"t\",\"arguments\":{}}]}]", NTS));
        AgentTool tool;
        CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, silent_tool, &tool_finalized, count_finalizer, &tool));
        CHECK_OK(agent_options_add_tool(options, tool));
        CHECK_OK(agent_tool_free(tool));
        CHECK_OK(agent_new(options, &agent));
        atomic_store(&tool_started, 0);
        atomic_store(&tool_finalized, 0);
        CHECK_OK(agent_prompt(agent, "\"hi\"", NTS, NULL, NULL, NULL));
        WAIT_UNTIL(atomic_load(&tool_started));
        CHECK_OK(agent_free(agent));
        if (atomic_load(&tool_finalized) != 1) FAIL("iteration %d: the tool's finalizer had not run when agent_free returned", i);
    }

    printf("test_done_ordering: ok\n");
    return 0;
}

/* Re-entrant calls from inside every callback kind (listener, tool, hook, stream function,
 * consumed, abort, done), aborts, listener failures (AGENT_RUN_FAILED), agent_free during a run and
 * from inside callbacks (done gets FREED, late answers are accepted and discarded), and
 * user_data finalizers run exactly once. */
#include "check.h"

#ifdef __linux__
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define BUSY_PROMPT "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
#define BUSY_CONTINUE "Agent is already processing. Wait for completion before continuing."
#define BUSY_RESET "Agent is already processing. Wait for completion before resetting."

static AgentHandle g_agent;
static pthread_t main_thread;
static atomic_int reentered[8]; /* per callback kind */
enum { IN_LISTENER, IN_TOOL, IN_HOOK, IN_STREAM, IN_CONSUMED, IN_ABORT, IN_DONE };
static atomic_int fin_tool, fin_hook, fin_listener, fin_stream, fin_abort, fin_consumed;
static atomic_int late_done_calls;

/* What every callback may and may not do while the run is active. */
static void check_reentry(int where) {
    CHECK(!pthread_equal(pthread_self(), main_thread)); /* callbacks run on the runtime thread */
    atomic_int done[2] = {0, 0};
    CHECK_ERR(agent_prompt(g_agent, "\"nested\"", NTS, record_done, done, NULL), AGENT_ERR_BUSY, BUSY_PROMPT);
    CHECK_ERR(agent_prompt_text(g_agent, "nested", NTS, NULL, 0, record_done, done, NULL), AGENT_ERR_BUSY, BUSY_PROMPT);
    CHECK_ERR(agent_continue(g_agent, record_done, done, NULL), AGENT_ERR_BUSY, BUSY_CONTINUE);
    CHECK_ERR(agent_reset(g_agent), AGENT_ERR_BUSY, BUSY_RESET);
    AgentWaitResult waited;
    CHECK_ERR(agent_wait_for_idle(g_agent, -1, &waited), AGENT_ERR_WOULD_DEADLOCK,
              "agent_wait_for_idle was called inside a callback (on the runtime thread, or inside agent_dispatch), where the run cannot finish.");
    CHECK_ERR(agent_wait_for_idle(g_agent, 10, &waited), AGENT_ERR_WOULD_DEADLOCK, "runtime thread");
    CHECK_EQ_INT(atomic_load(&done[1]), 0); /* failed starts never call done */
    char *state = state_of(g_agent);
    CHECK_HAS(state, "\"isStreaming\":true");
    agent_string_free(state);
    bool has;
    char *peek = NULL;
    CHECK_OK(agent_has_queued_messages(g_agent, &has));
    CHECK_OK(agent_peek_queued_messages(g_agent, &peek, NULL));
    agent_string_free(peek);
    CHECK_OK(agent_configure(g_agent, "{\"sessionId\":\"inside\"}", NTS));
    atomic_fetch_add(&reentered[where], 1);
}

/* --- scenario A: listener, tool, hook, done ---------------------------------------------------- */

static atomic_int late_listener_events;
static atomic_int late_first_kind = -1;

static AgentListenerAnswer late_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (atomic_fetch_add(&late_listener_events, 1) == 0) atomic_store(&late_first_kind, event->kind);
    return AGENT_LISTENER_CONTINUE;
}

static AgentListenerAnswer listener_a(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind == AGENT_EVENT_AGENT_START) {
        /* Subscribing during dispatch: the new subscription receives this event too, after us. */
        uint64_t id;
        CHECK_OK(agent_subscribe(g_agent, late_listener, &fin_listener, count_finalizer, &id));
        CHECK_EQ_INT(atomic_load(&late_listener_events), 0);
    }
    check_reentry(IN_LISTENER);
    CHECK_OK(agent_steer(g_agent, "{\"role\":\"user\",\"content\":\"late\",\"timestamp\":1}", NTS));
    CHECK_OK(agent_clear_steering_queue(g_agent));
    return AGENT_LISTENER_CONTINUE;
}

static void tool_a(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args;
    check_reentry(IN_TOOL);
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"details\":{}}", NTS));
}

static void hook_a(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud, (void)input;
    check_reentry(IN_HOOK);
    CHECK_OK(agent_hook_call_complete(call, NULL, 0));
}

static atomic_int done_a_status, done_a_calls;
static void done_a(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    CHECK(!pthread_equal(pthread_self(), main_thread));
    CHECK(outcome->error_message.ptr != NULL && outcome->error_message.len == 0);
    char *state = state_of(g_agent);
    CHECK_HAS(state, "\"isStreaming\":false"); /* after the cleanup */
    agent_string_free(state);
    /* Waiting here could never finish if the run were still recorded: it must not block. */
    AgentWaitResult waited;
    AgentErrorCode wait = code_of(agent_wait_for_idle(g_agent, 10, &waited));
    CHECK(wait == AGENT_OK || wait == AGENT_ERR_WOULD_DEADLOCK);
    CHECK_OK(agent_steer(g_agent, "{\"role\":\"user\",\"content\":\"from done\",\"timestamp\":2}", NTS));
    atomic_store(&done_a_status, 1000 + outcome->status);
    atomic_fetch_add(&done_a_calls, 1);
    atomic_fetch_add(&reentered[IN_DONE], 1);
}

static void scenario_reentry(void) {
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, tool_a, &fin_tool, count_finalizer, &tool));
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_PREPARE_REQUEST, hook_a, &fin_hook, count_finalizer));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"t\",\"arguments\":{}}]},"
                                                       " {\"content\":[{\"type\":\"text\",\"text\":\"end\"}]}]", NTS));
    CHECK_OK(agent_new(options, &g_agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, listener_a, &fin_listener, count_finalizer, &id));
    CHECK_OK(agent_prompt(g_agent, "\"go\"", NTS, done_a, NULL, NULL));
    /* Starting is synchronous: the run is active when agent_prompt returns. */
    CHECK_ERR(agent_prompt(g_agent, "\"again\"", NTS, NULL, NULL, NULL), AGENT_ERR_BUSY, BUSY_PROMPT);
    WAIT_IDLE(g_agent);
    CHECK_EQ_INT(atomic_load(&done_a_calls), 1);
    CHECK_EQ_INT(atomic_load(&done_a_status), 1000 + AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(atomic_load(&late_first_kind), AGENT_EVENT_AGENT_START);
    CHECK(atomic_load(&reentered[IN_LISTENER]) > 5);
    CHECK_EQ_INT(atomic_load(&reentered[IN_TOOL]), 1);
    CHECK_EQ_INT(atomic_load(&reentered[IN_HOOK]), 2);
    char *state = state_of(g_agent);
    CHECK_HAS(state, "\"sessionId\":\"inside\"");
    CHECK_HAS(state, "\"steeringQueue\":[{\"role\":\"user\",\"content\":\"from done\"");
    agent_string_free(state);
    CHECK_OK(agent_free(g_agent));
    WAIT_UNTIL(atomic_load(&fin_tool) == 1 && atomic_load(&fin_hook) == 1 && atomic_load(&fin_listener) == 2);
}

/* --- scenario B: host stream, consumed and abort callbacks; abort from inside ------------------- */

static atomic_int consumed_calls, in_agent_abort, abort_calls;

static void count_finalizer_abort(void *ud) {
    (void)ud;
    atomic_fetch_add(&fin_abort, 1);
}

static AgentStream stream_b_call;

static void on_abort_b(void *ud) {
    (void)ud;
    AgentStream stream = stream_b_call;
    CHECK_EQ_INT(atomic_load(&in_agent_abort), 0); /* never inside agent_abort */
    bool aborted = false;
    CHECK_OK(agent_stream_is_aborted(stream, &aborted));
    CHECK(aborted);
    check_reentry(IN_ABORT);
    atomic_fetch_add(&abort_calls, 1);
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"error\",\"reason\":\"aborted\",\"errorMessage\":\"Request was aborted\"}", NTS));
}

static void on_consumed_b(void *ud, AgentStream stream) {
    (void)ud;
    int n = atomic_fetch_add(&consumed_calls, 1);
    if (n == 0) check_reentry(IN_CONSUMED);
    if (n == 0) CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}", NTS));
    if (n == 1) CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"partial\"}", NTS));
    if (n == 2) {
        atomic_store(&in_agent_abort, 1);
        CHECK_OK(agent_abort(g_agent));
        CHECK_OK(agent_abort(g_agent)); /* repeated aborts are harmless */
        atomic_store(&in_agent_abort, 0);
    }
}

static void stream_b(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)request_len;
    (void)ud, (void)request;
    check_reentry(IN_STREAM);
    CHECK_OK(agent_stream_on_consumed(stream, on_consumed_b, &fin_consumed, count_finalizer));
    stream_b_call = stream;
    CHECK_OK(agent_stream_on_abort(stream, on_abort_b, NULL, count_finalizer_abort));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
}

static void scenario_stream_abort(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_stream_fn(options, stream_b, &fin_stream, count_finalizer));
    CHECK_OK(agent_new(options, &g_agent));
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(g_agent, "\"stream\"", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_ABORTED);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_ABORTED);
    CHECK_OK(agent_run_free(run));
    CHECK_EQ_INT(atomic_load(&abort_calls), 1);
    CHECK_EQ_INT(atomic_load(&reentered[IN_STREAM]), 1);
    CHECK_EQ_INT(atomic_load(&reentered[IN_CONSUMED]), 1);
    CHECK_EQ_INT(atomic_load(&reentered[IN_ABORT]), 1);
    char *state = state_of(g_agent);
    CHECK_HAS(state, "\"stopReason\":\"aborted\"");
    CHECK_HAS(state, "\"text\":\"partial\"");
    agent_string_free(state);
    CHECK_OK(agent_abort(g_agent)); /* idle: nothing happens */
    CHECK_OK(agent_free(g_agent));
    WAIT_UNTIL(atomic_load(&fin_stream) == 1 && atomic_load(&fin_consumed) == 1 && atomic_load(&fin_abort) == 1);
}

/* --- scenario C: abort from the main thread; on_abort registered after the abort --------------- */

static _Atomic uint64_t pending_call_id; /* an AgentToolCall */
#define pending_call ((AgentToolCall){atomic_load(&pending_call_id)})
static atomic_int late_abort_calls, registering;

static void hold_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args;
    atomic_store(&pending_call_id, call.id);
}

static void late_abort(void *ud) {
    (void)ud;
    CHECK(!pthread_equal(pthread_self(), main_thread));
    atomic_fetch_add(&late_abort_calls, 1);
}

static AgentHandle agent_with_holding_tool(void) {
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"hold\",\"parameters\":{\"type\":\"object\"}}", NTS, hold_tool, &fin_tool, count_finalizer, &tool));
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"h1\",\"name\":\"hold\",\"arguments\":{}}]},"
                                                       " {\"content\":[{\"type\":\"text\",\"text\":\"after\"}]}]", NTS));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

static void scenario_abort_from_main(void) {
    g_agent = agent_with_holding_tool();
    atomic_store(&pending_call_id, 0);
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt(g_agent, "\"hold\"", NTS, record_done, done, &run));
    WAIT_UNTIL(atomic_load(&pending_call_id) != 0);
    AgentWaitResult waited;
    CHECK_OK(agent_wait_for_idle(g_agent, 20, &waited));
    CHECK_EQ_INT(waited, AGENT_WAIT_TIMEOUT);
    CHECK_OK(agent_abort(g_agent));
    bool aborted = false;
    CHECK_OK(agent_tool_call_is_aborted(pending_call, &aborted));
    CHECK(aborted);
    atomic_store(&registering, 1);
    CHECK_OK(agent_tool_call_on_abort(pending_call, late_abort, &fin_abort, count_finalizer));
    atomic_store(&registering, 0);
    WAIT_UNTIL(atomic_load(&late_abort_calls) == 1);
    /* The reference waits for a tool that ignores the signal: the run is still active. */
    CHECK_OK(agent_run_wait(run, 20, &waited));
    CHECK_EQ_INT(waited, AGENT_WAIT_TIMEOUT);
    CHECK_OK(agent_tool_call_complete(pending_call, "{\"content\":[{\"type\":\"text\",\"text\":\"late\"}],\"details\":{}}", NTS));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + outcome_of(run).status);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_ABORTED);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(g_agent));
    WAIT_UNTIL(atomic_load(&fin_abort) == 2);
}

/* --- scenario D: agent_free during a run, from the main thread ---------------------------------- */

static atomic_int waiting;
#ifdef __linux__
static atomic_int waiter_syscall_fd = -1; /* /proc/thread-self/syscall of the waiting thread */
#endif
static void *wait_forever(void *agent) {
#ifdef __linux__
    atomic_store(&waiter_syscall_fd, open("/proc/thread-self/syscall", O_RDONLY));
#endif
    atomic_store(&waiting, 1);
    AgentWaitResult waited;
    return (void *)(intptr_t)code_of(agent_wait_for_idle(*(AgentHandle *)agent, -1, &waited));
}

#ifdef __linux__
/* Whether the waiting thread is blocked in a futex wait (the kernel's view of the thread). */
static bool waiter_in_futex(void) {
    char line[64] = {0};
    ssize_t n = pread(atomic_load(&waiter_syscall_fd), line, sizeof line - 1, 0);
    return n > 0 && atol(line) == SYS_futex;
}
#endif

/* Handshake: returns once the waiting thread is parked inside agent_wait_for_idle. Nothing else
 * runs meanwhile (the tool holds the run), so a futex wait that lasts over several polls is the
 * wait for the run, not a lock taken on the way in. Without /proc this cannot be told: returns
 * false, and the test accepts either answer of the waiter. */
static bool waiter_parked(void) {
#ifdef __linux__
    CHECK(atomic_load(&waiter_syscall_fd) >= 0);
    for (int seen = 0, polls = 0; polls < WAIT_MS; polls++) {
        seen = waiter_in_futex() ? seen + 1 : 0;
        if (seen == 5) return true;
        sleep_ms(1);
    }
    FAIL("the waiting thread never blocked inside agent_wait_for_idle");
#else
    return false;
#endif
}

static void never_called_abort(void *ud) {
    (void)ud;
    FAIL("an abort callback ran after agent_free");
}

static void scenario_free_during_run(void) {
    g_agent = agent_with_holding_tool();
    atomic_store(&pending_call_id, 0);
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, continue_listener, &fin_listener, count_finalizer, &id));
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt(g_agent, "\"hold\"", NTS, record_done, done, NULL));
    WAIT_UNTIL(atomic_load(&pending_call_id) != 0);
    /* Another thread waiting for the run is released by the free. */
    pthread_t waiter;
    CHECK(pthread_create(&waiter, NULL, wait_forever, &g_agent) == 0);
    WAIT_UNTIL(atomic_load(&waiting) == 1);
    bool parked = waiter_parked();
    atomic_int freed_abort_fin = 0;
    CHECK_OK(agent_tool_call_on_abort(pending_call, never_called_abort, &freed_abort_fin, count_finalizer));
    CHECK_OK(agent_free(g_agent));
    void *wait_status;
    pthread_join(waiter, &wait_status);
    if (parked) {
        /* A thread blocked in the wait is released by the free, with the wait's own success. */
        CHECK_EQ_INT((intptr_t)wait_status, AGENT_OK);
    } else {
        CHECK((intptr_t)wait_status == AGENT_OK || (intptr_t)wait_status == AGENT_ERR_INVALID_HANDLE);
    }
#ifdef __linux__
    close(atomic_load(&waiter_syscall_fd));
#endif
    /* No host callback starts after agent_free: the abort registration is dropped, not run. */
    WAIT_UNTIL(atomic_load(&freed_abort_fin) == 1);
    /* done was called with FREED before agent_free returned. */
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_FREED);
    /* A late answer is accepted and discarded; a second one is still refused. */
    CHECK_OK(agent_tool_call_update(pending_call, "{\"content\":[],\"details\":{}}", NTS));
    CHECK_OK(agent_tool_call_complete(pending_call, "{\"content\":[{\"type\":\"text\",\"text\":\"late\"}],\"details\":{}}", NTS));
    CHECK_ERR(agent_tool_call_complete(pending_call, NULL, 0), AGENT_ERR_ALREADY_COMPLETED, "already answered");
    CHECK_ERR(agent_get_state(g_agent, &(char *){NULL}, NULL), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent.");
    WAIT_UNTIL(atomic_load(&fin_listener) == 3);
    sleep_ms(20);
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
}

/* --- scenario E: agent_free from inside a listener, a tool and a hook --------------------------- */

static atomic_int free_events_after, freed_flag;
static atomic_int done_e_status, done_e_calls, done_e_on_runtime, free_e_checked;

static void done_e(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    CHECK_HAS(outcome->error_message.ptr, "freed");
    if (!pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&done_e_on_runtime, 1);
    atomic_store(&done_e_status, 1000 + outcome->status);
    atomic_fetch_add(&done_e_calls, 1);
}

static AgentListenerAnswer freeing_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (atomic_load(&freed_flag)) atomic_fetch_add(&free_events_after, 1);
    if (event->kind == AGENT_EVENT_MESSAGE_END && !atomic_load(&freed_flag)) {
        atomic_store(&freed_flag, 1);
        CHECK_OK(agent_free(g_agent));
        CHECK_EQ_INT(atomic_load(&done_e_calls), 1); /* called inside agent_free */
        CHECK_ERR(agent_free(g_agent), AGENT_ERR_INVALID_HANDLE, "freed");
        atomic_store(&free_e_checked, 1);
        return AGENT_LISTENER_CONTINUE; /* accepted and discarded after the free */
    }
    return AGENT_LISTENER_CONTINUE;
}

static void freeing_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id, (void)args;
    CHECK_OK(agent_free(g_agent));
    CHECK_EQ_INT(atomic_load(&done_e_calls), 1);
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[],\"details\":{}}", NTS));
    atomic_store(&free_e_checked, 1);
}

static void freeing_hook(void *ud, const char *input, size_t input_len, AgentHookCall call) {
    (void)input_len;
    (void)ud, (void)input;
    CHECK_OK(agent_free(g_agent));
    CHECK_EQ_INT(atomic_load(&done_e_calls), 1);
    CHECK_OK(agent_hook_call_fail(call, "ignored", NTS));
    atomic_store(&free_e_checked, 1);
}

static void scenario_free_inside(int which) {
    atomic_store(&done_e_calls, 0);
    atomic_store(&freed_flag, 0);
    atomic_store(&free_e_checked, 0);
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}", NTS, which == 1 ? freeing_tool : tool_a, &fin_tool, count_finalizer, &tool));
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    if (which == 2)
        CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_TRANSFORM_CONTEXT, freeing_hook, &fin_hook, count_finalizer));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"f1\",\"name\":\"f\",\"arguments\":{}}]}]", NTS));
    CHECK_OK(agent_new(options, &g_agent));
    AgentHandle agent = g_agent;
    uint64_t id;
    if (which == 0) CHECK_OK(agent_subscribe(agent, freeing_listener, &fin_listener, count_finalizer, &id));
    CHECK_OK(agent_prompt(agent, "\"free me\"", NTS, done_e, NULL, NULL));
    WAIT_UNTIL(atomic_load(&free_e_checked) == 1);
    CHECK_EQ_INT(atomic_load(&done_e_calls), 1);
    CHECK_EQ_INT(atomic_load(&done_e_on_runtime), which + 1);
    CHECK_EQ_INT(atomic_load(&done_e_status), 1000 + AGENT_RUN_FREED);
    AgentWaitResult waited;
    CHECK_ERR(agent_wait_for_idle(agent, 0, &waited), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent.");
    sleep_ms(20);
    CHECK_EQ_INT(atomic_load(&done_e_calls), 1);
    CHECK_EQ_INT(atomic_load(&free_events_after), 0); /* no new callback after the free */
}

/* --- scenario F: listener failures -------------------------------------------------------------- */

static atomic_int fail_mode;
static AgentListenerAnswer failing_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (atomic_load(&fail_mode) == 1 || event->kind == AGENT_EVENT_AGENT_START) {
        AgentReply reply;
        CHECK_OK(agent_event_defer(event, &reply));
        CHECK_OK(agent_reply_fail(reply, "listener broke", NTS));
        return AGENT_LISTENER_LATER;
    }
    return AGENT_LISTENER_CONTINUE;
}

static atomic_int done_f_status;
static char done_f_error[256];
static void done_f(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    snprintf(done_f_error, sizeof done_f_error, "%.*s", (int)outcome->error_message.len, outcome->error_message.ptr);
    atomic_store(&done_f_status, 1000 + outcome->status);
}

static void scenario_listener_failure(int always) {
    atomic_store(&fail_mode, always);
    CHECK_OK(agent_set_default_scripted_model("[{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]", NTS));
    CHECK_OK(agent_new((AgentOptions){0}, &g_agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, failing_listener, &fin_listener, count_finalizer, &id));
    atomic_store(&done_f_status, 0);
    CHECK_OK(agent_prompt(g_agent, "\"hi\"", NTS, done_f, NULL, NULL));
    WAIT_IDLE(g_agent);
    char *state = state_of(g_agent);
    if (always) {
        /* The failure path itself failed: the run's promise rejected. */
        CHECK_EQ_INT(atomic_load(&done_f_status), 1000 + AGENT_RUN_FAILED);
        CHECK_HAS(done_f_error, "listener broke");
    } else {
        CHECK_EQ_INT(atomic_load(&done_f_status), 1000 + AGENT_RUN_MODEL_ERROR);
        CHECK_HAS(done_f_error, "listener broke");
        CHECK_HAS(state, "\"errorMessage\":\"listener broke\"");
    }
    CHECK_HAS(state, "\"isStreaming\":false");
    agent_string_free(state);
    CHECK_OK(agent_free(g_agent));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL));
}

/* --- scenario G: abort from a listener while the scripted model waits for it ------------------- */

static AgentListenerAnswer aborting_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->update == AGENT_UPDATE_TEXT_DELTA) CHECK_OK(agent_abort(g_agent));
    return AGENT_LISTENER_CONTINUE;
}

static void scenario_abort_from_listener(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"never ends\",\"chunks\":2}],"
                                                       "\"waitForAbort\":true}]", NTS));
    CHECK_OK(agent_new(options, &g_agent));
    uint64_t id;
    CHECK_OK(agent_subscribe(g_agent, aborting_listener, NULL, NULL, &id));
    atomic_int done[2] = {0, 0};
    CHECK_OK(agent_prompt(g_agent, "\"go\"", NTS, record_done, done, NULL));
    WAIT_IDLE(g_agent);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_ABORTED);
    char *state = state_of(g_agent);
    CHECK_HAS(state, "\"stopReason\":\"aborted\"");
    agent_string_free(state);
    CHECK_OK(agent_free(g_agent));
}

int main(void) {
    main_thread = pthread_self();
    scenario_reentry();
    scenario_stream_abort();
    scenario_abort_from_main();
    scenario_free_during_run();
    for (int which = 0; which < 3; which++) scenario_free_inside(which);
    scenario_listener_failure(0);
    scenario_listener_failure(1);
    scenario_abort_from_listener();
    /* Every registration's finalizer ran exactly once. */
    WAIT_UNTIL(atomic_load(&fin_tool) == 6 && atomic_load(&fin_hook) == 2 && atomic_load(&fin_listener) == 6);
    sleep_ms(50);
    CHECK_EQ_INT(atomic_load(&fin_tool), 6);   /* A, C, D, E x3 */
    CHECK_EQ_INT(atomic_load(&fin_hook), 2);   /* A, E(hook) */
    CHECK_EQ_INT(atomic_load(&fin_listener), 6); /* A x2, D, E(listener), F x2 */
    CHECK_EQ_INT(atomic_load(&fin_stream), 1);
    CHECK_EQ_INT(atomic_load(&fin_consumed), 1);
    CHECK_EQ_INT(atomic_load(&fin_abort), 2);
    CHECK_EQ_INT(atomic_load(&late_done_calls), 0);
    printf("test_reentrancy: ok\n");
    return 0;
}

/* Stale events and freed calls (issue 25): a listener's event may be read or deferred only
 * inside its callback, on the thread that called it; a copy of the struct used after the
 * callback (on that thread or another) or from another thread during it is refused, so it can
 * neither read a later state nor take over another listener's deferral. And a freed tool call,
 * hook call or reply is not a stream: agent_stream_backlog refuses it. */
#include "check.h"

#include <stdbool.h>

#define STALE "event is no longer valid"

/* Refused with the stale-event error, for reading and for deferring. */
static void check_refused(const AgentEvent *event) {
    AgentStr json = {0};
    CHECK_ERR(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &json), AGENT_ERR_INVALID_ARGUMENT, STALE);
    CHECK_ERR(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json), AGENT_ERR_INVALID_ARGUMENT, STALE);
    AgentReply reply = {0};
    CHECK_ERR(agent_event_defer(event, &reply), AGENT_ERR_INVALID_ARGUMENT, STALE);
    CHECK_EQ_INT(reply.id, 0);
}

static void *refuse_elsewhere(void *arg) {
    check_refused(arg);
    return NULL;
}

/* An agent whose scripted model answers "hi". */
static AgentHandle scripted_agent(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]", NTS));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

/* ------------------------------------------------ a copy kept after the callback */

static AgentEvent kept; /* the last event the listener saw */
static atomic_int kept_count;

static AgentListenerAnswer keep_copy(void *ud, const AgentEvent *event) {
    (void)ud;
    /* Its own event is readable here. */
    AgentStr json = {0};
    CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &json));
    CHECK(json.len > 0);
    kept = *event;
    atomic_fetch_add(&kept_count, 1);
    return AGENT_LISTENER_CONTINUE;
}

static void test_a_kept_copy_is_refused_after_its_callback(void) {
    AgentHandle agent = scripted_agent();
    uint64_t sub;
    CHECK_OK(agent_subscribe(agent, keep_copy, NULL, NULL, &sub));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "x", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK(atomic_load(&kept_count) > 5);
    CHECK_EQ_INT(kept.kind, AGENT_EVENT_AGENT_END); /* the latest event of the agent */
    /* On this thread, and on another one. */
    check_refused(&kept);
    pthread_t other;
    CHECK(pthread_create(&other, NULL, refuse_elsewhere, &kept) == 0);
    pthread_join(other, NULL);
    /* Still refused once the agent ran again (the copy names an older event). */
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
    check_refused(&kept);
}

/* ------------------------------------------------ another thread during the callback */

static AgentEvent shared;           /* handed to the other thread by the listener */
static atomic_int stage;            /* 1: shared is set; 2: the other thread is done */
static atomic_int checked_during;   /* events checked from the other thread during delivery */
static atomic_bool stop_watcher;

static AgentListenerAnswer hand_to_other_thread(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind != AGENT_EVENT_MESSAGE_END) return AGENT_LISTENER_CONTINUE;
    shared = *event;
    atomic_store(&stage, 1);
    /* Wait (bounded) while the other thread tries it. */
    for (int i = 0; i < 5000 && atomic_load(&stage) != 2; i++) sleep_ms(1);
    CHECK_EQ_INT(atomic_load(&stage), 2);
    atomic_store(&stage, 0);
    /* Still ours: readable and deferrable here. */
    AgentStr json = {0};
    CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &json));
    CHECK_HAS(json.ptr, "\"type\":\"message_end\"");
    return AGENT_LISTENER_CONTINUE;
}

/* A later listener that defers: the other thread must not take its deferral either. */
static AgentListenerAnswer defers(void *ud, const AgentEvent *event) {
    (void)ud;
    AgentReply reply;
    CHECK_OK(agent_event_defer(event, &reply));
    CHECK_OK(agent_reply_continue(reply));
    return AGENT_LISTENER_LATER;
}

static void *watch(void *arg) {
    (void)arg;
    while (!atomic_load(&stop_watcher)) {
        if (atomic_load(&stage) == 1) {
            check_refused(&shared);
            atomic_fetch_add(&checked_during, 1);
            atomic_store(&stage, 2);
        }
        sleep_us(200);
    }
    return NULL;
}

static void test_another_thread_is_refused_during_the_callback(void) {
    AgentHandle agent = scripted_agent();
    uint64_t sub1, sub2;
    CHECK_OK(agent_subscribe(agent, hand_to_other_thread, NULL, NULL, &sub1));
    CHECK_OK(agent_subscribe(agent, defers, NULL, NULL, &sub2));
    pthread_t watcher;
    CHECK(pthread_create(&watcher, NULL, watch, NULL) == 0);
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "x", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    atomic_store(&stop_watcher, true);
    pthread_join(watcher, NULL);
    CHECK_EQ_INT(atomic_load(&checked_during), 2); /* the user's and the assistant's message_end */
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
}

/* ------------------------------------------------ a deferred listener's event */

/* While a listener that deferred has not answered, the delivery goes on: its event stays
 * readable (the reply may be answered from any thread); once answered, it is refused. */
static AgentEvent deferred_event;
static AgentReply deferred_reply;
static atomic_int deferred_stage; /* 1: deferred; 2: answered */

static AgentListenerAnswer defer_message_end(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind != AGENT_EVENT_MESSAGE_END || atomic_load(&deferred_stage) != 0) return AGENT_LISTENER_CONTINUE;
    deferred_event = *event;
    CHECK_OK(agent_event_defer(event, &deferred_reply));
    atomic_store(&deferred_stage, 1);
    return AGENT_LISTENER_LATER;
}

static void test_a_deferred_event_is_readable_until_answered(void) {
    AgentHandle agent = scripted_agent();
    uint64_t sub;
    CHECK_OK(agent_subscribe(agent, defer_message_end, NULL, NULL, &sub));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "x", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_UNTIL(atomic_load(&deferred_stage) == 1);
    AgentStr json = {0};
    CHECK_OK(agent_event_json(&deferred_event, AGENT_EVENT_SHAPE_FULL, &json));
    CHECK_HAS(json.ptr, "\"type\":\"message_end\"");
    /* Reading, yes; deferring it again from here, no. */
    AgentReply again = {0};
    CHECK_ERR(agent_event_defer(&deferred_event, &again), AGENT_ERR_INVALID_ARGUMENT, STALE);
    CHECK_OK(agent_reply_continue(deferred_reply));
    WAIT_RUN(run);
    check_refused(&deferred_event);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
}

/* ------------------------------------------------ freed calls are not streams */

static AgentToolCall freed_tool_call;
static AgentHookCall freed_hook_call;
static AgentReply freed_reply;
static AgentStream freed_stream;

static void answering_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len,
                           AgentToolCall call) {
    (void)ud, (void)id, (void)id_len, (void)args, (void)args_len;
    freed_tool_call = call;
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", NTS));
}

static void answering_hook(void *ud, const char *input, size_t len, AgentHookCall call) {
    (void)ud, (void)input, (void)len;
    freed_hook_call = call;
    CHECK_OK(agent_hook_call_complete(call, NULL, 0));
}

static AgentListenerAnswer answering_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind != AGENT_EVENT_AGENT_START) return AGENT_LISTENER_CONTINUE;
    CHECK_OK(agent_event_defer(event, &freed_reply));
    CHECK_OK(agent_reply_continue(freed_reply));
    return AGENT_LISTENER_LATER;
}

static void answering_stream(void *ud, const char *request, size_t len, AgentStream stream) {
    (void)ud, (void)len;
    freed_stream = stream;
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    if (strstr(request, "\"role\":\"toolResult\"")) {
        CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", NTS));
    } else {
        CHECK_OK(agent_stream_push_toolcall_start(stream, 0, "c1", NTS, "t", NTS));
        CHECK_OK(agent_stream_push_toolcall_delta(stream, 0, "{}", 2));
        CHECK_OK(agent_stream_push_block_end(stream, AGENT_BLOCK_TOOLCALL, 0));
        CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"toolUse\"}", NTS));
    }
}

static void test_backlog_of_a_freed_call_of_another_kind(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_stream_fn(options, answering_stream, NULL, NULL));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_BEFORE_TOOL_CALL, answering_hook, NULL, NULL));
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"t\",\"parameters\":{\"type\":\"object\"}}", NTS, answering_tool, NULL, NULL, &tool));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    uint64_t sub;
    CHECK_OK(agent_subscribe(agent, answering_listener, NULL, NULL, &sub));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "x", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK(freed_tool_call.id && freed_hook_call.id && freed_reply.id && freed_stream.id);
    /* All four answered and retired; only the stream is a stream (closed: no backlog). */
    size_t backlog = 99;
    CHECK_OK(agent_stream_backlog(freed_stream, &backlog));
    CHECK_EQ_INT(backlog, 0);
    backlog = 99;
    CHECK_ERR(agent_stream_backlog((AgentStream){freed_tool_call.id}, &backlog), AGENT_ERR_INVALID_HANDLE,
              "not a stream");
    CHECK_ERR(agent_stream_backlog((AgentStream){freed_hook_call.id}, &backlog), AGENT_ERR_INVALID_HANDLE,
              "not a stream");
    CHECK_ERR(agent_stream_backlog((AgentStream){freed_reply.id}, &backlog), AGENT_ERR_INVALID_HANDLE,
              "not a stream");
    CHECK_EQ_INT(backlog, 99);
    /* Pushing into them is refused the same way (not as a closed stream). */
    CHECK_ERR(agent_stream_push((AgentStream){freed_tool_call.id}, "{\"type\":\"start\"}", NTS),
              AGENT_ERR_INVALID_HANDLE, "not a stream");
    /* And a freed stream is not a tool call. */
    CHECK_ERR(agent_tool_call_complete((AgentToolCall){freed_stream.id}, NULL, 0), AGENT_ERR_INVALID_HANDLE,
              "not a tool call");
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
}

/* With an argument, runs only the tests whose name contains it. */
int main(int argc, char **argv) {
    struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"a_kept_copy_is_refused_after_its_callback", test_a_kept_copy_is_refused_after_its_callback},
        {"another_thread_is_refused_during_the_callback", test_another_thread_is_refused_during_the_callback},
        {"a_deferred_event_is_readable_until_answered", test_a_deferred_event_is_readable_until_answered},
        {"backlog_of_a_freed_call_of_another_kind", test_backlog_of_a_freed_call_of_another_kind},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (argc < 2 || strstr(tests[i].name, argv[1])) tests[i].run();
    printf("test_stale_events: ok\n");
    return 0;
}

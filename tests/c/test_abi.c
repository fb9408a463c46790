/* The properties of ABI 1.0 (issue 16), each shown by a C program using only
 * <libagent/agent.h>: owned errors, run handles with outcomes, one call per event (and the
 * queue's same struct), host-pumped mode, texts as pointer + length, and the version check.
 * (Distinct call types are a compile-time property: tests/c/compile/, run by tests/c/run.sh.) */
#include "check.h"

#include <stdbool.h>

/* ---------------------------------------------------------------- version ---------------- */

static void test_version(void) {
    CHECK(strcmp(agent_version(), AGENT_VERSION_STRING) == 0);
    CHECK_OK(agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR));
    CHECK_OK(agent_version_check(1, 0));
    CHECK_ERR(agent_version_check(2, 0), AGENT_ERR_INVALID_STATE,
              "This program was built against libagent 2.0, but the loaded library is " AGENT_VERSION_STRING);
    CHECK_ERR(agent_version_check(1, 99), AGENT_ERR_INVALID_STATE, "install libagent 1.x at version 1.99 or newer");
    CHECK_ERR(agent_version_check(0, 9), AGENT_ERR_INVALID_STATE, "built against libagent 0.9");
}

/* ---------------------------------------------------------------- errors ----------------- */

static void *fail_elsewhere(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) {
        AgentError *e = agent_tool_free((AgentTool){0});
        CHECK(agent_error_code(e) == AGENT_ERR_INVALID_HANDLE);
        agent_error_free(e);
        e = agent_options_new("{", 1, &(AgentOptions){0});
        CHECK(agent_error_code(e) == AGENT_ERR_INVALID_JSON);
        agent_error_free(e);
    }
    return NULL;
}

static void stalled_stream(void *ud, const char *request, size_t len, AgentStream stream) {
    (void)request, (void)len;
    /* Handed to the test's thread (atomically: it polls for it), which answers later. */
    __atomic_store_n(&((AgentStream *)ud)->id, stream.id, __ATOMIC_RELEASE);
}

static void test_errors_owned(void) {
    AgentError *first = agent_options_new("{\"steeringMode\":5}", NTS, &(AgentOptions){0});
    CHECK(first != NULL);
    size_t len = 0;
    const char *text = agent_error_message(first, &len);
    char copy[512];
    CHECK(len > 0 && len < sizeof copy && strlen(text) == len);
    memcpy(copy, text, len + 1);
    CHECK_HAS(copy, "steeringMode");

    /* Other failures, on this thread and on four others, do not touch it. */
    AgentError *second = agent_tool_free((AgentTool){0});
    CHECK_EQ_INT(agent_error_code(second), AGENT_ERR_INVALID_HANDLE);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&threads[i], NULL, fail_elsewhere, NULL) == 0);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    CHECK_EQ_INT(agent_error_code(first), AGENT_ERR_INVALID_JSON);
    size_t len_after = 0;
    CHECK(agent_error_message(first, &len_after) == text);
    CHECK(len_after == len && strcmp(text, copy) == 0);
    CHECK(strcmp(agent_error_message(second, NULL), copy) != 0);
    agent_error_free(second);
    agent_error_free(first);

    /* NULL is "no error". */
    CHECK_EQ_INT(agent_error_code(NULL), AGENT_OK);
    CHECK(strcmp(agent_error_message(NULL, NULL), "") == 0);
    agent_error_free(NULL);

    /* Timeouts are results: NULL error, AGENT_WAIT_TIMEOUT / AGENT_NEXT_TIMEOUT. */
    AgentStream stream = {0};
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_stream_fn(options, stalled_stream, &stream, NULL));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    AgentQueue queue;
    CHECK_OK(agent_queue_open(agent, NULL, 0, &queue));
    AgentRun run;
    CHECK_OK(agent_prompt(agent, "\"hi\"", NTS, NULL, NULL, &run));
    WAIT_UNTIL(__atomic_load_n(&stream.id, __ATOMIC_ACQUIRE) != 0);
    AgentWaitResult wait = -1;
    CHECK(agent_run_wait(run, 0, &wait) == NULL);
    CHECK_EQ_INT(wait, AGENT_WAIT_TIMEOUT);
    CHECK(agent_run_wait(run, 5, &wait) == NULL);
    CHECK_EQ_INT(wait, AGENT_WAIT_TIMEOUT);
    CHECK(agent_wait_for_idle(agent, 0, &wait) == NULL);
    CHECK_EQ_INT(wait, AGENT_WAIT_TIMEOUT);
    AgentEvent event;
    AgentNext next = -1;
    while (agent_queue_next(queue, 0, &event, &next) == NULL && next == AGENT_NEXT_EVENT) {
    }
    CHECK_EQ_INT(next, AGENT_NEXT_TIMEOUT);
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_RUNNING);
    CHECK_OK(agent_stream_end(stream, NULL, 0)); /* no final message: an error message */
    WAIT_RUN(run);
    outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_MODEL_ERROR);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
    /* A freed agent closes its queue: a result, not an error. */
    do {
        CHECK(agent_queue_next(queue, WAIT_MS, &event, &next) == NULL);
    } while (next == AGENT_NEXT_EVENT);
    CHECK_EQ_INT(next, AGENT_NEXT_CLOSED);
    CHECK_OK(agent_queue_close(queue));
}

/* ---------------------------------------------------------------- run handles ------------ */

typedef struct {
    atomic_int calls;
    AgentRun run;
    AgentRunStatus status;
    char stop_reason[64];
    char error_message[128];
    size_t message_count;
} DoneRecord;

static void record_outcome(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    DoneRecord *record = ud;
    record->run = run;
    record->status = outcome->status;
    snprintf(record->stop_reason, sizeof record->stop_reason, "%.*s", (int)outcome->stop_reason.len,
             outcome->stop_reason.ptr);
    snprintf(record->error_message, sizeof record->error_message, "%.*s", (int)outcome->error_message.len,
             outcome->error_message.ptr);
    record->message_count = outcome->message_count;
    atomic_fetch_add(&record->calls, 1);
}

/* `done` got exactly the outcome agent_run_outcome reports. */
static void check_done_matches(const DoneRecord *record, AgentRun run) {
    CHECK_EQ_INT(atomic_load(&record->calls), 1);
    CHECK(record->run.id == run.id);
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(record->status, outcome.status);
    CHECK_STR(outcome.stop_reason, record->stop_reason);
    CHECK_STR(outcome.error_message, record->error_message);
    CHECK_EQ_INT(record->message_count, outcome.message_count);
}

static void test_run_handles(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(
        options,
        "[{\"content\":[{\"type\":\"text\",\"text\":\"first answer\"}]},"
        " {\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"model exploded\"},"
        " {\"content\":[{\"type\":\"text\",\"text\":\"partial\"}],\"waitForAbort\":true},"
        " {\"content\":[{\"type\":\"text\",\"text\":\"after\"}]}]",
        NTS));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));

    /* A completed run. */
    DoneRecord completed = {0};
    AgentRun first;
    CHECK_OK(agent_prompt_text(agent, "one", NTS, NULL, 0, record_outcome, &completed, &first));
    WAIT_RUN(first);
    AgentRunOutcome outcome = outcome_of(first);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_COMPLETED);
    CHECK_STR(outcome.stop_reason, "stop");
    CHECK_STR(outcome.error_message, "");
    CHECK_EQ_INT(outcome.message_count, 2);
    check_done_matches(&completed, first);
    char *messages = NULL;
    size_t messages_len = 0;
    CHECK_OK(agent_run_messages(first, &messages, &messages_len));
    CHECK(strlen(messages) == messages_len);
    CHECK(messages[0] == '[');
    CHECK_HAS(messages, "\"text\":\"one\"");
    CHECK_HAS(messages, "first answer");
    agent_string_free(messages);

    /* A run that ended with a model error. */
    DoneRecord failed = {0};
    AgentRun second;
    CHECK_OK(agent_prompt_text(agent, "two", NTS, NULL, 0, record_outcome, &failed, &second));
    WAIT_RUN(second);
    outcome = outcome_of(second);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_MODEL_ERROR);
    CHECK_STR(outcome.stop_reason, "error");
    CHECK_STR(outcome.error_message, "model exploded");
    CHECK_EQ_INT(outcome.message_count, 2);
    check_done_matches(&failed, second);
    /* Only this run's messages: not the first run's. */
    CHECK_OK(agent_run_messages(second, &messages, NULL));
    CHECK_HAS(messages, "\"text\":\"two\"");
    CHECK_NOT_HAS(messages, "first answer");
    agent_string_free(messages);

    /* An aborted run; a wait that times out first. */
    DoneRecord aborted = {0};
    AgentRun third;
    CHECK_OK(agent_prompt_text(agent, "three", NTS, NULL, 0, record_outcome, &aborted, &third));
    AgentWaitResult wait = -1;
    CHECK_OK(agent_run_wait(third, 10, &wait));
    CHECK_EQ_INT(wait, AGENT_WAIT_TIMEOUT);
    CHECK_EQ_INT(outcome_of(third).status, AGENT_RUN_RUNNING);
    CHECK_OK(agent_run_abort(third));
    WAIT_RUN(third);
    outcome = outcome_of(third);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_ABORTED);
    CHECK_STR(outcome.stop_reason, "aborted");
    CHECK_STR(outcome.error_message, "Request was aborted");
    CHECK_EQ_INT(outcome.message_count, 2);
    check_done_matches(&aborted, third);

    /* Aborting a settled run never reaches a later one. */
    AgentStream stream = {0};
    CHECK_OK(agent_set_stream_fn(agent, stalled_stream, &stream, NULL));
    DoneRecord later = {0};
    AgentRun fourth;
    CHECK_OK(agent_prompt_text(agent, "four", NTS, NULL, 0, record_outcome, &later, &fourth));
    WAIT_UNTIL(__atomic_load_n(&stream.id, __ATOMIC_ACQUIRE) != 0);
    CHECK_OK(agent_run_abort(first));
    CHECK_OK(agent_run_abort(third));
    bool is_aborted = true;
    CHECK_OK(agent_stream_is_aborted(stream, &is_aborted));
    CHECK(!is_aborted);
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"fine\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", NTS));
    WAIT_RUN(fourth);
    CHECK_EQ_INT(outcome_of(fourth).status, AGENT_RUN_COMPLETED);
    check_done_matches(&later, fourth);
    /* The earlier outcomes are still there, unchanged by the later run. */
    CHECK_EQ_INT(outcome_of(first).status, AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(outcome_of(second).status, AGENT_RUN_MODEL_ERROR);

    AgentRun runs[] = {first, second, third, fourth};
    for (int i = 0; i < 4; i++) CHECK_OK(agent_run_free(runs[i]));
    CHECK_ERR(agent_run_outcome(first, &outcome), AGENT_ERR_INVALID_HANDLE, "run");
    CHECK_ERR(agent_run_abort(first), AGENT_ERR_INVALID_HANDLE, "run");
    CHECK_OK(agent_free(agent));
}

/* ---------------------------------------------------------------- events ----------------- */

#define MAX_EVENTS 256

typedef struct {
    int count;
    AgentEventType kinds[MAX_EVENTS];
    AgentUpdateType updates[MAX_EVENTS];
    size_t indexes[MAX_EVENTS];
    char text[256];          /* the text_delta texts, concatenated */
    char tool_args[256];     /* the toolcall_delta texts, concatenated */
    char tool_call_id[64];   /* from tool_execution_start */
    char tool_name[64];
    char end_json[4096];     /* agent_event_json of message_end (lean) */
} EventLog;

static void log_event(EventLog *log, const AgentEvent *event) {
    CHECK(log->count < MAX_EVENTS);
    log->kinds[log->count] = event->kind;
    log->updates[log->count] = event->update;
    log->indexes[log->count] = event->content_index;
    log->count++;
    if (event->kind != AGENT_EVENT_MESSAGE_UPDATE) {
        CHECK_EQ_INT(event->update, AGENT_UPDATE_NONE);
        CHECK_EQ_INT(event->delta.len, 0);
    }
    if (event->update == AGENT_UPDATE_TEXT_DELTA)
        strncat(log->text, event->delta.ptr, event->delta.len);
    if (event->update == AGENT_UPDATE_TOOLCALL_DELTA)
        strncat(log->tool_args, event->delta.ptr, event->delta.len);
    if (event->kind == AGENT_EVENT_TOOL_EXECUTION_START) {
        snprintf(log->tool_call_id, sizeof log->tool_call_id, "%.*s", (int)event->tool_call_id.len,
                 event->tool_call_id.ptr);
        snprintf(log->tool_name, sizeof log->tool_name, "%.*s", (int)event->tool_name.len, event->tool_name.ptr);
    }
    if (event->kind == AGENT_EVENT_MESSAGE_END && !log->end_json[0]) {
        AgentStr json = {0};
        CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        CHECK(strlen(json.ptr) == json.len && json.len < sizeof log->end_json);
        memcpy(log->end_json, json.ptr, json.len + 1);
    }
}

static AgentListenerAnswer logging_listener(void *ud, const AgentEvent *event) {
    log_event(ud, event);
    return AGENT_LISTENER_CONTINUE;
}

static atomic_int replied, done_saw_reply;

static void *reply_later(void *arg) {
    AgentReply *reply = arg;
    sleep_ms(20);
    atomic_store(&replied, 1);
    CHECK_OK(agent_reply_continue(*reply));
    CHECK_ERR(agent_reply_continue(*reply), AGENT_ERR_ALREADY_COMPLETED, "already");
    return NULL;
}

static AgentReply deferred_reply;
static pthread_t reply_thread;

/* Answers agent_end later, from another thread: the run waits for it. */
static AgentListenerAnswer deferring_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind != AGENT_EVENT_AGENT_END) return AGENT_LISTENER_CONTINUE;
    CHECK_OK(agent_event_defer(event, &deferred_reply));
    CHECK_ERR(agent_event_defer(event, &deferred_reply), AGENT_ERR_INVALID_STATE, "already called");
    CHECK(pthread_create(&reply_thread, NULL, reply_later, &deferred_reply) == 0);
    return AGENT_LISTENER_LATER;
}

static void done_after_reply(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run, (void)outcome;
    atomic_store(&done_saw_reply, atomic_load(&replied) + 1);
}

static void echo_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)ud, (void)id, (void)id_len, (void)args_len;
    CHECK_HAS(args, "\"city\":\"Oslo\"");
    CHECK_OK(agent_tool_call_update(call, "{\"content\":[{\"type\":\"text\",\"text\":\"working\"}]}", NTS));
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"sunny\"}]}", NTS));
}

static int index_of(const EventLog *log, AgentEventType kind, AgentUpdateType update, int from) {
    for (int i = from; i < log->count; i++)
        if (log->kinds[i] == kind && log->updates[i] == update) return i;
    return -1;
}

static void test_events(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(
        options,
        "[{\"content\":[{\"type\":\"text\",\"text\":\"Hello there\",\"chunks\":3},"
        "{\"type\":\"toolCall\",\"id\":\"call-1\",\"name\":\"weather\",\"arguments\":{\"city\":\"Oslo\"},\"chunks\":2}],"
        "\"stopReason\":\"toolUse\"},"
        " {\"content\":[{\"type\":\"text\",\"text\":\"It is sunny\"}]}]",
        NTS));
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"weather\",\"parameters\":{\"type\":\"object\"}}", NTS, echo_tool, NULL, NULL, &tool));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    static EventLog heard, pulled;
    uint64_t sub1, sub2;
    CHECK_OK(agent_subscribe(agent, logging_listener, &heard, NULL, &sub1));
    CHECK_OK(agent_subscribe(agent, deferring_listener, NULL, NULL, &sub2));
    AgentQueue queue;
    CHECK_OK(agent_queue_open(agent, "{\"capacity\":8}", NTS, &queue));

    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "weather?", NTS, NULL, 0, done_after_reply, NULL, &run));
    /* The queue (capacity 8) is drained here while the run goes on: the same structs. */
    for (;;) {
        AgentEvent event;
        AgentNext next;
        CHECK_OK(agent_queue_next(queue, WAIT_MS, &event, &next));
        CHECK_EQ_INT(next, AGENT_NEXT_EVENT);
        log_event(&pulled, &event);
        AgentReply reply;
        CHECK_ERR(agent_event_defer(&event, &reply), AGENT_ERR_INVALID_STATE, "queue");
        if (event.kind == AGENT_EVENT_AGENT_END) break;
    }
    WAIT_RUN(run);
    pthread_join(reply_thread, NULL);
    /* done came after the deferred answer. */
    CHECK_EQ_INT(atomic_load(&done_saw_reply), 2);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);

    /* The listener heard the text in three deltas, the arguments' text, the tool's events. */
    CHECK(strcmp(heard.text, "Hello thereIt is sunny") == 0);
    CHECK(strcmp(heard.tool_args, "{\"city\":\"Oslo\"}") == 0);
    CHECK(strcmp(heard.tool_call_id, "call-1") == 0);
    CHECK(strcmp(heard.tool_name, "weather") == 0);
    int text_deltas = 0, tool_deltas = 0;
    for (int i = 0; i < heard.count; i++) {
        if (heard.updates[i] == AGENT_UPDATE_TEXT_DELTA) text_deltas++;
        if (heard.updates[i] == AGENT_UPDATE_TOOLCALL_DELTA) {
            tool_deltas++;
            CHECK_EQ_INT(heard.indexes[i], 1); /* the tool call is the second block */
        }
    }
    CHECK_EQ_INT(text_deltas, 3 + 1);
    CHECK_EQ_INT(tool_deltas, 2);
    CHECK_EQ_INT(heard.kinds[0], AGENT_EVENT_AGENT_START);
    CHECK_EQ_INT(heard.kinds[heard.count - 1], AGENT_EVENT_AGENT_END);
    int start = index_of(&heard, AGENT_EVENT_MESSAGE_START, AGENT_UPDATE_NONE, 1); /* the assistant's */
    int text_start = index_of(&heard, AGENT_EVENT_MESSAGE_UPDATE, AGENT_UPDATE_TEXT_START, 0);
    int text_end = index_of(&heard, AGENT_EVENT_MESSAGE_UPDATE, AGENT_UPDATE_TEXT_END, 0);
    int call_start = index_of(&heard, AGENT_EVENT_MESSAGE_UPDATE, AGENT_UPDATE_TOOLCALL_START, 0);
    int call_end = index_of(&heard, AGENT_EVENT_MESSAGE_UPDATE, AGENT_UPDATE_TOOLCALL_END, 0);
    int exec_start = index_of(&heard, AGENT_EVENT_TOOL_EXECUTION_START, AGENT_UPDATE_NONE, 0);
    int exec_update = index_of(&heard, AGENT_EVENT_TOOL_EXECUTION_UPDATE, AGENT_UPDATE_NONE, 0);
    int exec_end = index_of(&heard, AGENT_EVENT_TOOL_EXECUTION_END, AGENT_UPDATE_NONE, 0);
    CHECK(start >= 0 && start < text_start && text_start < text_end && text_end < call_start);
    CHECK(call_start < call_end && call_end < exec_start && exec_start < exec_update && exec_update < exec_end);
    CHECK_EQ_INT(heard.indexes[call_start], 1);
    /* The JSON, built on request. */
    CHECK_HAS(heard.end_json, "\"type\":\"message_end\"");
    CHECK_HAS(heard.end_json, "\"role\":\"user\"");

    /* The queue saw the same events, as the same structs. */
    CHECK_EQ_INT(pulled.count, heard.count);
    for (int i = 0; i < heard.count; i++) {
        CHECK_EQ_INT(pulled.kinds[i], heard.kinds[i]);
        CHECK_EQ_INT(pulled.updates[i], heard.updates[i]);
        CHECK_EQ_INT(pulled.indexes[i], heard.indexes[i]);
    }
    CHECK(strcmp(pulled.text, heard.text) == 0);
    CHECK(strcmp(pulled.tool_args, heard.tool_args) == 0);
    CHECK(strcmp(pulled.tool_call_id, heard.tool_call_id) == 0);
    CHECK(strcmp(pulled.end_json, heard.end_json) == 0);

    CHECK_OK(agent_queue_close(queue));
    CHECK_OK(agent_unsubscribe(agent, sub1));
    CHECK_OK(agent_unsubscribe(agent, sub2));
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
}

/* ---------------------------------------------------------------- host-pumped mode ------- */

static pthread_t pump_thread;
static atomic_int off_pump; /* callbacks seen on another thread */
static atomic_int pumped_stream, pumped_tool, pumped_hook, pumped_listener, pumped_done, pumped_finalizer;
static atomic_int tool_answered_later;

static void on_pump(atomic_int *counter) {
    if (!pthread_equal(pthread_self(), pump_thread)) atomic_fetch_add(&off_pump, 1);
    atomic_fetch_add(counter, 1);
}

static void pumped_stream_fn(void *ud, const char *request, size_t len, AgentStream stream) {
    (void)ud, (void)len;
    on_pump(&pumped_stream);
    CHECK(!agent_is_runtime_thread());
    if (strstr(request, "\"role\":\"toolResult\"")) {
        CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
        CHECK_OK(agent_stream_push_block_start(stream, AGENT_BLOCK_TEXT, 0));
        CHECK_OK(agent_stream_push_text_delta(stream, 0, "done", 4));
        CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", NTS));
    } else {
        CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
        CHECK_OK(agent_stream_push_toolcall_start(stream, 0, "c1", NTS, "slow", NTS));
        CHECK_OK(agent_stream_push_toolcall_delta(stream, 0, "{}", 2));
        CHECK_OK(agent_stream_push_block_end(stream, AGENT_BLOCK_TOOLCALL, 0));
        CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"toolUse\"}", NTS));
    }
}

static void *answer_tool_later(void *arg) {
    AgentToolCall call = *(AgentToolCall *)arg;
    free(arg);
    sleep_ms(20);
    atomic_store(&tool_answered_later, 1);
    CHECK_OK(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"late\"}]}", NTS));
    return NULL;
}

static pthread_t tool_thread;

static void pumped_tool_fn(void *ud, const char *id, size_t id_len, const char *args, size_t args_len,
                           AgentToolCall call) {
    (void)ud, (void)id, (void)id_len, (void)args, (void)args_len;
    on_pump(&pumped_tool);
    AgentToolCall *copy = malloc(sizeof *copy);
    *copy = call;
    CHECK(pthread_create(&tool_thread, NULL, answer_tool_later, copy) == 0);
}

static void pumped_hook_fn(void *ud, const char *input, size_t len, AgentHookCall call) {
    (void)ud, (void)input, (void)len;
    on_pump(&pumped_hook);
    CHECK_OK(agent_hook_call_complete(call, NULL, 0));
}

static AgentListenerAnswer pumped_listener_fn(void *ud, const AgentEvent *event) {
    (void)ud, (void)event;
    on_pump(&pumped_listener);
    return AGENT_LISTENER_CONTINUE;
}

static void pumped_done_fn(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    on_pump(&pumped_done);
    CHECK_EQ_INT(outcome->status, AGENT_RUN_COMPLETED);
}

static void pumped_finalizer_fn(void *ud) {
    (void)ud;
    on_pump(&pumped_finalizer);
}

static int pumped_total(void) {
    return atomic_load(&pumped_stream) + atomic_load(&pumped_tool) + atomic_load(&pumped_hook) +
           atomic_load(&pumped_listener) + atomic_load(&pumped_done);
}

static atomic_int slow_calls;

static AgentListenerAnswer slow_listener(void *ud, const AgentEvent *event) {
    (void)ud, (void)event;
    if (!pthread_equal(pthread_self(), pump_thread)) atomic_fetch_add(&off_pump, 1);
    atomic_fetch_add(&slow_calls, 1);
    sleep_ms(2);
    return AGENT_LISTENER_CONTINUE;
}

static void test_host_pumped(void) {
    pump_thread = pthread_self();
    AgentDispatcher dispatcher;
    CHECK_OK(agent_dispatcher_new(&dispatcher));
    AgentOptions options;
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
    CHECK_OK(agent_options_set_stream_fn(options, pumped_stream_fn, NULL, pumped_finalizer_fn));
    CHECK_OK(agent_options_set_hook(options, AGENT_HOOK_BEFORE_TOOL_CALL, pumped_hook_fn, NULL, NULL));
    AgentTool tool;
    CHECK_OK(agent_tool_new("{\"name\":\"slow\",\"parameters\":{\"type\":\"object\"}}", NTS, pumped_tool_fn, NULL, NULL, &tool));
    CHECK_OK(agent_options_add_tool(options, tool));
    CHECK_OK(agent_tool_free(tool));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    uint64_t sub;
    CHECK_OK(agent_subscribe(agent, pumped_listener_fn, NULL, NULL, &sub));

    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, pumped_done_fn, NULL, &run));
    /* Something is ready, yet nothing ran: callbacks wait for agent_dispatch. */
    AgentWaitResult ready = -1;
    CHECK_OK(agent_dispatcher_wait(dispatcher, WAIT_MS, &ready));
    CHECK_EQ_INT(ready, AGENT_WAIT_DONE);
    sleep_ms(20);
    CHECK_EQ_INT(pumped_total(), 0);
    /* Pump until the run settled (the tool answers from its own thread meanwhile). */
    size_t dispatched = 0;
    while (atomic_load(&pumped_done) == 0) {
        CHECK_OK(agent_dispatcher_wait(dispatcher, WAIT_MS, &ready));
        CHECK_EQ_INT(ready, AGENT_WAIT_DONE);
        size_t ran = 0;
        CHECK_OK(agent_dispatch(dispatcher, -1, &ran));
        dispatched += ran;
    }
    CHECK_EQ_INT(atomic_load(&pumped_tool), 1);
    pthread_join(tool_thread, NULL);
    CHECK_EQ_INT(atomic_load(&tool_answered_later), 1);
    WAIT_RUN(run);
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(outcome.message_count, 4); /* user, tool call, tool result, answer */
    CHECK_EQ_INT(atomic_load(&pumped_stream), 2);
    CHECK_EQ_INT(atomic_load(&pumped_tool), 1);
    CHECK_EQ_INT(atomic_load(&pumped_hook), 1);
    CHECK(atomic_load(&pumped_listener) >= 10);
    CHECK_EQ_INT(atomic_load(&pumped_done), 1);
    CHECK(dispatched > 0);
    CHECK_EQ_INT(atomic_load(&off_pump), 0);
    CHECK_OK(agent_run_free(run));

    /* A frame budget: four agents on the dispatcher, every listener call sleeping 2 ms; with a
     * 1 ms budget each dispatch gives the thread back after the first listener call (an agent's
     * run yields after the event that spent the budget), though more work is ready. */
    AgentHandle agents[4];
    AgentRun runs[4];
    for (int i = 0; i < 4; i++) {
        CHECK_OK(agent_options_new(NULL, 0, &options));
        CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
        CHECK_OK(agent_options_set_scripted_model(
            options, "[{\"content\":[{\"type\":\"text\",\"text\":\"abcdef\",\"chunks\":3}]}]", NTS));
        CHECK_OK(agent_new(options, &agents[i]));
        CHECK_OK(agent_subscribe(agents[i], slow_listener, NULL, NULL, &sub));
        CHECK_OK(agent_prompt_text(agents[i], "x", NTS, NULL, 0, NULL, NULL, &runs[i]));
    }
    /* Each prompt queued its agent's task: four are ready, one 1 ms frame delivers one event. */
    size_t first_frame = 0;
    CHECK_OK(agent_dispatch(dispatcher, 1, &first_frame));
    CHECK_EQ_INT(first_frame, 1);
    CHECK_EQ_INT(atomic_load(&slow_calls), 1);
    int running = 0;
    for (int i = 0; i < 4; i++) running += outcome_of(runs[i]).status == AGENT_RUN_RUNNING;
    CHECK(running >= 3);
    CHECK_OK(agent_dispatcher_wait(dispatcher, 0, &ready));
    CHECK_EQ_INT(ready, AGENT_WAIT_DONE);
    int frames = 0;
    for (;;) {
        int settled = 0;
        for (int i = 0; i < 4; i++) settled += outcome_of(runs[i]).status != AGENT_RUN_RUNNING;
        if (settled == 4) break;
        CHECK_OK(agent_dispatcher_wait(dispatcher, WAIT_MS, &ready));
        size_t ran = 0;
        int calls_before = atomic_load(&slow_calls);
        CHECK_OK(agent_dispatch(dispatcher, 1, &ran));
        if (ran == 0) continue;
        frames++;
        /* Steps that call no listener may run too; a second 2 ms call never starts. */
        CHECK(atomic_load(&slow_calls) - calls_before <= 1);
    }
    CHECK(atomic_load(&slow_calls) >= 4 * 10);
    CHECK(frames >= 3);
    CHECK_EQ_INT(atomic_load(&off_pump), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(outcome_of(runs[i]).status, AGENT_RUN_COMPLETED);
        CHECK_OK(agent_run_free(runs[i]));
        CHECK_OK(agent_free(agents[i]));
    }

    /* Freeing the agent: its finalizers too run only inside a dispatch, on this thread. */
    CHECK_OK(agent_free(agent));
    for (int i = 0; i < 100 && atomic_load(&pumped_finalizer) == 0; i++) {
        CHECK_OK(agent_dispatch(dispatcher, -1, NULL));
        if (atomic_load(&pumped_finalizer) == 0) sleep_ms(2);
    }
    CHECK_EQ_INT(atomic_load(&pumped_finalizer), 1);
    CHECK_EQ_INT(atomic_load(&off_pump), 0);
    CHECK_OK(agent_dispatcher_free(dispatcher));
    CHECK_ERR(agent_dispatch(dispatcher, 0, NULL), AGENT_ERR_INVALID_HANDLE, "dispatcher");
}

/* A host-pumped agent freed right after its run was aborted, with callbacks of the run still
 * queued for the next frame: the free neither hangs nor lets a queued callback run later; `done`
 * comes once, on this thread, and the finalizers run. */
static atomic_int freed_events, freed_done, freed_done_status, freed_finalized;
enum { STREAMED_BEFORE_ABORT = 10 };

static AgentListenerAnswer count_freed_event(void *ud, const AgentEvent *event) {
    (void)ud, (void)event;
    if (!pthread_equal(pthread_self(), pump_thread)) atomic_fetch_add(&off_pump, 1);
    atomic_fetch_add(&freed_events, 1);
    return AGENT_LISTENER_CONTINUE;
}

static void freed_done_fn(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    if (!pthread_equal(pthread_self(), pump_thread)) atomic_fetch_add(&off_pump, 1);
    atomic_store(&freed_done_status, outcome->status);
    atomic_fetch_add(&freed_done, 1);
}

static void freed_finalizer(void *ud) {
    (void)ud;
    if (!pthread_equal(pthread_self(), pump_thread)) atomic_fetch_add(&off_pump, 1);
    atomic_fetch_add(&freed_finalized, 1);
}

static void test_host_pumped_free_after_abort(void) {
    pump_thread = pthread_self();
    atomic_store(&off_pump, 0);
    AgentDispatcher dispatcher;
    CHECK_OK(agent_dispatcher_new(&dispatcher));
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_dispatcher(options, dispatcher));
    CHECK_OK(agent_options_set_scripted_model(
        options, "[{\"content\":[{\"type\":\"text\",\"text\":\"abcdef\",\"chunks\":3}],\"waitForAbort\":true}]",
        NTS));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    uint64_t sub;
    CHECK_OK(agent_subscribe(agent, count_freed_event, NULL, freed_finalizer, &sub));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "x", NTS, NULL, 0, freed_done_fn, NULL, &run));
    /* Pump until the model has streamed all it streams before waiting for the abort: agent_start,
     * turn_start, the prompt's message_start and message_end, then message_start and five
     * message_update of the reply (text_start, three deltas, text_end). The model waits in lock
     * step with the listener, so nothing more comes until the abort. */
    for (int i = 0; i < 3000 && atomic_load(&freed_events) < STREAMED_BEFORE_ABORT; i++) {
        AgentWaitResult ready;
        CHECK_OK(agent_dispatcher_wait(dispatcher, 10, &ready));
        CHECK_OK(agent_dispatch(dispatcher, -1, NULL));
    }
    CHECK_EQ_INT(atomic_load(&freed_events), STREAMED_BEFORE_ABORT);
    CHECK_OK(agent_run_abort(run));
    /* Handshake: a callback is ready, and it can only be one of the abort's (the reply's end),
     * queued for the next frame. The run has not settled; it cannot before a dispatch. */
    AgentWaitResult queued;
    CHECK_OK(agent_dispatcher_wait(dispatcher, WAIT_MS, &queued));
    CHECK_EQ_INT(queued, AGENT_WAIT_DONE);
    int events_before_free = atomic_load(&freed_events);
    CHECK_EQ_INT(events_before_free, STREAMED_BEFORE_ABORT);
    CHECK_OK(agent_free(agent));
    CHECK_EQ_INT(atomic_load(&freed_done), 0); /* freed outside a dispatch: queued for the next */
    for (int i = 0; i < 50; i++) {
        CHECK_OK(agent_dispatch(dispatcher, -1, NULL));
        if (atomic_load(&freed_finalized) == 0) sleep_ms(2);
    }
    CHECK_EQ_INT(atomic_load(&freed_events), events_before_free); /* nothing ran after the free */
    CHECK_EQ_INT(atomic_load(&freed_done), 1);
    /* The run had not settled (its abort's callbacks were still queued): freed, as the header says. */
    CHECK_EQ_INT(atomic_load(&freed_done_status), AGENT_RUN_FREED);
    CHECK_EQ_INT(atomic_load(&freed_finalized), 1);
    CHECK_EQ_INT(atomic_load(&off_pump), 0);
    WAIT_RUN(run);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_dispatcher_free(dispatcher));
}

/* An event stays readable for its whole callback even when another thread frees the agent
 * meanwhile: agent_free drops the handle at once and then waits for the callback to return. */
static AgentHandle racing_agent;
static atomic_int racing_stage; /* 1: the listener is inside its callback; 2: the handle is gone */
static atomic_int racing_json_ok;

static void *free_racing_agent(void *arg) {
    (void)arg;
    while (atomic_load(&racing_stage) < 1) sleep_ms(1);
    CHECK_OK(agent_free(racing_agent));
    return NULL;
}

static AgentListenerAnswer read_while_freed(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind != AGENT_EVENT_MESSAGE_START || atomic_load(&racing_stage) != 0) return AGENT_LISTENER_CONTINUE;
    atomic_store(&racing_stage, 1);
    /* Wait (bounded) until the other thread's agent_free has dropped the handle. */
    for (int i = 0; i < 2000; i++) {
        size_t count = 0;
        AgentError *error = agent_get_message_count(racing_agent, &count);
        if (error) {
            CHECK_EQ_INT(agent_error_code(error), AGENT_ERR_INVALID_HANDLE);
            agent_error_free(error);
            atomic_store(&racing_stage, 2);
            break;
        }
        sleep_ms(1);
    }
    AgentStr json = {0};
    AgentError *error = agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &json);
    if (!error && json.len > 0 && strstr(json.ptr, "\"type\":\"message_start\"")) atomic_store(&racing_json_ok, 1);
    agent_error_free(error);
    return AGENT_LISTENER_CONTINUE;
}

static void test_event_readable_while_agent_freed(void) {
    AgentOptions options;
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]", NTS));
    CHECK_OK(agent_new(options, &racing_agent));
    uint64_t sub;
    CHECK_OK(agent_subscribe(racing_agent, read_while_freed, NULL, NULL, &sub));
    pthread_t freer;
    CHECK(pthread_create(&freer, NULL, free_racing_agent, NULL) == 0);
    CHECK_OK(agent_prompt_text(racing_agent, "x", NTS, NULL, 0, NULL, NULL, NULL));
    pthread_join(freer, NULL);
    CHECK_EQ_INT(atomic_load(&racing_stage), 2);
    CHECK_EQ_INT(atomic_load(&racing_json_ok), 1);
}

/* ---------------------------------------------------------------- ptr + len texts -------- */

static void slice_stream(void *ud, const char *request, size_t len, AgentStream stream) {
    (void)ud;
    CHECK(strlen(request) == len);
    /* Events cut out of one larger buffer: none of them is NUL-terminated where it ends. */
    static const char *pieces[] = {"{\"type\":\"start\"}", "{\"type\":\"text_start\",\"contentIndex\":0}",
                                   "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"sliced\"}",
                                   "{\"type\":\"done\",\"reason\":\"stop\"}"};
    char buffer[256];
    size_t lens[4], used = 0;
    for (int i = 0; i < 4; i++) {
        lens[i] = strlen(pieces[i]);
        memcpy(buffer + used, pieces[i], lens[i]);
        used += lens[i];
    }
    memset(buffer + used, '}', sizeof buffer - used); /* no NUL anywhere after the last one */
    const char *at = buffer;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(agent_stream_push(stream, at, lens[i]));
        at += lens[i];
    }
}

static void test_texts(void) {
    AgentOptions options;
    /* Options JSON followed by junk that is not part of it. */
    const char options_json[] = "{\"initialState\":{\"systemPrompt\":\"brief\"}}GARBAGE";
    CHECK_OK(agent_options_new(options_json, strlen(options_json) - 7, &options));
    CHECK_OK(agent_options_set_stream_fn(options, slice_stream, NULL, NULL));
    AgentHandle agent;
    CHECK_OK(agent_new(options, &agent));
    /* A prompt taken from the middle of a larger buffer. */
    const char buffer[] = "xxxxHELLO WORLDyyyy";
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, buffer + 4, 11, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    char *messages = NULL;
    CHECK_OK(agent_run_messages(run, &messages, NULL));
    CHECK_HAS(messages, "\"text\":\"HELLO WORLD\"");
    CHECK_NOT_HAS(messages, "yyyy");
    CHECK_HAS(messages, "\"text\":\"sliced\"");
    agent_string_free(messages);
    CHECK_OK(agent_run_free(run));
    /* A JSON prompt cut short of its trailing text; a length that cuts JSON makes it invalid. */
    const char json_prompt[] = "\"second\"\"third\"";
    CHECK_OK(agent_prompt(agent, json_prompt, 8, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_OK(agent_run_messages(run, &messages, NULL));
    CHECK_HAS(messages, "\"text\":\"second\"");
    CHECK_NOT_HAS(messages, "third");
    agent_string_free(messages);
    CHECK_OK(agent_run_free(run));
    CHECK_ERR(agent_prompt(agent, json_prompt, 5, NULL, NULL, &run), AGENT_ERR_INVALID_JSON, "not valid JSON");
    /* A NUL inside the given length is part of the text (invalid JSON here), not its end. */
    CHECK_ERR(agent_configure(agent, "{}\0{", 4), AGENT_ERR_INVALID_JSON, "not valid JSON");
    /* Invalid UTF-8 within the length is refused; bytes past it are not read. */
    CHECK_ERR(agent_prompt_text(agent, "ab\xff", 3, NULL, 0, NULL, NULL, &run), AGENT_ERR_INVALID_UTF8, "UTF-8");
    CHECK_OK(agent_steer(agent, "{\"role\":\"user\",\"content\":\"ok\"}\xff", 30));
    CHECK_OK(agent_clear_all_queues(agent));
    /* A NULL text with a length is refused. */
    CHECK_ERR(agent_prompt_text(agent, NULL, 3, NULL, 0, NULL, NULL, &run), AGENT_ERR_NULL, "NULL");
    CHECK_OK(agent_free(agent));
}

int main(void) {
    test_version();
    test_errors_owned();
    test_run_handles();
    test_events();
    test_host_pumped();
    test_host_pumped_free_after_abort();
    test_event_readable_while_agent_freed();
    test_texts();
    printf("test_abi: ok\n");
    return 0;
}

/* Context management through the C ABI (issue 27): the `compaction` and `retry` options, an
 * overflow recovered by one compaction and two overloads retried (events in order, on a listener
 * and on a pull queue, with their JSON), the AGENT_HOOK_COMPACT hook supplying, cancelling and
 * failing a summary, agent_compact (manual, with a focus; BUSY during a run; its argument
 * checks), and option errors naming the member. */
#include "check.h"

#define WINDOWED_MODEL "{\"id\":\"m1\",\"api\":\"faux\",\"provider\":\"test\",\"contextWindow\":200000}"
#define PAIR(i)                                                                                    \
    "{\"role\":\"user\",\"content\":\"question " #i " with enough words to be summarized\",\"timestamp\":1}," \
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"answer " #i                   \
    " with enough words too\"}],\"api\":\"faux\",\"provider\":\"test\",\"model\":\"m1\","            \
    "\"stopReason\":\"stop\",\"timestamp\":1}"
#define HISTORY "[" PAIR(1) "," PAIR(2) "," PAIR(3) "," PAIR(4) "]"
#define OPTIONS(extra)                                                                              \
    "{\"initialState\":{\"systemPrompt\":\"Be terse.\",\"model\":" WINDOWED_MODEL                  \
    ",\"messages\":" HISTORY "},\"compaction\":{\"enabled\":true,\"keepRecentTokens\":20},"         \
    "\"retry\":{\"enabled\":true,\"baseDelayMs\":1,\"maxDelayMs\":2}" extra "}"
#define OVERLOADED "{\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"529 overloaded_error: Overloaded\"}"
#define OVERFLOW                                                                                   \
    "{\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"prompt is too long: 213462 tokens > 200000 maximum\"}"
#define DONE "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}"

/* The compact hook: answers what `answer` holds (NULL: nothing), or fails when it is "!fail". */
typedef struct {
    const char *answer;
    atomic_int calls;
    char last_input[4096];
} CompactHook;

static void compact_hook(void *ud, const char *input, size_t len, AgentHookCall call) {
    CompactHook *hook = ud;
    atomic_fetch_add(&hook->calls, 1);
    CHECK(strlen(input) == len);
    snprintf(hook->last_input, sizeof hook->last_input, "%s", input);
    if (hook->answer && strcmp(hook->answer, "!fail") == 0) {
        CHECK_OK(agent_hook_call_fail(call, "the host's summarizer is down", NTS));
    } else {
        CHECK_OK(agent_hook_call_complete(call, hook->answer, hook->answer ? NTS : 0));
    }
}

/* Records each event's kind and full JSON (the context events only). */
typedef struct {
    int kinds[64];
    int count;
    char json[8][512];
    int json_count;
} Seen;

static AgentListenerAnswer record(void *ud, const AgentEvent *event) {
    Seen *seen = ud;
    if (seen->count < 64) seen->kinds[seen->count++] = event->kind;
    if (event->kind >= AGENT_EVENT_COMPACTION_START && event->kind <= AGENT_EVENT_AUTO_RETRY_END &&
        seen->json_count < 8) {
        AgentStr json;
        CHECK_OK(agent_event_json(event, AGENT_EVENT_SHAPE_FULL, &json));
        snprintf(seen->json[seen->json_count++], 512, "%s", json.ptr);
    }
    return AGENT_LISTENER_CONTINUE;
}

static AgentHandle new_agent(const char *options_json, const char *script, CompactHook *hook) {
    AgentOptions opts = {0};
    CHECK_OK(agent_options_new(options_json, NTS, &opts));
    CHECK_OK(agent_options_set_scripted_model(opts, script, NTS));
    CHECK_OK(agent_options_set_hook(opts, AGENT_HOOK_COMPACT, compact_hook, hook, NULL));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(opts, &agent));
    return agent;
}

static size_t message_count(AgentHandle agent) {
    size_t count = 0;
    CHECK_OK(agent_get_message_count(agent, &count));
    return count;
}

static uint64_t listener_id;

static int context_kinds(const Seen *seen, int *out) {
    int n = 0;
    for (int i = 0; i < seen->count; i++) {
        if (seen->kinds[i] >= AGENT_EVENT_COMPACTION_START) out[n++] = seen->kinds[i];
    }
    return n;
}

static void overflow_and_overloads_recover(void) {
    CompactHook hook = {.answer = "{\"summary\":\"The user asked four questions.\"}"};
    AgentHandle agent = new_agent(OPTIONS(""), "[" OVERFLOW "," OVERLOADED "," OVERLOADED "," DONE "]", &hook);
    Seen seen = {0};
    CHECK_OK(agent_subscribe(agent, record, &seen, NULL, &listener_id));
    AgentQueue queue = {0};
    CHECK_OK(agent_queue_open(agent, NULL, 0, &queue));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "and now?", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    CHECK_EQ_INT(atomic_load(&hook.calls), 1);
    CHECK_HAS(hook.last_input, "\"reason\":\"overflow\"");
    CHECK_HAS(hook.last_input, "\"messagesToSummarize\":[");

    int kinds[16];
    int n = context_kinds(&seen, kinds);
    int expected[] = {AGENT_EVENT_COMPACTION_START, AGENT_EVENT_COMPACTION_END, AGENT_EVENT_AUTO_RETRY_START,
                      AGENT_EVENT_AUTO_RETRY_START, AGENT_EVENT_AUTO_RETRY_END};
    CHECK_EQ_INT(n, 5);
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(kinds[i], expected[i]);
    CHECK_HAS(seen.json[0], "{\"type\":\"compaction_start\",\"reason\":\"overflow\"}");
    CHECK_HAS(seen.json[1], "\"type\":\"compaction_end\",\"reason\":\"overflow\",\"result\":{");
    CHECK_HAS(seen.json[1], "\"summary\":\"The user asked four questions.\"");
    CHECK_HAS(seen.json[1], "\"aborted\":false,\"willRetry\":true}");
    CHECK_HAS(seen.json[2], "\"attempt\":1,\"maxAttempts\":3,\"delayMs\":1,");
    CHECK_HAS(seen.json[3], "\"attempt\":2,\"maxAttempts\":3,\"delayMs\":2,");
    CHECK_HAS(seen.json[4], "{\"type\":\"auto_retry_end\",\"success\":true,\"attempt\":2}");

    /* The pull queue saw the same events in the same order. */
    int queued = 0;
    int agent_ends = 0;
    for (;;) {
        AgentEvent event;
        AgentNext next;
        CHECK_OK(agent_queue_next(queue, 0, &event, &next));
        if (next != AGENT_NEXT_EVENT) break;
        if (event.kind == AGENT_EVENT_AGENT_END) agent_ends++;
        if (event.kind >= AGENT_EVENT_COMPACTION_START) {
            CHECK(queued < 5);
            CHECK_EQ_INT(event.kind, expected[queued]);
            AgentStr json;
            CHECK_OK(agent_event_json(&event, AGENT_EVENT_SHAPE_LEAN, &json));
            CHECK(strstr(seen.json[queued], json.ptr) != NULL);
            queued++;
        }
    }
    CHECK_EQ_INT(queued, 5);
    CHECK_EQ_INT(agent_ends, 4); /* one pass per attempt */
    CHECK_OK(agent_queue_close(queue));

    char *messages = NULL;
    CHECK_OK(agent_get_messages(agent, 0, SIZE_MAX, &messages, NULL));
    CHECK_HAS(messages, "\"role\":\"compactionSummary\"");
    CHECK_NOT_HAS(messages, "overloaded_error");
    CHECK_NOT_HAS(messages, "prompt is too long");
    agent_string_free(messages);
    CHECK_OK(agent_free(agent));
}

static void manual_compaction_with_a_focus(void) {
    CompactHook hook = {.answer = "{\"summary\":\"Four questions, answered.\",\"details\":{\"note\":1}}"};
    AgentHandle agent = new_agent(OPTIONS(""), "[" DONE "]", &hook);
    Seen seen = {0};
    CHECK_OK(agent_subscribe(agent, record, &seen, NULL, &listener_id));
    size_t before = message_count(agent);
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_compact(agent, "keep the API design", NTS, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    CHECK_HAS(hook.last_input, "\"reason\":\"manual\"");
    CHECK_HAS(hook.last_input, "\"focus\":\"keep the API design\"");
    CHECK(message_count(agent) < before);
    CHECK_EQ_INT(seen.count, 2);
    CHECK_EQ_INT(seen.kinds[0], AGENT_EVENT_COMPACTION_START);
    CHECK_EQ_INT(seen.kinds[1], AGENT_EVENT_COMPACTION_END);
    CHECK_HAS(seen.json[1], "\"reason\":\"manual\"");
    CHECK_HAS(seen.json[1], "\"details\":{\"note\":1}");

    /* Nothing older than what is kept is left: the run fails and says so. */
    hook.answer = NULL;
    CHECK_OK(agent_compact(agent, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_FAILED);
    CHECK_HAS(outcome.error_message.ptr, "Nothing to compact");
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
}

static void a_hook_that_cancels_or_fails_changes_nothing(void) {
    CompactHook hook = {.answer = "{\"cancel\":true}"};
    AgentHandle agent = new_agent(OPTIONS(""), "[" DONE "]", &hook);
    char *before = NULL;
    CHECK_OK(agent_get_messages(agent, 0, SIZE_MAX, &before, NULL));
    AgentRun run;
    CHECK_OK(agent_compact(agent, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_ABORTED);
    CHECK_OK(agent_run_free(run));

    hook.answer = "!fail";
    Seen seen = {0};
    CHECK_OK(agent_subscribe(agent, record, &seen, NULL, &listener_id));
    CHECK_OK(agent_compact(agent, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    AgentRunOutcome outcome = outcome_of(run);
    CHECK_EQ_INT(outcome.status, AGENT_RUN_FAILED);
    CHECK_HAS(outcome.error_message.ptr, "the host's summarizer is down");
    CHECK_OK(agent_run_free(run));
    CHECK_HAS(seen.json[1], "\"aborted\":false,\"willRetry\":false,\"errorMessage\":\"Compaction failed: ");

    char *after = NULL;
    CHECK_OK(agent_get_messages(agent, 0, SIZE_MAX, &after, NULL));
    CHECK(strcmp(before, after) == 0);
    agent_string_free(before);
    agent_string_free(after);
    CHECK_OK(agent_free(agent));
}

/* A listener that holds the run until released: agent_compact meanwhile is BUSY. */
static atomic_int release;
static AgentListenerAnswer hold(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind == AGENT_EVENT_AGENT_START) WAIT_UNTIL(atomic_load(&release));
    return AGENT_LISTENER_CONTINUE;
}

static void compact_arguments_are_checked(void) {
    CompactHook hook = {.answer = NULL};
    AgentHandle agent = new_agent(OPTIONS(""), "[" DONE "]", &hook);
    CHECK_ERR(agent_compact(agent, "\xff\xfe", 2, NULL, NULL, NULL), AGENT_ERR_INVALID_UTF8, "focus");
    CHECK_ERR(agent_compact(agent, NULL, 3, NULL, NULL, NULL), AGENT_ERR_NULL, "focus");
    AgentHandle forged = {agent.id + 1000};
    CHECK(code_of(agent_compact(forged, NULL, 0, NULL, NULL, NULL)) == AGENT_ERR_INVALID_HANDLE);
    CHECK_OK(agent_subscribe(agent, hold, NULL, NULL, &listener_id));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "hi", NTS, NULL, 0, NULL, NULL, &run));
    CHECK_ERR(agent_compact(agent, NULL, 0, NULL, NULL, NULL), AGENT_ERR_BUSY, "compacting");
    atomic_store(&release, 1);
    WAIT_RUN(run);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_free(agent));
    CHECK(code_of(agent_compact(agent, NULL, 0, NULL, NULL, NULL)) == AGENT_ERR_INVALID_HANDLE);
}

static void options_name_the_member(void) {
    AgentOptions opts = {0};
    CHECK_ERR(agent_options_new("{\"compaction\":{\"reserve\":1}}", NTS, &opts), AGENT_ERR_INVALID_JSON,
              "compaction.reserve");
    CHECK_ERR(agent_options_new("{\"retry\":{\"maxRetries\":-1}}", NTS, &opts), AGENT_ERR_INVALID_JSON,
              "\"maxRetries\"");
    CHECK_ERR(agent_options_new("{\"retry\":true}", NTS, &opts), AGENT_ERR_INVALID_JSON, "\"retry\"");
    CompactHook hook = {.answer = NULL};
    AgentHandle agent = new_agent(OPTIONS(""), "[" DONE "]", &hook);
    CHECK_ERR(agent_configure(agent, "{\"compaction\":{\"enabled\":\"yes\"}}", NTS), AGENT_ERR_INVALID_JSON,
              "\"enabled\"");
    CHECK_OK(agent_configure(agent, "{\"retry\":{\"maxRetries\":5}}", NTS));
    char *state = state_of(agent);
    CHECK_HAS(state, "\"retry\":{\"enabled\":true,\"baseDelayMs\":1,\"maxDelayMs\":2,\"maxRetries\":5}");
    agent_string_free(state);
    CHECK_OK(agent_free(agent));
}

int main(void) {
    overflow_and_overloads_recover();
    manual_compaction_with_a_focus();
    a_hook_that_cancels_or_fails_changes_nothing();
    compact_arguments_are_checked();
    options_name_the_member();
    printf("test_compaction: ok\n");
    return 0;
}

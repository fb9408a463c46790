/* One run whose response streams N deltas of one kind, through the C ABI, with a listener that
 * reads what the README's listener reads (type, update type, delta). tests/cost/run.py runs it
 * under callgrind for N, 2N and 4N and compares the instructions the extra deltas cost: linear
 * work doubles, work that re-scans or re-copies what was streamed so far quadruples (or worse),
 * whether or not it allocates.
 *
 * usage: stream_work N [SCENARIO...]   runs each scenario (default: all) with N, 2N and 4N
 *                        deltas; under callgrind each run's instructions are dumped apart
 *                        (CALLGRIND_DUMP_STATS_AT "SCENARIO DELTAS")
 *   text-json     text_delta events pushed as JSON
 *   text-typed    text deltas through agent_stream_push_text_delta
 *   thinking      thinking deltas (typed)
 *   toolcall      one tool call whose string argument grows by one delta at a time (typed)
 *   toolcall-json the same, pushed as JSON events
 *   transcript    no deltas: the agent starts from N remove/re-add cycles of tool declarations in
 *                 system messages, which the prompt replays to declare its own tools
 *   prompts       N prompts to one agent, each answered with one short text: a prompt must cost
 *                 the same on a long transcript as on a short one
 *   prompts-set   the same on a transcript the host set (a system message declaring a tool):
 *                 each request reads the transcript's tool declarations */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include <libagent/agent.h>

static const char *scenario;
static int deltas;
static int requests;

static void check(AgentError *error, const char *what) {
    if (error) {
        fprintf(stderr, "stream_work: %s failed (%d): %s\n", what, agent_error_code(error), agent_error_message(error, NULL));
        exit(1);
    }
}

static void stream(void *ud, const char *request, size_t request_len, AgentStream s) {
    (void)ud, (void)request, (void)request_len;
    check(agent_stream_push(s, "{\"type\":\"start\"}", AGENT_NTS), "start");
    if (!strncmp(scenario, "prompts", 7)) {
        check(agent_stream_push_block_start(s, AGENT_BLOCK_TEXT, 0), "block_start");
        check(agent_stream_push_text_delta(s, 0, "abcdefgh", 8), "delta");
        check(agent_stream_push_block_end(s, AGENT_BLOCK_TEXT, 0), "block_end");
        check(agent_stream_push(s, "{\"type\":\"done\",\"reason\":\"stop\"}", AGENT_NTS), "done");
        return;
    }
    if (requests++ > 0 || !strcmp(scenario, "transcript")) { /* the turn after the tool call */
        check(agent_stream_push(s, "{\"type\":\"done\",\"reason\":\"stop\"}", AGENT_NTS), "done");
        return;
    }
    int tool = !strncmp(scenario, "toolcall", 8), json = strstr(scenario, "json") != NULL;
    AgentBlockKind kind = tool ? AGENT_BLOCK_TOOLCALL : !strcmp(scenario, "thinking") ? AGENT_BLOCK_THINKING : AGENT_BLOCK_TEXT;
    if (tool) {
        check(agent_stream_push_toolcall_start(s, 0, "call_1", AGENT_NTS, "note", AGENT_NTS), "toolcall_start");
        if (json) check(agent_stream_push(s, "{\"type\":\"toolcall_delta\",\"contentIndex\":0,\"delta\":\"{\\\"text\\\": \\\"\"}", AGENT_NTS), "delta");
        else check(agent_stream_push_toolcall_delta(s, 0, "{\"text\": \"", 10), "delta");
    } else {
        check(agent_stream_push_block_start(s, kind, 0), "block_start");
    }
    for (int i = 0; i < deltas; i++) {
        if (json && tool) check(agent_stream_push(s, "{\"type\":\"toolcall_delta\",\"contentIndex\":0,\"delta\":\"abcdefgh\"}", AGENT_NTS), "delta");
        else if (json) check(agent_stream_push(s, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"abcdefgh\"}", AGENT_NTS), "delta");
        else if (tool) check(agent_stream_push_toolcall_delta(s, 0, "abcdefgh", 8), "delta");
        else if (kind == AGENT_BLOCK_THINKING) check(agent_stream_push_thinking_delta(s, 0, "abcdefgh", 8), "delta");
        else check(agent_stream_push_text_delta(s, 0, "abcdefgh", 8), "delta");
    }
    if (tool) check(agent_stream_push_toolcall_delta(s, 0, "\"}", 2), "delta");
    check(agent_stream_push_block_end(s, kind, 0), "block_end");
    check(agent_stream_push(s, tool ? "{\"type\":\"done\",\"reason\":\"toolUse\"}" : "{\"type\":\"done\",\"reason\":\"stop\"}", AGENT_NTS), "done");
}

static void note_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud, (void)id;
    if (strlen(args) < (size_t)deltas * 8) {
        fprintf(stderr, "stream_work: the tool got %zu bytes of arguments\n", strlen(args));
        exit(1);
    }
    check(agent_tool_call_complete(call, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"details\":{}}", AGENT_NTS), "tool answer");
}

static size_t seen;
static AgentListenerAnswer listener(void *ud, const AgentEvent *e) {
    (void)ud;
    seen += e->delta.len; /* one call per event: the struct carries the delta */
    return AGENT_LISTENER_CONTINUE;
}

/* The options, with `cycles` remove/re-add cycles of tool declarations as the initial messages. */
static char *options_json(int cycles) {
    size_t size = 256 + (size_t)cycles * 320, used = 0;
    char *text = malloc(size);
    used += snprintf(text + used, size - used,
                     "{\"initialState\":{\"model\":{\"id\":\"m\",\"api\":\"a\",\"provider\":\"p\"},\"messages\":[");
    for (int i = 0; i < cycles; i++) {
        used += snprintf(text + used, size - used,
                         "%s{\"role\":\"system\",\"content\":\"\",\"timestamp\":%d,\"toolsAdded\":["
                         "{\"name\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}},"
                         "{\"name\":\"x%d\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}],"
                         "\"toolsRemoved\":[{\"name\":\"t\"}]},"
                         "{\"role\":\"user\",\"content\":\"u\",\"timestamp\":%d}",
                         i ? "," : "", i, i, i);
    }
    snprintf(text + used, size - used, "]}}");
    return text;
}

/* One agent, one run of `n` deltas of `name` (or `n` transcript cycles, or `n` prompts), freed
 * again: everything the runs cost. */
static void run(const char *name, int n) {
    scenario = name;
    int transcript = !strcmp(name, "transcript"), prompts = !strncmp(name, "prompts", 7);
    deltas = transcript || prompts ? 0 : n;
    requests = 0;
    seen = 0;
    AgentOptions options;
    char *json = options_json(transcript ? n : 0);
    check(agent_options_new(json, AGENT_NTS, &options), "options");
    free(json);
    check(agent_options_set_stream_fn(options, stream, NULL, NULL), "stream fn");
    AgentTool tool;
    check(agent_tool_new("{\"name\":\"note\",\"parameters\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}}", AGENT_NTS,
                         note_tool, NULL, NULL, &tool), "tool");
    check(agent_options_add_tool(options, tool), "add tool");
    check(agent_tool_free(tool), "tool free");
    AgentHandle agent;
    check(agent_new(options, &agent), "agent");
    uint64_t id;
    check(agent_subscribe(agent, listener, NULL, NULL, &id), "subscribe");
    if (!strcmp(name, "prompts-set")) {
        const char *set = "[{\"role\":\"system\",\"content\":\"s\",\"timestamp\":0,\"toolsAdded\":"
                          "[{\"name\":\"note\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}]}]";
        check(agent_set_messages(agent, set, AGENT_NTS), "set messages");
    }
    AgentWaitResult waited;
    size_t before = 0, messages = 0;
    check(agent_get_message_count(agent, &before), "message count");
    for (int i = 0; i < (prompts ? n : 1); i++) {
        check(agent_prompt(agent, "\"go\"", AGENT_NTS, NULL, NULL, NULL), "prompt");
        check(agent_wait_for_idle(agent, -1, &waited), "wait");
    }
    check(agent_get_message_count(agent, &messages), "message count");
    /* Two messages per prompt; on a set transcript, the first request may declare the tool. */
    if (prompts && (messages - before < (size_t)n * 2 || messages - before > (size_t)n * 2 + 1)) {
        fprintf(stderr, "stream_work: prompts: the transcript gained %zu messages\n", messages - before);
        exit(1);
    }
    check(agent_free(agent), "free");
    if (seen < (size_t)deltas * 8) {
        fprintf(stderr, "stream_work: %s: the listener saw %zu bytes of deltas\n", name, seen);
        exit(1);
    }
}

int main(int argc, char **argv) {
    static const char *all[] = {"text-json", "text-typed", "thinking", "toolcall", "toolcall-json", "transcript", "prompts",
                                "prompts-set"};
    int n = argc >= 2 ? atoi(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: stream_work N [SCENARIO...]\n");
        return 2;
    }
    const char **scenarios = argc > 2 ? (const char **)argv + 2 : all;
    size_t count = argc > 2 ? (size_t)argc - 2 : sizeof all / sizeof all[0];
    for (size_t i = 0; i < count; i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) known |= !strcmp(scenarios[i], all[k]);
        if (!known) {
            fprintf(stderr, "stream_work: no scenario '%s'\n", scenarios[i]);
            return 2;
        }
        run(scenarios[i], n / 4); /* warm-up: one-time initialisation is not counted */
        for (int k = 1; k <= 4; k *= 2) {
            char label[64];
            snprintf(label, sizeof label, "%s %d", scenarios[i], k * n);
            CALLGRIND_ZERO_STATS;
            run(scenarios[i], k * n);
            CALLGRIND_DUMP_STATS_AT(label);
        }
    }
    printf("stream_work %d: ok\n", n);
    return 0;
}

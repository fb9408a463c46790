/* The coding pack's grep over a tree of N, 2N and 4N files and read of a file of N, 2N and 4N
 * lines (offset near the end, a few lines shown), each a tool call the scripted stream function
 * below asks for, run by an agent through the C ABI. tests/cost/run.py lays the trees out
 * (ROOT/grep-<files>/, ROOT/read-<lines>/big.txt) and runs this under callgrind; the tool's
 * answer must reach the model's next request.
 *
 * usage: coding_work ROOT SCENARIO=N...   each scenario at N, 2N and 4N; under callgrind each
 *                                         run's instructions are dumped apart
 *                                         (CALLGRIND_DUMP_STATS_AT "SCENARIO SIZE")
 *   grep   pattern `needle[0-9]+` over the whole tree: one match, in its middle file
 *   read   big.txt from line SIZE-20, 10 lines */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include <libagent/agent.h>

static char args[256];     /* the tool call's arguments */
static char expected[64];  /* text the tool's answer must hold */
static const char *tool;
static int requests, answered;

static void check(AgentError *error, const char *what) {
    if (error) {
        fprintf(stderr, "coding_work: %s failed (%d): %s\n", what, agent_error_code(error), agent_error_message(error, NULL));
        exit(1);
    }
}

static void stream(void *ud, const char *request, size_t request_len, AgentStream s) {
    (void)ud, (void)request_len;
    check(agent_stream_push(s, "{\"type\":\"start\"}", AGENT_NTS), "start");
    if (requests++ > 0) { /* the turn after the tool call: its answer is in the request */
        answered = strstr(request, expected) != NULL;
        check(agent_stream_push(s, "{\"type\":\"done\",\"reason\":\"stop\"}", AGENT_NTS), "done");
        return;
    }
    check(agent_stream_push_toolcall_start(s, 0, "call_1", AGENT_NTS, tool, AGENT_NTS), "toolcall_start");
    check(agent_stream_push_toolcall_delta(s, 0, args, strlen(args)), "toolcall_delta");
    check(agent_stream_push_block_end(s, AGENT_BLOCK_TOOLCALL, 0), "block_end");
    check(agent_stream_push(s, "{\"type\":\"done\",\"reason\":\"toolUse\"}", AGENT_NTS), "done");
}

/* One agent with the pack for `dir`, one tool call, freed again. */
static void run(const char *root, const char *scenario, int size) {
    char dir[512];
    int grep = !strcmp(scenario, "grep");
    snprintf(dir, sizeof dir, "%s/%s-%d", root, scenario, size);
    tool = grep ? "grep" : "read";
    if (grep) {
        snprintf(args, sizeof args, "{\"pattern\":\"needle[0-9]+\",\"path\":\".\"}");
        snprintf(expected, sizeof expected, "needle%07d", size / 2);
    } else {
        snprintf(args, sizeof args, "{\"path\":\"big.txt\",\"offset\":%d,\"limit\":10}", size - 20);
        snprintf(expected, sizeof expected, "line%07d", size - 20);
    }
    requests = answered = 0;
    AgentOptions options;
    check(agent_options_new("{\"initialState\":{\"model\":{\"id\":\"m\",\"api\":\"a\",\"provider\":\"p\"}}}", AGENT_NTS, &options),
          "options");
    check(agent_options_set_stream_fn(options, stream, NULL, NULL), "stream fn");
    AgentTool tools[7];
    size_t count = 0;
    check(agent_coding_tools_new(dir, AGENT_NTS, "{\"tools\":[\"read\",\"grep\"]}", AGENT_NTS, NULL, NULL, NULL, tools, 7, &count),
          "coding tools");
    for (size_t i = 0; i < count; i++) {
        check(agent_options_add_tool(options, tools[i]), "add tool");
        check(agent_tool_free(tools[i]), "tool free");
    }
    AgentHandle agent;
    check(agent_new(options, &agent), "agent");
    check(agent_prompt(agent, "\"go\"", AGENT_NTS, NULL, NULL, NULL), "prompt");
    AgentWaitResult waited;
    check(agent_wait_for_idle(agent, -1, &waited), "wait");
    check(agent_free(agent), "free");
    if (requests != 2 || !answered) {
        fprintf(stderr, "coding_work: %s %d: the model's second request (%d requests) lacks \"%s\"\n", scenario, size,
                requests, expected);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: coding_work ROOT SCENARIO=N...\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        char scenario[16];
        int n = 0;
        if (sscanf(argv[i], "%15[a-z]=%d", scenario, &n) != 2 || n <= 0) {
            fprintf(stderr, "coding_work: '%s' is not SCENARIO=N\n", argv[i]);
            return 2;
        }
        run(argv[1], scenario, n); /* warm-up: one-time initialisation (and the page cache) not counted */
        for (int k = 1; k <= 4; k *= 2) {
            char label[64];
            snprintf(label, sizeof label, "%s %d", scenario, k * n);
            CALLGRIND_ZERO_STATS;
            run(argv[1], scenario, k * n);
            CALLGRIND_DUMP_STATS_AT(label);
        }
    }
    puts("coding_work: ok");
    return 0;
}

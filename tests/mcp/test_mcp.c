/* MCP servers' tools through the C ABI (tests/mcp/run.sh sets the environment):
 * - real servers: @modelcontextprotocol/server-everything and server-filesystem over stdio and a
 *   server written with PyPI's `mcp` over streamable HTTP, their tools called by an agent driven
 *   by the scripted model; the tool names are written to $MCP_NAMES_OUT for run.sh to compare
 *   with the reference's (tests/mcp/reference_names.json);
 * - hostile servers (tests/mcp/hostile/server.py): each ends in a clear error or a bounded,
 *   refused result, the other tools keep working, and no process outlives agent_mcp_close. */
#include "../c/check.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *env(const char *name) {
    const char *value = getenv(name);
    if (!value || !*value) FAIL("%s is not set (run tests/mcp/run.sh)", name);
    return value;
}

#define TOOL_CALL(id, name, args) \
    "{\"content\":[{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":" args "}]," \
    "\"stopReason\":\"toolUse\"},"

static char *servers_of(AgentMcp mcp) {
    char *json = NULL;
    CHECK_OK(agent_mcp_servers_json(mcp, &json, NULL));
    return json;
}

/* An agent made from `options` (consumed), prompted once; returns its messages after the run. */
static char *run_options(AgentOptions options) {
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    char *messages = NULL;
    CHECK_OK(agent_get_messages(agent, 0, 1000, &messages, NULL));
    CHECK_OK(agent_free(agent));
    return messages;
}

/* The set's tools in an agent driven by `script`; returns the agent's messages after one run. */
static char *run_agent(AgentMcp mcp, const char *script) {
    AgentTool tools[128];
    size_t count = 0;
    CHECK_OK(agent_mcp_tools(mcp, tools, 128, &count));
    CHECK(count > 0);
    AgentOptions options = sequential_options_with(tools, count);
    CHECK_OK(agent_options_set_scripted_model(options, script, NTS));
    return run_options(options);
}

static void argument_checks(void) {
    AgentMcp mcp = {0};
    CHECK_ERR(agent_mcp_connect("{", NTS, &mcp), AGENT_ERR_INVALID_JSON, "config_json is not valid JSON");
    CHECK_ERR(agent_mcp_connect("{\"servers\":{}}", NTS, &mcp), AGENT_ERR_INVALID_JSON, "\"mcpServers\" object");
    CHECK_ERR(agent_mcp_connect("{\"mcpServers\":{}}", NTS, NULL), AGENT_ERR_NULL, "out_mcp");
    CHECK(mcp.id == 0);
    CHECK_ERR(agent_mcp_wait(mcp, 0, NULL), AGENT_ERR_INVALID_HANDLE, "mcp");
    /* Wrong entries are failed servers; a disabled one is not started. */
    CHECK_OK(agent_mcp_connect("{\"mcpServers\":{\"old\":{\"type\":\"sse\",\"url\":\"http://127.0.0.1:9/sse\"},"
                               "\"none\":{},\"off\":{\"command\":\"false\",\"enabled\":false},"
                               "\"bad name\":{\"command\":\"x\"},"
                               "\"unset\":{\"command\":\"x\",\"env\":{\"K\":\"${LIBAGENT_MCP_UNSET_VAR}\"}}}}",
                               NTS, &mcp));
    bool settled = false;
    CHECK_OK(agent_mcp_wait(mcp, 0, &settled));
    CHECK(settled);
    char *servers = servers_of(mcp);
    CHECK_HAS(servers, "{\"name\":\"old\",\"state\":\"failed\",\"toolCount\":0,\"lastError\":\"MCP server \\\"old\\\": "
                       "the legacy SSE transport is not supported");
    CHECK_HAS(servers, "\"name\":\"none\",\"state\":\"failed\"");
    CHECK_HAS(servers, "{\"name\":\"off\",\"state\":\"disabled\",\"toolCount\":0,\"lastError\":null");
    CHECK_HAS(servers, "The MCP server name \\\"bad name\\\" is not allowed");
    CHECK_HAS(servers, "${LIBAGENT_MCP_UNSET_VAR}, which is not set");
    agent_string_free(servers);
    size_t count = 99;
    CHECK_OK(agent_mcp_tool_count(mcp, &count));
    CHECK_EQ_INT(count, 0);
    CHECK_OK(agent_mcp_free(mcp));
    CHECK_ERR(agent_mcp_free(mcp), AGENT_ERR_INVALID_HANDLE, "mcp");
}

static void real_servers(void) {
    const char *modules = env("MCP_NODE_MODULES");
    const char *root = env("MCP_ROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/hello.txt", root);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("hello from the filesystem server\n", f);
    fclose(f);
    char config[4096];
    snprintf(config, sizeof config,
             "{\"mcpServers\":{"
             "\"everything\":{\"command\":\"node\",\"args\":[\"%s/@modelcontextprotocol/server-everything/dist/index.js\",\"stdio\"]},"
             "\"filesystem\":{\"type\":\"stdio\",\"command\":\"node\",\"args\":[\"%s/@modelcontextprotocol/server-filesystem/dist/index.js\",\"%s\"]},"
             "\"pyhttp\":{\"type\":\"http\",\"url\":\"%s\",\"headers\":{\"X-Test\":\"${HOME}\"}}}}",
             modules, modules, root, env("MCP_HTTP_URL"));
    AgentMcp mcp = {0};
    CHECK_OK(agent_mcp_connect(config, NTS, &mcp));
    bool settled = false;
    CHECK_OK(agent_mcp_wait(mcp, 60000, &settled));
    char *servers = servers_of(mcp);
    if (!settled || count_of(servers, "\"state\":\"ready\"") != 3) FAIL("servers: %s", servers);
    agent_string_free(servers);

    /* The names, for run.sh to compare with the reference's. */
    AgentTool tools[128];
    size_t count = 0;
    CHECK_OK(agent_mcp_tool_count(mcp, &count));
    CHECK_ERR(agent_mcp_tools(mcp, tools, 1, &count), AGENT_ERR_INVALID_ARGUMENT, "out_tools holds 1 tools");
    CHECK_OK(agent_mcp_tools(mcp, tools, 128, &count));
    for (size_t i = 0; i < count; i++) CHECK_OK(agent_tool_free(tools[i]));
    char *definitions = NULL;
    CHECK_OK(agent_mcp_tools_json(mcp, &definitions, NULL));
    CHECK_EQ_INT(count_of(definitions, "\"name\":\"mcp__"), count);
    CHECK_HAS(definitions, "\"label\":\"pyhttp/shout.text\"");
    FILE *names = fopen(env("MCP_NAMES_OUT"), "w");
    CHECK(names != NULL);
    fputs(definitions, names);
    fclose(names);
    agent_string_free(definitions);

    char script[4096];
    snprintf(script, sizeof script,
             "[" TOOL_CALL("call_echo", "mcp__everything__echo", "{\"message\":\"hi there\"}")
             TOOL_CALL("call_sum", "mcp__everything__get_sum", "{\"a\":2,\"b\":40}")
             TOOL_CALL("call_read", "mcp__filesystem__read_text_file", "{\"path\":\"%s\"}")
             TOOL_CALL("call_outside", "mcp__filesystem__read_text_file", "{\"path\":\"/etc/hostname\"}")
             TOOL_CALL("call_add", "mcp__pyhttp__add", "{\"a\":20,\"b\":22}")
             TOOL_CALL("call_shout", "mcp__pyhttp__shout_text", "{\"text\":\"quiet\"}")
             "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]",
             path);
    servers = servers_of(mcp);
    printf("real servers before the run: %s\n", servers);
    agent_string_free(servers);
    char *messages = run_agent(mcp, script);
    printf("real servers run: %s\n", messages);
    CHECK_HAS(messages, "Echo: hi there");
    CHECK_HAS(messages, "hello from the filesystem server");
    CHECK_HAS(messages, "\"text\":\"42\"");
    CHECK_HAS(messages, "\"text\":\"QUIET\"");
    CHECK_HAS(messages, "\"toolCallId\":\"call_outside\"");
    CHECK_HAS(messages, "Access denied");
    agent_string_free(messages);
    CHECK_OK(agent_mcp_close(mcp));
    servers = servers_of(mcp);
    CHECK_EQ_INT(count_of(servers, "\"state\":\"closed\""), 3);
    agent_string_free(servers);
    CHECK_OK(agent_mcp_free(mcp));
}

/* Whether `pid` still runs: a zombie (dead, waiting for its new parent to reap it) does not. */
static bool alive(pid_t pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return false;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *end = strrchr(stat, ')');
    return !(end && end[1] == ' ' && end[2] == 'Z');
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void hostile_servers(void) {
    const char *hostile = env("MCP_HOSTILE");
    const char *pid_file = env("MCP_PID_FILE");
    remove(pid_file);
    char config[4096];
/* Timeouts leave room for a loaded machine, where starting Python can take a second; the ones
 * the test waits for (initialize never answered, a call never answered) are short. */
#define SERVER_WITHIN(name, mode, seconds) \
    "\"" name "\":{\"command\":\"python3\",\"args\":[\"-S\",\"%s\",\"" mode "\"],\"timeout\":" #seconds "}"
#define SERVER(name, mode) SERVER_WITHIN(name, mode, 30)
    snprintf(config, sizeof config,
             "{\"mcpServers\":{" SERVER_WITHIN("noinit", "no-init", 2) "," SERVER("exits", "exit") ","
             SERVER_WITHIN("garbage", "garbage", 8) "," SERVER("endless", "endless-line") "," SERVER("tools", "tools") ","
             SERVER_WITHIN("quick", "tools", 8) "," SERVER("stubborn", "stubborn") "}}",
             hostile, hostile, hostile, hostile, hostile, hostile, hostile);
    AgentMcp mcp = {0};
    CHECK_OK(agent_mcp_connect(config, NTS, &mcp));
    bool settled = false;
    CHECK_OK(agent_mcp_wait(mcp, 30000, &settled));
    CHECK(settled);
    char *servers = servers_of(mcp);
    printf("hostile servers: %s\n", servers);
    CHECK_HAS(servers, "MCP server \\\"noinit\\\" did not answer initialize within 2 s.");
    CHECK_HAS(servers, "MCP server \\\"garbage\\\" did not answer initialize within 8 s.");
    CHECK_HAS(servers, "MCP server \\\"exits\\\" could not be initialized");
    CHECK_HAS(servers, "hostile: refusing to start (exit mode)");
    CHECK_HAS(servers, "It wrote to stdout a line that is not JSON-RPC: Starting hostile server, this is not JSON");
    CHECK_HAS(servers, "It sent a message longer than 16 MiB, the limit.");
    CHECK_HAS(servers, "{\"name\":\"tools\",\"state\":\"ready\",\"toolCount\":5,\"lastError\":null,"
                       "\"skipped\":[\"Tool \\\"bad_schema\\\" was left out: its input schema is not a valid JSON Schema");
    CHECK_HAS(servers, "{\"name\":\"stubborn\",\"state\":\"ready\",\"toolCount\":5");
    agent_string_free(servers);

    char *messages = run_agent(
        mcp, "[" TOOL_CALL("call_hang", "mcp__quick__hang", "{}")
        TOOL_CALL("call_echo1", "mcp__quick__echo", "{\"text\":\"after hang\"}")
        TOOL_CALL("call_huge", "mcp__tools__huge", "{}")
        TOOL_CALL("call_echo2", "mcp__tools__echo", "{\"text\":\"after huge\"}")
        TOOL_CALL("call_flood", "mcp__stubborn__flood", "{}")
        TOOL_CALL("call_echo3", "mcp__stubborn__echo", "{\"text\":\"during the flood\"}")
        "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]");
    printf("hostile run: %s\n", messages);
    CHECK_HAS(messages, "MCP tool quick/hang did not answer within 8 s (the server's timeout).");
    CHECK_HAS(messages, "echo: after hang");
    CHECK_HAS(messages, "lost its connection during the call of \\\"huge\\\"");
    CHECK_HAS(messages, "It sent a message longer than 16 MiB, the limit.");
    CHECK_HAS(messages, "echo: after huge");
    CHECK_HAS(messages, "flooding");
    CHECK_HAS(messages, "echo: during the flood");
    agent_string_free(messages);

    double start = now_s();
    CHECK_OK(agent_mcp_close(mcp));
    double took = now_s() - start;
    CHECK(took < 10);
    printf("hostile servers closed in %.2f s\n", took);
    CHECK_OK(agent_mcp_free(mcp));
    FILE *pids = fopen(pid_file, "r");
    CHECK(pids != NULL);
    int pid, seen = 0;
    while (fscanf(pids, "%d", &pid) == 1) {
        seen++;
        if (alive(pid)) FAIL("process %d outlived agent_mcp_close", pid);
    }
    fclose(pids);
    CHECK(seen >= 8); /* seven servers and the stubborn one's child (and reconnected servers) */
}

/* A set given to the options: the first prompt waits for the server still connecting, and a
 * tool the server adds (tools/list_changed) is there at the next turn. */
static void attached_set(void) {
    char config[1024];
    snprintf(config, sizeof config, "{\"mcpServers\":{" SERVER("tools", "tools") "}}", env("MCP_HOSTILE"));
    AgentMcp mcp = {0};
    CHECK_OK(agent_mcp_connect(config, NTS, &mcp));
    AgentOptions options = {0};
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_add_mcp(options, mcp));
    CHECK_OK(agent_mcp_free(mcp)); /* the options keep the set */
    CHECK_OK(agent_options_set_scripted_model(
        options,
        "[" TOOL_CALL("call_echo", "mcp__tools__echo", "{\"text\":\"first request\"}")
        TOOL_CALL("call_grow", "mcp__tools__grow", "{}")
        TOOL_CALL("call_extra", "mcp__tools__extra", "{}")
        "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]",
        NTS));
    char *messages = run_options(options); /* the agent, the set's last holder, kills the server */
    CHECK_HAS(messages, "echo: first request");
    CHECK_HAS(messages, "grown");
    CHECK_HAS(messages, "extra works");
    CHECK_NOT_HAS(messages, "\"isError\":true");
    agent_string_free(messages);
}

/* A call's progress notifications restart its timeout (a 6 s call on a server with a 2 s
 * timeout succeeds because it reports progress every 0.5 s), and an HTTP request answered with a
 * transient status (503) is sent again twice: the third attempt's answer is the result, and a
 * server that keeps failing fails the call after three. */
static void progress_and_retries(void) {
    char config[2048];
    snprintf(config, sizeof config,
             "{\"mcpServers\":{\"progress\":{\"command\":\"python3\",\"args\":[\"-S\",\"%s\",\"progress\"],"
             "\"timeout\":2},\"flaky\":{\"type\":\"http\",\"url\":\"%s\",\"timeout\":20}}}",
             env("MCP_HOSTILE"), env("MCP_FLAKY_URL"));
    AgentMcp mcp = {0};
    CHECK_OK(agent_mcp_connect(config, NTS, &mcp));
    bool settled = false;
    CHECK_OK(agent_mcp_wait(mcp, 30000, &settled));
    CHECK(settled);
    char *servers = servers_of(mcp);
    printf("progress and flaky servers: %s\n", servers);
    CHECK_HAS(servers, "{\"name\":\"progress\",\"state\":\"ready\",\"toolCount\":1");
    CHECK_HAS(servers, "{\"name\":\"flaky\",\"state\":\"ready\",\"toolCount\":2");
    agent_string_free(servers);
    char *messages = run_agent(
        mcp, "[" TOOL_CALL("call_slow", "mcp__progress__slow", "{}")
        TOOL_CALL("call_flaky", "mcp__flaky__flaky", "{}")
        TOOL_CALL("call_broken", "mcp__flaky__broken", "{}")
        "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]");
    printf("progress and retries run: %s\n", messages);
    CHECK_HAS(messages, "slow done");
    CHECK_HAS(messages, "flaky answered at attempt 3");
    CHECK_HAS(messages, "during the call of \\\"broken\\\": unexpected server response: HTTP status 503 Service Unavailable.");
    CHECK(strstr(messages, "rmcp::") == NULL); /* a sentence, not the transport's Rust types */
    agent_string_free(messages);
    CHECK_OK(agent_mcp_close(mcp));
    CHECK_OK(agent_mcp_free(mcp));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    argument_checks();
    real_servers();
    hostile_servers();
    attached_set();
    progress_and_retries();
    printf("test_mcp: ok\n");
    return 0;
}

/* The coding tool pack through the C ABI: agent_coding_tools_new's argument checks, a consent
 * hook that refuses one call now and allows another from another thread later, every tool of the
 * pack (read, write, edit, ls, find, grep, bash) running in an agent driven by the scripted model,
 * and a bash command aborted by the host and one stopped by its timeout (the pack's child process
 * and its only `unsafe`, watched by the sanitizers: tests/sanitizers/run.sh). */
#include "check.h"

#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void write_file(const char *rel, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static char *read_file(const char *rel) {
    static char buffer[4096];
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(buffer, 1, sizeof buffer - 1, f);
    buffer[n] = '\0';
    fclose(f);
    return buffer;
}

static atomic_int consent_calls;
static atomic_int finalized;

static AgentHookCall later_call;

static void *allow_later(void *arg) {
    (void)arg;
    sleep_ms(20);
    CHECK_OK(agent_hook_call_complete(later_call, "{\"allow\":true}", NTS));
    return NULL;
}

/* Refuses `write` at once; allows `edit` later, from another thread (the deferred reply). */
static void consent(void *user_data, const char *input_json, size_t input_len, AgentHookCall call) {
    (void)user_data, (void)input_len;
    atomic_fetch_add(&consent_calls, 1);
    CHECK_HAS(input_json, "\"toolCallId\":\"call_");
    if (strstr(input_json, "\"tool\":\"write\"")) {
        CHECK_HAS(input_json, "\"path\":\"x.txt\"");
        CHECK_HAS(input_json, "\"content\":\"new\"");
        CHECK_OK(agent_hook_call_fail(call, "The user said no.", NTS));
        return;
    }
    CHECK_HAS(input_json, "\"tool\":\"edit\"");
    later_call = call;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, allow_later, NULL) == 0);
    pthread_detach(thread);
}

static void on_finalize(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&finalized, 1);
}

static void argument_checks(void) {
    AgentTool tools[8];
    size_t count = 99;
    CHECK_ERR(agent_coding_tools_new(NULL, NTS, NULL, 0, NULL, NULL, NULL, tools, 8, &count), AGENT_ERR_NULL,
              "root");
    CHECK_ERR(agent_coding_tools_new("/nonexistent/libagent/root", NTS, NULL, 0, NULL, NULL, NULL, tools, 8,
                                     &count),
              AGENT_ERR_INVALID_ARGUMENT, "Cannot open the coding root");
    CHECK_ERR(agent_coding_tools_new(root, NTS, "{\"bash\":1}", NTS, NULL, NULL, NULL, tools, 8, &count),
              AGENT_ERR_INVALID_JSON, "\"bash\" must be true or false");
    CHECK_ERR(agent_coding_tools_new(root, NTS, "{\"tools\":[\"bash\"]}", NTS, NULL, NULL, NULL, tools, 8, &count),
              AGENT_ERR_INVALID_ARGUMENT, "bash tool is disabled");
    CHECK_ERR(agent_coding_tools_new(root, NTS, "{not json", NTS, NULL, NULL, NULL, tools, 8, &count),
              AGENT_ERR_INVALID_JSON, "options_json");
    CHECK_ERR(agent_coding_tools_new(root, NTS, NULL, 0, NULL, NULL, NULL, tools, 3, &count),
              AGENT_ERR_INVALID_ARGUMENT, "the pack has 6");
    CHECK_ERR(agent_coding_tools_new(root, NTS, NULL, 0, NULL, NULL, NULL, NULL, 8, &count), AGENT_ERR_NULL,
              "out_tools");
    CHECK_EQ_INT(count, 99);

    CHECK_OK(agent_coding_tools_new(root, NTS, "{\"bash\":true}", NTS, NULL, NULL, NULL, tools, 8, &count));
    CHECK_EQ_INT(count, 7);
    CHECK_ERR(agent_tool_set_prepare_arguments(tools[0], NULL, NULL, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "built-in");
    for (size_t i = 0; i < count; i++) CHECK_OK(agent_tool_free(tools[i]));
}

/* An agent with the whole pack (bash on, no consent hook) and the scripted model's `script`. */
static AgentHandle agent_with_all_tools(const char *script) {
    AgentTool tools[8];
    size_t count = 0;
    CHECK_OK(agent_coding_tools_new(root, NTS, "{\"bash\":true}", NTS, NULL, NULL, NULL, tools, 8, &count));
    CHECK_EQ_INT(count, 7);
    AgentOptions options = sequential_options_with(tools, count);
    CHECK_OK(agent_options_set_scripted_model(options, script, NTS));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

#define TOOL_CALL(id, name, args) \
    "{\"content\":[{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":" args "}]," \
    "\"stopReason\":\"toolUse\"},"

/* Each tool of the pack once, in one run; each result names what that tool found or did. */
static void every_tool(void) {
    CHECK(mkdir(strcat(strcpy((char[256]){0}, root), "/all"), 0700) == 0);
    write_file("all/notes.md", "alpha\nneedle here\nomega\n");
    write_file("all/other.txt", "nothing\n");
    AgentHandle agent = agent_with_all_tools(
        "[" TOOL_CALL("call_ls", "ls", "{\"path\":\"all\"}")
        TOOL_CALL("call_find", "find", "{\"pattern\":\"*.md\",\"path\":\"all\"}")
        TOOL_CALL("call_grep", "grep", "{\"pattern\":\"needle\",\"path\":\"all\"}")
        TOOL_CALL("call_read", "read", "{\"path\":\"all/notes.md\"}")
        TOOL_CALL("call_write", "write", "{\"path\":\"all/new.txt\",\"content\":\"fresh\\n\"}")
        TOOL_CALL("call_edit", "edit", "{\"path\":\"all/new.txt\",\"edits\":[{\"oldText\":\"fresh\",\"newText\":\"edited\"}]}")
        TOOL_CALL("call_bash", "bash", "{\"command\":\"cat all/new.txt; echo from-bash-$((6*7))\"}")
        "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]");
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(outcome_of(run).message_count, 16);
    CHECK_OK(agent_run_free(run));
    char *messages = NULL;
    CHECK_OK(agent_get_messages(agent, 0, 100, &messages, NULL));
    CHECK_NOT_HAS(messages, "\"isError\":true");
    CHECK_HAS(messages, "\"toolName\":\"ls\",\"content\":[{\"type\":\"text\",\"text\":\"notes.md\\nother.txt\"");
    CHECK_HAS(messages, "\"toolName\":\"find\",\"content\":[{\"type\":\"text\",\"text\":\"notes.md\"");
    CHECK_HAS(messages, "notes.md:2: needle here");
    CHECK_HAS(messages, "alpha\\nneedle here\\nomega");
    CHECK_HAS(messages, "Successfully replaced 1 block(s) in all/new.txt.");
    CHECK_HAS(messages, "edited\\nfrom-bash-42");
    agent_string_free(messages);
    CHECK(strcmp(read_file("all/new.txt"), "edited\n") == 0);
    CHECK_OK(agent_free(agent));
    const char *made[] = {"all/notes.md", "all/other.txt", "all/new.txt", "all"};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", root, made[i]);
        CHECK(remove(path) == 0);
    }
}

/* Set by the listener once bash reported progress: the command has been started. */
static atomic_int bash_started;

static AgentListenerAnswer watch_bash(void *user_data, const AgentEvent *event) {
    (void)user_data;
    if (event->kind == AGENT_EVENT_TOOL_EXECUTION_UPDATE && event->tool_name.len == 4 &&
        memcmp(event->tool_name.ptr, "bash", 4) == 0)
        atomic_store(&bash_started, 1);
    return AGENT_LISTENER_CONTINUE;
}

static double seconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* A long command ended by agent_abort once it runs (the listener's handshake, no sleep), and one
 * ended by its own timeout: both end the process long before its 60 s, with the reference's text. */
static void bash_abort_and_timeout(void) {
    AgentHandle agent = agent_with_all_tools(
        "[" TOOL_CALL("call_long", "bash", "{\"command\":\"echo started; sleep 60\"}")
        "{\"content\":[{\"type\":\"text\",\"text\":\"unreachable\"}]}]");
    uint64_t id = 0;
    CHECK_OK(agent_subscribe(agent, watch_bash, NULL, NULL, &id));
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_UNTIL(atomic_load(&bash_started));
    CHECK_OK(agent_abort(agent));
    WAIT_RUN(run);
    CHECK(seconds_since(&start) < 30);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_ABORTED);
    CHECK_OK(agent_run_free(run));
    char *messages = NULL;
    CHECK_OK(agent_get_messages(agent, 0, 100, &messages, NULL));
    CHECK_HAS(messages, "Command aborted");
    CHECK_NOT_HAS(messages, "unreachable");
    agent_string_free(messages);
    CHECK_OK(agent_free(agent));

    agent = agent_with_all_tools(
        "[" TOOL_CALL("call_slow", "bash", "{\"command\":\"echo waiting; sleep 60\",\"timeout\":0.5}")
        "{\"content\":[{\"type\":\"text\",\"text\":\"after the timeout\"}]}]");
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK(seconds_since(&start) < 30);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    CHECK_OK(agent_get_messages(agent, 0, 100, &messages, NULL));
    CHECK_HAS(messages, "Command timed out after 0.5 seconds");
    CHECK_HAS(messages, "after the timeout");
    agent_string_free(messages);
    CHECK_OK(agent_free(agent));
}

int main(void) {
    strcpy(root, "/tmp/libagent-coding-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    write_file("a.txt", "hello\n");
    argument_checks();

    AgentTool tools[8];
    size_t count = 0;
    CHECK_OK(agent_coding_tools_new(root, NTS, "{\"tools\":[\"read\",\"write\",\"edit\"]}", NTS, consent, NULL,
                                    on_finalize, tools, 8, &count));
    CHECK_EQ_INT(count, 3);

    AgentOptions options = sequential_options_with(tools, count);
    CHECK_OK(agent_options_set_scripted_model(options,
        "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_1\",\"name\":\"write\","
        "\"arguments\":{\"path\":\"x.txt\",\"content\":\"new\"}}],\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_2\",\"name\":\"edit\","
        "\"arguments\":{\"path\":\"a.txt\",\"edits\":[{\"oldText\":\"hello\",\"newText\":\"HELLO\"}]}}],"
        "\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_3\",\"name\":\"read\","
        "\"arguments\":{\"path\":\"../escape.txt\"}}],\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]", NTS));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_EQ_INT(outcome_of(run).message_count, 8);
    CHECK_OK(agent_run_free(run));

    char *messages = NULL;
    CHECK_OK(agent_get_messages(agent, 0, 100, &messages, NULL));
    CHECK_HAS(messages, "\"toolName\":\"write\",\"content\":[{\"type\":\"text\",\"text\":\"The user said no.\"}]");
    CHECK_HAS(messages, "Successfully replaced 1 block(s) in a.txt.");
    CHECK_HAS(messages, "Path ../escape.txt is outside the root directory");
    agent_string_free(messages);
    CHECK_EQ_INT(atomic_load(&consent_calls), 2);
    CHECK(read_file("x.txt") == NULL);
    CHECK(strcmp(read_file("a.txt"), "HELLO\n") == 0);

    CHECK_EQ_INT(atomic_load(&finalized), 0);
    CHECK_OK(agent_free(agent));
    CHECK_EQ_INT(atomic_load(&finalized), 1);

    every_tool();
    bash_abort_and_timeout();

    char path[256];
    snprintf(path, sizeof path, "%s/a.txt", root);
    unlink(path);
    rmdir(root);
    printf("test_coding: ok\n");
    return 0;
}

/* The coding tool pack through the C ABI: agent_coding_tools_new's argument checks, a consent
 * hook that refuses one call now and allows another from another thread later, and the pack's
 * tools running in an agent driven by the scripted model. */
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

    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"toolExecution\":\"sequential\"}", NTS, &options));
    for (size_t i = 0; i < count; i++) {
        CHECK_OK(agent_options_add_tool(options, tools[i]));
        CHECK_OK(agent_tool_free(tools[i]));
    }
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

    char path[256];
    snprintf(path, sizeof path, "%s/a.txt", root);
    unlink(path);
    rmdir(root);
    printf("test_coding: ok\n");
    return 0;
}

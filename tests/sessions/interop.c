/* libagent's side of the session interop test (tests/sessions/interop.py drives it; the reference's
 * side is pi.mjs). Runs real agents (the scripted model, a host tool) attached to session files
 * and writes what libagent makes of them, for pi-coding-agent 1.6.0 to compare:
 *
 *   interop run DIR OUT_DIR     a new session in DIR: a prompt with a tool call, a model change, a
 *                               thinking-level change, another prompt; then a branch back to the
 *                               end of the first prompt and a prompt there (a new agent on the
 *                               session, a thinking-level change first). Writes OUT_DIR/main.json
 *                               (the context at the end of the second prompt), main-leaf.json
 *                               (that entry's id), final.json (the context at the file's leaf).
 *   interop resume FILE OUT_DIR opens a file pi wrote: OUT_DIR/before.json (its context), then an
 *                               agent resumes it and is prompted once: after.json (the context).
 * Prints "ok" at the end. */
#include "check.h"

#include <unistd.h>

#define MODEL_1 "{\"id\":\"m1\",\"api\":\"faux\",\"provider\":\"test\"}"
#define MODEL_2 "{\"id\":\"m2\",\"api\":\"faux\",\"provider\":\"test2\"}"
#define SESSION_OPTIONS "{\"cwd\":\"/interop/cwd\"}"

static atomic_int tool_runs;

/* A host tool: `ls` answers with two file names, `read` with the file's "contents". */
static void run_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id, (void)id_len, (void)args_len;
    atomic_fetch_add(&tool_runs, 1);
    const char *text = strcmp((const char *)ud, "ls") == 0 ? "a.txt\\nb.txt" : "hello from a";
    CHECK_HAS(args, "\"path\"");
    char result[256];
    snprintf(result, sizeof result, "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"details\":{}}", text);
    CHECK_OK(agent_tool_call_complete(call, result, NTS));
}

static AgentTool host_tool(const char *name) {
    char definition[256];
    snprintf(definition, sizeof definition,
             "{\"name\":\"%s\",\"label\":\"%s\",\"description\":\"host tool\",\"parameters\":{\"type\":\"object\","
             "\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}}",
             name, name);
    AgentTool tool = {0};
    CHECK_OK(agent_tool_new(definition, NTS, run_tool, (void *)name, NULL, &tool));
    return tool;
}

/* An agent on `session` answering from `script`, with the host tools `ls` and `read`. */
static AgentHandle agent_on(AgentSession session, const char *model_json, const char *script) {
    char options_json[256];
    snprintf(options_json, sizeof options_json, "{\"initialState\":{\"model\":%s}}", model_json);
    AgentOptions options = {0};
    CHECK_OK(agent_options_new(options_json, NTS, &options));
    CHECK_OK(agent_options_set_scripted_model(options, script, NTS));
    AgentTool tools[] = {host_tool("ls"), host_tool("read")};
    for (size_t i = 0; i < 2; i++) {
        CHECK_OK(agent_options_add_tool(options, tools[i]));
        CHECK_OK(agent_tool_free(tools[i]));
    }
    CHECK_OK(agent_options_set_session(options, session));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    return agent;
}

/* Prompts and waits; the run must complete. */
static void prompt(AgentHandle agent, const char *text) {
    AgentRun run = {0};
    CHECK_OK(agent_prompt_text(agent, text, NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    AgentRunOutcome outcome = outcome_of(run);
    if (outcome.status != AGENT_RUN_COMPLETED)
        FAIL("the run of \"%s\" ended with %d: %.*s", text, outcome.status, (int)outcome.error_message.len,
             outcome.error_message.ptr);
    CHECK_OK(agent_run_free(run));
}

static char *session_part(AgentSession session, AgentSessionPart part) {
    char *json = NULL;
    CHECK_OK(agent_session_get(session, part, &json, NULL));
    return json;
}

static void write_text(const char *dir, const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) FAIL("cannot write %s", path);
    fputs(text, f);
    fputc('\n', f);
    fclose(f);
}

static void write_part(AgentSession session, AgentSessionPart part, const char *dir, const char *name) {
    char *json = session_part(session, part);
    write_text(dir, name, json);
    agent_string_free(json);
}

#define TEXT(t) "{\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}"
#define CALL(id, name, path) \
    "{\"content\":[{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":{\"path\":\"" path "\"}}]}"

static void run_interop(const char *dir, const char *out) {
    AgentSession session = {0};
    CHECK_OK(agent_session_create(dir, NTS, SESSION_OPTIONS, NTS, &session));
    AgentHandle agent = agent_on(session, MODEL_1,
                                 "[" CALL("call_ls", "ls", ".") "," TEXT("Two files.") "," TEXT("Deleted.") "]");
    prompt(agent, "list the files");
    CHECK_EQ_INT(atomic_load(&tool_runs), 1);
    size_t first_count = 0; /* the transcript at the first answer */
    CHECK_OK(agent_get_message_count(agent, &first_count));
    CHECK(first_count >= 4); /* user, assistant (tool call), tool result, assistant; the tools' system message */
    char *first_leaf = session_part(session, AGENT_SESSION_LEAF_ID); /* a JSON string: the answer's entry */
    CHECK(first_leaf[0] == '"');
    CHECK_OK(agent_configure(agent, "{\"model\":" MODEL_2 "}", NTS));
    CHECK_OK(agent_configure(agent, "{\"thinkingLevel\":\"high\"}", NTS));
    prompt(agent, "delete them");
    char *context = session_part(session, AGENT_SESSION_CONTEXT);
    CHECK_HAS(context, "\"thinkingLevel\":\"high\"");
    CHECK_HAS(context, "\"modelId\":\"m2\"");
    CHECK_HAS(context, "Deleted.");
    write_text(out, "main.json", context);
    agent_string_free(context);
    write_part(session, AGENT_SESSION_LEAF_ID, out, "main-leaf.json");
    CHECK_OK(agent_free(agent));

    /* Back to the first answer; a new agent on the session starts from the context there. */
    char leaf_id[64];
    size_t leaf_len = strlen(first_leaf) - 2;
    CHECK(leaf_len < sizeof leaf_id);
    memcpy(leaf_id, first_leaf + 1, leaf_len);
    leaf_id[leaf_len] = 0;
    agent_string_free(first_leaf);
    CHECK_OK(agent_session_branch(session, leaf_id, NTS));
    agent = agent_on(session, MODEL_2, "[" CALL("call_read", "read", "a.txt") "," TEXT("It says hello.") "]");
    size_t count = 0;
    CHECK_OK(agent_get_message_count(agent, &count));
    CHECK_EQ_INT(count, first_count);
    CHECK_OK(agent_configure(agent, "{\"thinkingLevel\":\"medium\"}", NTS));
    prompt(agent, "read a.txt");
    CHECK_EQ_INT(atomic_load(&tool_runs), 2);
    context = session_part(session, AGENT_SESSION_CONTEXT);
    CHECK_NOT_HAS(context, "Deleted.");
    CHECK_HAS(context, "It says hello.");
    CHECK_HAS(context, "\"thinkingLevel\":\"medium\"");
    write_text(out, "final.json", context);
    agent_string_free(context);
    CHECK_OK(agent_free(agent));
    CHECK_OK(agent_session_free(session));
}

static void run_resume(const char *file, const char *out) {
    AgentSession session = {0};
    CHECK_OK(agent_session_open(file, NTS, NULL, 0, &session));
    char *before = session_part(session, AGENT_SESSION_CONTEXT);
    write_text(out, "before.json", before);
    AgentHandle agent = agent_on(session, MODEL_2, "[" TEXT("Resumed here.") "]");
    size_t count = 0;
    CHECK_OK(agent_get_message_count(agent, &count));
    CHECK(count > 0); /* it starts from the file's context */
    prompt(agent, "are you still there?");
    CHECK_OK(agent_free(agent));
    char *after = session_part(session, AGENT_SESSION_CONTEXT);
    CHECK(strcmp(before, after) != 0);
    CHECK_HAS(after, "Resumed here.");
    write_text(out, "after.json", after);
    agent_string_free(before);
    agent_string_free(after);
    CHECK_OK(agent_session_free(session));
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "run") == 0) run_interop(argv[2], argv[3]);
    else if (argc == 4 && strcmp(argv[1], "resume") == 0) run_resume(argv[2], argv[3]);
    else FAIL("usage: interop run DIR OUT_DIR | interop resume FILE OUT_DIR");
    printf("ok\n");
    return 0;
}

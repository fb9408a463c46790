/* Sessions through the C ABI: a file session written lazily and resumed, every argument check
 * (NULLs, bad and freed handles, invalid UTF-8, malformed JSON, unknown parts), each session
 * error code with its message (AGENT_ERR_IO, AGENT_ERR_LOCKED, AGENT_ERR_NOT_A_SESSION,
 * AGENT_ERR_INVALID_ARGUMENT for a refused entry), and a second open of a file that is in use. */
#include "check.h"

#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

#define KIT "{\"cwd\":\"/kit/cwd\"}"
#define USER_ENTRY "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}"
#define ASSISTANT_ENTRY                                                                        \
    "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\","  \
    "\"text\":\"hello\"}],\"provider\":\"p\",\"model\":\"m\",\"stopReason\":\"stop\",\"timestamp\":2}}"

static char *part(AgentSession session, AgentSessionPart which) {
    char *json = NULL;
    size_t len = 0;
    CHECK_OK(agent_session_get(session, which, &json, &len));
    CHECK(json != NULL && strlen(json) == len);
    return json;
}

/* The file's path (as agent_session_get(AGENT_SESSION_FILE) names it) copied into `out`. */
static void file_path(AgentSession session, char *out, size_t size) {
    char *file = part(session, AGENT_SESSION_FILE);
    const char *start = strstr(file, "\"path\":\"");
    CHECK(start != NULL);
    start += strlen("\"path\":\"");
    const char *end = strchr(start, '"');
    CHECK(end != NULL && (size_t)(end - start) < size);
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    agent_string_free(file);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    static char buffer[65536];
    size_t n = fread(buffer, 1, sizeof buffer - 1, f);
    buffer[n] = '\0';
    fclose(f);
    return buffer;
}

static void a_file_session_is_written_lazily_and_resumed(void) {
    char sessions[128];
    snprintf(sessions, sizeof sessions, "%s/sessions", dir);
    AgentSession session = {0};
    CHECK_OK(agent_session_create(sessions, NTS, KIT, NTS, &session));
    char *file = part(session, AGENT_SESSION_FILE);
    CHECK_HAS(file, "\"exists\":false");
    agent_string_free(file);

    char *model_id = NULL;
    size_t model_id_len = 0;
    CHECK_OK(agent_session_append(session, "{\"type\":\"model_change\",\"provider\":\"p\",\"modelId\":\"m\"}",
                                  NTS, &model_id, &model_id_len));
    CHECK_EQ_INT(model_id_len, 8);
    CHECK_EQ_INT(strlen(model_id), 8);
    file = part(session, AGENT_SESSION_FILE);
    CHECK_HAS(file, "\"exists\":false");
    agent_string_free(file);
    CHECK_OK(agent_session_append(session, USER_ENTRY, NTS, NULL, NULL));
    CHECK_OK(agent_session_append(session, ASSISTANT_ENTRY, NTS, NULL, NULL));
    file = part(session, AGENT_SESSION_FILE);
    CHECK_HAS(file, "\"exists\":true");
    agent_string_free(file);

    char path[256];
    file_path(session, path, sizeof path);
    const char *text = read_text(path);
    CHECK_EQ_INT(count_of(text, "\n"), 4); /* header, model change, two messages */
    CHECK_HAS(text, "\"cwd\":\"/kit/cwd\"");
    CHECK_HAS(text, model_id);

    char *context = part(session, AGENT_SESSION_CONTEXT);
    CHECK_HAS(context, "\"thinkingLevel\":\"off\"");
    CHECK_HAS(context, "\"model\":{\"provider\":\"p\",\"modelId\":\"m\"}");
    CHECK_HAS(context, "\"content\":\"hi\"");
    agent_string_free(context);

    /* The file is locked while the session is open: a second open is refused. */
    AgentSession second = {0};
    CHECK_ERR(agent_session_open(path, NTS, KIT, NTS, &second), AGENT_ERR_LOCKED, path);
    CHECK_EQ_INT(second.id, 0);
    /* Branching back and appending writes a second branch; the leaf moves with it. */
    CHECK_OK(agent_session_branch(session, model_id, NTS));
    char *leaf = part(session, AGENT_SESSION_LEAF_ID);
    char quoted[16];
    snprintf(quoted, sizeof quoted, "\"%s\"", model_id);
    CHECK(strcmp(leaf, quoted) == 0);
    agent_string_free(leaf);
    CHECK_OK(agent_session_free(session));

    /* Resumed: the leaf is the last entry of the file. */
    CHECK_OK(agent_session_open(path, NTS, KIT, NTS, &second));
    char *entries = part(second, AGENT_SESSION_ENTRIES);
    CHECK_EQ_INT(count_of(entries, "\"type\":\"message\""), 2);
    agent_string_free(entries);
    char *branch = part(second, AGENT_SESSION_BRANCH);
    CHECK_EQ_INT(count_of(branch, "\"parentId\""), 3);
    agent_string_free(branch);
    char *llm = part(second, AGENT_SESSION_LLM);
    CHECK_HAS(llm, "\"role\":\"assistant\"");
    agent_string_free(llm);
    CHECK_OK(agent_session_free(second));
    agent_string_free(model_id);
}

static void argument_checks(void) {
    AgentSession session = {0};
    char *json = NULL;
    size_t len = 0;
    CHECK_ERR(agent_session_in_memory(NULL, 0, NULL), AGENT_ERR_NULL, "out_session is NULL");
    CHECK_ERR(agent_session_open(NULL, NTS, NULL, 0, &session), AGENT_ERR_NULL, "path is NULL");
    CHECK_ERR(agent_session_create(NULL, NTS, NULL, 0, &session), AGENT_ERR_NULL, "dir is NULL");
    CHECK_ERR(agent_session_open("\xff", 1, NULL, 0, &session), AGENT_ERR_INVALID_UTF8, "path is not valid UTF-8");
    CHECK_ERR(agent_session_in_memory("{nope", NTS, &session), AGENT_ERR_INVALID_JSON, "options_json is not valid JSON");
    CHECK_ERR(agent_session_in_memory("{\"durability\":\"sometimes\"}", NTS, &session), AGENT_ERR_INVALID_JSON,
              "\"durability\" must be \"flush\" or \"fsync\"");
    CHECK_ERR(agent_session_in_memory("{\"cwd\":7}", NTS, &session), AGENT_ERR_INVALID_JSON, "\"cwd\" must be a string");
    CHECK_ERR(agent_session_in_memory("[]", NTS, &session), AGENT_ERR_INVALID_JSON, "options_json must be an object");
    CHECK_EQ_INT(session.id, 0);
    CHECK_ERR(agent_session_directory("/b", NTS, NULL, NTS, &json, &len), AGENT_ERR_NULL, "cwd is NULL");
    CHECK_ERR(agent_session_directory("/b", NTS, "/x", NTS, NULL, &len), AGENT_ERR_NULL, "out_path is NULL");
    CHECK_OK(agent_session_directory("/base", NTS, "/home/me/app", NTS, &json, &len));
    CHECK(strcmp(json, "/base/--home-me-app--") == 0);
    CHECK_EQ_INT(len, strlen("/base/--home-me-app--"));
    agent_string_free(json);

    /* Handles: null, forged, freed. */
    AgentSession null_handle = {0}, forged = {0x1234567812345678ULL};
    CHECK_ERR(agent_session_append(null_handle, USER_ENTRY, NTS, NULL, NULL), AGENT_ERR_INVALID_HANDLE,
              "session is the null handle");
    CHECK_ERR(agent_session_get(forged, AGENT_SESSION_HEADER, &json, &len), AGENT_ERR_INVALID_HANDLE,
              "session is not a valid session");
    CHECK_OK(agent_session_in_memory(KIT, NTS, &session));
    CHECK_ERR(agent_session_get(session, AGENT_SESSION_HEADER, NULL, &len), AGENT_ERR_NULL, "out_json is NULL");
    CHECK_ERR(agent_session_get(session, 7, &json, &len), AGENT_ERR_INVALID_ARGUMENT, "AGENT_SESSION_*");
    CHECK_ERR(agent_session_append(session, NULL, NTS, NULL, NULL), AGENT_ERR_NULL, "entry_json is NULL");
    CHECK_ERR(agent_session_append(session, "{\"type\":", NTS, NULL, NULL), AGENT_ERR_INVALID_JSON,
              "entry_json is not valid JSON");
    CHECK_ERR(agent_session_append(session, "\"\xc3\x28\"", NTS, NULL, NULL), AGENT_ERR_INVALID_UTF8,
              "entry_json is not valid UTF-8");
    /* Entries pi would refuse: AGENT_ERR_INVALID_ARGUMENT, nothing changes. */
    CHECK_ERR(agent_session_append(session, "{\"no\":\"type\"}", NTS, NULL, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "no string \"type\"");
    CHECK_ERR(agent_session_append(session, "{\"type\":\"label\",\"targetId\":\"abc\",\"label\":\"x\"}", NTS, NULL,
                                   NULL),
              AGENT_ERR_INVALID_ARGUMENT, "Entry abc not found");
    CHECK_ERR(agent_session_branch(session, "abc", NTS), AGENT_ERR_INVALID_ARGUMENT, "Entry abc not found");
    CHECK_ERR(agent_session_fork(session, NULL, NTS), AGENT_ERR_NULL, "entry_id is NULL");
    CHECK_ERR(agent_session_branch_with_summary(session, NULL, 0, "[1]", NTS, NULL, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "branch summary is not a JSON object");
    char *entries = part(session, AGENT_SESSION_ENTRIES);
    CHECK(strcmp(entries, "[]") == 0);
    agent_string_free(entries);
    char *file = part(session, AGENT_SESSION_FILE);
    CHECK(strcmp(file, "{\"path\":null,\"exists\":false}") == 0);
    agent_string_free(file);

    /* A branch summary at a new root: fromId "root". */
    char *id = NULL;
    CHECK_OK(agent_session_branch_with_summary(session, NULL, 0, "{\"summary\":\"s\"}", NTS, &id, NULL));
    entries = part(session, AGENT_SESSION_ENTRIES);
    CHECK_HAS(entries, "\"fromId\":\"root\"");
    CHECK_HAS(entries, id);
    agent_string_free(entries);
    agent_string_free(id);

    CHECK_OK(agent_session_free(session));
    CHECK_ERR(agent_session_get(session, AGENT_SESSION_HEADER, &json, &len), AGENT_ERR_INVALID_HANDLE,
              "session is a freed session");
    CHECK_ERR(agent_session_free(session), AGENT_ERR_INVALID_HANDLE, "session is a freed session");
}

static void file_errors(void) {
    AgentSession session = {0};
    char path[256];
    /* Not a session: refused, the file left as it was. */
    snprintf(path, sizeof path, "%s/not-a-session.jsonl", dir);
    write_text(path, "{\"type\":\"message\",\"id\":\"a\"}\n");
    CHECK_ERR(agent_session_open(path, NTS, KIT, NTS, &session), AGENT_ERR_NOT_A_SESSION, "not a session file");
    CHECK(strcmp(read_text(path), "{\"type\":\"message\",\"id\":\"a\"}\n") == 0);
    /* A version libagent does not know. */
    snprintf(path, sizeof path, "%s/future.jsonl", dir);
    write_text(path, "{\"type\":\"session\",\"version\":4,\"id\":\"s\"}\n");
    CHECK_ERR(agent_session_open(path, NTS, KIT, NTS, &session), AGENT_ERR_NOT_A_SESSION,
              "libagent reads versions 1 to 3");
    /* Too large: a sparse 1 GiB file. */
    snprintf(path, sizeof path, "%s/huge.jsonl", dir);
    write_text(path, "");
    CHECK(truncate(path, 1L << 30) == 0);
    CHECK_ERR(agent_session_open(path, NTS, KIT, NTS, &session), AGENT_ERR_NOT_A_SESSION,
              "is 1073741824 bytes; libagent opens session files up to 512 MiB");
    CHECK(unlink(path) == 0);
    /* A file system error names the path: a directory below a regular file cannot be created. */
    char below_file[300];
    snprintf(path, sizeof path, "%s/plain", dir);
    write_text(path, "x");
    snprintf(below_file, sizeof below_file, "%s/sessions", path);
    CHECK_ERR(agent_session_create(below_file, NTS, KIT, NTS, &session), AGENT_ERR_IO, below_file);
    /* Reading a directory as a session file. */
    CHECK_ERR(agent_session_open(dir, NTS, KIT, NTS, &session), AGENT_ERR_NOT_A_SESSION, "is a directory");
    CHECK_EQ_INT(session.id, 0);
}

int main(void) {
    strcpy(dir, "/tmp/libagent-session-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    argument_checks();
    file_errors();
    a_file_session_is_written_lazily_and_resumed();
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    CHECK(system(command) == 0);
    printf("test_session: ok\n");
    return 0;
}

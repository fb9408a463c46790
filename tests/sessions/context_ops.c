/*
 * The sessions kit's context-management ops (README §4.3–§4.9: estimate, should-compact,
 * cut-point, file-lists, overflow, retryable, retry-delay) through libagent's agent_context_* and
 * agent_session_estimate / _prepare_compaction functions. Included by runner.c (uses its die, ok
 * and remove_entry); run_context_fixture returns NULL for an op that is not one of these.
 *
 * A fixture's `entries` become an in-memory-like session the only way the C ABI opens existing
 * entries: a version 3 file (a header line, then one line per entry) in a temporary directory,
 * opened with agent_session_open and moved to `leafId` with agent_session_branch. Version 3
 * files are never rewritten on open, so the session holds exactly the fixture's entries.
 */

/* Parses libagent's JSON text (owned by the caller; freed here). */
static json_t *parse_owned(char *text, size_t len, const char *what) {
    json_error_t parse_error;
    json_t *value = json_loadb(text, len, JSON_DECODE_ANY, &parse_error);
    agent_string_free(text);
    if (value == NULL) die(what, parse_error.text);
    return value;
}

/* Dies with the error's message when a call that must succeed fails. */
static void must(AgentError *error, const char *what) {
    if (error == NULL) return;
    char message[1024];
    snprintf(message, sizeof message, "%s", agent_error_message(error, NULL));
    agent_error_free(error);
    die(what, message);
}

/* A JSON value as compact text (the caller frees it with free). */
static char *text_of(json_t *value) {
    char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL) die("json_dumps", "cannot render a fixture value");
    return text;
}

typedef AgentError *(*JsonInJsonOut)(const char *, size_t, char **, size_t *);

static json_t *call_json(JsonInJsonOut fn, json_t *input, const char *what) {
    char *in = text_of(input);
    char *out = NULL;
    size_t len = 0;
    must(fn(in, strlen(in), &out, &len), what);
    free(in);
    return parse_owned(out, len, what);
}

/* The fixture's entries as a session at its leaf (see above). `dir` receives the temporary
 * directory, removed by close_entries_session. */
static AgentSession open_entries_session(json_t *fixture, char *dir) {
    strcpy(dir, "/tmp/sessions-kit-XXXXXX");
    if (mkdtemp(dir) == NULL) die("mkdtemp", strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/session.jsonl", dir);
    FILE *file = fopen(path, "wb");
    if (file == NULL) die("create", path);
    fputs("{\"type\":\"session\",\"version\":3,\"id\":\"sessions-kit\","
          "\"timestamp\":\"2024-12-03T14:00:00.000Z\",\"cwd\":\"/kit/cwd\"}\n", file);
    size_t i;
    json_t *entry;
    json_array_foreach(json_object_get(fixture, "entries"), i, entry) {
        char *line = text_of(entry);
        fprintf(file, "%s\n", line);
        free(line);
    }
    if (fclose(file) != 0) die("write", path);
    AgentSession session = {0};
    must(agent_session_open(path, AGENT_NTS, KIT_CWD_OPTIONS, AGENT_NTS, &session), "agent_session_open");
    const char *leaf = json_string_value(json_object_get(fixture, "leafId"));
    if (leaf != NULL) must(agent_session_branch(session, leaf, AGENT_NTS), "agent_session_branch");
    return session;
}

static void close_entries_session(AgentSession session, const char *dir) {
    must(agent_session_free(session), "agent_session_free");
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The fixture's compaction preparation (null when there is nothing to compact). */
static json_t *prepare(json_t *fixture) {
    char dir[64];
    AgentSession session = open_entries_session(fixture, dir);
    json_t *settings = json_object_get(fixture, "settings");
    char *in = settings ? text_of(settings) : NULL;
    char *out = NULL;
    size_t len = 0;
    must(agent_session_prepare_compaction(session, in, in ? strlen(in) : 0, &out, &len),
         "agent_session_prepare_compaction");
    free(in);
    close_entries_session(session, dir);
    return parse_owned(out, len, "agent_session_prepare_compaction");
}

static json_t *estimate_op(json_t *fixture) {
    json_t *messages = json_object_get(fixture, "messages");
    if (messages != NULL) return call_json(agent_context_estimate, messages, "agent_context_estimate");
    char dir[64];
    AgentSession session = open_entries_session(fixture, dir);
    char *out = NULL;
    size_t len = 0;
    must(agent_session_estimate(session, &out, &len), "agent_session_estimate");
    close_entries_session(session, dir);
    json_t *result = json_object();
    json_object_set_new(result, "projected", parse_owned(out, len, "agent_session_estimate"));
    return result;
}

static json_t *cut_point_op(json_t *fixture) {
    json_t *prepared = prepare(fixture);
    if (json_is_object(prepared) && !json_is_true(json_object_get(fixture, "recordSummarizerInput")))
        json_object_del(prepared, "summarizerInput");
    json_t *result = json_object();
    json_object_set_new(result, "prepared", prepared);
    return result;
}

static json_t *file_lists_op(json_t *fixture) {
    json_t *messages = json_object_get(fixture, "messages");
    if (messages != NULL) return call_json(agent_context_file_lists, messages, "agent_context_file_lists");
    json_t *prepared = prepare(fixture);
    json_t *result = json_object();
    json_object_set_new(result, "prepared", json_boolean(json_is_object(prepared)));
    if (json_is_object(prepared)) {
        const char *members[] = {"fileOps", "readFiles", "modifiedFiles"};
        for (size_t i = 0; i < 3; i++) json_object_set(result, members[i], json_object_get(prepared, members[i]));
    }
    json_decref(prepared);
    return result;
}

/* Each case through `one`, as {"results": [...]}. */
static json_t *per_case(json_t *fixture, json_t *(*one)(json_t *)) {
    json_t *results = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(fixture, "cases"), i, item) json_array_append_new(results, one(item));
    json_t *result = json_object();
    json_object_set_new(result, "results", results);
    return result;
}

static json_t *should_compact_case(json_t *item) {
    return call_json(agent_context_should_compact, item, "agent_context_should_compact");
}

/* The kit's assistant message for a case (README §4.7): absent members are stopReason "error",
 * provider "kit" and a zero usage, which the case's own usage members override. */
static json_t *kit_message(json_t *partial) {
    json_t *message = json_pack("{s:s, s:[], s:s, s:s, s:s, s:s, s:i}", "role", "assistant", "content", "api",
                                "kit-api", "provider", "kit", "model", "kit-model", "stopReason", "error",
                                "timestamp", 0);
    json_object_update(message, partial);
    json_t *usage = json_pack("{s:i, s:i, s:i, s:i, s:i}", "input", 0, "output", 0, "cacheRead", 0,
                              "cacheWrite", 0, "totalTokens", 0);
    json_t *given = json_object_get(partial, "usage");
    if (json_is_object(given)) json_object_update(usage, given);
    json_object_set_new(message, "usage", usage);
    return message;
}

static json_t *classify(json_t *message, json_t *options) {
    char *message_text = text_of(message);
    char *options_text = text_of(options);
    char *out = NULL;
    size_t len = 0;
    must(agent_context_classify_error(message_text, strlen(message_text), options_text, strlen(options_text), &out,
                                      &len),
         "agent_context_classify_error");
    free(message_text);
    free(options_text);
    json_decref(message);
    json_decref(options);
    return parse_owned(out, len, "agent_context_classify_error");
}

static json_t *overflow_case(json_t *item) {
    json_t *options = json_object();
    const char *members[] = {"contextWindow", "desiredMaxOutput"};
    for (size_t i = 0; i < 2; i++) {
        json_t *value = json_object_get(item, members[i]);
        if (value != NULL) json_object_set(options, members[i], value);
    }
    json_t *classified = classify(kit_message(json_object_get(item, "message")), options);
    json_t *result = json_object();
    json_object_set(result, "overflow", json_object_get(classified, "overflow"));
    json_t *recoverable = json_object_get(classified, "recoverableLength");
    if (recoverable != NULL) json_object_set(result, "recoverableLength", recoverable);
    json_decref(classified);
    return result;
}

static json_t *retryable_case(json_t *item) {
    json_t *partial = json_object();
    json_t *stop = json_object_get(item, "stopReason");
    json_object_set_new(partial, "stopReason", stop ? json_copy(stop) : json_string("error"));
    json_object_set(partial, "errorMessage", json_object_get(item, "errorMessage"));
    json_t *provider = json_object_get(item, "provider");
    if (provider != NULL) json_object_set(partial, "provider", provider);
    json_t *options = json_object();
    json_t *window = json_object_get(item, "contextWindow");
    if (window != NULL) json_object_set(options, "contextWindow", window);
    json_t *message = kit_message(partial);
    json_decref(partial);
    json_t *classified = classify(message, options);
    json_object_del(classified, "recoverableLength");
    return classified;
}

static json_t *retry_delay_case(json_t *item) {
    json_t *settings = json_object_get(item, "settings");
    json_t *attempt = json_object_get(item, "attempt");
    if (attempt == NULL) return call_json(agent_context_retry_delays, settings, "agent_context_retry_delays");
    char *in = text_of(settings);
    uint64_t delay = 0;
    must(agent_context_retry_delay(in, strlen(in), (int64_t)json_integer_value(attempt), &delay),
         "agent_context_retry_delay");
    free(in);
    return json_pack("{s:I}", "delayMs", (json_int_t)delay);
}

/* One context-management fixture's result, or NULL when `op` is not one of them. */
static json_t *run_context_fixture(json_t *fixture, const char *op) {
    if (strcmp(op, "estimate") == 0) return estimate_op(fixture);
    if (strcmp(op, "should-compact") == 0) return per_case(fixture, should_compact_case);
    if (strcmp(op, "cut-point") == 0) return cut_point_op(fixture);
    if (strcmp(op, "file-lists") == 0) return file_lists_op(fixture);
    if (strcmp(op, "overflow") == 0) return per_case(fixture, overflow_case);
    if (strcmp(op, "retryable") == 0) return per_case(fixture, retryable_case);
    if (strcmp(op, "retry-delay") == 0) return per_case(fixture, retry_delay_case);
    return NULL;
}

/*
 * libagent quickstart: a multi-turn agent with a system prompt and two real tools (list a
 * directory, read a file), answered by the built-in scripted model, which decides to call both
 * tools in parallel. Streamed text is printed as it arrives; tool calls and results are shown;
 * a short transcript summary ends the run.
 *
 * To use a real model instead, replace agent_options_set_scripted_model() with
 * agent_options_set_stream_fn(options, my_model_stream, my_client, NULL): see my_model_stream()
 * at the bottom of this file.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libagent/agent.h>

/* Every fallible call returns NULL or an error the caller owns: print it, free it, give up. */
#define TRY(call)                                                                          \
    do {                                                                                   \
        AgentError *error_ = (call);                                                       \
        if (error_) {                                                                      \
            fprintf(stderr, "libagent error: %s\n", agent_error_message(error_, NULL));   \
            agent_error_free(error_);                                                      \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* Appends `text` to `out` as a JSON string literal. */
static void json_string(char *out, size_t cap, const char *text) {
    size_t n = strlen(out);
    if (n + 2 >= cap) return;
    out[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)text; *p && n + 8 < cap; p++) {
        if (*p == '"' || *p == '\\') { out[n++] = '\\'; out[n++] = (char)*p; }
        else if (*p == '\n') { out[n++] = '\\'; out[n++] = 'n'; }
        else if (*p < 0x20) n += (size_t)snprintf(out + n, cap - n, "\\u%04x", *p);
        else out[n++] = (char)*p;
    }
    out[n++] = '"';
    out[n] = '\0';
}

/* Reads a string member `"key":"value"` from flat JSON arguments (enough for this demo). */
static int arg_string(const char *args, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *start = strstr(args, pattern);
    if (!start) return 0;
    start += strlen(pattern);
    const char *end = strchr(start, '"');
    if (!end || (size_t)(end - start) >= cap) return 0;
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return 1;
}

static void complete_text(AgentToolCall call, const char *text, int is_error) {
    static char result[16384];
    snprintf(result, sizeof result, "{\"content\":[{\"type\":\"text\",\"text\":");
    json_string(result, sizeof result - 64, text);
    strcat(result, is_error ? "}],\"details\":{},\"isError\":true}" : "}],\"details\":{}}");
    TRY(agent_tool_call_complete(call, result, AGENT_NTS));
}

/* Tool: list the entries of a directory. Answers at once (it could also answer later). */
static void list_dir(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)ud; (void)id; (void)id_len; (void)args_len;
    char path[512], listing[8192] = "";
    if (!arg_string(args, "path", path, sizeof path)) { TRY(agent_tool_call_fail(call, "path is required", AGENT_NTS)); return; }
    DIR *dir = opendir(path);
    if (!dir) { complete_text(call, "cannot open directory", 1); return; }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        if (strlen(listing) + strlen(entry->d_name) + 2 >= sizeof listing) break;
        strcat(listing, entry->d_name);
        strcat(listing, "\n");
    }
    closedir(dir);
    complete_text(call, listing, 0);
}

/* Tool: read the first lines of a file. */
static void read_file(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)ud; (void)id; (void)id_len; (void)args_len;
    char path[512], text[4096] = "";
    if (!arg_string(args, "path", path, sizeof path)) { TRY(agent_tool_call_fail(call, "path is required", AGENT_NTS)); return; }
    FILE *file = fopen(path, "r");
    if (!file) { complete_text(call, "cannot open file", 1); return; }
    char line[512];
    for (int i = 0; i < 6 && fgets(line, sizeof line, file); i++) strncat(text, line, sizeof text - strlen(text) - 1);
    fclose(file);
    complete_text(call, text, 0);
}

/* Copies the JSON string value after `"key":"` in `json` into `out`, turning escaped newlines
 * into " | " (a display helper for this demo, not a JSON parser). */
static void json_field(const char *json, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(json, pattern);
    size_t n = 0;
    out[0] = '\0';
    if (!p) return;
    p += strlen(pattern);
    if (*p == '"') { /* a string: copy it */
        for (p++; *p && *p != '"' && n + 4 < cap; p++) {
            if (p[0] == '\\' && p[1] == 'n') { memcpy(out + n, " | ", 3); n += 3; p++; }
            else if (p[0] == '\\' && p[1]) { out[n++] = p[1]; p++; }
            else out[n++] = *p;
        }
    } else { /* an object: copy up to its closing brace */
        for (int depth = 0; *p && n + 1 < cap; p++) {
            out[n++] = *p;
            if (*p == '{') depth++;
            if (*p == '}' && --depth == 0) break;
        }
    }
    out[n] = '\0';
}

/* Listener: print text deltas as they arrive, and the tool calls with their results. One call
 * per event: the struct says what it is; JSON is built only when asked for. */
static AgentListenerAnswer on_event(void *ud, const AgentEvent *event) {
    (void)ud;
    AgentStr json;
    char detail[96];
    if (event->update == AGENT_UPDATE_TEXT_DELTA) {
        printf("%.*s", (int)event->delta.len, event->delta.ptr); /* streamed text, no JSON built */
        fflush(stdout);
    } else if (event->kind == AGENT_EVENT_TOOL_EXECUTION_START) {
        TRY(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        json_field(json.ptr, "args", detail, sizeof detail);
        printf("  -> %.*s %s\n", (int)event->tool_name.len, event->tool_name.ptr, detail);
    } else if (event->kind == AGENT_EVENT_TOOL_EXECUTION_END) {
        TRY(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        json_field(json.ptr, "text", detail, sizeof detail);
        printf("  <- %.*s: %.70s...\n", (int)event->tool_name.len, event->tool_name.ptr, detail);
    } else if (event->kind == AGENT_EVENT_MESSAGE_END) {
        TRY(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        if (strstr(json.ptr, "\"role\":\"assistant\"")) printf("\n");
    }
    return AGENT_LISTENER_CONTINUE; /* answered by returning: the loop goes on */
}

static const char *SCRIPT =
    "["
    " {\"content\": ["
    "   {\"type\": \"text\", \"text\": \"Let me look at the project: its files and its README.\", \"chunks\": 6},"
    "   {\"type\": \"toolCall\", \"id\": \"call_1\", \"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}},"
    "   {\"type\": \"toolCall\", \"id\": \"call_2\", \"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}, \"chunks\": 3}"
    " ]},"
    " {\"content\": [{\"type\": \"text\", \"chunks\": 8, \"text\":"
    "   \"This is libagent: a Rust agent runtime with a C ABI. The listing shows its sources, tests and"
    " examples; the README explains how to run the demo and the tests.\"}]}"
    "]";

static const char *PARAMS = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}";

int main(void) {
    TRY(agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR));
    char definition[1024];
    AgentTool tools[2];
    snprintf(definition, sizeof definition,
             "{\"name\":\"list_dir\",\"label\":\"List\",\"description\":\"List a directory\",\"parameters\":%s}", PARAMS);
    TRY(agent_tool_new(definition, AGENT_NTS, list_dir, NULL, NULL, &tools[0]));
    snprintf(definition, sizeof definition,
             "{\"name\":\"read_file\",\"label\":\"Read\",\"description\":\"Read a file\",\"parameters\":%s}", PARAMS);
    TRY(agent_tool_new(definition, AGENT_NTS, read_file, NULL, NULL, &tools[1]));

    AgentOptions options;
    TRY(agent_options_new("{\"initialState\": {\"systemPrompt\": \"You are a helpful project guide.\","
                          " \"model\": {\"id\": \"scripted\", \"api\": \"faux\", \"provider\": \"libagent\"}}}",
                          AGENT_NTS, &options));
    TRY(agent_options_add_tool(options, tools[0]));
    TRY(agent_options_add_tool(options, tools[1]));
    TRY(agent_options_set_scripted_model(options, SCRIPT, AGENT_NTS));

    AgentHandle agent;
    TRY(agent_new(options, &agent));
    TRY(agent_tool_free(tools[0])); /* the agent keeps its own references */
    TRY(agent_tool_free(tools[1]));
    uint64_t subscription;
    TRY(agent_subscribe(agent, on_event, NULL, NULL, &subscription));

    printf("> What is this project?\n");
    AgentRun run;
    TRY(agent_prompt_text(agent, "What is this project?", AGENT_NTS, NULL, 0, NULL, NULL, &run));
    AgentWaitResult waited;
    TRY(agent_run_wait(run, -1, &waited));
    AgentRunOutcome outcome;
    TRY(agent_run_outcome(run, &outcome));
    if (outcome.status != AGENT_RUN_COMPLETED)
        fprintf(stderr, "the run did not complete: %.*s\n", (int)outcome.error_message.len, outcome.error_message.ptr);
    TRY(agent_run_free(run));

    size_t messages = 0;
    TRY(agent_get_message_count(agent, &messages));
    printf("Transcript: %zu messages (system prompt, user, assistant with 2 tool calls, 2 tool results, assistant).\n",
           messages);
    TRY(agent_free(agent));
    return 0;
}

/*
 * Plugging in a real model: a stream function receives the request JSON ({model, context:
 * {messages}, options}) and pushes assistant stream events from any thread, for example as an
 * HTTP response streams in:
 *
 *   static void my_model_stream(void *client, const char *request_json, size_t len, AgentStream stream) {
 *       start_http_request(client, request_json, len, stream);   // returns at once
 *   }
 *   // ...then, on the HTTP thread, for each chunk of the provider's response:
 *   agent_stream_push(stream, "{\"type\":\"start\"}", AGENT_NTS);
 *   agent_stream_push_block_start(stream, AGENT_BLOCK_TEXT, 0);
 *   agent_stream_push_text_delta(stream, 0, chunk, chunk_len);   // no JSON needed for deltas
 *   agent_stream_push_block_end(stream, AGENT_BLOCK_TEXT, 0);
 *   agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", AGENT_NTS);
 *   // (each returns NULL or an AgentError* to check and free)
 *   // Provider errors end the stream with {"type":"error","reason":"error","errorMessage":"..."}.
 */

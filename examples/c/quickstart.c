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

#include "agent.h"

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

static void complete_text(AgentToolCall *call, const char *text, int is_error) {
    static char result[16384];
    snprintf(result, sizeof result, "{\"content\":[{\"type\":\"text\",\"text\":");
    json_string(result, sizeof result - 64, text);
    strcat(result, is_error ? "}],\"details\":{},\"isError\":true}" : "}],\"details\":{}}");
    agent_call_complete(call, result);
}

/* Tool: list the entries of a directory. Answers at once (it could also answer later). */
static void list_dir(void *ud, const char *id, const char *args, AgentToolCall *call) {
    (void)ud; (void)id;
    char path[512], listing[8192] = "";
    if (!arg_string(args, "path", path, sizeof path)) { agent_call_fail(call, "path is required"); return; }
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
static void read_file(void *ud, const char *id, const char *args, AgentToolCall *call) {
    (void)ud; (void)id;
    char path[512], text[4096] = "";
    if (!arg_string(args, "path", path, sizeof path)) { agent_call_fail(call, "path is required"); return; }
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

/* Listener: print text deltas as they arrive, and the tool calls with their results. */
static void on_event(void *ud, const AgentEvent *event, AgentCall *call) {
    (void)ud;
    const char *type = NULL, *update = NULL, *json = NULL, *delta = NULL;
    size_t len = 0;
    char name[64], detail[96];
    agent_event_type(event, &type);
    agent_event_update_type(event, &update);
    if (update && strcmp(update, "text_delta") == 0 && agent_event_delta(event, &delta, &len) == AGENT_OK) {
        printf("%.*s", (int)len, delta); /* streamed text, read without building JSON */
        fflush(stdout);
    } else if (strcmp(type, "tool_execution_start") == 0) {
        agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json);
        json_field(json, "toolName", name, sizeof name);
        json_field(json, "args", detail, sizeof detail);
        printf("  -> %s %s\n", name, detail);
    } else if (strcmp(type, "tool_execution_end") == 0) {
        agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json);
        json_field(json, "toolName", name, sizeof name);
        json_field(json, "text", detail, sizeof detail);
        printf("  <- %s: %.70s...\n", name, detail);
    } else if (strcmp(type, "message_end") == 0 && update == NULL) {
        agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json);
        if (strstr(json, "\"role\":\"assistant\"")) printf("\n");
    }
    agent_call_complete(call, NULL); /* listeners answer too: the loop waits for them */
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
    char definition[1024];
    AgentTool *tools[2];
    snprintf(definition, sizeof definition,
             "{\"name\":\"list_dir\",\"label\":\"List\",\"description\":\"List a directory\",\"parameters\":%s}", PARAMS);
    if (agent_tool_new(definition, list_dir, NULL, NULL, &tools[0]) != AGENT_OK) goto fail;
    snprintf(definition, sizeof definition,
             "{\"name\":\"read_file\",\"label\":\"Read\",\"description\":\"Read a file\",\"parameters\":%s}", PARAMS);
    if (agent_tool_new(definition, read_file, NULL, NULL, &tools[1]) != AGENT_OK) goto fail;

    AgentOptions *options = NULL;
    if (agent_options_new("{\"initialState\": {\"systemPrompt\": \"You are a helpful project guide.\","
                          " \"model\": {\"id\": \"scripted\", \"api\": \"faux\", \"provider\": \"libagent\"}}}",
                          &options) != AGENT_OK) goto fail;
    agent_options_add_tool(options, tools[0]);
    agent_options_add_tool(options, tools[1]);
    if (agent_options_set_scripted_model(options, SCRIPT) != AGENT_OK) goto fail;

    AgentHandle *agent = NULL;
    if (agent_new(options, &agent) != AGENT_OK) goto fail;
    agent_tool_free(tools[0]); /* the agent keeps its own references */
    agent_tool_free(tools[1]);
    uint64_t subscription;
    agent_subscribe(agent, on_event, NULL, NULL, &subscription);

    printf("> What is this project?\n");
    if (agent_prompt_text(agent, "What is this project?", NULL, NULL, NULL) != AGENT_OK) goto fail;
    agent_wait_for_idle(agent, -1);

    char *state = NULL;
    agent_get_state(agent, &state);
    int messages = 0;
    for (const char *p = strstr(state, "\"messages\":"); p && (p = strstr(p + 1, "\"role\":")); ) messages++;
    printf("Transcript: %d messages (system prompt, user, assistant with 2 tool calls, 2 tool results, assistant).\n",
           messages);
    agent_string_free(state);
    agent_free(agent);
    return 0;
fail:
    fprintf(stderr, "libagent error: %s\n", agent_last_error());
    return 1;
}

/*
 * Plugging in a real model: a stream function receives the request JSON ({model, context:
 * {messages}, options}) and pushes assistant stream events from any thread, for example as an
 * HTTP response streams in:
 *
 *   static void my_model_stream(void *client, const char *request_json, AgentStream *stream) {
 *       start_http_request(client, request_json, stream);   // returns at once
 *   }
 *   // ...then, on the HTTP thread, for each chunk of the provider's response:
 *   agent_stream_push(stream, "{\"type\":\"start\"}");
 *   agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}");
 *   agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"Hel\"}");
 *   agent_stream_push(stream, "{\"type\":\"text_end\",\"contentIndex\":0}");
 *   agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}");
 *   // Provider errors end the stream with {"type":"error","reason":"error","errorMessage":"..."}.
 */

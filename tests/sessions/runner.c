/*
 * The sessions kit's runner (../shared/sessions/README.md) through libagent's C ABI; its
 * context-management ops are in context_ops.c (included below). For a load or append fixture it
 * writes the session file (load) or starts a session (append), makes the fixture's calls with
 * agent_session_append / _branch / _branch_with_summary / _fork, and writes OUT/NNN-name.json
 * with what agent_session_get returns and the file afterwards. Fixtures of an unknown op are skipped and write nothing.
 *
 *   runner FIXTURES_DIR OUT_DIR
 *
 * Exits non-zero when a fixture cannot be read or a result cannot be written (a session error is
 * a result: the kit records refusals). JSON in C: jansson.
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <libagent/agent.h>

#define KIT_CWD_OPTIONS "{\"cwd\":\"/kit/cwd\"}"

static void die(const char *what, const char *detail) {
    fprintf(stderr, "sessions runner: %s: %s\n", what, detail);
    exit(2);
}

/* Takes ownership of `error`: NULL -> 1 (ok), else prints nothing and returns 0. */
static int ok(AgentError *error) {
    if (error == NULL) return 1;
    agent_error_free(error);
    return 0;
}

/* A JSON part of the session, parsed (the caller owns it). */
static json_t *get_part(AgentSession session, AgentSessionPart part) {
    char *text = NULL;
    size_t len = 0;
    AgentError *error = agent_session_get(session, part, &text, &len);
    if (error != NULL) die("agent_session_get", agent_error_message(error, NULL));
    json_error_t parse_error;
    json_t *value = json_loadb(text, len, JSON_DECODE_ANY, &parse_error);
    agent_string_free(text);
    if (value == NULL) die("agent_session_get returned JSON jansson cannot read", parse_error.text);
    return value;
}

/* JavaScript's String.prototype.trim() on ASCII whitespace and the common Unicode spaces. */
static int is_blank(const char *line, size_t len) {
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)line[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') { i++; continue; }
        if (i + 1 < len && c == 0xC2 && (unsigned char)line[i + 1] == 0xA0) { i += 2; continue; }
        if (i + 3 <= len && c == 0xEF && (unsigned char)line[i + 1] == 0xBB && (unsigned char)line[i + 2] == 0xBF) { i += 3; continue; }
        return 0;
    }
    return 1;
}

/* The file as the kit records it: {"endsWithNewline", "lines": [parsed | {$blank} | {$unparsed}]},
 * or null when there is no file. */
static json_t *file_record(const char *path) {
    FILE *file = path ? fopen(path, "rb") : NULL;
    if (file == NULL) return json_null();
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (text == NULL || fread(text, 1, (size_t)size, file) != (size_t)size) die("read", path);
    fclose(file);
    json_t *lines = json_array();
    int ends_with_newline = size > 0 && text[size - 1] == '\n';
    size_t end = ends_with_newline ? (size_t)size - 1 : (size_t)size;
    if (size > 0) {
        size_t start = 0;
        for (size_t i = 0; i <= end; i++) {
            if (i < end && text[i] != '\n') continue;
            const char *line = text + start;
            size_t len = i - start;
            json_t *value = NULL;
            if (is_blank(line, len)) {
                value = json_pack("{s:s%}", "$blank", line, len);
            } else {
                value = json_loadb(line, len, JSON_DECODE_ANY, NULL);
                if (value == NULL) value = json_pack("{s:s%}", "$unparsed", line, len);
            }
            json_array_append_new(lines, value);
            start = i + 1;
        }
    }
    free(text);
    return json_pack("{s:b,s:o}", "endsWithNewline", ends_with_newline, "lines", lines);
}

/* The fixture's file text (§4.1): `jsonl` as written, or `lines` (objects compact, strings raw). */
static char *fixture_text(json_t *fixture, size_t *out_len) {
    json_t *jsonl = json_object_get(fixture, "jsonl");
    if (json_is_string(jsonl)) {
        *out_len = json_string_length(jsonl);
        char *copy = malloc(*out_len + 1);
        memcpy(copy, json_string_value(jsonl), *out_len + 1);
        return copy;
    }
    json_t *lines = json_object_get(fixture, "lines");
    size_t cap = 1024, len = 0;
    char *text = malloc(cap);
    size_t index;
    json_t *line;
    json_array_foreach(lines, index, line) {
        char *dumped = NULL;
        const char *part;
        size_t part_len;
        if (json_is_string(line)) {
            part = json_string_value(line);
            part_len = json_string_length(line);
        } else {
            dumped = json_dumps(line, JSON_COMPACT | JSON_ENCODE_ANY);
            part = dumped;
            part_len = strlen(dumped);
        }
        while (len + part_len + 2 > cap) text = realloc(text, cap *= 2);
        if (index > 0) text[len++] = '\n';
        memcpy(text + len, part, part_len);
        len += part_len;
        free(dumped);
    }
    json_t *trailing = json_object_get(fixture, "trailingNewline");
    if (json_array_size(lines) > 0 && !json_is_false(trailing)) text[len++] = '\n';
    text[len] = '\0';
    *out_len = len;
    return text;
}

/* A call's `target` / `firstKept`: a string id, or the id call k returned. NULL when absent/null;
 * *unresolved set when a number names a call that returned no id. */
static const char *resolve(json_t *ref, json_t *returned, int *unresolved) {
    if (ref == NULL || json_is_null(ref)) return NULL;
    if (json_is_integer(ref)) {
        json_t *id = json_array_get(returned, (size_t)json_integer_value(ref));
        if (!json_is_string(id)) { *unresolved = 1; return NULL; }
        return json_string_value(id);
    }
    return json_string_value(ref);
}

/* Copies `key` from `call` to `entry` when the call has it. */
static void copy_member(json_t *entry, const char *to, json_t *call, const char *from) {
    json_t *value = json_object_get(call, from);
    if (value != NULL) json_object_set(entry, to, value);
}

static int append_entry(AgentSession session, json_t *entry, json_t **out_id) {
    char *text = json_dumps(entry, JSON_COMPACT);
    json_decref(entry);
    char *id = NULL;
    size_t id_len = 0;
    int done = ok(agent_session_append(session, text, strlen(text), &id, &id_len));
    free(text);
    if (done) {
        *out_id = json_stringn(id, id_len);
        agent_string_free(id);
    }
    return done;
}

/* Makes one kit call (§4.2); returns 1 when it succeeded. *out_id: the new entry's id, if any. */
static int apply_call(AgentSession session, json_t *call, json_t *returned, json_t **out_id) {
    const char *name = json_string_value(json_object_get(call, "call"));
    int unresolved = 0;
    const char *target = resolve(json_object_get(call, "target"), returned, &unresolved);
    if (unresolved) return 0;
    *out_id = json_null();
    if (name == NULL) die("a call without \"call\"", "");
    json_t *entry = json_object();
    if (strcmp(name, "appendMessage") == 0) {
        json_object_set_new(entry, "type", json_string("message"));
        copy_member(entry, "message", call, "message");
    } else if (strcmp(name, "appendModelChange") == 0) {
        json_object_set_new(entry, "type", json_string("model_change"));
        copy_member(entry, "provider", call, "provider");
        copy_member(entry, "modelId", call, "modelId");
    } else if (strcmp(name, "appendThinkingLevelChange") == 0) {
        json_object_set_new(entry, "type", json_string("thinking_level_change"));
        copy_member(entry, "thinkingLevel", call, "thinkingLevel");
    } else if (strcmp(name, "appendLabelChange") == 0) {
        json_object_set_new(entry, "type", json_string("label"));
        if (target) json_object_set_new(entry, "targetId", json_string(target));
        copy_member(entry, "label", call, "label");
    } else if (strcmp(name, "appendCompaction") == 0) {
        const char *kept = resolve(json_object_get(call, "firstKept"), returned, &unresolved);
        if (unresolved) { json_decref(entry); return 0; }
        json_object_set_new(entry, "type", json_string("compaction"));
        copy_member(entry, "summary", call, "summary");
        json_object_set_new(entry, "firstKeptEntryId", kept ? json_string(kept) : json_null());
        copy_member(entry, "tokensBefore", call, "tokensBefore");
        copy_member(entry, "details", call, "details");
        copy_member(entry, "usage", call, "usage");
        copy_member(entry, "fromHook", call, "fromHook");
    } else if (strcmp(name, "appendCustomEntry") == 0) {
        json_object_set_new(entry, "type", json_string("custom"));
        copy_member(entry, "customType", call, "customType");
        copy_member(entry, "data", call, "data");
    } else if (strcmp(name, "appendCustomMessageEntry") == 0) {
        json_object_set_new(entry, "type", json_string("custom_message"));
        copy_member(entry, "customType", call, "customType");
        copy_member(entry, "content", call, "content");
        copy_member(entry, "display", call, "display");
        copy_member(entry, "details", call, "details");
    } else if (strcmp(name, "appendSessionInfo") == 0) {
        json_object_set_new(entry, "type", json_string("session_info"));
        copy_member(entry, "name", call, "name");
    } else if (strcmp(name, "appendContextEdit") == 0) {
        json_object_set_new(entry, "type", json_string("context_edit"));
        if (target) json_object_set_new(entry, "targetId", json_string(target));
        copy_member(entry, "replacement", call, "replacement");
    } else if (strcmp(name, "appendUsage") == 0) {
        json_object_set_new(entry, "type", json_string("usage"));
        copy_member(entry, "kind", call, "kind");
        copy_member(entry, "provider", call, "provider");
        copy_member(entry, "model", call, "model");
        copy_member(entry, "usage", call, "usage");
        copy_member(entry, "note", call, "note");
    } else {
        json_decref(entry);
        if (strcmp(name, "branch") == 0) {
            if (target == NULL) return 0;
            return ok(agent_session_branch(session, target, AGENT_NTS));
        }
        if (strcmp(name, "resetLeaf") == 0) return ok(agent_session_branch(session, NULL, 0));
        if (strcmp(name, "createBranchedSession") == 0) {
            if (target == NULL) return 0;
            return ok(agent_session_fork(session, target, AGENT_NTS));
        }
        if (strcmp(name, "branchWithSummary") == 0) {
            json_t *summary = json_object();
            copy_member(summary, "summary", call, "summary");
            copy_member(summary, "details", call, "details");
            copy_member(summary, "fromHook", call, "fromHook");
            copy_member(summary, "usage", call, "usage");
            char *text = json_dumps(summary, JSON_COMPACT);
            json_decref(summary);
            char *id = NULL;
            size_t id_len = 0;
            int done = ok(agent_session_branch_with_summary(session, target, target ? AGENT_NTS : 0, text,
                                                            strlen(text), &id, &id_len));
            free(text);
            if (done) {
                *out_id = json_stringn(id, id_len);
                agent_string_free(id);
            }
            return done;
        }
        die("unknown call", name);
    }
    return append_entry(session, entry, out_id);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

/* One load or append fixture; returns the result object. */
static json_t *run_session_fixture(json_t *fixture, const char *op) {
    char dir[] = "/tmp/sessions-kit-XXXXXX";
    if (mkdtemp(dir) == NULL) die("mkdtemp", strerror(errno));
    json_t *result = json_object();
    AgentSession session = {0};
    int persisted = 1;
    if (strcmp(op, "load") == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/session.jsonl", dir);
        size_t len;
        char *text = fixture_text(fixture, &len);
        FILE *file = fopen(path, "wb");
        if (file == NULL || fwrite(text, 1, len, file) != len || fclose(file) != 0) die("write", path);
        free(text);
        if (!ok(agent_session_open(path, AGENT_NTS, KIT_CWD_OPTIONS, AGENT_NTS, &session))) {
            json_object_set_new(result, "error", json_true());
            json_object_set_new(result, "file", file_record(path));
            nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
            return result;
        }
    } else if (json_is_false(json_object_get(fixture, "persist"))) {
        persisted = 0;
        if (!ok(agent_session_in_memory(KIT_CWD_OPTIONS, AGENT_NTS, &session))) die("agent_session_in_memory", "");
    } else {
        char sessions[4096];
        snprintf(sessions, sizeof sessions, "%s/sessions", dir);
        if (!ok(agent_session_create(sessions, AGENT_NTS, KIT_CWD_OPTIONS, AGENT_NTS, &session)))
            die("agent_session_create", sessions);
    }

    json_t *calls = json_object_get(fixture, "calls");
    json_t *returned = json_array();
    json_t *records = json_array();
    size_t index;
    json_t *call;
    json_array_foreach(calls, index, call) {
        json_t *id = NULL;
        int done = apply_call(session, call, returned, &id);
        json_array_append_new(returned, done && id ? id : json_null());
        if (!done && id) json_decref(id);
        json_t *record = json_pack("{s:b,s:o}", "ok", done, "leafId", get_part(session, AGENT_SESSION_LEAF_ID));
        if (done && persisted) {
            json_t *file = get_part(session, AGENT_SESSION_FILE);
            json_object_set(record, "fileExists", json_object_get(file, "exists"));
            json_decref(file);
        }
        json_array_append_new(records, record);
    }
    json_decref(returned);

    json_object_set_new(result, "header", get_part(session, AGENT_SESSION_HEADER));
    json_object_set_new(result, "entries", get_part(session, AGENT_SESSION_ENTRIES));
    json_object_set_new(result, "leafId", get_part(session, AGENT_SESSION_LEAF_ID));
    json_object_set_new(result, "context", get_part(session, AGENT_SESSION_CONTEXT));
    json_object_set_new(result, "llm", get_part(session, AGENT_SESSION_LLM));
    if (calls != NULL) json_object_set(result, "calls", records);
    json_decref(records);
    if (persisted) {
        json_t *file = get_part(session, AGENT_SESSION_FILE);
        const char *path = json_is_true(json_object_get(file, "exists"))
                               ? json_string_value(json_object_get(file, "path")) : NULL;
        json_object_set_new(result, "file", file_record(path));
        json_decref(file);
    }
    if (!ok(agent_session_free(session))) die("agent_session_free", "");
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return result;
}

#include "context_ops.c"

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_fixture(const struct dirent *entry) {
    size_t len = strlen(entry->d_name);
    return len > 5 && strcmp(entry->d_name + len - 5, ".json") == 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s FIXTURES_DIR OUT_DIR\n", argv[0]);
        return 2;
    }
    struct dirent **names;
    int count = scandir(argv[1], &names, is_fixture, by_name);
    if (count < 0) die(argv[1], strerror(errno));
    mkdir(argv[2], 0777);
    int ran = 0, skipped = 0;
    for (int i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], names[i]->d_name);
        json_error_t error;
        json_t *fixture = json_load_file(path, 0, &error);
        if (fixture == NULL) die(path, error.text);
        const char *op = json_string_value(json_object_get(fixture, "op"));
        json_t *result = NULL;
        if (op != NULL && (strcmp(op, "load") == 0 || strcmp(op, "append") == 0))
            result = run_session_fixture(fixture, op);
        else if (op != NULL)
            result = run_context_fixture(fixture, op);
        if (result == NULL) {
            skipped++;
        } else {
            char out[4096];
            snprintf(out, sizeof out, "%s/%s", argv[2], names[i]->d_name);
            if (json_dump_file(result, out, JSON_INDENT(1)) != 0) die("write", out);
            json_decref(result);
            ran++;
        }
        json_decref(fixture);
        free(names[i]);
    }
    free(names);
    if (ran == 0) {
        printf("sessions runner: no fixtures of a known op (*.json) in %s\n", argv[1]);
        return 1;
    }
    printf("sessions runner: %d fixtures run, %d of unknown ops skipped\n", ran, skipped);
    return 0;
}

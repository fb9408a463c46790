/*
 * libagent assistant: a small terminal coding assistant in one C11 file.
 *
 *   assistant [--root DIR] [--yes | --no-write] [--script FILE] [--mcp FILE]
 *             [--session FILE | --continue [--sessions-dir DIR]]
 *
 * Reads requests from stdin, one per line (Ctrl-D or /quit quits, Ctrl-C aborts an answer), runs
 * each through an agent and streams the answer to stdout as it arrives. The model works on the
 * files under the root directory (the current directory unless --root) with libagent's built-in
 * coding tools (pi-coding-agent's, one call: agent_coding_tools_new):
 *   read, ls, find, grep   read files and search them
 *   write, edit            change files; each asks first: y/n from /dev/tty (else stdin); --yes
 *                          approves every change, --no-write refuses them
 * The conversation can be kept in a session file (pi-coding-agent's format) and resumed later:
 * --session FILE opens that file (or starts it), --continue the newest session of the root in the
 * per-directory layout under --sessions-dir (default $LIBAGENT_SESSIONS_DIR, else
 * ~/.libagent/sessions), or a new one there. The agent starts from the session's context and
 * appends every message as it goes.
 * --mcp FILE adds the tools of the MCP servers that file configures (the standard
 * {"mcpServers": {...}} JSON: stdio servers it starts, streamable-HTTP servers it reaches), named
 * mcp__<server>__<tool>; each server's state is printed at start.
 * The pack keeps every path of these tools inside the root: paths that lead out of it ("..",
 * absolute paths, symbolic links) are refused. bash is left off: it is not confined (its commands
 * run with this process's rights; consent would be its only gate).
 *
 * The model: the built-in scripted model (an offline demo: one tool call, then an answer; --script
 * FILE replaces its script), or a real endpoint when these are set:
 *   LIBAGENT_API        openai-completions | anthropic-messages | openai-responses |
 *                       google-generative-ai
 *   LIBAGENT_BASE_URL   e.g. http://127.0.0.1:8080/v1 (llama.cpp), https://api.anthropic.com,
 *                       https://generativelanguage.googleapis.com/v1beta (Gemini)
 *   LIBAGENT_MODEL      the model id the server knows, or a model of libagent's catalogue
 *                       ("anthropic/claude-sonnet-4-5", pi-ai's names): then the catalogue gives
 *                       the API, base URL, provider, limits and prices, and the variables here
 *                       override them when set
 *   LIBAGENT_PROVIDER   optional (default openai / anthropic / google by the API: picks the API key
 *                       variable, OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY)
 *   LIBAGENT_API_KEY    optional: the key to send instead (any value for servers without auth)
 *   LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS   optional (default: the catalogue's, else 128000,
 *                       4096)
 *   LIBAGENT_RETRY_BASE_DELAY_MS   optional: the first wait before retrying a failed request
 *                       (default 2000; then doubled, 3 retries)
 *
 * Long conversations: a real model's conversation is compacted near its context window
 * ("[compacted: N tokens -> M]"), and a request that failed for a passing reason (overloaded,
 * rate limited, 5xx, a dropped connection) is tried again ("[retrying in 2s: <error>]").
 *
 * How it uses libagent: the agent is host-pumped (a dispatcher): its callbacks (the listener
 * that prints, the consent hook that asks the user) run only on the main thread, inside
 * agent_run_wait, while the network keeps going on libagent's own thread. So the consent hook
 * simply asks and answers before it returns, nothing is shared between threads but the run to
 * abort on Ctrl-C, and no locks or queues are needed.
 */
#define _XOPEN_SOURCE 700 /* realpath, getline, sigwait */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libagent/agent.h>

/* ---- growable strings ------------------------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static void out_of_memory(void) {
    fputs("error: out of memory\n", stderr);
    exit(1);
}

static void buf_add(Buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) out_of_memory();
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_puts(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_printf(Buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) { buf_add(b, small, (size_t)n); return; }
    char *big = malloc((size_t)n + 1);
    if (!big) out_of_memory();
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_add(b, big, (size_t)n);
    free(big);
}

/* The length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    if (s[0] < 0x80) return 1;
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (len == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
    if (len == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
    return len;
}

/* Appends s[0..n) as a JSON string literal; invalid UTF-8 becomes U+FFFD. */
static void buf_json(Buf *b, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    buf_add(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') { buf_add(b, "\\", 1); buf_add(b, (const char *)&p[i], 1); i++; }
        else if (c == '\n') { buf_add(b, "\\n", 2); i++; }
        else if (c == '\t') { buf_add(b, "\\t", 2); i++; }
        else if (c == '\r') { buf_add(b, "\\r", 2); i++; }
        else if (c < 0x20) { buf_printf(b, "\\u%04x", c); i++; }
        else {
            size_t len = utf8_len(p + i, n - i);
            if (len == 0) { buf_puts(b, "\\ufffd"); i++; }
            else { buf_add(b, (const char *)p + i, len); i += len; }
        }
    }
    buf_add(b, "\"", 1);
}

static void buf_json_str(Buf *b, const char *s) { buf_json(b, s, strlen(s)); }

/* ---- reading JSON (the tools' validated arguments and the events libagent sends) ------------- */

static const char *json_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

/* The end of the value at p (after leading whitespace), or NULL if malformed. */
static const char *json_skip(const char *p, int depth) {
    p = json_ws(p);
    if (depth > 200) return NULL;
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
            if (*p == '\\' && !*++p) return NULL;
        return *p ? p + 1 : NULL;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = json_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                if (!(p = json_skip(p, depth + 1))) return NULL;
                p = json_ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = json_skip(p, depth + 1))) return NULL;
            p = json_ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
        }
    }
    const char *start = p;
    while (*p && strchr("+-.0123456789eEtruefalsn", *p)) p++;
    return p > start ? p : NULL;
}

/* The value of `key` in the object at obj, or NULL. Keys are compared as written (ASCII keys). */
static const char *json_get(const char *obj, const char *key) {
    if (!obj) return NULL;
    const char *p = json_ws(obj);
    if (*p != '{') return NULL;
    p = json_ws(p + 1);
    size_t klen = strlen(key);
    while (*p == '"') {
        const char *kend = json_skip(p, 0);
        if (!kend) return NULL;
        int match = (size_t)(kend - p) == klen + 2 && strncmp(p + 1, key, klen) == 0;
        p = json_ws(kend);
        if (*p++ != ':') return NULL;
        p = json_ws(p);
        if (match) return p;
        if (!(p = json_skip(p, 0))) return NULL;
        p = json_ws(p);
        if (*p != ',') return NULL;
        p = json_ws(p + 1);
    }
    return NULL;
}

/* Element i of the array at arr, or NULL. */
static const char *json_at(const char *arr, size_t i) {
    if (!arr) return NULL;
    const char *p = json_ws(arr);
    if (*p != '[') return NULL;
    p = json_ws(p + 1);
    if (*p == ']') return NULL;
    for (;;) {
        if (i-- == 0) return p;
        if (!(p = json_skip(p, 0))) return NULL;
        p = json_ws(p);
        if (*p != ',') return NULL;
        p = json_ws(p + 1);
    }
}

static void utf8_put(Buf *b, unsigned long cp) {
    char s[4];
    size_t n;
    if (cp < 0x80) { s[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { s[0] = (char)(0xC0 | cp >> 6); s[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12); s[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); s[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        s[0] = (char)(0xF0 | cp >> 18); s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        s[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); s[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    buf_add(b, s, n);
}

static unsigned long hex4(const char *p) {
    unsigned long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return ULONG_MAX;
        v = v * 16 + (unsigned long)d;
    }
    return v;
}

/* Decodes the JSON string at p into b (which it resets). Returns 0 if p is not a string. */
static int json_string(const char *p, Buf *b) {
    b->len = 0;
    buf_add(b, "", 0);
    if (!p || *(p = json_ws(p)) != '"') return 0;
    for (p++; *p && *p != '"'; p++) {
        if (*p != '\\') { buf_add(b, p, 1); continue; }
        char c = *++p;
        switch (c) {
        case 'n': buf_add(b, "\n", 1); break;
        case 't': buf_add(b, "\t", 1); break;
        case 'r': buf_add(b, "\r", 1); break;
        case 'b': buf_add(b, "\b", 1); break;
        case 'f': buf_add(b, "\f", 1); break;
        case 'u': {
            unsigned long cp = hex4(p + 1);
            if (cp == ULONG_MAX) return 0;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
                unsigned long lo = hex4(p + 3);
                if (lo >= 0xDC00 && lo < 0xE000) { cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00); p += 6; }
            }
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
            utf8_put(b, cp);
            break;
        }
        case '\0': return 0;
        default: buf_add(b, &c, 1);
        }
    }
    return *p == '"';
}

/* ---- the application ------------------------------------------------------------------------- */

/* A change (write or edit) waiting for the user's answer on the main thread. */
typedef struct {
    char root[PATH_MAX];
    int auto_yes, no_write;
    AgentHandle agent;
    FILE *tty_in, *tty_out; /* the terminal, for approvals (NULL: stdin and stdout) */
    int midline;            /* the last thing printed to stdout did not end a line */
    Buf failed_attempt;     /* the error of a failed request, said once the run shows it was final */

    pthread_mutex_t mu; /* guards the two below (the signal thread reads them) */
    AgentRun run;       /* the answer in progress ({0}: none) */
    int quitting;
} App;

/* Prints a libagent error and frees it; returns whether there was one. */
static int failed(AgentError *error, const char *doing) {
    if (!error) return 0;
    fprintf(stderr, "error: %s%s%s\n", doing ? doing : "", doing ? ": " : "", agent_error_message(error, NULL));
    agent_error_free(error);
    return 1;
}

static void end_line(App *app) {
    if (app->midline) { fputc('\n', stdout); app->midline = 0; }
}

/* Prints text for a terminal, replacing control characters (a model's output is untrusted). */
static void print_clean(FILE *out, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 && c != '\n' && c != '\t' ? '?' : c == 0x7F ? '?' : (int)c, out);
    }
}

/* Asks the user `question`; 1 = yes. Reads /dev/tty when there is one, else stdin. */
static int confirm(App *app, const char *question) {
    FILE *out = app->tty_out ? app->tty_out : stdout, *in = app->tty_in ? app->tty_in : stdin;
    fprintf(out, "%s [y/N] ", question);
    fflush(out);
    char answer[64];
    if (!fgets(answer, sizeof answer, in)) {
        fputc('\n', out);
        return 0;
    }
    if (in == stdin) fputs(answer, stdout); /* echo a piped answer, so the transcript reads well */
    if (!strchr(answer, '\n')) { /* drop the rest of a long line */
        int c;
        while ((c = fgetc(in)) != EOF && c != '\n') {}
    }
    return answer[0] == 'y' || answer[0] == 'Y';
}

/* Prints up to `max_lines` lines of `text`, each prefixed, cut at 100 bytes. */
static void print_lines(FILE *tty, const char *prefix, const char *text, int max_lines) {
    const char *p = text;
    long shown = 0, total = 0;
    for (const char *q = text; *q; q++) total += *q == '\n';
    if (*text && text[strlen(text) - 1] != '\n') total++;
    for (; shown < max_lines && *p; shown++) {
        size_t n = strcspn(p, "\n");
        fputs(prefix, tty);
        print_clean(tty, p, n > 100 ? 100 : n);
        fputs(n > 100 ? "...\n" : "\n", tty);
        p += n + (p[n] == '\n');
    }
    if (*p) fprintf(tty, "%.*s[... %ld more lines]\n", (int)strcspn(prefix, "+-"), prefix, total - shown);
}

/* What a write would do: the path, the size, new or replacing, the first lines. */
static void preview_write(App *app, FILE *tty, const char *path, const char *args) {
    Buf content = {0}, file = {0};
    json_string(json_get(args, "content"), &content);
    if (path[0] == '/') buf_puts(&file, path);
    else buf_printf(&file, "%s/%s", app->root, path);
    struct stat st;
    int exists = stat(file.data, &st) == 0;
    long lines = 0;
    for (size_t i = 0; i < content.len; i++) lines += content.data[i] == '\n';
    if (content.len && content.data[content.len - 1] != '\n') lines++;
    fputs("[write] ", tty);
    print_clean(tty, path, strlen(path));
    fprintf(tty, ": %zu bytes, %ld %s (%s)\n", content.len, lines, lines == 1 ? "line" : "lines",
            exists ? "replaces the existing file" : "new file");
    print_lines(tty, "  | ", content.data, 10);
    free(content.data);
    free(file.data);
}

/* What an edit would do: each replacement's old and new text. */
static void preview_edit(FILE *tty, const char *path, const char *args) {
    const char *edits = json_get(args, "edits");
    size_t count = 0;
    while (edits && json_at(edits, count)) count++;
    fputs("[edit] ", tty);
    print_clean(tty, path, strlen(path));
    fprintf(tty, ": %zu %s\n", count, count == 1 ? "replacement" : "replacements");
    for (size_t i = 0; i < count && i < 5; i++) {
        Buf old_text = {0}, new_text = {0};
        json_string(json_get(json_at(edits, i), "oldText"), &old_text);
        json_string(json_get(json_at(edits, i), "newText"), &new_text);
        print_lines(tty, "  - ", old_text.data ? old_text.data : "", 5);
        print_lines(tty, "  + ", new_text.data ? new_text.data : "", 5);
        free(old_text.data);
        free(new_text.data);
    }
}

/* Answers a consent question: allowed, or refused with the reason the model will see. */
static void answer(AgentHookCall call, int allow, const char *reason) {
    Buf out = {0};
    if (allow) {
        buf_puts(&out, "true");
    } else {
        buf_puts(&out, "{\"allow\":false,\"reason\":");
        buf_json_str(&out, reason);
        buf_puts(&out, "}");
    }
    failed(agent_hook_call_complete(call, out.data, out.len), "answering a consent question");
    free(out.data);
}

/* The consent hook (on the main thread, inside agent_run_wait): asks the user about a write or
 * an edit, `input_json` = {"toolCallId", "tool", "args"}, and answers before returning. */
static void on_consent(void *ud, const char *input_json, size_t input_len, AgentHookCall call) {
    (void)input_len;
    App *app = ud;
    Buf tool = {0}, path = {0}, reason = {0};
    json_string(json_get(input_json, "tool"), &tool);
    const char *args = json_get(input_json, "args");
    json_string(json_get(args, "path"), &path);
    int is_write = strcmp(tool.data ? tool.data : "", "write") == 0;
    const char *verb = is_write ? "written" : "changed";
    bool aborted = false;
    FILE *tty = app->tty_out ? app->tty_out : stdout;
    int allow = 0;
    if (!agent_hook_call_is_aborted(call, &aborted) && aborted) {
        buf_puts(&reason, "Operation aborted"); /* e.g. Ctrl-C: don't ask */
        goto done;
    }
    if (app->no_write) {
        buf_puts(&reason, "writing files is disabled in this session (--no-write)");
        goto done;
    }
    if (is_write) preview_write(app, tty, path.data, args);
    else preview_edit(tty, path.data, args);
    if (app->auto_yes) {
        fprintf(tty, "[%s] approved (--yes)\n", tool.data);
        fflush(tty);
    } else {
        Buf question = {0};
        buf_printf(&question, "%s %s?", is_write ? "Write" : "Edit", path.data);
        int yes = confirm(app, question.data);
        free(question.data);
        if (!yes) {
            buf_printf(&reason, "the user declined: '%s' was not %s", path.data, verb);
            goto done;
        }
    }
    if (!agent_hook_call_is_aborted(call, &aborted) && aborted) { /* Ctrl-C while asking */
        buf_printf(&reason, "aborted: '%s' was not %s", path.data, verb);
        goto done;
    }
    allow = 1;
done:
    answer(call, allow, reason.data);
    free(tool.data);
    free(path.data);
    free(reason.data);
}

/* ---- callbacks (host-pumped: on the main thread, inside agent_run_wait) ----------------------- */

/* Prints `text` on one line, at most `max` bytes of it. */
static void print_brief(const char *text, size_t max) {
    size_t n = strcspn(text, "\n");
    print_clean(stdout, text, n > max ? max : n);
    if (n > max || text[n]) fputs(" ...", stdout);
}

/* A number member of a JSON object (0 when absent). */
static double json_number(const char *obj, const char *key) {
    const char *value = obj ? json_get(obj, key) : NULL;
    return value ? strtod(json_ws(value), NULL) : 0;
}

/* A failed request is said once the run is over: a retry or an overflow's compaction may
 * still recover it (they print their own line instead). */
static void say_failed_attempt(App *app) {
    if (app->failed_attempt.len) fprintf(stderr, "error: %s\n", app->failed_attempt.data);
    app->failed_attempt.len = 0;
}

/* Context management's events: one line per compaction or retry. */
static void show_context_event(App *app, const AgentEvent *event, const char *json) {
    Buf text = {0};
    if (event->kind == AGENT_EVENT_AUTO_RETRY_START) {
        json_string(json_get(json, "errorMessage"), &text);
        end_line(app);
        fflush(stdout);
        fprintf(stderr, "[retrying in %gs: %s]\n", json_number(json, "delayMs") / 1000.0, text.data ? text.data : "");
        app->failed_attempt.len = 0;
    } else if (event->kind == AGENT_EVENT_COMPACTION_START) {
        app->failed_attempt.len = 0; /* an overflow: compacted, then tried again */
    } else if (event->kind == AGENT_EVENT_COMPACTION_END) {
        const char *result = json_get(json, "result");
        json_string(json_get(json, "errorMessage"), &text);
        end_line(app);
        fflush(stdout);
        if (result && *json_ws(result) == '{')
            fprintf(stderr, "[compacted: %.0f tokens -> %.0f]\n", json_number(result, "tokensBefore"),
                    json_number(result, "estimatedTokensAfter"));
        else if (text.len)
            fprintf(stderr, "[compaction failed: %s]\n", text.data);
    }
    free(text.data);
}

/* The listener: streamed text, tool calls and their results, errors. */
static AgentListenerAnswer on_event(void *ud, const AgentEvent *event) {
    App *app = ud;
    AgentStr event_json;
    const char *json = NULL;
    if (event->kind != AGENT_EVENT_MESSAGE_UPDATE && !agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &event_json))
        json = event_json.ptr;
    if (event->update == AGENT_UPDATE_TEXT_DELTA && event->delta.len) {
        fwrite(event->delta.ptr, 1, event->delta.len, stdout);
        app->midline = event->delta.ptr[event->delta.len - 1] != '\n';
    } else if (event->kind == AGENT_EVENT_TOOL_EXECUTION_START && json) {
        const char *args = json_get(json, "args"), *args_end = json_skip(args ? args : "", 0);
        end_line(app);
        printf("[tool] %.*s ", (int)event->tool_name.len, event->tool_name.ptr);
        if (args && args_end) {
            size_t n = (size_t)(args_end - args);
            print_clean(stdout, args, n > 160 ? 160 : n);
            if (n > 160) fputs(" ...", stdout);
        }
        fputc('\n', stdout);
    } else if (event->kind == AGENT_EVENT_TOOL_EXECUTION_END && json) {
        Buf text = {0};
        json_string(json_get(json_at(json_get(json_get(json, "result"), "content"), 0), "text"), &text);
        int is_error = strncmp(json_ws(json_get(json, "isError") ? json_get(json, "isError") : ""), "true", 4) == 0;
        long lines = text.len > 0;
        for (size_t i = 0; i + 1 < text.len; i++) lines += text.data[i] == '\n';
        end_line(app);
        fputs(is_error ? "[error] " : "[result] ", stdout);
        print_brief(text.data, 100);
        if (!is_error && lines > 1) printf(" (%ld lines)", lines);
        fputc('\n', stdout);
        free(text.data);
    } else if (event->kind >= AGENT_EVENT_COMPACTION_START && event->kind <= AGENT_EVENT_AUTO_RETRY_END && json) {
        show_context_event(app, event, json);
    } else if (event->kind == AGENT_EVENT_MESSAGE_END && json) {
        const char *message = json_get(json, "message");
        Buf role = {0}, reason = {0}, error = {0};
        json_string(json_get(message, "role"), &role);
        json_string(json_get(message, "stopReason"), &reason);
        json_string(json_get(message, "errorMessage"), &error);
        if (strcmp(role.data, "assistant") == 0) {
            end_line(app);
            fflush(stdout);
            if (strcmp(reason.data, "error") == 0) {
                app->failed_attempt.len = 0;
                buf_puts(&app->failed_attempt, error.len ? error.data : "the model request failed");
            }
            else if (strcmp(reason.data, "aborted") == 0) fprintf(stderr, "[aborted]\n");
            else if (strcmp(reason.data, "length") == 0) fprintf(stderr, "[the answer was cut off: maxTokens reached]\n");
        }
        free(role.data);
        free(reason.data);
        free(error.data);
    }
    fflush(stdout);
    return AGENT_LISTENER_CONTINUE;
}

/* getApiKey(provider): LIBAGENT_API_KEY when set, else the provider's own variable. */
static void on_get_api_key(void *ud, const char *provider_json, size_t provider_len, AgentHookCall call) {
    (void)provider_json, (void)provider_len;
    const char *key = ud;
    Buf answer = {0};
    buf_json_str(&answer, key);
    failed(agent_hook_call_complete(call, answer.data, answer.len), "answering getApiKey");
    free(answer.data);
}

/* Ctrl-C: a thread waits for SIGINT (blocked everywhere else) and aborts the running answer. */
static void *signal_thread(void *ud) {
    App *app = ud;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    for (;;) {
        int sig;
        if (sigwait(&set, &sig) != 0) continue;
        pthread_mutex_lock(&app->mu);
        int quitting = app->quitting;
        AgentRun run = app->run;
        /* The run handle names this answer: a late Ctrl-C can never abort a later one. */
        if (run.id) agent_error_free(agent_run_abort(run));
        pthread_mutex_unlock(&app->mu);
        if (quitting) return NULL;
        if (run.id) {
            fputs("\n[interrupt: aborting the answer]\n", stderr);
        } else {
            fputs("\n", stderr);
            _exit(130); /* at the prompt, Ctrl-C quits as usual */
        }
    }
}

/* ---- setup ------------------------------------------------------------------------------------ */

static const char *DEMO_SCRIPT =
    "["
    " {\"content\": ["
    "   {\"type\": \"text\", \"text\": \"Let me look at the root directory first.\", \"chunks\": 4},"
    "   {\"type\": \"toolCall\", \"id\": \"call_1\", \"name\": \"ls\", \"arguments\": {}}"
    " ]},"
    " {\"content\": [{\"type\": \"text\", \"chunks\": 8, \"text\":"
    "   \"Those are the files at the root. (This answer comes from the scripted demo model: set"
    " LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL to talk to a real model.)\"}]}"
    "]";

/* The coding tools the model gets: the pack's, without bash. */
static const char *TOOL_OPTIONS = "{\"tools\":[\"read\",\"ls\",\"find\",\"grep\",\"write\",\"edit\"]}";

static char *read_whole_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    Buf b = {0};
    char chunk[4096];
    size_t n;
    buf_add(&b, "", 0);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
    fclose(f);
    return b.data;
}

/* A positive integer from the environment, or `fallback`; -1 when set but invalid. */
static long env_number(const char *name, long fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n <= 0) {
        fprintf(stderr, "error: %s must be a positive integer, not '%s'\n", name, v);
        return -1;
    }
    return n;
}

/* A top-level member of the JSON object `json` (the contents of a string, or the text of a
 * number or literal) into out[cap]; 0 when absent. Enough for the catalogue's api, baseUrl,
 * provider and limits, which hold no escapes. */
static int json_member(const char *json, const char *key, char *out, size_t cap) {
    int depth = 0;
    for (const char *p = json; *p; p++) {
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') depth--;
        else if (*p == '"') {
            const char *start = ++p;
            while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (!*p) return 0;
            size_t len = (size_t)(p - start);
            const char *after = p + 1;
            while (*after == ' ') after++;
            if (depth != 1 || *after != ':' || len != strlen(key) || strncmp(start, key, len) != 0) continue;
            const char *value = after + 1;
            while (*value == ' ') value++;
            const char *stop = value;
            if (*value == '"') { value++; stop = strchr(value, '"'); if (!stop) return 0; }
            else stop = value + strcspn(value, ",}]");
            size_t n = (size_t)(stop - value) < cap - 1 ? (size_t)(stop - value) : cap - 1;
            memcpy(out, value, n);
            out[n] = '\0';
            return 1;
        }
    }
    return 0;
}

/* The model object from LIBAGENT_* (into model), and a description for the banner. Returns 1
 * for a real endpoint, 0 for the scripted model, -1 on a configuration error.
 * LIBAGENT_MODEL may name a model of libagent's catalogue ("anthropic/claude-sonnet-4-5"): its
 * api, baseUrl, provider, limits and prices come from there, and the other variables, when set,
 * override them. Any other model needs LIBAGENT_API and LIBAGENT_BASE_URL. */
static int model_from_env(Buf *model, Buf *about) {
    const char *api = getenv("LIBAGENT_API"), *base = getenv("LIBAGENT_BASE_URL"), *id = getenv("LIBAGENT_MODEL");
    const char *provider = getenv("LIBAGENT_PROVIDER");
    int set = (api && *api) + (base && *base) + (id && *id);
    if (set == 0) {
        buf_puts(model, "{\"id\":\"scripted-demo\",\"name\":\"scripted demo\",\"api\":\"faux\",\"provider\":\"libagent\"}");
        buf_puts(about, "the scripted demo model (offline)");
        return 0;
    }
    char *catalogued = NULL;
    AgentError *unknown = id && *id ? agent_model_find(id, AGENT_NTS, &catalogued, NULL) : NULL;
    if (!catalogued && set < 3) {
        if (unknown && strchr(id, '/')) {
            /* The library's sentence, without its hint for C programmers. */
            const char *text = agent_error_message(unknown, NULL), *hint = strstr(text, "; agent_model_list");
            fprintf(stderr, "error: LIBAGENT_MODEL: %.*s; or describe the model with all of LIBAGENT_API, "
                            "LIBAGENT_BASE_URL and LIBAGENT_MODEL\n", hint ? (int)(hint - text) : (int)strlen(text), text);
        } else {
            fprintf(stderr, "error: set all of LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL (missing:%s%s%s)\n",
                    api && *api ? "" : " LIBAGENT_API", base && *base ? "" : " LIBAGENT_BASE_URL",
                    id && *id ? "" : " LIBAGENT_MODEL");
        }
        agent_error_free(unknown);
        return -1;
    }
    agent_error_free(unknown);
    /* The catalogue's facts, for whatever the variables leave unset. */
    char model_api[64] = "", model_base[512] = "", model_provider[128] = "", model_id[256] = "", number[32];
    long catalogue_window = 128000, catalogue_max = 4096;
    if (catalogued) {
        json_member(catalogued, "api", model_api, sizeof model_api);
        json_member(catalogued, "baseUrl", model_base, sizeof model_base);
        json_member(catalogued, "provider", model_provider, sizeof model_provider);
        json_member(catalogued, "id", model_id, sizeof model_id);
        if (json_member(catalogued, "contextWindow", number, sizeof number)) catalogue_window = atol(number);
        if (json_member(catalogued, "maxTokens", number, sizeof number)) catalogue_max = atol(number);
        if (!(api && *api)) api = model_api;
        if (!(base && *base)) base = model_base;
        if (!(provider && *provider)) provider = model_provider;
    }
    if (strcmp(api, "openai-completions") == 0) { if (!provider || !*provider) provider = "openai"; }
    else if (strcmp(api, "anthropic-messages") == 0) { if (!provider || !*provider) provider = "anthropic"; }
    else if (strcmp(api, "openai-responses") == 0) { if (!provider || !*provider) provider = "openai"; }
    else if (strcmp(api, "google-generative-ai") == 0) { if (!provider || !*provider) provider = "google"; }
    else {
        if (catalogued && !getenv("LIBAGENT_API"))
            fprintf(stderr, "error: %s speaks the API '%s', which the built-in providers do not: choose another model\n",
                    id, api);
        else
            fprintf(stderr, "error: LIBAGENT_API must be openai-completions, anthropic-messages, openai-responses or "
                            "google-generative-ai, not '%s'\n", api);
        free(catalogued);
        return -1;
    }
    long context_window = env_number("LIBAGENT_CONTEXT_WINDOW", catalogue_window);
    long max_tokens = env_number("LIBAGENT_MAX_TOKENS", catalogue_max);
    if (context_window < 0 || max_tokens < 0) { free(catalogued); return -1; }
    if (catalogued) {
        /* The catalogue's object, the variables' values appended: in a JSON object libagent
         * reads, a repeated member's last value wins and it keeps its first place. */
        size_t len = strlen(catalogued);
        buf_add(model, catalogued, len - 1); /* without its closing brace */
        buf_puts(model, ",\"api\":");
        buf_json_str(model, api);
        buf_puts(model, ",\"provider\":");
        buf_json_str(model, provider);
        buf_puts(model, ",\"baseUrl\":");
        buf_json_str(model, base);
        buf_printf(model, ",\"contextWindow\":%ld,\"maxTokens\":%ld}", context_window, max_tokens);
        buf_printf(about, "%s at %s (%s, provider %s; from the model catalogue: context window %ld, max tokens %ld)",
                   model_id, base, api, provider, context_window, max_tokens);
        free(catalogued);
        return 1;
    }
    buf_puts(model, "{\"id\":");
    buf_json_str(model, id);
    buf_puts(model, ",\"name\":");
    buf_json_str(model, id);
    buf_puts(model, ",\"api\":");
    buf_json_str(model, api);
    buf_puts(model, ",\"provider\":");
    buf_json_str(model, provider);
    buf_puts(model, ",\"baseUrl\":");
    buf_json_str(model, base);
    buf_printf(model, ",\"reasoning\":false,\"input\":[\"text\"],"
                      "\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0},"
                      "\"contextWindow\":%ld,\"maxTokens\":%ld}", context_window, max_tokens);
    buf_printf(about, "%s at %s (%s, provider %s)", id, base, api, provider);
    return 1;
}

/* The number of messages in the JSON array at arr whose role is not "system" (the conversation's). */
static size_t count_messages(const char *arr) {
    const char *p = arr ? json_ws(arr) : NULL;
    if (!p || *p != '[') return 0;
    p = json_ws(p + 1);
    size_t n = 0;
    Buf role = {0};
    while (*p && *p != ']') {
        json_string(json_get(p, "role"), &role);
        n += strcmp(role.data, "system") != 0;
        if (!(p = json_skip(p, 0))) break;
        p = json_ws(p);
        if (*p == ',') p = json_ws(p + 1);
    }
    free(role.data);
    return n;
}

/* Starts the MCP servers of the configuration file at path, waits for them (as a prompt would, up
 * to 10 s) and prints each one's state. Returns 0 on failure (reported). */
static int connect_mcp(const char *path, AgentMcp *out) {
    char *config = read_whole_file(path);
    if (!config) {
        fprintf(stderr, "error: --mcp %s: %s\n", path, strerror(errno));
        return 0;
    }
    int ok = !failed(agent_mcp_connect(config, AGENT_NTS, out), "--mcp");
    free(config);
    char *servers = NULL;
    if (!ok || failed(agent_mcp_wait(*out, 10000, NULL), "--mcp") ||
        failed(agent_mcp_servers_json(*out, &servers, NULL), "--mcp"))
        return 0;
    Buf name = {0}, state = {0}, error = {0};
    const char *server;
    for (size_t i = 0; (server = json_at(servers, i)); i++) {
        json_string(json_get(server, "name"), &name);
        json_string(json_get(server, "state"), &state);
        fprintf(stderr, "mcp: %s: %s", name.data, state.data);
        if (strcmp(state.data, "ready") == 0) fprintf(stderr, ", %ld tools", atol(json_get(server, "toolCount")));
        if (json_string(json_get(server, "lastError"), &error)) fprintf(stderr, ": %s", error.data);
        fputc('\n', stderr);
    }
    free(name.data);
    free(state.data);
    free(error.data);
    agent_string_free(servers);
    return 1;
}

/* A session part as JSON (into out); 0 on failure (reported). */
static int session_part(AgentSession session, AgentSessionPart part, Buf *out) {
    char *json = NULL;
    size_t len = 0;
    if (failed(agent_session_get(session, part, &json, &len), "reading the session")) return 0;
    buf_add(out, json, len);
    agent_string_free(json);
    return 1;
}

/* Opens the session the flags ask for (--session FILE, or --continue: the newest session of
 * the root under sessions_dir) and says what it resumes. Returns 0 on failure (reported). */
static int open_session(const App *app, const char *session_path, const char *sessions_dir, AgentSession *out) {
    Buf options = {0}, dir = {0}, context = {0}, file = {0}, path = {0};
    int ok = 0;
    buf_puts(&options, "{\"cwd\":");
    buf_json_str(&options, app->root);
    buf_puts(&options, "}");
    if (session_path) {
        if (failed(agent_session_open(session_path, AGENT_NTS, options.data, options.len, out), NULL)) goto done;
    } else {
        char *layout = NULL;
        size_t len = 0;
        if (failed(agent_session_directory(sessions_dir, AGENT_NTS, app->root, AGENT_NTS, &layout, &len), NULL))
            goto done;
        buf_add(&dir, layout, len);
        agent_string_free(layout);
        if (failed(agent_session_continue_recent(dir.data, dir.len, options.data, options.len, out), NULL)) goto done;
    }
    if (!session_part(*out, AGENT_SESSION_CONTEXT, &context) || !session_part(*out, AGENT_SESSION_FILE, &file)) goto done;
    json_string(json_get(file.data, "path"), &path);
    size_t messages = count_messages(json_get(context.data, "messages"));
    if (messages > 0) fprintf(stderr, "resumed %zu messages from %s\n", messages, path.data);
    else fprintf(stderr, "new session %s\n", path.data);
    ok = 1;
done:
    free(options.data);
    free(dir.data);
    free(context.data);
    free(file.data);
    free(path.data);
    return ok;
}

static void usage(FILE *out) {
    fputs("usage: assistant [--root DIR] [--yes | --no-write] [--script FILE] [--mcp FILE]\n"
          "                 [--session FILE | --continue [--sessions-dir DIR]]\n"
          "  --root DIR     the directory the tools work in (default: the current directory)\n"
          "  --yes          approve every write and edit without asking\n"
          "  --no-write     refuse every write and edit\n"
          "  --script FILE  the scripted model's script (a JSON array of responses) instead of the demo\n"
          "  --mcp FILE     add the tools of the MCP servers this file configures ({\"mcpServers\": ...})\n"
          "  --session FILE keep the conversation in this session file and resume it (pi's format)\n"
          "  --continue     resume the newest session of the root (a new one when there is none)\n"
          "  --sessions-dir DIR  where --continue keeps sessions (default $LIBAGENT_SESSIONS_DIR,\n"
          "                 else ~/.libagent/sessions; one directory per root, as pi lays them out)\n"
          "A real model: LIBAGENT_MODEL=provider/id of libagent's model catalogue (e.g. anthropic/claude-sonnet-4-5),\n"
          "or LIBAGENT_API (openai-completions | anthropic-messages | openai-responses | google-generative-ai),\n"
          "LIBAGENT_BASE_URL and LIBAGENT_MODEL; optional LIBAGENT_PROVIDER, LIBAGENT_API_KEY,\n"
          "LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS. A failed request that may succeed later (overloaded,\n"
          "rate limited, 5xx, a dropped connection) is retried 3 times, after 2 s, 4 s, 8 s\n"
          "(LIBAGENT_RETRY_BASE_DELAY_MS sets the first wait); the conversation is compacted near the model's\n"
          "context window. Type a request per line; Ctrl-D or /quit quits, Ctrl-C aborts an answer.\n",
          out);
}

int main(int argc, char **argv) {
    static App app;
    const char *root = ".", *script_path = NULL, *session_path = NULL, *sessions_dir = NULL, *mcp_path = NULL;
    int continue_session = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) root = argv[++i];
        else if (strcmp(argv[i], "--session") == 0 && i + 1 < argc) session_path = argv[++i];
        else if (strcmp(argv[i], "--sessions-dir") == 0 && i + 1 < argc) sessions_dir = argv[++i];
        else if (strcmp(argv[i], "--continue") == 0) continue_session = 1;
        else if (strcmp(argv[i], "--script") == 0 && i + 1 < argc) script_path = argv[++i];
        else if (strcmp(argv[i], "--mcp") == 0 && i + 1 < argc) mcp_path = argv[++i];
        else if (strcmp(argv[i], "--yes") == 0) app.auto_yes = 1;
        else if (strcmp(argv[i], "--no-write") == 0) app.no_write = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { usage(stdout); return 0; }
        else { fprintf(stderr, "error: unknown argument '%s'\n", argv[i]); usage(stderr); return 2; }
    }
    if (app.auto_yes && app.no_write) { fputs("error: --yes and --no-write exclude each other\n", stderr); return 2; }
    if (session_path && continue_session) { fputs("error: --session and --continue exclude each other\n", stderr); return 2; }
    Buf default_dir = {0};
    if (continue_session && !sessions_dir) {
        const char *env = getenv("LIBAGENT_SESSIONS_DIR"), *home = getenv("HOME");
        if (env && *env) buf_puts(&default_dir, env);
        else buf_printf(&default_dir, "%s/.libagent/sessions", home && *home ? home : ".");
        sessions_dir = default_dir.data;
    }
    struct stat st;
    if (!realpath(root, app.root) || stat(app.root, &st) != 0) {
        fprintf(stderr, "error: --root %s: %s\n", root, strerror(errno));
        return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "error: --root %s: not a directory\n", root);
        return 2;
    }

    long retry_delay = env_number("LIBAGENT_RETRY_BASE_DELAY_MS", 2000); /* the first wait before a retry */
    if (retry_delay < 0) return 2;
    Buf model = {0}, about = {0}, prompt = {0}, options_json = {0};
    int real = model_from_env(&model, &about);
    char *script = NULL;
    if (real < 0) return 2;
    if (!real && script_path && !(script = read_whole_file(script_path))) {
        fprintf(stderr, "error: --script %s: %s\n", script_path, strerror(errno));
        return 2;
    }

    /* Ctrl-C goes to the signal thread only: block it before any thread starts. */
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigint, NULL);
    pthread_mutex_init(&app.mu, NULL);
    pthread_t sig_thread;
    int have_sig_thread = pthread_create(&sig_thread, NULL, signal_thread, &app) == 0;
    int status = 1;

    buf_printf(&prompt,
               "You are a coding assistant in a terminal. You work on the project in the directory %s "
               "(\"the root\"). Tools: read, ls, find and grep read and search files under the root; write "
               "creates or replaces a file and edit changes part of one, after the user approves. Paths are "
               "relative to the root; paths outside it are refused. Look at the files before answering "
               "questions about them, quote what you rely on, and keep answers short.", app.root);
    buf_puts(&options_json, "{\"initialState\":{\"systemPrompt\":");
    buf_json_str(&options_json, prompt.data);
    buf_printf(&options_json, ",\"model\":%s}", model.data);
    /* Long conversations: compact near the model's context window (a real model has one) and
     * retry overloaded or failed requests (LIBAGENT_RETRY_BASE_DELAY_MS: the first wait). */
    buf_printf(&options_json, ",\"compaction\":{\"enabled\":%s},\"retry\":{\"enabled\":true,\"baseDelayMs\":%ld}}",
               real ? "true" : "false", retry_delay);

    AgentOptions options = {0};
    AgentDispatcher dispatcher = {0};
    AgentSession session = {0};
    AgentMcp mcp = {0};
    AgentTool tools[8] = {{0}};
    size_t tool_count = 0;
    if (failed(agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR), NULL)) goto fail;
    if (failed(agent_options_new(options_json.data, options_json.len, &options), NULL)) goto fail;
    /* Host-pumped: every callback of the agent runs on this thread, inside agent_run_wait. */
    if (failed(agent_dispatcher_new(&dispatcher), NULL)) goto fail;
    if (failed(agent_options_set_dispatcher(options, dispatcher), NULL)) goto fail;
    /* The coding tools for the root; write and edit ask on_consent first. */
    if (failed(agent_coding_tools_new(app.root, AGENT_NTS, TOOL_OPTIONS, AGENT_NTS, on_consent, &app, NULL, tools, 8,
                                      &tool_count), NULL))
        goto fail;
    for (size_t i = 0; i < tool_count; i++)
        if (failed(agent_options_add_tool(options, tools[i]), NULL)) goto fail;
    /* The MCP servers' tools: the agent takes the set's current tools at each turn. */
    if (mcp_path && (!connect_mcp(mcp_path, &mcp) || failed(agent_options_add_mcp(options, mcp), NULL))) goto fail;
    if (real) {
        if (failed(agent_options_use_providers(options), NULL)) goto fail;
        const char *key = getenv("LIBAGENT_API_KEY");
        if (key && *key &&
            failed(agent_options_set_hook(options, AGENT_HOOK_GET_API_KEY, on_get_api_key, (void *)key, NULL), NULL))
            goto fail;
    } else if (failed(agent_options_set_scripted_model(options, script ? script : DEMO_SCRIPT, AGENT_NTS), NULL)) {
        goto fail;
    }
    /* The session: the agent starts from its context and appends every message it commits. */
    if ((session_path || continue_session) &&
        (!open_session(&app, session_path, sessions_dir, &session) ||
         failed(agent_options_set_session(options, session), NULL)))
        goto fail;
    AgentError *error = agent_new(options, &app.agent); /* consumes options */
    options = (AgentOptions){0};
    if (failed(error, NULL)) goto fail;
    uint64_t subscription;
    if (failed(agent_subscribe(app.agent, on_event, &app, NULL, &subscription), NULL)) goto fail;

    if ((app.tty_in = fopen("/dev/tty", "r")) && !(app.tty_out = fopen("/dev/tty", "w"))) {
        fclose(app.tty_in);
        app.tty_in = NULL;
    }
    int interactive = isatty(STDIN_FILENO);
    fprintf(stderr, "libagent assistant: %s; root %s%s. Ctrl-D quits.\n", about.data, app.root,
            app.no_write ? "; changes disabled" : app.auto_yes ? "; changes approved automatically" : "");

    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    for (;;) {
        if (interactive) { fputs("> ", stdout); fflush(stdout); }
        if ((len = getline(&line, &cap, stdin)) < 0) break; /* Ctrl-D / end of input */
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0) continue;
        if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0) break;
        if (!interactive) printf("> %s\n", line);
        fflush(stdout);

        AgentRun run;
        if (failed(agent_prompt_text(app.agent, line, (size_t)len, NULL, 0, NULL, NULL, &run), NULL)) continue;
        pthread_mutex_lock(&app.mu);
        app.run = run;
        pthread_mutex_unlock(&app.mu);
        /* Runs the agent's callbacks here (printing, consent questions) until the answer is over. */
        AgentWaitResult waited;
        AgentRunOutcome outcome;
        int waited_ok = !failed(agent_run_wait(run, -1, &waited), NULL);
        say_failed_attempt(&app);
        if (waited_ok && !failed(agent_run_outcome(run, &outcome), NULL) &&
            (outcome.status == AGENT_RUN_FAILED || outcome.status == AGENT_RUN_FREED))
            fprintf(stderr, "error: the run failed: %.*s\n", (int)outcome.error_message.len, outcome.error_message.ptr);
        pthread_mutex_lock(&app.mu);
        app.run = (AgentRun){0};
        pthread_mutex_unlock(&app.mu);
        agent_error_free(agent_run_free(run));
    }
    if (interactive) fputc('\n', stdout);
    free(line);
    status = 0;

fail:
    if (app.agent.id) failed(agent_free(app.agent), NULL);
    for (size_t i = 0; i < tool_count; i++) failed(agent_tool_free(tools[i]), NULL);
    if (options.id) failed(agent_options_free(options), NULL);
    if (session.id) failed(agent_session_free(session), NULL); /* the agent's is closed with it */
    if (mcp.id) failed(agent_mcp_free(mcp), NULL); /* the servers end (the agent is gone) */
    if (dispatcher.id) {
        agent_error_free(agent_dispatch(dispatcher, -1, NULL)); /* finalizers queued by the free */
        failed(agent_dispatcher_free(dispatcher), NULL);
    }
    if (app.tty_in) fclose(app.tty_in);
    if (app.tty_out) fclose(app.tty_out);
    if (have_sig_thread) {
        pthread_mutex_lock(&app.mu);
        app.quitting = 1;
        pthread_mutex_unlock(&app.mu);
        pthread_kill(sig_thread, SIGINT);
        pthread_join(sig_thread, NULL);
    }
    free(script);
    free(model.data);
    free(about.data);
    free(prompt.data);
    free(options_json.data);
    free(default_dir.data);
    free(app.failed_attempt.data);
    fflush(stdout);
    return status;
}

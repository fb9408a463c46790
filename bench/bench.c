/*
 * libagent's side of the shared benchmark workloads (../shared/bench/README.md): the same four
 * workloads as the reference's bench.mjs, and W5 as bench/w5.mjs (BENCHMARKS.md), driven through
 * the C ABI; LAT and IDLE are libagent only. Prints one JSON line per run.
 *
 *   bench W1 [--prompts 200] [--deltas 100] [--mode type|lean|full]
 *   bench W2 [--prompts 100] [--mode type|lean|full]
 *   bench W3 [--deltas 20000] [--mode type|lean|full]
 *   bench W4 [--agents 10000] [--concurrency 100]
 *   bench W5 --port P [--api openai-completions|anthropic-messages] [--deltas 2000] [--agents 1]
 *                                the real-model path: the built-in providers against the loopback
 *                                SSE server bench/sse_server.py listening on port P
 *   bench LAT [--deltas 20000] [--threading runtime|pumped] [--pump wait|spin]
 *                                latency probe: p50/p99 from a host thread pushing a delta (outside
 *                                any callback) to the subscriber receiving it, one delta at a time;
 *                                pumped: the listener runs inside agent_dispatch on that thread
 *   bench IDLE [--agents 10000] [--calls 10000]
 *                                W4's agents on one dispatcher, idle: bytes per agent, and the CPU
 *                                cost of one agent_dispatch with nothing queued
 *   (any workload: [--workers N] = agent_runtime_configure(N) before first use; default 1)
 *   (any workload: [--push typed|json]: block starts, deltas and ends through the typed pushes
 *    agent_stream_push_text_delta & co. (default), or as JSON events through agent_stream_push)
 *
 * The model is a scripted stream function written here in C. Like the reference's scripted
 * model (which pushes a whole response synchronously into its event stream, after a microtask,
 * before the consumer reads any of it), it pushes every event of a response at once from inside
 * the stream function, in delta form (no `partial`: libagent rebuilds it, SPEC §3.7).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libagent/agent.h>

/* The reference's MODEL and a zero usage, as JSON. */
#define MODEL_JSON                                                                                  \
    "{\"id\":\"bench-model\",\"name\":\"bench-model\",\"api\":\"bench\",\"provider\":\"bench\","     \
    "\"baseUrl\":\"\",\"reasoning\":false,\"input\":[\"text\"],\"cost\":{\"input\":0,\"output\":0,"  \
    "\"cacheRead\":0,\"cacheWrite\":0},\"contextWindow\":1000000,\"maxTokens\":100000}"
#define USAGE_JSON                                                                                  \
    "{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":0,\"cost\":{"         \
    "\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}"

enum { MODE_TYPE, MODE_LEAN, MODE_FULL };
static const char *MODE_NAMES[] = {"type", "lean", "full"};

static void die(const char *what, AgentError *error) {
    fprintf(stderr, "bench: %s%s%s\n", what, error ? ": " : "", error ? agent_error_message(error, NULL) : "");
    exit(1);
}
#define CHECK(expr)                                                                                 \
    do {                                                                                            \
        AgentError *e_ = (expr);                                                                    \
        if (e_) die(#expr, e_);                                                                     \
    } while (0)

static long arg(int argc, char **argv, const char *name, long fallback) {
    for (int i = 2; i + 1 < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] == '-' && strcmp(argv[i] + 2, name) == 0) return atol(argv[i + 1]);
    return fallback;
}

static const char *arg_text(int argc, char **argv, const char *name, const char *fallback) {
    for (int i = 2; i + 1 < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] == '-' && strcmp(argv[i] + 2, name) == 0) return argv[i + 1];
    return fallback;
}

/* ---- measurement ---------------------------------------------------------------------------- */

typedef struct {
    double wall_ms, cpu_ms;
} Sample;

static Sample now(void) {
    struct timespec ts;
    struct rusage ru;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    getrusage(RUSAGE_SELF, &ru); /* every thread of the process, the runtime thread included */
    Sample s;
    s.wall_ms = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    s.cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    return s;
}

static long rss_bytes(void) {
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* ---- a one-shot latch for done callbacks -------------------------------------------------- */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long pending;
    int failed;
} Latch;

static Latch latch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void latch_arm(long n) {
    pthread_mutex_lock(&latch.lock);
    latch.pending = n;
    pthread_mutex_unlock(&latch.lock);
}

static void latch_wait(void) {
    pthread_mutex_lock(&latch.lock);
    while (latch.pending > 0) pthread_cond_wait(&latch.cond, &latch.lock);
    pthread_mutex_unlock(&latch.lock);
    if (latch.failed) {
        fprintf(stderr, "bench: a run failed\n");
        exit(1);
    }
}

static void on_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    pthread_mutex_lock(&latch.lock);
    if (outcome->status == AGENT_RUN_FAILED || outcome->status == AGENT_RUN_FREED) {
        fprintf(stderr, "bench: run failed (%d): %.*s\n", outcome->status, (int)outcome->error_message.len,
                outcome->error_message.ptr);
        latch.failed = 1;
    }
    if (--latch.pending == 0) pthread_cond_signal(&latch.cond);
    pthread_mutex_unlock(&latch.lock);
}

/* ---- the scripted model ---------------------------------------------------------------------- */

enum { PLAN_TEXT, PLAN_W2, PLAN_W4 };

typedef struct {
    int plan;      /* which plan answers the requests */
    long deltas;   /* PLAN_TEXT: deltas of the one text block */
    long agent;    /* PLAN_W4: the agent's index */
    long request;  /* requests answered so far */
    long call_id;  /* tool call ids handed out so far */
} Model;

static int typed_push = 1; /* --push typed (default) or json */

static void push(AgentStream stream, const char *event) {
    CHECK(agent_stream_push(stream, event, AGENT_NTS));
}

/* A text block of `count` deltas at `index` through the typed pushes. */
static void push_text_typed(AgentStream stream, int index, long count) {
    CHECK(agent_stream_push_block_start(stream, AGENT_BLOCK_TEXT, (size_t)index));
    char delta[8] = {'d', '0', '0', '0', '0', '0', '0', '0'};
    for (long k = 0; k < count; k++) {
        long v = k % 10000000;
        for (int d = 7; d >= 1; d--, v /= 10) delta[d] = (char)('0' + v % 10);
        CHECK(agent_stream_push_text_delta(stream, (size_t)index, delta, sizeof delta));
    }
    CHECK(agent_stream_push_block_end(stream, AGENT_BLOCK_TEXT, (size_t)index));
}

/* A text block of `count` deltas at `index`: text_start, count x text_delta, text_end. */
static void push_text(AgentStream stream, int index, long count) {
    if (typed_push) {
        push_text_typed(stream, index, count);
        return;
    }
    char event[96];
    snprintf(event, sizeof event, "{\"type\":\"text_start\",\"contentIndex\":%d}", index);
    push(stream, event);
    /* The delta k is "d" + k zero-padded to 7 digits: only the digits change between events. */
    int len = snprintf(event, sizeof event, "{\"type\":\"text_delta\",\"contentIndex\":%d,\"delta\":\"d0000000\"}", index);
    char *digits = event + len - 9; /* the 7 digits before the closing "} */
    for (long k = 0; k < count; k++) {
        long v = k % 10000000;
        for (int d = 6; d >= 0; d--, v /= 10) digits[d] = (char)('0' + v % 10);
        push(stream, event);
    }
    snprintf(event, sizeof event, "{\"type\":\"text_end\",\"contentIndex\":%d}", index);
    push(stream, event);
}

/* A tool-call block: toolcall_start, one toolcall_delta with the whole arguments, toolcall_end. */
static void push_tool_call(AgentStream stream, int index, const char *id, const char *name, const char *args_literal) {
    if (typed_push) {
        /* The same arguments text, unescaped from the JSON string literal (only \" occurs). */
        char args[96];
        size_t n = 0;
        for (const char *p = args_literal; *p && n < sizeof args; p++)
            if (!(p[0] == '\\' && p[1] == '"')) args[n++] = *p;
        CHECK(agent_stream_push_toolcall_start(stream, (size_t)index, id, AGENT_NTS, name, AGENT_NTS));
        CHECK(agent_stream_push_toolcall_delta(stream, (size_t)index, args, n));
        CHECK(agent_stream_push_block_end(stream, AGENT_BLOCK_TOOLCALL, (size_t)index));
        return;
    }
    char event[256];
    snprintf(event, sizeof event, "{\"type\":\"toolcall_start\",\"contentIndex\":%d,\"id\":\"%s\",\"toolName\":\"%s\"}",
             index, id, name);
    push(stream, event);
    snprintf(event, sizeof event, "{\"type\":\"toolcall_delta\",\"contentIndex\":%d,\"delta\":\"%s\"}", index, args_literal);
    push(stream, event);
    snprintf(event, sizeof event, "{\"type\":\"toolcall_end\",\"contentIndex\":%d}", index);
    push(stream, event);
}

static void stream_fn(void *ud, const char *request_json, size_t request_json_len, AgentStream stream) {
    (void)request_json_len;
    (void)request_json;
    Model *m = ud;
    long request = m->request++;
    char id[64], args[96];
    int tools = 0;
    push(stream, "{\"type\":\"start\"}");
    if (m->plan == PLAN_TEXT) {
        push_text(stream, 0, m->deltas);
    } else if (m->plan == PLAN_W2) {
        if (request % 2 == 0) {
            static const char *names[] = {"echo", "add", "echo", "add"};
            static const char *arguments[] = {"{\\\"text\\\":\\\"hello\\\"}", "{\\\"a\\\":1,\\\"b\\\":2}",
                                              "{\\\"text\\\":\\\"world\\\"}", "{\\\"a\\\":3,\\\"b\\\":4}"};
            for (int i = 0; i < 4; i++) {
                snprintf(id, sizeof id, "c%ld", m->call_id++);
                push_tool_call(stream, i, id, names[i], arguments[i]);
            }
            tools = 1;
        } else {
            push_text(stream, 0, 10);
        }
    } else {
        if (request == 0) {
            snprintf(id, sizeof id, "a%ldc%ld", m->agent, m->call_id++);
            snprintf(args, sizeof args, "{\\\"a\\\":%ld,\\\"b\\\":1}", m->agent);
            push_tool_call(stream, 0, id, "add", args);
            tools = 1;
        } else {
            push_text(stream, 0, 5);
        }
    }
    push(stream, tools ? "{\"type\":\"done\",\"reason\":\"toolUse\"}" : "{\"type\":\"done\",\"reason\":\"stop\"}");
}

/* ---- the tools -------------------------------------------------------------------------------- */

/* The raw JSON value of member `key` in a flat object (our own validated arguments). */
static const char *member(const char *json, const char *key) {
    char pattern[32];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(json, pattern);
    return at ? at + strlen(pattern) : NULL;
}

static void echo_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud;
    (void)id;
    const char *text = member(args, "text");
    if (!text || *text != '"') {
        agent_tool_call_fail(call, "text is required", AGENT_NTS);
        return;
    }
    /* Copy the string literal as it is (still escaped): it goes back into JSON. */
    const char *end = text + 1;
    while (*end && *end != '"') end += (*end == '\\' && end[1]) ? 2 : 1;
    char result[512];
    int n = snprintf(result, sizeof result, "{\"content\":[{\"type\":\"text\",\"text\":%.*s\"}],\"details\":{}}",
                     (int)(end - text), text);
    if (n < 0 || (size_t)n >= sizeof result) {
        agent_tool_call_fail(call, "text too long", AGENT_NTS);
        return;
    }
    agent_tool_call_complete(call, result, AGENT_NTS);
}

static void add_tool(void *ud, const char *id, size_t id_len, const char *args, size_t args_len, AgentToolCall call) {
    (void)id_len, (void)args_len;
    (void)ud;
    (void)id;
    const char *a = member(args, "a"), *b = member(args, "b");
    if (!a || !b) {
        agent_tool_call_fail(call, "a and b are required", AGENT_NTS);
        return;
    }
    double sum = strtod(a, NULL) + strtod(b, NULL);
    char number[64], result[160];
    /* String(a + b): integers print without a fraction (our workloads only add integers). */
    if (sum == (double)(long long)sum && sum > -1e15 && sum < 1e15)
        snprintf(number, sizeof number, "%lld", (long long)sum);
    else
        snprintf(number, sizeof number, "%.17g", sum);
    snprintf(result, sizeof result, "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"details\":{}}", number);
    agent_tool_call_complete(call, result, AGENT_NTS);
}

static AgentTool tools[2];

static void make_tools(void) {
    CHECK(agent_tool_new("{\"name\":\"echo\",\"label\":\"Echo\",\"description\":\"Echo the text back.\","
                         "\"parameters\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                         "\"required\":[\"text\"]}}", AGENT_NTS,
                         echo_tool, NULL, NULL, &tools[0]));
    CHECK(agent_tool_new("{\"name\":\"add\",\"label\":\"Add\",\"description\":\"Add two numbers.\","
                         "\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                         "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}}", AGENT_NTS,
                         add_tool, NULL, NULL, &tools[1]));
}

/* ---- the listener ----------------------------------------------------------------------------- */

typedef struct {
    int mode;
    long events;
    unsigned long long json_bytes;
} Counter;

static int trace; /* BENCH_TRACE=1: print every event (lean JSON) to stderr, to check the runs */

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    Counter *c = ud;
    if (event->kind >= AGENT_EVENT_AGENT_START && event->kind <= AGENT_EVENT_TOOL_EXECUTION_END) c->events++;
    if (c->mode != MODE_TYPE) {
        AgentStr json;
        CHECK(agent_event_json(event, c->mode == MODE_FULL ? AGENT_EVENT_SHAPE_FULL : AGENT_EVENT_SHAPE_LEAN, &json));
        c->json_bytes += json.len;
    }
    if (trace) {
        AgentStr json;
        CHECK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        fprintf(stderr, "%s\n", json.ptr);
    }
    return AGENT_LISTENER_CONTINUE;
}

/* ---- W1-W3: one agent, prompts one after another ---------------------------------------------- */

static AgentHandle one_agent(Model *model, int with_tools, Counter *counter) {
    AgentOptions options = {0};
    CHECK(agent_options_new("{\"initialState\":{\"systemPrompt\":\"You are a benchmark.\",\"model\":" MODEL_JSON "},"
                            "\"toolExecution\":\"parallel\"}", AGENT_NTS,
                            &options));
    if (with_tools) {
        CHECK(agent_options_add_tool(options, tools[0]));
        CHECK(agent_options_add_tool(options, tools[1]));
    }
    CHECK(agent_options_set_stream_fn(options, stream_fn, model, NULL));
    AgentHandle agent = {0};
    CHECK(agent_new(options, &agent));
    uint64_t id;
    CHECK(agent_subscribe(agent, listener, counter, NULL, &id));
    return agent;
}

/* Sends the prompts one after another, each once the previous run settled (its done callback). */
static void prompt_sequence(AgentHandle agent, long prompts, const char *fixed) {
    char input[64];
    for (long p = 0; p < prompts; p++) {
        if (fixed)
            snprintf(input, sizeof input, "\"%s\"", fixed);
        else
            snprintf(input, sizeof input, "\"prompt %ld\"", p);
        latch_arm(1);
        CHECK(agent_prompt(agent, input, AGENT_NTS, on_done, NULL, NULL));
        latch_wait();
    }
}

static void print_common(const char *workload, const char *params, Sample t0, Sample t1, const Counter *c,
                         const char *extra) {
    printf("{\"workload\":\"%s\",\"params\":%s,\"push\":\"%s\",\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"events\":%ld,"
           "\"json_bytes\":%llu%s}\n",
           workload, params, typed_push ? "typed" : "json", t1.wall_ms - t0.wall_ms, t1.cpu_ms - t0.cpu_ms, c->events,
           c->json_bytes, extra);
}

static void run_single(const char *workload, int argc, char **argv, int mode) {
    Counter counter = {mode, 0, 0};
    Model model = {PLAN_TEXT, 0, 0, 0, 0};
    long prompts = 1;
    const char *fixed = NULL;
    char params[160];
    if (strcmp(workload, "W1") == 0) {
        prompts = arg(argc, argv, "prompts", 200);
        model.deltas = arg(argc, argv, "deltas", 100);
        snprintf(params, sizeof params, "{\"prompts\":%ld,\"deltas\":%ld,\"mode\":\"%s\"}", prompts, model.deltas,
                 MODE_NAMES[mode]);
    } else if (strcmp(workload, "W2") == 0) {
        prompts = arg(argc, argv, "prompts", 100);
        model.plan = PLAN_W2;
        snprintf(params, sizeof params, "{\"prompts\":%ld,\"mode\":\"%s\"}", prompts, MODE_NAMES[mode]);
    } else {
        model.deltas = arg(argc, argv, "deltas", 20000);
        fixed = "one long answer";
        snprintf(params, sizeof params, "{\"deltas\":%ld,\"mode\":\"%s\"}", model.deltas, MODE_NAMES[mode]);
    }
    AgentHandle agent = one_agent(&model, model.plan == PLAN_W2, &counter);
    long rss0 = rss_bytes();
    Sample t0 = now();
    prompt_sequence(agent, prompts, fixed);
    Sample t1 = now();
    char extra[160];
    snprintf(extra, sizeof extra, ",\"rss_delta_kb\":%ld", (rss_bytes() - rss0) / 1024);
    if (strcmp(workload, "W3") == 0) {
        size_t n = strlen(extra);
        snprintf(extra + n, sizeof extra - n, ",\"us_per_delta\":%.3f",
                 (t1.wall_ms - t0.wall_ms) * 1000.0 / (double)model.deltas);
    }
    print_common(workload, params, t0, t1, &counter, extra);
    CHECK(agent_free(agent));
}

/* ---- W4: many agents -------------------------------------------------------------------------- */

/* The options of W4's agent i: system prompt "You are agent i.", the two shared tools, the
 * hi/hello transcript, answered by the scripted model `model`. */
static AgentOptions w4_options(long i, Model *model) {
    char options_json[1536];
    snprintf(options_json, sizeof options_json,
             "{\"initialState\":{\"systemPrompt\":\"You are agent %ld.\",\"model\":" MODEL_JSON ","
             "\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1},"
             "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}],\"api\":\"bench\","
             "\"provider\":\"bench\",\"model\":\"bench-model\",\"usage\":" USAGE_JSON ",\"stopReason\":\"stop\","
             "\"timestamp\":2}]},\"toolExecution\":\"parallel\"}",
             i);
    AgentOptions options = {0};
    CHECK(agent_options_new(options_json, AGENT_NTS, &options));
    CHECK(agent_options_add_tool(options, tools[0])); /* the same two tool objects for all */
    CHECK(agent_options_add_tool(options, tools[1]));
    CHECK(agent_options_set_stream_fn(options, stream_fn, model, NULL));
    return options;
}

static void run_w4(int argc, char **argv) {
    long count = arg(argc, argv, "agents", 10000);
    long concurrency = arg(argc, argv, "concurrency", 100);
    if (count < 1 || concurrency < 1) die("--agents and --concurrency must be positive", NULL);
    AgentHandle *agents = calloc((size_t)count, sizeof *agents);
    Model *models = calloc((size_t)count, sizeof *models);
    if (!agents || !models) die("out of memory", NULL);
    long rss0 = rss_bytes();
    Sample c0 = now();
    for (long i = 0; i < count; i++) {
        models[i] = (Model){PLAN_W4, 0, i, 0, 0};
        CHECK(agent_new(w4_options(i, &models[i]), &agents[i]));
    }
    Sample c1 = now();
    long rss1 = rss_bytes();

    /* Like the reference: `concurrency` prompts at a time, the next batch once all of them settled. */
    Sample r0 = now();
    for (long start = 0; start < count; start += concurrency) {
        long end = start + concurrency < count ? start + concurrency : count;
        latch_arm(end - start);
        for (long i = start; i < end; i++) CHECK(agent_prompt(agents[i], "\"go\"", AGENT_NTS, on_done, NULL, NULL));
        latch_wait();
    }
    Sample r1 = now();

    long requests = 0;
    for (long i = 0; i < count; i++) requests += models[i].request;
    printf("{\"workload\":\"W4\",\"params\":{\"agents\":%ld,\"concurrency\":%ld},\"push\":\"%s\",\"wall_ms\":%.3f,\"cpu_ms\":%.3f,"
           "\"events\":0,\"requests\":%ld,\"create_wall_ms\":%.3f,\"create_cpu_ms\":%.3f,\"bytes_per_agent\":%ld,"
           "\"run_wall_ms\":%.3f,\"run_cpu_ms\":%.3f}\n",
           count, concurrency, typed_push ? "typed" : "json", r1.wall_ms - c0.wall_ms, r1.cpu_ms - c0.cpu_ms, requests, c1.wall_ms - c0.wall_ms,
           c1.cpu_ms - c0.cpu_ms, (rss1 - rss0) / count, r1.wall_ms - r0.wall_ms, r1.cpu_ms - r0.cpu_ms);
    fflush(stdout);
    if (trace) { /* W4 has no listener: show the last agent's transcript instead */
        char *state = NULL;
        CHECK(agent_get_state(agents[count - 1], &state, NULL));
        fprintf(stderr, "%s\n", state);
        agent_string_free(state);
    }
    for (long i = 0; i < count; i++) CHECK(agent_free(agents[i]));
    free(agents);
    free(models);
}

/* ---- IDLE: many host-pumped agents at rest ------------------------------------------------------ */

static double cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* W4's agents, all on one dispatcher, never prompted: what they cost in memory, and what one
 * agent_dispatch with nothing queued costs (a host pumps every frame, with or without work). */
static void run_idle(int argc, char **argv) {
    long count = arg(argc, argv, "agents", 10000);
    long calls = arg(argc, argv, "calls", 10000);
    if (count < 1 || calls < 1) die("--agents and --calls must be positive", NULL);
    AgentHandle *agents = calloc((size_t)count, sizeof *agents);
    Model *models = calloc((size_t)count, sizeof *models);
    if (!agents || !models) die("out of memory", NULL);
    AgentDispatcher dispatcher = {0};
    CHECK(agent_dispatcher_new(&dispatcher));
    long rss0 = rss_bytes();
    Sample c0 = now();
    for (long i = 0; i < count; i++) {
        models[i] = (Model){PLAN_W4, 0, i, 0, 0};
        AgentOptions options = w4_options(i, &models[i]);
        CHECK(agent_options_set_dispatcher(options, dispatcher));
        CHECK(agent_new(options, &agents[i]));
    }
    Sample c1 = now();
    long rss1 = rss_bytes();

    size_t ran = 0, total_ran = 0;
    do CHECK(agent_dispatch(dispatcher, -1, &ran)); /* whatever building queued, if anything */
    while (ran > 0);
    Sample d0 = now();
    double cpu0 = cpu_us();
    for (long k = 0; k < calls; k++) {
        CHECK(agent_dispatch(dispatcher, -1, &ran));
        total_ran += ran;
    }
    double cpu1 = cpu_us();
    Sample d1 = now();
    if (total_ran) die("IDLE: agent_dispatch ran callbacks of idle agents", NULL);

    printf("{\"workload\":\"IDLE\",\"params\":{\"agents\":%ld,\"calls\":%ld},\"create_wall_ms\":%.3f,"
           "\"create_cpu_ms\":%.3f,\"bytes_per_agent\":%ld,\"dispatch_cpu_us\":%.4f,\"dispatch_wall_us\":%.4f}\n",
           count, calls, c1.wall_ms - c0.wall_ms, c1.cpu_ms - c0.cpu_ms, (rss1 - rss0) / count,
           (cpu1 - cpu0) / (double)calls, (d1.wall_ms - d0.wall_ms) * 1000.0 / (double)calls);
    fflush(stdout);
    for (long i = 0; i < count; i++) CHECK(agent_free(agents[i]));
    CHECK(agent_dispatch(dispatcher, -1, NULL)); /* finalizers queued by the frees */
    CHECK(agent_dispatcher_free(dispatcher));
    free(agents);
    free(models);
}

/* ---- LAT: push-to-subscriber latency ------------------------------------------------------- */

/* The stream function hands its stream to the host thread, which pushes from outside any
 * callback (as a host reading a network socket would): start, text_start, then one delta at a
 * time, each once the subscriber saw the previous one, so that every figure is the latency of an
 * idle agent (the runtime thread asleep when the delta arrives), not a queue. */
static _Atomic uint64_t lat_stream; /* an AgentStream */
static atomic_long lat_started;  /* 1 once the stream function handed its stream over */
static atomic_long lat_received; /* deltas the subscriber has seen */
static double *lat_pushed_at;    /* per delta: monotonic µs when pushed */
static double *lat_latency;      /* per delta: µs from push to the subscriber */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void lat_stream_fn(void *ud, const char *request_json, size_t request_json_len, AgentStream stream) {
    (void)request_json_len;
    (void)ud;
    (void)request_json;
    atomic_store(&lat_stream, stream.id);
    atomic_store(&lat_started, 1);
}

static AgentListenerAnswer lat_listener(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->update == AGENT_UPDATE_TEXT_DELTA) {
        long k = atomic_load(&lat_received);
        lat_latency[k] = now_us() - lat_pushed_at[k];
        atomic_store(&lat_received, k + 1);
    }
    return AGENT_LISTENER_CONTINUE;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Host-pumped mode: runs the agent's callbacks on this thread until `*until` > `seen`, blocking
 * in agent_dispatcher_wait while nothing is ready (a host waiting for its agent), or, with
 * --pump spin, calling agent_dispatch in a loop (a host polling every frame). */
static void pump_until(AgentDispatcher dispatcher, int spin, atomic_long *until, long seen) {
    while (atomic_load(until) <= seen) {
        if (!spin) {
            AgentWaitResult ready;
            CHECK(agent_dispatcher_wait(dispatcher, -1, &ready));
        }
        CHECK(agent_dispatch(dispatcher, -1, NULL));
    }
}

static void run_latency(int argc, char **argv) {
    long deltas = arg(argc, argv, "deltas", 20000);
    const char *threading = arg_text(argc, argv, "threading", "runtime");
    const char *pump = arg_text(argc, argv, "pump", "wait");
    int pumped = strcmp(threading, "pumped") == 0, spin = strcmp(pump, "spin") == 0;
    if (deltas < 1) die("--deltas must be positive", NULL);
    if (!pumped && strcmp(threading, "runtime")) die("--threading must be runtime or pumped", NULL);
    if (strcmp(pump, "wait") && !spin) die("--pump must be wait or spin", NULL);
    lat_pushed_at = calloc((size_t)deltas, sizeof *lat_pushed_at);
    lat_latency = calloc((size_t)deltas, sizeof *lat_latency);
    if (!lat_pushed_at || !lat_latency) die("out of memory", NULL);
    AgentOptions options = {0};
    CHECK(agent_options_new("{\"initialState\":{\"systemPrompt\":\"You are a benchmark.\",\"model\":" MODEL_JSON "}}", AGENT_NTS,
                            &options));
    CHECK(agent_options_set_stream_fn(options, lat_stream_fn, NULL, NULL));
    /* Pumped: the stream function, the listener and done run inside agent_dispatch on this thread. */
    AgentDispatcher dispatcher = {0};
    if (pumped) {
        CHECK(agent_dispatcher_new(&dispatcher));
        CHECK(agent_options_set_dispatcher(options, dispatcher));
    }
    AgentHandle agent = {0};
    CHECK(agent_new(options, &agent));
    uint64_t id;
    CHECK(agent_subscribe(agent, lat_listener, NULL, NULL, &id));
    AgentRun run = {0};
    CHECK(agent_prompt(agent, "\"latency\"", AGENT_NTS, NULL, NULL, &run));
    if (pumped) pump_until(dispatcher, spin, &lat_started, 0);
    AgentStream stream;
    while (!(stream.id = atomic_load(&lat_stream))) sched_yield();
    push(stream, "{\"type\":\"start\"}");
    CHECK(agent_stream_push_block_start(stream, AGENT_BLOCK_TEXT, 0));
    char delta[8] = {'d', '0', '0', '0', '0', '0', '0', '0'};
    for (long k = 0; k < deltas; k++) {
        /* Let the runtime thread go idle between deltas, as between a model's network reads. */
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
        lat_pushed_at[k] = now_us();
        if (typed_push) {
            CHECK(agent_stream_push_text_delta(stream, 0, delta, sizeof delta));
        } else {
            push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"d0000000\"}");
        }
        if (pumped)
            pump_until(dispatcher, spin, &lat_received, k);
        else
            while (atomic_load(&lat_received) <= k) sched_yield();
    }
    CHECK(agent_stream_push_block_end(stream, AGENT_BLOCK_TEXT, 0));
    push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}");
    AgentWaitResult waited;
    CHECK(agent_run_wait(run, -1, &waited)); /* dispatches a pumped run's rest while it waits */
    AgentRunOutcome outcome;
    CHECK(agent_run_outcome(run, &outcome));
    if (outcome.status != AGENT_RUN_COMPLETED) die("the latency run did not complete", NULL);
    CHECK(agent_run_free(run));
    qsort(lat_latency, (size_t)deltas, sizeof *lat_latency, compare_doubles);
    double p50 = lat_latency[deltas / 2], p99 = lat_latency[(long)(deltas * 0.99)], max = lat_latency[deltas - 1];
    printf("{\"workload\":\"LAT\",\"params\":{\"deltas\":%ld,\"threading\":\"%s\"%s},\"push\":\"%s\",\"p50_us\":%.1f,"
           "\"p99_us\":%.1f,\"max_us\":%.1f}\n",
           deltas, pumped ? "pumped" : "runtime", pumped && spin ? ",\"pump\":\"spin\"" : "",
           typed_push ? "typed" : "json", p50, p99, max);
    CHECK(agent_free(agent));
    if (pumped) {
        CHECK(agent_dispatch(dispatcher, -1, NULL)); /* finalizers queued by the free */
        CHECK(agent_dispatcher_free(dispatcher));
    }
    free(lat_pushed_at);
    free(lat_latency);
}

/* ---- W5: the built-in providers against the loopback SSE server ----------------------------- */

/* What one W5 agent's listener saw: shows that the response really streamed and the tool ran. */
typedef struct {
    long events, text_deltas, tool_runs;
} W5Counter;

static AgentListenerAnswer w5_listener(void *ud, const AgentEvent *event) {
    W5Counter *c = ud;
    c->events++; /* reads the event type, as the other workloads' listener */
    if (event->update == AGENT_UPDATE_TEXT_DELTA) c->text_deltas++;
    if (event->kind == AGENT_EVENT_TOOL_EXECUTION_END) c->tool_runs++;
    if (trace) {
        AgentStr json;
        CHECK(agent_event_json(event, AGENT_EVENT_SHAPE_LEAN, &json));
        fprintf(stderr, "%s\n", json.ptr);
    }
    return AGENT_LISTENER_CONTINUE;
}

/* The get-API-key hook: any key does for the loopback server (the reference's getApiKey). */
static void w5_api_key(void *ud, const char *input_json, size_t input_json_len, AgentHookCall call) {
    (void)ud, (void)input_json, (void)input_json_len;
    CHECK(agent_hook_call_complete(call, "\"bench-key\"", AGENT_NTS));
}

/* A run that did not complete (a model error included) fails the benchmark. */
static void w5_done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)ud, (void)run;
    pthread_mutex_lock(&latch.lock);
    if (outcome->status != AGENT_RUN_COMPLETED) {
        if (!latch.failed)
            fprintf(stderr, "bench: W5 run ended with status %d: %.*s\n", outcome->status,
                    (int)outcome->error_message.len, outcome->error_message.ptr);
        latch.failed = 1;
    }
    if (--latch.pending == 0) pthread_cond_signal(&latch.cond);
    pthread_mutex_unlock(&latch.lock);
}

/* An agent on the built-in providers (the process-wide default: no stream function given) whose
 * model streams `deltas` text deltas from the server (which reads N from the path). */
static AgentHandle w5_agent(const char *api, long port, long deltas, W5Counter *counter) {
    int openai = strcmp(api, "openai-completions") == 0;
    char options_json[1024];
    snprintf(options_json, sizeof options_json,
             "{\"initialState\":{\"systemPrompt\":\"You are a benchmark.\",\"model\":{\"id\":\"bench-model\","
             "\"name\":\"bench-model\",\"api\":\"%s\",\"provider\":\"%s\",\"baseUrl\":\"http://127.0.0.1:%ld/n%ld%s\","
             "\"reasoning\":false,\"input\":[\"text\"],\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,"
             "\"cacheWrite\":0},\"contextWindow\":1000000,\"maxTokens\":100000}},\"toolExecution\":\"parallel\"}",
             api, openai ? "openai" : "anthropic", port, deltas, openai ? "/v1" : "");
    AgentOptions options = {0};
    CHECK(agent_options_new(options_json, AGENT_NTS, &options));
    CHECK(agent_options_add_tool(options, tools[1])); /* add */
    CHECK(agent_options_set_hook(options, AGENT_HOOK_GET_API_KEY, w5_api_key, NULL, NULL));
    AgentHandle agent = {0};
    CHECK(agent_new(options, &agent));
    if (counter) {
        uint64_t id;
        CHECK(agent_subscribe(agent, w5_listener, counter, NULL, &id));
    }
    return agent;
}

static void run_w5(int argc, char **argv) {
    const char *api = arg_text(argc, argv, "api", "openai-completions");
    long deltas = arg(argc, argv, "deltas", 2000);
    long count = arg(argc, argv, "agents", 1);
    long port = arg(argc, argv, "port", 0);
    if (strcmp(api, "openai-completions") && strcmp(api, "anthropic-messages"))
        die("--api must be openai-completions or anthropic-messages", NULL);
    if (deltas < 1 || count < 1 || port < 1) die("--deltas, --agents and --port must be positive", NULL);
    CHECK(agent_set_default_providers());

    /* One prompt first, not measured (nor on the reference): one-time setup (runtime and HTTP
     * client start, the reference's lazy provider module load) is not a per-delta cost. */
    AgentHandle warm = w5_agent(api, port, 1, NULL);
    latch_arm(1);
    CHECK(agent_prompt(warm, "\"go\"", AGENT_NTS, w5_done, NULL, NULL));
    latch_wait();
    CHECK(agent_free(warm));

    AgentHandle *agents = calloc((size_t)count, sizeof *agents);
    W5Counter *counters = calloc((size_t)count, sizeof *counters);
    if (!agents || !counters) die("out of memory", NULL);
    for (long i = 0; i < count; i++) agents[i] = w5_agent(api, port, deltas, &counters[i]);

    Sample t0 = now();
    latch_arm(count);
    for (long i = 0; i < count; i++) CHECK(agent_prompt(agents[i], "\"go\"", AGENT_NTS, w5_done, NULL, NULL));
    latch_wait();
    Sample t1 = now();

    W5Counter total = {0, 0, 0};
    for (long i = 0; i < count; i++) {
        total.events += counters[i].events;
        total.text_deltas += counters[i].text_deltas;
        total.tool_runs += counters[i].tool_runs;
    }
    double cpu_ms = t1.cpu_ms - t0.cpu_ms;
    printf("{\"workload\":\"W5\",\"params\":{\"api\":\"%s\",\"deltas\":%ld,\"agents\":%ld},\"wall_ms\":%.3f,"
           "\"cpu_ms\":%.3f,\"events\":%ld,\"text_deltas\":%ld,\"tool_runs\":%ld,\"us_per_delta\":%.3f}\n",
           api, deltas, count, t1.wall_ms - t0.wall_ms, cpu_ms, total.events, total.text_deltas, total.tool_runs,
           cpu_ms * 1000.0 / ((double)count * (double)deltas));
    fflush(stdout);
    for (long i = 0; i < count; i++) CHECK(agent_free(agents[i]));
    free(agents);
    free(counters);
}

int main(int argc, char **argv) {
    const char *workload = argc > 1 ? argv[1] : "";
    const char *mode_name = arg_text(argc, argv, "mode", "type");
    int mode = strcmp(mode_name, "full") == 0 ? MODE_FULL : strcmp(mode_name, "lean") == 0 ? MODE_LEAN : MODE_TYPE;
    long workers = arg(argc, argv, "workers", 0);
    const char *push_name = arg_text(argc, argv, "push", "typed");
    typed_push = strcmp(push_name, "json") != 0;
    int known = strcmp(workload, "W1") == 0 || strcmp(workload, "W2") == 0 || strcmp(workload, "W3") == 0 ||
                strcmp(workload, "W4") == 0 || strcmp(workload, "LAT") == 0 || strcmp(workload, "W5") == 0 ||
                strcmp(workload, "IDLE") == 0;
    if (!known || (strcmp(mode_name, "type") && strcmp(mode_name, "lean") && strcmp(mode_name, "full"))) {
        fprintf(stderr, "usage: bench W1|W2|W3|W4|W5|LAT|IDLE [--prompts N] [--deltas N] [--agents N] [--concurrency N]"
                        " [--mode type|lean|full] [--workers N] [--push typed|json] [--api openai-completions|"
                        "anthropic-messages] [--port N] [--threading runtime|pumped] [--pump wait|spin] [--calls N]\n");
        return 2;
    }
    if (workers > 0) CHECK(agent_runtime_configure((uint32_t)workers));
    trace = getenv("BENCH_TRACE") != NULL;
    make_tools();
    if (strcmp(workload, "W4") == 0)
        run_w4(argc, argv);
    else if (strcmp(workload, "LAT") == 0)
        run_latency(argc, argv);
    else if (strcmp(workload, "W5") == 0)
        run_w5(argc, argv);
    else if (strcmp(workload, "IDLE") == 0)
        run_idle(argc, argv);
    else
        run_single(workload, argc, argv, mode);
    CHECK(agent_tool_free(tools[0]));
    CHECK(agent_tool_free(tools[1]));
    return 0;
}

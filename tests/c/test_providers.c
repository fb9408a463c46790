/* The built-in providers through the C ABI: selecting them per options, per agent and as the
 * process-wide default, the failures pi-ai reports synchronously (unknown api, no API key)
 * turned into the run's error message, and one real request: an openai-completions stream from a
 * loopback server in this process, cut into reads that split lines and events (the HTTP client,
 * the SSE parser and the stream's events, watched by the sanitizers: tests/sanitizers/run.sh). */
#include "check.h"

/* The loopback server speaks POSIX sockets; the Windows run (tests/windows/run.sh, under wine)
 * tests the rest. */
#ifndef _WIN32
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#define LOOPBACK_SERVER 1
#endif

static char *last_message(AgentHandle agent) {
    size_t count = 0;
    CHECK_OK(agent_get_message_count(agent, &count));
    CHECK(count > 0);
    char *json = NULL;
    CHECK_OK(agent_get_message(agent, count - 1, &json, NULL));
    return json;
}

static void prompt_and_wait(AgentHandle agent) {
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "hi", NTS, NULL, 0, record_done, done, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + AGENT_RUN_MODEL_ERROR);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_MODEL_ERROR);
    CHECK_OK(agent_run_free(run));
}

#define MODEL(api, provider)                                                                   \
    "{\"initialState\":{\"model\":{\"id\":\"m\",\"api\":\"" api "\",\"provider\":\"" provider \
    "\",\"baseUrl\":\"http://127.0.0.1:9/v1\",\"input\":[\"text\"],\"contextWindow\":1000,"    \
    "\"maxTokens\":100}}}"

#ifdef LOOPBACK_SERVER
/* The loopback server: one connection, its request kept for the checks, the stream sent in
 * pieces that end mid-line and mid-event. */
static int listener_fd;
static char request[16384];

#define CHUNK(delta, finish) \
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\"," \
    "\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" finish "}]}\n\n"

static const char *const stream_pieces[] = {
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    ": a comment line\n\n" CHUNK("{\"role\":\"assistant\",\"content\":\"Hel\"}", "null") "data: {\"id\":\"c1\",",
    "\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"lo from \"},\"finish_reason\":null}]}\r",
    "\n\r\n" CHUNK("{\"content\":\"loopback\"}", "null")
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
    "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\n\n",
    "data: [DONE]\n\n",
};

static void *serve_one_stream(void *arg) {
    (void)arg;
    int fd = accept(listener_fd, NULL, NULL);
    CHECK(fd >= 0);
    /* The whole request: headers, then Content-Length bytes of body. */
    size_t have = 0;
    const char *body = NULL;
    long length = -1;
    while (!body || (long)(have - (size_t)(body - request)) < length) {
        CHECK(have < sizeof request - 1);
        ssize_t n = read(fd, request + have, sizeof request - 1 - have);
        CHECK(n > 0);
        have += (size_t)n;
        request[have] = '\0';
        if (!body && (body = strstr(request, "\r\n\r\n"))) {
            body += 4;
            const char *field = strstr(request, "content-length: ");
            if (!field) field = strstr(request, "Content-Length: ");
            CHECK(field != NULL);
            length = atol(field + 16);
        }
    }
    for (size_t i = 0; i < sizeof stream_pieces / sizeof *stream_pieces; i++) {
        size_t len = strlen(stream_pieces[i]);
        CHECK(write(fd, stream_pieces[i], len) == (ssize_t)len);
        sleep_ms(5); /* separate reads on the client's side, most of the time */
    }
    close(fd);
    return NULL;
}

/* A streamed answer over real HTTP: the request the provider sent and the message it built. */
static void loopback_stream(void) {
    listener_fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(listener_fd >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(listener_fd, (struct sockaddr *)&address, sizeof address) == 0);
    socklen_t size = sizeof address;
    CHECK(getsockname(listener_fd, (struct sockaddr *)&address, &size) == 0);
    CHECK(listen(listener_fd, 1) == 0);
    pthread_t server;
    CHECK(pthread_create(&server, NULL, serve_one_stream, NULL) == 0);

    char options_json[512];
    snprintf(options_json, sizeof options_json,
             "{\"initialState\":{\"model\":{\"id\":\"m\",\"api\":\"openai-completions\",\"provider\":\"openai\","
             "\"baseUrl\":\"http://127.0.0.1:%d/v1\",\"input\":[\"text\"],\"contextWindow\":1000,"
             "\"maxTokens\":100}}}",
             ntohs(address.sin_port));
    CHECK(setenv("OPENAI_API_KEY", "sk-loopback", 1) == 0);
    AgentOptions opts = {0};
    CHECK_OK(agent_options_new(options_json, NTS, &opts));
    CHECK_OK(agent_options_use_providers(opts));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(opts, &agent));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "say hello", NTS, NULL, 0, NULL, NULL, &run));
    WAIT_RUN(run);
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));
    CHECK(pthread_join(server, NULL) == 0);
    close(listener_fd);
    unsetenv("OPENAI_API_KEY");

    CHECK_HAS(request, "POST /v1/chat/completions HTTP/1.1\r\n");
    CHECK(strstr(request, "authorization: Bearer sk-loopback\r\n") ||
          strstr(request, "Authorization: Bearer sk-loopback\r\n"));
    CHECK_HAS(request, "\"stream\":true");
    CHECK_HAS(request, "say hello");
    char *message = last_message(agent);
    CHECK_HAS(message, "\"role\":\"assistant\"");
    CHECK_HAS(message, "{\"type\":\"text\",\"text\":\"Hello from loopback\"}");
    CHECK_HAS(message, "\"stopReason\":\"stop\"");
    CHECK_HAS(message, "\"input\":7,\"output\":3");
    agent_string_free(message);
    CHECK_OK(agent_free(agent));
}
#endif

int main(void) {
    CHECK_ERR(agent_options_use_providers((AgentOptions){0}), AGENT_ERR_INVALID_HANDLE, "options is the null handle.");

#ifdef LOOPBACK_SERVER
    loopback_stream();
#endif

    /* Per options: an api the providers do not speak fails the way pi-ai throws. */
    AgentOptions opts = {0};
    CHECK_OK(agent_options_new(MODEL("bedrock-converse-stream", "amazon-bedrock"), NTS, &opts));
    CHECK_OK(agent_options_use_providers(opts));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(opts, &agent));
    prompt_and_wait(agent);
    char *message = last_message(agent);
    CHECK_HAS(message, "\"stopReason\":\"error\"");
    CHECK_HAS(message, "No API provider registered for api: bedrock-converse-stream");
    agent_string_free(message);

    /* Per agent, replacing the scripted model: no key for the provider and none in the env. */
    CHECK_OK(agent_set_scripted_model(agent, "[]", NTS));
    CHECK_OK(agent_use_providers(agent));
    CHECK_OK(agent_reset(agent));
    CHECK_OK(agent_configure(agent, "{\"model\":{\"id\":\"m\",\"api\":\"openai-completions\","
                                    "\"provider\":\"acme-local\",\"baseUrl\":\"http://127.0.0.1:9/v1\","
                                    "\"input\":[\"text\"],\"contextWindow\":1000,\"maxTokens\":100}}", NTS));
    prompt_and_wait(agent);
    message = last_message(agent);
    CHECK_HAS(message, "No API key for provider: acme-local");
    agent_string_free(message);
    CHECK_OK(agent_free(agent));
    CHECK_ERR(agent_use_providers(agent), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent.");

    /* The process-wide default: agents built without a stream function use the providers. */
    CHECK_OK(agent_set_default_providers());
    CHECK_OK(agent_options_new(MODEL("openai-completions", "acme-local"), NTS, &opts));
    CHECK_OK(agent_new(opts, &agent));
    prompt_and_wait(agent);
    message = last_message(agent);
    CHECK_HAS(message, "No API key for provider: acme-local");
    agent_string_free(message);
    CHECK_OK(agent_free(agent));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL));
    puts("test_providers: ok");
    return 0;
}

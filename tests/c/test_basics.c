/* Process-wide functions, options, construction, the default stream function, configure and
 * the scripted model: every success path and each of their error statuses with its message. */
#include "check.h"

static atomic_int default_fn_calls, default_fn_finalized;

/* A host stream function that answers with one final text message at once. */
static void answer_stream(void *ud, const char *request, size_t request_len, AgentStream stream) {
    (void)ud;
    CHECK(strlen(request) == request_len);
    atomic_fetch_add(&default_fn_calls, 1);
    CHECK_HAS(request, "\"context\":{");
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"start\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_start\",\"contentIndex\":0}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"from host\"}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"text_end\",\"contentIndex\":0}", NTS));
    CHECK_OK(agent_stream_push(stream, "{\"type\":\"done\",\"reason\":\"stop\"}", NTS));
}

static void count_finalizer_default(void *ud) {
    (void)ud;
    atomic_fetch_add(&default_fn_finalized, 1);
}

static void *other_thread_error(void *arg) {
    (void)arg;
    CHECK_ERR(agent_tool_free((AgentTool){0}), AGENT_ERR_INVALID_HANDLE, "tool is the null handle.");
    return NULL;
}

static const char *SCRIPT = "[{\"content\":[{\"type\":\"text\",\"text\":\"scripted one\"}]},"
                            " {\"content\":[{\"type\":\"text\",\"text\":\"scripted two\"}]}]";

/* Runs a prompt to its end; returns its status (done got the same). */
static AgentRunStatus run_prompt(AgentHandle agent, const char *text) {
    atomic_int done[2] = {0, 0};
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, text, NTS, NULL, 0, record_done, done, &run));
    WAIT_RUN(run);
    AgentRunStatus status = outcome_of(run).status;
    CHECK_EQ_INT(atomic_load(&done[0]), 1000 + status);
    CHECK_EQ_INT(atomic_load(&done[1]), 1);
    CHECK_OK(agent_run_free(run));
    return status;
}

int main(void) {
    /* Version. */
    const char *version = agent_version();
    CHECK(version && strchr(version, '.'));
    CHECK_OK(agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR));

    /* An error belongs to the caller: another thread's failure and a later success leave it. */
    AgentError *error = agent_options_free((AgentOptions){0});
    CHECK_EQ_INT(agent_error_code(error), AGENT_ERR_INVALID_HANDLE);
    CHECK(strcmp(agent_error_message(error, NULL), "options is the null handle.") == 0);
    pthread_t other;
    CHECK(pthread_create(&other, NULL, other_thread_error, NULL) == 0);
    pthread_join(other, NULL);
    AgentOptions scratch;
    CHECK_OK(agent_options_new(NULL, 0, &scratch));
    CHECK_OK(agent_options_free(scratch));
    CHECK(strcmp(agent_error_message(error, NULL), "options is the null handle.") == 0);
    agent_error_free(error);

    /* The runtime can be configured before first use, and not once it runs. */
    CHECK_OK(agent_runtime_configure(1));

    /* Options: defaults, every field, and each kind of bad input. */
    AgentOptions options = {0};
    CHECK_OK(agent_options_new(NULL, 0, &options));
    CHECK_OK(agent_options_free(options));
    CHECK_ERR(agent_options_free(options), AGENT_ERR_INVALID_HANDLE, "options is a freed options object");
    CHECK_ERR(agent_options_new("{", NTS, &options), AGENT_ERR_INVALID_JSON, "options_json is not valid JSON");
    CHECK_ERR(agent_options_new("[]", NTS, &options), AGENT_ERR_INVALID_JSON, "options_json must be a JSON object");
    CHECK_ERR(agent_options_new("{\"initialState\":1}", NTS, &options), AGENT_ERR_INVALID_JSON,
              "initialState must be a JSON object");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"model\":\"x\"}}", NTS, &options), AGENT_ERR_INVALID_JSON,
              "initialState.model must be an object");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"systemPrompt\":3}}", NTS, &options), AGENT_ERR_INVALID_JSON,
              "initialState.systemPrompt must be a string");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"tools\":[]}}", NTS, &options), AGENT_ERR_INVALID_JSON,
              "agent_options_add_tool");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"messages\":[{\"content\":1}]}}", NTS, &options),
              AGENT_ERR_INVALID_JSON, "initialState.messages[0] must be a message");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"bogus\":1}}", NTS, &options), AGENT_ERR_INVALID_JSON,
              "Unknown field initialState.bogus");
    CHECK_ERR(agent_options_new("{\"bogus\":1}", NTS, &options), AGENT_ERR_INVALID_JSON, "bogus");
    CHECK_ERR(agent_options_new("{\"steeringMode\":5}", NTS, &options), AGENT_ERR_INVALID_JSON, "steeringMode");
    CHECK_ERR(agent_options_new("{\"initialState\":{\"systemPrompt\":\"\xff\"}}", NTS, &options),
              AGENT_ERR_INVALID_UTF8, "options_json is not valid UTF-8");
    CHECK_ERR(agent_options_new(NULL, 0, NULL), AGENT_ERR_NULL, "out_options is NULL");

    /* Without a stream function and without a default, construction fails; options are consumed. */
    AgentHandle agent = {0};
    CHECK_ERR(agent_new((AgentOptions){0}, &agent), AGENT_ERR_NO_STREAM_FN,
              "No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn().");
    CHECK(agent.id == 0);
    CHECK_OK(agent_options_new("{\"initialState\":{\"systemPrompt\":\"sys\"}}", NTS, &options));
    CHECK_ERR(agent_new(options, &agent), AGENT_ERR_NO_STREAM_FN, "No default stream function configured");
    CHECK_ERR(agent_options_free(options), AGENT_ERR_INVALID_HANDLE, "freed");
    CHECK_ERR(agent_options_set_hook(options, AGENT_HOOK_FINISH_TURN, NULL, NULL, NULL), AGENT_ERR_INVALID_HANDLE,
              "freed");

    /* Options with every field and the scripted model. */
    CHECK_OK(agent_options_new("{\"initialState\":{\"systemPrompt\":\"be brief\",\"model\":" MODEL_JSON
                               ",\"thinkingLevel\":\"low\",\"messages\":[]},\"steeringMode\":\"all\","
                               "\"followUpMode\":\"all\",\"toolExecution\":\"sequential\",\"sessionId\":\"s1\","
                               "\"transport\":\"sse\",\"maxRetryDelayMs\":5,\"identity\":{\"user\":\"u\"}}", NTS,
                               &options));
    CHECK_ERR(agent_options_set_scripted_model(options, "{}", NTS), AGENT_ERR_INVALID_JSON, "The script must be a JSON array");
    CHECK_ERR(agent_options_set_scripted_model(options, "[{\"content\":5}]", NTS), AGENT_ERR_INVALID_JSON,
              "Response 0 of the script is invalid");
    CHECK_ERR(agent_options_set_scripted_model(options, "[{", NTS), AGENT_ERR_INVALID_JSON, "script_json is not valid JSON");
    CHECK_ERR(agent_options_set_hook(options, 99, NULL, NULL, NULL), AGENT_ERR_INVALID_ARGUMENT, "Unknown hook kind 99");
    CHECK_ERR(agent_options_set_hook(options, -1, NULL, NULL, NULL), AGENT_ERR_INVALID_ARGUMENT, "Unknown hook kind -1");
    CHECK_OK(agent_options_set_scripted_model(options, SCRIPT, NTS));
    CHECK_ERR(agent_new(options, NULL), AGENT_ERR_NULL, "out_agent is NULL");
    /* ...which consumed the options: */
    CHECK_ERR(agent_new(options, &agent), AGENT_ERR_INVALID_HANDLE, "options is a freed options object");

    CHECK_OK(agent_options_new("{\"initialState\":{\"systemPrompt\":\"be brief\",\"model\":" MODEL_JSON
                               ",\"thinkingLevel\":\"low\"},\"steeringMode\":\"all\",\"followUpMode\":\"all\","
                               "\"toolExecution\":\"sequential\",\"sessionId\":\"s1\",\"transport\":\"sse\","
                               "\"maxRetryDelayMs\":5,\"identity\":{\"user\":\"u\"}}", NTS,
                               &options));
    CHECK_OK(agent_options_set_scripted_model(options, SCRIPT, NTS));
    CHECK_OK(agent_new(options, &agent));
    char *state = state_of(agent);
    CHECK_HAS(state, "\"systemPrompt\":\"be brief\"");
    CHECK_HAS(state, "\"thinkingLevel\":\"low\"");
    CHECK_HAS(state, "\"steeringMode\":\"all\"");
    CHECK_HAS(state, "\"followUpMode\":\"all\"");
    CHECK_HAS(state, "\"toolExecution\":\"sequential\"");
    CHECK_HAS(state, "\"sessionId\":\"s1\"");
    CHECK_HAS(state, "\"isStreaming\":false");
    agent_string_free(state);
    run_prompt(agent, "hi");
    state = state_of(agent);
    CHECK_HAS(state, "scripted one");
    agent_string_free(state);

    /* Now the runtime runs: it can no longer be configured. */
    CHECK_ERR(agent_runtime_configure(2), AGENT_ERR_INVALID_STATE, "already running");

    /* agent_configure: fields change at once; bad patches change nothing. */
    CHECK_OK(agent_configure(agent, "{\"thinkingLevel\":\"high\",\"steeringMode\":\"one-at-a-time\","
                                    "\"sessionId\":null,\"model\":{\"id\":\"m2\",\"api\":\"faux\",\"provider\":\"p2\"}}", NTS));
    state = state_of(agent);
    CHECK_HAS(state, "\"thinkingLevel\":\"high\"");
    CHECK_HAS(state, "\"steeringMode\":\"one-at-a-time\"");
    CHECK_HAS(state, "\"id\":\"m2\"");
    CHECK_NOT_HAS(state, "\"sessionId\"");
    agent_string_free(state);
    CHECK_ERR(agent_configure(agent, "{\"bogus\":1,\"thinkingLevel\":\"off\"}", NTS), AGENT_ERR_INVALID_JSON, "bogus");
    CHECK_ERR(agent_configure(agent, "{\"model\":3}", NTS), AGENT_ERR_INVALID_JSON, "model");
    CHECK_ERR(agent_configure(agent, "[1]", NTS), AGENT_ERR_INVALID_JSON, "The configuration patch must be a JSON object.");
    CHECK_ERR(agent_configure(agent, "{\"thinkingLevel\":", NTS), AGENT_ERR_INVALID_JSON, "patch_json is not valid JSON");
    CHECK_ERR(agent_configure(agent, NULL, NTS), AGENT_ERR_NULL, "patch_json is NULL");
    state = state_of(agent);
    CHECK_HAS(state, "\"thinkingLevel\":\"high\"");
    agent_string_free(state);

    /* agent_set_scripted_model replaces the stream function. */
    CHECK_ERR(agent_set_scripted_model(agent, "[{\"content\":5}]", NTS), AGENT_ERR_INVALID_JSON, "Response 0");
    CHECK_OK(agent_set_scripted_model(agent, "[{\"content\":[{\"type\":\"text\",\"text\":\"replaced\"}]}]", NTS));
    run_prompt(agent, "again");
    state = state_of(agent);
    CHECK_HAS(state, "replaced");
    agent_string_free(state);

    /* The default stream function: captured at agent_new. */
    CHECK_ERR(agent_set_default_scripted_model("{", NTS), AGENT_ERR_INVALID_JSON, "script_json is not valid JSON");
    CHECK_OK(agent_set_default_scripted_model("[{\"content\":[{\"type\":\"text\",\"text\":\"default scripted\"}]}]", NTS));
    AgentHandle with_scripted = {0}, with_host = {0};
    CHECK_OK(agent_new((AgentOptions){0}, &with_scripted));
    CHECK_OK(agent_set_default_stream_fn(answer_stream, &default_fn_calls, count_finalizer_default));
    CHECK_OK(agent_new((AgentOptions){0}, &with_host));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL)); /* cleared: agents keep theirs */
    AgentHandle none = {0};
    CHECK_ERR(agent_new((AgentOptions){0}, &none), AGENT_ERR_NO_STREAM_FN, "setDefaultStreamFn()");
    run_prompt(with_scripted, "a");
    run_prompt(with_host, "b");
    CHECK_EQ_INT(atomic_load(&default_fn_calls), 1);
    state = state_of(with_scripted);
    CHECK_HAS(state, "default scripted");
    agent_string_free(state);
    state = state_of(with_host);
    CHECK_HAS(state, "from host");
    agent_string_free(state);
    CHECK_EQ_INT(atomic_load(&default_fn_finalized), 0); /* with_host still holds it */
    CHECK_OK(agent_free(with_host));
    /* The last reference may be dropped a moment later on the runtime thread. */
    WAIT_UNTIL(atomic_load(&default_fn_finalized) == 1);
    CHECK_OK(agent_free(with_scripted));

    /* agent_set_stream_fn(NULL): the next run looks up the (now absent) default and fails. */
    CHECK_OK(agent_set_stream_fn(agent, NULL, NULL, NULL));
    CHECK_EQ_INT(run_prompt(agent, "no model"), AGENT_RUN_MODEL_ERROR);
    state = state_of(agent);
    CHECK_HAS(state, "\"errorMessage\":\"No default stream function configured");
    agent_string_free(state);
    /* ...and agent_set_stream_fn installs a host function after construction. */
    atomic_int finalized = 0;
    CHECK_OK(agent_set_stream_fn(agent, answer_stream, &finalized, count_finalizer));
    run_prompt(agent, "host now");
    CHECK_EQ_INT(atomic_load(&default_fn_calls), 2);
    CHECK_OK(agent_set_stream_fn(agent, answer_stream, &finalized, count_finalizer)); /* drops the first */
    WAIT_UNTIL(atomic_load(&finalized) == 1);
    CHECK_OK(agent_free(agent));
    WAIT_UNTIL(atomic_load(&finalized) == 2);
    sleep_ms(50);
    CHECK_EQ_INT(atomic_load(&finalized), 2); /* exactly once each */
    CHECK_EQ_INT(atomic_load(&default_fn_finalized), 1);
    CHECK_ERR(agent_free(agent), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent");

    /* agent_string_free(NULL) is ignored. */
    agent_string_free(NULL);
    printf("test_basics: ok\n");
    return 0;
}

/* The built-in providers through the C ABI: selecting them per options, per agent and as the
 * process-wide default, and the failures pi-ai reports synchronously (unknown api, no API key)
 * turned into the run's error message. No network: these requests never leave the process. */
#include "check.h"

static char *last_error_message(AgentHandle agent) {
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

int main(void) {
    CHECK_ERR(agent_options_use_providers((AgentOptions){0}), AGENT_ERR_INVALID_HANDLE, "options is the null handle.");

    /* The sanitizer builds leave the providers out (LIBAGENT_TEST_NO_PROVIDERS=1): then every
     * way of selecting them must say so, and nothing else is tested here. */
    if (getenv("LIBAGENT_TEST_NO_PROVIDERS")) {
        const char *why = "built without the built-in providers";
        CHECK_ERR(agent_set_default_providers(), AGENT_ERR_INVALID_STATE, why);
        AgentOptions bare = {0};
        CHECK_OK(agent_options_new(NULL, 0, &bare));
        CHECK_ERR(agent_options_use_providers(bare), AGENT_ERR_INVALID_STATE, why);
        CHECK_OK(agent_options_free(bare));
        puts("test_providers: ok (a build without providers)");
        return 0;
    }

    /* Per options: an api the providers do not speak fails the way pi-ai throws. */
    AgentOptions opts = {0};
    CHECK_OK(agent_options_new(MODEL("bedrock-converse-stream", "amazon-bedrock"), NTS, &opts));
    CHECK_OK(agent_options_use_providers(opts));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(opts, &agent));
    prompt_and_wait(agent);
    char *message = last_error_message(agent);
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
    message = last_error_message(agent);
    CHECK_HAS(message, "No API key for provider: acme-local");
    agent_string_free(message);
    CHECK_OK(agent_free(agent));
    CHECK_ERR(agent_use_providers(agent), AGENT_ERR_INVALID_HANDLE, "agent is a freed agent.");

    /* The process-wide default: agents built without a stream function use the providers. */
    CHECK_OK(agent_set_default_providers());
    CHECK_OK(agent_options_new(MODEL("openai-completions", "acme-local"), NTS, &opts));
    CHECK_OK(agent_new(opts, &agent));
    prompt_and_wait(agent);
    message = last_error_message(agent);
    CHECK_HAS(message, "No API key for provider: acme-local");
    agent_string_free(message);
    CHECK_OK(agent_free(agent));
    CHECK_OK(agent_set_default_stream_fn(NULL, NULL, NULL));
    puts("test_providers: ok");
    return 0;
}

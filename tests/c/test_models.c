/* The model catalogue through the C ABI: agent_model_find by "provider/id" (pi-ai 1.6.0's model
 * object, its members in pi-ai's order), names whose id holds a slash, the errors of unknown
 * names and providers, agent_model_list, and a catalogue model accepted as an agent's model. */
#include "check.h"

static void find_known_model(void) {
    char *json = NULL;
    size_t len = 0;
    CHECK_OK(agent_model_find("anthropic/claude-sonnet-4-5", NTS, &json, &len));
    CHECK_EQ_INT(len, strlen(json));
    /* pi-ai's member order, then the facts an agent needs. */
    CHECK(strncmp(json, "{\"id\":\"claude-sonnet-4-5\",\"name\":", 33) == 0);
    CHECK_HAS(json, "\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"baseUrl\":\"https://api.anthropic.com\"");
    CHECK_HAS(json, "\"cost\":{\"input\":3,\"output\":15,\"cacheRead\":0.3,\"cacheWrite\":3.75}");
    CHECK_HAS(json, "\"contextWindow\":200000,\"maxTokens\":64000");
    agent_string_free(json);

    /* A length, not a NUL: the name is the first 27 bytes. */
    json = NULL;
    CHECK_OK(agent_model_find("anthropic/claude-sonnet-4-5 and more", 27, &json, NULL));
    CHECK_HAS(json, "\"id\":\"claude-sonnet-4-5\"");
    agent_string_free(json);

    /* The id holds a slash: the name splits at its first one. */
    json = NULL;
    CHECK_OK(agent_model_find("openrouter/anthropic/claude-sonnet-4.5", NTS, &json, NULL));
    CHECK_HAS(json, "\"id\":\"anthropic/claude-sonnet-4.5\"");
    CHECK_HAS(json, "\"provider\":\"openrouter\"");
    agent_string_free(json);
}

static void unknown_names(void) {
    char *json = (char *)"untouched";
    CHECK_ERR(agent_model_find("anthropic/claude-nonexistent", NTS, &json, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "Unknown model 'anthropic/claude-nonexistent': the model catalogue (@earendil-works/pi-ai 1.6.0) "
              "has no model 'claude-nonexistent' for provider 'anthropic'; agent_model_list lists the models");
    CHECK_ERR(agent_model_find("nobody/claude-sonnet-4-5", NTS, &json, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "has no provider 'nobody'");
    CHECK_ERR(agent_model_find("claude-sonnet-4-5", NTS, &json, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "'claude-sonnet-4-5' is not a model name: name a model as \"provider/id\"");
    CHECK_ERR(agent_model_find("", 0, &json, NULL), AGENT_ERR_INVALID_ARGUMENT, "is not a model name");
    CHECK(strcmp(json, "untouched") == 0); /* out-parameters are written only on success */
    CHECK_ERR(agent_model_find(NULL, NTS, &json, NULL), AGENT_ERR_NULL, "name is NULL.");
    CHECK_ERR(agent_model_find("anthropic/claude-sonnet-4-5", NTS, NULL, NULL), AGENT_ERR_NULL,
              "out_model_json is NULL.");
    CHECK_ERR(agent_model_find("anthropic/\xff", NTS, &json, NULL), AGENT_ERR_INVALID_UTF8, "name is not valid UTF-8");
}

static void lists(void) {
    char *json = NULL;
    size_t len = 0;
    CHECK_OK(agent_model_list("anthropic", NTS, &json, &len));
    CHECK(json[0] == '[' && json[len - 1] == ']');
    CHECK_HAS(json, "{\"id\":\"claude-sonnet-4-5\",");
    CHECK_NOT_HAS(json, "\"provider\":\"openai\"");
    agent_string_free(json);

    json = NULL;
    CHECK_OK(agent_model_list(NULL, 0, &json, &len));
    CHECK_HAS(json, "\"provider\":\"anthropic\"");
    CHECK_HAS(json, "\"provider\":\"openai\"");
    CHECK_HAS(json, "\"provider\":\"google\"");
    CHECK(len > 100000);
    agent_string_free(json);

    CHECK_ERR(agent_model_list("nobody", NTS, &json, NULL), AGENT_ERR_INVALID_ARGUMENT,
              "Unknown provider 'nobody': the model catalogue (@earendil-works/pi-ai 1.6.0) has the providers ");
    CHECK_ERR(agent_model_list("anthropic", NTS, NULL, NULL), AGENT_ERR_NULL, "out_models_json is NULL.");
}

/* The object found is a model an agent on the providers takes as it is. */
static void as_agent_model(void) {
    char *model = NULL;
    CHECK_OK(agent_model_find("google/gemini-2.5-flash", NTS, &model, NULL));
    size_t size = strlen(model) + 64;
    char *options_json = malloc(size);
    CHECK(options_json != NULL);
    snprintf(options_json, size, "{\"initialState\":{\"model\":%s}}", model);
    AgentOptions options = {0};
    CHECK_OK(agent_options_new(options_json, NTS, &options));
    CHECK_OK(agent_options_use_providers(options));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    char *state = NULL;
    CHECK_OK(agent_get_state(agent, &state, NULL));
    CHECK_HAS(state, model);
    agent_string_free(state);
    CHECK_OK(agent_free(agent));
    free(options_json);
    agent_string_free(model);
}

int main(void) {
    find_known_model();
    unknown_names();
    lists();
    as_agent_model();
    puts("test_models: ok");
    return 0;
}

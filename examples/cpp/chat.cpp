// A terminal chat with a real model through libagent's built-in providers: type a message per
// line, the answer streams in; Ctrl-D quits. A failed request (wrong key, URL or model) prints
// the server's error and exits with status 1.
//
// Configuration (as examples/c/assistant.c):
//   LIBAGENT_API        openai-completions | anthropic-messages | openai-responses | google-generative-ai
//   LIBAGENT_BASE_URL   e.g. http://127.0.0.1:8080/v1 (llama.cpp), https://api.anthropic.com,
//                       https://generativelanguage.googleapis.com/v1beta (Gemini)
//   LIBAGENT_MODEL      the model id the server knows, or a model of libagent's catalogue
//                       ("anthropic/claude-sonnet-4-5"), which gives the API, base URL, provider,
//                       limits and prices (the other variables, when set, override them)
//   LIBAGENT_PROVIDER   optional (default openai / anthropic / google: picks the key's environment
//                       variable, OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...)
//   LIBAGENT_API_KEY    optional: the key to send instead (any value for servers without auth)
//   LIBAGENT_CONTEXT_WINDOW, LIBAGENT_MAX_TOKENS   optional (default: the catalogue's, else 128000, 4096)
#include <libagent/agent.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

namespace {

std::string env(const char* name, const char* fallback = "") {
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

// The model of libagent's catalogue that LIBAGENT_MODEL names ("anthropic/claude-sonnet-4-5"),
// the variables that are set in place of its members, or nullopt when it names none.
std::optional<std::string> catalogue_model(const std::string& id) {
    std::string model;
    try {
        model = agent::find_model(id);
    } catch (const agent::Error&) {
        return std::nullopt;
    }
    // Appended before its closing brace: a repeated member's last value wins, in its first place.
    model.pop_back();
    for (const char* text : {"LIBAGENT_API:api", "LIBAGENT_BASE_URL:baseUrl", "LIBAGENT_PROVIDER:provider"}) {
        std::string spec = text, value = env(spec.substr(0, spec.find(':')).c_str());
        if (!value.empty()) model += "," + agent::quote(spec.substr(spec.find(':') + 1)) + ":" + agent::quote(value);
    }
    for (const char* text : {"LIBAGENT_CONTEXT_WINDOW:contextWindow", "LIBAGENT_MAX_TOKENS:maxTokens"}) {
        std::string spec = text, value = env(spec.substr(0, spec.find(':')).c_str());
        if (!value.empty()) model += "," + agent::quote(spec.substr(spec.find(':') + 1)) + ":" + value;
    }
    return model + "}";
}

// The model object from LIBAGENT_*, or nullopt (with a message) when it is incomplete.
std::optional<std::string> model_from_env() {
    std::string api = env("LIBAGENT_API"), base_url = env("LIBAGENT_BASE_URL"), id = env("LIBAGENT_MODEL");
    if (!id.empty())
        if (std::optional<std::string> model = catalogue_model(id)) return model;
    if (api.empty() || base_url.empty() || id.empty()) {
        std::cerr << "error: set LIBAGENT_API, LIBAGENT_BASE_URL and LIBAGENT_MODEL\n";
        return std::nullopt;
    }
    std::string provider = env("LIBAGENT_PROVIDER");
    const char* default_provider = api == "openai-completions"     ? "openai"
                                   : api == "anthropic-messages"   ? "anthropic"
                                   : api == "openai-responses"     ? "openai"
                                   : api == "google-generative-ai" ? "google"
                                                                   : nullptr;
    if (!default_provider) {
        std::cerr << "error: LIBAGENT_API must be openai-completions, anthropic-messages, openai-responses or "
                     "google-generative-ai, not '"
                  << api << "'\n";
        return std::nullopt;
    }
    if (provider.empty()) provider = default_provider;
    return R"({"id":)" + agent::quote(id) + R"(,"name":)" + agent::quote(id) + R"(,"api":)" + agent::quote(api) +
           R"(,"provider":)" + agent::quote(provider) + R"(,"baseUrl":)" + agent::quote(base_url) +
           R"(,"reasoning":false,"input":["text"],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},)" +
           R"("contextWindow":)" + env("LIBAGENT_CONTEXT_WINDOW", "128000") + R"(,"maxTokens":)" +
           env("LIBAGENT_MAX_TOKENS", "4096") + "}";
}

}  // namespace

int main() {
    std::optional<std::string> model = model_from_env();
    if (!model) return 2;
    try {
        agent::Options options(R"({"initialState":{"systemPrompt":"You are a helpful assistant. Be brief.","model":)" +
                               *model + "}}");
        options.use_providers();  // the built-in providers speak HTTP to model.baseUrl
        // getApiKey(provider): LIBAGENT_API_KEY when set, else null (the provider's variable).
        options.set_hook(agent::HookKind::GetApiKey, [](std::string_view) {
            std::string key = env("LIBAGENT_API_KEY");
            return key.empty() ? std::string("null") : agent::quote(key);
        });
        agent::Agent bot(std::move(options));
        bot.subscribe([](const agent::Event& e) {  // the answer's text (not thinking or tool arguments)
            if (e.update() == agent::UpdateType::TextDelta) std::cout << e.delta() << std::flush;
        });
        std::string line;
        while (std::getline(std::cin, line)) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            agent::Outcome outcome = bot.prompt(line).wait();
            if (outcome.status == agent::RunStatus::Aborted) {
                std::cerr << "\n(aborted)\n";
                continue;
            }
            if (!outcome) {  // ModelError: the request failed (wrong key, URL or model); the text says why
                std::cerr << "\nerror: " << outcome.error_message << "\n";
                return 1;
            }
            std::cout << "\n";
        }
    } catch (const agent::Error& e) {  // a call libagent refused (bad options, ...)
        std::cerr << "\nerror: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

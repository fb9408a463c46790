// How runs end, as the C++ error model reports it: a failed model request throws
// Error(AGENT_ERR_MODEL_ERROR, errorMessage), an aborted run Error(AGENT_ERR_ABORTED, ...), the
// async forms pass the same to `done`; and the built-in providers selected from C++.
#include <future>

#include "common.hpp"

namespace {

using test::status_of;

agent::Agent scripted(const char* script) {
    agent::Options options(test::options_json());
    options.set_scripted_model(script);
    return agent::Agent(std::move(options));
}

}  // namespace

TEST(Outcome, AFailedModelRequestThrowsModelError) {
    agent::Agent bot = scripted(R"([{"content":[],"stopReason":"error","errorMessage":"401 invalid api key"},
                                    {"content":[{"type":"text","text":"fine"}]}])");
    std::string message;
    EXPECT_EQ(status_of([&] { bot.prompt("hi"); }, &message), AGENT_ERR_MODEL_ERROR);
    EXPECT_EQ(message, "401 invalid api key");
    EXPECT_NE(bot.state().find(R"("errorMessage":"401 invalid api key")"), std::string::npos);
    EXPECT_EQ(status_of([&] { bot.prompt("again"); }), AGENT_OK);  // a completed run does not throw
}

TEST(Outcome, AThrowingStreamFunctionThrowsModelErrorWithItsMessage) {
    agent::Options options(test::options_json());
    options.set_stream_fn([](std::string_view, agent::Stream) { throw std::runtime_error("no route to host"); });
    agent::Agent bot(std::move(options));
    std::string message;
    EXPECT_EQ(status_of([&] { bot.prompt("hi"); }, &message), AGENT_ERR_MODEL_ERROR);
    EXPECT_EQ(message, "no route to host");
}

TEST(Outcome, AnAbortedRunThrowsAbortedNotModelError) {
    agent::Agent bot = scripted(R"([{"content":[],"waitForAbort":true}])");
    std::promise<void> started;
    bot.subscribe([&](const agent::Event& e) {
        if (e.type() == "message_start") {
            try {
                started.set_value();
            } catch (const std::future_error&) {
            }
        }
    });
    std::promise<std::pair<AgentStatus, std::string>> ended;
    bot.prompt_async("wait", [&](AgentStatus status, std::string_view error) {
        ended.set_value({status, std::string(error)});
    });
    started.get_future().wait();
    bot.abort();
    auto [status, error] = ended.get_future().get();
    EXPECT_EQ(status, AGENT_ERR_ABORTED);
    EXPECT_FALSE(error.empty());
}

TEST(Outcome, AsyncDoneGetsModelError) {
    agent::Agent bot = scripted(R"([{"content":[],"stopReason":"error","errorMessage":"503 overloaded"}])");
    std::promise<std::pair<AgentStatus, std::string>> ended;
    bot.prompt_async("hi", [&](AgentStatus status, std::string_view error) {
        ended.set_value({status, std::string(error)});
    });
    auto [status, error] = ended.get_future().get();
    EXPECT_EQ(status, AGENT_ERR_MODEL_ERROR);
    EXPECT_EQ(error, "503 overloaded");
}

TEST(Outcome, UseProvidersSelectsTheBuiltInProviders) {
    // An api the providers do not speak fails the request the way pi-ai throws: no network.
    agent::Options options(test::options_json());
    options.use_providers();
    agent::Agent bot(std::move(options));
    std::string message;
    EXPECT_EQ(status_of([&] { bot.prompt("hi"); }, &message), AGENT_ERR_MODEL_ERROR);
    EXPECT_EQ(message, "No API provider registered for api: faux");
    // Per agent, with a key from the GetApiKey hook: a provider api without a reachable server.
    bot.set_scripted_model("[]");
    bot.use_providers();
    // A model the providers cannot use is refused when it is set, naming the field.
    EXPECT_NE(status_of([&] {
        bot.configure(R"({"model":{"id":"m","api":"openai-completions","provider":"acme","baseUrl":"not a url"}})");
    }, &message), AGENT_OK);
    EXPECT_NE(message.find("baseUrl"), std::string::npos) << message;
    bot.configure(R"({"model":{"id":"m","api":"openai-completions","provider":"acme","baseUrl":"http://127.0.0.1:9/v1"}})");
    bot.set_hook(agent::HookKind::GetApiKey, [](std::string_view) { return std::string(R"("k")"); });
    EXPECT_EQ(status_of([&] { bot.prompt("hi"); }, &message), AGENT_ERR_MODEL_ERROR);
    EXPECT_FALSE(message.empty());
    // openai-responses is reached the same way: the request is made (and fails to connect).
    bot.configure(R"({"model":{"id":"m","api":"openai-responses","provider":"acme","baseUrl":"http://127.0.0.1:9/v1"}})");
    EXPECT_EQ(status_of([&] { bot.prompt("hi"); }, &message), AGENT_ERR_MODEL_ERROR);
    EXPECT_FALSE(message.empty());
    EXPECT_EQ(message.find("No API provider"), std::string::npos) << message;
}

TEST(Outcome, ProviderOptionsGoThroughTheOptionsJson) {
    agent::Options options(R"({"maxRetryDelayMs":250,"initialState":{"model":{"id":"m","api":"faux","provider":"p"}}})");
    options.use_providers();
    agent::Agent bot(std::move(options));
    EXPECT_NE(bot.state().find(R"("maxRetryDelayMs":250)"), std::string::npos);
    std::string message;
    EXPECT_EQ(status_of([&] { agent::Options bad(R"({"maxRetryDelay":1})"); }, &message), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(message, R"(Unknown option "maxRetryDelay".)");
}

// How runs end: a run's Outcome says it (a failed model request is RunStatus::ModelError with
// the errorMessage, an aborted run RunStatus::Aborted), never an exception; `done` gets the same;
// and the built-in providers selected from C++.
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

TEST(Outcome, AFailedModelRequestIsAModelErrorOutcome) {
    agent::Agent bot = scripted(R"([{"content":[],"stopReason":"error","errorMessage":"401 invalid api key"},
                                    {"content":[{"type":"text","text":"fine"}]}])");
    agent::Outcome failed = bot.prompt("hi").wait();
    EXPECT_FALSE(failed);
    EXPECT_EQ(failed.status, agent::RunStatus::ModelError);
    EXPECT_EQ(failed.stop_reason, "error");
    EXPECT_EQ(failed.error_message, "401 invalid api key");
    EXPECT_NE(bot.state().find(R"("errorMessage":"401 invalid api key")"), std::string::npos);
    agent::Outcome fine = bot.prompt("again").wait();
    EXPECT_TRUE(fine);
    EXPECT_EQ(fine.error_message, "");
}

TEST(Outcome, AThrowingStreamFunctionIsAModelErrorWithItsMessage) {
    agent::Options options(test::options_json());
    options.set_stream_fn([](std::string_view, agent::Stream) { throw std::runtime_error("no route to host"); });
    agent::Agent bot(std::move(options));
    agent::Outcome outcome = bot.prompt("hi").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "no route to host");
}

TEST(Outcome, AnAbortedRunIsAbortedNotModelError) {
    agent::Agent bot = scripted(R"([{"content":[],"waitForAbort":true}])");
    std::promise<void> started;
    bot.subscribe([&](const agent::Event& e) {
        if (e.type() == agent::EventType::MessageStart) {
            try {
                started.set_value();
            } catch (const std::future_error&) {
            }
        }
    });
    std::promise<agent::Outcome> ended;
    agent::Run run = bot.prompt("wait", [&](const agent::Outcome& outcome) { ended.set_value(outcome); });
    started.get_future().wait();
    run.abort();
    agent::Outcome outcome = ended.get_future().get();
    EXPECT_EQ(outcome.status, agent::RunStatus::Aborted);
    EXPECT_FALSE(outcome.error_message.empty());
    EXPECT_EQ(run.wait().status, agent::RunStatus::Aborted);
}

TEST(Outcome, AsyncDoneGetsModelError) {
    agent::Agent bot = scripted(R"([{"content":[],"stopReason":"error","errorMessage":"503 overloaded"}])");
    std::promise<agent::Outcome> ended;
    bot.prompt_async("hi", [&](const agent::Outcome& outcome) { ended.set_value(outcome); });
    agent::Outcome outcome = ended.get_future().get();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "503 overloaded");
}

TEST(Outcome, FreeingTheAgentSettlesItsRunAsFreed) {
    agent::Run run;
    {
        agent::Agent bot = scripted(R"([{"content":[],"waitForAbort":true}])");
        run = bot.prompt("wait");
    }
    EXPECT_EQ(run.wait().status, agent::RunStatus::Freed);
}

TEST(Outcome, UseProvidersSelectsTheBuiltInProviders) {
    // An api the providers do not speak fails the request the way pi-ai throws: no network.
    agent::Options options(test::options_json());
    options.use_providers();
    agent::Agent bot(std::move(options));
    agent::Outcome outcome = bot.prompt("hi").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "No API provider registered for api: faux");
    // Per agent, with a key from the GetApiKey hook: a provider api without a reachable server.
    bot.set_scripted_model("[]");
    bot.use_providers();
    // A model the providers cannot use is refused when it is set, naming the field.
    std::string message;
    EXPECT_NE(status_of([&] {
        bot.configure(R"({"model":{"id":"m","api":"openai-completions","provider":"acme","baseUrl":"not a url"}})");
    }, &message), AGENT_OK);
    EXPECT_NE(message.find("baseUrl"), std::string::npos) << message;
    bot.configure(R"({"model":{"id":"m","api":"openai-completions","provider":"acme","baseUrl":"http://127.0.0.1:9/v1"}})");
    bot.set_hook(agent::HookKind::GetApiKey, [](std::string_view) { return std::string(R"("k")"); });
    outcome = bot.prompt("hi").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_FALSE(outcome.error_message.empty());
    // openai-responses is reached the same way: the request is made (and fails to connect).
    bot.configure(R"({"model":{"id":"m","api":"openai-responses","provider":"acme","baseUrl":"http://127.0.0.1:9/v1"}})");
    outcome = bot.prompt("hi").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_FALSE(outcome.error_message.empty());
    EXPECT_EQ(outcome.error_message.find("No API provider"), std::string::npos) << outcome.error_message;
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

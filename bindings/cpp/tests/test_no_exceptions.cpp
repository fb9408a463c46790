// The result-returning mode of the C++ binding (LIBAGENT_NO_EXCEPTIONS): every call that throws
// agent::Error in the default mode returns an agent::Result instead. This file is built twice
// (bindings/cpp/CMakeLists.txt): with -fno-exceptions, where the header selects the mode itself,
// and with exceptions on and LIBAGENT_NO_EXCEPTIONS defined. It uses no exceptions of its own.
#include <gtest/gtest.h>

#include <libagent/agent.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#ifndef LIBAGENT_NO_EXCEPTIONS
#error "this test needs the result-returning mode"
#endif

namespace {

constexpr const char* kOptions = R"({"initialState":{"systemPrompt":"sys","model":{"id":"m1","api":"faux","provider":"test"}}})";

agent::Agent scripted(const char* script) {
    auto options = agent::Options::create(kOptions);
    EXPECT_TRUE(options.ok());
    EXPECT_TRUE(options->set_scripted_model(script).ok());
    auto bot = agent::Agent::create(std::move(*options));
    EXPECT_TRUE(bot.ok()) << (bot.ok() ? "" : bot.error().what());
    return std::move(bot).value();
}

bool contains(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }

TEST(NoExceptions, FactoriesReturnTheErrorTheConstructorsWouldThrow) {
    auto malformed = agent::Options::create("{not json");
    ASSERT_FALSE(malformed.ok());
    EXPECT_EQ(malformed.status(), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(malformed.error().status(), AGENT_ERR_INVALID_JSON);
    EXPECT_STRNE(malformed.error().what(), "");

    auto nul = agent::Options::create(std::string_view("{}\0", 3));
    ASSERT_FALSE(nul.ok());
    EXPECT_EQ(nul.status(), AGENT_ERR_INVALID_ARGUMENT);

    auto no_model = agent::Agent::create(agent::Options());
    ASSERT_FALSE(no_model.ok());
    EXPECT_EQ(no_model.status(), AGENT_ERR_NO_STREAM_FN);
    EXPECT_TRUE(contains(no_model.error().what(), "Options::set_stream_fn"));

    auto tool = agent::Tool::create("{\"no\":\"name\"}", [](std::string_view, std::string_view) { return std::string("{}"); });
    EXPECT_FALSE(tool.ok());
}

TEST(NoExceptions, APromptReturnsOkAndTheListenerSeesTheAnswer) {
    agent::Agent bot = scripted(R"([{"content":[{"type":"text","text":"Hi there!","chunks":3}]}])");
    std::mutex mutex;
    std::string text;
    auto id = bot.subscribe([&](const agent::Event& e) {
        if (e.update_type() == "text_delta") {
            std::lock_guard<std::mutex> lock(mutex);
            text += e.delta();
        }
    });
    ASSERT_TRUE(id.ok());
    auto run = bot.prompt("hello");
    ASSERT_TRUE(run.ok()) << run.error().what();
    EXPECT_EQ(text, "Hi there!");
    auto state = bot.state();
    ASSERT_TRUE(state.ok());
    EXPECT_TRUE(contains(*state, "Hi there!"));
    EXPECT_TRUE(bot.unsubscribe(*id).ok());
    EXPECT_EQ(bot.unsubscribe(*id).status(), AGENT_ERR_INVALID_ARGUMENT);  // no longer subscribed
}

TEST(NoExceptions, AFailedRunReturnsModelErrorWithItsMessage) {
    agent::Agent bot = scripted(R"([{"content":[],"stopReason":"error","errorMessage":"401 invalid api key"}])");
    auto run = bot.prompt("hello");
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status(), AGENT_ERR_MODEL_ERROR);
    EXPECT_STREQ(run.error().what(), "401 invalid api key");
}

TEST(NoExceptions, BadInputIsAResultNotACrash) {
    agent::Agent bot = scripted("[]");
    EXPECT_EQ(bot.configure("{\"steeringMode\":5}").status(), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(bot.set_messages("[{\"no\":\"role\"}]").status(), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(bot.steer(std::string_view("a\0b", 3)).status(), AGENT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(bot.continue_run().status(), AGENT_ERR_INVALID_STATE);  // nothing to continue from
    auto queued = bot.has_queued_messages();
    ASSERT_TRUE(queued.ok());
    EXPECT_FALSE(*queued);
}

TEST(NoExceptions, SyncToolsAnswerAndAMalformedAnswerFailsTheCall) {
    auto options = agent::Options::create(kOptions);
    ASSERT_TRUE(options.ok());
    auto echo = agent::Tool::create(R"({"name":"echo","parameters":{"type":"object"}})",
                                    [](std::string_view, std::string_view args) {
                                        return agent::text_result(std::string("echo ") + std::string(args));
                                    });
    auto broken = agent::Tool::create(R"({"name":"broken","parameters":{"type":"object"}})",
                                      [](std::string_view, std::string_view) { return std::string("{not json"); });
    ASSERT_TRUE(echo.ok() && broken.ok());
    ASSERT_TRUE(options->add_tool(*echo).ok());
    ASSERT_TRUE(options->add_tool(*broken).ok());
    ASSERT_TRUE(options
                    ->set_scripted_model(R"([{"content":[{"type":"toolCall","id":"c1","name":"echo","arguments":{"x":1}},
                                              {"type":"toolCall","id":"c2","name":"broken","arguments":{}}]},
                                             {"content":[{"type":"text","text":"done"}]}])")
                    .ok());
    auto bot = agent::Agent::create(std::move(*options));
    ASSERT_TRUE(bot.ok());
    ASSERT_TRUE(bot->prompt("go").ok());
    std::string state = *bot->state();
    EXPECT_TRUE(contains(state, R"(echo {\"x\":1})")) << state;
    // The malformed answer became an error tool result naming the refusal.
    auto at = state.find(R"("toolCallId":"c2")");
    ASSERT_NE(at, std::string::npos) << state;
    auto end = state.find("}]", at);
    EXPECT_TRUE(contains(state.substr(at, end - at + 200), R"("isError":true)")) << state;
}

TEST(NoExceptions, DeferredAnswersReportTheirOwnStatus) {
    std::optional<agent::ToolCall> pending;
    std::mutex mutex;
    auto tool = agent::Tool::create(R"({"name":"later","parameters":{"type":"object"}})",
                                    [&](std::string_view, std::string_view, agent::ToolCall call) {
                                        std::lock_guard<std::mutex> lock(mutex);
                                        pending.emplace(std::move(call));
                                    });
    ASSERT_TRUE(tool.ok());
    auto options = agent::Options::create(kOptions);
    ASSERT_TRUE(options.ok() && options->add_tool(*tool).ok());
    ASSERT_TRUE(options
                    ->set_scripted_model(R"([{"content":[{"type":"toolCall","id":"c1","name":"later","arguments":{}}]},
                                             {"content":[{"type":"text","text":"ok"}]}])")
                    .ok());
    auto bot = agent::Agent::create(std::move(*options));
    ASSERT_TRUE(bot.ok());
    std::atomic<AgentStatus> done_status{AGENT_ERR_INTERNAL};
    ASSERT_TRUE(bot->prompt_async("go", [&](AgentStatus status, std::string_view) { done_status = status; }).ok());
    // A second run while this one is active: busy.
    EXPECT_EQ(bot->prompt_async("again").status(), AGENT_ERR_BUSY);
    for (int i = 0; i < 30000; i++) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (pending) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard<std::mutex> lock(mutex);
    ASSERT_TRUE(pending.has_value());
    EXPECT_EQ(pending->complete("{not json").status(), AGENT_ERR_INVALID_JSON);  // the call stays open
    EXPECT_TRUE(pending->complete(agent::text_result("later")).ok());
    EXPECT_EQ(pending->complete(agent::text_result("twice")).status(), AGENT_ERR_ALREADY_COMPLETED);
    auto idle = bot->wait_for_idle(std::chrono::milliseconds(60000));
    ASSERT_TRUE(idle.ok());
    EXPECT_TRUE(*idle);
    EXPECT_EQ(done_status.load(), AGENT_OK);
}

TEST(NoExceptions, BlockingCallsInsideACallbackReturnWouldDeadlock) {
    agent::Agent bot = scripted(R"([{"content":[{"type":"text","text":"x"}]}])");
    std::atomic<AgentStatus> inner{AGENT_OK};
    agent::Agent* self = &bot;
    ASSERT_TRUE(bot.subscribe([&](const agent::Event& e) {
                       if (e.type() == "agent_start") inner = self->prompt("nested").status();
                   })
                    .ok());
    ASSERT_TRUE(bot.prompt("hello").ok());
    EXPECT_EQ(inner.load(), AGENT_ERR_WOULD_DEADLOCK);
}

TEST(NoExceptions, TheEventQueueReturnsResults) {
    agent::Agent bot = scripted(R"([{"content":[{"type":"text","text":"queued"}]}])");
    auto queue = bot.events();
    ASSERT_TRUE(queue.ok());
    ASSERT_TRUE(bot.prompt("hello").ok());
    std::string all;
    for (;;) {
        auto next = queue->try_next();
        ASSERT_TRUE(next.ok());
        if (!*next) break;
        all += **next;
    }
    EXPECT_TRUE(contains(all, "\"agent_end\""));
    EXPECT_TRUE(queue->close().ok());
    EXPECT_EQ(bot.events("{\"capacity\":\"many\"}").status(), AGENT_ERR_INVALID_JSON);
}

}  // namespace

// The result-returning mode of the C++ binding (LIBAGENT_NO_EXCEPTIONS): every call that throws
// agent::Error in the default mode returns an agent::Result instead. This file is built twice
// (bindings/cpp/CMakeLists.txt): with -fno-exceptions, where the header selects the mode itself,
// and with exceptions on and LIBAGENT_NO_EXCEPTIONS defined. It uses no exceptions of its own.
#include <gtest/gtest.h>

#include <libagent/agent.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

    // Texts go to libagent as (data, size): a NUL byte is part of the text, here bad JSON.
    auto nul = agent::Options::create(std::string_view("{}\0", 3));
    ASSERT_FALSE(nul.ok());
    EXPECT_EQ(nul.status(), AGENT_ERR_INVALID_JSON);

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
        if (e.update() == agent::UpdateType::TextDelta) {
            std::lock_guard<std::mutex> lock(mutex);
            text += e.delta();
        }
    });
    ASSERT_TRUE(id.ok());
    auto run = bot.prompt("hello");
    ASSERT_TRUE(run.ok()) << run.error().what();
    auto outcome = run->wait();
    ASSERT_TRUE(outcome.ok());
    EXPECT_TRUE(outcome->completed());
    EXPECT_EQ(text, "Hi there!");
    auto state = bot.state();
    ASSERT_TRUE(state.ok());
    EXPECT_TRUE(contains(*state, "Hi there!"));
    EXPECT_TRUE(bot.unsubscribe(*id).ok());
    EXPECT_EQ(bot.unsubscribe(*id).status(), AGENT_ERR_INVALID_ARGUMENT);  // no longer subscribed
}

TEST(NoExceptions, AFailedRunIsAModelErrorOutcome) {
    agent::Agent bot = scripted(R"([{"content":[],"stopReason":"error","errorMessage":"401 invalid api key"}])");
    auto run = bot.prompt("hello");
    ASSERT_TRUE(run.ok());  // a failed request is an outcome, not an error
    auto outcome = run->wait();
    ASSERT_TRUE(outcome.ok());
    EXPECT_EQ(outcome->status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome->error_message, "401 invalid api key");
}

TEST(NoExceptions, BadInputIsAResultNotACrash) {
    agent::Agent bot = scripted("[]");
    EXPECT_EQ(bot.configure("{\"steeringMode\":5}").status(), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(bot.set_messages("[{\"no\":\"role\"}]").status(), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(bot.steer(std::string_view("a\0b", 3)).status(), AGENT_ERR_INVALID_JSON);
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
    auto run = bot->prompt("go");
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(run->wait().ok());
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
    std::atomic<agent::RunStatus> done_status{agent::RunStatus::Running};
    ASSERT_TRUE(bot->prompt_async("go", [&](const agent::Outcome& outcome) { done_status = outcome.status; }).ok());
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
    EXPECT_EQ(done_status.load(), agent::RunStatus::Completed);
}

TEST(NoExceptions, BlockingCallsInsideACallbackReturnWouldDeadlock) {
    agent::Agent bot = scripted(R"([{"content":[{"type":"text","text":"x"}]}])");
    std::atomic<AgentErrorCode> inner{AGENT_OK}, busy{AGENT_OK};
    agent::Agent* self = &bot;
    ASSERT_TRUE(bot.subscribe([&](const agent::Event& e) {
                       if (e.type() != agent::EventType::AgentStart) return;
                       inner = self->wait_for_idle().status();
                       busy = self->prompt("nested").status();
                   })
                    .ok());
    auto run = bot.prompt("hello");
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(run->wait().ok());
    EXPECT_EQ(inner.load(), AGENT_ERR_WOULD_DEADLOCK);
    EXPECT_EQ(busy.load(), AGENT_ERR_BUSY);
}

TEST(NoExceptions, TheEventQueueReturnsResults) {
    agent::Agent bot = scripted(R"([{"content":[{"type":"text","text":"queued"}]}])");
    auto queue = bot.events();
    ASSERT_TRUE(queue.ok());
    auto run = bot.prompt("hello");
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(run->wait().ok());
    std::string all;
    for (;;) {
        auto next = queue->try_next();
        ASSERT_TRUE(next.ok());
        if (!*next) break;
        auto json = (*next)->json();
        ASSERT_TRUE(json.ok());
        all += *json;
    }
    EXPECT_TRUE(contains(all, "\"agent_end\""));
    EXPECT_TRUE(queue->close().ok());
    EXPECT_EQ(bot.events("{\"capacity\":\"many\"}").status(), AGENT_ERR_INVALID_JSON);
}

TEST(NoExceptions, HostPumpedRunsDispatchOnTheWaitingThread) {
    auto dispatcher = agent::Dispatcher::create();
    ASSERT_TRUE(dispatcher.ok());
    auto options = agent::Options::create(kOptions);
    ASSERT_TRUE(options.ok());
    ASSERT_TRUE(options->set_scripted_model(R"([{"content":[{"type":"text","text":"pumped"}]}])").ok());
    ASSERT_TRUE(options->set_dispatcher(*dispatcher).ok());
    auto bot = agent::Agent::create(std::move(*options));
    ASSERT_TRUE(bot.ok());
    auto here = std::this_thread::get_id();
    std::atomic<int> on_host{0}, elsewhere{0};
    ASSERT_TRUE(bot->subscribe([&](const agent::Event&) { (std::this_thread::get_id() == here ? on_host : elsewhere)++; }).ok());
    auto run = bot->prompt("go");
    ASSERT_TRUE(run.ok());
    auto outcome = run->wait();  // dispatches while it waits
    ASSERT_TRUE(outcome.ok());
    EXPECT_TRUE(outcome->completed());
    EXPECT_GT(on_host.load(), 0);
    EXPECT_EQ(elsewhere.load(), 0);
    auto ran = dispatcher->dispatch(std::chrono::milliseconds(10));
    ASSERT_TRUE(ran.ok());
    EXPECT_EQ(*ran, 0u);
}

}  // namespace

TEST(NoExceptions, SessionsReturnResults) {
    char dir[] = "/tmp/libagent-cpp-noexcept-session-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::string notes = std::string(dir) + "/notes.txt";
    if (FILE* f = std::fopen(notes.c_str(), "w")) {
        std::fputs("just notes\n", f);
        std::fclose(f);
    }
    auto not_a_session = agent::Session::open(notes);
    ASSERT_FALSE(not_a_session.ok());
    EXPECT_EQ(not_a_session.status(), AGENT_ERR_NOT_A_SESSION);
    EXPECT_TRUE(contains(not_a_session.error().what(), notes.c_str())) << not_a_session.error().what();

    auto session = agent::Session::open(std::string(dir) + "/chat.jsonl");
    ASSERT_TRUE(session.ok()) << session.error().what();
    auto leaf = session->leaf_id();
    ASSERT_TRUE(leaf.ok());
    EXPECT_EQ(*leaf, std::nullopt);
    auto bad = session->branch("missing1");
    EXPECT_EQ(bad.status(), AGENT_ERR_INVALID_ARGUMENT);
    auto options = agent::Options::create(kOptions);
    ASSERT_TRUE(options.ok());
    ASSERT_TRUE(options->set_scripted_model(R"([{"content":[{"type":"text","text":"Hi!"}]}])").ok());
    ASSERT_TRUE(options->set_session(*session).ok());
    auto bot = agent::Agent::create(std::move(*options));
    ASSERT_TRUE(bot.ok()) << bot.error().what();
    auto run = bot->prompt("hello");
    ASSERT_TRUE(run.ok());
    auto outcome = run->wait();
    ASSERT_TRUE(outcome.ok() && outcome->completed());
    auto context = session->context();
    ASSERT_TRUE(context.ok());
    EXPECT_TRUE(contains(*context, "\"Hi!\"")) << *context;
    auto id = session->leaf_id();
    ASSERT_TRUE(id.ok() && id->has_value());
    EXPECT_EQ((*id)->size(), 8u);
}

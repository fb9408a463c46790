// The RAII types (move semantics), the error model (status + message), the helpers and the
// version macros.
#include <cstring>
#include <type_traits>

#include "common.hpp"

static_assert(!std::is_copy_constructible_v<agent::Agent> && std::is_nothrow_move_constructible_v<agent::Agent>);
static_assert(!std::is_copy_constructible_v<agent::Options> && std::is_nothrow_move_constructible_v<agent::Options>);
static_assert(!std::is_copy_constructible_v<agent::Tool> && std::is_nothrow_move_constructible_v<agent::Tool>);
static_assert(!std::is_copy_constructible_v<agent::EventQueue> &&
              std::is_nothrow_move_constructible_v<agent::EventQueue>);
static_assert(!std::is_copy_constructible_v<agent::HookCall> && std::is_nothrow_move_constructible_v<agent::HookCall>);
static_assert(!std::is_copy_constructible_v<agent::Reply> && std::is_nothrow_move_constructible_v<agent::Reply>);
static_assert(!std::is_copy_constructible_v<agent::Run> && std::is_nothrow_move_constructible_v<agent::Run>);
static_assert(!std::is_copy_constructible_v<agent::Dispatcher> &&
              std::is_nothrow_move_constructible_v<agent::Dispatcher>);
static_assert(!std::is_copy_constructible_v<agent::Event> && std::is_nothrow_move_constructible_v<agent::Event>);
// Distinct call types: a tool call is not a stream.
static_assert(!std::is_convertible_v<agent::ToolCall, agent::Stream> && !std::is_convertible_v<agent::HookCall, agent::ToolCall>);
static_assert(!std::is_copy_constructible_v<agent::ToolCall> && std::is_nothrow_move_constructible_v<agent::ToolCall>);
static_assert(!std::is_copy_constructible_v<agent::Stream> && std::is_nothrow_move_constructible_v<agent::Stream>);
static_assert(std::is_base_of_v<std::runtime_error, agent::Error>);

namespace {

template <class F>
agent::Error error_of(F&& f) {
    try {
        f();
    } catch (const agent::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no agent::Error was thrown";
    return agent::Error(AGENT_OK, "");
}

agent::Options scripted(const char* script = R"([{"content":[{"type":"text","text":"ok"}]}])") {
    agent::Options options(test::options_json());
    options.set_scripted_model(script);
    return options;
}

}  // namespace

TEST(Version, MacrosMatchTheLibrary) {
    EXPECT_EQ(agent::version(), AGENT_VERSION_STRING);
    std::string expected = std::to_string(AGENT_VERSION_MAJOR) + "." + std::to_string(AGENT_VERSION_MINOR) + "." +
                           std::to_string(AGENT_VERSION_PATCH);
    EXPECT_EQ(agent::version(), expected);
    agent::version_check();  // this header's version is served
    agent::Error e = error_of([] { agent::detail::check(agent_version_check(AGENT_VERSION_MAJOR + 1, 0)); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_STATE);
    EXPECT_NE(std::string(e.what()).find(std::to_string(AGENT_VERSION_MAJOR + 1)), std::string::npos) << e.what();
}

TEST(Errors, BadJsonCarriesStatusAndMessage) {
    agent::Error e = error_of([] { agent::Options options("{not json"); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_JSON);
    EXPECT_NE(std::string(e.what()).find("options_json is not valid JSON"), std::string::npos) << e.what();

    e = error_of([] { agent::Options options(R"({"bogus":1})"); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_JSON);

    agent::Agent bot(scripted());
    e = error_of([&] { bot.steer(R"({"content":"x"})"); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_JSON);
    EXPECT_NE(std::string(e.what()).find("message_json must be a message"), std::string::npos) << e.what();
    e = error_of([&] { bot.set_messages("{}"); });
    EXPECT_STREQ(e.what(), "messages_json must be a JSON array of messages.");
    e = error_of([&] { agent::Run run = bot.prompt_json("[1"); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_JSON);
    // Nothing changed, nothing ran.
    EXPECT_EQ(test::count_of(bot.state(), "\"role\":"), 1);
}

TEST(Errors, BusyAgent) {
    agent::Agent bot(scripted(R"([{"content":[{"type":"text","text":"x"}],"waitForAbort":true}])"));
    bot.prompt_async("first");
    agent::Error e = error_of([&] { agent::Run run = bot.prompt("second"); });
    EXPECT_EQ(e.status(), AGENT_ERR_BUSY);
    EXPECT_NE(std::string(e.what()).find("Agent is already processing"), std::string::npos) << e.what();
    e = error_of([&] { bot.reset(); });
    EXPECT_EQ(e.status(), AGENT_ERR_BUSY);
    EXPECT_FALSE(bot.wait_for_idle(std::chrono::milliseconds(0)));  // a timeout is not an error
    bot.abort();
    EXPECT_TRUE(bot.wait_for_idle());
    bot.reset();
}

TEST(Errors, NoModel) {
    agent::Error e = error_of([] { agent::Agent bot{agent::Options()}; });
    EXPECT_EQ(e.status(), AGENT_ERR_NO_STREAM_FN);
    EXPECT_NE(std::string(e.what()).find("use_providers"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("streamFn"), std::string::npos) << e.what();
}

TEST(Errors, UnknownHookAndSubscription) {
    agent::Agent bot(scripted());
    agent::Error e = error_of([&] { bot.remove_hook(static_cast<agent::HookKind>(10)); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "Unknown hook kind 10.");
    e = error_of([&] { bot.unsubscribe(12345); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_ARGUMENT);
}

TEST(Moves, AgentOptionsToolQueue) {
    agent::Tool tool(R"({"name":"t","parameters":{"type":"object"}})", [](std::string_view, std::string_view) { return agent::text_result("moved tool"); });
    AgentTool raw_tool = tool.get();
    agent::Tool moved_tool = std::move(tool);
    EXPECT_EQ(tool.get().id, 0u);
    EXPECT_EQ(moved_tool.get().id, raw_tool.id);
    agent::Tool assigned_tool(R"({"name":"other"})", [](std::string_view, std::string_view) { return std::string(); });
    assigned_tool = std::move(moved_tool);  // frees "other"
    EXPECT_EQ(assigned_tool.get().id, raw_tool.id);

    agent::Options options = scripted(R"([{"content":[{"type":"toolCall","id":"c","name":"t","arguments":{}}]},
                                          {"content":[{"type":"text","text":"done"}]}])");
    agent::Options moved_options = std::move(options);
    EXPECT_FALSE(options);
    moved_options.add_tool(assigned_tool);
    // A moved-from builder reports the misuse as an error, not a crash.
    agent::Error e = error_of([&] { options.add_tool(assigned_tool); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_HANDLE);

    agent::Agent first(std::move(moved_options));
    AgentHandle raw_agent = first.get();
    agent::Agent second = std::move(first);
    EXPECT_FALSE(first);
    EXPECT_EQ(second.get().id, raw_agent.id);
    e = error_of([&] { agent::Run run = first.prompt("moved-from"); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_HANDLE);

    agent::EventQueue queue = second.events();
    agent::EventQueue moved_queue = std::move(queue);
    EXPECT_EQ(queue.get().id, 0u);
    EXPECT_TRUE(second.prompt("go").wait());
    EXPECT_NE(second.state().find("moved tool"), std::string::npos) << second.state();
    auto first_event = moved_queue.try_next();
    ASSERT_TRUE(first_event.has_value());
    EXPECT_EQ(first_event->type(), agent::EventType::AgentStart);
    EXPECT_EQ(first_event->json().find("{\"type\":\"agent_start\""), 0u);

    // Move-assigning an agent frees the previous one (its queue closes).
    agent::Agent third(scripted());
    second = std::move(third);
    while (moved_queue.try_next()) {
    }
    EXPECT_FALSE(moved_queue.next().has_value());
    EXPECT_TRUE(moved_queue.closed());
    EXPECT_TRUE(second.prompt("still works").wait());
    EXPECT_NE(second.state().find("\"text\":\"ok\""), std::string::npos);
}

TEST(Moves, CallObjects) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}]}])");
    std::atomic<int> checks{0};
    options.set_hook(agent::HookKind::PrepareRequest, [&](std::string_view, agent::Call call) {
        AgentHookCall raw = call.get();
        agent::Call moved = std::move(call);
        EXPECT_FALSE(call);
        EXPECT_EQ(moved.get().id, raw.id);
        agent::Error e = error_of([&] { call.complete(); });
        EXPECT_EQ(e.status(), AGENT_ERR_INVALID_HANDLE);
        agent::Call assigned;
        assigned = std::move(moved);
        EXPECT_EQ(assigned.get().id, raw.id);
        assigned.complete();
        EXPECT_TRUE(assigned.answered());
        checks++;
    });
    agent::Agent bot(std::move(options));
    EXPECT_TRUE(bot.prompt("go").wait());
    EXPECT_EQ(checks.load(), 1);
}

TEST(Helpers, QuoteAndTextResult) {
    EXPECT_EQ(agent::quote("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    EXPECT_EQ(agent::text_result("hi"), R"({"content":[{"type":"text","text":"hi"}],"details":{}})");
    EXPECT_EQ(agent::text_result("no", true), R"({"content":[{"type":"text","text":"no"}],"details":{},"isError":true})");
}

TEST(AgentApi, ToolsQueuesConfigureImagesPrepareArguments) {
    agent::Tool add(R"({"name":"add","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}})",
                    [](std::string_view, std::string_view args) {
                        EXPECT_EQ(args, R"({"a":1,"b":2})");
                        return agent::text_result("3");
                    });
    // prepareArguments renames x/y to a/b before validation.
    std::atomic<int> prepared{0};
    add.set_prepare_arguments([&](std::string_view args) -> std::optional<std::string> {
        prepared++;
        EXPECT_EQ(args, R"({"x":1,"y":2})");
        return R"({"a":1,"b":2})";
    });
    agent::Tool other(R"({"name":"other","parameters":{"type":"object"}})",
                      [](std::string_view, std::string_view) { return agent::text_result("other"); });
    agent::Agent bot(scripted(R"([{"content":[{"type":"toolCall","id":"c1","name":"add","arguments":{"x":1,"y":2}}]},
                                  {"content":[{"type":"text","text":"sum done"}]},
                                  {"content":[{"type":"text","text":"saw the image"}]}])"));
    bot.set_tools({add, other});
    std::string state = bot.state();
    EXPECT_NE(state.find(R"("name":"add")"), std::string::npos);
    EXPECT_NE(state.find(R"("name":"other")"), std::string::npos);
    bot.set_tools({add});
    EXPECT_EQ(bot.state().find(R"("name":"other")"), std::string::npos);

    bot.configure(R"({"thinkingLevel":"high","steeringMode":"all"})");
    EXPECT_NE(bot.state().find(R"("steeringMode":"all")"), std::string::npos);
    agent::Error e = error_of([&] { bot.configure(R"({"nope":1})"); });
    EXPECT_EQ(e.status(), AGENT_ERR_INVALID_JSON);

    EXPECT_TRUE(bot.prompt("add").wait());
    EXPECT_EQ(prepared.load(), 1);
    EXPECT_NE(bot.state().find("sum done"), std::string::npos);

    EXPECT_TRUE(bot.prompt("look", R"([{"type":"image","data":"aGk=","mimeType":"image/png"}])").wait());
    state = bot.state();
    EXPECT_NE(state.find(R"({"type":"image","data":"aGk=","mimeType":"image/png"})"), std::string::npos) << state;
    EXPECT_NE(state.find("saw the image"), std::string::npos);

    // Queues: with steeringMode "all", peek returns every steering message.
    bot.steer(test::user("s1"));
    bot.steer(test::user("s2"));
    bot.follow_up(test::user("f1"));
    std::string peek = bot.peek_queued_messages();
    EXPECT_NE(peek.find("s1"), std::string::npos);
    EXPECT_NE(peek.find("s2"), std::string::npos);
    EXPECT_EQ(peek.find("f1"), std::string::npos);
    bot.clear_steering_queue();
    EXPECT_NE(bot.peek_queued_messages().find("f1"), std::string::npos);
    bot.clear_follow_up_queue();
    EXPECT_FALSE(bot.has_queued_messages());
    bot.follow_up(test::user("f2"));
    bot.clear_all_queues();
    EXPECT_EQ(bot.peek_queued_messages(), "[]");
}

TEST(AgentApi, ProcessWideDefaultStreamFunction) {
    std::atomic<int> alive{0};
    {
        test::Probe probe(alive);
        agent::set_default_stream_fn([probe](std::string_view, agent::Stream stream) {
            stream.push(R"({"type":"start"})");
            stream.push(R"({"type":"text_start","contentIndex":0})");
            stream.push(R"({"type":"text_delta","contentIndex":0,"delta":"from the default"})");
            stream.push(R"({"type":"text_end","contentIndex":0})");
            stream.push(R"({"type":"done","reason":"stop"})");
        });
    }
    EXPECT_EQ(alive.load(), 1);  // held by libagent
    {
        agent::Agent bot{agent::Options(test::options_json())};  // captures the default
        EXPECT_TRUE(bot.prompt("hi").wait());
        EXPECT_NE(bot.state().find("from the default"), std::string::npos);
    }
    agent::set_default_scripted_model(R"([{"content":[{"type":"text","text":"scripted default"}]}])");
    EXPECT_TRUE(test::wait_until([&] { return alive.load() == 0; }));  // replaced: deleted
    {
        agent::Agent bot{agent::Options(test::options_json())};
        EXPECT_TRUE(bot.prompt("hi").wait());
        EXPECT_NE(bot.state().find("scripted default"), std::string::npos);
    }
    agent::clear_default_stream_fn();
    agent::Error e = error_of([] { agent::Agent bot{agent::Options()}; });
    EXPECT_EQ(e.status(), AGENT_ERR_NO_STREAM_FN);
}

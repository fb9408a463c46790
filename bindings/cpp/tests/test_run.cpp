// Whole runs through the C++ binding: parallel tools (one answering from another thread),
// hooks in both forms, steering and a follow-up, abort, a host stream function pushing from a
// std::thread, and the pull queue polled from a frame loop.
#include <condition_variable>
#include <future>
#include <mutex>
#include <vector>

#include "common.hpp"

namespace {

const char* kScript = R"([
  {"content":[{"type":"text","text":"Let me compute.","chunks":3},
    {"type":"toolCall","id":"call_add","name":"add","arguments":{"x":1,"y":2}},
    {"type":"toolCall","id":"call_slow","name":"slow","arguments":{"ms":5},"chunks":2}]},
  {"content":[{"type":"text","text":"Sum is 3."}]},
  {"content":[{"type":"text","text":"Follow-up answered."}]}
])";

const char* kParams = R"({"type":"object"})";

std::string tool_def(const char* name) {
    return std::string(R"({"name":")") + name + R"(","label":")" + name +
           R"(","description":"test tool","parameters":)" + kParams + "}";
}

}  // namespace

TEST(Run, ParallelToolsHooksSteeringFollowUp) {
    std::atomic<int> add_calls{0}, slow_calls{0}, api_key_calls{0}, before_calls{0}, transform_calls{0};
    std::atomic<int> add_calls_when_slow_started{-1};
    std::mutex mutex;
    std::vector<std::string> types;
    std::string deltas;
    std::vector<std::thread> threads;

    agent::Tool add(tool_def("add"), [&](std::string_view id, std::string_view args) {
        add_calls++;
        EXPECT_EQ(id, "call_add");
        EXPECT_NE(args.find("\"x\":1"), std::string_view::npos);
        return agent::text_result("3");
    });
    agent::Tool slow(tool_def("slow"), [&](std::string_view id, std::string_view, agent::ToolCall call) {
        slow_calls++;
        EXPECT_EQ(id, "call_slow");
        add_calls_when_slow_started = add_calls.load();
        EXPECT_FALSE(call.is_aborted());
        // Answered later, from another thread, after progress updates.
        std::lock_guard<std::mutex> lock(mutex);
        threads.emplace_back([call = std::move(call)]() mutable {
            call.update(agent::text_result("50%"));
            call.update(agent::text_result("99%"));
            call.complete(agent::text_result("slept"));
            EXPECT_TRUE(call.answered());
            try {
                call.complete();
                ADD_FAILURE() << "a second answer must throw";
            } catch (const agent::Error& e) {
                EXPECT_EQ(e.status(), AGENT_ERR_ALREADY_COMPLETED);
                EXPECT_STREQ(e.what(), "The call was already answered.");
            }
        });
    });

    agent::Options options(test::options_json());
    options.add_tool(add).add_tool(slow).set_scripted_model(kScript);
    options.set_hook(agent::HookKind::GetApiKey, [&](std::string_view provider) {
        api_key_calls++;
        EXPECT_EQ(provider, "\"test\"");
        return std::string("\"key-123\"");
    });
    options.set_hook(agent::HookKind::BeforeToolCall, [&](std::string_view input) -> std::optional<std::string> {
        before_calls++;
        EXPECT_NE(input.find("\"toolCall\":"), std::string_view::npos);
        return std::nullopt;
    });
    options.set_hook(agent::HookKind::AfterToolCall, [](std::string_view input) -> std::optional<std::string> {
        if (input.find("\"id\":\"call_add\"") != std::string_view::npos) return R"({"details":{"after":true}})";
        return std::nullopt;
    });
    // A deferred hook answering from another thread.
    options.set_hook(agent::HookKind::TransformContext, [&](std::string_view input, agent::Call call) {
        transform_calls++;
        std::lock_guard<std::mutex> lock(mutex);
        threads.emplace_back([input = std::string(input), call = std::move(call)]() mutable { call.complete(input); });
    });

    agent::Agent bot(std::move(options));
    EXPECT_EQ(options.get(), nullptr);  // consumed
    bool steered = false;
    bot.subscribe([&](const agent::Event& event) {
        std::lock_guard<std::mutex> lock(mutex);
        types.emplace_back(event.type());
        EXPECT_EQ(event.json().substr(0, 9 + event.type().size()), "{\"type\":\"" + std::string(event.type()));
        if (event.update_type() == "text_delta") {
            deltas += event.delta();
            if (!steered) {
                steered = true;
                bot.steer(test::user("steer now", 2));  // steering from a listener
                EXPECT_NE(bot.state().find("\"isStreaming\":true"), std::string::npos);
            }
        } else if (event.update_type().empty()) {
            EXPECT_TRUE(event.delta().empty());  // not a message_update
        }
    });
    bot.follow_up(test::user("and then?", 3));
    EXPECT_TRUE(bot.has_queued_messages());

    std::atomic<int> done_calls{0};
    AgentStatus done_status = -100;
    bot.prompt_async("compute 1+2", [&](AgentStatus status, std::string_view error) {
        done_status = status;
        EXPECT_EQ(error, "");
        done_calls++;
    });
    EXPECT_TRUE(bot.wait_for_idle());
    EXPECT_EQ(done_calls.load(), 1);
    EXPECT_EQ(done_status, AGENT_OK);
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto& t : threads) t.join();
    }

    EXPECT_EQ(add_calls.load(), 1);
    EXPECT_EQ(slow_calls.load(), 1);
    EXPECT_EQ(add_calls_when_slow_started.load(), 1);  // parallel: both started before results
    EXPECT_EQ(before_calls.load(), 2);
    EXPECT_EQ(api_key_calls.load(), 3);
    EXPECT_EQ(transform_calls.load(), 3);
    EXPECT_EQ(deltas.substr(0, 15), "Let me compute.");
    ASSERT_GE(types.size(), 4u);
    EXPECT_EQ(types.front(), "agent_start");
    EXPECT_EQ(types.back(), "agent_end");
    int updates = 0;
    for (auto& t : types) updates += t == "tool_execution_update";
    EXPECT_EQ(updates, 2);

    std::string state = bot.state();
    EXPECT_NE(state.find("\"isStreaming\":false"), std::string::npos);
    EXPECT_NE(state.find("\"after\":true"), std::string::npos);
    EXPECT_NE(state.find("\"text\":\"slept\""), std::string::npos);
    auto steer = state.find("steer now"), sum = state.find("Sum is 3."), follow = state.find("and then?"),
         answered = state.find("Follow-up answered.");
    ASSERT_NE(steer, std::string::npos);
    ASSERT_NE(sum, std::string::npos);
    ASSERT_NE(follow, std::string::npos);
    ASSERT_NE(answered, std::string::npos);
    EXPECT_LT(steer, sum);
    EXPECT_LT(sum, follow);
    EXPECT_LT(follow, answered);
    EXPECT_FALSE(bot.has_queued_messages());
}

TEST(Run, BlockingPromptAndContinue) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"One."}]},
                                   {"content":[{"type":"text","text":"Two."}]}])");
    agent::Agent bot(std::move(options));
    bot.prompt("first");
    EXPECT_NE(bot.state().find("One."), std::string::npos);
    // From an assistant tail, continue() fails with the reference's text.
    try {
        bot.continue_run();
        FAIL() << "continue from an assistant tail must throw";
    } catch (const agent::Error& e) {
        EXPECT_EQ(e.status(), AGENT_ERR_INVALID_STATE);
        EXPECT_NE(std::string(e.what()).find("Cannot continue from message role: assistant"), std::string::npos);
    }
    bot.set_messages("[" + test::user("again") + "]");
    bot.continue_run();
    std::string state = bot.state();
    EXPECT_NE(state.find("Two."), std::string::npos);
    EXPECT_EQ(state.find("One."), std::string::npos);
}

TEST(Run, AbortReachesADeferredTool) {
    const char* script = R"([{"content":[{"type":"toolCall","id":"call_w","name":"wait","arguments":{}}]},
                             {"content":[{"type":"text","text":"never"}]}])";
    std::promise<void> started;
    std::atomic<int> abort_callbacks{0};
    std::thread worker;
    agent::Tool wait(tool_def("wait"), [&](std::string_view, std::string_view, agent::ToolCall call) {
        EXPECT_FALSE(call.is_aborted());
        // Keep the call until the run aborts; on_abort answers it from the runtime thread via a
        // shared owner.
        auto shared = std::make_shared<agent::ToolCall>(std::move(call));
        shared->on_abort([&abort_callbacks, shared] {
            abort_callbacks++;
            EXPECT_TRUE(shared->is_aborted());
            shared->complete(agent::text_result("tool saw the abort", true));
        });
        started.set_value();
    });
    agent::Options options(test::options_json());
    options.add_tool(wait).set_scripted_model(script);
    agent::Agent bot(std::move(options));
    std::atomic<int> done_calls{0};
    bot.prompt_async("wait for it", [&](AgentStatus status, std::string_view) {
        EXPECT_EQ(status, AGENT_ERR_ABORTED);  // the run settled, aborted
        done_calls++;
    });
    started.get_future().wait();
    bot.abort();
    EXPECT_TRUE(bot.wait_for_idle());
    EXPECT_EQ(abort_callbacks.load(), 1);
    EXPECT_EQ(done_calls.load(), 1);
    std::string state = bot.state();
    EXPECT_NE(state.find("tool saw the abort"), std::string::npos);
    EXPECT_EQ(state.find("never"), std::string::npos);
}

TEST(Run, AbortAStalledStream) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"Thinking about it"}],"waitForAbort":true}])");
    agent::Agent bot(std::move(options));
    std::promise<void> streaming;
    bool signalled = false;
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() == "message_update" && !signalled) {
            signalled = true;
            streaming.set_value();
        }
    });
    bot.prompt_async("go");
    streaming.get_future().wait();
    bot.abort();
    EXPECT_TRUE(bot.wait_for_idle());
    std::string state = bot.state();
    EXPECT_NE(state.find("\"stopReason\":\"aborted\""), std::string::npos) << state;
}

// A host stream function that hands its Stream to a std::thread, which pushes in lock step with
// on_consumed.
TEST(Run, HostStreamFunctionPushingFromAThread) {
    static const char* kEvents[] = {
        R"({"type":"start"})",
        R"({"type":"text_start","contentIndex":0})",
        R"({"type":"text_delta","contentIndex":0,"delta":"Hel"})",
        R"({"type":"text_delta","contentIndex":0,"delta":"lo from a thread"})",
        R"({"type":"text_end","contentIndex":0})",
        R"({"type":"done","reason":"stop"})",
    };
    struct Producer {
        std::mutex mutex;
        std::condition_variable cv;
        int consumed = 0;
    };
    auto producer = std::make_shared<Producer>();
    std::thread thread;
    std::atomic<int> requests{0};
    std::atomic<bool> closed_after_done{false};

    agent::Options options(test::options_json());
    options.set_stream_fn([&, producer](std::string_view request, agent::Stream stream) {
        requests++;
        EXPECT_NE(request.find("\"model\":{\"id\":\"m1\""), std::string_view::npos);
        EXPECT_NE(request.find("\"text\":\"hi\""), std::string_view::npos);
        stream.on_consumed([producer] {
            std::lock_guard<std::mutex> lock(producer->mutex);
            producer->consumed++;
            producer->cv.notify_all();
        });
        thread = std::thread([producer, &closed_after_done, stream = std::move(stream)]() mutable {
            int n = 0;
            for (const char* event : kEvents) {
                stream.push(event);
                n++;
                if (n == 6) break;
                std::unique_lock<std::mutex> lock(producer->mutex);
                producer->cv.wait(lock, [&] { return producer->consumed >= n; });
            }
            // The terminal event closes the stream: later pushes throw STREAM_CLOSED.
            closed_after_done = test::wait_until([&] {
                try {
                    stream.push(R"({"type":"start"})");
                    return false;
                } catch (const agent::Error& e) {
                    return e.status() == AGENT_ERR_STREAM_CLOSED;
                }
            });
        });
    });
    agent::Agent bot(std::move(options));
    bot.prompt("hi");
    thread.join();
    EXPECT_EQ(requests.load(), 1);
    EXPECT_TRUE(closed_after_done.load());
    EXPECT_NE(bot.state().find("Hello from a thread"), std::string::npos);
}

// The pull queue read by a "frame loop": zero-timeout polls, never blocking.
TEST(Run, PullQueueFromAFrameLoop) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"Frame by frame.","chunks":4}]}])");
    agent::Agent bot(std::move(options));
    agent::EventQueue queue = bot.events(R"({"shape":"lean","capacity":2})");
    std::atomic<bool> done{false};
    bot.prompt_async("draw", [&](AgentStatus, std::string_view) { done = true; });
    std::vector<std::string> events;
    int frames = 0;
    for (;;) {
        frames++;
        bool settled = done.load();  // read before draining: everything up to agent_end is queued
        while (auto event = queue.try_next()) events.push_back(std::move(*event));
        if (settled && !events.empty() && events.back().find("{\"type\":\"agent_end\"") == 0) break;
        ASSERT_LT(frames, 100000000) << "the run never ended";
        std::this_thread::yield();  // the rest of the frame
    }
    EXPECT_FALSE(queue.try_next().has_value());
    EXPECT_FALSE(queue.closed());
    ASSERT_GE(events.size(), 6u);
    EXPECT_EQ(events.front().find("{\"type\":\"agent_start\""), 0u);
    for (auto& e : events) {
        if (e.find("\"text_delta\"") != std::string::npos) {
            EXPECT_EQ(e.find("\"partial\":"), std::string::npos);  // the lean shape
        }
    }
    EXPECT_EQ(test::count_of(events.back(), "\"type\":\"agent_end\""), 1);
    // Freeing the agent closes the queue: drained, next() reports closed instead of waiting.
    { agent::Agent gone = std::move(bot); }
    EXPECT_EQ(bot.get(), nullptr);
    EXPECT_FALSE(queue.next().has_value());
    EXPECT_TRUE(queue.closed());
}

// A synchronous stream function: pushes everything, `done` included, and returns; the Stream's
// destructor then finds nothing to fail (its failure queues behind the terminal event).
TEST(Run, StreamEndedByDoneIsNotFailedByItsDestructor) {
    agent::Options options(test::options_json());
    options.set_stream_fn([](std::string_view, agent::Stream stream) {
        stream.push(R"({"type":"start"})");
        stream.push(R"({"type":"text_start","contentIndex":0})");
        stream.push(R"({"type":"text_delta","contentIndex":0,"delta":"all at once"})");
        stream.push(R"({"type":"text_end","contentIndex":0})");
        stream.push(R"({"type":"done","reason":"stop"})");
    });
    agent::Agent bot(std::move(options));
    bot.prompt("go");
    std::string state = bot.state();
    EXPECT_NE(state.find(R"("text":"all at once"}],)"), std::string::npos) << state;
    EXPECT_NE(state.find(R"("stopReason":"stop")"), std::string::npos) << state;
    EXPECT_EQ(state.find("destroyed"), std::string::npos) << state;
}

// Ending a stream with complete(final message), and failing one before any push.
TEST(Run, StreamCompleteAndFail) {
    std::atomic<int> requests{0};
    agent::Options options(test::options_json());
    options.set_stream_fn([&](std::string_view, agent::Stream stream) {
        if (requests++ == 0) {
            stream.fail("provider unreachable");
            EXPECT_TRUE(stream.answered());
            return;
        }
        stream.complete(R"({"role":"assistant","content":[{"type":"text","text":"final only"}],"api":"faux",
            "provider":"test","model":"m1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,
            "totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
            "stopReason":"stop","timestamp":0})");
    });
    agent::Agent bot(std::move(options));
    std::string message;
    EXPECT_EQ(test::status_of([&] { bot.prompt("first"); }, &message), AGENT_ERR_MODEL_ERROR);
    EXPECT_EQ(message, "provider unreachable");
    std::string state = bot.state();
    EXPECT_NE(state.find(R"("errorMessage":"provider unreachable")"), std::string::npos) << state;
    bot.prompt("second");
    EXPECT_NE(bot.state().find("final only"), std::string::npos) << bot.state();
}

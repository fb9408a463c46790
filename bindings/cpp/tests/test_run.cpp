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
    EXPECT_FALSE(options);  // consumed
    bool steered = false;
    bot.subscribe([&](const agent::Event& event) {
        std::lock_guard<std::mutex> lock(mutex);
        types.emplace_back(event.type_name());
        EXPECT_EQ(event.json().substr(0, 9 + event.type_name().size()), "{\"type\":\"" + std::string(event.type_name()));
        if (event.type() == agent::EventType::ToolExecutionStart) {
            EXPECT_TRUE(event.tool_call_id() == "call_add" || event.tool_call_id() == "call_slow") << event.tool_call_id();
            EXPECT_EQ(event.tool_call_id() == "call_add" ? "add" : "slow", event.tool_name());
            if (event.tool_call_id() == "call_add") {
                EXPECT_EQ(event.args_json(), R"({"x":1,"y":2})");
            }
        }
        if (event.update() == agent::UpdateType::TextDelta) {
            deltas += event.delta();
            if (!steered) {
                steered = true;
                bot.steer(test::user("steer now", 2));  // steering from a listener
                EXPECT_NE(bot.state().find("\"isStreaming\":true"), std::string::npos);
            }
        } else if (event.update() == agent::UpdateType::None) {
            EXPECT_NE(event.type(), agent::EventType::MessageUpdate);
            EXPECT_TRUE(event.delta().empty());
        }
    });
    bot.follow_up(test::user("and then?", 3));
    EXPECT_TRUE(bot.has_queued_messages());

    std::atomic<int> done_calls{0};
    agent::RunStatus done_status = agent::RunStatus::Running;
    agent::Run run = bot.prompt("compute 1+2", [&](const agent::Outcome& outcome) {
        done_status = outcome.status;
        EXPECT_EQ(outcome.error_message, "");
        done_calls++;
    });
    agent::Outcome outcome = run.wait();
    EXPECT_EQ(done_calls.load(), 1);  // done returned before wait() did
    EXPECT_EQ(done_status, agent::RunStatus::Completed);
    EXPECT_TRUE(outcome);
    EXPECT_EQ(outcome.stop_reason, "stop");
    EXPECT_EQ(outcome.message_count, static_cast<std::size_t>(test::count_of(run.messages(), "\"role\":")));
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
    EXPECT_TRUE(bot.prompt("first").wait());
    EXPECT_NE(bot.state().find("One."), std::string::npos);
    // From an assistant tail, continue() fails with the reference's text.
    try {
        agent::Run never = bot.continue_run();
        FAIL() << "continue from an assistant tail must throw";
    } catch (const agent::Error& e) {
        EXPECT_EQ(e.status(), AGENT_ERR_INVALID_STATE);
        EXPECT_NE(std::string(e.what()).find("Cannot continue from message role: assistant"), std::string::npos);
    }
    bot.set_messages("[" + test::user("again") + "]");
    EXPECT_TRUE(bot.continue_run().wait());
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
    bot.prompt_async("wait for it", [&](const agent::Outcome& outcome) {
        EXPECT_EQ(outcome.status, agent::RunStatus::Aborted);  // the run settled, aborted
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
        if (event.type() == agent::EventType::MessageUpdate && !signalled) {
            signalled = true;
            streaming.set_value();
        }
    });
    agent::Run run = bot.prompt("go");
    streaming.get_future().wait();
    run.abort();
    agent::Outcome outcome = run.wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::Aborted);
    EXPECT_EQ(outcome.stop_reason, "aborted");
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
            // The loop takes the terminal event: nothing is left behind.
            EXPECT_TRUE(test::wait_until([&] { return stream.backlog() == 0u; }));
        });
    });
    agent::Agent bot(std::move(options));
    EXPECT_TRUE(bot.prompt("hi").wait());
    thread.join();
    EXPECT_EQ(requests.load(), 1);
    EXPECT_TRUE(closed_after_done.load());
    EXPECT_NE(bot.state().find("Hello from a thread"), std::string::npos);
}

// The pull queue read by a "frame loop": zero-timeout polls, never blocking; events are structs,
// their JSON built only when asked.
TEST(Run, PullQueueFromAFrameLoop) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"Frame by frame.","chunks":4}]}])");
    agent::Agent bot(std::move(options));
    agent::EventQueue queue = bot.events(R"({"capacity":2})");
    agent::Run run = bot.prompt("draw");
    std::vector<agent::EventType> types;
    std::string text, lean_delta_json;
    int frames = 0;
    for (;;) {
        frames++;
        bool settled = run.outcome().status != agent::RunStatus::Running;  // read before draining
        while (auto event = queue.try_next()) {
            types.push_back(event->type());
            if (event->update() == agent::UpdateType::TextDelta) {
                text += event->delta();
                if (lean_delta_json.empty()) lean_delta_json = std::string(event->json(agent::EventShape::Lean));
            }
        }
        if (settled && !types.empty() && types.back() == agent::EventType::AgentEnd) break;
        ASSERT_LT(frames, 100000000) << "the run never ended";
        std::this_thread::yield();  // the rest of the frame
    }
    EXPECT_FALSE(queue.try_next().has_value());
    EXPECT_FALSE(queue.closed());
    ASSERT_GE(types.size(), 6u);
    EXPECT_EQ(types.front(), agent::EventType::AgentStart);
    EXPECT_EQ(text, "Frame by frame.");
    EXPECT_EQ(lean_delta_json.find("{\"type\":\"message_update\""), 0u) << lean_delta_json;
    EXPECT_EQ(lean_delta_json.find("\"partial\":"), std::string::npos) << lean_delta_json;  // the lean shape
    // Freeing the agent closes the queue: drained, next() reports closed instead of waiting.
    { agent::Agent gone = std::move(bot); }
    EXPECT_FALSE(bot);
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
    EXPECT_TRUE(bot.prompt("go").wait());
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
    agent::Outcome first = bot.prompt("first").wait();
    EXPECT_EQ(first.status, agent::RunStatus::ModelError);
    EXPECT_EQ(first.error_message, "provider unreachable");
    std::string state = bot.state();
    EXPECT_NE(state.find(R"("errorMessage":"provider unreachable")"), std::string::npos) << state;
    EXPECT_TRUE(bot.prompt("second").wait());
    EXPECT_NE(bot.state().find("final only"), std::string::npos) << bot.state();
}

// A Run names one run: aborting it after it settled does nothing, so it never reaches a later
// run; its outcome and the messages it added stay readable until it is destroyed.
TEST(Runs, AbortOfASettledRunNeverReachesALaterOne) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"first answer"}]},
                                   {"content":[{"type":"text","text":"second"}],"waitForAbort":true}])");
    agent::Agent bot(std::move(options));
    agent::Run first = bot.prompt("one");
    EXPECT_TRUE(first.wait());
    agent::Run second = bot.prompt("two");
    first.abort();  // settled: nothing happens
    EXPECT_FALSE(second.wait(std::chrono::milliseconds(0)).has_value());  // still running: a result
    EXPECT_EQ(second.outcome().status, agent::RunStatus::Running);
    EXPECT_EQ(first.outcome().status, agent::RunStatus::Completed);
    second.abort();
    std::optional<agent::Outcome> ended = second.wait(std::chrono::minutes(1));
    ASSERT_TRUE(ended.has_value());
    EXPECT_EQ(ended->status, agent::RunStatus::Aborted);
    // Each run reports its own messages (user + assistant).
    std::string added = first.messages();
    EXPECT_EQ(first.outcome().message_count, 2u);
    EXPECT_NE(added.find("first answer"), std::string::npos) << added;
    EXPECT_EQ(added.find("second"), std::string::npos) << added;
    EXPECT_EQ(bot.message_count(), 5u) << bot.messages(0, 10);  // the system prompt's message first
    EXPECT_NE(bot.message(2).find("first answer"), std::string::npos);
    EXPECT_NE(bot.messages(3, 10).find("\"text\":\"two\""), std::string::npos);
    EXPECT_EQ(test::status_of([&] { bot.message(5); }), AGENT_ERR_INVALID_ARGUMENT);
    // A dropped Run does not stop its run; moving keeps the handle.
    agent::Run moved = std::move(first);
    EXPECT_FALSE(first);
    EXPECT_TRUE(moved);
    EXPECT_EQ(test::status_of([&] { first.abort(); }), AGENT_ERR_INVALID_HANDLE);
}

TEST(Runs, DroppingARunLetsItFinish) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"finished anyway"}]}])");
    agent::Agent bot(std::move(options));
    std::promise<agent::Outcome> done;
    bot.prompt_async("go", [&](const agent::Outcome& outcome) { done.set_value(outcome); });
    agent::Outcome outcome = done.get_future().get();
    EXPECT_TRUE(outcome.completed());
    EXPECT_TRUE(bot.wait_for_idle());
    EXPECT_NE(bot.state().find("finished anyway"), std::string::npos);
}

// A listener that answers later: event.defer() gives a Reply; the loop waits for it.
TEST(Listeners, DeferredReplyResumesOrFailsTheRun) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"a"}]},{"content":[{"type":"text","text":"b"}]}])");
    agent::Agent bot(std::move(options));
    std::vector<std::thread> threads;
    std::atomic<int> fails_left{0};
    std::atomic<int> deferred{0};
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() != agent::EventType::MessageEnd) return;
        agent::Reply reply = event.defer();
        deferred++;
        threads.emplace_back([reply = std::move(reply), &fails_left]() mutable {
            if (fails_left-- > 0)
                reply.fail("listener said no");
            else
                reply.resume();
            EXPECT_TRUE(reply.answered());
        });
    });
    EXPECT_TRUE(bot.prompt("one").wait());
    fails_left = 1;
    agent::Outcome second = bot.prompt("two").wait();
    for (auto& t : threads) t.join();
    threads.clear();
    EXPECT_EQ(second.status, agent::RunStatus::ModelError);
    EXPECT_EQ(second.error_message, "listener said no");
    EXPECT_GE(deferred.load(), 4);
    // A queue's event cannot be deferred.
    agent::EventQueue queue = bot.events();
    bot.set_scripted_model(R"([{"content":[{"type":"text","text":"c"}]}])");
    EXPECT_TRUE(bot.prompt("three").wait());
    for (auto& t : threads) t.join();
    auto first = queue.try_next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(test::status_of([&] { agent::Reply r = first->defer(); }), AGENT_ERR_INVALID_STATE);
}

// Host-pumped mode: every callback of the agent runs on the thread that dispatches.
TEST(Dispatcher, CallbacksRunOnlyInsideDispatch) {
    agent::Dispatcher dispatcher;
    std::atomic<int> on_host{0}, elsewhere{0};
    auto here = std::this_thread::get_id();
    auto where = [&] { (std::this_thread::get_id() == here ? on_host : elsewhere)++; };
    agent::Tool tool(R"({"name":"t","parameters":{"type":"object"}})", [&](std::string_view, std::string_view) {
        where();
        return agent::text_result("pumped");
    });
    agent::Options options(test::options_json());
    options.add_tool(tool).set_dispatcher(dispatcher);
    options.set_scripted_model(R"([{"content":[{"type":"toolCall","id":"c1","name":"t","arguments":{}}]},
                                   {"content":[{"type":"text","text":"done pumping"}]}])");
    agent::Agent bot(std::move(options));
    bot.subscribe([&](const agent::Event&) { where(); });
    std::atomic<int> done_calls{0};
    agent::Run run = bot.prompt("go", [&](const agent::Outcome&) {
        where();
        done_calls++;
    });
    // A frame loop: wait until something is ready, run it, until the run settled.
    std::size_t ran = 0;
    int frames = 0;
    while (run.outcome().status == agent::RunStatus::Running || done_calls.load() == 0) {
        ASSERT_LT(++frames, 1000000) << "the run never ended";
        if (dispatcher.wait(std::chrono::seconds(30))) ran += dispatcher.dispatch(std::chrono::milliseconds(5));
    }
    EXPECT_GT(ran, 0u);
    EXPECT_EQ(elsewhere.load(), 0);
    EXPECT_GT(on_host.load(), 10);
    EXPECT_TRUE(run.wait());  // settled: at once
    EXPECT_NE(bot.state().find("done pumping"), std::string::npos);
    // Run::wait on the host's thread dispatches while it waits.
    bot.set_scripted_model(R"([{"content":[{"type":"text","text":"waited"}]}])");
    int before = on_host.load();
    EXPECT_TRUE(bot.prompt("again").wait());
    EXPECT_GT(on_host.load(), before);
    EXPECT_EQ(elsewhere.load(), 0);
    EXPECT_EQ(dispatcher.dispatch(), 0u);  // nothing left
}

// JSON-free pushes, and texts passed as (data, size): a NUL byte is a character, not an end.
TEST(Stream, JsonFreePushesAndTextsWithNulBytes) {
    std::atomic<int> requests{0};
    agent::Options options(test::options_json());
    options.set_stream_fn([&](std::string_view request, agent::Stream stream) {
        requests++;
        EXPECT_NE(request.find(R"(a\u0000b)"), std::string_view::npos) << request;
        EXPECT_FALSE(stream.is_aborted());
        stream.push(R"({"type":"start"})");
        stream.push_block_start(agent::BlockKind::Text, 0);
        stream.push_text_delta(0, "no ");
        stream.push_text_delta(0, std::string_view("json\0!", 6));
        stream.push_block_end(agent::BlockKind::Text, 0);
        stream.push_toolcall_start(1, "call_9", "t");
        stream.push_toolcall_delta(1, R"({"k":)");
        stream.push_toolcall_delta(1, "1}");
        stream.push_block_end(agent::BlockKind::Toolcall, 1);
        stream.push(R"({"type":"done","reason":"toolUse"})");
    });
    agent::Tool tool(R"({"name":"t","parameters":{"type":"object"}})", [](std::string_view id, std::string_view args) {
        EXPECT_EQ(id, "call_9");
        EXPECT_EQ(args, R"({"k":1})");
        return agent::text_result("ok");
    });
    options.add_tool(tool);
    agent::Agent bot(std::move(options));
    std::string deltas;
    bot.subscribe([&](const agent::Event& e) {
        if (e.update() == agent::UpdateType::TextDelta) deltas += e.delta();
        if (e.update() == agent::UpdateType::ToolcallDelta) {
            EXPECT_EQ(e.content_index(), 1u);
        }
    });
    bot.set_hook(agent::HookKind::FinishTurn, [](std::string_view) { return std::string(R"({"action":"end"})"); });
    agent::Outcome outcome = bot.prompt(std::string_view("a\0b", 3)).wait();
    EXPECT_TRUE(outcome) << outcome.error_message;
    EXPECT_EQ(requests.load(), 1);
    EXPECT_EQ(deltas, std::string("no json\0!", 9));
    EXPECT_NE(bot.state().find(R"("text":"ok")"), std::string::npos) << bot.state();
}

// Callbacks: exceptions become failed calls (never unwinding into libagent), dropped call
// objects fail their call, and every std::function is deleted exactly once by the finalizers.
#include <future>
#include <mutex>
#include <vector>

#include "common.hpp"

namespace {

std::string tool_call_script(const char* name, const char* final_text = "after the tool") {
    return std::string(R"([{"content":[{"type":"toolCall","id":"call_1","name":")") + name +
           R"(","arguments":{}}]},{"content":[{"type":"text","text":")" + final_text + R"("}]}])";
}

std::string tool_def(const char* name) {
    return std::string(R"({"name":")") + name + R"(","description":"d","parameters":{"type":"object"}})";
}

// The toolResult message of a transcript (from its role to the end).
std::string tool_result_of(const std::string& state) {
    auto at = state.find("\"role\":\"toolResult\"");
    return at == std::string::npos ? std::string() : state.substr(at);
}

}  // namespace

TEST(Exceptions, ThrownInASyncToolBecomesAnErrorResult) {
    agent::Tool boom(tool_def("boom"), [](std::string_view, std::string_view) -> std::string {
        throw std::runtime_error("disk on fire");
    });
    agent::Options options(test::options_json());
    options.add_tool(boom).set_scripted_model(tool_call_script("boom"));
    agent::Agent bot(std::move(options));
    EXPECT_TRUE(bot.prompt("go").wait());  // the run itself succeeds: the tool failed
    std::string result = tool_result_of(bot.state());
    EXPECT_NE(result.find("disk on fire"), std::string::npos) << result;
    EXPECT_NE(result.find("\"isError\":true"), std::string::npos) << result;
    EXPECT_NE(bot.state().find("after the tool"), std::string::npos);
}

TEST(Exceptions, ThrownInADeferredToolHoldingItsCall) {
    // The call was moved into a local before the throw: the exception's text still wins over
    // "destroyed without an answer".
    agent::Tool boom(tool_def("boom"), [](std::string_view, std::string_view, agent::ToolCall call) {
        agent::ToolCall mine = std::move(call);
        mine.update(agent::text_result("working"));
        throw std::logic_error("deferred tool broke");
    });
    agent::Options options(test::options_json());
    options.add_tool(boom).set_scripted_model(tool_call_script("boom"));
    agent::Agent bot(std::move(options));
    bot.prompt("go").wait();
    std::string result = tool_result_of(bot.state());
    EXPECT_NE(result.find("deferred tool broke"), std::string::npos) << result;
    EXPECT_EQ(result.find("destroyed without an answer"), std::string::npos) << result;
}

TEST(Exceptions, NonStdExceptionInATool) {
    agent::Tool boom(tool_def("boom"), [](std::string_view, std::string_view) -> std::string { throw 42; });
    agent::Options options(test::options_json());
    options.add_tool(boom).set_scripted_model(tool_call_script("boom"));
    agent::Agent bot(std::move(options));
    bot.prompt("go").wait();
    EXPECT_NE(tool_result_of(bot.state()).find("not a std::exception"), std::string::npos);
}

TEST(Exceptions, ThrownInAListenerFailsTheRun) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"hello"}]}])");
    agent::Agent bot(std::move(options));
    std::atomic<int> thrown{0};
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() == agent::EventType::MessageEnd && thrown++ == 0) throw std::runtime_error("listener exploded");
    });
    // The failure path ran cleanly (the run's promise resolved); the run ended with the error.
    agent::Outcome outcome = bot.prompt("go").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "listener exploded");
    std::string state = bot.state();
    EXPECT_NE(state.find(R"("stopReason":"error","errorMessage":"listener exploded")"), std::string::npos) << state;
}

TEST(Exceptions, ThrownInAListenerHoldingItsReply) {
    // The Reply was taken before the throw: the exception's text still wins over "destroyed
    // without an answer".
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"hello"}]}])");
    agent::Agent bot(std::move(options));
    std::atomic<int> thrown{0};
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() != agent::EventType::MessageEnd || thrown++ > 0) return;
        agent::Reply reply = event.defer();
        throw std::runtime_error("deferred listener broke");
    });
    agent::Outcome outcome = bot.prompt("go").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "deferred listener broke");
}

TEST(Exceptions, ThrownInEveryListenerCallRejectsTheBlockingPrompt) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"hello"}]}])");
    agent::Agent bot(std::move(options));
    bot.subscribe([](const agent::Event&) { throw std::runtime_error("always failing listener"); });
    agent::Outcome outcome = bot.prompt("go").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::Failed);
    EXPECT_NE(outcome.error_message.find("always failing listener"), std::string::npos) << outcome.error_message;
}

TEST(Exceptions, ThrownInAHook) {
    std::atomic<int> executed{0};
    agent::Tool tool(tool_def("t"), [&](std::string_view, std::string_view) {
        executed++;
        return agent::text_result("ran");
    });
    agent::Options options(test::options_json());
    options.add_tool(tool).set_scripted_model(tool_call_script("t"));
    options.set_hook(agent::HookKind::BeforeToolCall, [](std::string_view) -> std::optional<std::string> {
        throw std::runtime_error("hook refused");
    });
    agent::Agent bot(std::move(options));
    bot.prompt("go").wait();
    // A throwing beforeToolCall fails that tool call with its message; the tool never runs.
    std::string result = tool_result_of(bot.state());
    EXPECT_NE(result.find(R"("text":"hook refused"}],"details":{},"isError":true)"), std::string::npos) << result;
    EXPECT_EQ(executed.load(), 0);
}

TEST(Exceptions, ThrownInAStreamFunctionFailsTheRequest) {
    agent::Options options(test::options_json());
    options.set_stream_fn([](std::string_view, agent::Stream) { throw std::runtime_error("no network"); });
    agent::Agent bot(std::move(options));
    agent::Outcome outcome = bot.prompt("go").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "no network");
    std::string state = bot.state();
    EXPECT_NE(state.find("no network"), std::string::npos) << state;
    EXPECT_NE(state.find("\"stopReason\":\"error\""), std::string::npos) << state;
}

TEST(Exceptions, ThrownInDoneAndAbortCallbacksIsContained) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}],"waitForAbort":true}])");
    std::promise<void> started;
    std::atomic<int> on_abort_calls{0};
    options.set_hook(agent::HookKind::PrepareRequest, [&](std::string_view, agent::Call call) {
        call.on_abort([&] {
            on_abort_calls++;
            throw std::runtime_error("abort callback throws");
        });
        call.complete();
        started.set_value();
    });
    agent::Agent bot(std::move(options));
    std::atomic<int> done_calls{0};
    bot.prompt_async("go", [&](const agent::Outcome&) {
        done_calls++;
        throw std::runtime_error("done throws");
    });
    started.get_future().wait();
    bot.abort();
    EXPECT_TRUE(bot.wait_for_idle());
    EXPECT_EQ(done_calls.load(), 1);
    EXPECT_TRUE(test::wait_until([&] { return on_abort_calls.load() == 1; })) << on_abort_calls.load();
    // The agent still works.
    bot.set_scripted_model(R"([{"content":[{"type":"text","text":"still alive"}]}])");
    bot.prompt("again").wait();
    EXPECT_NE(bot.state().find("still alive"), std::string::npos);
}

TEST(Calls, DroppedToolCallFailsWithAClearMessage) {
    agent::Tool forgetful(tool_def("forgetful"), [](std::string_view, std::string_view, agent::ToolCall) {});
    agent::Options options(test::options_json());
    options.add_tool(forgetful).set_scripted_model(tool_call_script("forgetful"));
    agent::Agent bot(std::move(options));
    bot.prompt("go").wait();
    EXPECT_NE(tool_result_of(bot.state()).find("agent::ToolCall destroyed without an answer."), std::string::npos);
}

TEST(Calls, DroppedReplyFailsTheRun) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"hello"}]}])");
    agent::Agent bot(std::move(options));
    std::atomic<int> dropped{0};
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() == agent::EventType::MessageEnd && dropped++ == 0) event.defer();  // dropped at once
    });
    agent::Outcome outcome = bot.prompt("go").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::ModelError);
    EXPECT_EQ(outcome.error_message, "agent::Reply destroyed without an answer.");
}

TEST(Calls, ReleasedCallIsAnsweredThroughTheCApi) {
    agent::Tool raw(tool_def("raw"), [](std::string_view, std::string_view, agent::ToolCall call) {
        AgentToolCall c = call.release();
        EXPECT_FALSE(call);
        EXPECT_EQ(agent_tool_call_complete(c, agent::text_result("from C").c_str(), AGENT_NTS), nullptr);
    });
    agent::Options options(test::options_json());
    options.add_tool(raw).set_scripted_model(tool_call_script("raw"));
    agent::Agent bot(std::move(options));
    bot.prompt("go").wait();
    EXPECT_NE(tool_result_of(bot.state()).find("from C"), std::string::npos);
}

TEST(Calls, InvalidAnswerLeavesTheCallOpen) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}]}])");
    std::atomic<int> checks{0};
    options.set_hook(agent::HookKind::GetApiKey, [&](std::string_view, agent::Call call) {
        try {
            call.complete("5");  // must be a JSON string or null
        } catch (const agent::Error& e) {
            EXPECT_EQ(e.status(), AGENT_ERR_INVALID_JSON);
            EXPECT_STREQ(e.what(), "The answer must be a JSON string or NULL.");
            EXPECT_FALSE(call.answered());
            checks++;
        }
        call.complete("\"key\"");
        EXPECT_TRUE(call.answered());
    });
    agent::Agent bot(std::move(options));
    bot.prompt("go").wait();
    EXPECT_EQ(checks.load(), 1);
}

TEST(Calls, BlockingCallsInsideACallbackThrowWouldDeadlock) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}]}])");
    agent::Agent bot(std::move(options));
    agent::EventQueue queue = bot.events();
    std::atomic<int> checked{0};
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() != agent::EventType::AgentStart) return;
        EXPECT_EQ(test::status_of([&] { agent::Run nested = bot.prompt("nested"); }), AGENT_ERR_BUSY);
        EXPECT_EQ(test::status_of([&] { bot.wait_for_idle(); }), AGENT_ERR_WOULD_DEADLOCK);
        while (queue.try_next()) {
        }
        EXPECT_EQ(test::status_of([&] { queue.next(); }), AGENT_ERR_WOULD_DEADLOCK);
        checked++;
    });
    bot.prompt("go").wait();
    EXPECT_EQ(checked.load(), 1);
}

TEST(Calls, WaitingForItsOwnRunInsideACallbackThrowsWouldDeadlock) {
    agent::Options options(test::options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}]}])");
    agent::Agent bot(std::move(options));
    std::atomic<agent::Run*> current{nullptr};
    std::atomic<int> checked{0};
    bot.subscribe([&](const agent::Event& event) {
        if (event.type() != agent::EventType::MessageEnd || checked.load() > 0) return;
        ASSERT_TRUE(test::wait_until([&] { return current.load() != nullptr; }));
        EXPECT_EQ(test::status_of([&] { current.load()->wait(); }), AGENT_ERR_WOULD_DEADLOCK);
        EXPECT_EQ(current.load()->outcome().status, agent::RunStatus::Running);  // reading never blocks
        checked++;
    });
    agent::Run run = bot.prompt("go");
    current = &run;
    EXPECT_TRUE(run.wait());
    EXPECT_EQ(checked.load(), 1);
}

// Every std::function handed to libagent is deleted exactly once: by the finalizer when the
// library drops it, or by the binding when the registration failed.
TEST(Finalizers, DeleteEachFunctionExactlyOnce) {
    std::atomic<int> alive{0}, freed{0};
    {
        test::Probe probe(alive);
        agent::Tool tool(tool_def("t"), [probe](std::string_view, std::string_view) { return agent::text_result("ok"); });
        tool.set_prepare_arguments([probe](std::string_view) { return std::optional<std::string>(); });
        agent::Options options(test::options_json());
        options.add_tool(tool).set_scripted_model(tool_call_script("t"));
        options.set_hook(agent::HookKind::FinishTurn, [probe](std::string_view) {});
        options.set_hook(agent::HookKind::PrepareRequest, [probe, &alive](std::string_view, agent::Call call) {
            test::Probe inner(alive);
            call.on_abort([inner] {});  // never called: deleted when the run's signal goes
            call.complete();
        });
        agent::Agent bot(std::move(options));
        auto id = bot.subscribe([probe](const agent::Event&) {});
        bot.subscribe([probe](const agent::Event& event) { event.defer().resume(); });
        bot.set_hook(agent::HookKind::GetApiKey, [probe](std::string_view) { return std::string("\"k\""); });
        bot.prompt_async("go", [probe](const agent::Outcome&) {});
        EXPECT_TRUE(bot.wait_for_idle());
        bot.unsubscribe(id);
        // Replacing a hook drops the old function.
        bot.set_hook(agent::HookKind::GetApiKey, [probe](std::string_view) { return std::string("\"k2\""); });
        bot.remove_hook(agent::HookKind::GetApiKey);
        // Failed registrations: the binding deletes the function itself.
        EXPECT_THROW(agent::Tool(R"({"label":"no name"})", [probe](std::string_view, std::string_view) {
                         return std::string();
                     }),
                     agent::Error);
        EXPECT_THROW(bot.set_hook(static_cast<agent::HookKind>(42), [probe](std::string_view) {}), agent::Error);
        // A busy agent refuses the run: the binding deletes its `done`. Freeing the agent
        // during a run calls the first `done` with AGENT_ERR_FREED (then deletes it).
        agent::Options stalled_options(test::options_json());
        stalled_options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}],"waitForAbort":true}])");
        agent::Agent stalled(std::move(stalled_options));
        stalled.prompt_async("wait", [probe, &freed](const agent::Outcome& outcome) {
            if (outcome.status == agent::RunStatus::Freed) freed++;
        });
        try {
            stalled.prompt_async("busy", [probe](const agent::Outcome&) { ADD_FAILURE() << "never called"; });
            ADD_FAILURE() << "a busy agent must refuse";
        } catch (const agent::Error& e) {
            EXPECT_EQ(e.status(), AGENT_ERR_BUSY);
        }
    }
    EXPECT_EQ(freed.load(), 1);
    // Everything is gone once the agent, the tool and the runs are: finalizers may run on the
    // runtime thread shortly after agent_free returns.
    EXPECT_TRUE(test::wait_until([&] { return alive.load() == 0; })) << "alive: " << alive.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(alive.load(), 0);
}

// Context management (issue 27) through the C++ binding: Agent::compact, HookKind::Compact, the
// compaction and retry events, and the "compaction" / "retry" options in the options JSON.
#include <mutex>
#include <optional>
#include <vector>

#include "common.hpp"

namespace {

constexpr const char* kWindowedModel = R"({"id":"m1","api":"faux","provider":"test","contextWindow":200000})";

std::string pair(int i) {
    return test::user("question " + std::to_string(i) + " with enough words to be summarized") +
           R"(,{"role":"assistant","content":[{"type":"text","text":"answer )" + std::to_string(i) +
           R"( with enough words too"}],"api":"faux","provider":"test","model":"m1","stopReason":"stop","timestamp":1})";
}

// Four exchanges, compaction and retries on with tiny delays and a small recent part.
std::string options_json() {
    return std::string(R"({"initialState":{"systemPrompt":"Be terse.","model":)") + kWindowedModel +
           R"(,"messages":[)" + pair(1) + "," + pair(2) + "," + pair(3) + "," + pair(4) +
           R"(]},"compaction":{"enabled":true,"keepRecentTokens":20},)"
           R"("retry":{"enabled":true,"baseDelayMs":1,"maxDelayMs":2}})";
}

constexpr const char* kOverloaded =
    R"({"content":[],"stopReason":"error","errorMessage":"529 overloaded_error: Overloaded"})";
constexpr const char* kOverflow =
    R"({"content":[],"stopReason":"error","errorMessage":"prompt is too long: 213462 tokens > 200000 maximum"})";
constexpr const char* kDone = R"({"content":[{"type":"text","text":"done"}]})";

// The context events a listener saw: their kinds and full JSON.
struct Seen {
    std::mutex mutex;
    std::vector<agent::EventType> kinds;
    std::vector<std::string> json;
};

void record_context_events(agent::Agent& bot, Seen& seen) {
    bot.subscribe([&seen](const agent::Event& e) {
        auto kind = e.type();
        if (kind != agent::EventType::CompactionStart && kind != agent::EventType::CompactionEnd &&
            kind != agent::EventType::AutoRetryStart && kind != agent::EventType::AutoRetryEnd)
            return;
        std::lock_guard<std::mutex> lock(seen.mutex);
        seen.kinds.push_back(kind);
        seen.json.emplace_back(e.json());
    });
}

struct HookLog {
    std::mutex mutex;
    int calls = 0;
    std::string last_input;
};

agent::Options options_with_hook(const std::string& script, HookLog& log, std::optional<std::string> answer) {
    agent::Options options(options_json());
    options.set_scripted_model(script);
    options.set_hook(agent::HookKind::Compact, [&log, answer](std::string_view input) -> std::optional<std::string> {
        std::lock_guard<std::mutex> lock(log.mutex);
        log.calls++;
        log.last_input = std::string(input);
        return answer;
    });
    return options;
}

}  // namespace

TEST(Compaction, OverflowIsCompactedAndOverloadsRetried) {
    HookLog log;
    agent::Agent bot(options_with_hook(std::string("[") + kOverflow + "," + kOverloaded + "," + kDone + "]", log,
                                       R"({"summary":"The user asked four questions."})"));
    Seen seen;
    record_context_events(bot, seen);
    agent::Outcome outcome = bot.prompt("and now?").wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::Completed) << outcome.error_message;
    EXPECT_EQ(log.calls, 1);
    EXPECT_NE(log.last_input.find(R"("reason":"overflow")"), std::string::npos);
    std::vector<agent::EventType> expected{agent::EventType::CompactionStart, agent::EventType::CompactionEnd,
                                           agent::EventType::AutoRetryStart, agent::EventType::AutoRetryEnd};
    ASSERT_EQ(seen.kinds, expected);
    EXPECT_NE(seen.json[0].find(R"("type":"compaction_start","reason":"overflow")"), std::string::npos);
    EXPECT_NE(seen.json[1].find(R"("summary":"The user asked four questions.")"), std::string::npos);
    EXPECT_NE(seen.json[2].find(R"("attempt":1,"maxAttempts":3,"delayMs":1,)"), std::string::npos);
    EXPECT_NE(seen.json[2].find("overloaded_error"), std::string::npos);
    EXPECT_NE(seen.json[3].find(R"("success":true,"attempt":1)"), std::string::npos);
    std::string messages = bot.messages(0, SIZE_MAX);
    EXPECT_NE(messages.find(R"("role":"compactionSummary")"), std::string::npos);
    EXPECT_EQ(messages.find("prompt is too long"), std::string::npos);
}

TEST(Compaction, ManualCompactWithAFocusShrinksTheTranscript) {
    HookLog log;
    agent::Agent bot(options_with_hook(std::string("[") + kDone + "]", log, R"({"summary":"Four questions, answered."})"));
    Seen seen;
    record_context_events(bot, seen);
    std::size_t before = bot.message_count();
    std::atomic<int> done_status{-1};
    agent::Outcome outcome =
        bot.compact("keep the API design", [&](const agent::Outcome& o) { done_status = static_cast<int>(o.status); })
            .wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::Completed) << outcome.error_message;
    EXPECT_TRUE(test::wait_until([&] { return done_status.load() == static_cast<int>(agent::RunStatus::Completed); }));
    EXPECT_NE(log.last_input.find(R"("reason":"manual")"), std::string::npos);
    EXPECT_NE(log.last_input.find(R"("focus":"keep the API design")"), std::string::npos);
    EXPECT_LT(bot.message_count(), before);
    std::vector<agent::EventType> expected{agent::EventType::CompactionStart, agent::EventType::CompactionEnd};
    EXPECT_EQ(seen.kinds, expected);

    // Nothing older than the kept part is left: the run fails and says so (the hook is not asked).
    outcome = bot.compact().wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::Failed);
    EXPECT_NE(outcome.error_message.find("Nothing to compact"), std::string::npos) << outcome.error_message;
    EXPECT_EQ(log.calls, 1);
}

TEST(Compaction, AHookThatCancelsLeavesTheTranscript) {
    HookLog log;
    agent::Agent bot(options_with_hook(std::string("[") + kDone + "]", log, R"({"cancel":true})"));
    std::string before = bot.messages(0, SIZE_MAX);
    agent::Outcome outcome = bot.compact().wait();
    EXPECT_EQ(outcome.status, agent::RunStatus::Aborted);
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.last_input.find(R"("focus")"), std::string::npos) << log.last_input;  // compact(): no focus
    EXPECT_EQ(bot.messages(0, SIZE_MAX), before);
}

TEST(Compaction, CompactDuringARunIsBusy) {
    agent::Options options(options_json());
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"x"}],"waitForAbort":true}])");
    agent::Agent bot(std::move(options));
    agent::Run run = bot.prompt("hello");
    std::string message;
    EXPECT_EQ(test::status_of([&] { agent::Run nested = bot.compact("x"); }, &message), AGENT_ERR_BUSY);
    EXPECT_NE(message.find("already processing"), std::string::npos) << message;
    run.abort();
    EXPECT_EQ(run.wait().status, agent::RunStatus::Aborted);
}

TEST(Compaction, OptionErrorsNameTheMember) {
    std::string message;
    EXPECT_EQ(test::status_of([&] { agent::Options(R"({"retry":{"maxRetries":"three"}})"); }, &message),
              AGENT_ERR_INVALID_JSON);
    EXPECT_NE(message.find("maxRetries"), std::string::npos) << message;
}

// Sessions (issue 26): agent::Session over agent_session_* (pi-coding-agent's session files),
// RAII, and attached to an agent through Options::set_session.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "common.hpp"

namespace {

std::string temp_dir() {
    char path[] = "/tmp/libagent-cpp-session-XXXXXX";
    if (!mkdtemp(path)) std::abort();
    return path;
}

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// How many messages of the conversation (user and assistant: not the system prompt's) a session file holds.
int conversation_in(const std::string& path) {
    int n = 0;
    for (const std::string& line : lines_of(path))
        n += line.find(R"("message":{"role":"user")") != std::string::npos ||
             line.find(R"("message":{"role":"assistant")") != std::string::npos;
    return n;
}

std::string message(std::string_view role, std::string_view text) {
    std::string m = std::string(R"({"type":"message","message":{"role":")") + std::string(role) +
                    R"(","content":[{"type":"text","text":)" + agent::quote(text) + "}]";
    if (role == "assistant")
        m += R"(,"api":"faux","provider":"test","model":"m1","usage":{"input":0,"output":0,"cacheRead":0,)"
             R"("cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},)"
             R"("stopReason":"stop")";
    return m + R"(,"timestamp":1}})";
}

std::string cwd_options(const std::string& cwd) { return "{\"cwd\":" + agent::quote(cwd) + "}"; }

// The README's "resume a session" snippet for C++ (SESSIONS_SNIPPETS.md), verbatim as main's body.
int resume_snippet() {
    auto session = agent::Session::open("chat.jsonl");     // a new file, or the conversation so far
    agent::Options options;
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"Hi again!"}]}])").set_session(session);
    agent::Agent bot(std::move(options));                   // starts from the session's context
    std::cout << "resumed " << bot.message_count() << " messages\n";
    bot.prompt("hello").wait();                             // appended to chat.jsonl as the run goes
    return 0;
}

}  // namespace

TEST(Session, ANewFileIsWrittenWithItsMessagesAndReopens) {
    std::string dir = temp_dir(), path = dir + "/chat.jsonl";
    std::string first, second, entries;
    {
        auto session = agent::Session::open(path, cwd_options(dir));
        EXPECT_EQ(session.file(), "{\"path\":" + agent::quote(path) + ",\"exists\":false}");
        EXPECT_EQ(session.leaf_id(), std::nullopt);
        EXPECT_EQ(session.entries(), "[]");
        EXPECT_NE(session.header().find("\"cwd\":" + agent::quote(dir)), std::string::npos) << session.header();
        first = session.append(message("user", "hello"));
        second = session.append(message("assistant", "hi"));
        EXPECT_EQ(first.size(), 8u);
        EXPECT_NE(first, second);
        EXPECT_EQ(session.leaf_id(), second);
        EXPECT_EQ(session.file(), "{\"path\":" + agent::quote(path) + ",\"exists\":true}");
        entries = session.entries();
        EXPECT_NE(entries.find("\"parentId\":\"" + first + "\""), std::string::npos) << entries;
        EXPECT_EQ(test::count_of(session.context(), "\"role\":"), 2) << session.context();
        auto lines = lines_of(path);
        ASSERT_EQ(lines.size(), 3u);
        EXPECT_EQ(lines[0].rfind("{\"type\":\"session\"", 0), 0u) << lines[0];
        EXPECT_NE(lines[2].find("\"id\":\"" + second + "\""), std::string::npos) << lines[2];
    }
    auto again = agent::Session::open(path);
    EXPECT_EQ(again.entries(), entries);
    EXPECT_EQ(again.leaf_id(), second);
}

TEST(Session, BranchesLabelsSummariesAndForks) {
    std::string dir = temp_dir();
    auto session = agent::Session::open(dir + "/tree.jsonl");
    std::string a = session.append(message("user", "one"));
    std::string b = session.append(message("assistant", "two"));
    session.branch(a);
    std::string c = session.append(message("assistant", "other two"));
    std::string path = session.branch_path();
    EXPECT_NE(path.find(c), std::string::npos);
    EXPECT_EQ(path.find("\"id\":\"" + b + "\""), std::string::npos) << path;
    EXPECT_NE(session.context().find("other two"), std::string::npos);
    std::string label = session.label(b, "first \"answer\"");
    EXPECT_EQ(session.leaf_id(), label);
    EXPECT_NE(session.entries().find(R"("targetId":")" + b + R"(","label":"first \"answer\"")"), std::string::npos)
        << session.entries();
    std::string summary = session.branch_with_summary(a, R"({"summary":"We tried another answer."})");
    EXPECT_EQ(session.leaf_id(), summary);
    EXPECT_NE(session.branch_path().find("\"type\":\"branch_summary\""), std::string::npos);
    EXPECT_NE(session.llm_messages().find("We tried another answer."), std::string::npos) << session.llm_messages();
    session.reset_leaf();
    EXPECT_EQ(session.leaf_id(), std::nullopt);
    EXPECT_EQ(session.branch_path(), "[]");
    std::string before = session.file();
    session.fork(c);
    EXPECT_NE(session.file(), before);
    EXPECT_EQ(test::count_of(session.entries(), "\"type\":\"message\""), 2) << session.entries();
}

TEST(Session, ErrorsCarryTheNewCodes) {
    std::string dir = temp_dir(), path = dir + "/locked.jsonl";
    std::string message_text;
    {
        auto first = agent::Session::open(path);
        first.append(message("user", "q"));
        first.append(message("assistant", "a"));
        EXPECT_EQ(test::status_of([&] { agent::Session::open(path); }, &message_text), AGENT_ERR_LOCKED);
        EXPECT_NE(message_text.find(path), std::string::npos) << message_text;
        EXPECT_EQ(test::status_of([&] { first.branch("nope1234"); }), AGENT_ERR_INVALID_ARGUMENT);
    }
    std::ofstream(dir + "/notes.txt") << "just notes\n";
    EXPECT_EQ(test::status_of([&] { agent::Session::open(dir + "/notes.txt"); }), AGENT_ERR_NOT_A_SESSION);
    std::ofstream(dir + "/future.jsonl") << R"({"type":"session","version":4,"id":"x","cwd":"/"})" << "\n";
    EXPECT_EQ(test::status_of([&] { agent::Session::open(dir + "/future.jsonl"); }), AGENT_ERR_NOT_A_SESSION);
    std::ofstream(dir + "/a-file") << "";
    EXPECT_EQ(test::status_of([&] {
                  auto s = agent::Session::create(dir + "/a-file/sessions");
                  s.append(message("user", "q"));
                  s.append(message("assistant", "a"));
              }, &message_text),
              AGENT_ERR_IO);
    EXPECT_NE(message_text.find(dir + "/a-file"), std::string::npos) << message_text;
    EXPECT_EQ(test::status_of([&] { agent::Session::in_memory().append("{\"type\":"); }), AGENT_ERR_INVALID_JSON);
}

TEST(Session, MovedFromIsEmptyAndTheHandleIsFreedOnce) {
    auto session = agent::Session::in_memory(R"({"cwd":"/project"})");
    AgentSession raw = session.get();
    agent::Session moved = std::move(session);
    EXPECT_FALSE(session);
    EXPECT_TRUE(moved);
    EXPECT_EQ(moved.get().id, raw.id);
    moved.append(message("user", "q"));
    EXPECT_EQ(moved.file(), R"({"path":null,"exists":false})");
    moved = agent::Session::in_memory();  // frees the first
    char* json = nullptr;
    std::size_t len = 0;
    AgentError* error = agent_session_get(raw, AGENT_SESSION_HEADER, &json, &len);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(agent_error_code(error), AGENT_ERR_INVALID_HANDLE);
    agent_error_free(error);
}

TEST(Session, DirectoryAndContinueRecent) {
    std::string base = temp_dir();
    std::string dir = agent::Session::directory(base, "/home/me/project");
    EXPECT_EQ(dir, base + "/--home-me-project--");
    std::string first_file;
    {
        auto first = agent::Session::continue_recent(dir, R"({"cwd":"/home/me/project"})");
        first.append(message("user", "q"));
        first.append(message("assistant", "a"));
        first_file = first.file();
    }
    auto again = agent::Session::continue_recent(dir, R"({"cwd":"/home/me/project"})");
    EXPECT_EQ(again.file(), first_file);
    EXPECT_EQ(test::count_of(again.context(), "\"role\":"), 2);
}

TEST(Session, AnAgentAppendsAndResumes) {
    std::string dir = temp_dir(), path = dir + "/agent.jsonl";
    {
        auto session = agent::Session::open(path);
        agent::Options options(test::options_json());
        options.set_scripted_model(R"([{"content":[{"type":"text","text":"Hi!"}]}])").set_session(session);
        agent::Agent bot(std::move(options));
        EXPECT_TRUE(bot.prompt("hello").wait());
        // The session holds what the agent holds (with the system prompt's message).
        EXPECT_EQ(static_cast<std::size_t>(test::count_of(session.context(), "{\"role\":")), bot.message_count());
        EXPECT_EQ(conversation_in(path), 2);
        agent::Options second;
        second.set_scripted_model("[]");
        EXPECT_EQ(test::status_of([&] { second.set_session(session); agent::Agent other(std::move(second)); }),
                  AGENT_ERR_INVALID_STATE);
    }
    EXPECT_EQ(conversation_in(path), 2);
    std::string seen;
    auto session = agent::Session::open(path);
    agent::Options options(test::options_json());
    options.set_stream_fn([&](std::string_view request, agent::Stream stream) {
        seen = std::string(request);
        stream.complete(R"({"role":"assistant","content":[{"type":"text","text":"Welcome back."}],"api":"faux",)"
                        R"("provider":"test","model":"m1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,)"
                        R"("totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},)"
                        R"("stopReason":"stop","timestamp":3})");
    }).set_session(session);
    std::size_t resumed = static_cast<std::size_t>(test::count_of(session.context(), "{\"role\":"));
    agent::Agent bot(std::move(options));
    EXPECT_GE(resumed, 2u);
    EXPECT_EQ(bot.message_count(), resumed);  // the agent starts from the session's context
    EXPECT_TRUE(bot.prompt("again").wait());
    ASSERT_NE(seen.find("hello"), std::string::npos) << seen;
    EXPECT_LT(seen.find("hello"), seen.find("again")) << seen;
    EXPECT_EQ(conversation_in(path), 4);
}

TEST(Session, TheReadmeSnippetResumes) {
    std::string dir = temp_dir();
    char previous[4096];
    ASSERT_NE(getcwd(previous, sizeof previous), nullptr);
    ASSERT_EQ(chdir(dir.c_str()), 0);
    std::vector<std::string> printed;
    for (int run = 0; run < 2; run++) {
        testing::internal::CaptureStdout();
        resume_snippet();
        printed.push_back(testing::internal::GetCapturedStdout());
    }
    ASSERT_EQ(chdir(previous), 0);
    EXPECT_EQ(printed, (std::vector<std::string>{"resumed 0 messages\n", "resumed 2 messages\n"}));
    EXPECT_EQ(conversation_in(dir + "/chat.jsonl"), 4);
}

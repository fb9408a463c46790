// The coding tool pack: one call gives an agent pi-coding-agent's tools for a root, with consent.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "common.hpp"

namespace {

std::string make_root() {
    char path[] = "/tmp/libagent-cpp-coding-XXXXXX";
    if (!mkdtemp(path)) std::abort();
    std::ofstream(std::string(path) + "/a.txt") << "hello\n";
    return path;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST(Coding, ThePackEditsAsksBeforeWritingAndStaysInTheRoot) {
    std::string root = make_root();
    std::atomic<int> asked{0}, alive{0};
    {
        auto tools = agent::coding_tools(root, R"({"tools":["read","write","edit"]})",
                                         [probe = test::Probe(alive), &asked](std::string_view input) {
                                             ++asked;
                                             if (input.find("\"tool\":\"write\"") != std::string_view::npos)
                                                 return std::optional<std::string>(
                                                     R"({"allow":false,"reason":"Not here."})");
                                             return std::optional<std::string>();
                                         });
        ASSERT_EQ(tools.size(), 3u);
        agent::Options options(test::options_json());
        for (auto& tool : tools) options.add_tool(tool);
        options.set_scripted_model(
            R"([{"content":[{"type":"toolCall","id":"c1","name":"write","arguments":{"path":"b.txt","content":"x"}}]},)"
            R"({"content":[{"type":"toolCall","id":"c2","name":"edit","arguments":{"path":"a.txt","edits":[{"oldText":"hello","newText":"bye"}]}}]},)"
            R"({"content":[{"type":"toolCall","id":"c3","name":"read","arguments":{"path":"../x"}}]},)"
            R"({"content":[{"type":"text","text":"done"}]}])");
        agent::Agent bot(std::move(options));
        EXPECT_TRUE(bot.prompt("go").wait());
        std::string state = bot.state();
        EXPECT_NE(state.find("Not here."), std::string::npos) << state;
        EXPECT_NE(state.find("Successfully replaced 1 block(s) in a.txt."), std::string::npos) << state;
        EXPECT_NE(state.find("outside the root directory"), std::string::npos) << state;
    }
    EXPECT_EQ(asked.load(), 2);
    EXPECT_TRUE(test::wait_until([&] { return alive.load() == 0; }));  // the hook was released
    EXPECT_EQ(slurp(root + "/a.txt"), "bye\n");
    EXPECT_FALSE(std::ifstream(root + "/b.txt").good());
    std::remove((root + "/a.txt").c_str());
    std::remove(root.c_str());
}

TEST(Coding, BashIsOffUnlessEnabled) {
    try {
        agent::coding_tools("/tmp", R"({"tools":["bash"]})");
        FAIL() << "bash was created";
    } catch (const agent::Error& error) {
        EXPECT_EQ(error.status(), AGENT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(error.what()).find("bash tool is disabled"), std::string::npos);
    }
    EXPECT_EQ(agent::coding_tools("/tmp").size(), 6u);
    EXPECT_EQ(agent::coding_tools("/tmp", R"({"bash":true})").size(), 7u);
}

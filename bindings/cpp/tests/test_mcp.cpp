// MCP servers' tools: a real server over stdio (@modelcontextprotocol/server-everything, installed
// by tests/mcp/setup.sh) and hostile ones (tests/mcp/hostile/server.py), through agent::Mcp.
#include <cstdlib>
#include <string>

#include "common.hpp"

namespace {

const std::string kRoot = LIBAGENT_SOURCE_ROOT;

// make cpp-unit-test installs the servers first and sets LIBAGENT_REQUIRE_MCP: there a missing
// server fails the test instead of skipping it.
bool servers_installed() {
    std::string probe = kRoot + "/build/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    return std::system(("test -f '" + probe + "'").c_str()) == 0;
}

#define REQUIRE_SERVERS()                                                                    \
    do {                                                                                     \
        if (!servers_installed()) {                                                          \
            if (std::getenv("LIBAGENT_REQUIRE_MCP")) FAIL() << "run tests/mcp/setup.sh";    \
            GTEST_SKIP() << "the MCP test servers are not installed (tests/mcp/setup.sh)";   \
        }                                                                                    \
    } while (0)

std::string call(std::string_view id, std::string_view name, std::string_view args) {
    return std::string(R"({"type":"toolCall","id":")") + std::string(id) + R"(","name":")" + std::string(name) +
           R"(","arguments":)" + std::string(args) + "}";
}

}  // namespace

TEST(Mcp, AWrongConfigurationIsRefusedAndAWrongEntryIsAFailedServer) {
    std::string message;
    EXPECT_EQ(test::status_of([] { agent::Mcp("{"); }, &message), AGENT_ERR_INVALID_JSON);
    EXPECT_EQ(test::status_of([] { agent::Mcp(R"({"servers":{}})"); }, &message), AGENT_ERR_INVALID_JSON);
    EXPECT_NE(message.find("\"mcpServers\" object"), std::string::npos) << message;
    agent::Mcp mcp(R"({"mcpServers":{"old":{"type":"sse","url":"http://127.0.0.1:9/sse"}}})");
    EXPECT_TRUE(mcp.wait(std::chrono::milliseconds(0)));
    std::string servers = mcp.servers();
    EXPECT_NE(servers.find(R"("name":"old","state":"failed")"), std::string::npos) << servers;
    EXPECT_NE(servers.find("legacy SSE transport is not supported"), std::string::npos) << servers;
    EXPECT_TRUE(mcp.tools().empty());
    EXPECT_EQ(mcp.tools_json(), "[]");
}

TEST(Mcp, ARealServersToolsAreCalledByAnAgent) {
    REQUIRE_SERVERS();
    std::string everything = kRoot + "/build/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    std::string hostile = kRoot + "/tests/mcp/hostile/server.py";
    agent::Mcp mcp(R"({"mcpServers":{"everything":{"command":"node","args":[)" + agent::quote(everything) +
                   R"(,"stdio"]},"exits":{"command":"python3","args":[)" + agent::quote(hostile) + R"(,"exit"]}}})");
    ASSERT_TRUE(mcp.wait(std::chrono::seconds(60))) << mcp.servers();
    std::string servers = mcp.servers();
    EXPECT_NE(servers.find(R"("name":"everything","state":"ready")"), std::string::npos) << servers;
    EXPECT_NE(servers.find(R"("name":"exits","state":"failed")"), std::string::npos) << servers;
    EXPECT_NE(servers.find("hostile: refusing to start (exit mode)"), std::string::npos) << servers;
    auto tools = mcp.tools();
    std::string definitions = mcp.tools_json();
    EXPECT_EQ(test::count_of(definitions, R"("name":"mcp__everything__)"), static_cast<int>(tools.size()));
    EXPECT_NE(definitions.find(R"("name":"mcp__everything__echo","label":"everything/echo")"), std::string::npos);

    // The tools once.
    {
        agent::Options options(test::options_json());
        for (auto& tool : tools) options.add_tool(tool);
        options.set_scripted_model("[{\"content\":[" + call("c1", "mcp__everything__echo", R"({"message":"hi there"})") +
                                   "]},{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]");
        agent::Agent bot(std::move(options));
        EXPECT_TRUE(bot.prompt("go").wait());
        std::string state = bot.state();
        EXPECT_NE(state.find("Echo: hi there"), std::string::npos) << state;
    }
    // The set attached: the agent takes its tools at each turn, and keeps the set.
    agent::Options options(test::options_json());
    options.add_mcp(mcp);
    options.set_scripted_model("[{\"content\":[" + call("c2", "mcp__everything__get_sum", R"({"a":2,"b":40})") +
                               "]},{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]");
    agent::Agent bot(std::move(options));
    EXPECT_TRUE(bot.prompt("go").wait());
    std::string state = bot.state();
    EXPECT_NE(state.find("42"), std::string::npos) << state;
    EXPECT_NE(state.find(R"("toolCallId":"c2")"), std::string::npos) << state;

    mcp.close();
    servers = mcp.servers();
    EXPECT_EQ(test::count_of(servers, R"("state":"closed")"), 2) << servers;
    mcp.close();  // twice is harmless
}

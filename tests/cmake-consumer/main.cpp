// The installed C++ binding (libagent::cpp): version macros, one blocking prompt.
#include <iostream>

#include <libagent/agent.hpp>

int main() try {
    if (agent::version() != AGENT_VERSION_STRING) {
        std::cerr << "version mismatch: " << agent::version() << " vs " << AGENT_VERSION_STRING << "\n";
        return 1;
    }
    agent::version_check();
    agent::Options options(R"({"initialState":{"systemPrompt":"Be brief."}})");
    options.set_scripted_model(R"([{"content":[{"type":"text","text":"packaged C++ ok"}]}])");
    agent::Agent bot(std::move(options));
    bool ok = bot.prompt("hi").wait().completed() && bot.state().find("packaged C++ ok") != std::string::npos;
    std::cout << "consumer_cpp: run " << (ok ? "ok" : "FAILED") << "\n";
    return ok ? 0 : 1;
} catch (const agent::Error& e) {
    std::cerr << "libagent error " << e.status() << ": " << e.what() << "\n";
    return 1;
}

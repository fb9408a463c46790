// Shared helpers of the C++ binding tests (GoogleTest, linked against the real libagent.so).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include <libagent/agent.hpp>

namespace test {

inline constexpr const char* kModel = R"({"id":"m1","api":"faux","provider":"test"})";

inline std::string options_json(std::string_view system_prompt = "sys") {
    return std::string(R"({"initialState":{"systemPrompt":)") + agent::quote(system_prompt) +
           R"(,"model":)" + kModel + "}}";
}

// A user message.
inline std::string user(std::string_view text, int timestamp = 1) {
    return std::string(R"({"role":"user","content":)") + agent::quote(text) +
           ",\"timestamp\":" + std::to_string(timestamp) + "}";
}

// Polls `cond` until it holds; the generous limit only keeps a broken test from hanging (no
// assertion depends on speed).
template <class Cond>
bool wait_until(Cond cond, std::chrono::seconds limit = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// The status of the agent::Error `run` throws (AGENT_OK when it returns), and its what().
template <class Body>
AgentErrorCode status_of(Body&& run, std::string* message = nullptr) {
    try {
        run();
    } catch (const agent::Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
    return AGENT_OK;
}

inline int count_of(std::string_view haystack, std::string_view needle) {
    int n = 0;
    for (auto at = haystack.find(needle); at != std::string_view::npos; at = haystack.find(needle, at + needle.size()))
        n++;
    return n;
}

// Counts live instances: every constructor (copies and moves included) adds one, every
// destructor removes one. A callable holding a Probe is alive exactly while the binding (or
// libagent) keeps its std::function: 0 after teardown means deleted, never negative means never
// deleted twice.
struct Probe {
    std::atomic<int>* alive;
    explicit Probe(std::atomic<int>& counter) : alive(&counter) { ++*alive; }
    Probe(const Probe& other) : alive(other.alive) { ++*alive; }
    Probe(Probe&& other) noexcept : alive(other.alive) { ++*alive; }
    Probe& operator=(const Probe&) = delete;
    ~Probe() { --*alive; }
};

}  // namespace test

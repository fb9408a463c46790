// libagent quickstart in C++17 (the conversation of examples/c/quickstart.c): a multi-turn agent
// with a system prompt and two real tools (list a directory, read a file), answered by the
// built-in scripted model, which calls both tools in parallel. Streamed text is printed as it
// arrives; tool calls and results are shown; a transcript summary ends the run.
//
//   make example-cpp
//
// To use a real model, replace set_scripted_model() with set_stream_fn(): see the end of file.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <libagent/agent.hpp>

namespace {

// The string member `"key":"value"` of flat JSON (enough for this demo; use a JSON library in
// real code). Escaped newlines become " | " for display.
std::string string_field(std::string_view json, std::string_view key) {
    std::string pattern = "\"" + std::string(key) + "\":\"";
    auto at = json.find(pattern);
    if (at == std::string_view::npos) return {};
    std::string out;
    for (auto p = at + pattern.size(); p < json.size() && json[p] != '"'; p++) {
        if (json[p] == '\\' && p + 1 < json.size()) {
            out += json[p + 1] == 'n' ? std::string(" | ") : std::string(1, json[p + 1]);
            p++;
        } else {
            out += json[p];
        }
    }
    return out;
}

std::string list_dir(std::string_view, std::string_view args) {
    std::string path = string_field(args, "path");
    if (path.empty()) throw std::invalid_argument("path is required");  // fails the tool call
    std::error_code error;
    std::string listing;
    for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
        std::string name = entry.path().filename().string();
        if (name[0] != '.') listing += name + "\n";
    }
    if (error) return agent::text_result("cannot open directory", true);
    return agent::text_result(listing);
}

std::string read_file(std::string_view, std::string_view args) {
    std::ifstream file(string_field(args, "path"));
    if (!file) return agent::text_result("cannot open file", true);
    std::string text, line;
    for (int i = 0; i < 6 && std::getline(file, line); i++) text += line + "\n";
    return agent::text_result(text);
}

const char* kScript = R"([
  {"content": [
    {"type": "text", "text": "Let me look at the project: its files and its README.", "chunks": 6},
    {"type": "toolCall", "id": "call_1", "name": "list_dir", "arguments": {"path": "."}},
    {"type": "toolCall", "id": "call_2", "name": "read_file", "arguments": {"path": "README.md"}, "chunks": 3}]},
  {"content": [{"type": "text", "chunks": 8, "text":
    "This is libagent: a Rust agent runtime with a C ABI. The listing shows its sources, tests and examples; the README explains how to run the demo and the tests."}]}
])";

const char* kParams = R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]})";

}  // namespace

int main() try {
    agent::Tool lister(std::string(R"({"name":"list_dir","label":"List","description":"List a directory","parameters":)") +
                           kParams + "}",
                       list_dir);
    agent::Tool reader(std::string(R"({"name":"read_file","label":"Read","description":"Read a file","parameters":)") +
                           kParams + "}",
                       read_file);

    agent::Options options(R"({"initialState": {"systemPrompt": "You are a helpful project guide.",
        "model": {"id": "scripted", "api": "faux", "provider": "libagent"}}})");
    options.add_tool(lister).add_tool(reader).set_scripted_model(kScript);
    agent::Agent guide(std::move(options));  // the agent keeps its own references to the tools

    // Listeners run on libagent's runtime thread; this one continues when it returns. Events are
    // structs (type, update, delta, tool ids): JSON is built only where it is asked for.
    guide.subscribe([streaming = false](const agent::Event& event) mutable {
        switch (event.type()) {
        case agent::EventType::MessageUpdate:
            if (event.update() == agent::UpdateType::TextDelta) {
                std::cout << event.delta() << std::flush;
                streaming = true;
            }
            break;
        case agent::EventType::MessageEnd:
            if (streaming) std::cout << "\n";
            streaming = false;
            break;
        case agent::EventType::ToolExecutionStart:
            std::cout << "  -> " << event.tool_name() << " "
                      << string_field(event.json(agent::EventShape::Lean), "path") << "\n";
            break;
        case agent::EventType::ToolExecutionEnd:
            std::cout << "  <- " << event.tool_name() << ": "
                      << string_field(event.json(agent::EventShape::Lean), "text").substr(0, 70) << "...\n";
            break;
        default:
            break;
        }
    });

    std::cout << "> What is this project?\n";
    agent::Run run = guide.prompt("What is this project?");  // starts the run
    agent::Outcome outcome = run.wait();                      // blocks until it settled
    if (!outcome) {
        std::cerr << "run ended: " << outcome.error_message << "\n";
        return 1;
    }

    std::cout << "Transcript: " << guide.message_count()
              << " messages (system prompt, user, assistant with 2 tool calls, 2 tool results, assistant); this run added "
              << outcome.message_count << ".\n";
    return 0;
} catch (const agent::Error& e) {
    std::cerr << "libagent error " << e.status() << ": " << e.what() << "\n";
    return 1;
}

// Plugging in a real model: a stream function receives the request JSON ({model, context:
// {messages}, options}) and pushes assistant stream events, from any thread:
//
//   options.set_stream_fn([client](std::string_view request, agent::Stream stream) {
//       client->start(std::string(request), std::move(stream));   // returns at once
//   });
//   // ...then, on the HTTP thread, for each chunk of the provider's response:
//   stream.push(R"({"type":"start"})");
//   stream.push(R"({"type":"text_start","contentIndex":0})");
//   stream.push(R"({"type":"text_delta","contentIndex":0,"delta":"Hel"})");
//   stream.push(R"({"type":"text_end","contentIndex":0})");
//   stream.push(R"({"type":"done","reason":"stop"})");
//   // Provider errors: stream.push(R"({"type":"error","reason":"error","errorMessage":"..."})").

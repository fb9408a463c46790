// libagent for C++17: a header-only binding of the C ABI (agent.h).
//
//   #include <libagent/agent.hpp>        // CMake: target_link_libraries(app PRIVATE libagent::cpp)
//
//   agent::Options options(R"({"initialState":{"systemPrompt":"Be brief."}})");
//   options.set_scripted_model(R"([{"content":[{"type":"text","text":"Hi!"}]}])");
//   agent::Agent bot(std::move(options));
//   bot.subscribe([](const agent::Event& e) { std::cout << e.delta(); });
//   bot.prompt("hello");                           // blocks until the run settled
//
// Types. `Agent`, `Options`, `Tool` and `EventQueue` own a libagent handle: they are move-only
// and free it in their destructor. `Call`, `ToolCall` and `Stream` own the answer of one
// callback invocation (see "Deferred answers"). `Event` is borrowed for a listener's call.
//
// JSON. Every JSON argument and result is text: `std::string_view` in, `std::string` out (no JSON
// library needed; `agent::quote` and `agent::text_result` build the common small pieces). The C
// ABI takes NUL-terminated strings, so a `string_view` argument is copied, and a string
// containing a NUL byte is rejected with `AGENT_ERR_INVALID_ARGUMENT`.
//
// Errors: ONE model. Every failing libagent call throws `agent::Error` (a `std::runtime_error`)
// carrying the status code (`status()`, an `AGENT_ERR_*` value) and the library's message
// (`what()`). Expected outcomes are not errors: `wait_for_idle` returns false on a timeout and
// `EventQueue::next` returns `std::nullopt` (see there). A run that does not complete makes the
// blocking `prompt()` / `continue_run()` throw: `Error(AGENT_ERR_MODEL_ERROR, errorMessage)` when
// it ended with stopReason "error" (a failed model request — wrong key, URL or model — or a
// failed stream function or hook), `Error(AGENT_ERR_ABORTED, ...)` when it was aborted,
// `Error(AGENT_ERR_RUN_FAILED, why)` when a listener failed while it was failing. The async forms
// pass the same status and message to their `done` callback instead.
//
// Callbacks are `std::function`s (any callable converts). Each is moved to the heap, its pointer
// is passed to libagent as user_data, and libagent's finalizer deletes it exactly once, when the
// library drops its last reference (a `done` callback is deleted after its single call). If a
// registration fails, the binding deletes it before throwing. Callbacks run on libagent's runtime
// thread (concurrently only with `agent::runtime_configure(n > 1)`), must return quickly, and may
// call any libagent function except the blocking ones (`prompt`, `continue_run`, `wait_for_idle`
// and a waiting `EventQueue::next` throw `AGENT_ERR_WOULD_DEADLOCK` there).
//
// Exceptions never unwind into libagent: each trampoline catches everything. An exception thrown
// by a callback that has a call fails that call with the exception's `what()` (a tool call
// becomes an error tool result with that text, a listener or hook failure fails the run or the
// turn as the reference's thrown error would). `done`, abort and consumed notifications have no
// call: their exceptions are swallowed.
//
// Deferred answers. Callbacks that answer (tools, hooks, listeners, stream functions) come in
// two forms. The synchronous form returns the answer (`std::string` JSON, `std::optional` for
// "returns nothing", or void) and the binding answers for it. The deferred form receives the
// call object by value: answer it now, or move it to another thread and answer it later
// (`complete` / `fail`; `is_aborted` / `on_abort` observe the run's abort). A call object that is
// destroyed unanswered fails its call ("... destroyed without an answer"), so a forgotten answer
// never stalls a run; `release()` hands the raw `AgentCall*` over to C code instead.
#ifndef LIBAGENT_AGENT_HPP
#define LIBAGENT_AGENT_HPP

#include <agent.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace agent {

// ---- errors ------------------------------------------------------------------------------------

// The one error type: a failed libagent call (status = an AGENT_ERR_* code, what() = its message).
class Error : public std::runtime_error {
public:
    Error(AgentStatus status, const std::string& message) : std::runtime_error(message), status_(status) {}
    AgentStatus status() const noexcept { return status_; }

private:
    AgentStatus status_;
};

// Which hook (SPEC §7.1).
enum class HookKind : AgentHookKind {
    ConvertToLlm = AGENT_HOOK_CONVERT_TO_LLM,
    TransformContext = AGENT_HOOK_TRANSFORM_CONTEXT,
    GetApiKey = AGENT_HOOK_GET_API_KEY,
    BeforeToolCall = AGENT_HOOK_BEFORE_TOOL_CALL,
    AfterToolCall = AGENT_HOOK_AFTER_TOOL_CALL,
    FinishTurn = AGENT_HOOK_FINISH_TURN,
    PrepareRequest = AGENT_HOOK_PREPARE_REQUEST,
    PrepareNextTurn = AGENT_HOOK_PREPARE_NEXT_TURN,
    PrepareNextTurnWithContext = AGENT_HOOK_PREPARE_NEXT_TURN_WITH_CONTEXT,
};

// Which JSON shape of an event.
enum class EventShape : AgentEventShape { Full = AGENT_EVENT_SHAPE_FULL, Lean = AGENT_EVENT_SHAPE_LEAN };

namespace detail {

inline void check(AgentStatus status) {
    if (status != AGENT_OK) throw Error(status, agent_last_error());
}

// A NUL-terminated copy of a string argument.
inline std::string c_str(std::string_view text) {
    if (text.find('\0') != std::string_view::npos)
        throw Error(AGENT_ERR_INVALID_ARGUMENT, "A string passed to libagent contains a NUL byte.");
    return std::string(text);
}

// Takes a string returned by libagent.
inline std::string take(char* text) {
    std::unique_ptr<char, void (*)(char*)> owner(text, agent_string_free);
    return text ? std::string(text) : std::string();
}

template <class T>
void destroy(void* user_data) noexcept {
    delete static_cast<T*>(user_data);
}

// The binding callback running on this thread, if any: lets blocking calls refuse to deadlock
// and lets a call object tell "unwinding towards its own trampoline" from "dropped".
struct CallbackFrame {
    AgentCall* call;
    int uncaught;
    const CallbackFrame* outer;
};

inline thread_local const CallbackFrame* current_frame = nullptr;

class FrameScope {
public:
    explicit FrameScope(AgentCall* call) noexcept
        : frame_{call, std::uncaught_exceptions(), current_frame} {
        current_frame = &frame_;
    }
    ~FrameScope() { current_frame = frame_.outer; }
    FrameScope(const FrameScope&) = delete;
    FrameScope& operator=(const FrameScope&) = delete;

private:
    CallbackFrame frame_;
};

inline bool in_callback() noexcept { return current_frame != nullptr; }

inline void refuse_blocking(const char* what) {
    if (in_callback())
        throw Error(AGENT_ERR_WOULD_DEADLOCK,
                    std::string(what) + " was called inside a libagent callback (the runtime thread), where it "
                                        "could never finish.");
}

// True while an exception thrown inside the trampoline of `call` unwinds towards it.
inline bool unwinding_to_trampoline_of(AgentCall* call) noexcept {
    for (const CallbackFrame* f = current_frame; f; f = f->outer)
        if (f->call == call) return std::uncaught_exceptions() > f->uncaught;
    return false;
}

// Fails `call` with `message`; a message libagent refuses (not UTF-8) falls back to a fixed one.
inline void fail_raw(AgentCall* call, const char* message) noexcept {
    AgentStatus status = agent_call_fail(call, message);
    if (status == AGENT_ERR_INVALID_UTF8 || status == AGENT_ERR_NULL)
        agent_call_fail(call, "A C++ callback threw an exception whose message is not valid UTF-8.");
}

// Runs a callback body: the thread is marked as inside a callback, and any exception fails
// `call` (when there is one) with its what(). Nothing escapes.
template <class Body>
void guarded(AgentCall* call, Body&& body) noexcept {
    FrameScope scope(call);
    try {
        body();
    } catch (const std::exception& e) {
        if (call) fail_raw(call, e.what());
    } catch (...) {
        if (call) fail_raw(call, "A C++ callback threw an exception that is not a std::exception.");
    }
}

// Moves `fn` to the heap and registers it through `reg(user_data, finalizer)`; on failure the
// library took no reference, so it is deleted here before throwing.
template <class Fn, class Register>
void install(Fn fn, Register&& reg) {
    auto owned = std::make_unique<Fn>(std::move(fn));
    AgentStatus status = reg(static_cast<void*>(owned.get()), &destroy<Fn>);
    if (status == AGENT_OK) owned.release();
    check(status);
}

}  // namespace detail

// ---- small JSON helpers ------------------------------------------------------------------------

// `text` as a JSON string literal (quotes included).
inline std::string quote(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
                out += escaped;
            } else {
                out += c;
            }
        }
    }
    out += '"';
    return out;
}

// A tool result with one text block: `{"content":[{"type":"text","text":...}],"details":{}}`
// (`"isError":true` added when `is_error`).
inline std::string text_result(std::string_view text, bool is_error = false) {
    std::string out = "{\"content\":[{\"type\":\"text\",\"text\":" + quote(text) + "}],\"details\":{}";
    if (is_error) out += ",\"isError\":true";
    return out + "}";
}

// ---- process-wide ------------------------------------------------------------------------------

// The library's version at run time, e.g. "0.1.0" (AGENT_VERSION_STRING is the header's).
inline std::string_view version() { return agent_version(); }

// Chooses the runtime before first use (see agent_runtime_configure).
inline void runtime_configure(std::uint32_t workers) { detail::check(agent_runtime_configure(workers)); }

// ---- call objects ------------------------------------------------------------------------------

// The pending answer of one callback invocation. Move-only; answer it exactly once, from any
// thread. Destroyed unanswered, it fails the call.
class Call {
public:
    Call() noexcept = default;
    explicit Call(AgentCall* raw) noexcept : raw_(raw) {}
    Call(Call&& other) noexcept
        : raw_(std::exchange(other.raw_, nullptr)), answered_(other.answered_), dropped_(other.dropped_) {}
    Call& operator=(Call&& other) noexcept {
        if (this != &other) {
            drop();
            raw_ = std::exchange(other.raw_, nullptr);
            answered_ = other.answered_;
            dropped_ = other.dropped_;
        }
        return *this;
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    ~Call() { drop(); }

    // Answers with a JSON result (throws Error: AGENT_ERR_INVALID_JSON leaves the call open;
    // AGENT_ERR_ALREADY_COMPLETED when it was answered already).
    void complete(std::string_view result_json) { settle(agent_call_complete(raw_, detail::c_str(result_json).c_str())); }
    // Answers "returns nothing" (NULL).
    void complete() { settle(agent_call_complete(raw_, nullptr)); }
    // Answers with a failure (a JavaScript throw with this message).
    void fail(std::string_view message) { settle(agent_call_fail(raw_, detail::c_str(message).c_str())); }

    // Whether the run that made this call is aborted.
    bool is_aborted() const {
        bool aborted = false;
        detail::check(agent_call_is_aborted(raw_, &aborted));
        return aborted;
    }

    // Calls `fn` once, on the runtime thread, when the run aborts (at once if it already has).
    void on_abort(std::function<void()> fn) {
        using Fn = std::function<void()>;
        detail::install(Fn(std::move(fn)), [&](void* data, AgentFinalizer fin) {
            return agent_call_on_abort(raw_, &abort_trampoline, data, fin);
        });
    }

    // Whether this object answered its call (or found it answered).
    bool answered() const noexcept { return answered_; }
    explicit operator bool() const noexcept { return raw_ != nullptr; }
    AgentCall* get() const noexcept { return raw_; }
    // Gives up ownership: the caller answers through the C API; nothing happens on destruction.
    AgentCall* release() noexcept { return std::exchange(raw_, nullptr); }

protected:
    // `dropped`: the failure message used when the object is destroyed unanswered.
    Call(AgentCall* raw, const char* dropped) noexcept : raw_(raw), dropped_(dropped) {}

    void settle(AgentStatus status) {
        if (status == AGENT_OK || status == AGENT_ERR_ALREADY_COMPLETED) answered_ = true;
        detail::check(status);
    }
    void mark_answered() noexcept { answered_ = true; }

private:
    static void abort_trampoline(void* user_data) {
        detail::guarded(nullptr, [&] { (*static_cast<std::function<void()>*>(user_data))(); });
    }

    void drop() noexcept {
        if (!raw_ || answered_) return;
        // An exception unwinding towards this call's own trampoline: it fails the call with
        // the exception's text.
        if (!detail::unwinding_to_trampoline_of(raw_)) detail::fail_raw(raw_, dropped_);
        raw_ = nullptr;
    }

    AgentCall* raw_ = nullptr;
    bool answered_ = false;
    const char* dropped_ = "agent::Call destroyed without an answer.";
};

// A tool execution's call: also reports progress.
class ToolCall : public Call {
public:
    ToolCall() noexcept = default;
    explicit ToolCall(AgentToolCall* raw) noexcept : Call(raw, "agent::ToolCall destroyed without an answer.") {}

    // Reports progress (an AgentToolResult-shaped partial result); never blocks.
    void update(std::string_view partial_result_json) {
        detail::check(agent_tool_call_update(get(), detail::c_str(partial_result_json).c_str()));
    }
};

// A stream function's call: push assistant stream events, end with a `done`/`error` event,
// `complete(final_message)` or `fail(message)`. Destroyed unanswered, it fails the stream, which
// libagent ignores when a pushed terminal event already ended it (the failure queues behind it).
class Stream : public Call {
public:
    Stream() noexcept = default;
    explicit Stream(AgentStream* raw) noexcept : Call(raw, "agent::Stream destroyed before it ended.") {}

    // Pushes one event (never blocks). Throws Error(AGENT_ERR_STREAM_CLOSED) once the agent
    // stopped consuming the stream.
    void push(std::string_view event_json) {
        AgentStatus status = agent_stream_push(get(), detail::c_str(event_json).c_str());
        if (status == AGENT_ERR_STREAM_CLOSED) mark_answered();  // nothing left to fail
        detail::check(status);
    }

    // Calls `fn` on the runtime thread each time a pushed event was fully processed (lock step).
    void on_consumed(std::function<void()> fn) {
        using Fn = std::function<void()>;
        detail::install(Fn(std::move(fn)), [&](void* data, AgentFinalizer fin) {
            return agent_stream_on_consumed(get(), &consumed_trampoline, data, fin);
        });
    }

private:
    static void consumed_trampoline(void* user_data, AgentStream*) {
        detail::guarded(nullptr, [&] { (*static_cast<std::function<void()>*>(user_data))(); });
    }
};

// ---- events ------------------------------------------------------------------------------------

// An event borrowed by a listener: valid during the listener's call only (copy what you keep).
class Event {
public:
    explicit Event(const AgentEvent* raw) noexcept : raw_(raw) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    // "agent_start", "message_update", ...
    std::string_view type() const {
        const char* type = nullptr;
        detail::check(agent_event_type(raw_, &type));
        return type;
    }
    // The event's JSON, built once per shape and shared with the other listeners.
    std::string_view json(EventShape shape = EventShape::Full) const {
        const char* json = nullptr;
        detail::check(agent_event_json(raw_, static_cast<AgentEventShape>(shape), &json));
        return json;
    }
    // For a message_update: the assistant stream event type ("text_delta", ...); else empty.
    std::string_view update_type() const {
        const char* type = nullptr;
        detail::check(agent_event_update_type(raw_, &type));
        return type ? std::string_view(type) : std::string_view();
    }
    // For a message_update carrying a *_delta: the delta text (no JSON built); else empty.
    std::string_view delta() const {
        const char* text = nullptr;
        std::size_t len = 0;
        detail::check(agent_event_delta(raw_, &text, &len));
        return text ? std::string_view(text, len) : std::string_view();
    }
    const AgentEvent* get() const noexcept { return raw_; }

private:
    const AgentEvent* raw_;
};

// A pull queue of every event of an agent as JSON (see Agent::events). Move-only; closes on
// destruction. Poll it from any thread, e.g. a frame loop with `try_next()`.
class EventQueue {
public:
    EventQueue() noexcept = default;
    explicit EventQueue(AgentEventQueue* raw) noexcept : raw_(raw) {}
    EventQueue(EventQueue&& other) noexcept
        : raw_(std::exchange(other.raw_, nullptr)), closed_(other.closed_) {}
    EventQueue& operator=(EventQueue&& other) noexcept {
        if (this != &other) {
            reset();
            raw_ = std::exchange(other.raw_, nullptr);
            closed_ = other.closed_;
        }
        return *this;
    }
    EventQueue(const EventQueue&) = delete;
    EventQueue& operator=(const EventQueue&) = delete;
    ~EventQueue() { reset(); }

    // The next event's JSON, waiting up to `timeout` (negative: forever). std::nullopt when none
    // arrived in time, or when the queue is closed (its agent was freed) and drained: `closed()`
    // tells which.
    std::optional<std::string> next(std::chrono::milliseconds timeout) {
        char* json = nullptr;
        AgentStatus status = agent_events_next(raw_, static_cast<std::int64_t>(timeout.count()), &json);
        if (status == AGENT_ERR_TIMEOUT) return std::nullopt;
        if (status == AGENT_ERR_CLOSED) {
            closed_ = true;
            return std::nullopt;
        }
        detail::check(status);
        return detail::take(json);
    }
    // Waits forever.
    std::optional<std::string> next() { return next(std::chrono::milliseconds(-1)); }
    // Never waits (for a frame loop).
    std::optional<std::string> try_next() { return next(std::chrono::milliseconds(0)); }
    // True once the agent was freed and every event was taken.
    bool closed() const noexcept { return closed_; }
    // Closes the queue now (its subscription ends).
    void close() {
        if (raw_) detail::check(agent_events_close(std::exchange(raw_, nullptr)));
    }
    AgentEventQueue* get() const noexcept { return raw_; }

private:
    void reset() noexcept {
        if (raw_) agent_events_close(std::exchange(raw_, nullptr));
    }

    AgentEventQueue* raw_ = nullptr;
    bool closed_ = false;
};

// ---- callback types and adapters ---------------------------------------------------------------

// The deferred forms every callback is stored as.
using ToolFn = std::function<void(std::string_view tool_call_id, std::string_view args_json, ToolCall call)>;
using HookFn = std::function<void(std::string_view input_json, Call call)>;
using ListenerFn = std::function<void(const Event& event, Call call)>;
using StreamFn = std::function<void(std::string_view request_json, Stream stream)>;
using PrepareArgumentsFn = std::function<std::optional<std::string>(std::string_view args_json)>;
// `status` is AGENT_OK, AGENT_ERR_RUN_FAILED (`error` says why) or AGENT_ERR_FREED.
using DoneFn = std::function<void(AgentStatus status, std::string_view error)>;

namespace detail {

// Answers `call` with what a synchronous callback returned.
template <class Result>
void answer_with(Call& call, Result&& result) {
    using R = std::decay_t<Result>;
    if constexpr (std::is_same_v<R, std::optional<std::string>>) {
        if (result)
            call.complete(*result);
        else
            call.complete();
    } else if constexpr (std::is_same_v<R, std::nullopt_t>) {
        call.complete();
    } else {
        call.complete(std::string_view(result));
    }
}

template <class F, class... Args>
void run_sync(F& f, Call& call, Args&&... args) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Args...>>) {
        f(std::forward<Args>(args)...);
        call.complete();
    } else {
        answer_with(call, f(std::forward<Args>(args)...));
    }
}

// A tool's execute: `(id, args, ToolCall)` (deferred) or `(id, args) -> std::string` (sync).
template <class F>
ToolFn to_tool_fn(F&& f) {
    if constexpr (std::is_invocable_v<std::decay_t<F>&, std::string_view, std::string_view, ToolCall>) {
        return ToolFn(std::forward<F>(f));
    } else {
        static_assert(std::is_invocable_v<std::decay_t<F>&, std::string_view, std::string_view>,
                      "a tool is callable as (id, args, agent::ToolCall) or (id, args) -> JSON string");
        return [f = std::forward<F>(f)](std::string_view id, std::string_view args, ToolCall call) mutable {
            run_sync(f, call, id, args);
        };
    }
}

// A hook: `(input, Call)` (deferred) or `(input) -> std::string | std::optional<std::string> |
// void` (sync; nullopt and void answer "returns nothing").
template <class F>
HookFn to_hook_fn(F&& f) {
    if constexpr (std::is_invocable_v<std::decay_t<F>&, std::string_view, Call>) {
        return HookFn(std::forward<F>(f));
    } else {
        static_assert(std::is_invocable_v<std::decay_t<F>&, std::string_view>,
                      "a hook is callable as (input_json, agent::Call) or (input_json) -> answer");
        return [f = std::forward<F>(f)](std::string_view input, Call call) mutable { run_sync(f, call, input); };
    }
}

// A listener: `(const Event&, Call)` (deferred) or `(const Event&)` (continues on return).
template <class F>
ListenerFn to_listener_fn(F&& f) {
    if constexpr (std::is_invocable_v<std::decay_t<F>&, const Event&, Call>) {
        return ListenerFn(std::forward<F>(f));
    } else {
        static_assert(std::is_invocable_v<std::decay_t<F>&, const Event&>,
                      "a listener is callable as (const agent::Event&, agent::Call) or (const agent::Event&)");
        return [f = std::forward<F>(f)](const Event& event, Call call) mutable {
            f(event);
            call.complete();
        };
    }
}

inline void tool_trampoline(void* user_data, const char* id, const char* args, AgentToolCall* call) {
    guarded(call, [&] { (*static_cast<ToolFn*>(user_data))(id, args, ToolCall(call)); });
}

inline void hook_trampoline(void* user_data, const char* input, AgentCall* call) {
    guarded(call, [&] { (*static_cast<HookFn*>(user_data))(input, Call(call)); });
}

inline void listener_trampoline(void* user_data, const AgentEvent* event, AgentCall* call) {
    guarded(call, [&] {
        Event view(event);
        (*static_cast<ListenerFn*>(user_data))(view, Call(call));
    });
}

inline void stream_trampoline(void* user_data, const char* request, AgentStream* stream) {
    guarded(stream, [&] { (*static_cast<StreamFn*>(user_data))(request, Stream(stream)); });
}

inline void prepare_trampoline(void* user_data, const char* args, AgentCall* call) {
    guarded(call, [&] {
        Call answer(call);
        answer_with(answer, (*static_cast<PrepareArgumentsFn*>(user_data))(args));
    });
}

// `done` has no finalizer: libagent calls it exactly once, and it is deleted after that call.
inline void done_trampoline(void* user_data, AgentStatus status, const char* error) {
    std::unique_ptr<DoneFn> fn(static_cast<DoneFn*>(user_data));
    guarded(nullptr, [&] { (*fn)(status, error ? error : ""); });
}

template <class F>
void install_hook(HookKind kind, F&& f, AgentStatus (*reg)(void*, AgentHookKind, AgentHookFn, void*, AgentFinalizer),
                  void* target) {
    install(to_hook_fn(std::forward<F>(f)), [&](void* data, AgentFinalizer fin) {
        return reg(target, static_cast<AgentHookKind>(kind), &hook_trampoline, data, fin);
    });
}

}  // namespace detail

// ---- tools -------------------------------------------------------------------------------------

// A tool: its definition JSON (`{"name", "label"?, "description"?, "parameters"?, ...}`) and its
// execute callback. Move-only; agents and options keep their own references, so a Tool may be
// destroyed once added.
class Tool {
public:
    // `execute`: `(std::string_view id, std::string_view args_json, agent::ToolCall call)`
    // answering through `call` (now or later), or `(id, args_json) -> std::string` returning the
    // AgentToolResult JSON (see agent::text_result). An exception becomes an error tool result.
    template <class F>
    Tool(std::string_view definition_json, F&& execute) {
        std::string definition = detail::c_str(definition_json);
        detail::install(detail::to_tool_fn(std::forward<F>(execute)), [&](void* data, AgentFinalizer fin) {
            return agent_tool_new(definition.c_str(), &detail::tool_trampoline, data, fin, &raw_);
        });
    }
    Tool(Tool&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    Tool& operator=(Tool&& other) noexcept {
        if (this != &other) {
            if (raw_) agent_tool_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    Tool(const Tool&) = delete;
    Tool& operator=(const Tool&) = delete;
    ~Tool() {
        if (raw_) agent_tool_free(raw_);
    }

    // The synchronous prepareArguments shim: `(args_json) -> std::optional<std::string>` (nullopt
    // keeps the arguments); an exception fails the call.
    void set_prepare_arguments(PrepareArgumentsFn prepare) {
        detail::install(std::move(prepare), [&](void* data, AgentFinalizer fin) {
            return agent_tool_set_prepare_arguments(raw_, &detail::prepare_trampoline, data, fin);
        });
    }
    void clear_prepare_arguments() { detail::check(agent_tool_set_prepare_arguments(raw_, nullptr, nullptr, nullptr)); }

    AgentTool* get() const noexcept { return raw_; }
    // Takes ownership of a raw tool reference (e.g. one of agent_coding_tools_new's).
    static Tool adopt(AgentTool* raw) noexcept { return Tool(raw); }

private:
    explicit Tool(AgentTool* raw) noexcept : raw_(raw) {}
    AgentTool* raw_ = nullptr;
};

// ---- the coding tool pack ----------------------------------------------------------------------

namespace detail {
inline std::vector<Tool> adopt_all(AgentTool** raw, size_t count) {
    std::vector<Tool> tools;
    tools.reserve(count);
    for (size_t i = 0; i < count; i++) tools.push_back(Tool::adopt(raw[i]));
    return tools;
}
}  // namespace detail

// pi-coding-agent's tools (read, write, edit, ls, find, grep, bash) for the directory `root`;
// every path they use stays inside it. `options_json`: `{"tools"?: [...], "bash"?: bool,
// "bashTimeoutMs"?: number|null}` (see agent_coding_tools_new; bash is off by default). They are
// ordinary tools: add them with Options::add_tool, alone or with your own.
inline std::vector<Tool> coding_tools(std::string_view root, std::string_view options_json = "{}") {
    AgentTool* raw[8] = {};
    size_t count = 0;
    detail::check(agent_coding_tools_new(detail::c_str(root).c_str(), detail::c_str(options_json).c_str(), nullptr,
                                         nullptr, nullptr, raw, 8, &count));
    return detail::adopt_all(raw, count);
}

// The same with a consent hook, asked before write, edit and bash change anything, with
// `{"toolCallId", "tool", "args"}`: `(input_json) -> answer` (an empty answer or "true" allows;
// `{"allow":false,"reason":"..."}` or a thrown exception refuses, and the model sees the reason)
// or `(input_json, agent::Call)` answering later.
template <class F>
std::vector<Tool> coding_tools(std::string_view root, std::string_view options_json, F&& consent) {
    AgentTool* raw[8] = {};
    size_t count = 0;
    std::string root_text = detail::c_str(root), options_text = detail::c_str(options_json);
    detail::install(detail::to_hook_fn(std::forward<F>(consent)), [&](void* data, AgentFinalizer fin) {
        return agent_coding_tools_new(root_text.c_str(), options_text.c_str(), &detail::hook_trampoline, data, fin,
                                      raw, 8, &count);
    });
    return detail::adopt_all(raw, count);
}

// ---- options -----------------------------------------------------------------------------------

// An options builder, consumed by the Agent constructor. Move-only.
class Options {
public:
    // All defaults.
    Options() { detail::check(agent_options_new(nullptr, &raw_)); }
    // `{"initialState": {...}, "steeringMode"?, ...}` (see agent_options_new).
    explicit Options(std::string_view options_json) {
        detail::check(agent_options_new(detail::c_str(options_json).c_str(), &raw_));
    }
    Options(Options&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    Options& operator=(Options&& other) noexcept {
        if (this != &other) {
            if (raw_) agent_options_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    Options(const Options&) = delete;
    Options& operator=(const Options&) = delete;
    ~Options() {
        if (raw_) agent_options_free(raw_);
    }

    Options& add_tool(const Tool& tool) {
        detail::check(agent_options_add_tool(raw_, tool.get()));
        return *this;
    }
    // The agent's stream function: `(std::string_view request_json, agent::Stream stream)`.
    Options& set_stream_fn(StreamFn fn) {
        detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
            return agent_options_set_stream_fn(raw_, &detail::stream_trampoline, data, fin);
        });
        return *this;
    }
    // The built-in scripted model (see agent_options_set_scripted_model).
    Options& set_scripted_model(std::string_view script_json) {
        detail::check(agent_options_set_scripted_model(raw_, detail::c_str(script_json).c_str()));
        return *this;
    }
    // The built-in providers: HTTP to the endpoint that `initialState.model` describes (`api`
    // "openai-completions", "anthropic-messages", "openai-responses" or "google-generative-ai",
    // `baseUrl`, `provider`, `id`). The API key is the GetApiKey hook's answer, else the provider's
    // environment variable (OPENAI_API_KEY, GEMINI_API_KEY...).
    Options& use_providers() {
        detail::check(agent_options_use_providers(raw_));
        return *this;
    }
    // A hook: `(input_json, agent::Call)` or `(input_json) -> answer` (see agent::Agent::set_hook).
    template <class F>
    Options& set_hook(HookKind kind, F&& hook) {
        detail::install_hook(
            kind, std::forward<F>(hook),
            [](void* target, AgentHookKind k, AgentHookFn fn, void* data, AgentFinalizer fin) {
                return agent_options_set_hook(static_cast<AgentOptions*>(target), k, fn, data, fin);
            },
            raw_);
        return *this;
    }

    AgentOptions* get() const noexcept { return raw_; }
    // Gives up ownership (the caller frees or consumes the raw options).
    AgentOptions* release() noexcept { return std::exchange(raw_, nullptr); }

private:
    AgentOptions* raw_ = nullptr;
};

// ---- the agent ---------------------------------------------------------------------------------

// An agent. Move-only; its destructor frees it (never blocks: a running run is cancelled and its
// `done` gets AGENT_ERR_FREED). Every method may be called from any thread.
class Agent {
public:
    // Consumes `options` (also on failure). Throws AGENT_ERR_NO_STREAM_FN without a model.
    explicit Agent(Options options) {
        AgentStatus status = agent_new(options.release(), &raw_);
        if (status == AGENT_ERR_NO_STREAM_FN)  // the reference's text names JavaScript's API
            throw Error(status,
                        "No model to talk to: call Options::set_stream_fn, set_scripted_model or use_providers "
                        "(the built-in providers, for a model with api openai-completions, anthropic-messages or "
                        "openai-responses or google-generative-ai), "
                        "or set a process-wide default with agent::set_default_stream_fn.");
        detail::check(status);
    }
    // Takes ownership of a raw handle.
    explicit Agent(AgentHandle* raw) noexcept : raw_(raw) {}
    Agent(Agent&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    Agent& operator=(Agent&& other) noexcept {
        if (this != &other) {
            if (raw_) agent_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;
    ~Agent() {
        if (raw_) agent_free(raw_);
    }

    // -- runs. The blocking forms wait until the run settled and throw Error(AGENT_ERR_RUN_FAILED)
    // when it failed (and AGENT_ERR_WOULD_DEADLOCK, before starting, inside a callback); the
    // async forms return at once and call `done` (optional) on the runtime thread. All throw
    // AGENT_ERR_BUSY while a run is active (then `done` is never called).

    // prompt(text).
    void prompt(std::string_view text) {
        detail::refuse_blocking("Agent::prompt");
        block([&](DoneFn done) { prompt_async(text, std::move(done)); });
    }
    // prompt(text, images): `images_json` is a JSON array of image blocks.
    void prompt(std::string_view text, std::string_view images_json) {
        detail::refuse_blocking("Agent::prompt");
        block([&](DoneFn done) { prompt_async(text, images_json, std::move(done)); });
    }
    // prompt(input): a JSON string, one message object, or an array of messages.
    void prompt_json(std::string_view input_json) {
        detail::refuse_blocking("Agent::prompt_json");
        block([&](DoneFn done) { prompt_json_async(input_json, std::move(done)); });
    }
    // continue().
    void continue_run() {
        detail::refuse_blocking("Agent::continue_run");
        block([&](DoneFn done) { continue_async(std::move(done)); });
    }

    void prompt_async(std::string_view text, DoneFn done = {}) {
        std::string t = detail::c_str(text);
        start(std::move(done), [&](AgentDoneFn fn, void* data) {
            return agent_prompt_text(raw_, t.c_str(), nullptr, fn, data);
        });
    }
    void prompt_async(std::string_view text, std::string_view images_json, DoneFn done = {}) {
        std::string t = detail::c_str(text), images = detail::c_str(images_json);
        start(std::move(done), [&](AgentDoneFn fn, void* data) {
            return agent_prompt_text(raw_, t.c_str(), images.c_str(), fn, data);
        });
    }
    void prompt_json_async(std::string_view input_json, DoneFn done = {}) {
        std::string input = detail::c_str(input_json);
        start(std::move(done), [&](AgentDoneFn fn, void* data) { return agent_prompt(raw_, input.c_str(), fn, data); });
    }
    void continue_async(DoneFn done = {}) {
        start(std::move(done), [&](AgentDoneFn fn, void* data) { return agent_continue(raw_, fn, data); });
    }

    // Waits until the active run finished its cleanup; false when `timeout` ran out (nullopt:
    // forever).
    bool wait_for_idle(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
        detail::refuse_blocking("Agent::wait_for_idle");
        AgentStatus status = agent_wait_for_idle(raw_, timeout ? static_cast<std::int64_t>(timeout->count()) : -1);
        if (status == AGENT_ERR_TIMEOUT) return false;
        detail::check(status);
        return true;
    }

    void steer(std::string_view message_json) { detail::check(agent_steer(raw_, detail::c_str(message_json).c_str())); }
    void follow_up(std::string_view message_json) {
        detail::check(agent_follow_up(raw_, detail::c_str(message_json).c_str()));
    }
    void abort() { detail::check(agent_abort(raw_)); }
    void reset() { detail::check(agent_reset(raw_)); }

    // -- state
    std::string state() const {
        char* json = nullptr;
        detail::check(agent_get_state(raw_, &json));
        return detail::take(json);
    }
    void set_messages(std::string_view messages_json) {
        detail::check(agent_set_messages(raw_, detail::c_str(messages_json).c_str()));
    }
    void set_tools(std::initializer_list<std::reference_wrapper<const Tool>> tools) {
        set_tools(std::vector<std::reference_wrapper<const Tool>>(tools));
    }
    void set_tools(const std::vector<std::reference_wrapper<const Tool>>& tools) {
        std::vector<AgentTool*> raw;
        raw.reserve(tools.size());
        for (const Tool& tool : tools) raw.push_back(tool.get());
        detail::check(agent_set_tools(raw_, raw.data(), raw.size()));
    }
    void configure(std::string_view patch_json) {
        detail::check(agent_configure(raw_, detail::c_str(patch_json).c_str()));
    }

    // -- queues
    std::string peek_queued_messages() const {
        char* json = nullptr;
        detail::check(agent_peek_queued_messages(raw_, &json));
        return detail::take(json);
    }
    bool has_queued_messages() const {
        bool has = false;
        detail::check(agent_has_queued_messages(raw_, &has));
        return has;
    }
    void clear_steering_queue() { detail::check(agent_clear_steering_queue(raw_)); }
    void clear_follow_up_queue() { detail::check(agent_clear_follow_up_queue(raw_)); }
    void clear_all_queues() { detail::check(agent_clear_all_queues(raw_)); }

    // -- host functions
    // A hook: deferred `(std::string_view input_json, agent::Call call)`, or synchronous
    // `(input_json) -> std::string | std::optional<std::string> | void` (nullopt/void: "returns
    // nothing"). Captured when the next run starts.
    template <class F>
    void set_hook(HookKind kind, F&& hook) {
        detail::install_hook(
            kind, std::forward<F>(hook),
            [](void* target, AgentHookKind k, AgentHookFn fn, void* data, AgentFinalizer fin) {
                return agent_set_hook(static_cast<AgentHandle*>(target), k, fn, data, fin);
            },
            raw_);
    }
    void remove_hook(HookKind kind) {
        detail::check(agent_set_hook(raw_, static_cast<AgentHookKind>(kind), nullptr, nullptr, nullptr));
    }
    void set_stream_fn(StreamFn fn) {
        detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
            return agent_set_stream_fn(raw_, &detail::stream_trampoline, data, fin);
        });
    }
    void set_scripted_model(std::string_view script_json) {
        detail::check(agent_set_scripted_model(raw_, detail::c_str(script_json).c_str()));
    }
    // The built-in providers from the next run on (see Options::use_providers).
    void use_providers() { detail::check(agent_use_providers(raw_)); }

    // -- events
    // A listener: `(const agent::Event&)` (continues when it returns) or deferred
    // `(const agent::Event&, agent::Call call)` (the loop waits until `call` is answered).
    // Returns the subscription id for `unsubscribe`.
    template <class F>
    std::uint64_t subscribe(F&& listener) {
        std::uint64_t id = 0;
        detail::install(detail::to_listener_fn(std::forward<F>(listener)), [&](void* data, AgentFinalizer fin) {
            return agent_subscribe(raw_, &detail::listener_trampoline, data, fin, &id);
        });
        return id;
    }
    void unsubscribe(std::uint64_t id) { detail::check(agent_unsubscribe(raw_, id)); }

    // A pull queue of every event (`{"capacity": N, "shape": "full"|"lean"}`; empty = defaults).
    EventQueue events(std::string_view options_json = {}) {
        std::string options = detail::c_str(options_json);
        AgentEventQueue* queue = nullptr;
        detail::check(agent_events_open(raw_, options_json.empty() ? nullptr : options.c_str(), &queue));
        return EventQueue(queue);
    }

    AgentHandle* get() const noexcept { return raw_; }
    AgentHandle* release() noexcept { return std::exchange(raw_, nullptr); }

private:
    // Starts a run with an optional `done`, deleting it when the run did not start. `done` gets
    // how the run ended: a run that settled as the reference's promise resolves may still have
    // failed or been aborted (agent_last_run_outcome, read inside `done`, where it is this run's).
    template <class Starter>
    void start(DoneFn done, Starter&& starter) {
        if (!done) {
            detail::check(starter(nullptr, nullptr));
            return;
        }
        auto owned = std::make_unique<DoneFn>([raw = raw_, done = std::move(done)](AgentStatus status,
                                                                                   std::string_view error) {
            AgentStatus ended = AGENT_OK;
            char* message = nullptr;
            if (status != AGENT_OK || agent_last_run_outcome(raw, &ended, &message) != AGENT_OK) {
                done(status, error);
                return;
            }
            std::string text = detail::take(message);
            done(ended, text);
        });
        AgentStatus status = starter(&detail::done_trampoline, owned.get());
        if (status == AGENT_OK) owned.release();
        detail::check(status);
    }

    // Runs `start_with(done)` and waits until the run settled; rethrows its failure.
    template <class StartWith>
    void block(StartWith&& start_with) {
        struct Outcome {
            std::mutex mutex;
            bool settled = false;
            AgentStatus status = AGENT_OK;
            std::string error;
        };
        auto outcome = std::make_shared<Outcome>();
        start_with([outcome](AgentStatus status, std::string_view error) {
            std::lock_guard<std::mutex> lock(outcome->mutex);
            outcome->settled = true;
            outcome->status = status;
            outcome->error = std::string(error);
        });
        detail::check(agent_wait_for_idle(raw_, -1));
        std::lock_guard<std::mutex> lock(outcome->mutex);
        // `done` runs before agent_wait_for_idle returns.
        if (outcome->settled && outcome->status != AGENT_OK) throw Error(outcome->status, outcome->error);
    }

    AgentHandle* raw_ = nullptr;
};

// ---- process-wide stream function --------------------------------------------------------------

// Sets the process-wide default stream function (captured by agents built afterwards).
inline void set_default_stream_fn(StreamFn fn) {
    detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
        return agent_set_default_stream_fn(&detail::stream_trampoline, data, fin);
    });
}
inline void clear_default_stream_fn() { detail::check(agent_set_default_stream_fn(nullptr, nullptr, nullptr)); }
inline void set_default_scripted_model(std::string_view script_json) {
    detail::check(agent_set_default_scripted_model(detail::c_str(script_json).c_str()));
}

}  // namespace agent

#endif  // LIBAGENT_AGENT_HPP

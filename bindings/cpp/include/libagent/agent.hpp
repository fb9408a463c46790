// libagent for C++17: a header-only binding of the C ABI (agent.h).
//
//   #include <libagent/agent.hpp>        // CMake: target_link_libraries(app PRIVATE libagent::cpp)
//
//   agent::Options options(R"({"initialState":{"systemPrompt":"Be brief."}})");
//   options.set_scripted_model(R"([{"content":[{"type":"text","text":"Hi!"}]}])");
//   agent::Agent bot(std::move(options));
//   bot.subscribe([](const agent::Event& e) {      // only the answer's text, not tool arguments
//       if (e.update_type() == "text_delta") std::cout << e.delta();
//   });
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
// Without exceptions (`-fno-exceptions`, as Unreal and most engines build; or define
// LIBAGENT_NO_EXCEPTIONS to choose this mode with exceptions on): every call that would throw
// returns an `agent::Result<T>` instead (`agent::Result<void>` for void ones): `if (!r)` /
// `r.ok()`, then `r.value()` (or `*r`, `r->`), or `r.error()`, the `agent::Error` the other mode
// throws. The constructors that can fail have factories returning a Result (`Options::create`,
// `Agent::create`, `Tool::create`; they exist in both modes), the Options setters return
// `Result<void>` instead of `Options&`, and `Event`'s accessors give an empty view for an invalid
// event. A callback answers its call through `complete` / `fail`, or by returning its answer; a
// synchronous answer libagent refuses (malformed JSON) fails the call with the refusal's text.
//
//   auto options = agent::Options::create(R"({"initialState":{"systemPrompt":"Be brief."}})");
//   if (!options) return report(options.error());          // .status(), .what()
//   auto bot = agent::Agent::create(std::move(*options));
//   if (auto run = bot->prompt("hello"); !run) report(run.error());
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
#include <cstdlib>
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

// Whether this translation unit can throw; LIBAGENT_NO_EXCEPTIONS (set by the host, or here
// when exceptions are off) selects the result-returning mode described at the top.
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define LIBAGENT_HAS_EXCEPTIONS_ 1
#else
#define LIBAGENT_HAS_EXCEPTIONS_ 0
#endif
#if !LIBAGENT_HAS_EXCEPTIONS_ && !defined(LIBAGENT_NO_EXCEPTIONS)
#define LIBAGENT_NO_EXCEPTIONS 1
#endif

namespace detail {
[[noreturn]] inline void unchecked_failure(const Error& error) noexcept {
    std::fprintf(stderr, "libagent: value() of a failed agent::Result: %s\n", error.what());
    std::abort();
}
}  // namespace detail

// A value or the Error a call failed with (the result-returning mode; usable in both). Reading
// the value of a failed Result aborts the program: check `ok()` first.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : value_(std::move(value)) {}
    Result(Error error) : error_(std::move(error)) {}

    bool ok() const noexcept { return value_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    // AGENT_OK, or the failure's AGENT_ERR_* code.
    AgentStatus status() const noexcept { return ok() ? AGENT_OK : error_->status(); }
    // The failure (only when !ok()).
    const Error& error() const noexcept { return *error_; }

    T& value() & noexcept { return checked(), *value_; }
    const T& value() const& noexcept { return checked(), *value_; }
    T&& value() && noexcept { return checked(), std::move(*value_); }
    T& operator*() & noexcept { return value(); }
    T&& operator*() && noexcept { return std::move(*this).value(); }
    T* operator->() noexcept { return &value(); }

private:
    void checked() const noexcept {
        if (!value_) detail::unchecked_failure(*error_);
    }
    std::optional<T> value_;
    std::optional<Error> error_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() noexcept = default;
    Result(Error error) : error_(std::move(error)) {}

    bool ok() const noexcept { return !error_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    AgentStatus status() const noexcept { return ok() ? AGENT_OK : error_->status(); }
    const Error& error() const noexcept { return *error_; }

private:
    std::optional<Error> error_;
};

// What a fallible call returns: T (throwing Error on failure), or Result<T> without exceptions.
#ifdef LIBAGENT_NO_EXCEPTIONS
template <class T>
using Returned = Result<T>;
// Fails the enclosing function with an Error.
#define LIBAGENT_FAIL_(status, message) return ::agent::Error((status), (message))
// Fails the enclosing function when a C call failed.
#define LIBAGENT_CHECK_(expr)                                                                    \
    do {                                                                                         \
        AgentStatus libagent_status_ = (expr);                                                   \
        if (libagent_status_ != AGENT_OK) return ::agent::Error(libagent_status_, agent_last_error()); \
    } while (0)
// Fails the enclosing function when a Returned<...> of the binding failed.
#define LIBAGENT_TRY_(expr)                                                \
    do {                                                                   \
        auto libagent_result_ = (expr);                                    \
        if (!libagent_result_) return libagent_result_.error();            \
    } while (0)
#define LIBAGENT_OK_ return {}
#else
template <class T>
using Returned = T;
#define LIBAGENT_FAIL_(status, message) throw ::agent::Error((status), (message))
#define LIBAGENT_CHECK_(expr) ::agent::detail::check(expr)
#define LIBAGENT_TRY_(expr) (expr)
#define LIBAGENT_OK_ return
#endif
// `std::string var` = a NUL-terminated copy of a string argument; one with a NUL byte fails.
#define LIBAGENT_C_STR_(var, text)                                                                        \
    if ((text).find('\0') != std::string_view::npos)                                                      \
        LIBAGENT_FAIL_(AGENT_ERR_INVALID_ARGUMENT, "A string passed to libagent contains a NUL byte."); \
    std::string var(text)

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

#ifndef LIBAGENT_NO_EXCEPTIONS
inline void check(AgentStatus status) {
    if (status != AGENT_OK) throw Error(status, agent_last_error());
}
#endif

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

inline Returned<void> refuse_blocking(const char* what) {
    if (in_callback())
        LIBAGENT_FAIL_(AGENT_ERR_WOULD_DEADLOCK,
                       std::string(what) + " was called inside a libagent callback (the runtime thread), where it "
                                           "could never finish.");
    LIBAGENT_OK_;
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
#if LIBAGENT_HAS_EXCEPTIONS_
    try {
        body();
    } catch (const std::exception& e) {
        if (call) fail_raw(call, e.what());
    } catch (...) {
        if (call) fail_raw(call, "A C++ callback threw an exception that is not a std::exception.");
    }
#else
    body();
#endif
}

// Moves `fn` to the heap and registers it through `reg(user_data, finalizer)`; on failure the
// library took no reference, so it is deleted here before failing.
template <class Fn, class Register>
Returned<void> install(Fn fn, Register&& reg) {
    auto owned = std::make_unique<Fn>(std::move(fn));
    AgentStatus status = reg(static_cast<void*>(owned.get()), &destroy<Fn>);
    if (status == AGENT_OK) owned.release();
    LIBAGENT_CHECK_(status);
    LIBAGENT_OK_;
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
inline Returned<void> runtime_configure(std::uint32_t workers) {
    LIBAGENT_CHECK_(agent_runtime_configure(workers));
    LIBAGENT_OK_;
}

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

    // Answers with a JSON result (fails with Error: AGENT_ERR_INVALID_JSON leaves the call open;
    // AGENT_ERR_ALREADY_COMPLETED when it was answered already).
    Returned<void> complete(std::string_view result_json) {
        LIBAGENT_C_STR_(result, result_json);
        return settle(agent_call_complete(raw_, result.c_str()));
    }
    // Answers "returns nothing" (NULL).
    Returned<void> complete() { return settle(agent_call_complete(raw_, nullptr)); }
    // Answers with a failure (a JavaScript throw with this message).
    Returned<void> fail(std::string_view message) {
        LIBAGENT_C_STR_(text, message);
        return settle(agent_call_fail(raw_, text.c_str()));
    }

    // Whether the run that made this call is aborted.
    Returned<bool> is_aborted() const {
        bool aborted = false;
        LIBAGENT_CHECK_(agent_call_is_aborted(raw_, &aborted));
        return aborted;
    }

    // Calls `fn` once, on the runtime thread, when the run aborts (at once if it already has).
    Returned<void> on_abort(std::function<void()> fn) {
        using Fn = std::function<void()>;
        return detail::install(Fn(std::move(fn)), [&](void* data, AgentFinalizer fin) {
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

    Returned<void> settle(AgentStatus status) {
        if (status == AGENT_OK || status == AGENT_ERR_ALREADY_COMPLETED) answered_ = true;
        LIBAGENT_CHECK_(status);
        LIBAGENT_OK_;
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
    Returned<void> update(std::string_view partial_result_json) {
        LIBAGENT_C_STR_(partial, partial_result_json);
        LIBAGENT_CHECK_(agent_tool_call_update(get(), partial.c_str()));
        LIBAGENT_OK_;
    }
};

// A stream function's call: push assistant stream events, end with a `done`/`error` event,
// `complete(final_message)` or `fail(message)`. Destroyed unanswered, it fails the stream, which
// libagent ignores when a pushed terminal event already ended it (the failure queues behind it).
class Stream : public Call {
public:
    Stream() noexcept = default;
    explicit Stream(AgentStream* raw) noexcept : Call(raw, "agent::Stream destroyed before it ended.") {}

    // Pushes one event (never blocks). Fails with Error(AGENT_ERR_STREAM_CLOSED) once the agent
    // stopped consuming the stream.
    Returned<void> push(std::string_view event_json) {
        LIBAGENT_C_STR_(event, event_json);
        AgentStatus status = agent_stream_push(get(), event.c_str());
        if (status == AGENT_ERR_STREAM_CLOSED) mark_answered();  // nothing left to fail
        LIBAGENT_CHECK_(status);
        LIBAGENT_OK_;
    }

    // Calls `fn` on the runtime thread each time a pushed event was fully processed (lock step).
    Returned<void> on_consumed(std::function<void()> fn) {
        using Fn = std::function<void()>;
        return detail::install(Fn(std::move(fn)), [&](void* data, AgentFinalizer fin) {
            return agent_stream_on_consumed(get(), &consumed_trampoline, data, fin);
        });
    }

private:
    static void consumed_trampoline(void* user_data, AgentStream*) {
        detail::guarded(nullptr, [&] { (*static_cast<std::function<void()>*>(user_data))(); });
    }
};

// ---- events ------------------------------------------------------------------------------------

namespace detail {
// Event accessors fail only for an invalid event, never one the binding passes: they throw
// then, or, without exceptions, give an empty view.
inline bool event_ok(AgentStatus status) {
#ifdef LIBAGENT_NO_EXCEPTIONS
    return status == AGENT_OK;
#else
    check(status);
    return true;
#endif
}
}  // namespace detail

// An event borrowed by a listener: valid during the listener's call only (copy what you keep).
class Event {
public:
    explicit Event(const AgentEvent* raw) noexcept : raw_(raw) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    // "agent_start", "message_update", ...
    std::string_view type() const {
        const char* type = nullptr;
        if (!detail::event_ok(agent_event_type(raw_, &type)) || !type) return {};
        return type;
    }
    // The event's JSON, built once per shape and shared with the other listeners.
    std::string_view json(EventShape shape = EventShape::Full) const {
        const char* json = nullptr;
        if (!detail::event_ok(agent_event_json(raw_, static_cast<AgentEventShape>(shape), &json)) || !json) return {};
        return json;
    }
    // For a message_update: the assistant stream event type ("text_delta", ...); else empty.
    std::string_view update_type() const {
        const char* type = nullptr;
        if (!detail::event_ok(agent_event_update_type(raw_, &type))) return {};
        return type ? std::string_view(type) : std::string_view();
    }
    // For a message_update carrying a *_delta: the delta text (no JSON built); else empty.
    std::string_view delta() const {
        const char* text = nullptr;
        std::size_t len = 0;
        if (!detail::event_ok(agent_event_delta(raw_, &text, &len))) return {};
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
    Returned<std::optional<std::string>> next(std::chrono::milliseconds timeout) {
        char* json = nullptr;
        AgentStatus status = agent_events_next(raw_, static_cast<std::int64_t>(timeout.count()), &json);
        if (status == AGENT_ERR_TIMEOUT) return std::optional<std::string>();
        if (status == AGENT_ERR_CLOSED) {
            closed_ = true;
            return std::optional<std::string>();
        }
        LIBAGENT_CHECK_(status);
        return std::optional<std::string>(detail::take(json));
    }
    // Waits forever.
    Returned<std::optional<std::string>> next() { return next(std::chrono::milliseconds(-1)); }
    // Never waits (for a frame loop).
    Returned<std::optional<std::string>> try_next() { return next(std::chrono::milliseconds(0)); }
    // True once the agent was freed and every event was taken.
    bool closed() const noexcept { return closed_; }
    // Closes the queue now (its subscription ends).
    Returned<void> close() {
        if (raw_) LIBAGENT_CHECK_(agent_events_close(std::exchange(raw_, nullptr)));
        LIBAGENT_OK_;
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

// Answers `call` (`answer` is one of its complete calls). Without exceptions, an answer libagent
// refused (e.g. malformed JSON) fails the call with the refusal's text, as the thrown Error would.
#ifdef LIBAGENT_NO_EXCEPTIONS
inline void settle_with(Call& call, Result<void> answered) {
    if (!answered) fail_raw(call.get(), answered.error().what());
}
#define LIBAGENT_SETTLE_(call, answer) ::agent::detail::settle_with((call), (answer))
#else
#define LIBAGENT_SETTLE_(call, answer) (answer)
#endif

// Answers `call` with what a synchronous callback returned.
template <class Answer>
void answer_with(Call& call, Answer&& result) {
    using R = std::decay_t<Answer>;
    if constexpr (std::is_same_v<R, std::optional<std::string>>) {
        if (result)
            LIBAGENT_SETTLE_(call, call.complete(*result));
        else
            LIBAGENT_SETTLE_(call, call.complete());
    } else if constexpr (std::is_same_v<R, std::nullopt_t>) {
        LIBAGENT_SETTLE_(call, call.complete());
    } else {
        LIBAGENT_SETTLE_(call, call.complete(std::string_view(result)));
    }
}

template <class F, class... Args>
void run_sync(F& f, Call& call, Args&&... args) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Args...>>) {
        f(std::forward<Args>(args)...);
        LIBAGENT_SETTLE_(call, call.complete());
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
            LIBAGENT_SETTLE_(call, call.complete());
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
Returned<void> install_hook(HookKind kind, F&& f,
                            AgentStatus (*reg)(void*, AgentHookKind, AgentHookFn, void*, AgentFinalizer), void* target) {
    return install(to_hook_fn(std::forward<F>(f)), [&](void* data, AgentFinalizer fin) {
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
    static Returned<Tool> create(std::string_view definition_json, F&& execute) {
        LIBAGENT_C_STR_(definition, definition_json);
        AgentTool* raw = nullptr;
        LIBAGENT_TRY_(detail::install(detail::to_tool_fn(std::forward<F>(execute)), [&](void* data, AgentFinalizer fin) {
            return agent_tool_new(definition.c_str(), &detail::tool_trampoline, data, fin, &raw);
        }));
        return Tool(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    template <class F>
    Tool(std::string_view definition_json, F&& execute) : Tool(create(definition_json, std::forward<F>(execute))) {}
#endif
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
    Returned<void> set_prepare_arguments(PrepareArgumentsFn prepare) {
        return detail::install(std::move(prepare), [&](void* data, AgentFinalizer fin) {
            return agent_tool_set_prepare_arguments(raw_, &detail::prepare_trampoline, data, fin);
        });
    }
    Returned<void> clear_prepare_arguments() {
        LIBAGENT_CHECK_(agent_tool_set_prepare_arguments(raw_, nullptr, nullptr, nullptr));
        LIBAGENT_OK_;
    }

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
inline Returned<std::vector<Tool>> coding_tools(std::string_view root, std::string_view options_json = "{}") {
    AgentTool* raw[8] = {};
    size_t count = 0;
    LIBAGENT_C_STR_(root_text, root);
    LIBAGENT_C_STR_(options_text, options_json);
    LIBAGENT_CHECK_(
        agent_coding_tools_new(root_text.c_str(), options_text.c_str(), nullptr, nullptr, nullptr, raw, 8, &count));
    return detail::adopt_all(raw, count);
}

// The same with a consent hook, asked before write, edit and bash change anything, with
// `{"toolCallId", "tool", "args"}`: `(input_json) -> answer` (an empty answer or "true" allows;
// `{"allow":false,"reason":"..."}` or a thrown exception refuses, and the model sees the reason)
// or `(input_json, agent::Call)` answering later.
template <class F>
Returned<std::vector<Tool>> coding_tools(std::string_view root, std::string_view options_json, F&& consent) {
    AgentTool* raw[8] = {};
    size_t count = 0;
    LIBAGENT_C_STR_(root_text, root);
    LIBAGENT_C_STR_(options_text, options_json);
    LIBAGENT_TRY_(detail::install(detail::to_hook_fn(std::forward<F>(consent)), [&](void* data, AgentFinalizer fin) {
        return agent_coding_tools_new(root_text.c_str(), options_text.c_str(), &detail::hook_trampoline, data, fin,
                                      raw, 8, &count);
    }));
    return detail::adopt_all(raw, count);
}

// ---- options -----------------------------------------------------------------------------------

// An options builder, consumed by the Agent constructor. Move-only. Without exceptions the
// setters return Result<void> (no chaining).
#ifdef LIBAGENT_NO_EXCEPTIONS
#define LIBAGENT_SELF_ Result<void>
#define LIBAGENT_RETURN_SELF_ return {}
#else
#define LIBAGENT_SELF_ Options&
#define LIBAGENT_RETURN_SELF_ return *this
#endif
class Options {
public:
    // All defaults (without exceptions, allocation failure leaves it empty: every use then fails).
    Options() {
        AgentStatus status = agent_options_new(nullptr, &raw_);
#ifndef LIBAGENT_NO_EXCEPTIONS
        detail::check(status);
#else
        (void)status;
#endif
    }
    // `{"initialState": {...}, "steeringMode"?, ...}` (see agent_options_new).
    static Returned<Options> create(std::string_view options_json) {
        LIBAGENT_C_STR_(text, options_json);
        AgentOptions* raw = nullptr;
        LIBAGENT_CHECK_(agent_options_new(text.c_str(), &raw));
        return Options(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    explicit Options(std::string_view options_json) : Options(create(options_json)) {}
#endif
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

    LIBAGENT_SELF_ add_tool(const Tool& tool) {
        LIBAGENT_CHECK_(agent_options_add_tool(raw_, tool.get()));
        LIBAGENT_RETURN_SELF_;
    }
    // The agent's stream function: `(std::string_view request_json, agent::Stream stream)`.
    LIBAGENT_SELF_ set_stream_fn(StreamFn fn) {
        LIBAGENT_TRY_(detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
            return agent_options_set_stream_fn(raw_, &detail::stream_trampoline, data, fin);
        }));
        LIBAGENT_RETURN_SELF_;
    }
    // The built-in scripted model (see agent_options_set_scripted_model).
    LIBAGENT_SELF_ set_scripted_model(std::string_view script_json) {
        LIBAGENT_C_STR_(script, script_json);
        LIBAGENT_CHECK_(agent_options_set_scripted_model(raw_, script.c_str()));
        LIBAGENT_RETURN_SELF_;
    }
    // The built-in providers: HTTP to the endpoint that `initialState.model` describes (`api`
    // "openai-completions", "anthropic-messages", "openai-responses" or "google-generative-ai",
    // `baseUrl`, `provider`, `id`). The API key is the GetApiKey hook's answer, else the provider's
    // environment variable (OPENAI_API_KEY, GEMINI_API_KEY...).
    LIBAGENT_SELF_ use_providers() {
        LIBAGENT_CHECK_(agent_options_use_providers(raw_));
        LIBAGENT_RETURN_SELF_;
    }
    // A hook: `(input_json, agent::Call)` or `(input_json) -> answer` (see agent::Agent::set_hook).
    template <class F>
    LIBAGENT_SELF_ set_hook(HookKind kind, F&& hook) {
        LIBAGENT_TRY_(detail::install_hook(
            kind, std::forward<F>(hook),
            [](void* target, AgentHookKind k, AgentHookFn fn, void* data, AgentFinalizer fin) {
                return agent_options_set_hook(static_cast<AgentOptions*>(target), k, fn, data, fin);
            },
            raw_));
        LIBAGENT_RETURN_SELF_;
    }

    AgentOptions* get() const noexcept { return raw_; }
    // Gives up ownership (the caller frees or consumes the raw options).
    AgentOptions* release() noexcept { return std::exchange(raw_, nullptr); }

private:
    explicit Options(AgentOptions* raw) noexcept : raw_(raw) {}
    AgentOptions* raw_ = nullptr;
};
#undef LIBAGENT_SELF_
#undef LIBAGENT_RETURN_SELF_

// ---- the agent ---------------------------------------------------------------------------------

// An agent. Move-only; its destructor frees it (never blocks: a running run is cancelled and its
// `done` gets AGENT_ERR_FREED). Every method may be called from any thread.
class Agent {
public:
    // Consumes `options` (also on failure). Fails with AGENT_ERR_NO_STREAM_FN without a model.
    static Returned<Agent> create(Options options) {
        AgentHandle* raw = nullptr;
        AgentStatus status = agent_new(options.release(), &raw);
        if (status == AGENT_ERR_NO_STREAM_FN)  // the reference's text names JavaScript's API
            LIBAGENT_FAIL_(status,
                           "No model to talk to: call Options::set_stream_fn, set_scripted_model or use_providers "
                           "(the built-in providers, for a model with api openai-completions, anthropic-messages, "
                           "openai-responses or google-generative-ai), "
                           "or set a process-wide default with agent::set_default_stream_fn.");
        LIBAGENT_CHECK_(status);
        return Agent(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    explicit Agent(Options options) : Agent(create(std::move(options))) {}
#endif
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
    Returned<void> prompt(std::string_view text) {
        LIBAGENT_TRY_(detail::refuse_blocking("Agent::prompt"));
        return block([&](DoneFn done) { return prompt_async(text, std::move(done)); });
    }
    // prompt(text, images): `images_json` is a JSON array of image blocks.
    Returned<void> prompt(std::string_view text, std::string_view images_json) {
        LIBAGENT_TRY_(detail::refuse_blocking("Agent::prompt"));
        return block([&](DoneFn done) { return prompt_async(text, images_json, std::move(done)); });
    }
    // prompt(input): a JSON string, one message object, or an array of messages.
    Returned<void> prompt_json(std::string_view input_json) {
        LIBAGENT_TRY_(detail::refuse_blocking("Agent::prompt_json"));
        return block([&](DoneFn done) { return prompt_json_async(input_json, std::move(done)); });
    }
    // continue().
    Returned<void> continue_run() {
        LIBAGENT_TRY_(detail::refuse_blocking("Agent::continue_run"));
        return block([&](DoneFn done) { return continue_async(std::move(done)); });
    }

    Returned<void> prompt_async(std::string_view text, DoneFn done = {}) {
        LIBAGENT_C_STR_(t, text);
        return start(std::move(done), [&](AgentDoneFn fn, void* data) {
            return agent_prompt_text(raw_, t.c_str(), nullptr, fn, data);
        });
    }
    Returned<void> prompt_async(std::string_view text, std::string_view images_json, DoneFn done = {}) {
        LIBAGENT_C_STR_(t, text);
        LIBAGENT_C_STR_(images, images_json);
        return start(std::move(done), [&](AgentDoneFn fn, void* data) {
            return agent_prompt_text(raw_, t.c_str(), images.c_str(), fn, data);
        });
    }
    Returned<void> prompt_json_async(std::string_view input_json, DoneFn done = {}) {
        LIBAGENT_C_STR_(input, input_json);
        return start(std::move(done),
                     [&](AgentDoneFn fn, void* data) { return agent_prompt(raw_, input.c_str(), fn, data); });
    }
    Returned<void> continue_async(DoneFn done = {}) {
        return start(std::move(done), [&](AgentDoneFn fn, void* data) { return agent_continue(raw_, fn, data); });
    }

    // Waits until the active run finished its cleanup; false when `timeout` ran out (nullopt:
    // forever).
    Returned<bool> wait_for_idle(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
        LIBAGENT_TRY_(detail::refuse_blocking("Agent::wait_for_idle"));
        AgentStatus status = agent_wait_for_idle(raw_, timeout ? static_cast<std::int64_t>(timeout->count()) : -1);
        if (status == AGENT_ERR_TIMEOUT) return false;
        LIBAGENT_CHECK_(status);
        return true;
    }

    Returned<void> steer(std::string_view message_json) {
        LIBAGENT_C_STR_(message, message_json);
        LIBAGENT_CHECK_(agent_steer(raw_, message.c_str()));
        LIBAGENT_OK_;
    }
    Returned<void> follow_up(std::string_view message_json) {
        LIBAGENT_C_STR_(message, message_json);
        LIBAGENT_CHECK_(agent_follow_up(raw_, message.c_str()));
        LIBAGENT_OK_;
    }
    Returned<void> abort() {
        LIBAGENT_CHECK_(agent_abort(raw_));
        LIBAGENT_OK_;
    }
    Returned<void> reset() {
        LIBAGENT_CHECK_(agent_reset(raw_));
        LIBAGENT_OK_;
    }

    // -- state
    Returned<std::string> state() const {
        char* json = nullptr;
        LIBAGENT_CHECK_(agent_get_state(raw_, &json));
        return detail::take(json);
    }
    Returned<void> set_messages(std::string_view messages_json) {
        LIBAGENT_C_STR_(messages, messages_json);
        LIBAGENT_CHECK_(agent_set_messages(raw_, messages.c_str()));
        LIBAGENT_OK_;
    }
    Returned<void> set_tools(std::initializer_list<std::reference_wrapper<const Tool>> tools) {
        return set_tools(std::vector<std::reference_wrapper<const Tool>>(tools));
    }
    Returned<void> set_tools(const std::vector<std::reference_wrapper<const Tool>>& tools) {
        std::vector<AgentTool*> raw;
        raw.reserve(tools.size());
        for (const Tool& tool : tools) raw.push_back(tool.get());
        LIBAGENT_CHECK_(agent_set_tools(raw_, raw.data(), raw.size()));
        LIBAGENT_OK_;
    }
    Returned<void> configure(std::string_view patch_json) {
        LIBAGENT_C_STR_(patch, patch_json);
        LIBAGENT_CHECK_(agent_configure(raw_, patch.c_str()));
        LIBAGENT_OK_;
    }

    // -- queues
    Returned<std::string> peek_queued_messages() const {
        char* json = nullptr;
        LIBAGENT_CHECK_(agent_peek_queued_messages(raw_, &json));
        return detail::take(json);
    }
    Returned<bool> has_queued_messages() const {
        bool has = false;
        LIBAGENT_CHECK_(agent_has_queued_messages(raw_, &has));
        return has;
    }
    Returned<void> clear_steering_queue() {
        LIBAGENT_CHECK_(agent_clear_steering_queue(raw_));
        LIBAGENT_OK_;
    }
    Returned<void> clear_follow_up_queue() {
        LIBAGENT_CHECK_(agent_clear_follow_up_queue(raw_));
        LIBAGENT_OK_;
    }
    Returned<void> clear_all_queues() {
        LIBAGENT_CHECK_(agent_clear_all_queues(raw_));
        LIBAGENT_OK_;
    }

    // -- host functions
    // A hook: deferred `(std::string_view input_json, agent::Call call)`, or synchronous
    // `(input_json) -> std::string | std::optional<std::string> | void` (nullopt/void: "returns
    // nothing"). Captured when the next run starts.
    template <class F>
    Returned<void> set_hook(HookKind kind, F&& hook) {
        return detail::install_hook(
            kind, std::forward<F>(hook),
            [](void* target, AgentHookKind k, AgentHookFn fn, void* data, AgentFinalizer fin) {
                return agent_set_hook(static_cast<AgentHandle*>(target), k, fn, data, fin);
            },
            raw_);
    }
    Returned<void> remove_hook(HookKind kind) {
        LIBAGENT_CHECK_(agent_set_hook(raw_, static_cast<AgentHookKind>(kind), nullptr, nullptr, nullptr));
        LIBAGENT_OK_;
    }
    Returned<void> set_stream_fn(StreamFn fn) {
        return detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
            return agent_set_stream_fn(raw_, &detail::stream_trampoline, data, fin);
        });
    }
    Returned<void> set_scripted_model(std::string_view script_json) {
        LIBAGENT_C_STR_(script, script_json);
        LIBAGENT_CHECK_(agent_set_scripted_model(raw_, script.c_str()));
        LIBAGENT_OK_;
    }
    // The built-in providers from the next run on (see Options::use_providers).
    Returned<void> use_providers() {
        LIBAGENT_CHECK_(agent_use_providers(raw_));
        LIBAGENT_OK_;
    }

    // -- events
    // A listener: `(const agent::Event&)` (continues when it returns) or deferred
    // `(const agent::Event&, agent::Call call)` (the loop waits until `call` is answered).
    // Returns the subscription id for `unsubscribe`.
    template <class F>
    Returned<std::uint64_t> subscribe(F&& listener) {
        std::uint64_t id = 0;
        LIBAGENT_TRY_(detail::install(detail::to_listener_fn(std::forward<F>(listener)),
                                      [&](void* data, AgentFinalizer fin) {
                                          return agent_subscribe(raw_, &detail::listener_trampoline, data, fin, &id);
                                      }));
        return id;
    }
    Returned<void> unsubscribe(std::uint64_t id) {
        LIBAGENT_CHECK_(agent_unsubscribe(raw_, id));
        LIBAGENT_OK_;
    }

    // A pull queue of every event (`{"capacity": N, "shape": "full"|"lean"}`; empty = defaults).
    Returned<EventQueue> events(std::string_view options_json = {}) {
        LIBAGENT_C_STR_(options, options_json);
        AgentEventQueue* queue = nullptr;
        LIBAGENT_CHECK_(agent_events_open(raw_, options_json.empty() ? nullptr : options.c_str(), &queue));
        return EventQueue(queue);
    }

    AgentHandle* get() const noexcept { return raw_; }
    AgentHandle* release() noexcept { return std::exchange(raw_, nullptr); }

private:
    // Starts a run with an optional `done`, deleting it when the run did not start. `done` gets
    // how the run ended: a run that settled as the reference's promise resolves may still have
    // failed or been aborted (agent_last_run_outcome, read inside `done`, where it is this run's).
    template <class Starter>
    Returned<void> start(DoneFn done, Starter&& starter) {
        if (!done) {
            LIBAGENT_CHECK_(starter(nullptr, nullptr));
            LIBAGENT_OK_;
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
        LIBAGENT_CHECK_(status);
        LIBAGENT_OK_;
    }

    // Runs `start_with(done)` and waits until the run settled; fails with the run's failure.
    template <class StartWith>
    Returned<void> block(StartWith&& start_with) {
        struct Outcome {
            std::mutex mutex;
            bool settled = false;
            AgentStatus status = AGENT_OK;
            std::string error;
        };
        auto outcome = std::make_shared<Outcome>();
        LIBAGENT_TRY_(start_with([outcome](AgentStatus status, std::string_view error) {
            std::lock_guard<std::mutex> lock(outcome->mutex);
            outcome->settled = true;
            outcome->status = status;
            outcome->error = std::string(error);
        }));
        LIBAGENT_CHECK_(agent_wait_for_idle(raw_, -1));
        std::lock_guard<std::mutex> lock(outcome->mutex);
        // `done` runs before agent_wait_for_idle returns.
        if (outcome->settled && outcome->status != AGENT_OK) LIBAGENT_FAIL_(outcome->status, outcome->error);
        LIBAGENT_OK_;
    }

    AgentHandle* raw_ = nullptr;
};

// ---- process-wide stream function --------------------------------------------------------------

// Sets the process-wide default stream function (captured by agents built afterwards).
inline Returned<void> set_default_stream_fn(StreamFn fn) {
    return detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
        return agent_set_default_stream_fn(&detail::stream_trampoline, data, fin);
    });
}
inline Returned<void> clear_default_stream_fn() {
    LIBAGENT_CHECK_(agent_set_default_stream_fn(nullptr, nullptr, nullptr));
    LIBAGENT_OK_;
}
inline Returned<void> set_default_scripted_model(std::string_view script_json) {
    LIBAGENT_C_STR_(script, script_json);
    LIBAGENT_CHECK_(agent_set_default_scripted_model(script.c_str()));
    LIBAGENT_OK_;
}

}  // namespace agent

#undef LIBAGENT_FAIL_
#undef LIBAGENT_CHECK_
#undef LIBAGENT_TRY_
#undef LIBAGENT_OK_
#undef LIBAGENT_C_STR_
#undef LIBAGENT_SETTLE_
#undef LIBAGENT_HAS_EXCEPTIONS_

#endif  // LIBAGENT_AGENT_HPP

// libagent for C++17: a header-only binding of the C ABI 1.x (libagent/agent.h).
//
//   #include <libagent/agent.hpp>        // CMake: target_link_libraries(app PRIVATE libagent::cpp)
//
//   agent::Options options(R"({"initialState":{"systemPrompt":"Be brief."}})");
//   options.set_scripted_model(R"([{"content":[{"type":"text","text":"Hi!"}]}])");
//   agent::Agent bot(std::move(options));
//   bot.subscribe([](const agent::Event& e) {      // only the answer's text, not tool arguments
//       if (e.update() == agent::UpdateType::TextDelta) std::cout << e.delta();
//   });
//   agent::Outcome outcome = bot.prompt("hello").wait();   // a Run; wait() blocks until it settled
//   if (!outcome) std::cerr << outcome.error_message;      // a failed request is a result
//
// Types. `Agent`, `Options`, `Tool`, `Run`, `EventQueue`, `Dispatcher`, `Session` (a session
// file, see Options::set_session) and `Mcp` (MCP servers, see Options::add_mcp) own a libagent handle:
// they are move-only and free it in their destructor. `ToolCall`, `HookCall` (alias `Call`),
// `Stream` and `Reply` own the answer of one callback invocation (see "Deferred answers").
// `Event` is a view of libagent's event struct (O(1): no JSON unless `json()` is asked).
//
// Runs. `prompt` / `prompt_json` / `continue_run` / `compact` start a run and return its `Run` at once
// (`[[nodiscard]]`): `wait()` blocks until it settled and returns its `Outcome` (`status`,
// `stop_reason`, `error_message`, `message_count`; true when it completed), `wait(timeout)`
// returns std::nullopt when the time ran out, `abort()` aborts this run only (a settled run's
// abort does nothing, so it never reaches a later run), `messages()` the messages it added. The
// Run's destructor only drops the handle: the run goes on (abort it first to stop it).
// `prompt_async(text, done)` starts a run without a handle; `done(const Outcome&)` is called once
// it settled.
//
// JSON and texts. Every JSON argument and result is text: `std::string_view` in (passed to
// libagent as pointer + length, never copied), `std::string` out (no JSON library needed;
// `agent::quote` and `agent::text_result` build the common small pieces).
//
// Errors: ONE model. Every failing libagent call throws `agent::Error` (a `std::runtime_error`)
// carrying the code (`status()`, an `AGENT_ERR_*` value) and the library's message (`what()`);
// the C error object is read and freed at once. Outcomes are not errors: a run that ended with a
// model error or was aborted is an `Outcome`, `wait_for_idle` returns false on a timeout and
// `EventQueue::next` returns `std::nullopt` (see there). Blocking calls inside a callback of the
// same agent (or inside a dispatch) throw `AGENT_ERR_WOULD_DEADLOCK`.
//
// Callbacks are `std::function`s (any callable converts). Each is moved to the heap, its pointer
// is passed to libagent as user_data, and libagent's finalizer deletes it exactly once, when the
// library drops its last reference (a `done` callback is deleted after its single call). If a
// registration fails, the binding deletes it before throwing. Callbacks run on libagent's runtime
// thread (concurrently only with `agent::runtime_configure(n > 1)`), or, for an agent built with
// a `Dispatcher` (host-pumped mode), only inside `Dispatcher::dispatch` on the host's thread. They
// must return quickly and may call any libagent function.
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
// `Agent::create`, `Tool::create`, `Dispatcher::create`; they exist in both modes), and the
// Options setters return `Result<void>` instead of `Options&`. A callback answers its call
// through `complete` / `fail`, or by returning its answer; a synchronous answer libagent refuses
// (malformed JSON) fails the call with the refusal's text.
//
//   auto options = agent::Options::create(R"({"initialState":{"systemPrompt":"Be brief."}})");
//   if (!options) return report(options.error());          // .status(), .what()
//   auto bot = agent::Agent::create(std::move(*options));
//   if (auto run = bot->prompt("hello"); !run) report(run.error());
//
// Deferred answers. Tools, hooks and stream functions come in two forms. The synchronous form
// returns the answer (`std::string` JSON, `std::optional` for "returns nothing", or void) and the
// binding answers for it. The deferred form receives the call object by value: answer it now, or
// move it to another thread and answer it later (`complete` / `fail`; `is_aborted` / `on_abort`
// observe the run's abort). A call object that is destroyed unanswered fails its call ("...
// destroyed without an answer"), so a forgotten answer never stalls a run; `release()` hands the
// raw handle over to C code instead. A listener continues when it returns; to answer later it
// calls `event.defer()` and answers the returned `agent::Reply` (`resume()` / `fail(message)`).
#ifndef LIBAGENT_AGENT_HPP
#define LIBAGENT_AGENT_HPP

#include <libagent/agent.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
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
    Error(AgentErrorCode status, const std::string& message) : std::runtime_error(message), status_(status) {}
    // Reads and frees a C error (which must not be NULL).
    static Error take(AgentError* error) {
        std::unique_ptr<AgentError, void (*)(AgentError*)> owner(error, agent_error_free);
        std::size_t len = 0;
        const char* text = agent_error_message(error, &len);
        return Error(agent_error_code(error), std::string(text, len));
    }
    AgentErrorCode status() const noexcept { return status_; }

private:
    AgentErrorCode status_;
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
    AgentErrorCode status() const noexcept { return ok() ? AGENT_OK : error_->status(); }
    // The failure (only when !ok()).
    const Error& error() const noexcept { return *error_; }

    T& value() & noexcept { return checked(), *value_; }
    const T& value() const& noexcept { return checked(), *value_; }
    T&& value() && noexcept { return checked(), std::move(*value_); }
    T& operator*() & noexcept { return value(); }
    const T& operator*() const& noexcept { return value(); }
    T&& operator*() && noexcept { return std::move(*this).value(); }
    T* operator->() noexcept { return &value(); }
    const T* operator->() const noexcept { return &value(); }

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
    AgentErrorCode status() const noexcept { return ok() ? AGENT_OK : error_->status(); }
    const Error& error() const noexcept { return *error_; }

private:
    std::optional<Error> error_;
};

// What a fallible call returns: T (throwing Error on failure), or Result<T> without exceptions.
#ifdef LIBAGENT_NO_EXCEPTIONS
template <class T>
using Returned = Result<T>;
#define LIBAGENT_FAIL_(status, message) return ::agent::Error((status), (message))
// Fails the enclosing function when a C call failed.
#define LIBAGENT_CHECK_(expr)                                                         \
    do {                                                                              \
        if (AgentError* libagent_error_ = (expr)) return ::agent::Error::take(libagent_error_); \
    } while (0)
// Fails the enclosing function when a Returned<...> of the binding failed.
#define LIBAGENT_TRY_(expr)                                     \
    do {                                                        \
        auto libagent_result_ = (expr);                         \
        if (!libagent_result_) return libagent_result_.error(); \
    } while (0)
#define LIBAGENT_OK_ return {}
#else
template <class T>
using Returned = T;
#define LIBAGENT_FAIL_(status, message) throw ::agent::Error((status), (message))
#define LIBAGENT_CHECK_(expr) ::agent::detail::check(expr)
#define LIBAGENT_TRY_(expr) static_cast<void>(expr)
#define LIBAGENT_OK_ return
#endif

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
    // Supplies a compaction's summary: `{reason, preparation, focus?}` -> `{"summary", "details"?}`,
    // `{"cancel": true}`, or nullopt/"" for the agent's own model's summary.
    Compact = AGENT_HOOK_COMPACT,
};

// Which JSON shape of an event (see AgentEventShape for what each costs).
enum class EventShape : AgentEventShape { Full = AGENT_EVENT_SHAPE_FULL, Lean = AGENT_EVENT_SHAPE_LEAN };

// Which event (SPEC §2.7). A newer library may send values not listed here: ignore them.
enum class EventType : AgentEventType {
    AgentStart = AGENT_EVENT_AGENT_START,
    AgentEnd = AGENT_EVENT_AGENT_END,
    TurnStart = AGENT_EVENT_TURN_START,
    TurnEnd = AGENT_EVENT_TURN_END,
    MessageStart = AGENT_EVENT_MESSAGE_START,
    MessageUpdate = AGENT_EVENT_MESSAGE_UPDATE,
    MessageEnd = AGENT_EVENT_MESSAGE_END,
    ToolExecutionStart = AGENT_EVENT_TOOL_EXECUTION_START,
    ToolExecutionUpdate = AGENT_EVENT_TOOL_EXECUTION_UPDATE,
    ToolExecutionEnd = AGENT_EVENT_TOOL_EXECUTION_END,
    // Context management (README "Long conversations"); their fields are in json().
    CompactionStart = AGENT_EVENT_COMPACTION_START,  // {reason: "manual"|"threshold"|"overflow"}
    CompactionEnd = AGENT_EVENT_COMPACTION_END,      // {reason, result?, aborted, willRetry, errorMessage?}
    AutoRetryStart = AGENT_EVENT_AUTO_RETRY_START,   // {attempt, maxAttempts, delayMs, errorMessage}
    AutoRetryEnd = AGENT_EVENT_AUTO_RETRY_END,       // {success, attempt, finalError?}
};

// The assistant stream event of a message_update (None for other events).
enum class UpdateType : AgentUpdateType {
    None = AGENT_UPDATE_NONE,
    Start = AGENT_UPDATE_START,
    TextStart = AGENT_UPDATE_TEXT_START,
    TextDelta = AGENT_UPDATE_TEXT_DELTA,
    TextEnd = AGENT_UPDATE_TEXT_END,
    ThinkingStart = AGENT_UPDATE_THINKING_START,
    ThinkingDelta = AGENT_UPDATE_THINKING_DELTA,
    ThinkingEnd = AGENT_UPDATE_THINKING_END,
    ToolcallStart = AGENT_UPDATE_TOOLCALL_START,
    ToolcallDelta = AGENT_UPDATE_TOOLCALL_DELTA,
    ToolcallEnd = AGENT_UPDATE_TOOLCALL_END,
    Other = AGENT_UPDATE_OTHER,
};

// A streamed content block's type (Stream::push_block_start / push_block_end).
enum class BlockKind : AgentBlockKind {
    Text = AGENT_BLOCK_TEXT,
    Thinking = AGENT_BLOCK_THINKING,
    Toolcall = AGENT_BLOCK_TOOLCALL,
};

// How a run ended.
enum class RunStatus : AgentRunStatus {
    Running = AGENT_RUN_RUNNING,      // not settled yet
    Completed = AGENT_RUN_COMPLETED,  // its last assistant message did not stop with error/aborted
    ModelError = AGENT_RUN_MODEL_ERROR,  // stopReason "error": the request, stream function or a hook failed
    Aborted = AGENT_RUN_ABORTED,      // stopReason "aborted"
    Failed = AGENT_RUN_FAILED,        // a listener failed while the run was failing
    Freed = AGENT_RUN_FREED,          // the agent was freed while the run was active
};

// What a run did (copied out of libagent: valid after the Run is gone).
struct Outcome {
    RunStatus status = RunStatus::Running;
    std::string stop_reason;    // the last assistant message's stopReason ("" when none)
    std::string error_message;  // why the run did not complete ("" when it did)
    std::size_t message_count = 0;  // how many messages the run added (Run::messages returns them)

    bool completed() const noexcept { return status == RunStatus::Completed; }
    explicit operator bool() const noexcept { return completed(); }
};

namespace detail {

#ifndef LIBAGENT_NO_EXCEPTIONS
inline void check(AgentError* error) {
    if (error) throw Error::take(error);
}
#endif

// A string_view's bytes for libagent (an empty view may have no data pointer).
inline const char* ptr(std::string_view text) noexcept { return text.data() ? text.data() : ""; }
// An optional JSON argument: empty means NULL (the defaults).
inline const char* opt(std::string_view text) noexcept { return text.empty() ? nullptr : text.data(); }
inline std::string_view view(AgentStr s) noexcept { return s.len ? std::string_view(s.ptr, s.len) : std::string_view(); }
inline std::string_view view(const char* p, std::size_t len) noexcept {
    return len ? std::string_view(p, len) : std::string_view();
}

// Takes a string returned by libagent.
inline std::string take(char* text, std::size_t len) {
    std::unique_ptr<char, void (*)(char*)> owner(text, agent_string_free);
    return text ? std::string(text, len) : std::string();
}

inline Outcome outcome_of(const AgentRunOutcome& raw) {
    return Outcome{static_cast<RunStatus>(raw.status), std::string(view(raw.stop_reason)),
                   std::string(view(raw.error_message)), raw.message_count};
}

template <class T>
void destroy(void* user_data) noexcept {
    delete static_cast<T*>(user_data);
}

// The call whose trampoline runs on this thread, if any: lets a call object tell "unwinding
// towards its own trampoline" (which fails the call with the exception's text) from "dropped".
struct CallbackFrame {
    std::uint64_t call;  // kListenerFrame: a listener that has not deferred (yet)
    int uncaught;
    CallbackFrame* outer;
};

inline constexpr std::uint64_t kListenerFrame = ~std::uint64_t{0};
inline thread_local CallbackFrame* current_frame = nullptr;

class FrameScope {
public:
    explicit FrameScope(std::uint64_t call) noexcept : frame_{call, std::uncaught_exceptions(), current_frame} {
        current_frame = &frame_;
    }
    ~FrameScope() { current_frame = frame_.outer; }
    FrameScope(const FrameScope&) = delete;
    FrameScope& operator=(const FrameScope&) = delete;

private:
    CallbackFrame frame_;
};

// True while an exception thrown inside the trampoline of `call` unwinds towards it.
inline bool unwinding_to_trampoline_of(std::uint64_t call) noexcept {
    for (const CallbackFrame* f = current_frame; f; f = f->outer)
        if (f->call == call) return std::uncaught_exceptions() > f->uncaught;
    return false;
}

// Runs a callback body; any exception fails the call through `fail(const char*)` (nothing for a
// callback without a call). Nothing escapes.
template <class Body, class Fail>
void guarded(std::uint64_t call, Body&& body, Fail&& fail) noexcept {
    FrameScope scope(call);
#if LIBAGENT_HAS_EXCEPTIONS_
    try {
        body();
    } catch (const std::exception& e) {
        fail(e.what());
    } catch (...) {
        fail("A C++ callback threw an exception that is not a std::exception.");
    }
#else
    (void)fail;
    body();
#endif
}

// Fails a call with `message` (a C failing function of the call's kind); a message libagent
// refuses (not UTF-8) falls back to a fixed one. Errors (already answered) are dropped.
template <class Handle>
void fail_raw(AgentError* (*fail)(Handle, const char*, std::size_t), Handle call, const char* message) noexcept {
    if (AgentError* error = fail(call, message, AGENT_NTS)) {
        bool not_utf8 = agent_error_code(error) == AGENT_ERR_INVALID_UTF8;
        agent_error_free(error);
        if (not_utf8)
            agent_error_free(fail(call, "A C++ callback failed with a message that is not valid UTF-8.", AGENT_NTS));
    }
}

// Moves `fn` to the heap and registers it through `reg(user_data, finalizer)`; on failure the
// library took no reference, so it is deleted here before failing.
template <class Fn, class Register>
Returned<void> install(Fn fn, Register&& reg) {
    auto owned = std::make_unique<Fn>(std::move(fn));
    AgentError* error = reg(static_cast<void*>(owned.get()), &destroy<Fn>);
    if (!error) owned.release();
    LIBAGENT_CHECK_(error);
    LIBAGENT_OK_;
}

inline void notify_trampoline(void* user_data) {
    guarded(0, [&] { (*static_cast<std::function<void()>*>(user_data))(); }, [](const char*) {});
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

// The library's version at run time, e.g. "1.0.0" (AGENT_VERSION_STRING is the header's).
inline std::string_view version() { return agent_version(); }

// Checks that the loaded library serves this header's version (AGENT_ERR_INVALID_STATE, naming
// both versions, when its major differs or its minor is older).
inline Returned<void> version_check() {
    LIBAGENT_CHECK_(agent_version_check(AGENT_VERSION_MAJOR, AGENT_VERSION_MINOR));
    LIBAGENT_OK_;
}

// Chooses the runtime before first use (see agent_runtime_configure).
inline Returned<void> runtime_configure(std::uint32_t workers) {
    LIBAGENT_CHECK_(agent_runtime_configure(workers));
    LIBAGENT_OK_;
}

// ---- the model catalogue -----------------------------------------------------------------------

namespace detail {
// A catalogue error, its C hint ("; agent_model_list lists ...") replaced by the C++ one.
inline Error models_error(AgentError* error) {
    Error taken = Error::take(error);
    std::string message = taken.what();
    std::size_t hint = message.find("; agent_model_list");
    if (hint != std::string::npos) message = message.substr(0, hint) + "; agent::list_models() lists the models.";
    return Error(taken.status(), message);
}
}  // namespace detail

// The catalogue's model named "provider/id" (pi-ai 1.6.0's models), e.g.
// "anthropic/claude-sonnet-4-5", as JSON text ready for initialState.model: {id, name, api,
// provider, baseUrl, reasoning, input, cost (dollars per million tokens), contextWindow,
// maxTokens, ...} in pi-ai's order (see agent_model_find). An unknown name fails with
// AGENT_ERR_INVALID_ARGUMENT and a message naming it.
inline Returned<std::string> find_model(std::string_view name) {
    char* json = nullptr;
    std::size_t len = 0;
    if (AgentError* error = agent_model_find(detail::ptr(name), name.size(), &json, &len)) {
        Error failure = detail::models_error(error);
        LIBAGENT_FAIL_(failure.status(), failure.what());
    }
    return detail::take(json, len);
}

// The catalogue's models of `provider` as a JSON array (every provider's when empty).
inline Returned<std::string> list_models(std::string_view provider = {}) {
    char* json = nullptr;
    std::size_t len = 0;
    AgentError* error = provider.empty() ? agent_model_list(nullptr, 0, &json, &len)
                                         : agent_model_list(provider.data(), provider.size(), &json, &len);
    if (error) {
        Error failure = detail::models_error(error);
        LIBAGENT_FAIL_(failure.status(), failure.what());
    }
    return detail::take(json, len);
}

// ---- call objects ------------------------------------------------------------------------------

namespace detail {

// The shared part of the call objects: a move-only owner of one call handle (`Handle`), answered
// at most once; destroyed unanswered, it fails the call with `Derived::kDropped`.
template <class Derived, class Handle, AgentError* (*Fail)(Handle, const char*, std::size_t)>
class Answer {
public:
    Answer() noexcept = default;
    explicit Answer(Handle raw) noexcept : raw_(raw) {}
    Answer(Answer&& other) noexcept : raw_(std::exchange(other.raw_, Handle{0})), answered_(other.answered_) {}
    Answer& operator=(Answer&& other) noexcept {
        if (this != &other) {
            drop();
            raw_ = std::exchange(other.raw_, Handle{0});
            answered_ = other.answered_;
        }
        return *this;
    }
    Answer(const Answer&) = delete;
    Answer& operator=(const Answer&) = delete;
    ~Answer() { drop(); }

    // Answers with a failure (a JavaScript throw with this message).
    Returned<void> fail(std::string_view message) { return settle(Fail(raw_, ptr(message), message.size())); }

    // Whether this object answered its call (or found it answered).
    bool answered() const noexcept { return answered_; }
    explicit operator bool() const noexcept { return raw_.id != 0; }
    Handle get() const noexcept { return raw_; }
    // Gives up ownership: the caller answers through the C API; nothing happens on destruction.
    Handle release() noexcept { return std::exchange(raw_, Handle{0}); }

protected:
    // Records an answer (AGENT_ERR_ALREADY_COMPLETED: someone answered already) and fails with it.
    Returned<void> settle(AgentError* error) {
        if (!error || agent_error_code(error) == AGENT_ERR_ALREADY_COMPLETED) answered_ = true;
        LIBAGENT_CHECK_(error);
        LIBAGENT_OK_;
    }
    void mark_answered() noexcept { answered_ = true; }

    // Registers `fn` through `reg(handle, trampoline, user_data, finalizer)`.
    template <class Register>
    Returned<void> install_abort(std::function<void()> fn, Register reg) {
        Handle raw = raw_;
        return install(std::move(fn), [&](void* data, AgentFinalizer fin) {
            return reg(raw, &notify_trampoline, data, fin);
        });
    }

private:
    void drop() noexcept {
        if (!raw_.id || answered_) return;
        // An exception unwinding towards this call's own trampoline: it fails the call with the
        // exception's text.
        if (!unwinding_to_trampoline_of(raw_.id)) fail_raw(Fail, raw_, Derived::kDropped);
        raw_ = Handle{0};
    }

    Handle raw_{0};
    bool answered_ = false;
};

}  // namespace detail

// A hook's call (also prepareArguments and the coding pack's consent). Move-only; answer it
// exactly once, from any thread. Destroyed unanswered, it fails the call.
class HookCall : public detail::Answer<HookCall, AgentHookCall, agent_hook_call_fail> {
public:
    static constexpr const char* kDropped = "agent::HookCall destroyed without an answer.";
    using Answer::Answer;

    // Answers with a JSON result (fails with Error: AGENT_ERR_INVALID_JSON leaves the call open;
    // AGENT_ERR_ALREADY_COMPLETED when it was answered already).
    Returned<void> complete(std::string_view result_json) {
        return settle(agent_hook_call_complete(get(), detail::ptr(result_json), result_json.size()));
    }
    // Answers "returns nothing" (NULL).
    Returned<void> complete() { return settle(agent_hook_call_complete(get(), nullptr, 0)); }
    // Whether the run that made this call is aborted.
    Returned<bool> is_aborted() const {
        bool aborted = false;
        LIBAGENT_CHECK_(agent_hook_call_is_aborted(get(), &aborted));
        return aborted;
    }
    // Calls `fn` once when the run aborts (at once, later, if it already has).
    Returned<void> on_abort(std::function<void()> fn) { return install_abort(std::move(fn), agent_hook_call_on_abort); }
};
// The 0.x name of a hook's call.
using Call = HookCall;

// A tool execution's call: also reports progress.
class ToolCall : public detail::Answer<ToolCall, AgentToolCall, agent_tool_call_fail> {
public:
    static constexpr const char* kDropped = "agent::ToolCall destroyed without an answer.";
    using Answer::Answer;

    // Answers with an AgentToolResult (`{"content":[...],"details":...}`; see agent::text_result).
    Returned<void> complete(std::string_view result_json) {
        return settle(agent_tool_call_complete(get(), detail::ptr(result_json), result_json.size()));
    }
    // Answers "returned nothing" (the tool call fails with `Tool <name> returned no result`).
    Returned<void> complete() { return settle(agent_tool_call_complete(get(), nullptr, 0)); }
    // Reports progress (an AgentToolResult-shaped partial result); never blocks.
    Returned<void> update(std::string_view partial_result_json) {
        LIBAGENT_CHECK_(agent_tool_call_update(get(), detail::ptr(partial_result_json), partial_result_json.size()));
        LIBAGENT_OK_;
    }
    Returned<bool> is_aborted() const {
        bool aborted = false;
        LIBAGENT_CHECK_(agent_tool_call_is_aborted(get(), &aborted));
        return aborted;
    }
    Returned<void> on_abort(std::function<void()> fn) { return install_abort(std::move(fn), agent_tool_call_on_abort); }
};

// A stream function's call: push assistant stream events, end with a `done`/`error` event,
// `complete(final_message)` or `fail(message)`. Destroyed unanswered, it fails the stream (which
// does nothing once a pushed terminal event ended it).
class Stream : public detail::Answer<Stream, AgentStream, agent_stream_fail> {
public:
    static constexpr const char* kDropped = "agent::Stream destroyed before it ended.";
    using Answer::Answer;

    // Pushes one event (never blocks). Fails with Error(AGENT_ERR_STREAM_CLOSED) once the agent
    // stopped consuming the stream or after its terminal event.
    Returned<void> push(std::string_view event_json) {
        return pushed(agent_stream_push(get(), detail::ptr(event_json), event_json.size()));
    }
    // The JSON-free pushes of the common events (same rules as push).
    Returned<void> push_text_delta(std::size_t content_index, std::string_view text) {
        return pushed(agent_stream_push_text_delta(get(), content_index, text.data(), text.size()));
    }
    Returned<void> push_thinking_delta(std::size_t content_index, std::string_view text) {
        return pushed(agent_stream_push_thinking_delta(get(), content_index, text.data(), text.size()));
    }
    // The next piece of a tool call's arguments JSON text.
    Returned<void> push_toolcall_delta(std::size_t content_index, std::string_view text) {
        return pushed(agent_stream_push_toolcall_delta(get(), content_index, text.data(), text.size()));
    }
    Returned<void> push_block_start(BlockKind kind, std::size_t content_index) {
        return pushed(agent_stream_push_block_start(get(), static_cast<AgentBlockKind>(kind), content_index));
    }
    Returned<void> push_toolcall_start(std::size_t content_index, std::string_view id, std::string_view tool_name) {
        return pushed(agent_stream_push_toolcall_start(get(), content_index, detail::ptr(id), id.size(),
                                                       detail::ptr(tool_name), tool_name.size()));
    }
    Returned<void> push_block_end(BlockKind kind, std::size_t content_index) {
        return pushed(agent_stream_push_block_end(get(), static_cast<AgentBlockKind>(kind), content_index));
    }
    // Ends the stream with its final message (AGENT_ERR_ALREADY_COMPLETED after a terminal event).
    Returned<void> complete(std::string_view final_message_json) {
        return settle(agent_stream_end(get(), detail::ptr(final_message_json), final_message_json.size()));
    }
    // Ends the stream without a final message (an error message, SPEC §3.5).
    Returned<void> complete() { return settle(agent_stream_end(get(), nullptr, 0)); }

    Returned<bool> is_aborted() const {
        bool aborted = false;
        LIBAGENT_CHECK_(agent_stream_is_aborted(get(), &aborted));
        return aborted;
    }
    Returned<void> on_abort(std::function<void()> fn) { return install_abort(std::move(fn), agent_stream_on_abort); }
    // How many pushed events the loop has not taken yet (0 once the stream is closed).
    Returned<std::size_t> backlog() const {
        std::size_t count = 0;
        LIBAGENT_CHECK_(agent_stream_backlog(get(), &count));
        return count;
    }
    // Calls `fn` each time a pushed event was fully processed (a lock-step producer pushes the
    // next one from there). Replaces the previous one.
    Returned<void> on_consumed(std::function<void()> fn) {
        AgentStream raw = get();
        return detail::install(std::move(fn), [&](void* data, AgentFinalizer fin) {
            return agent_stream_on_consumed(raw, &consumed_trampoline, data, fin);
        });
    }

private:
    Returned<void> pushed(AgentError* error) {
        if (error && agent_error_code(error) == AGENT_ERR_STREAM_CLOSED) mark_answered();  // nothing left to fail
        LIBAGENT_CHECK_(error);
        LIBAGENT_OK_;
    }
    static void consumed_trampoline(void* user_data, AgentStream) { detail::notify_trampoline(user_data); }
};

// A listener's deferred answer (Event::defer): answer it once, from any thread. Destroyed
// unanswered, it fails the run.
class Reply : public detail::Answer<Reply, AgentReply, agent_reply_fail> {
public:
    static constexpr const char* kDropped = "agent::Reply destroyed without an answer.";
    using Answer::Answer;

    // The listener is done with the event: the next listener and the loop go on.
    Returned<void> resume() { return settle(agent_reply_continue(get())); }
};

// ---- events ------------------------------------------------------------------------------------

namespace detail {
struct EventAccess;
}

// One event: a view of libagent's event struct. From a listener it is valid during the call
// only; from an EventQueue until the next call on that queue (copy what you keep). Every
// accessor is O(1) but json(), which builds the event's JSON on request.
class Event {
public:
    explicit Event(const AgentEvent& raw) noexcept : raw_(raw) {}
    Event(Event&&) noexcept = default;
    Event& operator=(Event&&) noexcept = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    EventType type() const noexcept { return static_cast<EventType>(raw_.kind); }
    // message_update: which assistant stream event; else UpdateType::None.
    UpdateType update() const noexcept { return static_cast<UpdateType>(raw_.update); }
    // message_update: the stream event's contentIndex.
    std::size_t content_index() const noexcept { return raw_.content_index; }
    // *_delta updates: the new text (toolcall_delta: the next piece of the arguments' JSON); else "".
    std::string_view delta() const noexcept { return detail::view(raw_.delta); }
    // tool_execution_*: the tool call's id and the tool's name; else "".
    std::string_view tool_call_id() const noexcept { return detail::view(raw_.tool_call_id); }
    std::string_view tool_name() const noexcept { return detail::view(raw_.tool_name); }
    // tool_execution_start: the arguments as JSON text; else "".
    std::string_view args_json() const noexcept { return detail::view(raw_.args_json); }
    // "agent_start", "message_update", ... ("" for a type this header does not know).
    std::string_view type_name() const noexcept;
    // "text_delta", ... for a message_update; else "".
    std::string_view update_name() const noexcept;

    // The event's JSON (built once per shape, shared with the other listeners; valid as long as
    // the event).
    Returned<std::string_view> json(EventShape shape = EventShape::Full) const {
        AgentStr out{nullptr, 0};
        LIBAGENT_CHECK_(agent_event_json(&raw_, static_cast<AgentEventShape>(shape), &out));
        return detail::view(out);
    }

    // Inside a listener: answer this event later through the returned Reply (the next listener
    // and the loop wait for it). Fails with AGENT_ERR_INVALID_STATE for a queue's event and when
    // called twice.
    Returned<Reply> defer() const {
        AgentReply reply{0};
        LIBAGENT_CHECK_(agent_event_defer(&raw_, &reply));
        deferred_ = reply;
        // The listener's frame now stands for its Reply: an exception unwinding through a Reply
        // that lives in the listener fails the run with the exception's text.
        if (detail::current_frame && detail::current_frame->call == detail::kListenerFrame)
            detail::current_frame->call = reply.id;
        return Reply(reply);
    }

    const AgentEvent& get() const noexcept { return raw_; }

private:
    friend struct detail::EventAccess;
    AgentEvent raw_;
    mutable AgentReply deferred_{0};
};

inline std::string_view Event::type_name() const noexcept {
    static constexpr const char* names[] = {"agent_start",   "agent_end",     "turn_start",          "turn_end",
                                            "message_start", "message_update", "message_end",        "tool_execution_start",
                                            "tool_execution_update", "tool_execution_end"};
    auto i = static_cast<std::size_t>(raw_.kind);
    return raw_.kind >= 0 && i < sizeof names / sizeof *names ? names[i] : "";
}

inline std::string_view Event::update_name() const noexcept {
    static constexpr const char* names[] = {"",           "start",          "text_start",     "text_delta",
                                            "text_end",   "thinking_start", "thinking_delta", "thinking_end",
                                            "toolcall_start", "toolcall_delta", "toolcall_end", "other"};
    auto i = static_cast<std::size_t>(raw_.update);
    return raw_.update >= 0 && i < sizeof names / sizeof *names ? names[i] : "";
}

// Reads what a listener did with its event (the trampoline's side).
struct detail::EventAccess {
    static AgentReply deferred(const Event& event) noexcept { return event.deferred_; }
};

// A pull queue of every event of an agent (see Agent::events). Move-only; closes on destruction.
// Poll it from any thread, e.g. a frame loop with `try_next()`.
class EventQueue {
public:
    EventQueue() noexcept = default;
    explicit EventQueue(AgentQueue raw) noexcept : raw_(raw) {}
    EventQueue(EventQueue&& other) noexcept : raw_(std::exchange(other.raw_, AgentQueue{0})), closed_(other.closed_) {}
    EventQueue& operator=(EventQueue&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentQueue{0});
            closed_ = other.closed_;
        }
        return *this;
    }
    EventQueue(const EventQueue&) = delete;
    EventQueue& operator=(const EventQueue&) = delete;
    ~EventQueue() { free_handle(); }

    // The next event, waiting up to `timeout` (negative: forever); valid until the next call on
    // this queue. std::nullopt when none arrived in time, or when the queue is closed (its agent
    // was freed) and drained: `closed()` tells which.
    Returned<std::optional<Event>> next(std::chrono::milliseconds timeout) {
        AgentEvent event{};
        AgentNext next = AGENT_NEXT_TIMEOUT;
        LIBAGENT_CHECK_(agent_queue_next(raw_, static_cast<std::int64_t>(timeout.count()), &event, &next));
        if (next == AGENT_NEXT_CLOSED) closed_ = true;
        if (next != AGENT_NEXT_EVENT) return std::optional<Event>();
        return std::optional<Event>(Event(event));
    }
    // Waits forever.
    Returned<std::optional<Event>> next() { return next(std::chrono::milliseconds(-1)); }
    // Never waits (for a frame loop).
    Returned<std::optional<Event>> try_next() { return next(std::chrono::milliseconds(0)); }
    // True once the agent was freed and every event was taken.
    bool closed() const noexcept { return closed_; }
    // Closes the queue now (its subscription ends).
    Returned<void> close() {
        if (raw_.id) LIBAGENT_CHECK_(agent_queue_close(std::exchange(raw_, AgentQueue{0})));
        LIBAGENT_OK_;
    }
    AgentQueue get() const noexcept { return raw_; }

private:
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_queue_close(std::exchange(raw_, AgentQueue{0})));
    }

    AgentQueue raw_{0};
    bool closed_ = false;
};

// ---- runs --------------------------------------------------------------------------------------

// One run (prompt or continue). Move-only; the destructor drops the handle only: the run goes on
// (abort() first to stop it). Aborting or waiting on a settled run is harmless, so a late abort
// never reaches a later run.
class [[nodiscard]] Run {
public:
    Run() noexcept = default;
    explicit Run(AgentRun raw) noexcept : raw_(raw) {}
    Run(Run&& other) noexcept : raw_(std::exchange(other.raw_, AgentRun{0})) {}
    Run& operator=(Run&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentRun{0});
        }
        return *this;
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    ~Run() { free_handle(); }

    // Blocks until the run settled (and its `done` returned); its outcome. For an agent built
    // with a Dispatcher, dispatches its callbacks on this thread while waiting. Throws
    // AGENT_ERR_WOULD_DEADLOCK inside a callback of the same agent.
    Returned<Outcome> wait() {
        AgentWaitResult result = AGENT_WAIT_TIMEOUT;
        LIBAGENT_CHECK_(agent_run_wait(raw_, -1, &result));
        return outcome();
    }
    // The same, giving up after `timeout`: std::nullopt when the run has not settled by then.
    Returned<std::optional<Outcome>> wait(std::chrono::milliseconds timeout) {
        AgentWaitResult result = AGENT_WAIT_TIMEOUT;
        LIBAGENT_CHECK_(agent_run_wait(raw_, static_cast<std::int64_t>(timeout.count()), &result));
        if (result != AGENT_WAIT_DONE) return std::optional<Outcome>();
        AgentRunOutcome raw{};
        LIBAGENT_CHECK_(agent_run_outcome(raw_, &raw));
        return std::optional<Outcome>(detail::outcome_of(raw));
    }
    // Aborts this run (nothing when it settled). Abort callbacks run later, never inside.
    Returned<void> abort() {
        LIBAGENT_CHECK_(agent_run_abort(raw_));
        LIBAGENT_OK_;
    }
    // The outcome so far (status RunStatus::Running until the run settled). O(1).
    Returned<Outcome> outcome() const {
        AgentRunOutcome raw{};
        LIBAGENT_CHECK_(agent_run_outcome(raw_, &raw));
        return detail::outcome_of(raw);
    }
    // A JSON array of the messages the run added so far (costs their size only).
    Returned<std::string> messages() const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_run_messages(raw_, &json, &len));
        return detail::take(json, len);
    }

    explicit operator bool() const noexcept { return raw_.id != 0; }
    AgentRun get() const noexcept { return raw_; }
    // Gives up ownership (the caller frees the handle with agent_run_free).
    AgentRun release() noexcept { return std::exchange(raw_, AgentRun{0}); }

private:
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_run_free(std::exchange(raw_, AgentRun{0})));
    }
    AgentRun raw_{0};
};

// ---- host-pumped mode --------------------------------------------------------------------------

// A dispatcher: agents built with it (Options::set_dispatcher) call host code (listeners, tools,
// hooks, stream functions, done, notifications) only inside dispatch() or a Run::wait /
// Agent::wait_for_idle on the dispatching thread, never on libagent's runtime thread. Network and
// timers keep running there; finalizers and the `done` of a run ended by destroying its agent
// too (queued for the next dispatch, or run by the dispatcher's destructor). Move-only; several
// agents may share one. Destroy it after them.
// Known issue (library 1.0.0): destroying such an agent on the dispatching thread right after
// aborting its run can block forever; let the aborted run settle first (`run.wait()`).
class Dispatcher {
public:
    static Returned<Dispatcher> create() {
        AgentDispatcher raw{0};
        LIBAGENT_CHECK_(agent_dispatcher_new(&raw));
        return Dispatcher(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    Dispatcher() : Dispatcher(create()) {}
#endif
    Dispatcher(Dispatcher&& other) noexcept : raw_(std::exchange(other.raw_, AgentDispatcher{0})) {}
    Dispatcher& operator=(Dispatcher&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentDispatcher{0});
        }
        return *this;
    }
    Dispatcher(const Dispatcher&) = delete;
    Dispatcher& operator=(const Dispatcher&) = delete;
    ~Dispatcher() { free_handle(); }

    // Runs the callbacks that are ready, on this thread, until none is or `budget` has passed
    // (checked between callbacks, after at least one); returns how many ran (0 at once when
    // nothing was ready). A frame loop calls it once per frame.
    Returned<std::size_t> dispatch(std::chrono::milliseconds budget) {
        std::size_t ran = 0;
        LIBAGENT_CHECK_(agent_dispatch(raw_, static_cast<std::int64_t>(budget.count()), &ran));
        return ran;
    }
    // Runs every ready callback (no budget).
    Returned<std::size_t> dispatch() { return dispatch(std::chrono::milliseconds(-1)); }
    // Blocks until a callback is ready (true) or `timeout` passed (false; negative: no limit).
    Returned<bool> wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
        AgentWaitResult result = AGENT_WAIT_TIMEOUT;
        LIBAGENT_CHECK_(agent_dispatcher_wait(raw_, static_cast<std::int64_t>(timeout.count()), &result));
        return result == AGENT_WAIT_DONE;
    }
    AgentDispatcher get() const noexcept { return raw_; }

private:
    explicit Dispatcher(AgentDispatcher raw) noexcept : raw_(raw) {}
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_dispatcher_free(std::exchange(raw_, AgentDispatcher{0})));
    }
    AgentDispatcher raw_{0};
};

// ---- callback types and adapters ---------------------------------------------------------------

// The deferred forms every callback is stored as.
using ToolFn = std::function<void(std::string_view tool_call_id, std::string_view args_json, ToolCall call)>;
using HookFn = std::function<void(std::string_view input_json, HookCall call)>;
// A listener continues when it returns (or answers later through event.defer()).
using ListenerFn = std::function<void(const Event& event)>;
using StreamFn = std::function<void(std::string_view request_json, Stream stream)>;
using PrepareArgumentsFn = std::function<std::optional<std::string>(std::string_view args_json)>;
// Called once when the run settled, with its outcome.
using DoneFn = std::function<void(const Outcome& outcome)>;

namespace detail {

// Answers `call` (`answer` is one of its complete calls). Without exceptions, an answer libagent
// refused (e.g. malformed JSON) fails the call with the refusal's text, as the thrown Error would.
#ifdef LIBAGENT_NO_EXCEPTIONS
template <class C>
void settle_with(C& call, Result<void> answered) {
    if (!answered) (void)call.fail(answered.error().what());
}
#define LIBAGENT_SETTLE_(call, answer) ::agent::detail::settle_with((call), (answer))
#else
#define LIBAGENT_SETTLE_(call, answer) (answer)
#endif

// Answers `call` with what a synchronous callback returned.
template <class C, class A>
void answer_with(C& call, A&& result) {
    using R = std::decay_t<A>;
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

template <class F, class C, class... Args>
void run_sync(F& f, C& call, Args&&... args) {
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

// A hook: `(input, HookCall)` (deferred) or `(input) -> std::string | std::optional<std::string>
// | void` (sync; nullopt and void answer "returns nothing").
template <class F>
HookFn to_hook_fn(F&& f) {
    if constexpr (std::is_invocable_v<std::decay_t<F>&, std::string_view, HookCall>) {
        return HookFn(std::forward<F>(f));
    } else {
        static_assert(std::is_invocable_v<std::decay_t<F>&, std::string_view>,
                      "a hook is callable as (input_json, agent::HookCall) or (input_json) -> answer");
        return [f = std::forward<F>(f)](std::string_view input, HookCall call) mutable { run_sync(f, call, input); };
    }
}

inline void tool_trampoline(void* user_data, const char* id, std::size_t id_len, const char* args,
                            std::size_t args_len, AgentToolCall call) {
    guarded(
        call.id,
        [&] { (*static_cast<ToolFn*>(user_data))(view(id, id_len), view(args, args_len), ToolCall(call)); },
        [&](const char* message) { fail_raw(agent_tool_call_fail, call, message); });
}

inline void hook_trampoline(void* user_data, const char* input, std::size_t input_len, AgentHookCall call) {
    guarded(
        call.id, [&] { (*static_cast<HookFn*>(user_data))(view(input, input_len), HookCall(call)); },
        [&](const char* message) { fail_raw(agent_hook_call_fail, call, message); });
}

inline void stream_trampoline(void* user_data, const char* request, std::size_t request_len, AgentStream stream) {
    guarded(
        stream.id, [&] { (*static_cast<StreamFn*>(user_data))(view(request, request_len), Stream(stream)); },
        [&](const char* message) { fail_raw(agent_stream_fail, stream, message); });
}

inline void prepare_trampoline(void* user_data, const char* args, std::size_t args_len, AgentHookCall call) {
    guarded(
        call.id,
        [&] {
            HookCall answer(call);
            answer_with(answer, (*static_cast<PrepareArgumentsFn*>(user_data))(view(args, args_len)));
        },
        [&](const char* message) { fail_raw(agent_hook_call_fail, call, message); });
}

// A listener answers by returning; one that deferred answers through its Reply. An exception
// fails the run with its text: through the listener's Reply, or one deferred for the purpose.
inline AgentListenerAnswer listener_trampoline(void* user_data, const AgentEvent* raw) {
    Event event(*raw);
    bool failed = false;
    std::string message;
    guarded(
        kListenerFrame, [&] { (*static_cast<ListenerFn*>(user_data))(event); },
        [&](const char* what) {
            failed = true;
            message = what;
        });
    AgentReply reply = EventAccess::deferred(event);
    if (!failed) return reply.id ? AGENT_LISTENER_LATER : AGENT_LISTENER_CONTINUE;
    if (!reply.id) {
        if (AgentError* error = agent_event_defer(raw, &reply)) {
            agent_error_free(error);
            return AGENT_LISTENER_CONTINUE;  // cannot happen for a listener's event
        }
    }
    fail_raw(agent_reply_fail, reply, message.c_str());
    return AGENT_LISTENER_LATER;
}

// `done` has no finalizer: libagent calls it exactly once, and it is deleted after that call.
inline void done_trampoline(void* user_data, AgentRun, const AgentRunOutcome* outcome) {
    std::unique_ptr<DoneFn> fn(static_cast<DoneFn*>(user_data));
    guarded(0, [&] { (*fn)(outcome_of(*outcome)); }, [](const char*) {});
}

using HookSetter = AgentError* (*)(void* target, AgentHookKind, AgentHookFn, void*, AgentFinalizer);

template <class F>
Returned<void> install_hook(HookKind kind, F&& f, HookSetter reg, void* target) {
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
        AgentTool raw{0};
        LIBAGENT_TRY_(detail::install(detail::to_tool_fn(std::forward<F>(execute)), [&](void* data, AgentFinalizer fin) {
            return agent_tool_new(detail::ptr(definition_json), definition_json.size(), &detail::tool_trampoline, data,
                                  fin, &raw);
        }));
        return Tool(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    template <class F>
    Tool(std::string_view definition_json, F&& execute) : Tool(create(definition_json, std::forward<F>(execute))) {}
#endif
    Tool(Tool&& other) noexcept : raw_(std::exchange(other.raw_, AgentTool{0})) {}
    Tool& operator=(Tool&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentTool{0});
        }
        return *this;
    }
    Tool(const Tool&) = delete;
    Tool& operator=(const Tool&) = delete;
    ~Tool() { free_handle(); }

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

    AgentTool get() const noexcept { return raw_; }
    // Takes ownership of a raw tool reference (e.g. one of agent_coding_tools_new's).
    static Tool adopt(AgentTool raw) noexcept { return Tool(raw); }

private:
    explicit Tool(AgentTool raw) noexcept : raw_(raw) {}
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_tool_free(std::exchange(raw_, AgentTool{0})));
    }
    AgentTool raw_{0};
};

// ---- the coding tool pack ----------------------------------------------------------------------

namespace detail {
inline std::vector<Tool> adopt_all(const AgentTool* raw, std::size_t count) {
    std::vector<Tool> tools;
    tools.reserve(count);
    for (std::size_t i = 0; i < count; i++) tools.push_back(Tool::adopt(raw[i]));
    return tools;
}
}  // namespace detail

// pi-coding-agent's tools (read, write, edit, ls, find, grep, bash) for the directory `root`.
// Every path the file tools use stays inside it (paths that lead out of the root are refused;
// pipes, sockets and devices too, without blocking). bash is not confined: its commands run with
// the host process's rights, anywhere the process can read and write; it is off by default and
// consent is its only gate. A file hard-linked in from outside is read unless refuseHardLinks is
// set. `options_json`: `{"tools"?: [...], "bash"?: bool, "bashTimeoutMs"?: number|null,
// "maxEditBytes"?: number, "refuseHardLinks"?: bool}` (see agent_coding_tools_new). They are
// ordinary tools: add them with Options::add_tool, alone or with your own.
inline Returned<std::vector<Tool>> coding_tools(std::string_view root, std::string_view options_json = {}) {
    AgentTool raw[8] = {};
    std::size_t count = 0;
    LIBAGENT_CHECK_(agent_coding_tools_new(detail::ptr(root), root.size(), detail::opt(options_json), options_json.size(),
                                           nullptr, nullptr, nullptr, raw, 8, &count));
    return detail::adopt_all(raw, count);
}

// The same with a consent hook, asked before write, edit and bash change anything, with
// `{"toolCallId", "tool", "args"}`: `(input_json) -> answer` (an empty answer or "true" allows;
// `{"allow":false,"reason":"..."}` or a thrown exception refuses, and the model sees the reason)
// or `(input_json, agent::HookCall)` answering later. It runs on the runtime thread, which every
// agent shares: to wait for a user, take the second form and answer from another thread.
template <class F>
Returned<std::vector<Tool>> coding_tools(std::string_view root, std::string_view options_json, F&& consent) {
    AgentTool raw[8] = {};
    std::size_t count = 0;
    LIBAGENT_TRY_(detail::install(detail::to_hook_fn(std::forward<F>(consent)), [&](void* data, AgentFinalizer fin) {
        return agent_coding_tools_new(detail::ptr(root), root.size(), detail::opt(options_json), options_json.size(),
                                      &detail::hook_trampoline, data, fin, raw, 8, &count);
    }));
    return detail::adopt_all(raw, count);
}

// ---- sessions ----------------------------------------------------------------------------------

// Which part of a session Session::get reads (AgentSessionPart).
enum class SessionPart : AgentSessionPart {
    Header = AGENT_SESSION_HEADER,    // the header entry (`{"type":"session","version":3,...}`)
    Entries = AGENT_SESSION_ENTRIES,  // every entry but the header, in file order
    Branch = AGENT_SESSION_BRANCH,    // the entries from the root to the leaf
    Context = AGENT_SESSION_CONTEXT,  // `{"messages","thinkingLevel","model"}` at the leaf
    Llm = AGENT_SESSION_LLM,          // the context's messages converted for a model
    LeafId = AGENT_SESSION_LEAF_ID,   // a JSON string, or null
    File = AGENT_SESSION_FILE,        // `{"path": string|null, "exists": bool}`
};

namespace detail {
// The text of a JSON string literal (libagent's own output: escapes decoded, \u included).
inline std::string unquote(std::string_view json) {
    std::string out;
    std::size_t i = json.find('"');
    if (i == std::string_view::npos) return out;
    auto hex = [&](std::size_t at) {
        unsigned value = 0;
        for (std::size_t k = at; k < at + 4 && k < json.size(); k++) {
            char c = json[k];
            value = value * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return value;
    };
    for (i++; i < json.size() && json[i] != '"'; i++) {
        if (json[i] != '\\') {
            out += json[i];
            continue;
        }
        char c = json[++i];
        unsigned cp = 0;
        switch (c) {
        case 'n': out += '\n'; continue;
        case 't': out += '\t'; continue;
        case 'r': out += '\r'; continue;
        case 'b': out += '\b'; continue;
        case 'f': out += '\f'; continue;
        case 'u':
            cp = hex(i + 1);
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < json.size() && json[i + 1] == '\\' && json[i + 2] == 'u') {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (hex(i + 3) - 0xDC00);
                i += 6;
            }
            break;
        default: out += c; continue;
        }
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    return out;
}
}  // namespace detail

// A session: pi-coding-agent's session file (JSONL, version 3: a tree of entries whose leaf is the
// current position), or one kept in memory. Move-only; its destructor releases the handle (an
// agent built with it keeps the file open until that agent is destroyed). Attach it to an agent
// with Options::set_session: the agent starts from its context and appends every message it
// commits, and every model and thinking-level change.
//
// `options_json` of the factories: empty or `{"cwd"?: string (default: the process's working
// directory), "durability"?: "flush" (default: flushed per entry) | "fsync"}`. Failures carry
// AGENT_ERR_IO (a file-system error, naming the path), AGENT_ERR_LOCKED (the file is open for
// writing elsewhere), AGENT_ERR_NOT_A_SESSION (not a session file, or a newer version) or
// AGENT_ERR_INVALID_ARGUMENT (e.g. an entry id that is not in the session).
class Session {
public:
    // Opens the session file at `path` (a missing file becomes a new session written there).
    static Returned<Session> open(std::string_view path, std::string_view options_json = {}) {
        AgentSession raw{0};
        LIBAGENT_CHECK_(agent_session_open(detail::ptr(path), path.size(), detail::opt(options_json),
                                           options_json.size(), &raw));
        return Session(raw);
    }
    // A new session in the directory `dir` (its file is written with the first user or assistant
    // message).
    static Returned<Session> create(std::string_view dir, std::string_view options_json = {}) {
        AgentSession raw{0};
        LIBAGENT_CHECK_(agent_session_create(detail::ptr(dir), dir.size(), detail::opt(options_json),
                                             options_json.size(), &raw));
        return Session(raw);
    }
    // The newest session file in `dir`, or a new session there when it has none.
    static Returned<Session> continue_recent(std::string_view dir, std::string_view options_json = {}) {
        AgentSession raw{0};
        LIBAGENT_CHECK_(agent_session_continue_recent(detail::ptr(dir), dir.size(), detail::opt(options_json),
                                                      options_json.size(), &raw));
        return Session(raw);
    }
    // A session that is never written to disk.
    static Returned<Session> in_memory(std::string_view options_json = {}) {
        AgentSession raw{0};
        LIBAGENT_CHECK_(agent_session_in_memory(detail::opt(options_json), options_json.size(), &raw));
        return Session(raw);
    }
    // pi's per-directory layout: the directory under `base` that holds the sessions of the working
    // directory `cwd` (for create / continue_recent).
    static Returned<std::string> directory(std::string_view base, std::string_view cwd) {
        char* path = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_session_directory(detail::ptr(base), base.size(), detail::ptr(cwd), cwd.size(), &path, &len));
        return detail::take(path, len);
    }

    Session(Session&& other) noexcept : raw_(std::exchange(other.raw_, AgentSession{0})) {}
    Session& operator=(Session&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentSession{0});
        }
        return *this;
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    ~Session() { free_handle(); }

    // Appends an entry `{"type": ..., members}` at the leaf (libagent fills id, parentId and
    // timestamp) and returns its id; the entry becomes the leaf.
    Returned<std::string> append(std::string_view entry_json) {
        char* id = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_session_append(raw_, detail::ptr(entry_json), entry_json.size(), &id, &len));
        return detail::take(id, len);
    }
    // Labels the entry `target_id` (pi's label entry; an empty text clears its label).
    Returned<std::string> label(std::string_view target_id, std::string_view text) {
        return append("{\"type\":\"label\",\"targetId\":" + quote(target_id) + ",\"label\":" + quote(text) + "}");
    }
    // Moves the leaf to the entry `entry_id`: the next entry continues from there (a new branch).
    Returned<void> branch(std::string_view entry_id) {
        LIBAGENT_CHECK_(agent_session_branch(raw_, detail::ptr(entry_id), entry_id.size()));
        LIBAGENT_OK_;
    }
    // Moves the leaf before the first entry (the next entry starts a new root).
    Returned<void> reset_leaf() {
        LIBAGENT_CHECK_(agent_session_branch(raw_, nullptr, 0));
        LIBAGENT_OK_;
    }
    // Branches to `entry_id` (empty: before the first entry) and appends a branch summary there,
    // `{"summary", "details"?, "fromHook"?, "usage"?}`; returns its id.
    Returned<std::string> branch_with_summary(std::string_view entry_id, std::string_view summary_json) {
        char* id = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_session_branch_with_summary(raw_, detail::opt(entry_id), entry_id.size(),
                                                          detail::ptr(summary_json), summary_json.size(), &id, &len));
        return detail::take(id, len);
    }
    // pi's createBranchedSession: a new session file holding the path from the root to
    // `entry_id`; this Session then writes to that file.
    Returned<void> fork(std::string_view entry_id) {
        LIBAGENT_CHECK_(agent_session_fork(raw_, detail::ptr(entry_id), entry_id.size()));
        LIBAGENT_OK_;
    }

    // A part of the session as JSON (see SessionPart).
    Returned<std::string> get(SessionPart part) const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_session_get(raw_, static_cast<AgentSessionPart>(part), &json, &len));
        return detail::take(json, len);
    }
    Returned<std::string> header() const { return get(SessionPart::Header); }
    // A JSON array of every entry but the header, in file order.
    Returned<std::string> entries() const { return get(SessionPart::Entries); }
    // A JSON array of the entries from the root to the leaf.
    Returned<std::string> branch_path() const { return get(SessionPart::Branch); }
    // `{"messages": [...], "thinkingLevel": "...", "model": {"provider","modelId"} | null}` at the leaf.
    Returned<std::string> context() const { return get(SessionPart::Context); }
    // The context's messages converted for a model (a JSON array).
    Returned<std::string> llm_messages() const { return get(SessionPart::Llm); }
    // `{"path": string|null, "exists": bool}`: the file (null in memory), and whether it is written yet.
    Returned<std::string> file() const { return get(SessionPart::File); }
    // The leaf entry's id (nullopt before the first entry).
    Returned<std::optional<std::string>> leaf_id() const {
#ifdef LIBAGENT_NO_EXCEPTIONS
        auto json = get(SessionPart::LeafId);
        if (!json) return json.error();
        const std::string& text = *json;
#else
        std::string text = get(SessionPart::LeafId);
#endif
        if (text.empty() || text[0] != '"') return std::optional<std::string>();
        return std::optional<std::string>(detail::unquote(text));
    }

    AgentSession get() const noexcept { return raw_; }
    explicit operator bool() const noexcept { return raw_.id != 0; }

private:
    explicit Session(AgentSession raw) noexcept : raw_(raw) {}
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_session_free(std::exchange(raw_, AgentSession{0})));
    }
    AgentSession raw_{0};
};

// ---- MCP servers -------------------------------------------------------------------------------

// The MCP servers of one configuration, `{"mcpServers": {"<name>": {...}}}` (stdio: "command",
// "args"?, "env"?, "cwd"?; streamable HTTP: "url", "headers"?; both: "type"?, "timeout"? in
// seconds, default 60, "enabled"?; `${VAR}` in env and headers values is replaced from the
// environment; see agent_mcp_connect). Connecting returns at once: the servers connect in the
// background. A wrong entry (the legacy SSE transport, a missing command, an unset variable) is a
// failed server of its own, reported by servers(); the others still connect.
//
// Attach the set with Options::add_mcp (the agent takes the servers' current tools at each turn,
// and a prompt first waits up to 10 s for servers still connecting), or take the tools once with
// tools(). Move-only; the destructor releases the handle: the servers end then, unless an agent
// holds the set (they end with the last such agent). close() ends them at once.
class Mcp {
public:
    static Returned<Mcp> connect(std::string_view config_json) {
        AgentMcp raw{0};
        LIBAGENT_CHECK_(agent_mcp_connect(detail::ptr(config_json), config_json.size(), &raw));
        return Mcp(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    explicit Mcp(std::string_view config_json) : Mcp(connect(config_json)) {}
#endif
    Mcp(Mcp&& other) noexcept : raw_(std::exchange(other.raw_, AgentMcp{0})) {}
    Mcp& operator=(Mcp&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentMcp{0});
        }
        return *this;
    }
    Mcp(const Mcp&) = delete;
    Mcp& operator=(const Mcp&) = delete;
    ~Mcp() { free_handle(); }

    // Waits until no server is still connecting (true), or `timeout` passed (false). Not inside a
    // libagent callback (AGENT_ERR_WOULD_DEADLOCK).
    Returned<bool> wait(std::chrono::milliseconds timeout) const {
        bool settled = false;
        auto ms = timeout.count() > 0 ? static_cast<std::uint64_t>(timeout.count()) : 0;
        LIBAGENT_CHECK_(agent_mcp_wait(raw_, ms, &settled));
        return settled;
    }
    // The servers as JSON, in the configuration's order: `[{"name", "state" ("connecting",
    // "ready", "failed", "disabled" or "closed"), "toolCount", "lastError" (null or a sentence
    // ending with the server's last stderr), "skipped"}]`.
    Returned<std::string> servers() const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_mcp_servers_json(raw_, &json, &len));
        return detail::take(json, len);
    }
    // The definitions of the tools the ready servers offer now: `[{"name", "label",
    // "description", "parameters"}]`, in the order of tools().
    Returned<std::string> tools_json() const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_mcp_tools_json(raw_, &json, &len));
        return detail::take(json, len);
    }
    // The tools the ready servers offer now, named `mcp__<server>__<tool>` as pi-coding-agent
    // names them; ordinary tools for Options::add_tool. They outlive the set: once it is closed,
    // their calls fail with a sentence saying so.
    Returned<std::vector<Tool>> tools() const {
        for (;;) {
            std::size_t count = 0;
            LIBAGENT_CHECK_(agent_mcp_tool_count(raw_, &count));
            std::vector<AgentTool> raw(count + 1);
            AgentError* error = agent_mcp_tools(raw_, raw.data(), count, &count);
            // AGENT_ERR_INVALID_ARGUMENT: a server announced more tools meanwhile; ask again.
            if (error && agent_error_code(error) == AGENT_ERR_INVALID_ARGUMENT) {
                agent_error_free(error);
                continue;
            }
            LIBAGENT_CHECK_(error);
            return detail::adopt_all(raw.data(), count);
        }
    }
    // Ends every server: a stdio server's stdin is closed, then its process group gets SIGTERM,
    // then SIGKILL, so nothing of it is left. Closing twice is harmless.
    Returned<void> close() {
        LIBAGENT_CHECK_(agent_mcp_close(raw_));
        LIBAGENT_OK_;
    }

    AgentMcp get() const noexcept { return raw_; }
    explicit operator bool() const noexcept { return raw_.id != 0; }

private:
    explicit Mcp(AgentMcp raw) noexcept : raw_(raw) {}
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_mcp_free(std::exchange(raw_, AgentMcp{0})));
    }
    AgentMcp raw_{0};
};

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
    // All defaults (without exceptions, a failure leaves it empty: every use then fails).
    Options() {
        AgentError* error = agent_options_new(nullptr, 0, &raw_);
#ifndef LIBAGENT_NO_EXCEPTIONS
        detail::check(error);
#else
        agent_error_free(error);
#endif
    }
    // `{"initialState": {...}, "steeringMode"?, ...}` (see agent_options_new).
    static Returned<Options> create(std::string_view options_json) {
        AgentOptions raw{0};
        LIBAGENT_CHECK_(agent_options_new(detail::ptr(options_json), options_json.size(), &raw));
        return Options(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    explicit Options(std::string_view options_json) : Options(create(options_json)) {}
#endif
    Options(Options&& other) noexcept : raw_(std::exchange(other.raw_, AgentOptions{0})) {}
    Options& operator=(Options&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentOptions{0});
        }
        return *this;
    }
    Options(const Options&) = delete;
    Options& operator=(const Options&) = delete;
    ~Options() { free_handle(); }

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
        LIBAGENT_CHECK_(agent_options_set_scripted_model(raw_, detail::ptr(script_json), script_json.size()));
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
    // A hook: `(input_json, agent::HookCall)` or `(input_json) -> answer` (see Agent::set_hook).
    template <class F>
    LIBAGENT_SELF_ set_hook(HookKind kind, F&& hook) {
        AgentOptions raw = raw_;
        LIBAGENT_TRY_(detail::install_hook(
            kind, std::forward<F>(hook),
            [](void* target, AgentHookKind k, AgentHookFn fn, void* data, AgentFinalizer fin) {
                return agent_options_set_hook(*static_cast<AgentOptions*>(target), k, fn, data, fin);
            },
            &raw));
        LIBAGENT_RETURN_SELF_;
    }
    // Host-pumped mode: the agent's callbacks run only inside `dispatcher.dispatch()` (and in a
    // Run::wait / Agent::wait_for_idle on the dispatching thread), on the host's thread.
    LIBAGENT_SELF_ set_dispatcher(const Dispatcher& dispatcher) {
        LIBAGENT_CHECK_(agent_options_set_dispatcher(raw_, dispatcher.get()));
        LIBAGENT_RETURN_SELF_;
    }

    // The agent appends to `session` as it runs (every message it commits, model and
    // thinking-level changes) and starts from its context; one agent per session
    // (AGENT_ERR_INVALID_STATE when it already has one). The Session may be destroyed afterwards.
    // Gives the agent the tools of an MCP server set, besides its own: it takes the set's
    // current tools at each turn (see Mcp). The options keep the set; the Mcp may be destroyed.
    LIBAGENT_SELF_ add_mcp(const Mcp& mcp) {
        LIBAGENT_CHECK_(agent_options_add_mcp(raw_, mcp.get()));
        LIBAGENT_RETURN_SELF_;
    }
    LIBAGENT_SELF_ set_session(const Session& session) {
        LIBAGENT_CHECK_(agent_options_set_session(raw_, session.get()));
        LIBAGENT_RETURN_SELF_;
    }

    AgentOptions get() const noexcept { return raw_; }
    explicit operator bool() const noexcept { return raw_.id != 0; }
    // Gives up ownership (the caller frees or consumes the raw options).
    AgentOptions release() noexcept { return std::exchange(raw_, AgentOptions{0}); }

private:
    explicit Options(AgentOptions raw) noexcept : raw_(raw) {}
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_options_free(std::exchange(raw_, AgentOptions{0})));
    }
    AgentOptions raw_{0};
};
#undef LIBAGENT_SELF_
#undef LIBAGENT_RETURN_SELF_

// ---- the agent ---------------------------------------------------------------------------------

// An agent. Move-only; its destructor frees it (a running run is cancelled and settles with
// RunStatus::Freed). Every method may be called from any thread.
class Agent {
public:
    // Consumes `options` (also on failure). Fails with AGENT_ERR_NO_STREAM_FN without a model.
    static Returned<Agent> create(Options options) {
        AgentHandle raw{0};
        AgentError* error = agent_new(options.release(), &raw);
        if (error && agent_error_code(error) == AGENT_ERR_NO_STREAM_FN) {  // the reference's text names JavaScript's API
            agent_error_free(error);
            LIBAGENT_FAIL_(AGENT_ERR_NO_STREAM_FN,
                           "No model to talk to: call Options::set_stream_fn, set_scripted_model or use_providers "
                           "(the built-in providers, for a model with api openai-completions, anthropic-messages, "
                           "openai-responses or google-generative-ai), "
                           "or set a process-wide default with agent::set_default_stream_fn.");
        }
        LIBAGENT_CHECK_(error);
        return Agent(raw);
    }
#ifndef LIBAGENT_NO_EXCEPTIONS
    explicit Agent(Options options) : Agent(create(std::move(options))) {}
#endif
    // Takes ownership of a raw handle.
    explicit Agent(AgentHandle raw) noexcept : raw_(raw) {}
    Agent(Agent&& other) noexcept : raw_(std::exchange(other.raw_, AgentHandle{0})) {}
    Agent& operator=(Agent&& other) noexcept {
        if (this != &other) {
            free_handle();
            raw_ = std::exchange(other.raw_, AgentHandle{0});
        }
        return *this;
    }
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;
    ~Agent() { free_handle(); }

    // -- runs. Each starts a run and returns its Run at once (wait() for the outcome); `done`
    // (optional) is called once with the outcome when it settled. While a run is active they fail
    // with AGENT_ERR_BUSY and the reference's text (then `done` is never called).

    // prompt(text).
    Returned<Run> prompt(std::string_view text, DoneFn done = {}) {
        return start(std::move(done), [&](AgentDoneFn fn, void* data, AgentRun* run) {
            return agent_prompt_text(raw_, detail::ptr(text), text.size(), nullptr, 0, fn, data, run);
        });
    }
    // prompt(text, images): `images_json` is a JSON array of image blocks.
    Returned<Run> prompt(std::string_view text, std::string_view images_json, DoneFn done = {}) {
        return start(std::move(done), [&](AgentDoneFn fn, void* data, AgentRun* run) {
            return agent_prompt_text(raw_, detail::ptr(text), text.size(), detail::opt(images_json),
                                     images_json.size(), fn, data, run);
        });
    }
    // prompt(input): a JSON string, one message object, or an array of messages.
    Returned<Run> prompt_json(std::string_view input_json, DoneFn done = {}) {
        return start(std::move(done), [&](AgentDoneFn fn, void* data, AgentRun* run) {
            return agent_prompt(raw_, detail::ptr(input_json), input_json.size(), fn, data, run);
        });
    }
    // continue().
    Returned<Run> continue_run(DoneFn done = {}) {
        return start(std::move(done), [&](AgentDoneFn fn, void* data, AgentRun* run) {
            return agent_continue(raw_, fn, data, run);
        });
    }

    // Compacts the conversation now (agent_compact): the older messages become a summary (from
    // the HookKind::Compact hook or the agent's model), `focus` (empty: none) says what it should
    // keep. Events CompactionStart/End with reason "manual". The run ends RunStatus::Failed when
    // there is nothing to compact or no summary could be made, RunStatus::Aborted when aborted or
    // the hook cancelled (the transcript is then unchanged).
    Returned<Run> compact(std::string_view focus = {}, DoneFn done = {}) {
        return start(std::move(done), [&](AgentDoneFn fn, void* data, AgentRun* run) {
            return agent_compact(raw_, detail::opt(focus), focus.size(), fn, data, run);
        });
    }

    // The same without a Run: fire and forget, `done` reports how the run ended.
    Returned<void> prompt_async(std::string_view text, DoneFn done = {}) {
        LIBAGENT_TRY_(prompt(text, std::move(done)));
        LIBAGENT_OK_;
    }
    Returned<void> prompt_async(std::string_view text, std::string_view images_json, DoneFn done = {}) {
        LIBAGENT_TRY_(prompt(text, images_json, std::move(done)));
        LIBAGENT_OK_;
    }
    Returned<void> prompt_json_async(std::string_view input_json, DoneFn done = {}) {
        LIBAGENT_TRY_(prompt_json(input_json, std::move(done)));
        LIBAGENT_OK_;
    }
    Returned<void> continue_async(DoneFn done = {}) {
        LIBAGENT_TRY_(continue_run(std::move(done)));
        LIBAGENT_OK_;
    }
    Returned<void> compact_async(std::string_view focus = {}, DoneFn done = {}) {
        LIBAGENT_TRY_(compact(focus, std::move(done)));
        LIBAGENT_OK_;
    }

    // Waits until the active run (if any) finished its cleanup; false when `timeout` ran out
    // (nullopt: forever). Throws AGENT_ERR_WOULD_DEADLOCK inside a callback of this agent.
    Returned<bool> wait_for_idle(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
        AgentWaitResult result = AGENT_WAIT_TIMEOUT;
        LIBAGENT_CHECK_(
            agent_wait_for_idle(raw_, timeout ? static_cast<std::int64_t>(timeout->count()) : -1, &result));
        return result == AGENT_WAIT_DONE;
    }

    Returned<void> steer(std::string_view message_json) {
        LIBAGENT_CHECK_(agent_steer(raw_, detail::ptr(message_json), message_json.size()));
        LIBAGENT_OK_;
    }
    Returned<void> follow_up(std::string_view message_json) {
        LIBAGENT_CHECK_(agent_follow_up(raw_, detail::ptr(message_json), message_json.size()));
        LIBAGENT_OK_;
    }
    // Aborts whatever run is active (Run::abort aborts one run only).
    Returned<void> abort() {
        LIBAGENT_CHECK_(agent_abort(raw_));
        LIBAGENT_OK_;
    }
    Returned<void> reset() {
        LIBAGENT_CHECK_(agent_reset(raw_));
        LIBAGENT_OK_;
    }

    // -- state
    // The whole state as JSON (costs the transcript's size: per-frame readers use message_count /
    // message / messages).
    Returned<std::string> state() const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_get_state(raw_, &json, &len));
        return detail::take(json, len);
    }
    // The number of messages in the transcript (O(1)).
    Returned<std::size_t> message_count() const {
        std::size_t count = 0;
        LIBAGENT_CHECK_(agent_get_message_count(raw_, &count));
        return count;
    }
    // The message at `index` (AGENT_ERR_INVALID_ARGUMENT out of range).
    Returned<std::string> message(std::size_t index) const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_get_message(raw_, index, &json, &len));
        return detail::take(json, len);
    }
    // A JSON array of the messages `start .. start + count`, clamped to the transcript.
    Returned<std::string> messages(std::size_t start, std::size_t count) const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_get_messages(raw_, start, count, &json, &len));
        return detail::take(json, len);
    }
    Returned<void> set_messages(std::string_view messages_json) {
        LIBAGENT_CHECK_(agent_set_messages(raw_, detail::ptr(messages_json), messages_json.size()));
        LIBAGENT_OK_;
    }
    Returned<void> set_tools(std::initializer_list<std::reference_wrapper<const Tool>> tools) {
        return set_tools(std::vector<std::reference_wrapper<const Tool>>(tools));
    }
    Returned<void> set_tools(const std::vector<std::reference_wrapper<const Tool>>& tools) {
        std::vector<AgentTool> raw;
        raw.reserve(tools.size());
        for (const Tool& tool : tools) raw.push_back(tool.get());
        LIBAGENT_CHECK_(agent_set_tools(raw_, raw.data(), raw.size()));
        LIBAGENT_OK_;
    }
    Returned<void> configure(std::string_view patch_json) {
        LIBAGENT_CHECK_(agent_configure(raw_, detail::ptr(patch_json), patch_json.size()));
        LIBAGENT_OK_;
    }

    // -- queues
    Returned<std::string> peek_queued_messages() const {
        char* json = nullptr;
        std::size_t len = 0;
        LIBAGENT_CHECK_(agent_peek_queued_messages(raw_, &json, &len));
        return detail::take(json, len);
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
    // A hook: deferred `(std::string_view input_json, agent::HookCall call)`, or synchronous
    // `(input_json) -> std::string | std::optional<std::string> | void` (nullopt/void: "returns
    // nothing"). Captured when the next run starts.
    template <class F>
    Returned<void> set_hook(HookKind kind, F&& hook) {
        return detail::install_hook(
            kind, std::forward<F>(hook),
            [](void* target, AgentHookKind k, AgentHookFn fn, void* data, AgentFinalizer fin) {
                return agent_set_hook(*static_cast<AgentHandle*>(target), k, fn, data, fin);
            },
            &raw_);
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
        LIBAGENT_CHECK_(agent_set_scripted_model(raw_, detail::ptr(script_json), script_json.size()));
        LIBAGENT_OK_;
    }
    // The built-in providers from the next run on (see Options::use_providers).
    Returned<void> use_providers() {
        LIBAGENT_CHECK_(agent_use_providers(raw_));
        LIBAGENT_OK_;
    }

    // -- events
    // A listener `(const agent::Event&)`, called for every event; the loop goes on when it returns
    // (or, after `event.defer()`, when the Reply is answered). An exception fails the run.
    // Returns the subscription id for `unsubscribe`.
    Returned<std::uint64_t> subscribe(ListenerFn listener) {
        std::uint64_t id = 0;
        LIBAGENT_TRY_(detail::install(std::move(listener), [&](void* data, AgentFinalizer fin) {
            return agent_subscribe(raw_, &detail::listener_trampoline, data, fin, &id);
        }));
        return id;
    }
    Returned<void> unsubscribe(std::uint64_t id) {
        LIBAGENT_CHECK_(agent_unsubscribe(raw_, id));
        LIBAGENT_OK_;
    }

    // A pull queue of every event (`{"capacity": N}`; empty = defaults).
    Returned<EventQueue> events(std::string_view options_json = {}) {
        AgentQueue queue{0};
        LIBAGENT_CHECK_(agent_queue_open(raw_, detail::opt(options_json), options_json.size(), &queue));
        return EventQueue(queue);
    }

    AgentHandle get() const noexcept { return raw_; }
    explicit operator bool() const noexcept { return raw_.id != 0; }
    AgentHandle release() noexcept { return std::exchange(raw_, AgentHandle{0}); }

private:
    void free_handle() noexcept {
        if (raw_.id) agent_error_free(agent_free(std::exchange(raw_, AgentHandle{0})));
    }

    // Starts a run with an optional `done`, deleting it when the run did not start.
    template <class Starter>
    Returned<Run> start(DoneFn done, Starter&& starter) {
        AgentRun run{0};
        if (!done) {
            LIBAGENT_CHECK_(starter(nullptr, nullptr, &run));
            return Run(run);
        }
        auto owned = std::make_unique<DoneFn>(std::move(done));
        AgentError* error = starter(&detail::done_trampoline, owned.get(), &run);
        if (!error) owned.release();
        LIBAGENT_CHECK_(error);
        return Run(run);
    }

    AgentHandle raw_{0};
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
    LIBAGENT_CHECK_(agent_set_default_scripted_model(detail::ptr(script_json), script_json.size()));
    LIBAGENT_OK_;
}

}  // namespace agent

#undef LIBAGENT_FAIL_
#undef LIBAGENT_CHECK_
#undef LIBAGENT_TRY_
#undef LIBAGENT_OK_
#undef LIBAGENT_SETTLE_
#undef LIBAGENT_HAS_EXCEPTIONS_

#endif  // LIBAGENT_AGENT_HPP

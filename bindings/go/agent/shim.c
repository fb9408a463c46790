/* See shim.h. */
#include "shim.h"
#include "_cgo_export.h"

#define UD ((uintptr_t)ud)

static void finalize(void *ud) { goAgentFinalize(UD); }

static void done(void *ud, AgentRun run, const AgentRunOutcome *outcome) {
    (void)run;
    goAgentDone(UD, (AgentRunOutcome *)outcome);
}

static void hook(void *ud, const char *input, size_t len, AgentHookCall call) {
    goAgentHook(UD, (char *)input, len, call);
}

static void stream(void *ud, const char *request, size_t len, AgentStream s) {
    goAgentStream(UD, (char *)request, len, s);
}

static void on_abort(void *ud) { goAgentAbort(UD); }

static void consumed(void *ud, AgentStream s) { goAgentConsumed(UD, s); }

static void tool_execute(void *ud, const char *id, size_t id_len, const char *args, size_t args_len,
                         AgentToolCall call) {
    goAgentToolExecute(UD, (char *)id, id_len, (char *)args, args_len, call);
}

static void prepare(void *ud, const char *args, size_t len, AgentHookCall call) {
    goAgentPrepare(UD, (char *)args, len, call);
}

static AgentListenerAnswer listener(void *ud, const AgentEvent *event) {
    return goAgentListener(UD, (AgentEvent *)event);
}

const AgentFinalizer ga_finalize = finalize;
const AgentDoneFn ga_done = done;
const AgentHookFn ga_hook = hook;
const AgentStreamFn ga_stream = stream;
const AgentAbortFn ga_abort = on_abort;
const AgentConsumedFn ga_consumed = consumed;
const AgentToolExecuteFn ga_tool_execute = tool_execute;
const AgentPrepareArgumentsFn ga_prepare = prepare;
const AgentListenerFn ga_listener = listener;

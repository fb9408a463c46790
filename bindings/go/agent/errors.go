package agent

import (
	"fmt"
	"regexp"
)

// Status is a libagent status code (AGENT_OK or a negative AGENT_ERR_* value). The non-zero
// values are also sentinel errors: errors.Is(err, agent.ErrBusy) matches every *Error with
// that status.
type Status int32

// The error codes of <libagent/agent.h>, and the Go binding's own statuses of a run's outcome
// and of waits (ErrTimeout, ErrClosed, ErrFreed, ErrRunFailed, ErrModelError, ErrRunAborted:
// libagent reports those as results, the binding as errors).
const (
	OK                  Status = 0
	ErrNull             Status = -1
	ErrInvalidHandle    Status = -2
	ErrInvalidUTF8      Status = -3
	ErrInvalidJSON      Status = -4
	ErrBusy             Status = -5
	ErrInvalidState     Status = -6
	ErrAlreadyCompleted Status = -7
	ErrStreamClosed     Status = -8
	ErrWouldDeadlock    Status = -9
	ErrTimeout          Status = -10
	ErrClosed           Status = -11
	ErrFreed            Status = -12
	ErrNoStreamFn       Status = -13
	ErrRunFailed        Status = -14
	ErrInvalidArgument  Status = -15
	ErrInternal         Status = -16
	// A file-system error of a session (the message names the path and the OS error).
	ErrIO Status = -17
	// The session file is open for writing elsewhere (another process or Session).
	ErrLocked Status = -18
	// The file is not a session file (a bad header, a newer version, too large).
	ErrNotASession Status = -19

	// A run ended with stopReason "error" (a failed model request, stream function or hook);
	// the *Error's Message is the run's errorMessage. (The binding's own statuses of results
	// lie outside the range of libagent's codes.)
	ErrModelError Status = -1001
	// A run was aborted (stopReason "aborted"); such an *Error also matches ErrAborted.
	ErrRunAborted Status = -1002
)

var statusNames = map[Status]string{
	OK:                  "ok",
	ErrNull:             "null pointer",
	ErrInvalidHandle:    "invalid handle",
	ErrInvalidUTF8:      "invalid UTF-8",
	ErrInvalidJSON:      "invalid JSON",
	ErrBusy:             "busy",
	ErrInvalidState:     "invalid state",
	ErrAlreadyCompleted: "already completed",
	ErrStreamClosed:     "stream closed",
	ErrWouldDeadlock:    "would deadlock",
	ErrTimeout:          "timeout",
	ErrClosed:           "closed",
	ErrFreed:            "agent freed",
	ErrNoStreamFn:       "no stream function",
	ErrRunFailed:        "run failed",
	ErrInvalidArgument:  "invalid argument",
	ErrInternal:         "internal error",
	ErrIO:               "I/O error",
	ErrLocked:           "session locked",
	ErrNotASession:      "not a session file",
	ErrModelError:       "model error",
	ErrRunAborted:       "run aborted",
}

// String names the status.
func (s Status) String() string {
	if name, ok := statusNames[s]; ok {
		return name
	}
	return fmt.Sprintf("status %d", int32(s))
}

// Error makes a Status usable as a sentinel error.
func (s Status) Error() string { return "libagent: " + s.String() }

// Error is a failed libagent call: its status and the library's message (the AgentError the
// call returned), or the message a run failed with.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "libagent: " + e.Status.String()
	}
	return fmt.Sprintf("libagent: %s (%s)", e.Message, e.Status.String())
}

// Unwrap returns the Status, so errors.Is(err, agent.ErrBusy) works.
func (e *Error) Unwrap() error { return e.Status }

// Is makes an aborted run's error match ErrAborted too.
func (e *Error) Is(target error) bool { return target == ErrAborted && e.Status == ErrRunAborted }

// libagent's texts name what a C caller passed (patch_json, agent_wait_for_idle), the options'
// JSON keys (initialState.systemPrompt, idleTimeoutMs) and, where the reference's text is kept,
// JavaScript functions (streamFn, setDefaultStreamFn()). goText gives them the names a Go
// caller wrote.
var (
	wholeTexts = map[string]string{
		referenceNoModel: noModel,
		"initialState.tools cannot be JSON: tools carry code (agent_options_add_tool in C, InitialState::tools in Rust).": "Tools cannot be given as JSON: set Options.Tools.",
		`options_json's "durability" must be "flush" or "fsync".`:                                                         `SessionOptions.Durability must be "flush" or "fsync".`,
	}
	cNames = map[string]string{
		"options_json": "the Options", "patch_json": "the Configure patch", "messages_json": "messages",
		"message_json": "the message", "images_json": "the images", "input_json": "the prompt",
		"result_json": "the Result", "partial_result_json": "the partial Result", "event_json": "the stream event",
		"script_json": "the ScriptedModel script", "definition_json": "the tool definition",
		"entry_json": "the entry", "summary_json": "the summary",
		"agent_wait_for_idle": "WaitIdle", "agent_queue_next": "Events", "agent_run_wait": "Run.Wait",
		"initialState.systemPrompt": "Options.SystemPrompt", "initialState.thinkingLevel": "Options.ThinkingLevel",
		"initialState.messages": "Options.Messages", "initialState.model": "Options.Model",
		"initialState": "the initial state",
	}
	cName = regexp.MustCompile(`(^|[^\w.])(initialState\.\w+|initialState|\w+_json|agent_wait_for_idle|agent_queue_next|agent_run_wait)\b`)
	// An option named in parentheses, as a run's error names the limit it hit: "(idleTimeoutMs)".
	optionInParens = regexp.MustCompile(`\((\w+)\)`)
)

func goText(message string) string {
	if text, ok := wholeTexts[message]; ok {
		return text
	}
	message = cName.ReplaceAllStringFunc(message, func(match string) string {
		m := cName.FindStringSubmatch(match)
		if goName, ok := cNames[m[2]]; ok {
			return m[1] + goName
		}
		return match
	})
	return optionInParens.ReplaceAllStringFunc(message, func(match string) string {
		if field, ok := optionFields[match[1:len(match)-1]]; ok {
			return "(Options." + field + ")"
		}
		return match
	})
}

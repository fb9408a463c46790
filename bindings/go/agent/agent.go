// Package agent is the Go binding of libagent, an embeddable agent runtime (the agent loop of
// pi agent core) with a C ABI. An Agent runs a conversation with a model (a StreamFunc, or the
// built-in scripted model) and Go tools; events arrive through Subscribe or Events.
//
// Threading: libagent runs every agent on its own runtime thread. Listeners given to
// Subscribe, Tool.PrepareArguments and Stream.OnConsumed callbacks run on that thread and must
// return quickly; tools, hooks and stream functions run on goroutines of their own. Every
// method may be called from any goroutine.
package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// ThinkingLevel is the reasoning effort asked of the model.
type ThinkingLevel string

// The thinking levels of SPEC 2.5.
const (
	ThinkingOff     ThinkingLevel = "off"
	ThinkingMinimal ThinkingLevel = "minimal"
	ThinkingLow     ThinkingLevel = "low"
	ThinkingMedium  ThinkingLevel = "medium"
	ThinkingHigh    ThinkingLevel = "high"
	ThinkingXHigh   ThinkingLevel = "xhigh"
	ThinkingMax     ThinkingLevel = "max"
)

// QueueMode says how many queued steering or follow-up messages are delivered at a time.
type QueueMode string

// The queue modes.
const (
	QueueAll        QueueMode = "all"
	QueueOneAtATime QueueMode = "one-at-a-time"
)

// ToolExecution says whether the tool calls of one assistant message run in parallel.
type ToolExecution string

// The tool execution modes.
const (
	ToolsParallel   ToolExecution = "parallel"
	ToolsSequential ToolExecution = "sequential"
)

// Model describes a chat model (SPEC 2.4). Options.Model also accepts any other
// JSON-marshalable value (e.g. a map with more fields, or json.RawMessage).
type Model struct {
	ID            string `json:"id"`
	Name          string `json:"name,omitempty"`
	API           string `json:"api"`
	Provider      string `json:"provider"`
	BaseURL       string `json:"baseUrl,omitempty"`
	Reasoning     bool   `json:"reasoning,omitempty"`
	ContextWindow int    `json:"contextWindow,omitempty"`
	MaxTokens     int    `json:"maxTokens,omitempty"`
}

// Options configure a new Agent. The zero value needs at least a StreamFunc or a ScriptedModel.
type Options struct {
	SystemPrompt  string
	Model         any // Model, map or json.RawMessage; nil: the placeholder model
	ThinkingLevel ThinkingLevel
	Messages      []json.RawMessage // the initial transcript
	Tools         []*Tool

	// The model: StreamFunc, or else ScriptedModel (the built-in scripted model's script:
	// an array of responses, see agent_options_set_scripted_model), or else UseProviders
	// (libagent's built-in providers speak HTTP to the endpoint Model describes: API
	// "openai-completions", "anthropic-messages", "openai-responses" or "google-generative-ai",
	// BaseURL; the key comes from Hooks.GetAPIKey or the provider's environment variable, e.g.
	// OPENAI_API_KEY or GEMINI_API_KEY), or else
	// the process-wide default stream function.
	StreamFunc    StreamFunc
	ScriptedModel any
	UseProviders  bool

	Hooks Hooks

	SteeringMode    QueueMode
	FollowUpMode    QueueMode
	ToolExecution   ToolExecution
	SessionID       string
	Transport       string
	ThinkingBudgets map[string]int
	MaxRetryDelayMs *int64
	Identity        any

	// Options of the built-in providers (nil / "": their defaults). MaxRetries retries a
	// failed request (429, 5xx, connection errors); the timeouts bound a whole request, its
	// connection and the wait between two bytes of the body; CACertificates (PEM text) and
	// CACertificateFile (a PEM file) add trusted certificate authorities.
	MaxRetries        *int
	TimeoutMs         *int64
	ConnectTimeoutMs  *int64
	IdleTimeoutMs     *int64
	CACertificates    string
	CACertificateFile string

	// EventShape is the JSON of events given to Subscribe listeners and Events channels.
	EventShape EventShape
	// EventQueueCapacity bounds the pull queue behind each Events channel (0: 1024); when it
	// is full the loop waits for the reader.
	EventQueueCapacity int
}

// Agent is one libagent agent. Close frees it; an Agent that becomes unreachable without
// Close is freed by a runtime cleanup.
type Agent struct {
	h        C.uintptr_t
	shape    EventShape
	capacity int

	closeOnce sync.Once
	closeErr  error
	cleanup   runtime.Cleanup
}

func (o *Options) json() (string, error) {
	initial := map[string]any{}
	if o.SystemPrompt != "" {
		initial["systemPrompt"] = o.SystemPrompt
	}
	if o.Model != nil {
		initial["model"] = rawOrValue(o.Model)
	}
	if o.ThinkingLevel != "" {
		initial["thinkingLevel"] = o.ThinkingLevel
	}
	if o.Messages != nil {
		initial["messages"] = o.Messages
	}
	top := map[string]any{"initialState": initial}
	if o.SteeringMode != "" {
		top["steeringMode"] = o.SteeringMode
	}
	if o.FollowUpMode != "" {
		top["followUpMode"] = o.FollowUpMode
	}
	if o.ToolExecution != "" {
		top["toolExecution"] = o.ToolExecution
	}
	if o.SessionID != "" {
		top["sessionId"] = o.SessionID
	}
	if o.Transport != "" {
		top["transport"] = o.Transport
	}
	if o.ThinkingBudgets != nil {
		top["thinkingBudgets"] = o.ThinkingBudgets
	}
	if o.MaxRetryDelayMs != nil {
		top["maxRetryDelayMs"] = *o.MaxRetryDelayMs
	}
	if o.Identity != nil {
		top["identity"] = rawOrValue(o.Identity)
	}
	for key, value := range map[string]any{"maxRetries": o.MaxRetries, "timeoutMs": o.TimeoutMs,
		"connectTimeoutMs": o.ConnectTimeoutMs, "idleTimeoutMs": o.IdleTimeoutMs} {
		if v := reflectNonNil(value); v != nil {
			top[key] = v
		}
	}
	if o.CACertificates != "" {
		top["caCertificates"] = o.CACertificates
	}
	if o.CACertificateFile != "" {
		top["caCertificateFile"] = o.CACertificateFile
	}
	return toJSON(top)
}

// rawOrValue keeps json.RawMessage / []byte as raw JSON inside a value that is marshaled.
func rawOrValue(v any) any {
	if b, ok := v.([]byte); ok {
		return json.RawMessage(b)
	}
	return v
}

// New builds an agent.
func New(opts Options) (*Agent, error) {
	text, err := opts.json()
	if err != nil {
		return nil, err
	}
	var options C.uintptr_t
	var errText *C.char
	p := cstr(text)
	err = check(C.ga_options_new(p, &options, &errText), errText)
	freeStr(p)
	if err != nil {
		return nil, goNames(err)
	}
	built := false
	defer func() {
		if !built {
			C.ga_options_free(options, nil)
		}
	}()
	for _, tool := range opts.Tools {
		ct, err := tool.newC()
		if err != nil {
			return nil, err
		}
		err = check(C.ga_options_add_tool(options, ct, &errText), errText)
		C.ga_tool_free(ct, nil) // the options hold their own reference
		if err != nil {
			return nil, err
		}
	}
	switch {
	case opts.StreamFunc != nil:
		ud := pin(&streamEntry{fn: opts.StreamFunc})
		if err := check(C.ga_options_set_stream_fn(options, ud, &errText), errText); err != nil {
			unpin(ud) // on failure the library took no reference
			return nil, err
		}
	case opts.ScriptedModel != nil:
		if err := withJSON(opts.ScriptedModel, func(s *C.char) error {
			return check(C.ga_options_set_scripted_model(options, s, &errText), errText)
		}); err != nil {
			return nil, err
		}
	case opts.UseProviders:
		if err := check(C.ga_options_use_providers(options, &errText), errText); err != nil {
			return nil, err
		}
	}
	for kind, fn := range opts.Hooks.byKind() {
		ud := pin(&hookEntry{fn: fn})
		if err := check(C.ga_options_set_hook(options, C.int32_t(kind), ud, &errText), errText); err != nil {
			unpin(ud)
			return nil, err
		}
	}
	var handle C.uintptr_t
	built = true // agent_new consumes the options, also on failure
	if err := check(C.ga_new(options, &handle, &errText), errText); err != nil {
		if errors.Is(err, ErrNoStreamFn) {
			err = &Error{Status: ErrNoStreamFn, Message: noModel}
		}
		return nil, err
	}
	a := &Agent{h: handle, shape: opts.EventShape, capacity: opts.EventQueueCapacity}
	a.cleanup = runtime.AddCleanup(a, func(h C.uintptr_t) {
		cleanupsRun.Add(1)
		C.ga_free(h, nil)
	}, handle)
	return a, nil
}

// Close frees the agent: an active run is cancelled (its Prompt returns an error matching
// ErrFreed), Events channels close once drained, and everything the agent held is released.
// Close never blocks on the run, is idempotent, and may be called from any goroutine,
// including inside callbacks.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.cleanup.Stop()
		var errText *C.char
		a.closeErr = check(C.ga_free(a.h, &errText), errText)
	})
	return a.closeErr
}

func (a *Agent) call(fn func(errText **C.char) C.AgentStatus) error {
	var errText *C.char
	err := check(fn(&errText), errText)
	runtime.KeepAlive(a) // the cleanup must not free the agent during the call
	return err
}

// --- runs ------------------------------------------------------------------------------------

// ErrAborted is the cause of a callback's context when its run was aborted.
var ErrAborted = errors.New("libagent: run aborted")

type doneEntry struct {
	ch    chan error
	agent C.uintptr_t
}

// runOutcome is how the run whose `done` is being called ended (read inside `done`, where the
// outcome is this run's): nil when it completed, an *Error with ErrModelError or ErrRunAborted
// and the run's errorMessage otherwise.
func runOutcome(agent C.uintptr_t) error {
	var status C.int32_t
	var message, errText *C.char
	if check(C.ga_last_run_outcome(agent, &status, &message, &errText), errText) != nil {
		return nil // the agent is being freed: `done` said what there is to say
	}
	text := takeString(message)
	if status == 0 {
		return nil
	}
	// e.g. a run without a model (SetStreamFunc(nil) and no default): the reference's text
	// names JavaScript's streamFn.
	return &Error{Status: Status(status), Message: goText(text)}
}

// Image is an image block of a prompt.
type Image struct {
	Data     string `json:"data"` // base64
	MimeType string `json:"mimeType"`
}

// Prompt starts a run with a text prompt (and images) and returns when the run settled. A run
// that ends with an error (stopReason "error": a failed model request, e.g. a wrong key or URL)
// returns an *Error with Status ErrModelError and the run's errorMessage; an aborted run
// (Abort) one with ErrRunAborted, which also matches errors.Is(err, ErrAborted). When ctx is
// cancelled first, the run is aborted; Prompt still waits for it to settle and then returns an
// error wrapping ctx's error.
func (a *Agent) Prompt(ctx context.Context, text string, images ...Image) error {
	return a.wait(ctx, a.promptStart(text, images))
}

// PromptMessages starts a run with messages (each a message object, JSON-marshalable) and
// waits for it like Prompt.
func (a *Agent) PromptMessages(ctx context.Context, messages ...any) error {
	return a.wait(ctx, a.messagesStart(messages))
}

// Continue continues from the current transcript (SPEC 7.7) and waits like Prompt.
func (a *Agent) Continue(ctx context.Context) error {
	return a.wait(ctx, func(ud C.uintptr_t, errText **C.char) C.AgentStatus {
		return C.ga_continue(a.h, ud, errText)
	})
}

// PromptAsync starts a run like Prompt and returns at once: the channel receives the run's
// outcome (nil on success, errors as Prompt returns them) when it settled. Errors starting the run are returned directly.
func (a *Agent) PromptAsync(text string, images ...Image) (<-chan error, error) {
	return a.start(a.promptStart(text, images))
}

// ContinueAsync is Continue without waiting.
func (a *Agent) ContinueAsync() (<-chan error, error) {
	return a.start(func(ud C.uintptr_t, errText **C.char) C.AgentStatus {
		return C.ga_continue(a.h, ud, errText)
	})
}

type starter func(ud C.uintptr_t, errText **C.char) C.AgentStatus

func (a *Agent) promptStart(text string, images []Image) starter {
	if len(images) == 0 {
		encoded, _ := json.Marshal(text) // a JSON string: NUL bytes survive, escaped
		return func(ud C.uintptr_t, errText **C.char) C.AgentStatus {
			p := cstr(string(encoded))
			defer freeStr(p)
			return C.ga_prompt(a.h, p, ud, errText)
		}
	}
	type block struct {
		Type string `json:"type"`
		Image
	}
	blocks := make([]block, len(images))
	for i, img := range images {
		blocks[i] = block{"image", img}
	}
	encoded, _ := json.Marshal(blocks)
	return func(ud C.uintptr_t, errText **C.char) C.AgentStatus {
		if strings.IndexByte(text, 0) >= 0 {
			*errText = cstr("text contains a NUL byte (not representable with images).")
			return C.AgentStatus(ErrInvalidArgument)
		}
		p, q := cstr(text), cstr(string(encoded))
		defer freeStr(p)
		defer freeStr(q)
		return C.ga_prompt_text(a.h, p, q, ud, errText)
	}
}

func (a *Agent) messagesStart(messages []any) starter {
	values := make([]any, len(messages))
	for i, m := range messages {
		values[i] = rawOrValue(m)
	}
	encoded, err := json.Marshal(values)
	return func(ud C.uintptr_t, errText **C.char) C.AgentStatus {
		if err != nil {
			*errText = cstr(err.Error())
			return C.AgentStatus(ErrInvalidJSON)
		}
		p := cstr(string(encoded))
		defer freeStr(p)
		return C.ga_prompt(a.h, p, ud, errText)
	}
}

func (a *Agent) start(fn starter) (<-chan error, error) {
	ch := make(chan error, 1)
	ud := pin(&doneEntry{ch: ch, agent: a.h})
	if err := a.call(func(errText **C.char) C.AgentStatus { return fn(ud, errText) }); err != nil {
		unpin(ud) // `done` is not called when the run did not start
		return nil, err
	}
	return ch, nil
}

func (a *Agent) wait(ctx context.Context, fn starter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A blocking wait inside a callback on the runtime thread could never finish: the library
	// reports that thread as AGENT_ERR_WOULD_DEADLOCK (a zero timeout never waits).
	if err := a.call(func(errText **C.char) C.AgentStatus { return C.ga_wait_for_idle(a.h, 0, errText) }); errors.Is(err, ErrWouldDeadlock) {
		return err
	}
	ch, err := a.start(fn)
	if err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		a.Abort()
		runErr := <-ch
		if runErr != nil {
			return errors.Join(context.Cause(ctx), runErr)
		}
		return context.Cause(ctx)
	}
}

// Abort aborts the active run (nothing happens when idle). It does not wait.
func (a *Agent) Abort() error {
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_abort(a.h, e) })
}

// WaitIdle returns when no run is active, or with ctx's error.
func (a *Agent) WaitIdle(ctx context.Context) error {
	const slice = 100 // ms per blocking wait, so that ctx is observed
	for {
		err := a.call(func(e **C.char) C.AgentStatus { return C.ga_wait_for_idle(a.h, slice, e) })
		if !errors.Is(err, ErrTimeout) {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}

// --- queues ----------------------------------------------------------------------------------

// UserMessage builds a user message with the current time.
func UserMessage(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": time.Now().UnixMilli()})
	return b
}

// Steer queues a steering message (any JSON-marshalable message object, e.g. UserMessage).
func (a *Agent) Steer(message any) error {
	return withJSON(message, func(p *C.char) error {
		return a.call(func(e **C.char) C.AgentStatus { return C.ga_steer(a.h, p, e) })
	})
}

// FollowUp queues a follow-up message, delivered when a run would otherwise stop.
func (a *Agent) FollowUp(message any) error {
	return withJSON(message, func(p *C.char) error {
		return a.call(func(e **C.char) C.AgentStatus { return C.ga_follow_up(a.h, p, e) })
	})
}

// QueuedMessages returns what peekQueuedMessages() returns.
func (a *Agent) QueuedMessages() ([]json.RawMessage, error) {
	var out *C.char
	if err := a.call(func(e **C.char) C.AgentStatus { return C.ga_peek_queued_messages(a.h, &out, e) }); err != nil {
		return nil, err
	}
	var messages []json.RawMessage
	err := json.Unmarshal([]byte(takeString(out)), &messages)
	return messages, err
}

// HasQueuedMessages says whether either queue holds messages.
func (a *Agent) HasQueuedMessages() (bool, error) {
	var has C.bool
	err := a.call(func(e **C.char) C.AgentStatus { return C.ga_has_queued_messages(a.h, &has, e) })
	return bool(has), err
}

// ClearSteeringQueue drops the queued steering messages.
func (a *Agent) ClearSteeringQueue() error {
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_clear_steering_queue(a.h, e) })
}

// ClearFollowUpQueue drops the queued follow-up messages.
func (a *Agent) ClearFollowUpQueue() error {
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_clear_follow_up_queue(a.h, e) })
}

// ClearAllQueues drops every queued message.
func (a *Agent) ClearAllQueues() error {
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_clear_all_queues(a.h, e) })
}

// --- state -----------------------------------------------------------------------------------

// State is a snapshot of the agent (agent_get_state); messages stay raw JSON.
type State struct {
	SystemPrompt     string            `json:"systemPrompt"`
	Model            json.RawMessage   `json:"model"`
	ThinkingLevel    ThinkingLevel     `json:"thinkingLevel"`
	Tools            []ToolDefinition  `json:"tools"`
	Messages         []json.RawMessage `json:"messages"`
	IsStreaming      bool              `json:"isStreaming"`
	StreamingMessage json.RawMessage   `json:"streamingMessage,omitempty"`
	PendingToolCalls []string          `json:"pendingToolCalls"`
	ErrorMessage     string            `json:"errorMessage,omitempty"`
	SteeringMode     QueueMode         `json:"steeringMode"`
	FollowUpMode     QueueMode         `json:"followUpMode"`
	SteeringQueue    []json.RawMessage `json:"steeringQueue"`
	FollowUpQueue    []json.RawMessage `json:"followUpQueue"`
	ToolExecution    ToolExecution     `json:"toolExecution"`
	SessionID        string            `json:"sessionId,omitempty"`
	Transport        string            `json:"transport,omitempty"`
	ThinkingBudgets  json.RawMessage   `json:"thinkingBudgets,omitempty"`
	MaxRetryDelayMs  *int64            `json:"maxRetryDelayMs,omitempty"`
	Identity         json.RawMessage   `json:"identity,omitempty"`
}

// ToolDefinition is a tool as the state lists it.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Label       string          `json:"label,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// State returns a snapshot of the agent's state.
func (a *Agent) State() (*State, error) {
	raw, err := a.StateJSON()
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// StateJSON returns the state snapshot as the library renders it.
func (a *Agent) StateJSON() (json.RawMessage, error) {
	var out *C.char
	if err := a.call(func(e **C.char) C.AgentStatus { return C.ga_get_state(a.h, &out, e) }); err != nil {
		return nil, err
	}
	return json.RawMessage(takeString(out)), nil
}

// SetMessages replaces the transcript.
func (a *Agent) SetMessages(messages []json.RawMessage) error {
	if messages == nil {
		messages = []json.RawMessage{}
	}
	return withJSON(messages, func(p *C.char) error {
		return a.call(func(e **C.char) C.AgentStatus { return C.ga_set_messages(a.h, p, e) })
	})
}

// SetTools replaces the executable tools (effective at the next run).
func (a *Agent) SetTools(tools ...*Tool) error {
	handles := make([]C.uintptr_t, 0, len(tools))
	defer func() {
		for _, h := range handles {
			C.ga_tool_free(h, nil) // the agent keeps its own references
		}
	}()
	for _, tool := range tools {
		h, err := tool.newC()
		if err != nil {
			return err
		}
		handles = append(handles, h)
	}
	var ptr *C.uintptr_t
	if len(handles) > 0 {
		ptr = (*C.uintptr_t)(unsafe.Pointer(&handles[0]))
	}
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_set_tools(a.h, ptr, C.size_t(len(handles)), e) })
}

// Configure changes reassignable fields at once (agent_configure): model, thinkingLevel,
// steeringMode, followUpMode, toolExecution, sessionId, transport, thinkingBudgets,
// maxRetryDelayMs, identity, abortGraceMs. patch is any JSON-marshalable object.
func (a *Agent) Configure(patch any) error {
	return withJSON(patch, func(p *C.char) error {
		return a.call(func(e **C.char) C.AgentStatus { return C.ga_configure(a.h, p, e) })
	})
}

// SetModel changes the model of the next run.
func (a *Agent) SetModel(model any) error {
	return a.Configure(map[string]any{"model": rawOrValue(model)})
}

// SetThinkingLevel changes the thinking level of the next run.
func (a *Agent) SetThinkingLevel(level ThinkingLevel) error {
	return a.Configure(map[string]any{"thinkingLevel": level})
}

// SetStreamFunc replaces the model (nil: the process-wide default).
func (a *Agent) SetStreamFunc(fn StreamFunc) error {
	if fn == nil {
		return a.call(func(e **C.char) C.AgentStatus { return C.ga_set_stream_fn(a.h, 0, e) })
	}
	ud := pin(&streamEntry{fn: fn})
	err := a.call(func(e **C.char) C.AgentStatus { return C.ga_set_stream_fn(a.h, ud, e) })
	if err != nil {
		unpin(ud)
	}
	return err
}

// UseProviders talks to the model through the built-in providers from the next run on.
func (a *Agent) UseProviders() error {
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_use_providers(a.h, e) })
}

// SetScriptedModel uses the built-in scripted model with this script.
func (a *Agent) SetScriptedModel(script any) error {
	return withJSON(script, func(p *C.char) error {
		return a.call(func(e **C.char) C.AgentStatus { return C.ga_set_scripted_model(a.h, p, e) })
	})
}

// Reset clears the transcript (keeping the system baseline) and the queues (SPEC 7.16).
func (a *Agent) Reset() error {
	return a.call(func(e **C.char) C.AgentStatus { return C.ga_reset(a.h, e) })
}

// Version is the library's version.
func Version() string { return C.GoString(C.agent_version()) }

// ConfigureRuntime chooses the runtime before first use: workers <= 1 runs every agent on one
// runtime thread (the default), N > 1 on N worker threads.
func ConfigureRuntime(workers int) error {
	var errText *C.char
	return check(C.ga_runtime_configure(C.uint32_t(workers), &errText), errText)
}

const referenceNoModel = "No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn()."

const noModel = "No model to talk to: set Options.StreamFunc, Options.ScriptedModel or " +
	"Options.UseProviders (the built-in providers, for a Model with API openai-completions, " +
	"anthropic-messages, openai-responses or google-generative-ai), or a process-wide default with SetDefaultStreamFunc."

// reflectNonNil is the pointed-to value of a non-nil *int / *int64, else nil.
func reflectNonNil(v any) any {
	switch p := v.(type) {
	case *int:
		if p != nil {
			return *p
		}
	case *int64:
		if p != nil {
			return *p
		}
	}
	return nil
}

// optionFields names the Options field behind each option key libagent may quote in an error.
var optionFields = map[string]string{
	"steeringMode": "SteeringMode", "followUpMode": "FollowUpMode", "toolExecution": "ToolExecution",
	"sessionId": "SessionID", "transport": "Transport", "thinkingBudgets": "ThinkingBudgets",
	"maxRetryDelayMs": "MaxRetryDelayMs", "identity": "Identity", "maxRetries": "MaxRetries",
	"timeoutMs": "TimeoutMs", "connectTimeoutMs": "ConnectTimeoutMs", "idleTimeoutMs": "IdleTimeoutMs",
	"caCertificates": "CACertificates", "caCertificateFile": "CACertificateFile",
	"systemPrompt": "SystemPrompt", "thinkingLevel": "ThinkingLevel", "model": "Model", "messages": "Messages",
}

// goNames rewrites the option keys an options error quotes ("maxRetries") as the Options
// fields a Go caller set (MaxRetries).
func goNames(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrInvalidJSON {
		return err
	}
	message := e.Message
	for key, field := range optionFields {
		message = strings.ReplaceAll(message, `"`+key+`"`, "Options."+field)
	}
	return &Error{Status: e.Status, Message: message}
}

// Package agent is the Go binding of libagent, an embeddable agent runtime (the agent loop of
// pi agent core) with a C ABI. An Agent runs a conversation with a model (a StreamFunc, or the
// built-in scripted model) and Go tools; events arrive through Subscribe or Events as Event
// structs (JSON only on request); every run is a Run carrying its Outcome.
//
// Threading: libagent runs every agent on its own runtime thread. Listeners given to
// Subscribe, Tool.PrepareArguments and Stream.OnConsumed callbacks run on that thread and must
// return quickly; tools, hooks and stream functions run on goroutines of their own. An agent
// built with a Dispatcher runs all of them inside Dispatcher.Dispatch instead, on the host's
// thread. Every method may be called from any goroutine.
package agent

// #include "shim.h"
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
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

	// Context management (README "Long conversations"); nil: off, as pi-agent-core's Agent.
	Compaction *CompactionOptions
	Retry      *RetryOptions

	// EventShape asks for the JSON of every event given to Subscribe listeners and Events
	// channels (Event.JSON); the zero value, ShapeNone, builds none (the Event's fields cost
	// O(1); a listener may still Decode the event it is given).
	EventShape EventShape
	// EventQueueCapacity bounds the pull queue behind each Events channel (0: 1024); when it
	// is full the loop waits for the reader.
	EventQueueCapacity int

	// Dispatcher builds the agent in host-pumped mode: its listeners, tools, hooks, stream
	// functions and run completions run only inside Dispatcher.Dispatch, on the goroutine that
	// calls it (see Dispatcher).
	Dispatcher *Dispatcher

	// Session keeps the conversation in a session file (see Session): the agent starts from
	// its context and appends to it as it runs. One agent per session (ErrInvalidState for a
	// second); the Session may be closed once the agent is built.
	Session *Session

	// MCP gives the agent the tools of these MCP server sets (see ConnectMCP), besides Tools:
	// it takes each set's current tools at each turn, and a prompt first waits up to 10 s for
	// servers still connecting. The agent keeps the sets until it is closed (unless a set is
	// closed first).
	MCP []*MCP
}

// CompactionOptions turn on compaction: when the context passes the model's ContextWindow minus
// ReserveTokens the older messages are replaced by a summary, about KeepRecentTokens of recent
// conversation kept word for word, and a context overflow is recovered by compacting and
// retrying once. It needs the model's ContextWindow. Zero fields take libagent's defaults
// (16384 and 20000).
type CompactionOptions struct {
	Enabled          bool
	ReserveTokens    int
	KeepRecentTokens int
}

// RetryOptions turn on automatic retries of transient model errors (overloaded, rate limited,
// 5xx, a dropped connection) after BaseDelayMs × 2^(n−1), capped at MaxDelayMs. Zero fields take
// libagent's defaults (3 retries, 2000 ms, 60000 ms).
type RetryOptions struct {
	Enabled     bool
	MaxRetries  int
	BaseDelayMs int64
	MaxDelayMs  int64
}

func (c *CompactionOptions) json() map[string]any {
	out := map[string]any{"enabled": c.Enabled}
	if c.ReserveTokens != 0 {
		out["reserveTokens"] = c.ReserveTokens
	}
	if c.KeepRecentTokens != 0 {
		out["keepRecentTokens"] = c.KeepRecentTokens
	}
	return out
}

func (r *RetryOptions) json() map[string]any {
	out := map[string]any{"enabled": r.Enabled}
	if r.MaxRetries != 0 {
		out["maxRetries"] = r.MaxRetries
	}
	if r.BaseDelayMs != 0 {
		out["baseDelayMs"] = r.BaseDelayMs
	}
	if r.MaxDelayMs != 0 {
		out["maxDelayMs"] = r.MaxDelayMs
	}
	return out
}

// Agent is one libagent agent. Close frees it; an Agent that becomes unreachable without
// Close is freed by a runtime cleanup.
type Agent struct {
	h        C.AgentHandle
	shape    EventShape
	capacity int
	pumped   bool // built with a Dispatcher: callbacks run inline, inside Dispatch

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
	if o.Compaction != nil {
		top["compaction"] = o.Compaction.json()
	}
	if o.Retry != nil {
		top["retry"] = o.Retry.json()
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

// CheckVersion reports whether the loaded libagent serves this binding, built against
// <libagent/agent.h> 1.0: an error (ErrInvalidState, naming both versions) when the library's
// major version differs or its minor version is older. New checks it once.
func CheckVersion() error {
	return check(C.agent_version_check(C.AGENT_VERSION_MAJOR, C.AGENT_VERSION_MINOR))
}

var versionChecked = sync.OnceValue(CheckVersion)

// New builds an agent.
func New(opts Options) (*Agent, error) {
	if err := versionChecked(); err != nil {
		return nil, err
	}
	text, err := opts.json()
	if err != nil {
		return nil, err
	}
	if opts.StreamFunc == nil && opts.ScriptedModel == nil && opts.UseProviders {
		if err := checkProviderAPI(opts.Model); err != nil {
			return nil, err
		}
	}
	var options C.AgentOptions
	p, n := ctext(text)
	if err := check(C.agent_options_new(p, n, &options)); err != nil {
		return nil, goNames(err)
	}
	built := false
	defer func() {
		if !built {
			C.agent_options_free(options)
		}
	}()
	pumped := opts.Dispatcher != nil
	if pumped {
		if err := check(C.agent_options_set_dispatcher(options, opts.Dispatcher.h)); err != nil {
			return nil, err
		}
	}
	if opts.Session != nil {
		err := check(C.agent_options_set_session(options, opts.Session.h))
		runtime.KeepAlive(opts.Session)
		if err != nil {
			return nil, err
		}
	}
	for _, tool := range opts.Tools {
		ct, err := tool.newC(pumped)
		if err != nil {
			return nil, err
		}
		err = check(C.agent_options_add_tool(options, ct))
		tool.releaseC(ct) // the options hold their own reference
		if err != nil {
			return nil, err
		}
	}
	for _, set := range opts.MCP {
		if err := set.call(C.agent_options_add_mcp(options, set.h)); err != nil {
			return nil, err
		}
	}
	switch {
	case opts.StreamFunc != nil:
		ud := pin(&streamEntry{fn: opts.StreamFunc, inline: pumped})
		if err := check(C.ga_options_set_stream_fn(options, ud)); err != nil {
			unpin(ud) // on failure the library took no reference
			return nil, err
		}
	case opts.ScriptedModel != nil:
		if err := withJSON(opts.ScriptedModel, func(s *C.char, n C.size_t) error {
			return check(C.agent_options_set_scripted_model(options, s, n))
		}); err != nil {
			return nil, err
		}
	case opts.UseProviders:
		if err := check(C.agent_options_use_providers(options)); err != nil {
			return nil, err
		}
	}
	for kind, fn := range opts.Hooks.byKind() {
		ud := pin(&hookEntry{fn: fn, inline: pumped})
		if err := check(C.ga_options_set_hook(options, C.AgentHookKind(kind), ud)); err != nil {
			unpin(ud)
			return nil, err
		}
	}
	var handle C.AgentHandle
	built = true // agent_new consumes the options, also on failure
	if err := check(C.agent_new(options, &handle)); err != nil {
		if errors.Is(err, ErrNoStreamFn) {
			err = &Error{Status: ErrNoStreamFn, Message: noModel}
		}
		return nil, err
	}
	a := &Agent{h: handle, shape: opts.EventShape, capacity: opts.EventQueueCapacity, pumped: pumped}
	a.cleanup = runtime.AddCleanup(a, func(h C.AgentHandle) {
		cleanupsRun.Add(1)
		C.agent_error_free(C.agent_free(h))
	}, handle)
	return a, nil
}

// Close frees the agent: an active run is cancelled (its Prompt returns an error matching
// ErrFreed), Events channels close once drained, and everything the agent held is released.
// Close is idempotent and may be called from any goroutine, including inside callbacks.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.cleanup.Stop()
		a.closeErr = check(C.agent_free(a.h))
	})
	return a.closeErr
}

// call runs one libagent call on the agent; the runtime cleanup must not free the agent
// during it.
func (a *Agent) call(e *C.AgentError) error {
	err := check(e)
	runtime.KeepAlive(a)
	return err
}

// --- runs: see run.go ------------------------------------------------------------------------

// --- queues ----------------------------------------------------------------------------------

// Steer queues a steering message (any JSON-marshalable message object, e.g. UserMessage).
func (a *Agent) Steer(message any) error {
	return withJSON(message, func(p *C.char, n C.size_t) error { return a.call(C.agent_steer(a.h, p, n)) })
}

// FollowUp queues a follow-up message, delivered when a run would otherwise stop.
func (a *Agent) FollowUp(message any) error {
	return withJSON(message, func(p *C.char, n C.size_t) error { return a.call(C.agent_follow_up(a.h, p, n)) })
}

// QueuedMessages returns what peekQueuedMessages() returns.
func (a *Agent) QueuedMessages() ([]json.RawMessage, error) {
	var out *C.char
	var n C.size_t
	if err := a.call(C.agent_peek_queued_messages(a.h, &out, &n)); err != nil {
		return nil, err
	}
	var messages []json.RawMessage
	err := json.Unmarshal([]byte(takeString(out, n)), &messages)
	return messages, err
}

// HasQueuedMessages says whether either queue holds messages.
func (a *Agent) HasQueuedMessages() (bool, error) {
	var has C.bool
	err := a.call(C.agent_has_queued_messages(a.h, &has))
	return bool(has), err
}

// ClearSteeringQueue drops the queued steering messages.
func (a *Agent) ClearSteeringQueue() error { return a.call(C.agent_clear_steering_queue(a.h)) }

// ClearFollowUpQueue drops the queued follow-up messages.
func (a *Agent) ClearFollowUpQueue() error { return a.call(C.agent_clear_follow_up_queue(a.h)) }

// ClearAllQueues drops every queued message.
func (a *Agent) ClearAllQueues() error { return a.call(C.agent_clear_all_queues(a.h)) }

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
	var n C.size_t
	if err := a.call(C.agent_get_state(a.h, &out, &n)); err != nil {
		return nil, err
	}
	return json.RawMessage(takeString(out, n)), nil
}

// SetMessages replaces the transcript.
func (a *Agent) SetMessages(messages []json.RawMessage) error {
	if messages == nil {
		messages = []json.RawMessage{}
	}
	return withJSON(messages, func(p *C.char, n C.size_t) error { return a.call(C.agent_set_messages(a.h, p, n)) })
}

// SetTools replaces the executable tools (effective at the next run).
func (a *Agent) SetTools(tools ...*Tool) error {
	handles := make([]C.AgentTool, 0, len(tools))
	defer func() {
		for i, h := range handles {
			tools[i].releaseC(h) // the agent keeps its own references
		}
	}()
	for _, tool := range tools {
		h, err := tool.newC(a.pumped)
		if err != nil {
			return err
		}
		handles = append(handles, h)
	}
	var ptr *C.AgentTool
	if len(handles) > 0 {
		ptr = &handles[0] // Go memory without Go pointers, read during the call only
	}
	return a.call(C.agent_set_tools(a.h, ptr, C.size_t(len(handles))))
}

// Configure changes reassignable fields at once (agent_configure): model, thinkingLevel,
// steeringMode, followUpMode, toolExecution, sessionId, transport, thinkingBudgets,
// maxRetryDelayMs, identity, abortGraceMs. patch is any JSON-marshalable object.
func (a *Agent) Configure(patch any) error {
	return withJSON(patch, func(p *C.char, n C.size_t) error { return a.call(C.agent_configure(a.h, p, n)) })
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
		return a.call(C.agent_set_stream_fn(a.h, nil, nil, nil))
	}
	ud := pin(&streamEntry{fn: fn, inline: a.pumped})
	err := a.call(C.ga_set_stream_fn(a.h, ud))
	if err != nil {
		unpin(ud)
	}
	return err
}

// UseProviders talks to the model through the built-in providers from the next run on.
func (a *Agent) UseProviders() error {
	return a.call(C.agent_use_providers(a.h))
}

// SetScriptedModel uses the built-in scripted model with this script.
func (a *Agent) SetScriptedModel(script any) error {
	return withJSON(script, func(p *C.char, n C.size_t) error { return a.call(C.agent_set_scripted_model(a.h, p, n)) })
}

// Reset clears the transcript (keeping the system baseline) and the queues (SPEC 7.16).
func (a *Agent) Reset() error {
	return a.call(C.agent_reset(a.h))
}

// Version is the library's version.
func Version() string { return C.GoString(C.agent_version()) }

// ConfigureRuntime chooses the runtime before first use: workers <= 1 runs every agent on one
// runtime thread (the default), N > 1 on N worker threads.
func ConfigureRuntime(workers int) error {
	return check(C.agent_runtime_configure(C.uint32_t(workers)))
}

// providerAPIs are the APIs libagent's built-in providers speak (src/providers).
var providerAPIs = []string{"openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai"}

// checkProviderAPI refuses a model for the built-in providers whose API none of them speaks
// (libagent itself would accept it and fail the first run). A model without an API is left to
// libagent, whose error names the missing field.
func checkProviderAPI(model any) error {
	if model == nil {
		return nil
	}
	data, err := json.Marshal(rawOrValue(model))
	if err != nil {
		return nil // opts.json reported it
	}
	var fields struct {
		API string `json:"api"`
	}
	if json.Unmarshal(data, &fields) != nil || fields.API == "" || slices.Contains(providerAPIs, fields.API) {
		return nil
	}
	last := len(providerAPIs) - 1
	return &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf(
		"Model.API %q is not an API the built-in providers speak: use %s or %s, or set Options.StreamFunc.",
		fields.API, strings.Join(providerAPIs[:last], ", "), providerAPIs[last])}
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
	"compaction": "Compaction", "retry": "Retry",
}

// nestedOptionFields names the fields of Options.Compaction and Options.Retry, for an error
// about one of their members (`Option "retry": "maxRetries" ...`).
var nestedOptionFields = map[string]map[string]string{
	"compaction": {"enabled": "Enabled", "reserveTokens": "ReserveTokens", "keepRecentTokens": "KeepRecentTokens"},
	"retry":      {"enabled": "Enabled", "maxRetries": "MaxRetries", "baseDelayMs": "BaseDelayMs", "maxDelayMs": "MaxDelayMs"},
}

// goNames rewrites the option keys an options error quotes ("maxRetries") as the Options
// fields a Go caller set (MaxRetries).
func goNames(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrInvalidJSON {
		return err
	}
	message := e.Message
	for option, members := range nestedOptionFields {
		if strings.Contains(message, `"`+option+`"`) || strings.Contains(message, `"`+option+`.`) {
			for key, field := range members {
				message = strings.ReplaceAll(message, `"`+key+`"`, "Options."+optionFields[option]+"."+field)
				message = strings.ReplaceAll(message, `"`+option+`.`+key+`"`, "Options."+optionFields[option]+"."+field)
			}
		}
	}
	for key, field := range optionFields {
		message = strings.ReplaceAll(message, `"`+key+`"`, "Options."+field)
	}
	return &Error{Status: e.Status, Message: message}
}

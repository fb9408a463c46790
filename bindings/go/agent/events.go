package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// EventShape asks for the JSON of events.
type EventShape int

const (
	// ShapeNone builds no JSON: events carry their fields only (every event O(1)).
	ShapeNone EventShape = iota
	// ShapeFull is the reference's event object.
	ShapeFull
	// ShapeLean drops the whole partial message from message_update events.
	ShapeLean
)

// Event is one agent event (SPEC 7.11), read from libagent's event struct.
type Event struct {
	Type         string // "agent_start", "message_update", "tool_execution_end", ...
	UpdateType   string // for message_update: the stream event type ("text_delta", ...)
	ContentIndex int    // for message_update: the stream event's contentIndex
	Delta        string // for a *_delta update: the delta text
	ToolCallID   string // for tool_execution_*: the tool call's id
	ToolName     string // for tool_execution_*: the tool's name
	ArgsJSON     string // for tool_execution_start: the arguments as JSON text
	// JSON is the whole event, when Options.EventShape asked for it (nil with ShapeNone), and
	// always for the four context events below.
	JSON json.RawMessage
	// Compaction is a compaction_start / compaction_end event's content (nil for other events).
	Compaction *CompactionEvent
	// Retry is an auto_retry_start / auto_retry_end event's content (nil for other events).
	Retry *RetryEvent

	live *liveEvent // the listener's event, readable until the listener returns
}

// Decode unmarshals the event's JSON into v. Without JSON (ShapeNone), a listener may still
// decode the event it was given, before it returns: its full JSON is built on request (for a
// message_update that costs the size of the partial message: read Delta instead).
func (e Event) Decode(v any) error {
	if e.JSON != nil {
		return json.Unmarshal(e.JSON, v)
	}
	raw, err := e.live.json()
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// CompactionEvent is what compaction_start and compaction_end tell (README "Long conversations").
type CompactionEvent struct {
	Reason       string            `json:"reason"` // "manual", "threshold" or "overflow"
	Result       *CompactionResult `json:"result"` // compaction_end of a compaction that happened
	Aborted      bool              `json:"aborted"`
	WillRetry    bool              `json:"willRetry"`    // an overflow's prompt is retried next
	ErrorMessage string            `json:"errorMessage"` // why it failed or did not run
}

// CompactionResult is a done compaction: its summary and the context's size before and after.
type CompactionResult struct {
	Summary              string          `json:"summary"`
	FirstKeptEntryID     string          `json:"firstKeptEntryId"`
	TokensBefore         int             `json:"tokensBefore"`
	EstimatedTokensAfter int             `json:"estimatedTokensAfter"`
	Usage                json.RawMessage `json:"usage"`   // the summary request's usage, if the model wrote it
	Details              json.RawMessage `json:"details"` // the hook's details, or the file lists
}

// RetryEvent is what auto_retry_start (Attempt, MaxAttempts, DelayMs, ErrorMessage) and
// auto_retry_end (Success, Attempt, FinalError) tell.
type RetryEvent struct {
	Attempt      int    `json:"attempt"`
	MaxAttempts  int    `json:"maxAttempts"`
	DelayMs      int64  `json:"delayMs"`
	ErrorMessage string `json:"errorMessage"`
	Success      bool   `json:"success"`
	FinalError   string `json:"finalError"`
}

// liveEvent is a listener's borrowed AgentEvent; ended when the listener returned.
type liveEvent struct {
	mu    sync.Mutex
	event *C.AgentEvent
}

func (l *liveEvent) json() (json.RawMessage, error) {
	if l == nil {
		return nil, &Error{Status: ErrInvalidState, Message: "The event has no JSON: set Options.EventShape, or decode it inside the listener."}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.event == nil {
		return nil, &Error{Status: ErrInvalidState, Message: "The event is over: decode it inside the listener, or set Options.EventShape."}
	}
	return eventJSON(l.event, ShapeFull)
}

func (l *liveEvent) end() {
	l.mu.Lock()
	l.event = nil
	l.mu.Unlock()
}

var eventTypes = [...]string{"agent_start", "agent_end", "turn_start", "turn_end", "message_start",
	"message_update", "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
	"compaction_start", "compaction_end", "auto_retry_start", "auto_retry_end"}

var updateTypes = [...]string{"", "start", "text_start", "text_delta", "text_end", "thinking_start",
	"thinking_delta", "thinking_end", "toolcall_start", "toolcall_delta", "toolcall_end"}

// newEvent copies the struct's fields (O(1) but for the texts) and, when asked, its JSON.
func newEvent(e *C.AgentEvent, shape EventShape) (Event, error) {
	ev := Event{
		ContentIndex: int(e.content_index),
		Delta:        goStr(e.delta),
		ToolCallID:   goStr(e.tool_call_id),
		ToolName:     goStr(e.tool_name),
		ArgsJSON:     goStr(e.args_json),
	}
	if k := int(e.kind); k >= 0 && k < len(eventTypes) {
		ev.Type = eventTypes[k]
	}
	if u := int(e.update); u >= 0 && u < len(updateTypes) {
		ev.UpdateType = updateTypes[u]
	}
	if e.kind >= C.AGENT_EVENT_COMPACTION_START && e.kind <= C.AGENT_EVENT_AUTO_RETRY_END {
		return contextEvent(e, ev)
	}
	if shape == ShapeNone && ev.Type != "" && (ev.Type != "message_update" || ev.UpdateType != "") {
		return ev, nil
	}
	if shape == ShapeNone {
		shape = ShapeLean // an event this binding does not know (a newer libagent): its JSON names it
	}
	raw, err := eventJSON(e, shape)
	if err != nil {
		return ev, err
	}
	if ev.Type == "" || (ev.Type == "message_update" && ev.UpdateType == "") {
		var head struct {
			Type   string `json:"type"`
			Update struct {
				Type string `json:"type"`
			} `json:"assistantMessageEvent"`
		}
		json.Unmarshal(raw, &head)
		ev.Type, ev.UpdateType = head.Type, head.Update.Type
	}
	if shape != ShapeNone {
		ev.JSON = raw
	}
	return ev, nil
}

// contextEvent fills a compaction or retry event's typed content from its JSON (these events
// are rare: a few per compaction or retry).
func contextEvent(e *C.AgentEvent, ev Event) (Event, error) {
	raw, err := eventJSON(e, ShapeFull)
	if err != nil {
		return ev, err
	}
	ev.JSON = raw
	if e.kind <= C.AGENT_EVENT_COMPACTION_END {
		ev.Compaction = &CompactionEvent{}
		err = json.Unmarshal(raw, ev.Compaction)
	} else {
		ev.Retry = &RetryEvent{}
		err = json.Unmarshal(raw, ev.Retry)
	}
	return ev, err
}

func eventJSON(e *C.AgentEvent, shape EventShape) (json.RawMessage, error) {
	cshape := C.AgentEventShape(C.AGENT_EVENT_SHAPE_FULL)
	if shape == ShapeLean {
		cshape = C.AGENT_EVENT_SHAPE_LEAN
	}
	var out C.AgentStr
	if err := check(C.agent_event_json(e, cshape, &out)); err != nil {
		return nil, err
	}
	return json.RawMessage(goStr(out)), nil
}

type listenerEntry struct {
	fn    func(Event)
	shape EventShape
}

//export goAgentListener
func goAgentListener(ud C.uintptr_t, event *C.AgentEvent) (answer C.AgentListenerAnswer) {
	defer func() {
		if r := recover(); r != nil { // a failing listener fails the run (SPEC 7.11)
			answer = failListener(event, panicMessage(r))
		}
	}()
	entry := value(ud).(*listenerEntry)
	ev, err := newEvent(event, entry.shape)
	if err != nil {
		return failListener(event, "reading the event: "+err.Error())
	}
	if ev.JSON == nil {
		ev.live = &liveEvent{event: event}
		defer ev.live.end()
	}
	entry.fn(ev)
	return C.AGENT_LISTENER_CONTINUE
}

// failListener answers an event with a failure: a listener fails only through a deferred reply.
func failListener(event *C.AgentEvent, message string) C.AgentListenerAnswer {
	var reply C.AgentReply
	if check(C.agent_event_defer(event, &reply)) != nil {
		return C.AGENT_LISTENER_CONTINUE
	}
	p, n := ctext(message)
	C.agent_error_free(C.agent_reply_fail(reply, p, n))
	return C.AGENT_LISTENER_LATER
}

// Subscribe calls fn for every event, in order: the loop waits until fn returns, so fn must be
// quick (hand heavy work to a goroutine, or use Events). It runs on the library's runtime
// thread, or inside Dispatch for a host-pumped agent. A panic in fn fails the run. The
// returned function unsubscribes (idempotent).
func (a *Agent) Subscribe(fn func(Event)) (unsubscribe func()) {
	ud := pin(&listenerEntry{fn: fn, shape: a.shape})
	var id C.uint64_t
	if err := a.call(C.ga_subscribe(a.h, ud, &id)); err != nil {
		unpin(ud) // not subscribed (e.g. the agent is closed)
		return func() {}
	}
	return func() {
		C.agent_error_free(C.agent_unsubscribe(a.h, id)) // a second call, or after Close, fails harmlessly
	}
}

// Events returns a channel of every event of the agent from now on, losslessly and in order,
// fed from the library's pull queue by a goroutine. The channel closes when ctx is done or the
// agent is closed (after the queued events were delivered). While nobody receives, the queue
// fills up and then the agent's loop waits: keep receiving, or cancel ctx.
func (a *Agent) Events(ctx context.Context) <-chan Event {
	ch := make(chan Event)
	capacity := a.capacity
	if capacity <= 0 {
		capacity = 1024
	}
	var queue C.AgentQueue
	options := fmt.Sprintf(`{"capacity":%d}`, capacity)
	p, n := ctext(options)
	if err := a.call(C.agent_queue_open(a.h, p, n, &queue)); err != nil {
		close(ch)
		return ch
	}
	// The queue is closed by whoever comes first, the reader or ctx; the lock keeps a close
	// from freeing the event the reader is copying.
	var mu sync.Mutex
	closed := false
	closeQueue := func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			closed = true
			C.agent_error_free(C.agent_queue_close(queue)) // wakes a reader waiting in agent_queue_next
		}
	}
	stop := context.AfterFunc(ctx, closeQueue)
	shape := a.shape
	go func() {
		defer close(ch)
		defer stop()
		defer closeQueue()
		for {
			var event C.AgentEvent
			var next C.AgentNext
			err := check(C.agent_queue_next(queue, -1, &event, &next))
			mu.Lock()
			if err != nil || next != C.AGENT_NEXT_EVENT || closed {
				mu.Unlock()
				return // closed: the agent was freed (and the queue drained), or ctx is done
			}
			ev, err := newEvent(&event, shape)
			mu.Unlock()
			if err != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

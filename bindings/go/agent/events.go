package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
)

// EventShape selects the JSON of events.
type EventShape int

const (
	// ShapeFull is the reference's event object.
	ShapeFull EventShape = iota
	// ShapeLean drops the whole partial message from message_update events.
	ShapeLean
	// ShapeNone builds no JSON for Subscribe listeners (Type, UpdateType and Delta only);
	// Events channels use ShapeLean instead.
	ShapeNone
)

// Event is one agent event (SPEC 7.11).
type Event struct {
	Type       string          // "agent_start", "message_update", "tool_execution_end", ...
	UpdateType string          // for message_update: the stream event type ("text_delta", ...)
	Delta      string          // for a *_delta update: the delta text
	JSON       json.RawMessage // the whole event (nil with ShapeNone)
}

// Decode unmarshals the event's JSON into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.JSON, v) }

type listenerEntry struct{ fn func(Event) }

// Subscribe calls fn for every event, in order, on the library's runtime thread: the loop waits
// until fn returns, so fn must be quick (hand heavy work to a goroutine, or use Events). A panic
// in fn fails the run. The returned function unsubscribes (idempotent).
func (a *Agent) Subscribe(fn func(Event)) (unsubscribe func()) {
	withJSON := C.int(1)
	switch a.shape {
	case ShapeLean:
		withJSON = 2
	case ShapeNone:
		withJSON = 0
	}
	ud := pin(&listenerEntry{fn: fn})
	var id C.uint64_t
	if err := a.call(func(e **C.char) C.AgentStatus { return C.ga_subscribe(a.h, withJSON, ud, &id, e) }); err != nil {
		unpin(ud) // not subscribed (e.g. the agent is closed)
		return func() {}
	}
	return func() {
		C.ga_unsubscribe(a.h, id, nil) // a second call, or after Close, fails harmlessly
	}
}

// Events returns a channel of every event of the agent from now on, losslessly and in order,
// fed from the library's pull queue by a goroutine. The channel closes when ctx is done or the
// agent is closed (after the queued events were delivered). While nobody receives, the queue
// fills up and then the agent's loop waits: keep receiving, or cancel ctx.
func (a *Agent) Events(ctx context.Context) <-chan Event {
	ch := make(chan Event)
	shape := "full"
	if a.shape != ShapeFull {
		shape = "lean"
	}
	capacity := a.capacity
	if capacity <= 0 {
		capacity = 1024
	}
	var queue C.uintptr_t
	var err error
	withJSONText := fmt.Sprintf(`{"capacity":%d,"shape":%q}`, capacity, shape)
	p := cstr(withJSONText)
	err = a.call(func(e **C.char) C.AgentStatus { return C.ga_events_open(a.h, p, &queue, e) })
	freeStr(p)
	if err != nil {
		close(ch)
		return ch
	}
	stop := make(chan struct{})
	go func() { // closing the queue wakes the reader blocked in agent_events_next
		select {
		case <-ctx.Done():
			C.ga_events_close(queue, nil)
		case <-stop:
		}
	}()
	go func() {
		defer close(ch)
		defer C.ga_events_close(queue, nil) // closed twice at worst: the second is refused
		defer close(stop)
		for {
			var out *C.char
			if C.ga_events_next(queue, -1, &out, nil) != 0 {
				return // closed: the agent was freed (and the queue drained), or ctx is done
			}
			ev := parseEvent(takeString(out))
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

func parseEvent(text string) Event {
	var head struct {
		Type   string `json:"type"`
		Update *struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		} `json:"assistantMessageEvent"`
	}
	ev := Event{JSON: json.RawMessage(text)}
	if json.Unmarshal(ev.JSON, &head) == nil {
		ev.Type = head.Type
		if head.Type == "message_update" && head.Update != nil {
			ev.UpdateType = head.Update.Type
			ev.Delta = head.Update.Delta
		}
	}
	return ev
}

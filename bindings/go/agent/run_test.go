package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

// blockingModel is a stream function that starts a message and then waits until released
// (answering "stop") or until its run aborts; each request's Stream goes to streams.
type blockingModel struct {
	streams chan *agent.Stream
	release chan struct{}
}

func newBlockingModel() *blockingModel {
	return &blockingModel{streams: make(chan *agent.Stream, 4), release: make(chan struct{}, 4)}
}

func (m *blockingModel) fn(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
	s.Push(json.RawMessage(`{"type":"start"}`))
	m.streams <- s
	select {
	case <-m.release:
		s.Push(json.RawMessage(`{"type":"text_start","contentIndex":0}`))
		s.PushTextDelta(0, "released")
		s.Push(json.RawMessage(`{"type":"text_end","contentIndex":0}`))
		return s.Push(json.RawMessage(`{"type":"done","reason":"stop"}`))
	case <-ctx.Done():
		return s.Push(json.RawMessage(`{"type":"error","reason":"aborted","errorMessage":"Request was aborted"}`))
	}
}

// A Run carries its own outcome and messages.
func TestRunCarriesItsOutcomeAndMessages(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: script(text("one", 1), text("two", 1))})
	first, err := a.PromptAsync("a")
	if err != nil {
		t.Fatal(err)
	}
	out, err := first.Wait(context.Background())
	if err != nil || out.Status != agent.RunCompleted || out.MessageCount != 2 || first.Outcome() != out {
		t.Fatalf("first run: %+v %v", out, err)
	}
	second, err := a.PromptAsync("b")
	if err != nil {
		t.Fatal(err)
	}
	settled(second)
	for i, r := range []*agent.Run{first, second} {
		messages, err := r.Messages()
		if err != nil || len(messages) != 2 {
			t.Fatalf("run %d: %d messages, %v", i, len(messages), err)
		}
		var m message
		json.Unmarshal(messages[1], &m)
		if want := []string{"one", "two"}[i]; m.text() != want {
			t.Fatalf("run %d's answer %q, want %q", i, m.text(), want)
		}
	}
}

// Cancelling a Prompt's ctx aborts that run; a cancel (or Abort) arriving after the run settled
// never reaches the next run.
func TestCancellingARunNeverReachesALaterRun(t *testing.T) {
	m := newBlockingModel()
	a := mustNew(t, agent.Options{StreamFunc: m.fn})

	// ctx cancelled during the run: that run is aborted.
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	var aborted agent.Outcome
	go func() {
		var err error
		aborted, err = a.Prompt(ctx, "cancel me")
		result <- err
	}()
	<-m.streams
	cancel()
	err := <-result
	if !errors.Is(err, context.Canceled) || !errors.Is(err, agent.ErrAborted) || aborted.Status != agent.RunAborted {
		t.Fatalf("cancelled Prompt: %+v, %v", aborted, err)
	}

	// A run that completed, then a later run; the first run's ctx is cancelled and the first
	// run aborted while the later one is active.
	late, cancelLate := context.WithCancel(context.Background())
	m.release <- struct{}{}
	done, err := a.Prompt(late, "completes")
	if err != nil || done.Status != agent.RunCompleted {
		t.Fatalf("first run: %+v %v", done, err)
	}
	<-m.streams
	first, err := a.PromptAsync("completes too")
	if err != nil {
		t.Fatal(err)
	}
	m.release <- struct{}{}
	settled(first)
	<-m.streams
	second, err := a.PromptAsync("must not be aborted")
	if err != nil {
		t.Fatal(err)
	}
	s := <-m.streams
	cancelLate()
	if err := first.Abort(); err != nil {
		t.Fatalf("Abort of a settled run: %v", err)
	}
	if s.Aborted() {
		t.Fatal("a settled run's cancel reached the next run")
	}
	m.release <- struct{}{}
	out, err := second.Wait(context.Background())
	if err != nil || out.Status != agent.RunCompleted || out.StopReason != "stop" {
		t.Fatalf("the later run: %+v, %v", out, err)
	}
	// Run.Abort aborts its own active run.
	third, err := a.PromptAsync("abort me")
	if err != nil {
		t.Fatal(err)
	}
	<-m.streams
	third.Abort()
	if out, err := third.Wait(context.Background()); !errors.Is(err, agent.ErrRunAborted) || out.Status != agent.RunAborted {
		t.Fatalf("aborted run: %+v, %v", out, err)
	}
}

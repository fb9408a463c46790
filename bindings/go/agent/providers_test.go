package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

const goodKey = "test-key"

// mockEndpoint is an openai-completions (and, at .../responses, openai-responses) endpoint on
// loopback: every request with the good key gets a streamed "Hello from Go's mock.", any other
// key a 401.
type mockEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newMockEndpoint(t *testing.T) *mockEndpoint {
	m := &mockEndpoint{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.requests = append(m.requests, r)
		m.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+goodKey {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"invalid api key"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasSuffix(r.URL.Path, "/responses") {
			event := func(data string) {
				var parsed struct{ Type string }
				_ = json.Unmarshal([]byte(data), &parsed)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", parsed.Type, data)
			}
			event(`{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}`)
			event(`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}`)
			event(`{"type":"response.output_text.delta","output_index":0,"delta":"Hello from "}`)
			event(`{"type":"response.output_text.delta","output_index":0,"delta":"Go's mock."}`)
			event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello from Go's mock."}]}}`)
			event(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"output_tokens":4,"total_tokens":9}}}`)
			return
		}
		chunk := func(delta string, finish any) {
			body, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk",
				"choices": []any{map[string]any{"index": 0, "delta": json.RawMessage(delta), "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", body)
		}
		chunk(`{"role":"assistant","content":"Hello from "}`, nil)
		chunk(`{"content":"Go's mock."}`, nil)
		chunk(`{}`, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mockEndpoint) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func (m *mockEndpoint) model(provider string) agent.Model {
	return agent.Model{ID: "mock-model", API: "openai-completions", Provider: provider,
		BaseURL: m.URL + "/v1", ContextWindow: 32000, MaxTokens: 1000}
}

// keyHook answers the key as plain text, as a host would.
func keyHook(key string) agent.APIKeyFunc {
	return func(ctx context.Context, provider string) (string, error) {
		return key, nil
	}
}

func lastMessage(t *testing.T, a *agent.Agent) map[string]any {
	t.Helper()
	state, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	var last map[string]any
	if err := json.Unmarshal(state.Messages[len(state.Messages)-1], &last); err != nil {
		t.Fatal(err)
	}
	return last
}

func TestProvidersReachTheEndpoint(t *testing.T) {
	mock := newMockEndpoint(t)
	a := mustNew(t, agent.Options{Model: mock.model("acme-local"), UseProviders: true,
		Hooks: agent.Hooks{GetAPIKey: keyHook(goodKey)}})
	var text strings.Builder
	a.Subscribe(func(e agent.Event) {
		if e.UpdateType == "text_delta" {
			text.WriteString(e.Delta)
		}
	})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	if text.String() != "Hello from Go's mock." {
		t.Fatalf("streamed %q", text.String())
	}
	if last := lastMessage(t, a); last["stopReason"] != "stop" {
		t.Fatalf("last message %v", last)
	}
}

// GetAPIKey takes the provider's name and answers the key as plain text; "" leaves the key to
// the provider's environment variable. SetHook takes the same function through Hook.
func TestGetAPIKeyTakesAndAnswersPlainText(t *testing.T) {
	mock := newMockEndpoint(t)
	var providers []string
	var mu sync.Mutex
	key := ""
	hook := agent.APIKeyFunc(func(ctx context.Context, provider string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		providers = append(providers, provider)
		return key, nil
	})
	t.Setenv("OPENAI_API_KEY", goodKey)
	a := mustNew(t, agent.Options{Model: mock.model("openai"), UseProviders: true, Hooks: agent.Hooks{GetAPIKey: hook}})
	if _, err := a.Prompt(context.Background(), "no key from the hook"); err != nil {
		t.Fatalf("Prompt with the environment's key: %v", err)
	}
	t.Setenv("OPENAI_API_KEY", "wrong-key")
	key = goodKey
	if _, err := a.Prompt(context.Background(), "the hook's key"); err != nil {
		t.Fatalf("Prompt with the hook's plain key: %v", err)
	}
	if err := a.SetHook(agent.HookGetAPIKey, agent.APIKeyFunc(func(ctx context.Context, provider string) (string, error) {
		return `sk-"quoted"\key`, nil
	}).Hook()); err != nil {
		t.Fatal(err)
	}
	_, err := a.Prompt(context.Background(), "a key JSON would mangle")
	if !errors.Is(err, agent.ErrModelError) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Prompt with a wrong key = %v, want the server's 401", err)
	}
	mock.mu.Lock()
	got := []string{}
	for _, r := range mock.requests {
		got = append(got, r.Header.Get("Authorization"))
	}
	mock.mu.Unlock()
	want := []string{"Bearer " + goodKey, "Bearer " + goodKey, `Bearer sk-"quoted"\key`}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(providers) != "[openai openai]" {
		t.Fatalf("authorization %q, want %q; providers %q", got, want, providers)
	}
}

// An api the built-in providers do not speak fails at New, naming the ones they do.
func TestNewRefusesAnAPIThatNoProviderSpeaks(t *testing.T) {
	for _, model := range []any{
		agent.Model{ID: "m", API: "faux", Provider: "p", BaseURL: "http://127.0.0.1:1/v1"},
		map[string]any{"id": "m", "api": "faux", "provider": "p"},
		json.RawMessage(`{"id":"m","api":"faux","provider":"p"}`),
	} {
		_, err := agent.New(agent.Options{Model: model, UseProviders: true})
		if !errors.Is(err, agent.ErrInvalidArgument) {
			t.Fatalf("New(%T) = %v, want ErrInvalidArgument", model, err)
		}
		for _, api := range []string{`"faux"`, "openai-completions", "anthropic-messages", "openai-responses",
			"google-generative-ai", "Model.API"} {
			if !strings.Contains(err.Error(), api) {
				t.Fatalf("New(%T) = %v, does not name %s", model, err, api)
			}
		}
	}
	// Another model (a stream function's own) may name any api.
	mustNew(t, agent.Options{Model: agent.Model{ID: "m", API: "faux", Provider: "p"}, ScriptedModel: []any{}})
}

func TestProvidersSpeakOpenAIResponses(t *testing.T) {
	mock := newMockEndpoint(t)
	model := mock.model("acme-local")
	model.API = "openai-responses"
	a := mustNew(t, agent.Options{Model: model, UseProviders: true,
		Hooks: agent.Hooks{GetAPIKey: keyHook(goodKey)}})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	last := lastMessage(t, a)
	if last["stopReason"] != "stop" || last["api"] != "openai-responses" {
		t.Fatalf("last message %v", last)
	}
	content, _ := json.Marshal(last["content"])
	if !strings.Contains(string(content), `"text":"Hello from Go's mock."`) {
		t.Fatalf("content %s", content)
	}
	mock.mu.Lock() // the handler's goroutine wrote it; the sync through libagent is invisible to -race
	path := mock.requests[0].URL.Path
	mock.mu.Unlock()
	if path != "/v1/responses" {
		t.Fatalf("path %q", path)
	}
}

func TestProvidersTakeTheKeyFromTheEnvironment(t *testing.T) {
	mock := newMockEndpoint(t)
	t.Setenv("OPENAI_API_KEY", goodKey)
	a := mustNew(t, agent.Options{Model: mock.model("openai"), UseProviders: true})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
}

func TestAFailedRequestIsAnError(t *testing.T) {
	mock := newMockEndpoint(t)
	a := mustNew(t, agent.Options{Model: mock.model("acme-local"), UseProviders: true,
		Hooks: agent.Hooks{GetAPIKey: keyHook("wrong-key")}})
	_, err := a.Prompt(context.Background(), "hello")
	var failed *agent.Error
	if !errors.As(err, &failed) || failed.Status != agent.ErrModelError {
		t.Fatalf("Prompt = %v, want an ErrModelError", err)
	}
	if !strings.Contains(failed.Message, "401") || !strings.Contains(failed.Message, "invalid api key") {
		t.Fatalf("message %q", failed.Message)
	}
	if errors.Is(err, agent.ErrAborted) || !errors.Is(err, agent.ErrModelError) {
		t.Fatalf("%v matches the wrong sentinels", err)
	}
	if last := lastMessage(t, a); last["errorMessage"] != failed.Message {
		t.Fatalf("errorMessage %v, error %q", last["errorMessage"], failed.Message)
	}
	ch, err := a.PromptAsync("again")
	if err != nil {
		t.Fatal(err)
	}
	if err := settled(ch); !errors.Is(err, agent.ErrModelError) {
		t.Fatalf("PromptAsync = %v", err)
	}
	if mock.count() != 2 {
		t.Fatalf("%d requests", mock.count())
	}
}

func TestAnAbortedRunIsDistinguishable(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: []any{
		map[string]any{"content": []any{}, "waitForAbort": true}}})
	started := make(chan struct{}, 1)
	a.Subscribe(func(e agent.Event) {
		if e.Type == "message_start" {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	})
	ch, err := a.PromptAsync("wait")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	a.Abort()
	err = settled(ch)
	if !errors.Is(err, agent.ErrAborted) || !errors.Is(err, agent.ErrRunAborted) || errors.Is(err, agent.ErrModelError) {
		t.Fatalf("aborted run = %v", err)
	}
}

func TestWithoutAModelTheErrorNamesGoOptions(t *testing.T) {
	_, err := agent.New(agent.Options{Model: agent.Model{ID: "m", API: "openai-completions", Provider: "p"}})
	if !errors.Is(err, agent.ErrNoStreamFn) {
		t.Fatalf("New = %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "UseProviders") || strings.Contains(msg, "streamFn") {
		t.Fatalf("message %q", msg)
	}
}

func TestProviderOptionErrorsNameTheGoField(t *testing.T) {
	negative := int64(-1)
	_, err := agent.New(agent.Options{UseProviders: true, MaxRetryDelayMs: &negative})
	if !errors.Is(err, agent.ErrInvalidJSON) || !strings.Contains(err.Error(), "Options.MaxRetryDelayMs must not be negative") {
		t.Fatalf("New = %v", err)
	}
	delay := int64(250)
	a := mustNew(t, agent.Options{Model: agent.Model{ID: "m", API: "anthropic-messages", Provider: "anthropic"}, UseProviders: true,
		MaxRetryDelayMs: &delay})
	state, err := a.State()
	if err != nil || state.MaxRetryDelayMs == nil || *state.MaxRetryDelayMs != 250 {
		t.Fatalf("state %+v, %v", state, err)
	}
}

func TestARunWithoutAModelNamesGoOptions(t *testing.T) {
	a := mustNew(t, agent.Options{ScriptedModel: []any{}})
	if err := a.SetStreamFunc(nil); err != nil { // no process-wide default: the run fails
		t.Fatal(err)
	}
	_, err := a.Prompt(context.Background(), "hi")
	if !errors.Is(err, agent.ErrModelError) || !strings.Contains(err.Error(), "Options.StreamFunc") ||
		strings.Contains(err.Error(), "setDefaultStreamFn") {
		t.Fatalf("Prompt = %v", err)
	}
}

// The providers' transport options reach the core from Go: an idle timeout ends a request whose
// server says nothing, and MaxRetries retries a 503 until the server answers.
func TestProviderTransportOptions(t *testing.T) {
	stop := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // accepts the request, never answers
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for the handler
	idle := int64(200)
	model := agent.Model{ID: "m", API: "openai-completions", Provider: "acme-local",
		BaseURL: silent.URL + "/v1", ContextWindow: 32000, MaxTokens: 1000}
	a := mustNew(t, agent.Options{Model: model, UseProviders: true, IdleTimeoutMs: &idle,
		Hooks: agent.Hooks{GetAPIKey: keyHook(goodKey)}})
	_, err := a.Prompt(context.Background(), "hello")
	if !errors.Is(err, agent.ErrModelError) || !strings.Contains(err.Error(), "(Options.IdleTimeoutMs)") {
		t.Fatalf("Prompt against a silent server = %v, want the idle timeout", err)
	}

	// The first request gets a 503, the next ones the mock's answer.
	answering := newMockEndpoint(t)
	var attempts atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		answering.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	flakyModel := answering.model("acme-local")
	flakyModel.BaseURL = flaky.URL + "/v1"
	retries := 1
	a = mustNew(t, agent.Options{Model: flakyModel, UseProviders: true, MaxRetries: &retries,
		Hooks: agent.Hooks{GetAPIKey: keyHook(goodKey)}})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		t.Fatalf("Prompt with MaxRetries 1 after a 503 = %v", err)
	}
	if attempts.Load() != 2 {
		t.Fatalf("%d attempts, want 2", attempts.Load())
	}

	negative := int64(-1)
	if _, err := agent.New(agent.Options{Model: model, UseProviders: true, TimeoutMs: &negative}); err == nil ||
		!strings.Contains(err.Error(), "TimeoutMs") {
		t.Fatalf("a negative TimeoutMs = %v, want an error naming Options.TimeoutMs", err)
	}
}

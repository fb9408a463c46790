package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The assistant against the scripted model: a write approved, an edit declined, a read outside
// the root refused.
func TestAssistantAsksBeforeChanges(t *testing.T) {
	for _, name := range []string{"LIBAGENT_API", "LIBAGENT_BASE_URL", "LIBAGENT_MODEL"} {
		t.Setenv(name, "") // no real model
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("xyzzy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`[{"content":[{"type":"toolCall","id":"w","name":"write","arguments":{"path":"new.txt","content":"a\n"}}]},
	{"content":[{"type":"toolCall","id":"e","name":"edit","arguments":{"path":"notes.txt","edits":[{"oldText":"xyzzy","newText":"plugh"}]}}]},
	{"content":[{"type":"toolCall","id":"r","name":"read","arguments":{"path":"../x"}}]},
	{"content":[{"type":"text","text":"All done."}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(strings.NewReader("change things\ny\nn\n"), &out, config{root: root, script: script}); err != nil {
		t.Fatal(err)
	}
	want := "Write new.txt? [y/N] [result] Successfully wrote to new.txt\n" +
		"Edit notes.txt? [y/N] [result] the user declined: 'notes.txt' was not changed\n" +
		"[result] Path ../x is outside the root directory; only paths inside it can be used.\nAll done.\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "new.txt")); string(got) != "a\n" {
		t.Errorf("new.txt: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(got) != "xyzzy\n" {
		t.Errorf("notes.txt: %q", got)
	}
}

// The assistant on a real model configured by LIBAGENT_*: a loopback openai-completions endpoint
// streams its answer for the key "test-key" and answers 401 to any other.
func TestAssistantOnAnEndpoint(t *testing.T) {
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"invalid api key"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, delta := range []string{`{"role":"assistant","content":"Hello from "}`, `{"content":"the mock."}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		}
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer server.Close()
	t.Setenv("LIBAGENT_API", "openai-completions")
	t.Setenv("LIBAGENT_BASE_URL", server.URL+"/v1")
	t.Setenv("LIBAGENT_MODEL", "mock-model")

	t.Setenv("LIBAGENT_API_KEY", "test-key")
	var out bytes.Buffer
	if err := run(strings.NewReader("Say hello.\n"), &out, config{root: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Hello from the mock.\n" || requests.Load() != 1 {
		t.Errorf("output %q after %d requests", out.String(), requests.Load())
	}

	t.Setenv("LIBAGENT_API_KEY", "wrong-key")
	out.Reset()
	err := run(strings.NewReader("Say hello.\nAnd again.\n"), &out, config{root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "invalid api key") {
		t.Errorf("a wrong key: error %v", err)
	}
	if out.String() != "" || requests.Load() != 2 { // the failed request ends the session
		t.Errorf("a wrong key: output %q after %d requests", out.String(), requests.Load())
	}
}

// -session FILE twice on a loopback endpoint: the second run says what it resumed, its request
// starts with the first run's messages, and the file holds both runs; -continue resumes the
// newest session of the root under -sessions-dir.
func TestAssistantResumesASession(t *testing.T) {
	var mu sync.Mutex // the handler runs on the server's goroutines
	var bodies []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Answer %d.\"},\"finish_reason\":null}]}\n\n", n)
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer server.Close()
	t.Setenv("LIBAGENT_API", "openai-completions")
	t.Setenv("LIBAGENT_BASE_URL", server.URL+"/v1")
	t.Setenv("LIBAGENT_MODEL", "mock-model")
	t.Setenv("LIBAGENT_API_KEY", "test-key")
	root := t.TempDir()
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	var out bytes.Buffer
	if err := run(strings.NewReader("Remember the word xyzzy.\n"), &out, config{root: root, session: path}); err != nil {
		t.Fatal(err)
	}
	if want := "new session " + path + "\nAnswer 1.\n"; out.String() != want {
		t.Errorf("first run: %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := run(strings.NewReader("What was the word?\n"), &out, config{root: root, session: path}); err != nil {
		t.Fatal(err)
	}
	if want := "resumed 2 messages from " + path + "\nAnswer 2.\n"; out.String() != want {
		t.Errorf("second run: %q, want %q", out.String(), want)
	}
	var request struct {
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	mu.Lock()
	seen := append([]string(nil), bodies...)
	mu.Unlock()
	if len(seen) != 2 || json.Unmarshal([]byte(seen[1]), &request) != nil {
		t.Fatalf("requests: %q", seen)
	}
	var roles []string
	for _, m := range request.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, " ") != "user assistant user" || !strings.Contains(string(request.Messages[0].Content), "Remember the word xyzzy.") ||
		string(request.Messages[1].Content) != `"Answer 1."` {
		t.Errorf("the resumed request: %+v", request.Messages)
	}
	file, _ := os.ReadFile(path)
	if n := strings.Count(string(file), `"message":{"role":"user"`) + strings.Count(string(file), `"message":{"role":"assistant"`); n != 4 ||
		!strings.HasPrefix(string(file), `{"type":"session"`) {
		t.Errorf("the session file holds %d messages of the conversation:\n%s", n, file)
	}

	sessions := t.TempDir()
	out.Reset()
	if err := run(strings.NewReader("hi\n"), &out, config{root: root, resume: true, sessionsDir: sessions}); err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(sessions, "--"+strings.ReplaceAll(strings.TrimPrefix(root, "/"), "/", "-")+"--")
	files, _ := filepath.Glob(filepath.Join(layout, "*.jsonl"))
	if len(files) != 1 || !strings.HasPrefix(out.String(), "new session "+files[0]+"\n") {
		t.Fatalf("-continue in a new directory: %q, files %q", out.String(), files)
	}
	out.Reset()
	if err := run(strings.NewReader("again\n"), &out, config{root: root, resume: true, sessionsDir: sessions}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "resumed 2 messages from "+files[0]+"\n") {
		t.Errorf("-continue again: %q", out.String())
	}
}

// An overloaded endpoint (529) then an answer: the retry line with the wait and the error, then the answer.
func TestAssistantRetriesAnOverloadedRequest(t *testing.T) {
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Answered.\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer server.Close()
	t.Setenv("LIBAGENT_API", "openai-completions")
	t.Setenv("LIBAGENT_BASE_URL", server.URL+"/v1")
	t.Setenv("LIBAGENT_MODEL", "mock-model")
	t.Setenv("LIBAGENT_API_KEY", "test-key")
	t.Setenv("LIBAGENT_RETRY_BASE_DELAY_MS", "5")
	var out bytes.Buffer
	if err := run(strings.NewReader("Say hello.\n"), &out, config{root: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "[retrying in 0.005s: 529") || !strings.Contains(lines[0], "verloaded") ||
		lines[1] != "Answered." || requests.Load() != 2 {
		t.Errorf("output %q after %d requests", out.String(), requests.Load())
	}

	t.Setenv("LIBAGENT_RETRY_BASE_DELAY_MS", "soon")
	if err := run(strings.NewReader("Say hello.\n"), &out, config{root: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "LIBAGENT_RETRY_BASE_DELAY_MS must be a positive integer") {
		t.Errorf("a wait that is not a number: %v", err)
	}
}

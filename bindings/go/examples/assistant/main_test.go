package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
	if err := run(strings.NewReader("change things\ny\nn\n"), &out, root, script); err != nil {
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
	if err := run(strings.NewReader("Say hello.\n"), &out, t.TempDir(), ""); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Hello from the mock.\n" || requests.Load() != 1 {
		t.Errorf("output %q after %d requests", out.String(), requests.Load())
	}

	t.Setenv("LIBAGENT_API_KEY", "wrong-key")
	out.Reset()
	err := run(strings.NewReader("Say hello.\nAnd again.\n"), &out, t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "invalid api key") {
		t.Errorf("a wrong key: error %v", err)
	}
	if out.String() != "" || requests.Load() != 2 { // the failed request ends the session
		t.Errorf("a wrong key: output %q after %d requests", out.String(), requests.Load())
	}
}

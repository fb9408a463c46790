package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The assistant against the scripted model: a write approved, an edit declined, a read outside
// the root refused.
func TestAssistantAsksBeforeChanges(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("xyzzy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `[{"content":[{"type":"toolCall","id":"w","name":"write","arguments":{"path":"new.txt","content":"a\n"}}]},
	{"content":[{"type":"toolCall","id":"e","name":"edit","arguments":{"path":"notes.txt","edits":[{"oldText":"xyzzy","newText":"plugh"}]}}]},
	{"content":[{"type":"toolCall","id":"r","name":"read","arguments":{"path":"../x"}}]},
	{"content":[{"type":"text","text":"All done."}]}]`
	var out bytes.Buffer
	if err := run(strings.NewReader("change things\ny\nn\n"), &out, root, []byte(script)); err != nil {
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

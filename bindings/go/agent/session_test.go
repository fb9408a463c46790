package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libagent/libagent/bindings/go/agent"
)

func userEntry(text string) map[string]any {
	return map[string]any{"type": "message", "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1}}
}

func assistantEntry(text string) map[string]any {
	usage := map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
		"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
	return map[string]any{"type": "message", "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": text}}, "api": "faux", "provider": "test",
		"model": "m1", "usage": usage, "stopReason": "stop", "timestamp": 2}}
}

type entry struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	ParentID *string         `json:"parentId"`
	Message  json.RawMessage `json:"message"`
	TargetID string          `json:"targetId"`
	Label    string          `json:"label"`
	Summary  string          `json:"summary"`
}

func decodeEntries(t *testing.T, raw []json.RawMessage) []entry {
	t.Helper()
	out := make([]entry, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func fileLines(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []entry
	for scanner := bufio.NewScanner(f); scanner.Scan(); {
		var e entry
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", scanner.Text(), err)
		}
		lines = append(lines, e)
	}
	return lines
}

func types(entries []entry) string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Type)
	}
	return strings.Join(names, " ")
}

func mustAppend(t *testing.T, s *agent.Session, e any) string {
	t.Helper()
	id, err := s.Append(e)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return id
}

func mustOpen(t *testing.T, path string, opts agent.SessionOptions) *agent.Session {
	t.Helper()
	s, err := agent.OpenSession(path, opts)
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSessionFileIsWrittenAndReopens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.jsonl")
	s := mustOpen(t, path, agent.SessionOptions{Cwd: dir, Durability: agent.DurabilityFsync})
	if file, err := s.File(); err != nil || file != (agent.SessionFile{Path: path}) {
		t.Fatalf("File before a message: %+v, %v", file, err)
	}
	if leaf, err := s.LeafID(); err != nil || leaf != "" {
		t.Fatalf("LeafID of an empty session: %q, %v", leaf, err)
	}
	first := mustAppend(t, s, userEntry("hello"))
	second := mustAppend(t, s, assistantEntry("hi"))
	if leaf, _ := s.LeafID(); leaf != second || len(first) != 8 {
		t.Errorf("leaf %q after appending %q, %q", leaf, first, second)
	}
	if file, _ := s.File(); file != (agent.SessionFile{Path: path, Exists: true}) {
		t.Errorf("File after two messages: %+v", file)
	}
	lines := fileLines(t, path)
	if types(lines) != "session message message" || lines[2].ID != second || *lines[2].ParentID != first {
		t.Fatalf("the file: %+v", lines)
	}
	ctx, err := s.Context()
	if err != nil || len(ctx.Messages) != 2 || ctx.ThinkingLevel != agent.ThinkingOff {
		t.Fatalf("Context: %+v, %v", ctx, err)
	}
	var header struct{ Cwd string }
	raw, _ := s.Header()
	if json.Unmarshal(raw, &header); header.Cwd != dir {
		t.Errorf("header %s", raw)
	}
	entries, _ := s.Entries()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	again := mustOpen(t, path, agent.SessionOptions{})
	reopened, _ := again.Entries()
	if len(entries) != 2 || fmt.Sprintf("%s", reopened) != fmt.Sprintf("%s", entries) { // byte for byte
		t.Errorf("reopened entries %s, want %s", reopened, entries)
	}
}

func TestSessionTreeOperations(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "tree.jsonl"), agent.SessionOptions{})
	a := mustAppend(t, s, userEntry("one"))
	b := mustAppend(t, s, assistantEntry("two"))
	if err := s.Branch(a); err != nil {
		t.Fatal(err)
	}
	c := mustAppend(t, s, assistantEntry("other two"))
	path, _ := s.BranchPath()
	if got := decodeEntries(t, path); len(got) != 2 || got[0].ID != a || got[1].ID != c {
		t.Errorf("branch path %s", path)
	}
	label, err := s.Label(b, "first answer")
	entries, _ := s.Entries()
	last := decodeEntries(t, entries)[len(entries)-1]
	if err != nil || last.ID != label || last.Type != "label" || last.TargetID != b || last.Label != "first answer" {
		t.Errorf("label entry %+v, %v", last, err)
	}
	if raw := string(entries[len(entries)-1]); !strings.HasPrefix(raw, `{"type":"label","id":"`+label+`"`) ||
		!strings.HasSuffix(raw, `,"targetId":"`+b+`","label":"first answer"}`) {
		t.Errorf("the label entry's members are not in pi's order: %s", raw)
	}
	summary, err := s.BranchWithSummary(a, map[string]any{"summary": "We tried another answer."})
	path, _ = s.BranchPath()
	if got := decodeEntries(t, path); err != nil || len(got) != 2 || got[1].ID != summary || got[1].Summary == "" {
		t.Errorf("after BranchWithSummary: %s, %v", path, err)
	}
	if llm, err := s.LLMMessages(); err != nil || len(llm) != 2 || !strings.Contains(string(llm[1]), "We tried another answer.") {
		t.Errorf("LLMMessages: %s, %v", llm, err)
	}
	if err := s.ResetLeaf(); err != nil {
		t.Fatal(err)
	}
	if leaf, _ := s.LeafID(); leaf != "" {
		t.Errorf("leaf after ResetLeaf: %q", leaf)
	}
	before, _ := s.File()
	if err := s.Fork(c); err != nil {
		t.Fatal(err)
	}
	after, _ := s.File()
	forked, _ := s.Entries()
	if after.Path == before.Path || filepath.Dir(after.Path) != filepath.Dir(before.Path) || len(forked) != 2 {
		t.Errorf("Fork: %+v -> %+v, %d entries", before, after, len(forked))
	}
	if err := s.Branch(""); !errors.Is(err, agent.ErrInvalidArgument) {
		t.Errorf("Branch(\"\"): %v", err)
	}
}

func TestSessionErrorsMatchTheirSentinels(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "locked.jsonl")
	first := mustOpen(t, path, agent.SessionOptions{})
	mustAppend(t, first, userEntry("q"))
	mustAppend(t, first, assistantEntry("a"))
	_, err := agent.OpenSession(path, agent.SessionOptions{})
	var e *agent.Error
	if !errors.Is(err, agent.ErrLocked) || !errors.As(err, &e) || !strings.Contains(e.Message, path) {
		t.Errorf("a second open: %v", err)
	}
	if err := first.Branch("nope1234"); !errors.Is(err, agent.ErrInvalidArgument) {
		t.Errorf("Branch to a missing entry: %v", err)
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("just notes\n"), 0o644)
	if _, err := agent.OpenSession(notes, agent.SessionOptions{}); !errors.Is(err, agent.ErrNotASession) {
		t.Errorf("a file that is not a session: %v", err)
	}
	if text, _ := os.ReadFile(notes); string(text) != "just notes\n" {
		t.Errorf("the file was changed: %q", text)
	}
	blocker := filepath.Join(dir, "a-file")
	os.WriteFile(blocker, nil, 0o644)
	err = func() error {
		s, err := agent.CreateSession(filepath.Join(blocker, "sessions"), agent.SessionOptions{})
		if err != nil {
			return err
		}
		defer s.Close()
		if _, err := s.Append(userEntry("q")); err != nil {
			return err
		}
		_, err = s.Append(assistantEntry("a"))
		return err
	}()
	if !errors.Is(err, agent.ErrIO) || !strings.Contains(err.Error(), blocker) {
		t.Errorf("a directory under a file: %v", err)
	}
	if _, err := agent.OpenSession(path, agent.SessionOptions{Durability: "sometimes"}); !errors.Is(err, agent.ErrInvalidJSON) || !strings.HasPrefix(err.(*agent.Error).Message, "SessionOptions.Durability must be") {
		t.Errorf("a bad durability: %v", err)
	}
	closed, _ := agent.InMemorySession(agent.SessionOptions{})
	closed.Close()
	if _, err := closed.Append(userEntry("late")); !errors.Is(err, agent.ErrInvalidHandle) {
		t.Errorf("Append after Close: %v", err)
	}
	for _, status := range []agent.Status{agent.ErrIO, agent.ErrLocked, agent.ErrNotASession} {
		if strings.HasPrefix(status.String(), "status ") {
			t.Errorf("%d has no name", status)
		}
	}
}

func TestSessionDirectoryAndContinueRecent(t *testing.T) {
	base := t.TempDir()
	dir, err := agent.SessionDirectory(base, "/home/me/project")
	if err != nil || dir != filepath.Join(base, "--home-me-project--") {
		t.Fatalf("SessionDirectory: %q, %v", dir, err)
	}
	opts := agent.SessionOptions{Cwd: "/home/me/project"}
	first, err := agent.ContinueRecentSession(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, first, userEntry("q"))
	mustAppend(t, first, assistantEntry("a"))
	firstFile, _ := first.File()
	first.Close()
	again, err := agent.ContinueRecentSession(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if file, _ := again.File(); file != firstFile {
		t.Errorf("continued %+v, want %+v", file, firstFile)
	}
	fresh, err := agent.CreateSession(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if file, _ := fresh.File(); file.Path == firstFile.Path || file.Exists {
		t.Errorf("CreateSession: %+v", file)
	}
	memory, _ := agent.InMemorySession(opts)
	defer memory.Close()
	if file, _ := memory.File(); file != (agent.SessionFile{}) {
		t.Errorf("in memory: %+v", file)
	}
}

func TestAnAgentAppendsToItsSessionAndResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.jsonl")
	s := mustOpen(t, path, agent.SessionOptions{})
	a := mustNew(t, agent.Options{Session: s, ScriptedModel: script(text("Hi!", 1))})
	if _, err := a.Prompt(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	if ctx, _ := s.Context(); len(ctx.Messages) != 2 {
		t.Errorf("context after a run: %d messages", len(ctx.Messages))
	}
	if _, err := agent.New(agent.Options{Session: s, ScriptedModel: script(text("x", 1))}); !errors.Is(err, agent.ErrInvalidState) {
		t.Errorf("a second agent on the session: %v", err)
	}
	a.Close()
	s.Close()
	if got := types(fileLines(t, path)); !strings.HasPrefix(got, "session") || strings.Count(got, "message") != 2 {
		t.Errorf("the file after one run: %s", got)
	}
	var seen [][]json.RawMessage
	resumed := mustOpen(t, path, agent.SessionOptions{})
	b := mustNew(t, agent.Options{Session: resumed, StreamFunc: func(ctx context.Context, req *agent.StreamRequest, s *agent.Stream) error {
		seen = append(seen, req.Context.Messages)
		return s.Complete(assistantEntry("Welcome back.")["message"])
	}})
	if _, err := b.Prompt(context.Background(), "again"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || len(seen[0]) != 3 || !strings.Contains(string(seen[0][0]), "hello") {
		t.Errorf("the resumed request's messages: %s", seen)
	}
	b.Close()
	resumed.Close()
	if got := types(fileLines(t, path)); strings.Count(got, "message") != 4 {
		t.Errorf("the file after two runs: %s", got)
	}
}

// The README's "resume a session" snippet for Go (SESSIONS_SNIPPETS.md), verbatim between the
// markers: run twice on one file, the second run resumes the first's two messages.
func ExampleOpenSession() {
	dir, _ := os.MkdirTemp("", "libagent-example-session")
	defer os.RemoveAll(dir)
	cwd, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(cwd)
	ctx, script := context.Background(), []map[string]any{{"content": []map[string]any{{"type": "text", "text": "Hi again!"}}}}
	for run := 0; run < 2; run++ {
		func() {
			// snippet begin
			session, err := agent.OpenSession("chat.jsonl", agent.SessionOptions{}) // a new file, or the conversation so far
			if err != nil {
				log.Fatal(err)
			} // errors.Is(err, agent.ErrLocked): open elsewhere
			defer session.Close()
			resumed, _ := session.Context()
			fmt.Println("resumed", len(resumed.Messages), "messages")
			a, err := agent.New(agent.Options{Session: session, ScriptedModel: script}) // starts from the session's context
			if err != nil {
				log.Fatal(err)
			}
			defer a.Close()
			a.Prompt(ctx, "hello") // appended to chat.jsonl as the run goes
			// snippet end
		}()
	}
	// Output:
	// resumed 0 messages
	// resumed 2 messages
}

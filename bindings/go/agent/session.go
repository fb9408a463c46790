package agent

// #include "shim.h"
import "C"

import (
	"encoding/json"
	"runtime"
	"sync"
)

// Durability says how far each appended session entry is written before the call returns.
type Durability string

// The durabilities.
const (
	DurabilityFlush Durability = "flush" // flushed to the operating system per entry (the default)
	DurabilityFsync Durability = "fsync" // on the disk per entry (fsync)
)

// SessionOptions configure OpenSession, CreateSession, ContinueRecentSession and
// InMemorySession. The zero value: the process's working directory, flushed per entry.
type SessionOptions struct {
	Cwd        string // the working directory the session records ("": the process's)
	Durability Durability
}

func (o SessionOptions) json() string {
	m := map[string]string{}
	if o.Cwd != "" {
		m["cwd"] = o.Cwd
	}
	if o.Durability != "" {
		m["durability"] = string(o.Durability)
	}
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Session is a conversation kept as pi-coding-agent's session file (JSONL, version 3: a tree
// of entries whose leaf is the current position), or kept in memory. Set it as
// Options.Session: the agent starts from the session's context and appends every message it
// commits, and every model and thinking-level change, before listeners see the event. A
// session belongs to one agent at a time.
//
// Errors: ErrIO (a file-system error; the message names the path), ErrLocked (the file is open
// for writing elsewhere), ErrNotASession (not a session file, or a newer version),
// ErrInvalidArgument (an entry id that is not in the session, ...). Close releases it (an
// agent built with it keeps the file open until the agent is closed); a runtime cleanup
// releases a Session that became unreachable without Close. Its methods may be called from
// any goroutine.
type Session struct {
	h         C.AgentSession
	closeOnce sync.Once
	closeErr  error
	cleanup   runtime.Cleanup
}

type sessionOpener func(p *C.char, n C.size_t, o *C.char, on C.size_t, out *C.AgentSession) *C.AgentError

func newSession(arg string, opts SessionOptions, open sessionOpener) (*Session, error) {
	if err := versionChecked(); err != nil {
		return nil, err
	}
	var h C.AgentSession
	p, n := ctext(arg)
	options := opts.json()
	var o *C.char
	var on C.size_t
	if options != "" {
		o, on = ctext(options)
	}
	err := check(open(p, n, o, on, &h))
	runtime.KeepAlive(arg)
	runtime.KeepAlive(options)
	if err != nil {
		return nil, err
	}
	s := &Session{h: h}
	s.cleanup = runtime.AddCleanup(s, func(h C.AgentSession) { C.agent_error_free(C.agent_session_free(h)) }, h)
	return s, nil
}

// OpenSession opens the session file at path (a file that does not exist yet becomes a new
// session, written there with its first user or assistant message). A file of an older
// version is migrated as pi does.
func OpenSession(path string, opts SessionOptions) (*Session, error) {
	return newSession(path, opts, func(p *C.char, n C.size_t, o *C.char, on C.size_t, out *C.AgentSession) *C.AgentError {
		return C.agent_session_open(p, n, o, on, out)
	})
}

// CreateSession starts a new session in the directory dir (a new file named as pi names them,
// written with the first user or assistant message).
func CreateSession(dir string, opts SessionOptions) (*Session, error) {
	return newSession(dir, opts, func(p *C.char, n C.size_t, o *C.char, on C.size_t, out *C.AgentSession) *C.AgentError {
		return C.agent_session_create(p, n, o, on, out)
	})
}

// ContinueRecentSession opens the newest session file in dir, or starts a new one there when
// it has none.
func ContinueRecentSession(dir string, opts SessionOptions) (*Session, error) {
	return newSession(dir, opts, func(p *C.char, n C.size_t, o *C.char, on C.size_t, out *C.AgentSession) *C.AgentError {
		return C.agent_session_continue_recent(p, n, o, on, out)
	})
}

// InMemorySession starts a session that is never written to disk (opts.Durability is unused).
func InMemorySession(opts SessionOptions) (*Session, error) {
	return newSession("", opts, func(_ *C.char, _ C.size_t, o *C.char, on C.size_t, out *C.AgentSession) *C.AgentError {
		return C.agent_session_in_memory(o, on, out)
	})
}

// SessionDirectory is pi's per-directory layout: the directory under base that holds the
// sessions of the working directory cwd (for CreateSession and ContinueRecentSession).
func SessionDirectory(base, cwd string) (string, error) {
	var out *C.char
	var n C.size_t
	bp, bn := ctext(base)
	cp, cn := ctext(cwd)
	err := check(C.agent_session_directory(bp, bn, cp, cn, &out, &n))
	runtime.KeepAlive(base)
	runtime.KeepAlive(cwd)
	if err != nil {
		return "", err
	}
	return takeString(out, n), nil
}

// Close releases the session (idempotent). An agent built with it keeps it open until the
// agent is closed.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.cleanup.Stop()
		s.closeErr = check(C.agent_session_free(s.h))
	})
	return s.closeErr
}

func (s *Session) call(e *C.AgentError) error {
	err := check(e)
	runtime.KeepAlive(s)
	return err
}

// withID calls fn with id as a (pointer, length) text; "" passes NULL.
func withID(id string, fn func(*C.char, C.size_t) error) error {
	if id == "" {
		return fn(nil, 0)
	}
	p, n := ctext(id)
	err := fn(p, n)
	runtime.KeepAlive(id)
	return err
}

// Append appends an entry at the leaf: any JSON-marshalable object {"type": ..., members}
// (libagent fills id, parentId and timestamp). It returns the new entry's id; the entry
// becomes the leaf.
func (s *Session) Append(entry any) (string, error) {
	var out *C.char
	var n C.size_t
	err := withJSON(entry, func(p *C.char, pn C.size_t) error {
		return s.call(C.agent_session_append(s.h, p, pn, &out, &n))
	})
	if err != nil {
		return "", err
	}
	return takeString(out, n), nil
}

// Label labels the entry targetID (pi's label entry; "" clears its label) and returns the
// label entry's id.
func (s *Session) Label(targetID, label string) (string, error) {
	return s.Append(struct { // in pi's member order
		Type     string `json:"type"`
		TargetID string `json:"targetId"`
		Label    string `json:"label"`
	}{"label", targetID, label})
}

// Branch moves the leaf to the entry id: the next entry continues from there (a new branch).
func (s *Session) Branch(id string) error {
	if id == "" {
		return &Error{Status: ErrInvalidArgument, Message: "Branch needs an entry id; ResetLeaf moves the leaf before the first entry."}
	}
	return withID(id, func(p *C.char, n C.size_t) error { return s.call(C.agent_session_branch(s.h, p, n)) })
}

// ResetLeaf moves the leaf before the first entry: the next entry starts a new root.
func (s *Session) ResetLeaf() error { return s.call(C.agent_session_branch(s.h, nil, 0)) }

// BranchWithSummary branches to the entry id ("": before the first entry) and appends a
// branch summary there ({"summary", "details"?, "fromHook"?, "usage"?}, any JSON-marshalable
// value); it returns the summary entry's id.
func (s *Session) BranchWithSummary(id string, summary any) (string, error) {
	var out *C.char
	var n C.size_t
	err := withJSON(summary, func(sp *C.char, sn C.size_t) error {
		return withID(id, func(p *C.char, pn C.size_t) error {
			return s.call(C.agent_session_branch_with_summary(s.h, p, pn, sp, sn, &out, &n))
		})
	})
	if err != nil {
		return "", err
	}
	return takeString(out, n), nil
}

// Fork is pi's createBranchedSession: a new session file holding the path from the root to
// the entry id; the Session writes to that file from then on.
func (s *Session) Fork(id string) error {
	if id == "" {
		return &Error{Status: ErrInvalidArgument, Message: "Fork needs an entry id."}
	}
	return withID(id, func(p *C.char, n C.size_t) error { return s.call(C.agent_session_fork(s.h, p, n)) })
}

func (s *Session) part(part C.AgentSessionPart) (json.RawMessage, error) {
	var out *C.char
	var n C.size_t
	if err := s.call(C.agent_session_get(s.h, part, &out, &n)); err != nil {
		return nil, err
	}
	return json.RawMessage(takeString(out, n)), nil
}

func (s *Session) list(part C.AgentSessionPart) ([]json.RawMessage, error) {
	raw, err := s.part(part)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &Error{Status: ErrInternal, Message: err.Error()}
	}
	return items, nil
}

// Header returns the session's header entry ({"type":"session","version":3,"id",...}).
func (s *Session) Header() (json.RawMessage, error) { return s.part(C.AGENT_SESSION_HEADER) }

// Entries returns every entry but the header, in file order.
func (s *Session) Entries() ([]json.RawMessage, error) { return s.list(C.AGENT_SESSION_ENTRIES) }

// BranchPath returns the entries from the root to the leaf.
func (s *Session) BranchPath() ([]json.RawMessage, error) { return s.list(C.AGENT_SESSION_BRANCH) }

// SessionModel is the model a session's context names.
type SessionModel struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// SessionContext is what an agent resumes from: the messages at the leaf (compactions, branch
// summaries and context edits applied), the thinking level and the model.
type SessionContext struct {
	Messages      []json.RawMessage `json:"messages"`
	ThinkingLevel ThinkingLevel     `json:"thinkingLevel"`
	Model         *SessionModel     `json:"model"` // nil when the session names none
}

// Context returns the context at the leaf.
func (s *Session) Context() (*SessionContext, error) {
	raw, err := s.part(C.AGENT_SESSION_CONTEXT)
	if err != nil {
		return nil, err
	}
	var ctx SessionContext
	if err := json.Unmarshal(raw, &ctx); err != nil {
		return nil, &Error{Status: ErrInternal, Message: err.Error()}
	}
	return &ctx, nil
}

// LLMMessages returns the context's messages converted for a model (summaries and bash
// executions as user messages, custom entries dropped).
func (s *Session) LLMMessages() ([]json.RawMessage, error) { return s.list(C.AGENT_SESSION_LLM) }

// LeafID returns the leaf entry's id ("" before the first entry).
func (s *Session) LeafID() (string, error) {
	raw, err := s.part(C.AGENT_SESSION_LEAF_ID)
	if err != nil {
		return "", err
	}
	var id *string
	if err := json.Unmarshal(raw, &id); err != nil {
		return "", &Error{Status: ErrInternal, Message: err.Error()}
	}
	if id == nil {
		return "", nil
	}
	return *id, nil
}

// SessionFile is where a session is written.
type SessionFile struct {
	Path   string `json:"path"`   // "" in memory
	Exists bool   `json:"exists"` // written yet (a new file is written with the first user or assistant message)
}

// File returns the session's file.
func (s *Session) File() (SessionFile, error) {
	var f struct {
		Path   *string `json:"path"`
		Exists bool    `json:"exists"`
	}
	raw, err := s.part(C.AGENT_SESSION_FILE)
	if err == nil {
		if err = json.Unmarshal(raw, &f); err != nil {
			err = &Error{Status: ErrInternal, Message: err.Error()}
		}
	}
	if err != nil {
		return SessionFile{}, err
	}
	file := SessionFile{Exists: f.Exists}
	if f.Path != nil {
		file.Path = *f.Path
	}
	return file, nil
}

// The session error codes are libagent's: this fails to compile when the header says otherwise.
const _ = uint(ErrIO-C.AGENT_ERR_IO) + uint(C.AGENT_ERR_IO-ErrIO) +
	uint(ErrLocked-C.AGENT_ERR_LOCKED) + uint(C.AGENT_ERR_LOCKED-ErrLocked) +
	uint(ErrNotASession-C.AGENT_ERR_NOT_A_SESSION) + uint(C.AGENT_ERR_NOT_A_SESSION-ErrNotASession)

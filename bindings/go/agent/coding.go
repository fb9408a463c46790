package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"runtime"
	"time"
)

// CodingOptions configure CodingTools.
type CodingOptions struct {
	// Tools names the tools, in order (default: all but bash, or all seven with Bash).
	Tools []string
	// Bash enables the bash tool (off by default).
	Bash bool
	// BashTimeout is bash's default timeout (0: two minutes; negative: none).
	BashTimeout time.Duration
	// RefuseHardLinks makes read, edit and grep refuse files with more than one hard link (grep
	// skips them in a tree): a file hard-linked into the root from outside looks like any other
	// file of the root to every path check.
	RefuseHardLinks bool
	// Consent, when set, is asked before write, edit and bash change anything: return nil to
	// allow the call, an error to refuse it (the model sees the error's text). It runs on a
	// goroutine of its own (inside Dispatch for a host-pumped agent), so it may wait for a user;
	// ctx is cancelled when the run aborts.
	Consent func(ctx context.Context, tool string, args json.RawMessage) error
}

var allCodingTools = []string{"read", "write", "edit", "ls", "find", "grep", "bash"}

type codingTool struct {
	root    string
	options map[string]any
	consent func(ctx context.Context, tool string, args json.RawMessage) error
}

// CodingTools returns pi-coding-agent's tools (read, write, edit, ls, find, grep, bash) for the
// directory root. Every path the file tools use stays inside it: paths that lead out of the root
// are refused, and named pipes, sockets and devices are refused without blocking. Bash is not
// confined: its commands run with the process's rights and can read and write anywhere the
// process can; it is off unless opts.Bash, and Consent is its only gate. A file hard-linked into
// the root from outside is read like any other unless opts.RefuseHardLinks. They are ordinary
// tools: pass them in Options.Tools, alone or with your own.
func CodingTools(root string, opts CodingOptions) ([]*Tool, error) {
	names := opts.Tools
	if names == nil {
		for _, name := range allCodingTools {
			if opts.Bash || name != "bash" {
				names = append(names, name)
			}
		}
	}
	options := map[string]any{"bash": opts.Bash, "refuseHardLinks": opts.RefuseHardLinks}
	switch {
	case opts.BashTimeout < 0:
		options["bashTimeoutMs"] = nil
	case opts.BashTimeout > 0:
		options["bashTimeoutMs"] = max(opts.BashTimeout.Milliseconds(), 1)
	}
	tools := make([]*Tool, 0, len(names))
	for _, name := range names {
		spec := &codingTool{root: root, options: map[string]any{"tools": []string{name}}, consent: opts.Consent}
		for k, v := range options {
			spec.options[k] = v
		}
		// Made once now, so a wrong root, name or option fails here.
		handle, err := (&codingTool{root: root, options: spec.options}).newC(false)
		if err != nil {
			return nil, err
		}
		C.agent_tool_free(handle)
		tools = append(tools, &Tool{Name: name, Label: name, coding: spec})
	}
	return tools, nil
}

func (c *codingTool) newC(inline bool) (C.AgentTool, error) {
	var ud C.uintptr_t
	consent := C.AgentHookFn(nil)
	if c.consent != nil {
		ask := c.consent
		ud = pin(&hookEntry{inline: inline, fn: func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
			var request struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			}
			if err := json.Unmarshal(input, &request); err != nil {
				return nil, err
			}
			return nil, ask(ctx, request.Tool, request.Args)
		}})
		consent = C.ga_hook
	}
	var tools [1]C.AgentTool
	var count C.size_t
	root, rootLen := ctext(c.root)
	err := withJSON(c.options, func(p *C.char, n C.size_t) error {
		fin := C.AgentFinalizer(nil)
		if ud != 0 {
			fin = C.ga_finalize
		}
		return check(C.ga_coding_tools_new(root, rootLen, p, n, consent, ud, fin, &tools[0], 1, &count))
	})
	runtime.KeepAlive(c)
	if err != nil {
		if ud != 0 {
			unpin(ud)
		}
		return C.AgentTool{}, err
	}
	return tools[0], nil
}

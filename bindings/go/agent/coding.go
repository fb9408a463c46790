package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
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
	// Consent, when set, is asked before write, edit and bash change anything: return nil to
	// allow the call, an error to refuse it (the model sees the error's text).
	Consent func(ctx context.Context, tool string, args json.RawMessage) error
}

var allCodingTools = []string{"read", "write", "edit", "ls", "find", "grep", "bash"}

type codingTool struct {
	root    string
	options map[string]any
	consent func(ctx context.Context, tool string, args json.RawMessage) error
}

// CodingTools returns pi-coding-agent's tools (read, write, edit, ls, find, grep, bash) for the
// directory root: every path they use stays inside it. They are ordinary tools: pass them in
// Options.Tools, alone or with your own.
func CodingTools(root string, opts CodingOptions) ([]*Tool, error) {
	names := opts.Tools
	if names == nil {
		for _, name := range allCodingTools {
			if opts.Bash || name != "bash" {
				names = append(names, name)
			}
		}
	}
	options := map[string]any{"bash": opts.Bash}
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
		handle, err := (&codingTool{root: root, options: spec.options}).newC()
		if err != nil {
			return nil, err
		}
		C.ga_tool_free(handle, nil)
		tools = append(tools, &Tool{Name: name, Label: name, coding: spec})
	}
	return tools, nil
}

func (c *codingTool) newC() (C.uintptr_t, error) {
	var ud C.uintptr_t
	if c.consent != nil {
		consent := c.consent
		ud = pin(&hookEntry{fn: func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
			var request struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			}
			if err := json.Unmarshal(input, &request); err != nil {
				return nil, err
			}
			return nil, consent(ctx, request.Tool, request.Args)
		}})
	}
	rootText := cstr(c.root)
	defer freeStr(rootText)
	var handle C.uintptr_t
	err := withJSON(c.options, func(p *C.char) error {
		var errText *C.char
		return check(C.ga_coding_tool_new(rootText, p, ud, &handle, &errText), errText)
	})
	if err != nil {
		if ud != 0 {
			unpin(ud)
		}
		return 0, err
	}
	return handle, nil
}

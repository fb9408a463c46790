package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"sync"
	"time"
)

// MCPState is the state of one MCP server.
type MCPState string

// The states of an MCP server.
const (
	MCPConnecting MCPState = "connecting"
	MCPReady      MCPState = "ready"
	MCPFailed     MCPState = "failed"   // LastError says why
	MCPDisabled   MCPState = "disabled" // "enabled": false in the configuration
	MCPClosed     MCPState = "closed"
)

// MCPServer is one configured server as MCP.Servers reports it.
type MCPServer struct {
	Name      string   `json:"name"`
	State     MCPState `json:"state"`
	ToolCount int      `json:"toolCount"`
	// LastError says why the server failed ("" when it did not); it ends with what the server
	// wrote to stderr last.
	LastError string `json:"lastError"`
	// Skipped names the tools left out, e.g. for an input schema that is not a JSON Schema.
	Skipped []string `json:"skipped"`
}

// MCP is the set of MCP servers of one configuration, connected in the background. Put it in
// Options.MCP (the agent takes the servers' current tools at each turn, so a server's changed
// tool list takes effect between turns, and a prompt first waits up to 10 s for servers still
// connecting), or take the tools once with Tools. Close ends the servers; a runtime cleanup
// ends a set that became unreachable without Close. Its methods may be called from any
// goroutine.
type MCP struct {
	h         C.AgentMcp
	closeOnce sync.Once
	closeErr  error
	cleanup   runtime.Cleanup
}

// ConnectMCP starts the servers of config, the standard MCP client configuration
// {"mcpServers": {"<name>": {...}}} (a JSON string, []byte, json.RawMessage, or a value that
// marshals to it): for a stdio server "command", "args", "env", "cwd"; for a streamable-HTTP
// server "url", "headers"; for both "type" ("stdio", "http" or "streamable-http"), "timeout"
// (seconds, default 60) and "enabled". ${VAR} in env and headers values is replaced from the
// environment. It returns at once: the servers connect in the background. A wrong entry (the
// legacy SSE transport, a missing command, an unset variable) is a failed server of its own,
// reported by Servers; the others still connect. A config that is not JSON or has no
// "mcpServers" object is ErrInvalidJSON.
func ConnectMCP(config any) (*MCP, error) {
	if err := versionChecked(); err != nil {
		return nil, err
	}
	if text, ok := config.(string); ok {
		config = json.RawMessage(text)
	}
	var h C.AgentMcp
	if err := withJSON(config, func(p *C.char, n C.size_t) error {
		return check(C.agent_mcp_connect(p, n, &h))
	}); err != nil {
		return nil, err
	}
	m := &MCP{h: h}
	m.cleanup = runtime.AddCleanup(m, func(h C.AgentMcp) { C.agent_error_free(C.agent_mcp_free(h)) }, h)
	return m, nil
}

// LoadMCP starts the servers of the configuration file at path (see ConnectMCP).
func LoadMCP(path string) (*MCP, error) {
	config, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ConnectMCP(json.RawMessage(config))
}

func (m *MCP) call(e *C.AgentError) error {
	err := check(e)
	runtime.KeepAlive(m)
	return err
}

// waitSlice bounds each blocking wait, so a cancelled ctx is noticed soon.
const waitSlice = 100 * time.Millisecond

// Wait waits until no server is still connecting (nil), or ctx ends first (ctx.Err()). Not
// inside a libagent callback (ErrWouldDeadlock).
func (m *MCP) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		slice := waitSlice
		if deadline, ok := ctx.Deadline(); ok {
			slice = min(slice, max(time.Until(deadline), 0))
		}
		var settled C.bool
		if err := m.call(C.agent_mcp_wait(m.h, C.uint64_t(slice.Milliseconds()), &settled)); err != nil {
			return err
		}
		if settled {
			return nil
		}
	}
}

// Servers reports every configured server, in the configuration's order.
func (m *MCP) Servers() ([]MCPServer, error) {
	var p *C.char
	var n C.size_t
	if err := m.call(C.agent_mcp_servers_json(m.h, &p, &n)); err != nil {
		return nil, err
	}
	var servers []MCPServer
	if err := json.Unmarshal([]byte(takeString(p, n)), &servers); err != nil {
		return nil, &Error{Status: ErrInvalidJSON, Message: err.Error()}
	}
	return servers, nil
}

// mcpTool is a tool an MCP set gave: the Tool owns one reference to it.
type mcpTool struct {
	h       C.AgentTool
	cleanup runtime.Cleanup
}

// Tools returns the tools the ready servers offer now, named mcp__<server>__<tool> as
// pi-coding-agent names them, with their labels (<server>/<tool>), descriptions and input
// schemas. They are ordinary tools: pass them in Options.Tools, alone or with your own. A tool
// outlives its set: once the set is closed its calls fail with a sentence saying so.
func (m *MCP) Tools() ([]*Tool, error) {
	for {
		definitions, err := m.toolDefinitions()
		if err != nil {
			return nil, err
		}
		handles := make([]C.AgentTool, max(len(definitions), 1))
		var count C.size_t
		err = m.call(C.agent_mcp_tools(m.h, &handles[0], C.size_t(len(definitions)), &count))
		if e, ok := err.(*Error); ok && e.Status == ErrInvalidArgument {
			continue // a server announced more tools between the two calls
		} else if err != nil {
			return nil, err
		}
		tools := make([]*Tool, count)
		for i := range tools {
			owned := &mcpTool{h: handles[i]}
			owned.cleanup = runtime.AddCleanup(owned, func(h C.AgentTool) { C.agent_error_free(C.agent_tool_free(h)) }, handles[i])
			tools[i] = &Tool{mcp: owned}
			if i < len(definitions) {
				d := definitions[i]
				tools[i].Name, tools[i].Label, tools[i].Description, tools[i].Parameters = d.Name, d.Label, d.Description, d.Parameters
			}
		}
		// The same list before and after taking the handles: they match the definitions.
		again, err := m.toolDefinitions()
		if err != nil {
			return nil, err
		}
		if int(count) == len(definitions) && sameDefinitions(definitions, again) {
			return tools, nil
		}
	}
}

type mcpToolDefinition struct {
	Name        string          `json:"name"`
	Label       string          `json:"label"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

func (m *MCP) toolDefinitions() ([]mcpToolDefinition, error) {
	var p *C.char
	var n C.size_t
	if err := m.call(C.agent_mcp_tools_json(m.h, &p, &n)); err != nil {
		return nil, err
	}
	var definitions []mcpToolDefinition
	if err := json.Unmarshal([]byte(takeString(p, n)), &definitions); err != nil {
		return nil, &Error{Status: ErrInvalidJSON, Message: err.Error()}
	}
	return definitions, nil
}

func sameDefinitions(a, b []mcpToolDefinition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || string(a[i].Parameters) != string(b[i].Parameters) {
			return false
		}
	}
	return true
}

// Close ends the servers and releases the set (idempotent): a stdio server's stdin is closed,
// then its process group gets SIGTERM, then SIGKILL, so nothing of it is left. Not inside a
// libagent callback (ErrWouldDeadlock).
func (m *MCP) Close() error {
	m.closeOnce.Do(func() {
		m.cleanup.Stop()
		if m.closeErr = check(C.agent_mcp_close(m.h)); m.closeErr == nil {
			m.closeErr = check(C.agent_mcp_free(m.h))
		} else {
			C.agent_error_free(C.agent_mcp_free(m.h))
		}
	})
	return m.closeErr
}

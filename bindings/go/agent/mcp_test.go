package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/libagent/libagent/bindings/go/agent"
)

var repoRoot, _ = filepath.Abs("../../..")

var mcpSetup = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("bash", filepath.Join(repoRoot, "tests/mcp/setup.sh")).CombinedOutput()
})

// mcpInstalled installs the real MCP servers when missing (tests/mcp/setup.sh). make go-test
// runs it first and sets LIBAGENT_REQUIRE_MCP, so there a failed install fails the test.
func mcpInstalled(t *testing.T) {
	t.Helper()
	if out, err := mcpSetup(); err != nil {
		if os.Getenv("LIBAGENT_REQUIRE_MCP") != "" {
			t.Fatalf("tests/mcp/setup.sh: %v\n%s", err, out)
		}
		t.Skipf("the MCP test servers could not be installed: %v\n%s", err, out)
	}
}

type toolResult struct {
	IsError bool
	Text    string
}

// toolResults maps each tool call's id to its result in the agent's transcript.
func toolResults(t *testing.T, a *agent.Agent) map[string]toolResult {
	t.Helper()
	s, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]toolResult{}
	for _, raw := range s.Messages {
		var m struct {
			message
			ToolCallID string `json:"toolCallId"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Role == "toolResult" {
			out[m.ToolCallID] = toolResult{m.IsError, m.text()}
		}
	}
	return out
}

// hostileServer is tests/mcp/hostile/server.py in mode; timeout (seconds) is short where a test
// waits for it, generous where a busy machine's slow start must not pass for the failure tested.
func hostileServer(mode, pidFile string, timeout int) map[string]any {
	return map[string]any{"command": "python3", "args": []string{filepath.Join(repoRoot, "tests/mcp/hostile/server.py"), mode},
		"timeout": timeout, "env": map[string]string{"MCP_PID_FILE": pidFile}}
}

func TestMCPConfigErrorsAndFailedEntries(t *testing.T) {
	var e *agent.Error
	if _, err := agent.ConnectMCP("{"); !errors.As(err, &e) || e.Status != agent.ErrInvalidJSON {
		t.Fatalf("not JSON: %v", err)
	}
	if _, err := agent.ConnectMCP(map[string]any{"servers": map[string]any{}}); err == nil || !strings.Contains(err.Error(), `"mcpServers" object`) {
		t.Fatalf("no mcpServers: %v", err)
	}
	m, err := agent.ConnectMCP(`{"mcpServers":{"old":{"type":"sse","url":"http://127.0.0.1:9/sse"},"off":{"command":"false","enabled":false}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	servers, err := m.Servers()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].State != agent.MCPFailed || !strings.Contains(servers[0].LastError, "legacy SSE transport is not supported") ||
		servers[1].State != agent.MCPDisabled || servers[1].LastError != "" {
		t.Fatalf("servers: %+v", servers)
	}
	if tools, err := m.Tools(); err != nil || len(tools) != 0 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := m.Servers(); !errors.As(err, &e) || e.Status != agent.ErrInvalidHandle {
		t.Fatalf("after Close: %v", err)
	}
}

func TestMCPRealServerToolsInAnAgent(t *testing.T) {
	mcpInstalled(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the filesystem server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(repoRoot, "build/mcp-servers/node_modules/@modelcontextprotocol")
	m, err := agent.ConnectMCP(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{modules + "/server-everything/dist/index.js", "stdio"}},
		"filesystem": map[string]any{"command": "node", "args": []string{modules + "/server-filesystem/dist/index.js", root}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	servers, _ := m.Servers()
	if len(servers) != 2 || servers[0].State != agent.MCPReady || servers[1].State != agent.MCPReady {
		t.Fatalf("servers: %+v", servers)
	}
	tools, err := m.Tools()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*agent.Tool{}
	for _, tool := range tools {
		names[tool.Name] = tool
	}
	if len(tools) != servers[0].ToolCount+servers[1].ToolCount || names["mcp__everything__echo"] == nil ||
		names["mcp__everything__echo"].Label != "everything/echo" || !strings.Contains(string(names["mcp__everything__echo"].Parameters.(json.RawMessage)), `"message"`) {
		t.Fatalf("tools: %d, echo: %+v", len(tools), names["mcp__everything__echo"])
	}

	// The tools once, given to an agent with a Go tool.
	shout := agent.NewTypedTool("shout", "Upper-cases a text.", func(ctx context.Context, args struct {
		Text string `json:"text"`
	}) (agent.Result, error) {
		return agent.TextResult(strings.ToUpper(args.Text)), nil
	})
	a := mustNew(t, agent.Options{Tools: append(tools, shout), ScriptedModel: script(
		toolCalls(call{"c1", "mcp__everything__echo", map[string]any{"message": "hi there"}},
			call{"c2", "mcp__everything__get_sum", map[string]any{"a": 2, "b": 40}},
			call{"c3", "mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")}},
			call{"c4", "shout", map[string]any{"text": "ok"}}),
		text("done", 1))})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	got := toolResults(t, a)
	if got["c1"] != (toolResult{false, "Echo: hi there"}) || got["c2"].IsError || !strings.Contains(got["c2"].Text, "42") ||
		got["c3"] != (toolResult{false, "hello from the filesystem server\n"}) || got["c4"] != (toolResult{false, "OK"}) {
		t.Fatalf("results: %+v", got)
	}

	// The set attached: the agent takes its current tools at each turn.
	b := mustNew(t, agent.Options{MCP: []*agent.MCP{m}, ScriptedModel: script(
		toolCalls(call{"c5", "mcp__everything__echo", map[string]any{"message": "attached"}}), text("done", 1))})
	if _, err := b.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if got := toolResults(t, b)["c5"]; got != (toolResult{false, "Echo: attached"}) {
		t.Fatalf("attached: %+v", got)
	}
}

func TestMCPHostileServersFailClearlyAndLeaveNoProcess(t *testing.T) {
	mcpInstalled(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	m, err := agent.ConnectMCP(map[string]any{"mcpServers": map[string]any{
		"exits": hostileServer("exit", pidFile, 20), "tools": hostileServer("tools", pidFile, 5),
		"stubborn": hostileServer("stubborn", pidFile, 20),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// A bound shorter than the servers need: ctx's error, and the servers go on connecting.
	short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := m.Wait(short); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("short wait: %v", err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	servers, _ := m.Servers()
	byName := map[string]agent.MCPServer{}
	for _, s := range servers {
		byName[s.Name] = s
	}
	if s := byName["exits"]; s.State != agent.MCPFailed || !strings.Contains(s.LastError, "hostile: refusing to start (exit mode)") {
		t.Fatalf("exits: %+v", s)
	}
	if s := byName["tools"]; s.State != agent.MCPReady || s.ToolCount != 5 || len(s.Skipped) != 1 || !strings.Contains(s.Skipped[0], "bad_schema") {
		t.Fatalf("tools: %+v", s)
	}
	a := mustNew(t, agent.Options{MCP: []*agent.MCP{m}, ToolExecution: agent.ToolsSequential, ScriptedModel: script(
		toolCalls(call{"h1", "mcp__tools__hang", map[string]any{}}, call{"h2", "mcp__stubborn__echo", map[string]any{"text": "after hang"}}),
		text("done", 1))})
	if _, err := a.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	got := toolResults(t, a)
	if got["h1"] != (toolResult{true, "MCP tool tools/hang did not answer within 5 s (the server's timeout)."}) ||
		got["h2"] != (toolResult{false, "echo: after hang"}) {
		t.Fatalf("results: %+v", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(data))
	if len(pids) < 4 { // three servers and the stubborn one's child
		t.Fatalf("pids: %v", pids)
	}
	// A process SIGKILLed at Close may still be finishing its exit (a grandchild reparented to
	// init): give the kernel a moment, then any process left is one that outlived Close.
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		for syscall.Kill(pid, 0) == nil && !zombie(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			cmdline, _ := os.ReadFile("/proc/" + p + "/cmdline")
			t.Errorf("process %d outlived Close: %q", pid, cmdline)
		}
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // gone
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// The Go twin of examples/c/assistant.c: coding tools under -root, write and edit ask y/n; a LIBAGENT_* or scripted model;
// -session FILE or -continue keep the conversation in a session file (pi's format) and resume it; -mcp FILE adds
// the tools of the MCP servers that file configures ({"mcpServers": {...}}), named mcp__<server>__<tool>.
// A real model's conversation is compacted near its context window ("[compacted: N tokens -> M]"), and a request
// that failed for a passing reason (overloaded, rate limited, 5xx, a dropped connection) is retried 3 times after
// 2 s, 4 s, 8 s ("[retrying in 2s: <error>]"; LIBAGENT_RETRY_BASE_DELAY_MS sets the first wait).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/libagent/libagent/bindings/go/agent"
	"github.com/libagent/libagent/bindings/go/examples/internal/envmodel"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const retryUsage = "LIBAGENT_RETRY_BASE_DELAY_MS: the first wait before retrying a failed request (default 2000 ms; then doubled, 3 retries)"

// contextOptions turn on compaction (for a real model, which has a context window) and retries.
func contextOptions(options *agent.Options) error {
	delay := int64(2000)
	if v := os.Getenv("LIBAGENT_RETRY_BASE_DELAY_MS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("LIBAGENT_RETRY_BASE_DELAY_MS must be a positive integer, not %q", v)
		}
		delay = n
	}
	options.Compaction = &agent.CompactionOptions{Enabled: options.UseProviders}
	options.Retry = &agent.RetryOptions{Enabled: true, BaseDelayMs: delay}
	return nil
}

// showContextEvent prints one line per compaction or retry.
func showContextEvent(out io.Writer, e agent.Event) {
	switch {
	case e.Retry != nil && e.Type == "auto_retry_start":
		fmt.Fprintf(out, "[retrying in %gs: %s]\n", float64(e.Retry.DelayMs)/1000, e.Retry.ErrorMessage)
	case e.Compaction != nil && e.Type == "compaction_end" && e.Compaction.Result != nil:
		fmt.Fprintf(out, "[compacted: %d tokens -> %d]\n", e.Compaction.Result.TokensBefore, e.Compaction.Result.EstimatedTokensAfter)
	case e.Compaction != nil && e.Type == "compaction_end" && e.Compaction.ErrorMessage != "":
		fmt.Fprintf(out, "[compaction failed: %s]\n", e.Compaction.ErrorMessage)
	}
}

type config struct {
	root, script string
	session      string // -session FILE
	resume       bool   // -continue: the newest session of the root under sessionsDir
	sessionsDir  string
	mcp          string // -mcp FILE: an MCP servers configuration
}

// connectMCP starts the servers of the -mcp file (nil without it), waits for them as a prompt would (up to 10 s)
// and says each one's state.
func connectMCP(out io.Writer, path string) (*agent.MCP, error) {
	if path == "" {
		return nil, nil
	}
	m, err := agent.LoadMCP(path)
	if err != nil {
		return nil, fmt.Errorf("-mcp %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = m.Wait(ctx) // servers still connecting are said so; a prompt waits for them
	servers, err := m.Servers()
	if err != nil {
		m.Close()
		return nil, err
	}
	for _, s := range servers {
		fmt.Fprintf(out, "mcp: %s: %s", s.Name, s.State)
		if s.State == agent.MCPReady {
			fmt.Fprintf(out, ", %d tools", s.ToolCount)
		}
		if s.LastError != "" {
			fmt.Fprintf(out, ": %s", s.LastError)
		}
		fmt.Fprintln(out)
	}
	return m, nil
}

// openSession opens the session the flags ask for (nil without -session and -continue) and says what it resumes.
func openSession(out io.Writer, cfg config) (*agent.Session, error) {
	var s *agent.Session
	var err error
	switch {
	case cfg.session != "":
		s, err = agent.OpenSession(cfg.session, agent.SessionOptions{Cwd: cfg.root})
	case cfg.resume:
		var dir string
		if dir, err = agent.SessionDirectory(cfg.sessionsDir, cfg.root); err == nil {
			s, err = agent.ContinueRecentSession(dir, agent.SessionOptions{Cwd: cfg.root})
		}
	}
	if s == nil || err != nil {
		return nil, err
	}
	resumed, err := s.Context()
	file, fileErr := s.File()
	if err = errors.Join(err, fileErr); err != nil {
		s.Close()
		return nil, err
	}
	n := 0
	for _, m := range resumed.Messages { // the conversation's messages (not the system prompt's)
		var message struct{ Role string }
		if json.Unmarshal(m, &message) == nil && message.Role != "system" {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(out, "resumed %d messages from %s\n", n, file.Path)
	} else {
		fmt.Fprintf(out, "new session %s\n", file.Path)
	}
	return s, nil
}

func run(in io.Reader, out io.Writer, cfg config) error {
	lines := bufio.NewScanner(in)               // the requests, and the answers to the questions (asked during a run)
	lines.Buffer(make([]byte, 64*1024), 16<<20) // a pasted request may be longer than Scanner's 64 KiB default
	ask := func(ctx context.Context, tool string, args json.RawMessage) error {
		var a struct{ Path string }
		_ = json.Unmarshal(args, &a)
		if fmt.Fprintf(out, "%s %s? [y/N] ", strings.ToUpper(tool[:1])+tool[1:], a.Path); lines.Scan() && lines.Text() == "y" {
			return nil
		}
		return fmt.Errorf("the user declined: '%s' was not changed", a.Path)
	}
	tools, toolsErr := agent.CodingTools(cfg.root, agent.CodingOptions{Consent: ask})
	options, err := envmodel.OptionsOrScripted(cfg.script) // LIBAGENT_*'s model, else -script's
	if err = errors.Join(toolsErr, err); err != nil {
		return err
	}
	options.Tools, options.ToolExecution = tools, agent.ToolsSequential // one question at a time
	if err := contextOptions(&options); err != nil {
		return err
	}
	if options.Session, err = openSession(out, cfg); err != nil {
		return err
	} else if options.Session != nil {
		defer options.Session.Close() // the agent keeps the file open until it is closed
	}
	mcp, err := connectMCP(out, cfg.mcp)
	if err != nil {
		return err
	} else if mcp != nil {
		options.MCP = []*agent.MCP{mcp}
		defer mcp.Close() // after the agent's Close (deferred later, so run first)
	}
	a, err := agent.New(options)
	if err != nil {
		return err
	}
	defer a.Close()
	a.Subscribe(func(e agent.Event) {
		showContextEvent(out, e)
		var v struct{ Result agent.Result }
		if e.Type == "tool_execution_end" && e.Decode(&v) == nil && len(v.Result.Content) > 0 { // JSON on request
			fmt.Fprintf(out, "[result] %s\n", strings.SplitN(v.Result.Content[0].Text, "\n", 2)[0])
		}
		fmt.Fprint(out, map[string]string{"text_delta": e.Delta, "text_end": "\n"}[e.UpdateType]) // the answer
	})
	for err == nil && lines.Scan() {
		_, err = a.Prompt(context.Background(), lines.Text()) // a failed request ends the session
	}
	if err == nil {
		err = lines.Err() // e.g. a line over 16 MiB: said, not taken for the end of the input
	}
	return err
}

func main() {
	var cfg config
	flag.StringVar(&cfg.root, "root", ".", "the root directory")
	flag.StringVar(&cfg.script, "script", "", "the scripted responses (JSON)")
	flag.StringVar(&cfg.session, "session", "", "keep the conversation in this session file and resume it")
	flag.StringVar(&cfg.mcp, "mcp", "", "add the tools of the MCP servers this file configures")
	flag.BoolVar(&cfg.resume, "continue", false, "resume the newest session of the root (a new one when there is none)")
	home, _ := os.UserHomeDir()
	sessions := os.Getenv("LIBAGENT_SESSIONS_DIR")
	if sessions == "" {
		sessions = filepath.Join(home, ".libagent", "sessions")
	}
	flag.StringVar(&cfg.sessionsDir, "sessions-dir", sessions, "where -continue keeps sessions (one directory per root)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: assistant [flags], then a request per line\n")
		flag.PrintDefaults()
		fmt.Fprintln(flag.CommandLine.Output(), retryUsage)
	}
	flag.Parse()
	if cfg.session != "" && cfg.resume {
		log.Fatal("-session and -continue exclude each other")
	}
	if root, err := filepath.Abs(cfg.root); err == nil {
		cfg.root = root
	}
	if err := run(os.Stdin, os.Stdout, cfg); err != nil {
		log.Fatal(err)
	}
}

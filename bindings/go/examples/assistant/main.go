// The Go twin of examples/c/assistant.c: libagent's coding tools under -root; write and edit ask y/n.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	agent "github.com/libagent/libagent/bindings/go"
	"io"
	"log"
	"os"
	"strings"
)

func run(in io.Reader, out io.Writer, root string, script []byte) error {
	lines := bufio.NewScanner(in) // the requests, and the answers to the questions (asked during a run)
	ask := func(ctx context.Context, tool string, args json.RawMessage) error {
		var a struct{ Path string }
		_ = json.Unmarshal(args, &a)
		if fmt.Fprintf(out, "%s %s? [y/N] ", strings.ToUpper(tool[:1])+tool[1:], a.Path); lines.Scan() && lines.Text() == "y" {
			return nil
		}
		return fmt.Errorf("the user declined: '%s' was not changed", a.Path)
	}
	tools, err := agent.CodingTools(root, agent.CodingOptions{Tools: []string{"read", "ls", "find", "grep", "write", "edit"}, Consent: ask})
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Options{Tools: tools, ScriptedModel: json.RawMessage(script), ToolExecution: agent.ToolsSequential})
	if err != nil {
		return err
	}
	defer a.Close()
	a.Subscribe(func(e agent.Event) {
		var v struct{ Result agent.Result }
		if _ = e.Decode(&v); e.Type == "tool_execution_end" && len(v.Result.Content) > 0 {
			fmt.Fprintf(out, "[result] %s\n", strings.SplitN(v.Result.Content[0].Text, "\n", 2)[0])
		}
		fmt.Fprint(out, map[string]string{"text_delta": e.Delta, "text_end": "\n"}[e.UpdateType]) // the answer
	})
	for lines.Scan() {
		if err := a.Prompt(context.Background(), lines.Text()); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	root, scriptPath := flag.String("root", ".", "the root directory"), flag.String("script", "", "the model's responses (JSON)")
	flag.Parse()
	if script, err := os.ReadFile(*scriptPath); err != nil {
		log.Fatal(err)
	} else if err := run(os.Stdin, os.Stdout, *root, script); err != nil {
		log.Fatal(err)
	}
}

// The Go twin of examples/c/assistant.c: coding tools under -root, write and edit ask y/n; a LIBAGENT_* or scripted model.
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
	"strings"
)

func run(in io.Reader, out io.Writer, root, scriptPath string) error {
	lines := bufio.NewScanner(in) // the requests, and the answers to the questions (asked during a run)
	ask := func(ctx context.Context, tool string, args json.RawMessage) error {
		var a struct{ Path string }
		_ = json.Unmarshal(args, &a)
		if fmt.Fprintf(out, "%s %s? [y/N] ", strings.ToUpper(tool[:1])+tool[1:], a.Path); lines.Scan() && lines.Text() == "y" {
			return nil
		}
		return fmt.Errorf("the user declined: '%s' was not changed", a.Path)
	}
	tools, toolsErr := agent.CodingTools(root, agent.CodingOptions{Consent: ask})
	options, err := envmodel.OptionsOrScripted(scriptPath) // LIBAGENT_*'s model, else -script's
	if err = errors.Join(toolsErr, err); err != nil {
		return err
	}
	options.Tools, options.ToolExecution = tools, agent.ToolsSequential // one question at a time
	a, err := agent.New(options)
	if err != nil {
		return err
	}
	defer a.Close()
	a.Subscribe(func(e agent.Event) {
		var v struct{ Result agent.Result }
		if e.Type == "tool_execution_end" && e.Decode(&v) == nil && len(v.Result.Content) > 0 { // JSON on request
			fmt.Fprintf(out, "[result] %s\n", strings.SplitN(v.Result.Content[0].Text, "\n", 2)[0])
		}
		fmt.Fprint(out, map[string]string{"text_delta": e.Delta, "text_end": "\n"}[e.UpdateType]) // the answer
	})
	for err == nil && lines.Scan() {
		_, err = a.Prompt(context.Background(), lines.Text()) // a failed request ends the session
	}
	return err
}

func main() {
	root, script := flag.String("root", ".", "the root directory"), flag.String("script", "", "the scripted responses (JSON)")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *root, *script); err != nil {
		log.Fatal(err)
	}
}

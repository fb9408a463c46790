// A Go snippet of statements: the body of main, with a context and a scripted model's script
// (one call of a "weather" tool, then an answer).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/libagent/libagent/bindings/go/agent"
)

var _, _, _, _, _ = errors.Is, fmt.Print, log.Fatal, runtime.LockOSThread, time.Millisecond

func main() {
	ctx := context.Background()
	script := []map[string]any{
		{"content": []map[string]any{{"type": "toolCall", "id": "c1", "name": "weather", "arguments": map[string]any{"city": "Paris"}}}},
		{"content": []map[string]any{{"type": "text", "text": "Sunny in Paris."}}},
	}
	_, _ = ctx, script
	// SNIPPET
}

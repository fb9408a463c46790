package agent

// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"

	"github.com/invopop/jsonschema"
)

// Content is a content block of a tool result: text or image.
type Content struct {
	Type     string // "text" or "image"
	Text     string
	Data     string // image: base64 bytes
	MimeType string // image
}

// MarshalJSON renders the block of SPEC 2.1.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case "image":
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}{"image", c.Data, c.MimeType})
	case "text", "":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", c.Text})
	}
	return nil, fmt.Errorf("agent: unknown content type %q", c.Type)
}

// UnmarshalJSON reads a text or image block.
func (c *Content) UnmarshalJSON(b []byte) error {
	var v struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Content(v)
	return nil
}

// Result is what a tool returns (AgentToolResult, SPEC 2.7); also a progress update.
type Result struct {
	Content           []Content `json:"content"`
	Details           any       `json:"details,omitempty"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
	Terminate         bool      `json:"terminate,omitempty"`
}

// TextResult is a result with one text block.
func TextResult(text string) Result {
	return Result{Content: []Content{{Type: "text", Text: text}}, Details: map[string]any{}}
}

func (r Result) json() (json.RawMessage, error) {
	if r.Content == nil {
		r.Content = []Content{}
	}
	return json.Marshal(r)
}

// ToolCall is one execution of a tool.
type ToolCall struct {
	ID   string          // the tool call id
	Args json.RawMessage // the validated, coerced arguments
	h    C.AgentToolCall
}

// fail answers the call with a failure (nothing happens once it was answered).
func (c *ToolCall) fail(message string) {
	p, n := ctext(message)
	C.agent_error_free(C.agent_tool_call_fail(c.h, p, n))
}

// Update reports progress (onUpdate, SPEC 6.8). It fails with ErrAlreadyCompleted once the
// tool answered.
func (c *ToolCall) Update(partial Result) error {
	text, err := partial.json()
	if err != nil {
		return err
	}
	p, n := ctext(string(text))
	return check(C.agent_tool_call_update(c.h, p, n))
}

type toolCallKey struct{}

// CurrentToolCall returns the tool call a tool's context belongs to (nil elsewhere).
func CurrentToolCall(ctx context.Context) *ToolCall {
	c, _ := ctx.Value(toolCallKey{}).(*ToolCall)
	return c
}

// Progress reports progress from inside a tool (see ToolCall.Update).
func Progress(ctx context.Context, partial Result) error {
	c := CurrentToolCall(ctx)
	if c == nil {
		return &Error{Status: ErrInvalidArgument, Message: "Progress called outside a tool execution."}
	}
	return c.Update(partial)
}

// Tool is an executable tool. One Tool may serve several agents at once.
type Tool struct {
	Name          string
	Label         string // for UIs; defaults to Name
	Description   string
	Parameters    any    // the JSON Schema of the arguments (json.RawMessage, map, *jsonschema.Schema)
	ExecutionMode string // "sequential" forces its batch to run sequentially

	// Execute runs the tool on a goroutine of its own. ctx is cancelled when the run aborts
	// (context.Cause(ctx) == ErrAborted) and when Execute returns. A returned error becomes an
	// error tool result with its text; so does a panic.
	Execute func(ctx context.Context, call *ToolCall) (Result, error)

	// PrepareArguments (optional) rewrites the raw arguments before validation (SPEC 5.2). It
	// runs on the runtime thread and must be quick; nil output keeps the arguments.
	PrepareArguments func(args json.RawMessage) (json.RawMessage, error)

	coding *codingTool // a tool of the built-in coding pack (see CodingTools)
	mcp    *mcpTool    // a tool of an MCP server (see MCP.Tools)
}

// NewTool builds a tool taking raw JSON arguments.
func NewTool(name, description string, parameters any,
	fn func(ctx context.Context, call *ToolCall) (Result, error)) *Tool {
	return &Tool{Name: name, Description: description, Parameters: parameters, Execute: fn}
}

// NewTypedTool builds a tool whose arguments are decoded into a T, with the JSON Schema of the
// parameters derived from T (github.com/invopop/jsonschema: `json` tags name the properties,
// fields without `omitempty` are required, `jsonschema:"description=..."` tags document them).
func NewTypedTool[T any](name, description string, fn func(ctx context.Context, args T) (Result, error)) *Tool {
	return &Tool{
		Name:        name,
		Description: description,
		Parameters:  SchemaFor[T](),
		Execute: func(ctx context.Context, call *ToolCall) (Result, error) {
			var args T
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return Result{}, fmt.Errorf("decoding the arguments of %s: %w", name, err)
			}
			return fn(ctx, args)
		},
	}
}

// SchemaFor derives the JSON Schema of T as NewTypedTool does (inline, without $schema/$id).
func SchemaFor[T any]() json.RawMessage {
	r := &jsonschema.Reflector{DoNotReference: true, Anonymous: true}
	schema := r.ReflectFromType(reflect.TypeFor[T]())
	schema.Version = "" // the "$schema" key means nothing to the model or the validator
	b, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("agent: the schema of %v does not render: %v", reflect.TypeFor[T](), err))
	}
	return b
}

type toolEntry struct {
	tool   *Tool
	inline bool // the agent is host-pumped: Execute runs inside Dispatch
}

// releaseC drops the reference newC made, once handed on (an MCP tool keeps its own).
func (t *Tool) releaseC(h C.AgentTool) {
	if t.mcp == nil {
		C.agent_error_free(C.agent_tool_free(h))
	}
	runtime.KeepAlive(t)
}

// newC creates the library's tool object (its finalizer releases the pinned *Tool), or gives
// an MCP tool's own; release it with releaseC.
func (t *Tool) newC(inline bool) (C.AgentTool, error) {
	if t.mcp != nil {
		return t.mcp.h, nil
	}
	if t.coding != nil {
		return t.coding.newC(inline)
	}
	if t.Execute == nil {
		return C.AgentTool{}, &Error{Status: ErrNull, Message: fmt.Sprintf("tool %q has no Execute function.", t.Name)}
	}
	label := t.Label
	if label == "" {
		label = t.Name
	}
	def := map[string]any{"name": t.Name, "label": label}
	if t.Description != "" {
		def["description"] = t.Description
	}
	if t.Parameters != nil {
		def["parameters"] = rawOrValue(t.Parameters)
	} else {
		def["parameters"] = map[string]any{"type": "object"}
	}
	if t.ExecutionMode != "" {
		def["executionMode"] = t.ExecutionMode
	}
	var handle C.AgentTool
	err := withJSON(def, func(p *C.char, n C.size_t) error {
		ud := pin(&toolEntry{tool: t, inline: inline})
		err := check(C.ga_tool_new(p, n, ud, &handle))
		if err != nil {
			unpin(ud)
		}
		return err
	})
	if err != nil {
		return C.AgentTool{}, err
	}
	if t.PrepareArguments != nil {
		ud := pin(&toolEntry{tool: t, inline: inline})
		if err := check(C.ga_tool_set_prepare_arguments(handle, ud)); err != nil {
			unpin(ud)
			C.agent_tool_free(handle)
			return C.AgentTool{}, err
		}
	}
	return handle, nil
}

func (t *Tool) run(ctx context.Context, cancel context.CancelCauseFunc, tc *ToolCall) {
	defer cancel(nil)
	defer func() {
		if r := recover(); r != nil {
			tc.fail(panicMessage(r))
		}
	}()
	result, err := t.Execute(context.WithValue(ctx, toolCallKey{}, tc), tc)
	if err != nil {
		tc.fail(err.Error())
		return
	}
	text, err := result.json()
	if err != nil {
		tc.fail("rendering the result: " + err.Error())
		return
	}
	p, n := ctext(string(text))
	if err := check(C.agent_tool_call_complete(tc.h, p, n)); err != nil {
		tc.fail("result rejected: " + err.Error())
	}
}

// --- per-call contexts -----------------------------------------------------------------------

type abortEntry struct{ cancel context.CancelCauseFunc }

// callContext is cancelled with ErrAborted when the call's run aborts (register is the call's
// agent_*_on_abort).
func callContext(register func(ud C.uintptr_t) *C.AgentError) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ud := pin(&abortEntry{cancel: cancel})
	if check(register(ud)) != nil {
		unpin(ud) // the call is already answered or gone: no registration
	}
	return ctx, cancel
}

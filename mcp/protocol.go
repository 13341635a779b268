package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// lazy serves MCP itself, over stdio, rather than through the official Go
// SDK: the SDK and jsonschema-go, which it links, cost about 1 ms of start-up
// in every lazy process (their package inits: gob, schema reflection), and
// only lazy mcp and lazy mcp-proxy serve MCP. What a stdio server of tools
// and one resource template needs is small: JSON-RPC 2.0 lines, the
// initialize handshake, tools/list and tools/call with input validation,
// progress and cancellation. The official Go and TypeScript SDK clients,
// Claude Code and Codex are its tests' clients.

// protocolVersions are the MCP revisions lazy speaks, newest first. A
// client asking for another one is answered with the newest, as the
// specification's version negotiation says.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// JSON-RPC error codes.
const (
	codeParseError       = -32700
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternalError    = -32603
	codeResourceNotFound = -32002 // MCP's
	codeServerBusy       = -32000 // JSON-RPC's range for a server's own errors
)

// maxMessage bounds one incoming message: a tool's arguments are a few
// kilobytes; 32 MiB is what the daemon accepts for a call.
const maxMessage = 32 << 20

// Server is lazy's MCP server: its tools, forwarded to a Backend, and the
// task resource template.
type Server struct {
	info         implementation
	instructions string
	tools        []*serverTool
	byName       map[string]*serverTool
	backend      Backend
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// serverTool is a tool as this server lists and runs it.
type serverTool struct {
	listed   listedTool
	validate *schema // the arguments
	// validateOut checks a result before it leaves: a tool's result that
	// breaks its own schema is lazy's bug, reported, never passed on.
	validateOut *schema
	run         toolHandler
}

// listedTool is a tool in tools/list.
type listedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *annotationsOut `json:"annotations,omitempty"`
}

// annotationsOut are a tool's hints as MCP spells them. All four are
// always sent: MCP's defaults for a missing hint (destructive, open-world)
// are the cautious ones, and lazy states each.
type annotationsOut struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// toolHandler runs a call whose arguments passed validation: the text for
// the client, and the structured result.
type toolHandler func(ctx context.Context, args json.RawMessage, progress notifier) (text string, structured json.RawMessage, err error)

// notifier sends a notification to the client.
type notifier func(method string, params any)

// message is any incoming JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error; it is also the error a method returns to
// choose its code.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// maxCalls bounds the calls in flight on one connection: one more is
// refused with codeServerBusy.
const maxCalls = 64

// callGrace bounds how long Serve, once it ends, waits for its calls to
// return: a cancelled call returns at once, but its answer can block on a
// client that stopped reading.
const callGrace = 5 * time.Second

// conn is one client connection: the writer, shared by every reply and
// notification, and the calls in flight, which the client may cancel.
type conn struct {
	s  *Server
	mu sync.Mutex
	w  *bufio.Writer

	flightMu    sync.Mutex
	inFlight    map[string]*call
	initialized bool
	slots       chan struct{}
}

// call is a request in flight.
type call struct {
	cancel context.CancelFunc
	// byClient: the client cancelled it, so its answer is not sent (MCP:
	// the receiver of a cancellation should not respond).
	byClient atomic.Bool
}

// Serve runs the server on one connection: newline-delimited JSON-RPC
// messages from r, answers to w, until r ends or ctx is done (a client
// hanging up and a signal are how a stdio server stops: both return nil;
// a read error is returned). Calls run concurrently (lazy_wait blocks for
// minutes while the client pings), up to maxCalls; at the end, the calls
// still running are cancelled and waited for, callGrace at most.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	c := &conn{s: s, w: bufio.NewWriter(w), inFlight: map[string]*call{}, slots: make(chan struct{}, maxCalls)}
	var calls sync.WaitGroup
	defer func() {
		cancel()
		done := make(chan struct{})
		go func() {
			calls.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(callGrace):
		}
	}()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read an MCP message: %w", err)
		case line := <-lines:
			c.handle(ctx, line, &calls)
		}
	}
}

// readLine reads one line of at most maxMessage bytes; a longer one is
// read to its end and returned cut, so that it fails to parse.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) <= maxMessage {
			line = append(line, part...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// validID reports whether a request id is one JSON-RPC and MCP allow: a
// string or a number (MCP forbids null).
func validID(id json.RawMessage) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// handle answers one message. Requests other than initialize and ping run
// in their own goroutine.
func (c *conn) handle(ctx context.Context, line []byte, calls *sync.WaitGroup) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		c.refuse(line, err)
		return
	}
	if m.Method == "" {
		if m.ID != nil && (m.Result != nil || m.Error != nil) {
			return // a response: lazy sends no requests, so none is awaited
		}
		c.reply(idOrNull(m.ID), nil, &rpcError{Code: codeInvalidRequest, Message: "invalid request: no method"})
		return
	}
	if m.ID == nil {
		c.notified(m)
		return
	}
	if !validID(m.ID) {
		c.reply(nil, nil, &rpcError{Code: codeInvalidRequest, Message: "invalid request: an id is a string or a number"})
		return
	}
	switch m.Method {
	case "initialize":
		res, err := c.initialize(m.Params)
		c.reply(m.ID, res, err)
		return
	case "ping":
		c.reply(m.ID, struct{}{}, nil)
		return
	}
	key := string(m.ID)
	c.flightMu.Lock()
	_, dup := c.inFlight[key]
	c.flightMu.Unlock()
	if dup {
		c.reply(m.ID, nil, &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("invalid request: id %s is already used by a call in flight", m.ID)})
		return
	}
	select {
	case c.slots <- struct{}{}:
	default:
		// Refused rather than waited for: a read loop that waited could
		// not read the cancellation that would free a slot.
		c.reply(m.ID, nil, &rpcError{Code: codeServerBusy, Message: fmt.Sprintf("%d calls are in flight on this connection, the most lazy runs at once: wait for one, or cancel one", maxCalls)})
		return
	}
	callCtx, cancel := context.WithCancel(ctx)
	f := &call{cancel: cancel}
	c.flightMu.Lock()
	c.inFlight[key] = f
	c.flightMu.Unlock()
	calls.Add(1)
	go func() {
		defer calls.Done()
		defer func() {
			c.flightMu.Lock()
			delete(c.inFlight, key)
			c.flightMu.Unlock()
			cancel()
			<-c.slots
		}()
		res, err := c.call(callCtx, m)
		if !f.byClient.Load() {
			c.reply(m.ID, res, err)
		}
	}()
}

// refuse answers a line that is not a JSON-RPC message: a parse error
// when it is not JSON, else an invalid request, with its id when that can
// be read, so the client learns which of its requests failed.
func (c *conn) refuse(line []byte, err error) {
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		c.reply(nil, nil, &rpcError{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported: send one message per line"})
	case !json.Valid(trimmed):
		c.reply(nil, nil, &rpcError{Code: codeParseError, Message: "parse error: " + err.Error()})
	default:
		var loose map[string]json.RawMessage
		var id json.RawMessage
		if json.Unmarshal(trimmed, &loose) == nil && validID(loose["id"]) {
			id = loose["id"]
		}
		c.reply(id, nil, &rpcError{Code: codeInvalidRequest, Message: "invalid request: " + err.Error()})
	}
}

// idOrNull is id when it is a valid one, else nil (null on the wire).
func idOrNull(id json.RawMessage) json.RawMessage {
	if validID(id) {
		return id
	}
	return nil
}

// notified handles a notification: only a cancellation does anything.
func (c *conn) notified(m message) {
	if m.Method != "notifications/cancelled" {
		return // initialized, roots changed, progress of ours...
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.RequestID == nil {
		return
	}
	c.flightMu.Lock()
	f := c.inFlight[string(p.RequestID)]
	c.flightMu.Unlock()
	if f != nil {
		f.byClient.Store(true)
		f.cancel()
	}
}

func (c *conn) initialize(params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "invalid initialize params: " + err.Error()}
	}
	c.flightMu.Lock()
	again := c.initialized
	c.initialized = true
	c.flightMu.Unlock()
	if again {
		return nil, &rpcError{Code: codeInvalidRequest, Message: "initialize was already received on this connection"}
	}
	version := protocolVersions[0]
	if slices.Contains(protocolVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{
			"tools":     map[string]any{},
			"resources": map[string]any{},
			"logging":   map[string]any{},
		},
		"serverInfo":   c.s.info,
		"instructions": c.s.instructions,
	}, nil
}

// call runs a request other than initialize and ping.
func (c *conn) call(ctx context.Context, m message) (any, error) {
	switch m.Method {
	case "tools/list":
		if err := noCursor(m.Params); err != nil {
			return nil, err
		}
		list := make([]listedTool, len(c.s.tools))
		for i, t := range c.s.tools {
			list[i] = t.listed
		}
		return map[string]any{"tools": list}, nil
	case "tools/call":
		return c.callTool(ctx, m.Params)
	case "resources/list":
		if err := noCursor(m.Params); err != nil {
			return nil, err
		}
		return map[string]any{"resources": []any{}}, nil
	case "resources/templates/list":
		if err := noCursor(m.Params); err != nil {
			return nil, err
		}
		return map[string]any{"resourceTemplates": []any{taskTemplate}}, nil
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.URI == "" {
			return nil, &rpcError{Code: codeInvalidParams, Message: "resources/read needs a uri"}
		}
		return readTask(ctx, c.s.backend, p.URI)
	case "prompts/list":
		return map[string]any{"prompts": []any{}}, nil
	case "logging/setLevel":
		return struct{}{}, nil // lazy logs nothing to the client
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("method not found: %q", m.Method)}
}

// noCursor refuses a list cursor: lazy lists everything in one page and
// hands out no cursor, so any cursor is not one of its own.
func noCursor(params json.RawMessage) error {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) == nil && p.Cursor != "" {
		return &rpcError{Code: codeInvalidParams, Message: "invalid cursor: lazy lists everything in one page"}
	}
	return nil
}

// callTool validates a tools/call and runs it. A tool's failure is a
// result with isError, as MCP wants, so the model reads it; a call of a
// tool that does not exist is a protocol error.
func (c *conn) callTool(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "invalid tools/call params: " + err.Error()}
	}
	t := c.s.byName[p.Name]
	if t == nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
	}
	args := p.Arguments
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	v, err := decodeJSON(args)
	if err == nil {
		err = t.validate.validate(v, "")
	}
	if err != nil {
		return toolError(fmt.Errorf("invalid arguments: %w", err)), nil
	}
	var progress notifier
	if p.Meta.ProgressToken != nil && !bytes.Equal(p.Meta.ProgressToken, []byte("null")) {
		progress = func(method string, params any) { c.notify(method, params) }
	}
	ctx = withProgressToken(ctx, p.Meta.ProgressToken)
	text, structured, err := t.run(ctx, args, progress)
	if err != nil {
		return toolError(err), nil
	}
	res := map[string]any{"content": []any{textContent(text)}}
	if structured != nil {
		v, err := decodeJSON(structured)
		if err == nil {
			err = t.validateOut.validate(v, "")
		}
		if err != nil {
			return nil, &rpcError{Code: codeInternalError, Message: fmt.Sprintf("%s returned a result that breaks its output schema: %v", t.listed.Name, err)}
		}
		res["structuredContent"] = structured
	}
	return res, nil
}

func textContent(text string) map[string]any {
	return map[string]any{"type": "text", "text": text}
}

func toolError(err error) map[string]any {
	return map[string]any{"content": []any{textContent(err.Error())}, "isError": true}
}

type progressTokenKey struct{}

func withProgressToken(ctx context.Context, token json.RawMessage) context.Context {
	return context.WithValue(ctx, progressTokenKey{}, token)
}

func progressToken(ctx context.Context) json.RawMessage {
	t, _ := ctx.Value(progressTokenKey{}).(json.RawMessage)
	return t
}

func (c *conn) reply(id json.RawMessage, result any, err error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	r := response{JSONRPC: "2.0", ID: id}
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			re = &rpcError{Code: codeInternalError, Message: err.Error()}
		}
		r.Error = re
	} else {
		if result == nil {
			result = struct{}{}
		}
		r.Result = result
	}
	c.write(r)
}

func (c *conn) notify(method string, params any) {
	c.write(notification{JSONRPC: "2.0", Method: method, Params: params})
}

// write sends one message as one line. A write error means the client is
// gone; reading then ends too, so it is not reported twice.
func (c *conn) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: &rpcError{Code: codeInternalError, Message: "lazy could not encode its answer: " + err.Error()}})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.w.Write(append(b, '\n'))
	_ = c.w.Flush()
}

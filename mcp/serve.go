package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official SDK serves MCP; this file adds what a stdio server facing
// a confused or hostile agent needs and the SDK's IOTransport does not do:
// it ends the session at the first line it cannot decode, and it has no
// bound on the calls in flight. lineFilter sits in front of the transport
// and answers a bad line itself, so the SDK only ever reads messages;
// boundCalls is a receiving middleware.

// JSON-RPC error codes lazy answers with itself.
const (
	codeParseError     = jsonrpc.CodeParseError
	codeInvalidRequest = jsonrpc.CodeInvalidRequest
	codeMethodNotFound = jsonrpc.CodeMethodNotFound
	codeInvalidParams  = jsonrpc.CodeInvalidParams
	// codeResourceNotFound is MCP's resource-not-found: invalid params
	// since SEP-2164 (-32002 before), as the SDK answers it.
	codeResourceNotFound = jsonrpc.CodeInvalidParams
	codeServerBusy       = -32000 // JSON-RPC's range for a server's own errors
)

// maxMessage bounds one incoming message: a tool's arguments are a few
// kilobytes; 32 MiB is what the daemon accepts for a call.
const maxMessage = 32 << 20

// maxCalls bounds the calls in flight on a server: one more is refused
// with codeServerBusy. lazy serves one connection per server.
const maxCalls = 64

// Serve runs the server on one connection: newline-delimited JSON-RPC
// messages from r, answers to w, until r ends or ctx is done (a client
// hanging up and a signal are how a stdio server stops: both return nil;
// a read error is returned). The calls still running at the end are
// cancelled and waited for.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	out := newLineWriter(w)
	pr, pw := io.Pipe()
	ss, err := s.sdk.Connect(ctx, &sdk.IOTransport{Reader: pr, Writer: out, MaxLineLength: maxMessage + 2}, nil)
	if err != nil {
		return fmt.Errorf("start the MCP session: %w", err)
	}
	readErr := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		readErr <- filterLines(r, pw, out)
		out.settle(pw, ended)
		_ = pw.Close() // the SDK reads EOF and ends the session
	}()
	go func() {
		_ = ss.Wait()
		close(ended)
	}()
	select {
	case <-ctx.Done():
		// As at EOF: the SDK cancels the calls in flight when its input
		// ends (Close would wait for them instead).
		_ = pw.Close()
		<-ended
		return nil
	case <-ended:
	}
	select {
	case err := <-readErr:
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read an MCP message: %w", err)
		}
	default: // the SDK ended the session first: the reader is left to r
	}
	return nil
}

// lineWriter is the connection's output, shared by the SDK and
// filterLines: each Write is one whole message. It also keeps the ids
// of the calls in flight, which the SDK does not expose: a second call
// with the id of one in flight is refused (the SDK would drop it
// unanswered), and a call the client cancelled gets no answer (MCP: the
// receiver of a cancellation should not respond; the SDK answers
// "context canceled", which the TypeScript SDK client reports as an
// error, a response to an unknown id).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
	// calls holds each call in flight by id.
	calls map[jsonrpc.ID]call
	// answered is signalled when a call's answer leaves (see settle).
	answered chan struct{}
}

// call is what the shim knows of one call in flight.
type call struct {
	cancelled bool // by the client: its answer is not sent
	changing  bool // a tool call that changes something (see Dispatcher.Call)
}

func newLineWriter(w io.Writer) *lineWriter {
	return &lineWriter{w: w, calls: map[jsonrpc.ID]call{}, answered: make(chan struct{}, 1)}
}

func (l *lineWriter) Write(p []byte) (int, error) {
	var m struct {
		ID     any             `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	_ = json.Unmarshal(p, &m) // the SDK's own message: it decodes
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.ID != nil && m.Method == nil {
		if id, err := jsonrpc.MakeID(m.ID); err == nil {
			c := l.calls[id]
			delete(l.calls, id)
			select {
			case l.answered <- struct{}{}:
			default:
			}
			if c.cancelled {
				return len(p), nil
			}
		}
	}
	return l.w.Write(p)
}

// track records a message on its way to the SDK: a call's id, or a
// cancellation. It refuses a call whose id is in flight.
func (l *lineWriter) track(msg jsonrpc.Message) (refused bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.IsCall() {
		if _, dup := l.calls[req.ID]; dup {
			return true
		}
		// The handshake counts as changing: the calls after it need it.
		l.calls[req.ID] = call{changing: req.Method == "initialize" || req.Method == "tools/call" && changes(toolName(req.Params))}
		return false
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				if c, ok := l.calls[id]; ok {
					c.cancelled = true
					l.calls[id] = c
				}
			}
		}
	}
	return false
}

// toolName is the tool a tools/call names ("" if none).
func toolName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}

// settle runs when the client's input has ended, before the SDK is told:
// at its EOF the SDK cancels every call it was sent, even one still
// queued, so a client that writes its calls and closes stdin at once
// would have none run. A call that changes something must run to its end
// (see Dispatcher.Call); one that only reads is of no use to a client
// that left. So settle cancels the reading calls as the client would,
// with notifications/cancelled, and waits until every call in flight has
// been answered (the changing ones by finishing), or the session ended.
func (l *lineWriter) settle(sdkIn io.Writer, ended <-chan struct{}) {
	l.mu.Lock()
	var cancels []jsonrpc.ID
	for id, c := range l.calls {
		if !c.changing && !c.cancelled {
			c.cancelled = true
			l.calls[id] = c
			cancels = append(cancels, id)
		}
	}
	l.mu.Unlock()
	for _, id := range cancels {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id.Raw(), "reason": "the client's input ended"}})
		if err != nil {
			continue
		}
		if _, err := sdkIn.Write(append(b, '\n')); err != nil {
			return
		}
	}
	for {
		l.mu.Lock()
		n := len(l.calls)
		l.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-l.answered:
		case <-ended:
			return
		}
	}
}

// Close does not close w, which is the caller's.
func (l *lineWriter) Close() error { return nil }

// refuse answers a line that is not a message with a JSON-RPC error.
func (l *lineWriter) refuse(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	if err != nil {
		return
	}
	_, _ = l.Write(append(b, '\n'))
}

// filterLines copies the messages of r to the SDK, one line each, and
// answers every other line itself: not JSON, a batch, an id that is
// neither a string nor a number, a line longer than maxMessage. It
// returns r's error, nil once the SDK stops reading.
func filterLines(r io.Reader, sdkIn io.Writer, out *lineWriter) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if line = bytes.TrimSpace(line); len(line) > 0 {
			id, msg, code, errMsg := check(line)
			switch {
			case code != 0:
				out.refuse(id, code, errMsg)
			case out.track(msg):
				out.refuse(id, codeInvalidRequest, fmt.Sprintf("invalid request: id %s is already used by a call in flight", id))
			default:
				if _, werr := sdkIn.Write(append(line, '\n')); werr != nil {
					return nil
				}
			}
		}
		if err != nil {
			return err
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

// check decodes line as one JSON-RPC message the SDK can take; if it is
// not one, the error to answer it with (code non-zero). id is the line's
// id when it can be read, so the client learns which request failed.
func check(line []byte) (id json.RawMessage, msg jsonrpc.Message, code int, errMsg string) {
	if !json.Valid(line) {
		return nil, nil, codeParseError, "parse error: the line is not JSON"
	}
	if line[0] == '[' {
		return nil, nil, codeInvalidRequest, "JSON-RPC batches are not supported: send one message per line"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return nil, nil, codeInvalidRequest, "invalid request: a message is a JSON object"
	}
	id, hasID := m["id"]
	if hasID && !validID(id) {
		return nil, nil, codeInvalidRequest, "invalid request: an id is a string or a number"
	}
	_, hasMethod := m["method"]
	if !hasMethod && (!hasID || m["result"] == nil && m["error"] == nil) {
		return id, nil, codeInvalidRequest, "invalid request: no method"
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return id, nil, codeInvalidRequest, "invalid request: " + err.Error()
	}
	return id, msg, 0, ""
}

// validID reports whether a request id is one JSON-RPC and MCP allow: a
// string or a number (MCP forbids null).
func validID(id json.RawMessage) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// boundCalls refuses a request beyond n in flight with codeServerBusy,
// rather than queueing it: a client that floods lazy learns so at once.
// The handshake, pings and notifications are never refused.
func boundCalls(n int) sdk.Middleware {
	slots := make(chan struct{}, n)
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch {
			case method == "initialize", method == "ping", strings.HasPrefix(method, "notifications/"):
				return next(ctx, method, req)
			}
			select {
			case slots <- struct{}{}:
			default:
				return nil, &jsonrpc.Error{Code: codeServerBusy, Message: fmt.Sprintf("%d calls are in flight, the most lazy runs at once: wait for one, or cancel one", n)}
			}
			defer func() { <-slots }()
			return next(ctx, method, req)
		}
	}
}

package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/task"
)

// rawClient speaks JSON-RPC lines to a Server, as a client would that
// the SDKs never are: malformed, out of order, hostile.
type rawClient struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan map[string]any
	served <-chan error
}

// servePipes runs a server of b's tools on a pair of pipes until ctx
// ends or clientOut is closed: the client's ends, and Serve's result.
func servePipes(t *testing.T, ctx context.Context, b Backend, agent bool) (clientIn *io.PipeReader, clientOut *io.PipeWriter, served <-chan error) {
	t.Helper()
	srv, err := NewServer(b, agent, "test")
	if err != nil {
		t.Fatal(err)
	}
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, serverIn, serverOut)
		_ = serverOut.Close()
	}()
	return clientIn, clientOut, done
}

func serveRaw(t *testing.T, b Backend) *rawClient {
	t.Helper()
	clientIn, clientOut, served := servePipes(t, context.Background(), b, false)
	c := &rawClient{t: t, in: clientOut, lines: make(chan map[string]any, 100), served: served}
	go func() {
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	t.Cleanup(func() { _ = clientOut.Close() })
	return c
}

// initialize does the handshake a client must before any call (the SDK
// refuses calls before it, as MCP says).
func (c *rawClient) initialize() *rawClient {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if m := c.next(); m["id"] != "init" || m["result"] == nil {
		c.t.Fatalf("initialize: %v", m)
	}
	return c
}

func (c *rawClient) send(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(c.in, l+"\n"); err != nil {
			c.t.Fatal(err)
		}
	}
}

// next returns the next message the server wrote.
func (c *rawClient) next() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatal("no answer from the server in 30 s")
	}
	return nil
}

// collect gathers n answers: by id as JSON, and those with id null, which
// answer lines that had no usable id.
func (c *rawClient) collect(n int) (byID map[string]map[string]any, nulls []map[string]any) {
	c.t.Helper()
	byID = map[string]map[string]any{}
	for range n {
		m := c.next()
		if m["id"] == nil {
			nulls = append(nulls, m)
			continue
		}
		id, _ := json.Marshal(m["id"])
		if _, dup := byID[string(id)]; dup {
			c.t.Fatalf("two answers to id %s", id)
		}
		byID[string(id)] = m
	}
	return byID, nulls
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

func resultText(m map[string]any) (string, bool) {
	r, _ := m["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return "", false
	}
	first, _ := content[0].(map[string]any)
	text, _ := first["text"].(string)
	isErr, _ := r["isError"].(bool)
	return text, isErr
}

func TestProtocolAnswersEveryRequestAndSurvivesBadLines(t *testing.T) {
	c := serveRaw(t, fakeBackend{result: `{"tasks":[],"count":0}`})
	c.send(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`[{"jsonrpc":"2.0","id":50,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":51}`,
		`{"jsonrpc":"2.0","id":52,"result":{}}`, // a response: lazy awaits none
		`{"jsonrpc":"2.0","id":"two","method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lazy_nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"lazy_create","arguments":{"title":5}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lazy_create","arguments":{"goal":"g"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"lazy_create","arguments":{"title":"t","bogus":1}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"lazy_list","arguments":{"status":["done"]}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"lazy_list"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"lazy_diff","arguments":{"task":"x","max_bytes":1.5}}}`,
		`{"jsonrpc":"2.0","id":15,"method":5}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`"hello"`,
	)
	got, nulls := c.collect(21) // every line but the notification and the response
	init := got["1"]["result"].(map[string]any)
	if v, _ := init["protocolVersion"].(string); v == "" || v == "1999-01-01" {
		t.Errorf("an unknown version is answered with %q, want one lazy speaks", v)
	}
	// The line that is not JSON, the batch, the boolean and null ids and
	// the JSON that is no message.
	if len(nulls) != 5 {
		t.Errorf("%d answers with id null, want 5: %v", len(nulls), nulls)
	}
	for _, m := range nulls {
		if code := errCode(m); code != codeParseError && code != codeInvalidRequest {
			t.Errorf("a line without a usable id: %v", m)
		}
	}
	if errCode(got["51"]) != codeInvalidRequest {
		t.Errorf("a request without a method: %v", got["51"])
	}
	for id, code := range map[string]int{"15": codeInvalidRequest, "3": codeMethodNotFound, "4": codeInvalidParams, "5": codeInvalidParams, "11": codeResourceNotFound} {
		if errCode(got[id]) != float64(code) {
			t.Errorf("id %s: %v, want error %d", id, got[id], code)
		}
	}
	if got["12"]["error"] == nil {
		t.Errorf("a second initialize: %v, want an error", got["12"])
	}
	if _, ok := got[`"two"`]["result"]; !ok {
		t.Errorf("a string id is answered: %v", got[`"two"`])
	}
	for id, want := range map[string]string{
		"6": `/properties/title: type: 5 has type "integer", want "string"`, "7": `missing properties: ["title"]`, "8": `unexpected additional properties ["bogus"]`,
		"9": `enum: done does not equal any of: [backlog`, "14": `/properties/max_bytes: type: 1.5 has type "number", want "integer"`,
	} {
		if text, isErr := resultText(got[id]); !isErr || !strings.Contains(text, want) {
			t.Errorf("id %s: %q (isError %v), want an error result with %q", id, text, isErr, want)
		}
	}
	if text, isErr := resultText(got["10"]); isErr || !strings.HasPrefix(text, "No tasks.") {
		t.Errorf("lazy_list without arguments: %q isError=%v", text, isErr)
	}
	tools, _ := got["13"]["result"].(map[string]any)["tools"].([]any)
	if len(tools) < 20 {
		t.Errorf("tools/list after everything else lists %d tools", len(tools))
	}
}

// blockingBackend blocks every call until its context ends, and reports
// that it did.
type blockingBackend struct{ started, ended chan struct{} }

func (b blockingBackend) Call(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.ended <- struct{}{}
	return nil, ctx.Err()
}

func TestACancelledCallEndsAndOthersGoOn(t *testing.T) {
	b := blockingBackend{started: make(chan struct{}, 2), ended: make(chan struct{}, 2)}
	c := serveRaw(t, b).initialize()
	c.send(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`)
	<-b.started
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // served while the call blocks
	if m := c.next(); m["id"] != float64(2) {
		t.Fatalf("ping while a call runs: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"user"}}`)
	select {
	case <-b.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call's context was not cancelled")
	}
	// MCP: no answer to a cancelled request (the TypeScript SDK reports
	// one as an error: a response to an unknown id). The next answer is
	// the ping's, sent after the call ended.
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := c.next(); m["id"] != float64(3) {
		t.Fatalf("after the cancel: %v, want only the ping's answer", m)
	}
}

func TestAnIDInFlightIsNotReused(t *testing.T) {
	b := blockingBackend{started: make(chan struct{}, 2), ended: make(chan struct{}, 2)}
	c := serveRaw(t, b).initialize()
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`
	c.send(call)
	<-b.started
	c.send(call)
	if m := c.next(); m["id"] != float64(7) || errCode(m) != codeInvalidRequest {
		t.Fatalf("a second call with the id of one in flight: %v", m)
	}
	// The first is still the client's to cancel.
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	select {
	case <-b.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the first call could not be cancelled any more")
	}
}

func TestCallsInFlightAreBounded(t *testing.T) {
	b := blockingBackend{started: make(chan struct{}, maxCalls+1), ended: make(chan struct{}, maxCalls+1)}
	c := serveRaw(t, b).initialize()
	for i := range maxCalls + 1 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`, i))
	}
	for range maxCalls {
		<-b.started
	}
	// Exactly one is refused: which one is the scheduler's choice (the
	// calls are read in order but take their slots concurrently).
	refused := c.next()
	id, ok := refused["id"].(float64)
	if !ok || id < 0 || id > maxCalls || errCode(refused) != codeServerBusy {
		t.Fatalf("%d calls at once with room for %d: %v, want one of them refused", maxCalls+1, maxCalls, refused)
	}
	// The connection still reads: a cancel of a running call frees a slot
	// for the next call.
	running := 0
	if id == 0 {
		running = 1
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, running))
	<-b.ended
	var m map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		c.send(`{"jsonrpc":"2.0","id":"again","method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`)
		select {
		case <-b.started:
			return // it ran
		case m = <-c.lines: // refused: the freed slot is not back yet
			if errCode(m) != codeServerBusy {
				t.Fatalf("while a slot frees: %v", m)
			}
		}
	}
	t.Fatalf("no slot came free after a cancel: %v", m)
}

func TestServeEndsAtEOFAndEndsItsCalls(t *testing.T) {
	b := blockingBackend{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	c := serveRaw(t, b).initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`)
	<-b.started
	_ = c.in.Close()
	endsCleanly(t, c.served, b, "at EOF")
}

// eofBackend records the tools called; lazy_show blocks until cancelled.
type eofBackend struct {
	mu     sync.Mutex
	called []string
}

func (b *eofBackend) Call(ctx context.Context, tool string, _ json.RawMessage) (json.RawMessage, error) {
	b.mu.Lock()
	b.called = append(b.called, tool)
	b.mu.Unlock()
	if tool == "lazy_show" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("ran " + tool)
}

// A client that writes its calls and closes its input at once (a script,
// an agent that gives up): the SDK alone cancels every call at EOF, even
// one still queued, so none would run. The handshake and a call that
// changes something run and are answered; a call that only reads is
// cancelled, and Serve ends.
func TestCallsWrittenJustBeforeEOFThatChangeSomethingRun(t *testing.T) {
	b := &eofBackend{}
	c := serveRaw(t, b)
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lazy_create","arguments":{"title":"t","request_id":"r"}}}`)
	_ = c.in.Close()
	var ids []any
	for m := range c.lines {
		ids = append(ids, m["id"])
		if m["id"] == float64(2) {
			if text, isErr := resultText(m); !isErr || text != "ran lazy_create" {
				t.Errorf("the create's answer: %v", m)
			}
		}
	}
	if len(ids) != 2 || ids[0] != "init" || ids[1] != float64(2) {
		t.Fatalf("answers to %v, want the handshake and the create (the show cancelled, unanswered)", ids)
	}
	select {
	case err := <-c.served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not end after EOF")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.called, "lazy_create") {
		t.Fatalf("the backend saw %v: the create never ran", b.called)
	}
}

// endsCleanly waits for Serve to return nil, its call b ended first.
func endsCleanly(t *testing.T, served <-chan error, b blockingBackend, when string) {
	t.Helper()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve %s: %v, want nil", when, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Serve did not end %s", when)
	}
	select {
	case <-b.ended:
	default:
		t.Fatal("Serve returned with a call still running")
	}
}

func TestAnOverlongMessageIsRefusedAndTheNextServed(t *testing.T) {
	c := serveRaw(t, fakeBackend{}).initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", maxMessage) + `"}}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := c.next(); errCode(m) != codeParseError {
		t.Fatalf("an overlong line: %v", m)
	}
	if m := c.next(); m["id"] != float64(2) {
		t.Fatalf("the line after it: %v", m)
	}
}

func TestABrokenReaderIsReported(t *testing.T) {
	srv, err := NewServer(fakeBackend{}, false, "test")
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := srv.Serve(context.Background(), io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","method":"x"}`+"\n"), errReader{boom}), io.Discard); !errors.Is(err, boom) {
		t.Fatalf("Serve = %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// FuzzServe feeds the server arbitrary input, as a confused or hostile
// agent could write to lazy mcp-proxy: it must end at EOF, never panic,
// and write only whole JSON lines.
func FuzzServe(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lazy_list","arguments":{"status":["blocked"]},"_meta":{"progressToken":7}}}` + "\n")
	f.Add(`{"jsonrpc":"2.0","id":[1],"method":"ping"}` + "\n" + `{"id":{},"method":"tools/call","params":[]}`)
	f.Add(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}` + "\n\n\r\n")
	f.Add(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"lazy://task/%2e%2e%2f"}}`)
	srv, err := NewServer(fakeBackend{result: `{"tasks":[],"count":0}`}, false, "test")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var out strings.Builder
		if err := srv.Serve(context.Background(), strings.NewReader(in), &out); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("wrote %q", line)
			}
		}
	})
}

func TestServeEndsWithItsContext(t *testing.T) {
	b := blockingBackend{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	clientIn, clientOut, served := servePipes(t, ctx, b, false)
	go func() { _, _ = io.Copy(io.Discard, clientIn) }()
	t.Cleanup(func() { _ = clientOut.Close() })
	if _, err := io.WriteString(clientOut, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`+"\n"+`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lazy_show","arguments":{"task":"x"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-b.started
	cancel() // SIGTERM, as lazy mcp sees it: a signal is how a stdio server stops
	endsCleanly(t, served, b, "after its context ended")
}

// notFoundBackend answers every call as the dispatcher does for a task
// that does not exist.
type notFoundBackend struct{}

func (notFoundBackend) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("no task named %q: %w", "nope", task.ErrNotFound)
}

func TestAMissingTaskIsAResourceNotFound(t *testing.T) {
	c := serveRaw(t, notFoundBackend{}).initialize()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"lazy://task/nope"}}`)
	m := c.next()
	if errCode(m) != codeResourceNotFound || !strings.Contains(fmt.Sprint(m["error"]), "lazy://task/nope") {
		t.Fatalf("reading a task that does not exist: %v, want MCP's resource-not-found with its uri", m)
	}
	// Through the daemon, the error is text; whether it is a missing task
	// travels beside it.
	var e error = &remoteError{msg: "no task named \"nope\": no such task", notFound: true}
	if !errors.Is(e, task.ErrNotFound) || errors.Is(&remoteError{msg: "boom"}, task.ErrNotFound) {
		t.Fatal("remoteError does not carry ErrNotFound")
	}
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Backend runs a tool call somewhere: in this process (the builder) or in
// the daemon (an agent, through its token).
type Backend interface {
	Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
}

// Local runs calls in this process for a fixed caller.
type Local struct {
	D      *Dispatcher
	Caller Caller
}

// Call implements Backend.
func (l Local) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return l.D.Call(ctx, l.Caller, tool, args)
}

// Instructions tell a connected client how lazy's tools fit together.
const Instructions = `lazy runs AI coding agents on tasks, each on its own git branch and worktree; every task's state lives in the repository's git refs.

The task loop:
1. lazy_create a task (title + goal: what done looks like). It starts in backlog.
2. lazy_start it: an agent turn runs in the task's worktree (status working).
3. lazy_wait for the turn to end. Long waits send progress notifications; without them, lazy_wait returns still_running: true after timeout_seconds (default 50): just call it again.
4. Review: lazy_show (turns, journal, pending file violations), lazy_diff (what changed), lazy_logs (the agent's output).
5. Then either lazy_unblock with feedback (another turn: back to 3), or lazy_accept to squash-merge the work (complete). lazy_close or lazy_reject abandon a task; lazy_reopen brings it back.

Statuses: backlog (not started), working (a turn runs), blocked (waits for you), conflict (blocked with file-permission violations to decide in lazy_unblock), interrupted (the agent died: lazy_resume or lazy_unblock), pairing (a human works in it), merging, submitted (a pull request is open: lazy_accept merges it), complete, abandoned, zombie.
Run many tasks at once: start several, then lazy_list with status blocked to see which wait for you. Task arguments take a slug or a unique id prefix. Every result is JSON (structuredContent) with a readable summary in its text.`

// AgentInstructions tell an agent inside a turn what its tools are for.
const AgentInstructions = `You are the agent of one lazy task; these tools act on that task and its direct subtasks only.

- lazy_update_progress: one short line on what you are doing now (latest wins; not history).
- lazy_journal: before you finish a turn, record why you did what you did, the decisions you made and what you deferred. It is kept with the task and read by whoever reviews it.
- Split work: lazy_create a subtask (it goes under your task), lazy_start it, lazy_wait for it (call again on still_running: true), review it with lazy_show / lazy_diff / lazy_logs, then lazy_unblock it with feedback or lazy_accept it into your branch.
- lazy_show and lazy_list show your own task and its subtasks.`

// Server is lazy's MCP server: the official Go SDK's server with lazy's
// tools, each forwarded to a Backend, and the task resource template.
type Server struct {
	sdk *sdk.Server
}

// NewServer builds an MCP server offering the builder's tools, or an
// agent's (agent set), each forwarded to b, and the task resource
// template.
func NewServer(b Backend, agent bool, version string) (*Server, error) {
	instructions := Instructions
	if agent {
		instructions = AgentInstructions
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "lazy", Title: "lazy task orchestrator", Version: version}, &sdk.ServerOptions{Instructions: instructions})
	for _, t := range Tools {
		if t.AgentOnly && !agent || t.BuilderOnly && agent {
			continue
		}
		if err := t.register(s, t, b); err != nil {
			return nil, err
		}
	}
	addTaskResource(s, b)
	s.AddReceivingMiddleware(boundCalls(maxCalls))
	return &Server{sdk: s}, nil
}

// ProgressEvery is how often a long call sends a progress notification
// when the client gave a progress token: often enough to keep a client
// that resets its timeout on progress (5 s or more) alive.
const ProgressEvery = 2 * time.Second

// add registers tool t, taking In and returning Out, on s: the SDK infers
// its schemas from the Go types and validates arguments and results
// against them.
func add[In, Out any](s *sdk.Server, t Tool, b Backend) error {
	in, err := schemaFor[In]()
	if err != nil {
		return fmt.Errorf("mcp: input schema of %s: %w", t.Name, err)
	}
	out, err := schemaFor[Out]()
	if err != nil {
		return fmt.Errorf("mcp: output schema of %s: %w", t.Name, err)
	}
	noNullLists(out)
	// All four hints are always sent: MCP's defaults for a missing hint
	// (destructive, open-world) are the cautious ones, and lazy states each.
	tool := &sdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: in, OutputSchema: out,
		Annotations: &sdk.ToolAnnotations{Title: t.Title, ReadOnlyHint: t.Hints.ReadOnly, DestructiveHint: &t.Hints.Destructive,
			IdempotentHint: t.Hints.Idempotent, OpenWorldHint: &t.Hints.OpenWorld}}
	sdk.AddTool(s, tool, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		var zero Out
		// Arguments pass through In, so the backend sees exactly the
		// fields the schema names.
		args, err := json.Marshal(in)
		if err != nil {
			return nil, zero, err
		}
		if t.Long {
			var stop func()
			ctx, stop = progress(ctx, req, t.Name)
			defer stop()
		} else {
			// Nothing of a call goes to stderr, progress or not.
			ctx = WithReporter(ctx, func(string) {})
		}
		raw, err := b.Call(ctx, t.Name, args)
		if err != nil {
			return nil, zero, err
		}
		// A result quotes records that may have been pulled, unchecked, and
		// other agents' words: a bidi control in them reaches the calling
		// agent as the visible escape \u202e, in the text and the
		// structured result alike.
		raw = quote.BidiJSON(raw)
		var o Out
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, zero, fmt.Errorf("%s returned a result lazy cannot read: %w", t.Name, err)
		}
		text := string(raw)
		if h := headline(t.Name, o); h != "" {
			text = h + "\n\n" + text
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, o, nil
	})
	return nil
}

// progress starts the call's progress notifications, if the client asked
// for them with a progress token: the latest line a long operation
// reported, re-sent every ProgressEvery so the client's timeout keeps
// being reset even while nothing changes.
func progress(ctx context.Context, req *sdk.CallToolRequest, tool string) (context.Context, func()) {
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	if token == nil || req.Session == nil {
		return WithReporter(ctx, func(string) {}), func() {}
	}
	var (
		mu     sync.Mutex
		latest = tool + ": started"
		n      float64
	)
	send := func() {
		mu.Lock()
		n++
		p := &sdk.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: latest}
		mu.Unlock()
		_ = req.Session.NotifyProgress(ctx, p) // a lost notification is only a missed reset
	}
	changed := make(chan struct{}, 1)
	ctx = WithReporter(ctx, func(msg string) {
		mu.Lock()
		latest = msg
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		send()
		for {
			select {
			case <-done:
				select { // the last line reported goes out before the result
				case <-changed:
					send()
				default:
				}
				return
			case <-ctx.Done():
				return
			case <-changed:
				send()
			case <-t.C:
				send()
			}
		}
	}()
	return ctx, func() { close(done); <-finished }
}

// noNullLists makes every list in an output schema a plain array: lazy
// answers [] for an empty list, and the schema says so, so a client's
// validator catches a null before an LLM has to.
func noNullLists(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "array" {
		s.Type, s.Types = "array", nil
	}
	noNullLists(s.Items)
	noNullLists(s.AdditionalProperties)
	for _, p := range s.Properties {
		noNullLists(p)
	}
	for _, x := range s.AnyOf {
		noNullLists(x)
	}
	for _, x := range s.OneOf {
		noNullLists(x)
	}
	for _, x := range s.AllOf {
		noNullLists(x)
	}
}

// schemaFor infers a JSON schema for T the way the SDK would, with the
// status enum, hex hashes and RFC 3339 times spelled out.
func schemaFor[T any]() (*jsonschema.Schema, error) {
	var enum []any
	for _, st := range machine.Statuses() {
		enum = append(enum, string(st))
	}
	cats := []any{string(machine.CategoryActive), string(machine.CategoryBlocked), string(machine.CategoryTerminal), string(machine.CategoryResting)}
	return jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[machine.Status]():   {Type: "string", Enum: enum, Description: "task status"},
		reflect.TypeFor[machine.Category](): {Type: "string", Enum: cats},
		reflect.TypeFor[task.Hex]():         {Type: "string", Pattern: "^[0-9a-f]{40}([0-9a-f]{24})?$", Description: "git object id, hex"},
		reflect.TypeFor[time.Time]():        {Type: "string", Format: "date-time"},
	}})
}

// CallRequest is the body of the daemon's POST /mcp/call.
type CallRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// CallResponse is one line of its answer: progress lines while the call
// runs, then a result or an error for the caller. The answer is JSON
// lines, so a proxy relays a long call's progress to its client as it
// comes; a daemon that sends no progress sends just the final line.
type CallResponse struct {
	Progress string          `json:"progress,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	// NotFound: the error is that a task named does not exist
	// (task.ErrNotFound), which the proxy tells its client apart.
	NotFound bool `json:"not_found,omitempty"`
}

// remoteError is an error the daemon answered, as the proxy returns it:
// its text, and whether it is task.ErrNotFound.
type remoteError struct {
	msg      string
	notFound bool
}

func (e *remoteError) Error() string { return e.msg }

// Is makes errors.Is(err, task.ErrNotFound) hold across the daemon.
func (e *remoteError) Is(target error) bool { return e.notFound && target == task.ErrNotFound }

// Remote forwards calls to the daemon of lazyDir with a bearer token.
type Remote struct {
	LazyDir string
	Token   string
	// DaemonWait is how long a call waits for a daemon that cannot be
	// reached yet (0: DefaultDaemonWait). The command that launches a
	// turn starts the daemon after the launch, and an agent's first call
	// can come before it listens.
	DaemonWait time.Duration
	http       *http.Client
}

// DefaultDaemonWait is how long a call waits for the daemon to listen.
const DefaultDaemonWait = 5 * time.Second

// NewRemote returns a backend that talks to the daemon's socket.
func NewRemote(lazyDir, token string) *Remote {
	// No client timeout: lazy_wait long-polls for as long as it was asked.
	return &Remote{LazyDir: lazyDir, Token: token, http: &http.Client{Transport: link.Transport(lazyDir)}}
}

// Call implements Backend.
func (r *Remote) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	body, err := json.Marshal(CallRequest{Tool: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	resp, err := r.post(ctx, body)
	if err != nil {
		return nil, callFailed(ctx, tool, err, "the lazy daemon is not reachable (%w); it starts with the next turn, or run lazy daemon --ensure")
	}
	defer func() { _ = resp.Body.Close() }()
	dec := json.NewDecoder(io.LimitReader(resp.Body, 64<<20))
	for {
		var cr CallResponse
		if err := dec.Decode(&cr); err != nil {
			return nil, callFailed(ctx, tool, err, "the daemon answered "+resp.Status+" and then %w; run lazy daemon --status to check it")
		}
		switch {
		case cr.Error != "":
			return nil, &remoteError{msg: cr.Error, notFound: cr.NotFound}
		case cr.Result != nil:
			return cr.Result, nil
		case cr.Progress != "":
			Report(ctx, cr.Progress)
		}
	}
}

// callFailed says what became of a call to the daemon that got no answer.
// A call the caller cancelled (or whose client went away) may well have
// been done: the daemon runs every call to its end. Only a connection
// that was never made proves it was not; anything else is said as it is,
// with the format's %w for the error.
func callFailed(ctx context.Context, tool string, err error, format string) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s was cancelled before the daemon answered, but the daemon finishes a call it received, so it may have been done: check with lazy_show or lazy_list before calling it again (lazy_create with the same request_id is safe to repeat): %w", tool, ctx.Err())
	case isDialError(err):
		return fmt.Errorf(format, err)
	}
	return fmt.Errorf("%s got no answer from the daemon, which may have done it anyway: check with lazy_show or lazy_list before calling it again: "+format, append([]any{tool}, err)...)
}

// post sends a call to the daemon. A daemon that cannot be reached is
// waited for, up to DaemonWait: a failed dial sent nothing, so trying
// again cannot run a call twice (an answer lost after the call was sent
// is never retried).
func (r *Remote) post(ctx context.Context, body []byte) (*http.Response, error) {
	wait := r.DaemonWait
	if wait <= 0 {
		wait = DefaultDaemonWait
	}
	deadline := time.Now().Add(wait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lazy/mcp/call", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+r.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := r.http.Do(req)
		if err == nil || !isDialError(err) || time.Now().After(deadline) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isDialError reports whether err is a failure to connect at all.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Handler serves POST /mcp/call for the daemon: the caller's task comes
// from its token alone, and the token must belong to the task's running
// turn. A call is finished even if the client goes away meanwhile, so a
// wait's markers settle the same way either way.
func Handler(lazyDir string, d *Dispatcher, live func(link.Identity) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reply := func(code int, cr CallResponse) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(cr)
		}
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			reply(http.StatusUnauthorized, CallResponse{Error: "an MCP call needs its session's bearer token"})
			return
		}
		id, err := link.VerifyToken(lazyDir, strings.TrimSpace(raw))
		if err == nil && live != nil {
			err = live(id)
		}
		if err != nil {
			reply(http.StatusUnauthorized, CallResponse{Error: err.Error()})
			return
		}
		var req CallRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 32<<20)).Decode(&req); err != nil {
			reply(http.StatusBadRequest, CallResponse{Error: "bad call: " + err.Error()})
			return
		}
		// Progress lines go out as they come; the first one commits the
		// status, so every line after the token check answers 200.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		var mu sync.Mutex
		enc := json.NewEncoder(w)
		flusher, _ := w.(http.Flusher)
		line := func(cr CallResponse) {
			mu.Lock()
			defer mu.Unlock()
			if enc.Encode(cr) == nil && flusher != nil {
				flusher.Flush()
			}
		}
		ctx := WithReporter(context.WithoutCancel(r.Context()), func(msg string) { line(CallResponse{Progress: msg}) })
		out, err := d.Call(ctx, Caller{Actor: "agent", Task: id.Task}, req.Tool, req.Arguments)
		if err != nil {
			line(CallResponse{Error: err.Error(), NotFound: errors.Is(err, task.ErrNotFound)})
			return
		}
		line(CallResponse{Result: out})
	}
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/link"
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

// NewServer builds an MCP server offering the builder's tools, or an
// agent's (agent set), each forwarded to b.
func NewServer(b Backend, agent bool, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "lazy", Version: version}, nil)
	for _, t := range Tools {
		if t.AgentOnly && !agent {
			continue
		}
		t.register(s, t, b)
	}
	return s
}

func add[In any](s *sdk.Server, t Tool, b Backend) {
	sdk.AddTool(s, &sdk.Tool{Name: t.Name, Description: t.Description}, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		args, err := json.Marshal(in)
		if err != nil {
			return nil, nil, err
		}
		out, err := b.Call(ctx, t.Name, args)
		if err != nil {
			return nil, nil, err
		}
		return nil, out, nil
	})
}

// CallRequest is the body of the daemon's POST /mcp/call.
type CallRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// CallResponse is its answer: a result, or an error for the caller.
type CallResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Remote forwards calls to the daemon of lazyDir with a bearer token.
type Remote struct {
	LazyDir string
	Token   string
	http    *http.Client
}

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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lazy/mcp/call", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the lazy daemon is not reachable (%w); it starts with the next turn, or run lazy daemon --ensure", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	var cr CallResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, fmt.Errorf("the daemon answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if cr.Error != "" {
		return nil, fmt.Errorf("%s", cr.Error)
	}
	return cr.Result, nil
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
		ctx := context.WithoutCancel(r.Context())
		out, err := d.Call(ctx, Caller{Actor: "agent", Task: id.Task}, req.Tool, req.Arguments)
		if err != nil {
			reply(http.StatusOK, CallResponse{Error: err.Error()})
			return
		}
		reply(http.StatusOK, CallResponse{Result: out})
	}
}

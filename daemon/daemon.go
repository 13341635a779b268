// Package daemon is lazy's per-repository background process: it runs
// the reconciler on a tick, so turns are recorded without anyone running
// a command, and serves a small HTTP API on a unix socket. It supervises
// nothing directly: supervisors are their own processes, so killing or
// upgrading the daemon never kills an agent.
package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/unixsock"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/task"
)

// Files under <git common dir>/lazy.
const (
	LockFile   = "daemon.lock"
	SocketFile = link.SocketFile
)

// ErrRunning means another daemon holds the lock for this repository.
var ErrRunning = errors.New("a lazy daemon is already running for this repository")

// Info is what GET /version answers.
type Info struct {
	PID     int    `json:"pid"`
	Version string `json:"version"`
	Started string `json:"started"`
}

// Server is a running daemon.
type Server struct {
	Store     *gitstore.Store
	Reconcile *reconcile.Reconciler
	Version   string
	Tick      time.Duration // reconcile period
	Heartbeat time.Duration // NDJSON heartbeat period
	// IdleExit ends the daemon after this long with no working task
	// (0: never). The next turn launch starts it again.
	IdleExit time.Duration
	// MCP serves agents' tool calls (POST /mcp/call), if set.
	MCP http.Handler
	// Web, if set, builds the web view for the 127.0.0.1 address it will
	// be served on; its URLs with their tokens go to WebFile (0600) for
	// lazy web.
	Web func(addr string) (handler http.Handler, info WebInfo)
	// OnActions, if set, sees every reconcile pass's actions (the
	// lazy.notify.command hook); it must not block.
	OnActions func([]reconcile.Action)
	// AfterPass, if set, runs after every reconcile pass (the merge
	// queue's re-entry of tasks whose agents fixed a failed gate); it
	// must not block.
	AfterPass func(ctx context.Context)

	hub  events.Hub
	poke chan struct{}
}

// Run holds the daemon lock, listens on the socket and serves until ctx
// ends or a client asks it to shut down.
func (s *Server) Run(ctx context.Context) error {
	dir := s.Store.Repo().LazyDir()
	lock, err := flock.TryLock(filepath.Join(dir, LockFile))
	if errors.Is(err, flock.ErrHeld) {
		return ErrRunning
	}
	if err != nil {
		return err
	}
	defer func() { _ = lock.Release() }()
	sock := filepath.Join(dir, SocketFile)
	// The lock is ours, so a socket file left here belongs to a dead
	// daemon.
	_ = os.Remove(sock)
	ln, err := unixsock.Listen(sock)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sock, err)
	}
	defer func() { _ = os.Remove(sock) }()
	if err := os.Chmod(sock, 0o600); err != nil {
		return fmt.Errorf("restrict %s: %w", sock, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.poke = make(chan struct{}, 1)
	info := Info{PID: os.Getpid(), Version: s.Version, Started: time.Now().UTC().Format(time.RFC3339)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(info)
	})
	mux.HandleFunc("POST /shutdown", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		cancel()
	})
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("POST /poke", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case s.poke <- struct{}{}:
		default: // a pass is already due
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if s.MCP != nil {
		mux.Handle("POST /mcp/call", s.MCP)
	}
	mux.HandleFunc("POST /phase", func(w http.ResponseWriter, r *http.Request) {
		var ev events.Phase
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&ev); err != nil || ev.TaskID == "" {
			http.Error(w, "a phase event needs JSON with a task_id", http.StatusBadRequest)
			return
		}
		s.hub.Publish(events.Event{Phase: &ev})
		w.WriteHeader(http.StatusNoContent)
	})
	if s.Web != nil {
		stop, err := s.serveWeb(ctx, dir)
		if err != nil {
			return err
		}
		defer stop()
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		// ctx is done by now; shutdown gets its own bounded time.
		sctx, c := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		s.loop(ctx)
		cancel()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) loop(ctx context.Context) {
	tick := time.NewTicker(s.Tick)
	beat := time.NewTicker(s.Heartbeat)
	defer tick.Stop()
	defer beat.Stop()
	idleSince := time.Now()
	seen := map[string]events.Progress{}
	followUp := time.NewTimer(time.Hour)
	followUp.Stop()
	defer followUp.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-beat.C:
			s.hub.Publish(events.Event{Heartbeat: t.UTC().Format(time.RFC3339Nano)})
		case <-s.poke:
			// Something just launched a turn: reconcile and publish now,
			// and once more when the supervisor has had a moment to
			// report, not at the next tick, so watchers see it start.
			s.hub.Publish(events.Event{Heartbeat: time.Now().UTC().Format(time.RFC3339Nano)})
			if !s.pass(ctx, &idleSince, seen) {
				return
			}
			if !followUp.Stop() {
				select {
				case <-followUp.C:
				default:
				}
			}
			followUp.Reset(300 * time.Millisecond)
		case <-followUp.C:
			if !s.pass(ctx, &idleSince, seen) {
				return
			}
		case <-tick.C:
			if !s.pass(ctx, &idleSince, seen) {
				return
			}
		}
	}
}

// WebFile records where the web view listens, with its token.
const WebFile = "web.json"

// WebInfo is WebFile's content.
type WebInfo struct {
	PID int    `json:"pid"`
	URL string `json:"url"`
	// ActionsURL carries the token that may also act (comment, unblock,
	// accept...); lazy web prints it only when actions are enabled.
	ActionsURL string `json:"actions_url,omitempty"`
}

// serveWeb listens on a free 127.0.0.1 port for the web view.
func (s *Server) serveWeb(ctx context.Context, dir string) (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the web view: %w", err)
	}
	h, info := s.Web(ln.Addr().String())
	info.PID = os.Getpid()
	b, err := json.Marshal(info)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	path := filepath.Join(dir, WebFile)
	if err := renameio.WriteFile(path, b, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	// Requests live in the daemon's context, so open event streams end
	// when the daemon does instead of holding up its shutdown.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		_ = os.Remove(path)
		sctx, c := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
	}, nil
}

// pass is one reconcile-and-publish round; false means the daemon should
// exit (the repository is gone, or it was idle long enough).
func (s *Server) pass(ctx context.Context, idleSince *time.Time, seen map[string]events.Progress) bool {
	if _, err := os.Stat(s.Store.Repo().CommonDir); err != nil {
		return false
	}
	// Pass lists only when a task ref moved; Watched is its listing's
	// live and submitted tasks, all that busy and progress look at.
	actions, err := s.Reconcile.Pass(ctx)
	entries := s.Reconcile.Watched()
	if err != nil && entries == nil {
		return true
	}
	if len(actions) > 0 {
		s.hub.Publish(events.Event{Reconcile: actions})
		if s.OnActions != nil {
			s.OnActions(actions)
		}
	}
	// A pick by the gate gating attempts in the background keeps the
	// daemon up too: exiting would cancel its gate runs.
	if busy(entries) || s.watched() || s.Reconcile.Picking() {
		*idleSince = time.Now()
	} else if s.IdleExit > 0 && time.Since(*idleSince) > s.IdleExit {
		return false
	}
	s.publishProgress(entries, seen)
	if s.AfterPass != nil {
		s.AfterPass(ctx)
	}
	return true
}

// publishProgress reads each working task's status.json and publishes
// what changed since the last tick.
func (s *Server) publishProgress(entries []task.Entry, seen map[string]events.Progress) {
	// entries holds only the watched tasks: a task missing from them is
	// not working either.
	working := make(map[string]bool, len(entries))
	for _, e := range entries {
		working[e.ID] = e.Status == machine.Working
	}
	for id := range seen {
		if !working[id] {
			delete(seen, id)
		}
	}
	for _, e := range entries {
		if e.Status != machine.Working {
			delete(seen, e.ID)
			continue
		}
		var st proto.Status
		if proto.ForTask(s.Store.Repo().LazyDir(), e.ID).Read(proto.StatusFile, &st) != nil {
			continue
		}
		p := events.Progress{TaskID: e.ID, Phase: st.Phase, Progress: st.Progress, Attempt: st.Attempt}
		switch {
		case st.AgentRetrying:
			p.Retry = machine.AgentRetrySummary(st.Attempt, st.RetryFailureClass, st.RetryFailureReason)
		case st.RetryFailureClass != "":
			p.Retry = machine.RetrySummary(st.Attempt, st.RetryFailureClass, st.RetryFailureReason)
		}
		if seen[e.ID] != p {
			seen[e.ID] = p
			s.hub.Publish(events.Event{Progress: &p})
		}
	}
}

// busy reports whether any task needs the daemon: an active one, or a
// submitted one whose pull request the forge sync follows.
func busy(entries []task.Entry) bool {
	for _, e := range entries {
		if e.Status.IsActive() || e.Status == machine.Submitted {
			return true
		}
	}
	return false
}

// watched reports whether anyone follows the events (lazy watch, an open
// web page): a person looking at the daemon's view keeps it up, since a
// restarted daemon serves the web view on a new address.
func (s *Server) watched() bool { return s.hub.Watched() }

// Subscribe returns this daemon's events, in process (the web view
// follows them), until ctx ends. A slow reader misses events rather than
// stalling the daemon, so readers treat an event as "look again".
func (s *Server) Subscribe(ctx context.Context) <-chan events.Event { return s.hub.Subscribe(ctx) }

// events streams NDJSON: heartbeats, so a client can tell a quiet daemon
// from a dead one, and reconcile actions as they happen.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := s.Subscribe(r.Context())
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	_ = enc.Encode(events.Event{Heartbeat: time.Now().UTC().Format(time.RFC3339Nano)})
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-ch:
			if enc.Encode(ev) != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// Client talks to a repository's daemon over its socket.
type Client struct {
	http *http.Client
}

// Dial returns a client for the daemon of the repository whose lazy dir
// is dir.
func Dial(dir string) *Client {
	return &Client{http: &http.Client{Transport: link.Transport(dir), Timeout: 2 * time.Second}}
}

// post sends a POST with an optional body and discards the answer.
func (c *Client) post(ctx context.Context, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lazy"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Info asks the daemon who it is.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var info Info
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://lazy/version", nil)
	if err != nil {
		return info, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return info, err
	}
	defer func() { _ = resp.Body.Close() }()
	return info, json.NewDecoder(resp.Body).Decode(&info)
}

// Shutdown asks the daemon to exit.
func (c *Client) Shutdown(ctx context.Context) error { return c.post(ctx, "/shutdown", nil) }

// Poke asks the daemon for a reconcile-and-publish pass now.
func (c *Client) Poke(ctx context.Context) error { return c.post(ctx, "/poke", nil) }

// Phase relays a phase event to the daemon's subscribers. It is
// best-effort: the caller's operation must not depend on it.
func (c *Client) Phase(ctx context.Context, ev events.Phase) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return c.post(ctx, "/phase", b)
}

// Events writes the daemon's events to w as NDJSON until ctx ends or the
// daemon goes away.
func (c *Client) Events(ctx context.Context, w io.Writer) error {
	ch, err := c.Subscribe(ctx)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for ev := range ch {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}

// Subscribe decodes the daemon's event stream into a channel, closed when
// the stream ends or ctx is done.
func (c *Client) Subscribe(ctx context.Context) (<-chan events.Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://lazy/events", nil)
	if err != nil {
		return nil, err
	}
	streaming := *c.http
	streaming.Timeout = 0
	resp, err := streaming.Do(req) //nolint:bodyclose // closed by the decoding goroutine below
	if err != nil {
		return nil, err
	}
	ch := make(chan events.Event, events.Buffer)
	go func() {
		defer close(ch)
		defer func() { _ = resp.Body.Close() }()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev events.Event
			if dec.Decode(&ev) != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

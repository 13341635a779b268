package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/events"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/mcp"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/wire"
)

// newServer is a daemon for a fresh temporary repository, not yet
// running, and that repository's lazy directory.
func newServer(t *testing.T) (*Server, string) {
	t.Helper()
	dir := testrepo.New(t)
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(repo.LazyDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	store := gitstore.Open(repo)
	rec := &reconcile.Reconciler{Env: wire.New(store, session.Env{Actor: machine.System, RepoDir: dir}), StartGrace: time.Hour}
	t.Cleanup(func() { _ = rec.Close() })
	return &Server{Store: store, Reconcile: rec, Version: "test-1", Tick: 50 * time.Millisecond, Heartbeat: time.Hour}, repo.LazyDir()
}

// start runs s until the test ends and waits until its socket answers.
// It returns the channel Run's error arrives on; the cleanup stops the
// daemon and waits for it, so no goroutine outlives the test.
func start(t *testing.T, s *Server, lazyDir string) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		err := s.Run(ctx)
		done <- err
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	c := Dial(lazyDir)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := c.Info(ctx); err == nil {
			return done
		}
		select {
		case err := <-done:
			t.Fatalf("the daemon ended before it answered: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not answer on its socket within 10s")
		}
		time.Sleep(10 * time.Millisecond) // polling the socket, with a deadline
	}
}

// post sends body to path over the daemon's socket and returns the
// status and answer.
func post(t *testing.T, lazyDir, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://lazy"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Transport: link.Transport(lazyDir), Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The daemon answers who it is on a socket only its user may open, a
// second daemon for the same repository is refused by the lock, and a
// shutdown request ends Run cleanly and removes the socket.
func TestStartServeStop(t *testing.T) {
	s, dir := newServer(t)
	done := start(t, s, dir)

	info, err := Dial(dir).Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "test-1" || info.PID != os.Getpid() {
		t.Errorf("info = %+v, want version test-1 and pid %d", info, os.Getpid())
	}
	if _, err := time.Parse(time.RFC3339, info.Started); err != nil {
		t.Errorf("started %q: %v", info.Started, err)
	}
	sock := filepath.Join(dir, SocketFile)
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", st.Mode().Perm())
	}

	second, _ := newServer(t)
	second.Store, second.Reconcile = s.Store, s.Reconcile
	if err := second.Run(t.Context()); !errors.Is(err, ErrRunning) {
		t.Errorf("a second daemon: %v, want ErrRunning", err)
	}
	if _, err := Dial(dir).Info(t.Context()); err != nil {
		t.Errorf("the refused second daemon disturbed the first: %v", err)
	}

	if err := Dial(dir).Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after a shutdown request: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop within 10s of a shutdown request")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlived the daemon: %v", err)
	}
	if _, err := Dial(dir).Info(t.Context()); err == nil {
		t.Error("a stopped daemon still answered")
	}
}

// nextPhase returns the first phase event on ch, skipping heartbeats.
func nextPhase(t *testing.T, ch <-chan events.Event) events.Phase {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if ev.Phase != nil {
				return *ev.Phase
			}
		case <-timeout:
			t.Fatal("no phase event within 10s")
		}
	}
}

// A phase event one process posts reaches every subscriber: each socket
// client and the in-process one (the web view), in order.
func TestEventsFanOutToEverySubscriber(t *testing.T) {
	s, dir := newServer(t)
	start(t, s, dir)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var subs []<-chan events.Event
	for range 2 {
		ch, err := Dial(dir).Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The stream opens with a heartbeat: after it, this subscriber
		// is registered and sees everything published.
		select {
		case ev := <-ch:
			if ev.Heartbeat == "" {
				t.Fatalf("the stream opened with %+v, not a heartbeat", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no opening heartbeat within 10s")
		}
		subs = append(subs, ch)
	}
	subs = append(subs, s.Subscribe(ctx))

	c := Dial(dir)
	plan := []string{"merge", "push"}
	for i, label := range plan {
		if err := c.Phase(ctx, events.Phase{TaskID: "t1", Op: "accept", Step: i + 1, Of: len(plan), Label: label, Plan: plan}); err != nil {
			t.Fatal(err)
		}
	}
	for n, ch := range subs {
		for i, label := range plan {
			got := nextPhase(t, ch)
			if got.TaskID != "t1" || got.Op != "accept" || got.Step != i+1 || got.Of != 2 || got.Label != label || strings.Join(got.Plan, ",") != "merge,push" {
				t.Errorf("subscriber %d, event %d: %+v", n, i, got)
			}
		}
	}
}

// Malformed requests are refused with a status and a sentence, and the
// daemon keeps serving: a phase without a task, one that is not JSON, a
// shutdown by GET (a link a browser could follow), and MCP calls without
// a token, with a forged one, with a revoked one, and with a real token
// whose turn is over.
func TestRefusesBadRequestsAndBadTokens(t *testing.T) {
	s, dir := newServer(t)
	ended := errors.New("the turn of this token has ended; the agent's next turn gets a new one")
	s.MCP = mcp.Handler(dir, nil, func(link.Identity) error { return ended })
	start(t, s, dir)

	for _, body := range []string{`{"op":"accept"}`, `not json`, ``} {
		code, msg := post(t, dir, "/phase", "", body)
		if code != http.StatusBadRequest || !strings.Contains(msg, "needs JSON with a task_id") {
			t.Errorf("phase %q: %d %q", body, code, msg)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://lazy/shutdown", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: link.Transport(dir), Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /shutdown: %d, want 405", resp.StatusCode)
	}

	revoked, err := link.MintToken(dir, link.Identity{Task: "t1", Session: "s1", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	link.RevokeToken(dir, revoked)
	stale, err := link.MintToken(dir, link.Identity{Task: "t1", Session: "s1", Turn: 2})
	if err != nil {
		t.Fatal(err)
	}
	call := `{"tool":"lazy_status","arguments":{}}`
	for _, c := range []struct{ name, auth, want string }{
		{"no token", "", "needs its session's bearer token"},
		{"not bearer", "Basic " + stale, "needs its session's bearer token"},
		{"forged", "Bearer lazy_" + strings.Repeat("0", 64), link.ErrBadToken.Error()},
		{"revoked", "Bearer " + revoked, link.ErrBadToken.Error()},
		{"ended turn", "Bearer " + stale, ended.Error()},
	} {
		code, msg := post(t, dir, "/mcp/call", c.auth, call)
		var cr mcp.CallResponse
		if err := json.Unmarshal([]byte(msg), &cr); err != nil {
			t.Errorf("%s: answer %q is not a call response: %v", c.name, msg, err)
		}
		if code != http.StatusUnauthorized || !strings.Contains(cr.Error, c.want) {
			t.Errorf("%s: %d %q, want 401 %q", c.name, code, cr.Error, c.want)
		}
	}

	if _, err := Dial(dir).Info(t.Context()); err != nil {
		t.Errorf("the daemon stopped serving after bad requests: %v", err)
	}
}

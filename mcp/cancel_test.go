package mcp

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/machine"
)

// A call whose caller cancels it while the daemon works on it is not
// reported as "daemon not reachable": the daemon finishes what it
// received, so the caller is told it may have been done. Only a daemon
// that cannot be reached at all is reported so.
func TestACancelledCallSaysItMayHaveBeenDone(t *testing.T) {
	dir := t.TempDir()
	r := NewRemote(dir, "token")
	r.DaemonWait = time.Millisecond // no daemon starts here
	if _, err := r.Call(context.Background(), "lazy_create", json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("no daemon: %v", err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, link.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(received)
		<-r.Context().Done() // works on until the caller goes away
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-received; cancel() }()
	_, err = r.Call(ctx, "lazy_create", json.RawMessage(`{}`))
	if err == nil || strings.Contains(err.Error(), "not reachable") || !strings.Contains(err.Error(), "lazy_create was cancelled before the daemon answered") || !strings.Contains(err.Error(), "may have been done") {
		t.Fatalf("a cancelled call: %v", err)
	}
}

// A call that changes something runs to its end though its context is
// cancelled (a client that cancels, or closes stdin): it is never cut
// between its steps.
func TestAChangingCallIsNotCutByACancel(t *testing.T) {
	d, store := repoDispatcher(t, testrepo.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_create", json.RawMessage(`{"title":"made though cancelled","request_id":"r-1"}`))
	if err != nil {
		t.Fatalf("a cancelled create: %v", err)
	}
	again, err := d.Call(context.Background(), Caller{Actor: machine.Builder}, "lazy_create", json.RawMessage(`{"title":"made though cancelled","request_id":"r-1"}`))
	if err != nil || string(again) != string(out) {
		t.Fatalf("the retried create: %s, %v; first %s", again, err, out)
	}
	if entries, _ := store.List(); len(entries) != 1 {
		t.Fatalf("%d tasks", len(entries))
	}
}

// An agent's first call can come before the daemon its launch started
// listens: the call waits for it (a dial that failed sent nothing, so
// trying again runs nothing twice), and is answered once it listens. A
// daemon that never comes is said after the wait.
func TestACallWaitsForADaemonThatIsStarting(t *testing.T) {
	dir := t.TempDir()
	r := NewRemote(dir, "token")
	calls := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls++
		_ = json.NewEncoder(w).Encode(CallResponse{Result: json.RawMessage(`{"ok":true}`)})
	})}
	t.Cleanup(func() { _ = srv.Close() })
	go func() {
		time.Sleep(200 * time.Millisecond) // the daemon is still starting when the call is made
		l, err := net.Listen("unix", filepath.Join(dir, link.SocketFile))
		if err != nil {
			t.Error(err)
			return
		}
		_ = srv.Serve(l)
	}()
	out, err := r.Call(context.Background(), "lazy_list", json.RawMessage(`{}`))
	if err != nil || string(out) != `{"ok":true}` {
		t.Fatalf("a call made while the daemon started: %s, %v", out, err)
	}
	if calls != 1 {
		t.Fatalf("the daemon received the call %d times, want once", calls)
	}

	none := NewRemote(t.TempDir(), "token")
	none.DaemonWait = 150 * time.Millisecond
	began := time.Now()
	if _, err := none.Call(context.Background(), "lazy_list", json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("no daemon at all: %v", err)
	}
	if waited := time.Since(began); waited < 150*time.Millisecond {
		t.Fatalf("gave up after %s, before the wait of 150ms", waited)
	}
}

package mcp

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

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

package reconcile

import (
	"context"
	"testing"
)

func TestCloseReleasesTheWatcher(t *testing.T) {
	fx := newFixture(t)
	fx.create(t, 3)

	unused := fx.reconciler()
	if err := unused.Close(); err != nil {
		t.Fatal(err)
	}
	if unused.stamps != nil {
		t.Fatal("closing a reconciler that never passed made a watcher")
	}

	r := fx.reconciler()
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !r.stamper().Watching() {
		t.Skip("no inotify instance to be had here")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.stamper().Watching() {
		t.Fatal("the watcher still watches after Close")
	}
	// A pass after Close still works, by stats, and makes no new watcher.
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.stamper().Watching() {
		t.Fatal("a pass after Close watches again")
	}
	// So does one on the reconciler closed unused.
	if _, err := unused.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if unused.stamper().Watching() {
		t.Fatal("a reconciler closed before its first pass watches")
	}
}

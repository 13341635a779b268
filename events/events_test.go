package events

import (
	"context"
	"testing"
	"time"
)

// TestHubFansOutAndDropsForSlowReaders: every subscriber gets each
// event; one that does not read misses events instead of blocking the
// publisher; a subscriber whose context ends is forgotten.
func TestHubFansOutAndDropsForSlowReaders(t *testing.T) {
	var h Hub
	if h.Watched() {
		t.Fatal("a new hub is watched")
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := h.Subscribe(ctx)
	slow := h.Subscribe(context.Background())
	h.Publish(Event{Phase: &Phase{TaskID: "t", Op: "accept", Step: 1, Of: 2}})
	if ev := <-a; ev.Phase == nil || ev.Phase.TaskID != "t" {
		t.Fatalf("first subscriber got %+v", ev)
	}
	// The slow reader never reads: the publisher must not block on it.
	done := make(chan struct{})
	go func() {
		for range 3 * Buffer {
			h.Publish(Event{Heartbeat: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
	if got := len(slow); got != Buffer {
		t.Fatalf("slow subscriber holds %d events, want its buffer of %d", got, Buffer)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		n := len(h.subs)
		h.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers after one's context ended, want 1", n)
		}
		time.Sleep(time.Millisecond) // polling with a deadline, not waiting for a guess
	}
	if !h.Watched() {
		t.Fatal("a hub with a live subscriber is not watched")
	}
}

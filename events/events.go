// Package events is the daemon's event stream: the shapes of its NDJSON
// lines (heartbeats, reconcile actions, supervisor progress, phases of a
// long operation) and the in-process fan-out that hands each event to
// every subscriber. The daemon publishes; the web view, lazy watch and
// the CLI's progress display read. It sits below all of them, so none
// reaches up into another for a type.
package events

import (
	"context"
	"sync"

	"github.com/lazyorch/lazy/reconcile"
)

// Event is one NDJSON line of the daemon's GET /events.
type Event struct {
	Heartbeat string             `json:"heartbeat,omitempty"`
	Reconcile []reconcile.Action `json:"reconcile,omitempty"`
	Progress  *Progress          `json:"progress,omitempty"`
	Phase     *Phase             `json:"phase,omitempty"`
}

// Phase is one step of a long operation (an accept) narrated by the
// process running it, relayed to every subscriber. Step is 0 for a
// prelude or a note, which have no position in the plan.
type Phase struct {
	TaskID string   `json:"task_id"`
	Op     string   `json:"op"`
	Step   int      `json:"step,omitempty"`
	Of     int      `json:"of,omitempty"`
	Label  string   `json:"label,omitempty"`
	Plan   []string `json:"plan,omitempty"`
}

// Progress is a working task's supervisor state, published when it
// changes.
type Progress struct {
	TaskID   string `json:"task_id"`
	Phase    string `json:"phase"`
	Progress string `json:"progress,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Retry    string `json:"retry,omitempty"` // the retry summary (machine.RetrySummary), while retrying
}

// Buffer is how many events a subscriber may fall behind before it
// misses some.
const Buffer = 16

// Hub fans events out to subscribers. A slow subscriber misses events
// rather than stalling the publisher, so readers treat an event as "look
// again". The zero Hub is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs map[chan Event]bool
}

// Publish hands ev to every subscriber that has room for it.
func (h *Hub) Publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- ev:
		default: // a slow reader misses events rather than stalling the publisher
		}
	}
}

// Subscribe returns the events published from now until ctx ends.
func (h *Hub) Subscribe(ctx context.Context) <-chan Event {
	ch := make(chan Event, Buffer)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan Event]bool{}
	}
	h.subs[ch] = true
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}()
	return ch
}

// Watched reports whether anyone subscribes now.
func (h *Hub) Watched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
)

// session is an observation of a task whose session's latest turn is
// seq, of kind, with turns turns in all.
func session(st machine.Status, turns, seq int, kind string) Observation {
	o := obs(st, 1, turns)
	o.Turn, o.TurnKind = seq, kind
	return o
}

// TestAskIsNotANewPark: a blocked task's turn ended once; asking it a
// question is "asked" while the agent answers and "answered" once it
// did, never another "blocked"; a sync, a chat or a comment after that
// is nothing; the next work turn's end is "blocked" again.
func TestAskIsNotANewPark(t *testing.T) {
	answering := obs(machine.Working, 1, 3)
	answering.Substate = Answering
	failed := session(machine.Blocked, 9, 8, "ask")
	failed.AnswerFailed = true
	steps := []struct {
		o      Observation
		want   Kind
		reason string
	}{
		{o: session(machine.Working, 1, 1, "start")},
		{o: session(machine.Blocked, 2, 1, "start"), want: KindBlocked},
		{o: answering, want: KindAsked, reason: "answers it read-only"},
		{o: session(machine.Blocked, 4, 3, "ask"), want: KindAnswered, reason: "answered a question; the task is still blocked"},
		{o: session(machine.Blocked, 4, 3, "ask")},
		{o: session(machine.Blocked, 5, 3, "ask")}, // a chat added a turn
		{o: session(machine.Blocked, 7, 6, "sync")},
		// An ask the daemon never saw running: its answer, once.
		{o: session(machine.Blocked, 9, 8, "ask"), want: KindAnswered},
		{o: failed}, // the same ask's turn: nothing new
		{o: session(machine.Working, 10, 10, "unblock")},
		{o: session(machine.Blocked, 11, 10, "unblock"), want: KindBlocked},
	}
	var keys map[string]string
	for i, s := range steps {
		var ev *Event
		ev, keys = Derive(keys, s.o, Policy{BreakerAt: 3})
		switch {
		case s.want == "" && ev != nil:
			t.Fatalf("step %d: got %+v, want no event", i, *ev)
		case s.want != "" && (ev == nil || ev.Kind != s.want):
			t.Fatalf("step %d: got %+v, want %s", i, ev, s.want)
		case ev != nil && !strings.Contains(ev.Reason, s.reason):
			t.Fatalf("step %d: reason %q lacks %q", i, ev.Reason, s.reason)
		}
	}

	// An ask that ended in an error: answered, with outcome failed and
	// words that say so; and a conflict keeps being one after an ask.
	ev, _ := Derive(nil, failed, Policy{})
	if ev == nil || ev.Kind != KindAnswered || ev.Outcome != OutcomeFailed || !strings.Contains(ev.Reason, "could not answer") ||
		!strings.Contains(ev.Headline(), "fix-login could not answer a question") || ev.NeedsHuman() {
		t.Fatalf("a failed answer: %+v", ev)
	}
	var k map[string]string
	_, k = Derive(k, session(machine.Conflict, 2, 1, "start"), Policy{})
	if ev, _ := Derive(k, session(machine.Conflict, 4, 3, "ask"), Policy{}); ev == nil || ev.Kind != KindAnswered || ev.Status != machine.Conflict {
		t.Fatalf("an ask on a conflict: %+v", ev)
	}
}

// TestEnablingAnnouncesOnlyWhatFollows: tasks parked, finished or
// interrupted before notifications were turned on are taken as they are,
// by the first pass and by every daemon after it; what changes after is
// announced once. Turned off (Off) and on again, a new baseline.
func TestEnablingAnnouncesOnlyWhatFollows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notify")
	w := newWorld()
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	fin := observation("done", machine.Complete, 4)
	fin.Outcome = "accepted"
	// All of these changed "just now" (after the daemon started), but
	// before notifications were turned on.
	w.set(observation("parked", machine.Blocked, 2), now)
	w.set(fin, now)
	w.set(observation("running", machine.Working, 1), now)
	pass := func(n *Notifier) []Event {
		t.Helper()
		evs, err := n.Pass(w.entries(), Policy{BreakerAt: 3}, nil, w.load)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	clock := func() time.Time { return now }
	n := &Notifier{Dir: dir, Repo: "app", Now: clock}
	if n.Active() {
		t.Fatal("a notifier with no pass is active")
	}
	if evs := pass(n); len(evs) != 0 {
		t.Fatalf("turning notifications on announced %+v", evs)
	}
	if !n.Active() {
		t.Fatal("the baseline pass left the notifier inactive")
	}
	// A daemon restart: the baseline is on disk.
	if evs := pass(&Notifier{Dir: dir, Repo: "app", Now: clock}); len(evs) != 0 {
		t.Fatalf("a restarted daemon announced %+v", evs)
	}
	w.set(observation("running", machine.Blocked, 2), now)
	evs := pass(&Notifier{Dir: dir, Repo: "app", Now: clock})
	if len(evs) != 1 || evs[0].Slug != "task-running" || evs[0].Kind != KindBlocked {
		t.Fatalf("what changed after: %+v", evs)
	}

	// Off forgets; on again, the tasks that parked meanwhile are old news.
	if err := n.Off(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); !os.IsNotExist(err) {
		t.Fatalf("Off left the state: %v", err)
	}
	w.set(observation("parked", machine.Blocked, 4), now) // its next turn ended while off
	if evs := pass(n); len(evs) != 0 {
		t.Fatalf("turned on again: %+v", evs)
	}
	w.set(observation("parked", machine.Blocked, 6), now)
	if evs := pass(n); len(evs) != 1 || evs[0].Slug != "task-parked" {
		t.Fatalf("after the new baseline: %+v", evs)
	}

	// A state of the older format is a baseline too, not a flood.
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"since":"2025-01-01T00:00:00Z","tasks":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if evs := pass(&Notifier{Dir: dir, Repo: "app", Now: clock}); len(evs) != 0 {
		t.Fatalf("an old state announced %+v", evs)
	}
}

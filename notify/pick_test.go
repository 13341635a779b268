package notify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
)

// An attempt group picked by the gate, as notify observes it through the
// inbox's rule (inbox.Service.Notice): its ids, and its attempts'.
const (
	idGroup = "a000000000000000"
	idAt1   = "a000000000000001"
	idAt2   = "a000000000000002"
	idAt3   = "a000000000000003"
)

// parkedAttempt is attempt id parked after turn turns, folded while its
// group's pick is in force.
func parkedAttempt(id string, turns int, folded bool) Observation {
	o := observation(id, machine.Blocked, turns)
	o.Folded = folded
	return o
}

// TestAGroupPickedByTheGateIsOneNotification: while the gate picks, the
// group's three attempts park and page nobody; once the pick is made
// and waits on a human, one event for the group names the proposed
// attempt and the command, on one machine of two sharing a remote; a
// later write to the group is no news, nor are the attempts' parks
// should the pick no longer be in force; lazy.notify.events blocked lets
// the pick through (it stands in for the attempts' blocked events).
func TestAGroupPickedByTheGateIsOneNotification(t *testing.T) {
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	w := newWorld()
	group := observation(idGroup, machine.Backlog, 0)
	group.Slug, group.Title = "fix-login", "Fix the login race"
	w.set(group, clock.Add(-time.Minute))
	remote := map[string]string{}
	a := &Notifier{Dir: filepath.Join(t.TempDir(), "a"), Repo: "myapp", Now: now}
	b := &Notifier{Dir: filepath.Join(t.TempDir(), "b"), Repo: "myapp", Now: now}
	sa, sb := &fakeShared{markers: remote, host: "a"}, &fakeShared{markers: remote, host: "b"}
	only := map[Kind]bool{KindBlocked: true}
	pass := func(n *Notifier, s *fakeShared) []Event {
		t.Helper()
		evs, err := n.Pass(w.entries(), Policy{}, only, w.load)
		if err != nil {
			t.Fatal(err)
		}
		evs, err = n.Once(context.Background(), s, evs)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	pass(a, sa)
	pass(b, sb) // the baselines

	clock = clock.Add(time.Minute)
	for _, id := range []string{idAt1, idAt2, idAt3} {
		w.set(parkedAttempt(id, 2, true), clock)
		if evs := pass(a, sa); len(evs) != 0 {
			t.Fatalf("attempt %s parked while the gate picks: announced %+v", id, evs)
		}
	}
	if evs := pass(b, sb); len(evs) != 0 || len(remote) != 0 {
		t.Fatalf("the other machine announced %+v (markers %v) while the gate picks", evs, remote)
	}

	clock = clock.Add(time.Minute)
	group.Pick = &PickNotice{DecidedAt: clock, Attempt: 2, Of: 3, Proposed: "fix-login-2", Command: "lazy accept fix-login-2"}
	w.set(group, clock)
	evs := pass(a, sa)
	if len(evs) != 1 {
		t.Fatalf("the pick was made: announced %+v, want one event", evs)
	}
	ev := evs[0]
	if ev.Kind != KindPick || ev.TaskID != idGroup || ev.Slug != "fix-login" || ev.Proposed != "fix-login-2" || ev.Command != "lazy accept fix-login-2" || !ev.NeedsHuman() {
		t.Fatalf("the pick's event %+v", ev)
	}
	if got, want := ev.Headline(), "lazy (myapp): fix-login: the gate proposes fix-login-2"; got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	want := "the gate proposes attempt 2 of 3 (fix-login-2); accept it, or compare them (lazy show fix-login) and choose another\nFix the login race\nlazy accept fix-login-2"
	if got := ev.Text(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	if evs := pass(b, sb); len(evs) != 0 {
		t.Fatalf("the second machine announced the pick again: %+v", evs)
	}

	// A later write to the group (a comment) is no news; neither are the
	// attempts' parks once the pick is no longer in force.
	clock = clock.Add(time.Minute)
	w.set(group, clock)
	for _, id := range []string{idAt1, idAt2, idAt3} {
		w.set(parkedAttempt(id, 2, false), clock)
	}
	if evs := pass(a, sa); len(evs) != 0 {
		t.Fatalf("announced %+v after the pick", evs)
	}
	// An attempt's next park, with no pick in force, is news as before.
	w.set(parkedAttempt(idAt3, 4, false), clock)
	if evs := pass(a, sa); len(evs) != 1 || evs[0].Kind != KindBlocked || evs[0].TaskID != idAt3 {
		t.Fatalf("an attempt's own park with no pick in force: %+v", evs)
	}
	// lazy.notify.events naming only gate_failed keeps the pick back.
	if wanted(map[Kind]bool{KindGateFailed: true}, KindPick) || !wanted(map[Kind]bool{KindPick: true}, KindPick) {
		t.Error("lazy.notify.events: a pick passes only for pick or blocked")
	}
}

// TestAPickNoticeSaysOnlyLazysWords: a pick that proposes nothing, or
// names an attempt that no longer waits, or did not land by itself, is
// said in lazy's words, with the command that compares the attempts.
func TestAPickNoticeSaysOnlyLazysWords(t *testing.T) {
	for _, c := range []struct {
		p    PickNotice
		want []string
	}{
		{PickNotice{Of: 3, Command: "lazy show g"}, []string{"the gate picked none of the 3 attempts", "lazy show g"}},
		{PickNotice{Attempt: 2, Of: 3, Command: "lazy show g"}, []string{"names attempt 2, which no longer waits for review", "lazy show g"}},
		{PickNotice{Attempt: 1, Of: 2, Proposed: "g-1", Command: "lazy accept g-1", LandFailed: true}, []string{"proposes attempt 1 of 2 (g-1)", "did not land by itself (lazy show g says why)"}},
	} {
		o := observation(idGroup, machine.Backlog, 0)
		o.Slug, o.Pick = "g", &c.p
		ev, _ := Derive(nil, o, Policy{})
		if ev == nil || ev.Kind != KindPick {
			t.Fatalf("%+v: no pick event", c.p)
		}
		for _, w := range c.want {
			if !strings.Contains(ev.Text(), w) {
				t.Errorf("%+v: the text %q lacks %q", c.p, ev.Text(), w)
			}
		}
		if c.p.Proposed == "" && ev.Headline() != "lazy (): g: the gate's pick waits for you" {
			t.Errorf("headline %q", ev.Headline())
		}
	}
}

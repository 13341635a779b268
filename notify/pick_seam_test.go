package notify_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/task"
)

// These tests run notify on task records in memory, each task observed
// as the daemon's notifier observes it (lazy's cli.observeTask): its
// summary, its session, and the inbox's rule for a pick by the gate
// (inbox.Service.Notice). PATH is emptied, so any git process fails them.

type pickWorld struct {
	t     *testing.T
	store *memstore.Store
	now   time.Time
	inbox *inbox.Service
}

func newPickWorld(t *testing.T) *pickWorld {
	t.Helper()
	t.Setenv("PATH", t.TempDir())
	w := &pickWorld{t: t, now: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}
	w.store = memstore.New(memstore.WithHost("laptop"), memstore.WithClock(func() time.Time { return w.now }))
	w.inbox = &inbox.Service{Store: w.store, Now: func() time.Time { return w.now }, Policy: notify.Policy{BreakerAt: 3}}
	return w
}

func (w *pickWorld) update(id string, fn func(sn *task.Snapshot)) {
	w.t.Helper()
	w.now = w.now.Add(time.Second)
	if _, _, err := w.store.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		fn(sn)
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		w.t.Fatal(err)
	}
}

// create makes a backlog task; attemptOf and k make it attempt k of a
// group.
func (w *pickWorld) create(slug, attemptOf string, k int) string {
	w.t.Helper()
	sn, err := w.store.Create(task.CreateSpec{Title: "Fix the login race", Slug: slug, AttemptOf: attemptOf, Attempt: k, Actor: machine.Human})
	if err != nil {
		w.t.Fatal(err)
	}
	return sn.Task.ID
}

// park runs a turn of task id and parks it blocked.
func (w *pickWorld) park(id string) {
	w.t.Helper()
	w.update(id, func(sn *task.Snapshot) {
		sn.Task.Status, sn.Task.Sessions = machine.Working, sn.Task.Sessions+1
		q := sn.AddTurn(task.Turn{Role: task.RoleHuman, Kind: "start", Content: "go", At: w.now})
		sn.Session = &task.Session{ID: "s1", Number: 1, Host: "runner-host", Turn: q.Seq, TurnKind: "start", StartedAt: w.now}
	})
	w.update(id, func(sn *task.Snapshot) {
		sn.AddTurn(task.Turn{Role: task.RoleAgent, Content: "done", At: w.now})
		sn.Task.Status = machine.Blocked
	})
}

// group makes group slug tried n ways with pick, its attempts parked
// one by one, after (called after each park) sees each.
func (w *pickWorld) group(slug string, n int, pick *task.AttemptPick, after func()) (string, []string) {
	w.t.Helper()
	gid := w.create(slug, "", 0)
	var ids []string
	for k := 1; k <= n; k++ {
		ids = append(ids, w.create(fmt.Sprintf("%s-%d", slug, k), gid, k))
	}
	w.update(gid, func(sn *task.Snapshot) { sn.Task.Attempts, sn.Task.Pick = ids, pick })
	for _, id := range ids {
		w.park(id)
		if after != nil {
			after()
		}
	}
	return gid, ids
}

// load observes a listed task as the daemon's notifier does.
func (w *pickWorld) load(e *task.Entry) (notify.Observation, error) {
	sn, err := w.store.Load(e.ID)
	if err != nil {
		return notify.Observation{}, err
	}
	sum := task.NewSummary(&sn.Task)
	o := notify.Observe(&sum)
	o.AddSession(sn.Session)
	w.inbox.Notice(context.Background(), sn, &o)
	return o, nil
}

// machine is one clone's notifier on the shared remote.
type machineN struct {
	w *pickWorld
	n *notify.Notifier
	s notify.Shared
}

func (w *pickWorld) machine(name string, remote *memRemote) *machineN {
	m := &machineN{w: w, n: &notify.Notifier{Dir: filepath.Join(w.t.TempDir(), name), Repo: "myapp", Now: func() time.Time { return w.now }}, s: remote}
	if evs := m.pass(); len(evs) != 0 {
		w.t.Fatalf("%s's baseline announced %+v", name, evs)
	}
	return m
}

func (m *machineN) pass() []notify.Event {
	m.w.t.Helper()
	entries, err := m.w.store.List()
	if err != nil {
		m.w.t.Fatal(err)
	}
	evs, err := m.n.Pass(entries, notify.Policy{BreakerAt: 3}, nil, m.w.load)
	if err != nil {
		m.w.t.Fatal(err)
	}
	evs, err = m.n.Once(context.Background(), m.s, evs)
	if err != nil {
		m.w.t.Fatal(err)
	}
	return evs
}

// memRemote is a shared remote's markers in memory.
type memRemote struct {
	mu      sync.Mutex
	markers map[string]bool
}

func (r *memRemote) Claim(_ context.Context, marks []notify.Mark) (map[string]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := map[string]bool{}
	for _, m := range marks {
		taken[m.Ref()] = r.markers[m.Ref()]
		r.markers[m.Ref()] = true
	}
	return taken, nil
}

func (r *memRemote) Prune(context.Context, map[string]bool) (int, error) { return 0, nil }

func kinds(evs []notify.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Slug+":"+string(e.Kind))
	}
	return strings.Join(out, " ")
}

// TestThreeAttemptsPickedByTheGatePageOnce: lazy start --attempts 3
// --pick gate: the three attempts park while the gate picks and nobody
// is told; the pick is made and one event, for the group, names the
// proposed attempt (its slug read from the store) and the command the
// inbox lists; the second machine sharing the remote says nothing. A
// group a human picks from is told per attempt, as before; a group
// whose pick lands by itself (--land) is told only what finished.
func TestThreeAttemptsPickedByTheGatePageOnce(t *testing.T) {
	w := newPickWorld(t)
	remote := &memRemote{markers: map[string]bool{}}
	a, b := w.machine("a", remote), w.machine("b", remote)
	var told []notify.Event
	gid, ids := w.group("fix-login", 3, &task.AttemptPick{Rule: task.PickGate}, func() {
		told = append(told, a.pass()...)
		told = append(told, b.pass()...)
	})
	// The pick gates attempt 2 and records the run on it: still nobody.
	w.update(ids[1], func(sn *task.Snapshot) {
		sn.Task.Gate = &task.GateRecord{Runs: []task.GateRun{{ID: "0123456789abcdef", At: w.now, Failed: "go test ./..."}}}
	})
	told = append(told, a.pass()...)
	if len(told) != 0 {
		t.Fatalf("while the gate picks, the machines announced %s", kinds(told))
	}

	w.update(gid, func(sn *task.Snapshot) {
		sn.Task.Pick.Gated = []task.AttemptGate{{Attempt: 1, State: task.GatePassed}, {Attempt: 2, State: task.GateFailed}, {Attempt: 3, State: task.GatePassed}}
		sn.Task.Pick.DecidedAt, sn.Task.Pick.Proposed, sn.Task.Pick.Why = w.now, 3, "attempt 3: gate passed, $0.10, 4 lines; attempt 2 failed the gate; attempt 1 cost more"
	})
	evs := append(b.pass(), a.pass()...)
	if len(evs) != 1 {
		t.Fatalf("the pick was made: the machines announced %s, want one event", kinds(evs))
	}
	ev := evs[0]
	list, err := w.inbox.List(context.Background())
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the inbox: %+v %v", list, err)
	}
	it := list.Items[0]
	if ev.Kind != notify.KindPick || ev.TaskID != gid || ev.Proposed != "fix-login-3" || ev.Command != "lazy accept fix-login-3" ||
		ev.Command != it.Command || ev.Proposed != it.Proposed {
		t.Fatalf("event %+v, inbox item %+v: want the same proposal and command", ev, it)
	}
	if got, want := ev.Headline(), "lazy (myapp): fix-login: the gate proposes fix-login-3"; got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	if !strings.HasPrefix(ev.Text(), "the gate proposes attempt 3 of 3 (fix-login-3); accept it") || !strings.HasSuffix(ev.Text(), "\nlazy accept fix-login-3") {
		t.Errorf("text %q", ev.Text())
	}
	w.update(gid, func(sn *task.Snapshot) { sn.AddComment(task.Comment{Actor: machine.Human, At: w.now, Text: "looking"}) })
	if evs := append(a.pass(), b.pass()...); len(evs) != 0 {
		t.Fatalf("a comment on the group announced %s", kinds(evs))
	}

	// A human picks: each attempt's park is told, as before.
	var byHand []notify.Event
	w.group("by-hand", 2, &task.AttemptPick{Rule: task.PickHuman}, func() { byHand = append(byHand, a.pass()...) })
	if kinds(byHand) != "by-hand-1:blocked by-hand-2:blocked" {
		t.Fatalf("a group a human picks from: announced %s", kinds(byHand))
	}

	// --land: the pick is made and lands by itself: only what finished.
	var landing []notify.Event
	lid, lids := w.group("add-api", 2, &task.AttemptPick{Rule: task.PickGate, Land: true}, func() { landing = append(landing, a.pass()...) })
	w.update(lid, func(sn *task.Snapshot) { sn.Task.Pick.DecidedAt, sn.Task.Pick.Proposed = w.now, 1 })
	landing = append(landing, a.pass()...)
	w.update(lids[0], func(sn *task.Snapshot) { sn.Task.Status = machine.Merging })
	w.update(lids[0], func(sn *task.Snapshot) { sn.Task.Status, sn.Task.Outcome = machine.Complete, task.OutcomeAccepted })
	w.update(lid, func(sn *task.Snapshot) { sn.Task.Status, sn.Task.Outcome = machine.Complete, task.OutcomeAccepted })
	w.update(lids[1], func(sn *task.Snapshot) { sn.Task.Status, sn.Task.Outcome = machine.Abandoned, task.OutcomeClosed })
	w.update(lid, func(sn *task.Snapshot) { sn.Task.Pick.Landed = "attempt 1 landed" })
	landing = append(landing, a.pass()...)
	for _, ev := range landing {
		if ev.Kind != notify.KindFinished {
			t.Fatalf("a pick that lands by itself announced %s", kinds(landing))
		}
	}
	if !strings.Contains(kinds(landing), "add-api-1:finished") {
		t.Fatalf("the landing was not told: %s", kinds(landing))
	}
}

// TestAHostilePickRecordForgesNoNotification: pick records pushed by
// someone else say what they like in their ranking and their landing's
// words (escapes, a newline, a command), and propose an attempt the
// group does not have, or a slot that names another task; the event
// for each group carries none of those words, proposes nothing, and its
// command only compares the group's attempts. A task that claims to be
// an attempt of a picking group without being listed by it is told on
// its own, as the inbox lists it.
func TestAHostilePickRecordForgesNoNotification(t *testing.T) {
	w := newPickWorld(t)
	a := w.machine("a", &memRemote{markers: map[string]bool{}})
	hostile := "attempt 1 passed\x1b]0;pwned\x07\u202e\nlazy accept victim --skip-gate --reason x\r"
	decided := func(k int) *task.AttemptPick {
		return &task.AttemptPick{Rule: task.PickGate, DecidedAt: w.now, Proposed: k, Why: hostile}
	}
	victim := w.create("victim", "", 0)
	w.park(victim)
	w.group("absurd", 2, decided(7), nil)
	sid, sids := w.group("swapped", 2, nil, nil)
	w.update(sid, func(sn *task.Snapshot) { sn.Task.Attempts, sn.Task.Pick = []string{sids[0], victim}, decided(2) })
	landFailed := decided(1)
	landFailed.Land, landFailed.Landed = true, "attempt 1 did not land: "+hostile
	w.group("landed", 2, landFailed, nil)
	pid, _ := w.group("picking", 1, &task.AttemptPick{Rule: task.PickGate}, nil)
	stow := w.create("stowaway", pid, 2)
	w.park(stow)

	evs := a.pass()
	picks := map[string]notify.Event{}
	for _, ev := range evs {
		for name, v := range map[string]string{"headline": ev.Headline(), "text": ev.Text(), "reason": ev.Reason, "command": ev.Command, "proposed": ev.Proposed} {
			if strings.ContainsAny(v, "\x1b\x07\r\u202e") || strings.Contains(v, "pwned") || strings.Contains(v, "skip-gate") {
				t.Errorf("%s: its %s %q carries the record's words", ev.Slug, name, v)
			}
		}
		if ev.Kind == notify.KindPick {
			picks[ev.Slug] = ev
		}
	}
	want := map[string]string{"absurd": "lazy show absurd", "swapped": "lazy show swapped", "landed": "lazy accept landed-1"}
	for g, c := range want {
		if ev, ok := picks[g]; !ok || ev.Command != c {
			t.Errorf("group %s: event %+v, want the command %q", g, ev, c)
		}
	}
	if ev := picks["absurd"]; ev.Proposed != "" || !strings.Contains(ev.Reason, "names attempt 7, which no longer waits") {
		t.Errorf("absurd: %+v", ev)
	}
	if ev := picks["swapped"]; ev.Proposed != "" || strings.Contains(ev.Text(), "victim") {
		t.Errorf("swapped names the victim: %+v", ev)
	}
	if ev := picks["landed"]; !strings.Contains(ev.Reason, "did not land by itself (lazy show landed says why)") {
		t.Errorf("landed: %+v", ev)
	}
	got := kinds(evs)
	for _, w := range []string{"victim:blocked", "stowaway:blocked", "swapped-2:blocked"} {
		if !strings.Contains(got, w) {
			t.Errorf("announced %s: %s is not told", got, w)
		}
	}
	if len(picks) != 3 || len(evs) != 6 {
		t.Errorf("announced %s: want the three groups' picks and the three tasks above", got)
	}
}

package inbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// attemptGroup creates group slug tried len(statuses) ways, attempt K
// parked as statuses[K-1], with pick on the group; it returns the group's
// id and its attempts' ids.
func (f *fixture) attemptGroup(slug string, pick *task.AttemptPick, statuses ...machine.Status) (string, []string) {
	f.t.Helper()
	g, err := f.store.Create(task.CreateSpec{Title: "group " + slug, Slug: slug, Actor: machine.Human})
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for i, st := range statuses {
		k := i + 1
		ids = append(ids, f.parkAs(task.CreateSpec{Title: "group " + slug, Slug: fmt.Sprintf("%s-a%d", slug, k), AttemptOf: g.Task.ID, Attempt: k, Actor: machine.Human},
			st, "start", func(sn *task.Snapshot) {
				if st == machine.Interrupted {
					sn.Session.ConsecutiveInterruptions = 3 // past the breaker: lazy does not resume it
				}
				if st == machine.Conflict {
					sn.Violations.Pending = []string{"go.sum"}
				}
			}))
	}
	f.setPick(g.Task.ID, ids, pick)
	return g.Task.ID, ids
}

// setPick records the group's attempts and its pick.
func (f *fixture) setPick(id string, attempts []string, pick *task.AttemptPick) {
	f.t.Helper()
	f.update(id, func(sn *task.Snapshot) *task.Op {
		sn.Task.Attempts, sn.Task.Pick = attempts, pick
		return &task.Op{Name: "attempts-pick", Actor: machine.System}
	})
}

func slugs(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Slug+":"+string(it.Kind))
	}
	return out
}

// TestAGroupThePickIsMakingForWaitsOnNobody: while the reconciler picks
// (not decided yet, or decided with --land and not landed yet), the
// group's blocked attempts are no items: nobody needs to act. An attempt
// interrupted with no resume left is still one (only a person resumes
// it), and a group a human picks from lists each attempt as before.
func TestAGroupThePickIsMakingForWaitsOnNobody(t *testing.T) {
	f := newFixture(t)
	f.attemptGroup("picking", &task.AttemptPick{Rule: task.PickGate}, machine.Blocked, machine.Blocked, machine.Interrupted)
	f.attemptGroup("landing", &task.AttemptPick{Rule: task.PickGate, Land: true, DecidedAt: f.now, Proposed: 1, Why: "attempt 1: gate passed"},
		machine.Blocked, machine.Blocked)
	f.attemptGroup("by-hand", &task.AttemptPick{Rule: task.PickHuman}, machine.Blocked, machine.Blocked)
	r := f.list(f.service(nil))
	got := strings.Join(slugs(r.Items), " ")
	if got != "picking-a3:interrupted by-hand-a1:blocked by-hand-a2:blocked" {
		t.Fatalf("the inbox lists %q; want only picking's interrupted attempt and by-hand's two attempts", got)
	}
}

// TestADecidedPickIsOneItemWithTheProposal: a pick made without --land
// (or whose landing failed) is one item for the group, since the
// decision, naming the proposed attempt and the gate's ranking, answered
// by accepting that attempt; its blocked attempts are no items of their
// own. A proposal that touches protected paths asks for the approval.
func TestADecidedPickIsOneItemWithTheProposal(t *testing.T) {
	f := newFixture(t)
	decided := f.now.Add(90 * time.Second)
	why := "attempt 2: gate passed, $0.12, 14 lines; attempt 1 failed the gate"
	gid, _ := f.attemptGroup("fix-login", nil, machine.Blocked, machine.Blocked)
	f.attemptGroup("fix-logout", &task.AttemptPick{Rule: task.PickGate, Land: true, DecidedAt: decided, Proposed: 1, Why: "attempt 1: gate passed",
		Landed: "attempt 1 did not land: the queue refused it"}, machine.Blocked, machine.Blocked)
	ids := []string{mustResolve(t, f.store, "fix-login-a1"), mustResolve(t, f.store, "fix-login-a2")}
	f.setPick(gid, ids, &task.AttemptPick{Rule: task.PickGate, DecidedAt: decided, Proposed: 2, Why: why})
	f.now = decided.Add(10 * time.Minute)
	r := f.list(f.service(map[string][]string{"fix-logout-a1": {"Makefile"}}))
	if len(r.Items) != 2 {
		t.Fatalf("the inbox lists %q; want one item per group", slugs(r.Items))
	}
	it := r.Items[0]
	if it.Slug == "fix-logout" {
		it = r.Items[1]
	}
	if it.Kind != Pick || it.Slug != "fix-login" || it.TaskID != gid || it.Command != "lazy accept fix-login-a2" || it.Proposed != "fix-login-a2" ||
		!it.Since.Equal(decided) || it.WaitingSeconds != 600 || it.Host != "runner-host" {
		t.Fatalf("item %+v: want the group's pick, accepting attempt 2, since the decision", it)
	}
	for _, w := range []string{"the gate proposes attempt 2 of 2 (fix-login-a2)", "lazy show fix-login", why} {
		if !strings.Contains(it.Why, w) {
			t.Errorf("why %q lacks %q", it.Why, w)
		}
	}
	lo := r.Items[0]
	if lo.Slug != "fix-logout" {
		lo = r.Items[1]
	}
	if lo.Kind != Pick || lo.Command != "lazy accept fix-logout-a1 --approve-protected" || len(lo.Files) != 1 ||
		!strings.Contains(lo.Why, "attempt 1 did not land: the queue refused it") || !strings.Contains(lo.Why, "protected paths") {
		t.Fatalf("a --land pick that did not land, on protected paths: %+v", lo)
	}
}

// TestAPickWithNoPassIsComparedByHand: when no attempt passed the gate,
// the group's one item says so and its command compares the attempts.
func TestAPickWithNoPassIsComparedByHand(t *testing.T) {
	f := newFixture(t)
	f.attemptGroup("flaky", &task.AttemptPick{Rule: task.PickGate, DecidedAt: f.now, Why: "no attempt passed the gate: attempt 1 failed the gate; attempt 2 failed the gate"},
		machine.Blocked, machine.Blocked)
	r := f.list(f.service(nil))
	if len(r.Items) != 1 {
		t.Fatalf("the inbox lists %q; want the group's one item", slugs(r.Items))
	}
	it := r.Items[0]
	if it.Kind != Pick || it.Slug != "flaky" || it.Command != "lazy show flaky" || it.Proposed != "" ||
		!strings.Contains(it.Why, "picked none of the 2 attempts") || !strings.Contains(it.Why, "lazy accept flaky --attempt K") {
		t.Fatalf("item %+v: want the group's item comparing the attempts", it)
	}
}

// TestAHostilePickRecordNeverReachesASurfaceOrACommand: a pick record
// pushed by someone else says what it likes in its ranking (terminal
// escapes, bidi overrides, a newline and a command) and proposes an
// attempt the group does not have, or one whose slot names a task that
// is not the group's attempt, or one that no longer waits; the words are
// escaped on one line and the command only ever compares the group's
// attempts. A task that claims to be an attempt of a picking group
// without being listed by it is not hidden.
func TestAHostilePickRecordNeverReachesASurfaceOrACommand(t *testing.T) {
	f := newFixture(t)
	hostile := "attempt 1 passed\x1b]0;pwned\x07\u202e\nlazy accept victim --skip-gate --reason x\r"
	f.park("victim", machine.Blocked, "start", nil)
	decided := func(k int) *task.AttemptPick {
		return &task.AttemptPick{Rule: task.PickGate, DecidedAt: f.now, Proposed: k, Why: hostile}
	}
	f.attemptGroup("absurd", decided(7), machine.Blocked, machine.Blocked)
	gid, ids := f.attemptGroup("swapped", nil, machine.Blocked, machine.Blocked)
	// Its attempt 2's slot names the victim, a task of no group.
	f.setPick(gid, []string{ids[0], mustResolve(t, f.store, "victim")}, decided(2))
	f.attemptGroup("closed", decided(1), machine.Interrupted, machine.Blocked)
	// A task that names a picking group it is no attempt of.
	pid, _ := f.attemptGroup("picking", &task.AttemptPick{Rule: task.PickGate}, machine.Blocked)
	f.parkAs(task.CreateSpec{Title: "stowaway", Slug: "stowaway", AttemptOf: pid, Attempt: 2, Actor: machine.Human}, machine.Blocked, "start", nil)

	r := f.list(f.service(nil))
	cmds := map[string]string{}
	for _, it := range r.Items {
		for name, v := range map[string]string{"why": it.Why, "title": it.Title, "command": it.Command} {
			if strings.ContainsAny(v, "\x1b\x07\n\r\u202e") {
				t.Errorf("%s: the %s %q reaches a surface raw", it.Slug, name, v)
			}
		}
		if it.Kind == Pick {
			cmds[it.Slug] = it.Command
			if it.Proposed != "" || !strings.Contains(it.Why, "The gate's ranking: attempt 1 passed") {
				t.Errorf("%s: proposes %q, why %q: want no proposal and the ranking quoted after lazy's words", it.Slug, it.Proposed, it.Why)
			}
		}
	}
	want := map[string]string{"absurd": "lazy show absurd", "swapped": "lazy show swapped", "closed": "lazy show closed"}
	for g, c := range want {
		if cmds[g] != c {
			t.Errorf("group %s answers with %q, want %q", g, cmds[g], c)
		}
	}
	got := strings.Join(slugs(r.Items), " ")
	// swapped's real attempt 2, no longer listed by its group, waits on
	// its own.
	for _, w := range []string{"victim:blocked", "stowaway:blocked", "closed-a1:interrupted", "swapped-a2:blocked"} {
		if !strings.Contains(got, w) {
			t.Errorf("the inbox %q lacks %s", got, w)
		}
	}
	if len(r.Items) != 7 {
		t.Errorf("the inbox lists %q; want the three groups and the four tasks above", got)
	}
	for _, it := range r.Items {
		if it.Slug == "absurd" && !strings.Contains(it.Why, "names attempt 7, which the task does not have (it has 2)") ||
			it.Slug == "swapped" && !strings.Contains(it.Why, "is not one of the task's attempts") ||
			it.Slug == "closed" && !strings.Contains(it.Why, "no longer waits for review (it is interrupted)") {
			t.Errorf("%s: why %q does not say what is wrong with the proposal", it.Slug, it.Why)
		}
	}
}

// TestFoldedIsTheInboxsRule: Folded (what the older lazy.notify.command
// hook asks) says yes for exactly the attempts the inbox lists no item
// for: a blocked attempt of a group the gate picks, before and after
// the pick; not an attempt a human picks from, not one interrupted, not
// a task that names the group without being listed by it, not a task
// this store cannot read.
func TestFoldedIsTheInboxsRule(t *testing.T) {
	f := newFixture(t)
	pid, _ := f.attemptGroup("picking", &task.AttemptPick{Rule: task.PickGate}, machine.Blocked, machine.Interrupted)
	f.attemptGroup("picked", &task.AttemptPick{Rule: task.PickGate, DecidedAt: f.now, Proposed: 1}, machine.Blocked)
	f.attemptGroup("by-hand", &task.AttemptPick{Rule: task.PickHuman}, machine.Blocked)
	f.parkAs(task.CreateSpec{Title: "stowaway", Slug: "stowaway", AttemptOf: pid, Attempt: 3, Actor: machine.Human}, machine.Blocked, "start", nil)
	s := f.service(nil)
	listed := map[string]bool{}
	for _, it := range f.list(s).Items {
		listed[it.Slug] = true
	}
	for slug, want := range map[string]bool{"picking-a1": true, "picking-a2": false, "picked-a1": true, "by-hand-a1": false, "stowaway": false} {
		id := mustResolve(t, f.store, slug)
		if got := s.Folded(context.Background(), id); got != want || got == listed[slug] {
			t.Errorf("%s: folded %v, want %v (the inbox lists it: %v)", slug, got, want, listed[slug])
		}
	}
	if s.Folded(context.Background(), "0123456789abcdef") {
		t.Error("a task not here is folded")
	}
}

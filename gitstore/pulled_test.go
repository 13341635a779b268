package gitstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// move applies one status change as lazy would (the store validates it).
func move(t *testing.T, s *Store, id string, actor machine.Actor, name string, fn func(sn *task.Snapshot)) {
	t.Helper()
	if _, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		fn(sn)
		return &task.Op{Name: name, Actor: actor}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// ownedBlockedTask makes, on a, a blocked task whose session a runs, on a
// branch with a commit main does not have, and publishes it to b.
func ownedBlockedTask(t *testing.T, a, b *Store) *task.Snapshot {
	t.Helper()
	sn := mustCreate(t, a, "victim work")
	id, branch := sn.Task.ID, "lazy/"+sn.Task.Slug
	dir := a.repo.WorkTree
	testrepo.Git(t, dir, "checkout", "-q", "-b", branch)
	testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "agent work")
	testrepo.Git(t, dir, "checkout", "-q", "main")
	sess := &task.Session{ID: "00000000000000a1", Number: 1, Host: a.Host(), Agent: "exec", Branch: branch, Worktree: dir, StartedAt: time.Now().UTC()}
	if err := owned.For(a.repo.LazyDir()).Save(owned.Session{TaskID: id, SessionID: sess.ID, Agent: "exec", Worktree: dir, Branch: branch}); err != nil {
		t.Fatal(err)
	}
	move(t, a, id, machine.Human, "start", func(s *task.Snapshot) { s.Task.Status, s.Session = machine.Working, sess })
	move(t, a, id, machine.System, "turn-completed", func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	mustPush(t, a)
	mustPull(t, b)
	return sn
}

func refusedOf(t *testing.T, rep *SyncReport, slug string) task.Refused {
	t.Helper()
	for _, r := range rep.Refused {
		if r.Task == slug && r.KeptLocal {
			return r
		}
	}
	t.Fatalf("no refusal of %s in %+v (fast-forwarded %v, merged %v)", slug, rep.Refused, rep.FastForwarded, rep.Merged)
	return task.Refused{}
}

// TestPulledCompletionWithoutMergeIsRefused: each step is a transition
// the state machine allows (blocked -> merging -> complete), so only the
// check against this machine's branches catches it: the task's branch is
// here and its target has no trace of it.
func TestPulledCompletionWithoutMergeIsRefused(t *testing.T) {
	t.Parallel()
	a, b := twoClones(t)
	sn := ownedBlockedTask(t, a, b)
	id := sn.Task.ID
	before := refs(t, a)[TaskRef(id)]
	intoSHA := testrepo.Git(t, a.repo.WorkTree, "rev-parse", "main")
	move(t, b, id, machine.Human, "accept", func(s *task.Snapshot) {
		s.Task.Status = machine.Merging
		s.Task.Accept = &task.AcceptRecord{From: machine.Blocked, Into: "main", IntoSHA: intoSHA, Host: b.Host()}
	})
	move(t, b, id, machine.Human, "accept", func(s *task.Snapshot) {
		s.Task.Status, s.Task.Outcome, s.Task.Accept = machine.Complete, task.OutcomeAccepted, nil
	})
	mustPush(t, b)

	rep := mustPull(t, a)
	if r := refusedOf(t, rep, sn.Task.Slug); !strings.Contains(r.Reason, "nothing was merged") {
		t.Fatalf("reason: %q", r.Reason)
	}
	if got := refs(t, a)[TaskRef(id)]; got != before {
		t.Fatal("the refused change moved the local ref")
	}
	cur, err := a.Load(id)
	if err != nil || cur.Task.Status != machine.Blocked {
		t.Fatalf("after the pull: %v %v", cur.Task.Status, err)
	}
	if ok, why := a.Provenance().VerifyAccepted(context.Background(), &task.Snapshot{Task: task.Task{ID: id, TargetBranch: "main"}, Commit: cur.Commit}, "lazy/"+sn.Task.Slug); ok || why == "" {
		t.Fatalf("VerifyAccepted of an unmerged branch: %v %q", ok, why)
	}
}

// TestPulledTurnOfMySessionIsRefused: another machine cannot start a
// turn of a session this machine runs.
func TestPulledTurnOfMySessionIsRefused(t *testing.T) {
	t.Parallel()
	a, b := twoClones(t)
	sn := ownedBlockedTask(t, a, b)
	move(t, b, sn.Task.ID, machine.Human, "unblock", func(s *task.Snapshot) { s.Task.Status = machine.Working })
	mustPush(t, b)
	rep := mustPull(t, a)
	if r := refusedOf(t, rep, sn.Task.Slug); !strings.Contains(r.Reason, "started no such turn") {
		t.Fatalf("reason: %q", r.Reason)
	}
	// A change this machine can take in still arrives: a close (its
	// worktree is then kept until this machine confirms it, see doctor).
	move(t, b, sn.Task.ID, machine.Human, "comment", func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	move(t, b, sn.Task.ID, machine.Human, "close", func(s *task.Snapshot) { s.Task.Status, s.Task.Outcome = machine.Abandoned, task.OutcomeClosed })
	mustPush(t, b)
	rep = mustPull(t, a)
	if len(rep.FastForwarded) != 1 {
		t.Fatalf("the close did not arrive: %+v", rep)
	}
	cur, err := a.Load(sn.Task.ID)
	if err != nil || cur.Task.Status != machine.Abandoned || a.Provenance().StatusMadeHere(cur) {
		t.Fatalf("after the close: %v, made here %v, %v", cur.Task.Status, a.Provenance().StatusMadeHere(cur), err)
	}
	move(t, a, sn.Task.ID, machine.Human, "reopen", func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	move(t, a, sn.Task.ID, machine.Human, "close", func(s *task.Snapshot) { s.Task.Status = machine.Abandoned })
	if cur, _ = a.Load(sn.Task.ID); !a.Provenance().StatusMadeHere(cur) {
		t.Fatal("a close made here does not count as made here")
	}
}

// TestReplayRefusesATransitionTheMachineForbids: a merge of two
// histories replays the remote's operations through the state machine,
// so a blocked -> complete written with plumbing stays out of the result.
func TestReplayRefusesATransitionTheMachineForbids(t *testing.T) {
	base := &fullSnapshot{Snapshot: &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "x", Status: machine.Blocked}}}
	patches := []opPatch{{op: task.Op{Name: "accept", Actor: machine.Human, From: machine.Blocked, To: machine.Complete, Clock: 5, Host: "evil"},
		status: true, task: map[string]json.RawMessage{}}}
	m, refused := replay(base, patches)
	if m.status != machine.Blocked || len(refused) != 1 || !strings.Contains(refused[0].Reason, "lazy accept") {
		t.Fatalf("replayed to %s, refused %+v", m.status, refused)
	}
}

// TestPulledTakeOverByAnotherHostArrives: a take-over on another machine
// gives the task a session of that host; its turn is that host's, so the
// change arrives.
func TestPulledTakeOverByAnotherHostArrives(t *testing.T) {
	t.Parallel()
	a, b := twoClones(t)
	sn := ownedBlockedTask(t, a, b)
	move(t, b, sn.Task.ID, machine.Human, "take-over", func(s *task.Snapshot) {
		s.Task.Status = machine.Working
		s.Session = &task.Session{ID: "00000000000000b2", Number: 2, Host: b.Host(), Agent: "exec", Branch: "lazy/" + s.Task.Slug, Worktree: b.repo.WorkTree, StartedAt: time.Now().UTC()}
	})
	mustPush(t, b)
	if rep := mustPull(t, a); len(rep.FastForwarded) != 1 || len(rep.Refused) != 0 {
		t.Fatalf("the take-over did not arrive: %+v", rep)
	}
}

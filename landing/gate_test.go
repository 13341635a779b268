package landing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// gateRepo is a repository with a main checkout and blocked tasks of
// this machine, each with a branch that commits some files.
type gateRepo struct {
	e   *Service
	dir string
}

func newGateRepo(t *testing.T, gate ...string) *gateRepo {
	t.Helper()
	e := env(t)
	dir := filepath.Dir(e.Repo.CommonDir)
	e.RepoDir = dir
	for _, g := range gate {
		testrepo.Git(t, dir, "config", "--add", "lazy.gate", g)
	}
	return &gateRepo{e: e, dir: dir}
}

func (r *gateRepo) config(t *testing.T, key, value string) {
	t.Helper()
	testrepo.Git(t, r.dir, "config", key, value)
}

// task creates a blocked task whose branch (from main as it is now)
// commits files.
func (r *gateRepo) task(t *testing.T, title string, files map[string]string) *task.Snapshot {
	t.Helper()
	return startedWith(t, r.e, title, "", files)
}

func (r *gateRepo) load(t *testing.T, id string) *task.Snapshot {
	t.Helper()
	sn, err := r.e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

func (r *gateRepo) tip(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(testrepo.Git(t, r.dir, "rev-parse", "main"))
}

// TestGatedAcceptLandsExactlyTheTreeThatPassed: the gate runs on the
// task's squash onto main, main moves to that very tree, and the commit
// names the passing run.
func TestGatedAcceptLandsExactlyTheTreeThatPassed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "grep -q ok feature.txt", "test ! -e .git/index.lock")
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	before := r.tip(t)
	res, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate == "" {
		t.Fatal("the result names no gate run")
	}
	after := r.tip(t)
	if after == before || after != res.Commit {
		t.Fatalf("main is at %s, the accept says %s (was %s)", after, res.Commit, before)
	}
	got := r.load(t, sn.Task.ID)
	run := got.Task.Gate.Last()
	if run == nil || !run.Passed || run.ID != res.Gate || run.Base != before || len(run.Commands) != 2 || run.Commands[0].Exit != 0 {
		t.Fatalf("gate record: %+v", got.Task.Gate)
	}
	tree := strings.TrimSpace(testrepo.Git(t, r.dir, "rev-parse", "main^{tree}"))
	if tree != run.Tree {
		t.Fatalf("main's tree %s is not the tree that passed, %s", tree, run.Tree)
	}
	msg := testrepo.Git(t, r.dir, "log", "-1", "--format=%B", "main")
	if !strings.Contains(msg, "Lazy-Gate: passed "+res.Gate) || !strings.Contains(msg, "Lazy-Task: "+sn.Task.ID) {
		t.Fatalf("squash message lacks its trailers:\n%s", msg)
	}
	if got.Task.Status != machine.Complete {
		t.Fatalf("status %s", got.Task.Status)
	}
	if _, err := os.Stat(run.Log); err != nil {
		t.Fatalf("the whole log is not on disk: %v", err)
	}
	root, _ := session.DefaultWorktreeRoot(r.e.Repo)
	if scratch, _ := filepath.Glob(filepath.Join(root, ".gate-*")); len(scratch) > 0 {
		t.Fatalf("scratch worktrees left behind: %v", scratch)
	}
	left := r.e.queue().Queues()
	if len(left) != 1 || len(left[0].Entries) != 0 || len(left[0].Left) != 1 || left[0].Left[0].Outcome != queue.LeftLanded || left[0].Left[0].Commit != res.Commit {
		t.Fatalf("queue after the accept: %+v", left)
	}
}

// TestGateFailuresRefuseTheAccept: a failing, missing or hanging command
// is a failure; nothing lands, the task stays blocked with the run
// recorded, and the queue says why it left.
func TestGateFailuresRefuseTheAccept(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	for _, tc := range []struct {
		name, cmd string
		check     func(c task.GateCommand) bool
	}{
		{"exit", "echo the tests broke; exit 3", func(c task.GateCommand) bool { return c.Exit == 3 }},
		{"missing", "no-such-command-lazy-gate", func(c task.GateCommand) bool { return c.Missing && c.Exit == 127 }},
		{"timeout", "sleep 60", func(c task.GateCommand) bool { return c.TimedOut }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newGateRepo(t, tc.cmd)
			r.config(t, "lazy.gate.timeout", "1s")
			sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
			before := r.tip(t)
			_, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
			var ge *GateError
			if !errors.As(err, &ge) {
				t.Fatalf("accept: %v, want a GateError", err)
			}
			if r.tip(t) != before {
				t.Fatal("main moved although the gate failed")
			}
			got := r.load(t, sn.Task.ID)
			run := got.Task.Gate.Last()
			if got.Task.Status != machine.Blocked || run == nil || run.Passed || run.Failed != tc.cmd || !tc.check(run.Commands[0]) {
				t.Fatalf("status %s, run %+v", got.Task.Status, run)
			}
			if tc.name == "exit" && !strings.Contains(run.Tail, "the tests broke") {
				t.Fatalf("tail %q", run.Tail)
			}
			if !strings.Contains(err.Error(), "nothing was merged") {
				t.Fatalf("error %q does not say nothing was merged", err)
			}
			q := r.e.queue().Queues()
			if len(q) != 1 || len(q[0].Left) != 1 || q[0].Left[0].Outcome != queue.LeftFailed {
				t.Fatalf("queue: %+v", q)
			}
		})
	}
}

// TestTheGateFileIsReadFromTheTargetNeverTheBranch: an agent that
// rewrites .lazy/gate on its branch does not change what gates it.
func TestTheGateFileIsReadFromTheTargetNeverTheBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t)
	if err := os.MkdirAll(filepath.Join(r.dir, ".lazy"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, r.dir, ".lazy/gate", "# the team's checks\n\ntest ! -e cheat.txt\n")
	testrepo.Git(t, r.dir, "add", ".lazy/gate")
	testrepo.Git(t, r.dir, "commit", "-q", "-m", "gate")
	sn := r.task(t, "cheat", map[string]string{".lazy/gate": "true\n", "cheat.txt": "x\n"})
	// Rewriting the gate file is a protected change: it does not even
	// reach the gate without a human.
	_, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
	var pe *ProtectedError
	if !errors.As(err, &pe) || !slices.Equal(pe.Files, []string{".lazy/gate"}) {
		t.Fatalf("accept: %v, want the protected .lazy/gate named", err)
	}
	// A human who approves it still gets the target's gate, not the
	// branch's.
	_, err = r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{ApproveProtected: true})
	var ge *GateError
	if !errors.As(err, &ge) || ge.Run.Failed != "test ! -e cheat.txt" || !strings.HasPrefix(ge.Run.Source, ".lazy/gate") {
		t.Fatalf("accept: %v (run %+v)", err, ge)
	}
}

// TestARecordedPassDoesNotSkipTheGate: a gate run in the task's record
// (which anyone who can push can write) never stands in for a run on
// this machine.
func TestARecordedPassDoesNotSkipTheGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "exit 1")
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	tree := strings.TrimSpace(testrepo.Git(t, r.dir, "merge-tree", "--write-tree", "main", "refs/heads/"+worktree.Branch(sn.Task.Slug)))
	if _, _, err := r.e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Gate = &task.GateRecord{Runs: []task.GateRun{{ID: "forged", Passed: true, Tree: tree, Base: r.tip(t), Host: "ops-test"}}}
		return &task.Op{Name: "forge", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{}); !errors.As(err, new(*GateError)) {
		t.Fatalf("accept: %v, want the gate to run and fail", err)
	}
}

// TestSkippingTheGateIsAHumanDecisionWithAReason.
func TestSkippingTheGateIsAHumanDecisionWithAReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "exit 1")
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	core := *r.e.Env
	core.Actor = machine.Builder
	builder := *r.e
	builder.Env = &core
	if _, err := builder.Accept(ctx, sn.Task.ID, nil, AcceptOptions{SkipGate: true, SkipReason: "trust me"}); err == nil || !strings.Contains(err.Error(), "only a human") {
		t.Fatalf("a builder skipped the gate: %v", err)
	}
	if _, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{SkipGate: true}); err == nil || !strings.Contains(err.Error(), "needs a reason") {
		t.Fatalf("a skip without a reason: %v", err)
	}
	res, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{SkipGate: true, SkipReason: "CI box down; tested by hand"})
	if err != nil {
		t.Fatal(err)
	}
	msg := testrepo.Git(t, r.dir, "log", "-1", "--format=%B", res.Commit)
	if !strings.Contains(msg, "Lazy-Gate: skipped by human: CI box down; tested by hand") {
		t.Fatalf("message:\n%s", msg)
	}
	got := r.load(t, sn.Task.ID)
	if s := got.Task.Gate; s == nil || s.Skipped == nil || s.Skipped.Reason != "CI box down; tested by hand" || s.Skipped.By != "human" || len(s.Runs) != 0 {
		t.Fatalf("gate record: %+v", got.Task.Gate)
	}
}

// TestAQueueOfThreeWithAFailureInTheMiddle: with two gates at once, the
// train is gated speculatively; the failing entry leaves, the one behind
// it is gated again on what actually landed, and main only ever moves to
// trees that passed.
func TestAQueueOfThreeWithAFailureInTheMiddle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "test ! -e bad.txt")
	r.config(t, "lazy.gate.parallel", "2")
	a := r.task(t, "task a", map[string]string{"a.txt": "a\n"})
	b := r.task(t, "task b", map[string]string{"bad.txt": "b\n"})
	c := r.task(t, "task c", map[string]string{"c.txt": "c\n"})
	start := r.tip(t)
	results := r.e.AcceptMany(ctx, []string{a.Task.ID, b.Task.ID, c.Task.ID}, nil, AcceptOptions{})
	if results[0].Err != nil || results[2].Err != nil {
		t.Fatalf("a: %v, c: %v", results[0].Err, results[2].Err)
	}
	if !errors.As(results[1].Err, new(*GateError)) {
		t.Fatalf("b: %v, want a gate failure", results[1].Err)
	}
	// Every commit main gained names a gate run that passed on its tree.
	log := testrepo.Git(t, r.dir, "log", "--format=%H %T", start+"..main")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 2 {
		t.Fatalf("main gained %d commits, want 2:\n%s", len(lines), log)
	}
	for _, l := range lines {
		commit, tree, _ := strings.Cut(l, " ")
		msg := testrepo.Git(t, r.dir, "log", "-1", "--format=%B", commit)
		if !strings.Contains(msg, "Lazy-Gate: passed ") {
			t.Fatalf("%s has no gate trailer:\n%s", commit, msg)
		}
		if _, ok := r.e.Gates().passedBefore(tree, []string{"test ! -e bad.txt"}); !ok {
			t.Fatalf("main moved to tree %s, which no gate passed", tree)
		}
	}
	if out := testrepo.Git(t, r.dir, "ls-tree", "--name-only", "main"); strings.Contains(out, "bad.txt") || !strings.Contains(out, "c.txt") {
		t.Fatalf("main's files:\n%s", out)
	}
	// a passed speculatively and landed unrun; c's speculative run
	// (behind b) failed, and its accept gated it again.
	if runs := r.load(t, a.Task.ID).Task.Gate.Runs; len(runs) != 1 || !runs[0].Speculative || !runs[0].Passed || results[0].Result.Gate != runs[0].ID {
		t.Fatalf("a's runs: %+v", runs)
	}
	cr := r.load(t, c.Task.ID).Task.Gate.Runs
	if len(cr) != 2 || !cr[0].Speculative || cr[0].Passed || cr[1].Speculative || !cr[1].Passed {
		t.Fatalf("c's runs: %+v", cr)
	}
	q := r.e.queue().Queues()
	if len(q) != 1 || len(q[0].Entries) != 0 || len(q[0].Left) != 3 {
		t.Fatalf("queue: %+v", q)
	}
	for i, want := range []string{queue.LeftLanded, queue.LeftFailed, queue.LeftLanded} {
		if q[0].Left[i].Outcome != want {
			t.Fatalf("left[%d] = %+v, want %s", i, q[0].Left[i], want)
		}
	}
}

// TestAConflictingEntryLeavesWithTheFiles: an entry that no longer
// merges is refused before anything is recorded, naming the files.
func TestAConflictingEntryLeavesWithTheFiles(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "true")
	a := r.task(t, "task a", map[string]string{"shared.txt": "a\n"})
	b := r.task(t, "task b", map[string]string{"shared.txt": "b\n"})
	results := r.e.AcceptMany(ctx, []string{a.Task.ID, b.Task.ID}, nil, AcceptOptions{})
	var ce *ConflictError
	if results[0].Err != nil || !errors.As(results[1].Err, &ce) || len(ce.Files) != 1 || ce.Files[0] != "shared.txt" {
		t.Fatalf("a: %v; b: %v", results[0].Err, results[1].Err)
	}
	if st := r.load(t, b.Task.ID).Task.Status; st != machine.Blocked {
		t.Fatalf("b is %s", st)
	}
	q := r.e.queue().Queues()
	if q[0].Left[1].Outcome != queue.LeftConflict {
		t.Fatalf("queue: %+v", q)
	}
}

// TestAutoFixHandsTheFailureToTheAgentAndRequeues: with lazy.gate.autoFix
// the failure goes to the agent as feedback (sanitized), the task waits
// in the queue as fixing until its turn ends, re-enters, and after
// lazy.gate.maxAttempts rounds stays blocked for a human.
func TestAutoFixHandsTheFailureToTheAgentAndRequeues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "printf 'boom \\033[31mred\\033[0m\\n'; exit 1")
	r.config(t, "lazy.gate.autoFix", "true")
	r.config(t, "lazy.gate.maxAttempts", "2")
	var launched []string
	r.e.Launch = func(id string) error { launched = append(launched, id); return nil }
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	id := sn.Task.ID

	_, err := r.e.Accept(ctx, id, nil, AcceptOptions{})
	var ge *GateError
	if !errors.As(err, &ge) || !ge.Fixing || ge.Round != 1 || ge.Max != 2 {
		t.Fatalf("accept: %v (%+v)", err, ge)
	}
	got := r.load(t, id)
	if got.Task.Status != machine.Working || len(launched) != 1 || got.Task.Gate.FixRounds != 1 {
		t.Fatalf("status %s, launched %v, gate %+v", got.Task.Status, launched, got.Task.Gate)
	}
	turns, err := r.e.Store.Turns(got)
	if err != nil {
		t.Fatal(err)
	}
	feedback := turns[len(turns)-1].Content
	if !strings.Contains(feedback, "boom") || strings.Contains(feedback, "\x1b") || !strings.Contains(feedback, "exited 1") {
		t.Fatalf("feedback to the agent: %q", feedback)
	}
	en, ok := r.e.queue().InQueue(id)
	if !ok || en.State != queue.Fixing || en.Round != 1 {
		t.Fatalf("queue entry: %+v, %v", en, ok)
	}
	if ready := r.e.queue().ReadyToRequeue(); len(ready) != 0 {
		t.Fatalf("re-entered while its agent works: %+v", ready)
	}
	walk(t, r.e, id, machine.Blocked) // the fix turn ends
	ready := r.e.queue().ReadyToRequeue()
	if len(ready) != 1 || ready[0].Task != id || ready[0].Round != 1 {
		t.Fatalf("ready: %+v", ready)
	}
	_, err = r.e.Accept(ctx, id, nil, AcceptOptions{FixRound: ready[0].Round})
	if !errors.As(err, &ge) || ge.Round != 2 {
		t.Fatalf("second round: %v", err)
	}
	walk(t, r.e, id, machine.Blocked)
	_, err = r.e.Accept(ctx, id, nil, AcceptOptions{FixRound: 2})
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 rounds") {
		t.Fatalf("third round: %v", err)
	}
	got = r.load(t, id)
	if got.Task.Status != machine.Blocked || len(launched) != 2 || len(got.Task.Gate.Runs) != 3 {
		t.Fatalf("status %s, launched %d, runs %d", got.Task.Status, len(launched), len(got.Task.Gate.Runs))
	}
	if _, ok := r.e.queue().InQueue(id); ok {
		t.Fatal("still queued after giving up")
	}
}

// TestDequeueTakesAFixingTaskOut.
func TestDequeueTakesAFixingTaskOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "exit 1")
	r.config(t, "lazy.gate.autoFix", "on")
	r.e.Launch = func(string) error { return nil }
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	if _, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{}); err == nil {
		t.Fatal("the gate passed")
	}
	if _, err := r.e.queue().Dequeue(sn.Task.Slug); err != nil {
		t.Fatal(err)
	}
	walk(t, r.e, sn.Task.ID, machine.Blocked)
	if ready := r.e.queue().ReadyToRequeue(); len(ready) != 0 {
		t.Fatalf("a removed task re-entered: %+v", ready)
	}
	q := r.e.queue().Queues()
	if last := q[0].Left[len(q[0].Left)-1]; last.Outcome != queue.LeftRemoved {
		t.Fatalf("left: %+v", q[0].Left)
	}
	if _, err := r.e.queue().Dequeue(sn.Task.Slug); err == nil || !strings.Contains(err.Error(), "no merge queue") {
		t.Fatalf("second dequeue: %v", err)
	}
}

// TestGateChecksWithoutLandingAndTheAcceptReusesThePass: lazy gate runs
// and records the gate on the tree an accept would land, lands nothing,
// and the accept that follows onto the same tip lands that tree unrun.
func TestGateChecksWithoutLandingAndTheAcceptReusesThePass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "test -f feature.txt")
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	before := r.tip(t)
	chk, err := r.e.Gates().Gate(ctx, sn.Task.Slug, AcceptOptions{})
	if err != nil || chk.Run == nil || !chk.Run.Passed || chk.NoGate {
		t.Fatalf("gate: %+v, %v", chk, err)
	}
	if r.tip(t) != before || r.load(t, sn.Task.ID).Task.Status != machine.Blocked {
		t.Fatal("lazy gate landed something or changed the status")
	}
	again, err := r.e.Gates().Gate(ctx, sn.Task.Slug, AcceptOptions{})
	if err != nil || again.Reused != chk.Run.ID {
		t.Fatalf("second gate: %+v, %v", again, err)
	}
	res, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
	if err != nil || res.Gate != chk.Run.ID {
		t.Fatalf("accept: %+v, %v", res, err)
	}
	if runs := r.load(t, sn.Task.ID).Task.Gate.Runs; len(runs) != 1 {
		t.Fatalf("the gate ran %d times, want once", len(runs))
	}

	bare := newGateRepo(t)
	other := bare.task(t, "no gate here", map[string]string{"x.txt": "x\n"})
	if chk, err := bare.e.Gates().Gate(ctx, other.Task.Slug, AcceptOptions{}); err != nil || !chk.NoGate {
		t.Fatalf("no gate: %+v, %v", chk, err)
	}
}

// TestSweepGateLeftoversEndsWhatAKilledGateLeft: a gate whose accept was
// SIGKILLed leaves its commands running (their own process group) and
// its scratch worktree; the next gate or lazy doctor ends and removes
// both, and leaves a live run's alone.
func TestSweepGateLeftoversEndsWhatAKilledGateLeft(t *testing.T) {
	ctx := context.Background()
	r := newGateRepo(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	scratch := func(id string, owner int) (string, *exec.Cmd) {
		dir, err := r.e.Gates().scratchDir(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Dir(dir), filepath.Dir(r.e.Gates().ownerFile(id))} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := worktree.AddDetached(ctx, r.dir, dir, r.tip(t)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.e.Gates().ownerFile(id), []byte(strconv.Itoa(owner)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", "sleep 300 & wait")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), gateMarker+id)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return dir, cmd
	}
	orphanID, liveID := mustID(t), mustID(t)
	orphanDir, orphan := scratch(orphanID, dead.Process.Pid)
	liveDir, _ := scratch(liveID, os.Getpid())
	waited := make(chan error, 1)
	go func() { waited <- orphan.Wait() }()

	done := r.e.Gates().SweepGateLeftovers(ctx)
	if len(done) != 1 || !strings.Contains(done[0], orphanID) {
		t.Fatalf("sweep: %v", done)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphaned gate's commands still run")
	}
	if _, err := os.Stat(orphanDir); !os.IsNotExist(err) {
		t.Fatalf("the orphaned scratch worktree is still there: %v", err)
	}
	if strings.Contains(testrepo.Git(t, r.dir, "worktree", "list"), orphanDir) {
		t.Fatal("git still lists the orphaned scratch worktree")
	}
	if _, err := os.Stat(liveDir); err != nil || len(proc.WithEnv(gateMarker+liveID)) == 0 {
		t.Fatalf("the sweep touched a live run: %v", err)
	}
}

func mustID(t *testing.T) string {
	t.Helper()
	id, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestTheGateRunsInTheSandbox: with lazy.sandbox on, the gate's commands
// run under the real bubblewrap, confined as an agent is: they work in
// their checkout, but cannot read a hidden secret or write the main
// checkout. The same gate unconfined fails, so the test can tell.
func TestTheGateRunsInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real bwrap: the full suite runs it (scripts/test.sh)")
	}
	if err := sandbox.Check(context.Background()); err != nil {
		if os.Getenv("LAZY_REQUIRE_BWRAP") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, filepath.Dir(secret), "secret", "hunter2\n")
	r := newGateRepo(t)
	check := fmt.Sprintf("! cat %s && ! sh -c 'echo x >> %s/README.md' && echo built > out.txt && grep -q built out.txt", secret, r.dir)
	r.config(t, "lazy.gate", check)
	sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
	if chk, err := r.e.Gates().Gate(ctx, sn.Task.Slug, AcceptOptions{}); err != nil || chk.Run == nil || chk.Run.Passed {
		t.Fatalf("unconfined, the gate should fail (it reads the secret): %+v, %v", chk, err)
	}
	sb := &proto.Sandbox{Network: "off", Hidden: []string{secret}}
	res, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{Sandbox: sb})
	if err != nil {
		t.Fatalf("the sandboxed gate did not pass: %v", err)
	}
	if res.Gate == "" || !strings.Contains(read(t, r.dir, "README.md"), "test") || strings.Contains(read(t, r.dir, "README.md"), "x\n") {
		t.Fatalf("result %+v; README %q", res, read(t, r.dir, "README.md"))
	}
}

// TestAutoFixOfASubmittedTaskReentersThroughTheForge: a failed gate of
// an accept through the forge revises the submission, and the task
// re-enters through its pull request, never as a local merge beside it;
// a task accepted locally re-enters locally.
func TestAutoFixOfASubmittedTaskReentersThroughTheForge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "exit 1")
	r.config(t, "lazy.gate.autoFix", "true")
	r.e.Launch = func(string) error { return nil }
	local := r.task(t, "accepted locally", map[string]string{"a.txt": "a\n"})
	sub := r.task(t, "accepted on the forge", map[string]string{"b.txt": "b\n"})
	if _, _, err := r.e.Store.Update(ctx, sub.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = machine.Submitted
		s.Task.Forge = &task.ForgeRecord{Kind: "github", Remote: "origin", Head: worktree.Branch(s.Task.Slug), Base: "main", Number: 1, URL: "https://github.com/acme/app/pull/1"}
		return &task.Op{Name: "submit", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, sn := range []*task.Snapshot{local, sub} {
		err := r.e.handBack(ctx, &GateError{Task: sn.Task.Slug, Run: task.GateRun{Target: "main", Failed: "exit 1"}}, AcceptOptions{})
		var ge *GateError
		if !errors.As(err, &ge) || !ge.Fixing || ge.Round != 1 {
			t.Fatalf("hand back %s: %v", sn.Task.Slug, err)
		}
	}
	if got := r.load(t, sub.Task.ID); got.Task.Status != machine.Working || got.Task.Forge == nil || !got.Task.Forge.Revising {
		t.Fatalf("the submitted task after the hand-back: %s, %+v", got.Task.Status, got.Task.Forge)
	}
	walk(t, r.e, local.Task.ID, machine.Blocked)
	walk(t, r.e, sub.Task.ID, machine.Blocked)
	viaForge := map[string]bool{}
	for _, q := range r.e.queue().ReadyToRequeue() {
		viaForge[q.Task] = q.ViaForge
	}
	if len(viaForge) != 2 || viaForge[local.Task.ID] || !viaForge[sub.Task.ID] {
		t.Fatalf("ready to re-enter (task: through the forge): %v", viaForge)
	}

	// Its accept through the forge takes it out of the fixing entries for
	// as long as it gates, and logs how it left.
	ticket := r.e.queue().ReenterThroughForge(sub.Task.ID)
	if en, ok := r.e.queue().InQueue(sub.Task.ID); ticket == nil || !ok || en.State != queue.Gating {
		t.Fatalf("re-entered through the forge: %+v, %v", en, ok)
	}
	ticket.LeaveThroughForge(&queue.Forged{Pending: "1 check pending"}, nil)
	if _, ok := r.e.queue().InQueue(sub.Task.ID); ok {
		t.Fatal("still queued after its merge was requested")
	}
	for _, q := range r.e.queue().ReadyToRequeue() {
		if q.Task == sub.Task.ID {
			t.Fatal("the task re-entered a second time")
		}
	}
	left := r.e.queue().Queues()[0].Left
	if last := left[len(left)-1]; last.Task != sub.Task.ID || last.Outcome != queue.LeftLanded || !strings.Contains(last.Why, "through the forge") {
		t.Fatalf("left: %+v", last)
	}
	if r.e.queue().ReenterThroughForge(sub.Task.ID) != nil {
		t.Fatal("a task that waits for nothing re-entered")
	}
}

// TestSweepGateLeftoversRemovesAHalfAddedWorktree: an accept killed
// while git added the scratch worktree leaves git's record of it locked
// "initializing" and the directory without its .git file, which git
// refuses to remove (and git worktree prune skips): the sweep removes
// the directory and then the record.
func TestSweepGateLeftoversRemovesAHalfAddedWorktree(t *testing.T) {
	ctx := context.Background()
	r := newGateRepo(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	id := mustID(t)
	dir, err := r.e.Gates().scratchDir(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), filepath.Dir(r.e.Gates().ownerFile(id))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := worktree.AddDetached(ctx, r.dir, dir, r.tip(t)); err != nil {
		t.Fatal(err)
	}
	write(t, testrepo.Git(t, dir, "rev-parse", "--absolute-git-dir"), "locked", "initializing")
	if err := os.Remove(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.e.Gates().ownerFile(id), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if done := r.e.Gates().SweepGateLeftovers(ctx); len(done) != 1 {
		t.Fatalf("sweep: %v", done)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the half-added scratch worktree is still there: %v", err)
	}
	if list := testrepo.Git(t, r.dir, "worktree", "list"); strings.Contains(list, id) {
		t.Fatalf("git still records the half-added scratch worktree:\n%s", list)
	}
}

// TestTheGateChecksOutDespiteARacingWorktreeAdd: while another git
// worktree add is half done (its record under .git/worktrees has HEAD and
// an empty commondir), git refuses every worktree add; the gate's
// checkout is tried again and the run passes rather than failing as
// "could not run".
func TestTheGateChecksOutDespiteARacingWorktreeAdd(t *testing.T) {
	ctx := context.Background()
	r := newGateRepo(t, "test -e feature.txt")
	sn := r.task(t, "raced", map[string]string{"feature.txt": "ok\n"})
	c, err := r.e.Gates().buildCandidate(ctx, r.tip(t), worktree.Branch(sn.Task.Slug), sn.Task.Slug, "main")
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(r.dir, ".git", "worktrees", "racing")
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, half, "gitdir", filepath.Join(t.TempDir(), "racing", ".git")+"\n")
	write(t, half, "HEAD", "ref: refs/heads/main\n")
	write(t, half, "commondir", "")
	if _, err := testrepo.GitErr(r.dir, "worktree", "add", "--detach", filepath.Join(t.TempDir(), "probe"), "main"); err == nil {
		t.Fatal("git adds a worktree beside a half-written one: the race this test is about is gone")
	}
	done := time.AfterFunc(100*time.Millisecond, func() { _ = os.RemoveAll(half) })
	defer done.Stop()
	gp := &gatePlan{Settings: gate.Settings{Timeout: time.Minute}, cmds: []string{"test -e feature.txt"}, source: "test"}
	res, err := r.e.Gates().runInScratch(ctx, gp, c, AcceptOptions{}, mustID(t), filepath.Join(t.TempDir(), "gate.log"))
	if err != nil || !res.Passed {
		t.Fatalf("the gate beside a racing worktree add: %+v, %v", res, err)
	}
	if list := testrepo.Git(t, r.dir, "worktree", "list"); strings.Contains(list, ".gate-") {
		t.Fatalf("a scratch worktree is left:\n%s", list)
	}
}

// TestALockOnTheTargetLandsNothingAndLeavesTheCheckoutAsItWas: a lock a
// killed git left on the branch or on HEAD stops the fast-forward after
// git wrote the gated tree's files; the accept puts the checkout back,
// lands nothing, says why and does not blame a commit made outside lazy.
func TestALockOnTheTargetLandsNothingAndLeavesTheCheckoutAsItWas(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	for _, lock := range []string{"HEAD.lock", "refs/heads/main.lock"} {
		r := newGateRepo(t, "true")
		sn := r.task(t, "locked out", map[string]string{"feature.txt": "ok\n"})
		before := r.tip(t)
		path := filepath.Join(r.dir, ".git", lock)
		write(t, filepath.Dir(path), filepath.Base(path), "")
		_, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
		if err == nil || !strings.Contains(err.Error(), "git could not move main") || strings.Contains(err.Error(), "outside lazy") {
			t.Fatalf("%s: accept: %v", lock, err)
		}
		if r.tip(t) != before {
			t.Fatalf("%s: main moved", lock)
		}
		if st := testrepo.Git(t, r.dir, "status", "--porcelain"); st != "" {
			t.Fatalf("%s: the checkout after the failed accept: %q", lock, st)
		}
		if got := r.load(t, sn.Task.ID).Task.Status; got != machine.Blocked {
			t.Fatalf("%s: the task is %s", lock, got)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if _, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{}); err != nil {
			t.Fatalf("%s: accept once the lock is gone: %v", lock, err)
		}
	}
}

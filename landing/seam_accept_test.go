package landing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// landingGit is git for an accept that goes through: the target main is
// checked out, clean, at intoSHA in dest, the task branch changes
// something, and the squash merge and its commit succeed. It plays the
// parts of the roles an accept (PreflightGit, MergeGit), its gate
// (GateGit), its clean-up (CleanupGit) and its recovery (RecoveryGit)
// ask of; anything else fails the test loudly (a nil embedded
// interface). It notes each call, and what the task's record said when
// it was asked to merge.
type landingGit struct {
	Worktree
	t      *testing.T
	e      *Service
	id     string // the task whose record seenAtMerge reads
	dest   string // main's checkout
	landed bool   // the squash commit is on main (HasCommitWith)
	// dieAt, "merge" or "commit", ends the accept's goroutine there, as a
	// kill would end the process: before the merge, or once its commit is
	// made.
	dieAt string
	// gate is the .lazy/gate committed at main's tip ("": none).
	gate string

	calls       []string
	seenAtMerge *task.Snapshot
	message     string // the squash commit's message
}

const (
	intoSHA    = "1111111111111111111111111111111111111111"
	squashSHA  = "2222222222222222222222222222222222222222"
	branchTip  = "3333333333333333333333333333333333333333"
	candTree   = "4444444444444444444444444444444444444444"
	candCommit = "5555555555555555555555555555555555555555"
)

func (g *landingGit) note(f string, args ...any) { g.calls = append(g.calls, fmt.Sprintf(f, args...)) }

func (g *landingGit) Dirty(_ context.Context, dir string) (bool, error) {
	g.note("dirty %s", dir)
	return false, nil
}

func (g *landingGit) BranchCommit(_ context.Context, _, branch string) (string, error) {
	g.note("branch-commit %s", branch)
	if branch == "main" {
		return intoSHA, nil
	}
	return branchTip, nil
}

func (g *landingGit) BranchTip(_ context.Context, _, branch string) (string, error) {
	g.note("branch-tip %s", branch)
	return branchTip, nil
}

func (g *landingGit) ChangesNothing(context.Context, string, string, string) bool { return false }

func (g *landingGit) CheckedOutAt(_ context.Context, _, branch string) (string, error) {
	if branch == "main" {
		return g.dest, nil
	}
	return "", nil
}

// FileAt is g.gate as .lazy/gate at main's tip, and no other file.
func (g *landingGit) FileAt(_ context.Context, _, commit, path string) ([]byte, bool, error) {
	g.note("file-at %s %s", commit, path)
	if g.gate == "" || commit != intoSHA || path != ".lazy/gate" {
		return nil, false, nil
	}
	return []byte(g.gate), true, nil
}

// MergeTree and CommitTree build the gate's candidate: the task's
// squash onto main's tip, and its provisional commit.
func (g *landingGit) MergeTree(_ context.Context, _, ours, branch string) (string, []string, error) {
	g.note("merge-tree %s onto %s", branch, ours)
	return candTree, nil, nil
}

func (g *landingGit) CommitTree(_ context.Context, _, tree, parent, _ string) (string, error) {
	g.note("commit-tree %s on %s", tree, parent)
	return candCommit, nil
}

// AddDetached and RemoveScratch make and remove the gate's scratch
// checkout: an empty directory, where the gate's commands run.
func (g *landingGit) AddDetached(_ context.Context, _, dir, commit string) error {
	g.note("add-detached %s", commit)
	return os.MkdirAll(dir, 0o755)
}

func (g *landingGit) RemoveScratch(_ context.Context, _, dir string) error {
	return os.RemoveAll(dir)
}

// ExistingFiles finds none of the files the gate's commands name.
func (g *landingGit) ExistingFiles(context.Context, string, string, []string) ([]string, error) {
	return nil, nil
}

// RangeFiles is what the task changed: no protected path.
func (g *landingGit) RangeFiles(context.Context, string, string, string) ([]string, bool, error) {
	return []string{"feature.go"}, false, nil
}

func (g *landingGit) SquashMerge(_ context.Context, dir, branch string) ([]string, error) {
	g.note("squash-merge %s into %s", branch, dir)
	sn, err := g.e.Store.Load(g.id)
	if err != nil {
		g.t.Error(err) // not Fatal: a dying accept runs on a goroutine of its own
		return nil, err
	}
	g.seenAtMerge = sn
	if g.dieAt == "merge" {
		runtime.Goexit()
	}
	return nil, nil
}

func (g *landingGit) CommitStaged(_ context.Context, dir, msg string) (string, error) {
	g.note("commit %s", dir)
	g.message = msg
	g.landed = true
	if g.dieAt == "commit" {
		runtime.Goexit()
	}
	return squashSHA, nil
}

func (g *landingGit) HasCommitWith(_ context.Context, _, text, since, branch string) (bool, error) {
	g.note("has-commit-with %q since %s on %s", text, since, branch)
	return g.landed && since == intoSHA && branch == "main" && text == session.AcceptTrailer(g.id), nil
}

func (g *landingGit) Stashes(context.Context, string) ([]worktree.Stash, error) { return nil, nil }

func (g *landingGit) Remove(_ context.Context, _, dir string) error {
	g.note("remove %s", dir)
	return nil
}

func (g *landingGit) DeleteBranch(_ context.Context, _, branch string) error {
	g.note("delete-branch %s", branch)
	return nil
}

// blockedTask is a task this machine ran, blocked, with its worktree and
// branch, targeting main, over landing on memstore with git g faked.
func blockedTask(t *testing.T, g *landingGit) (*Service, *task.Snapshot, string) {
	t.Helper()
	ctx := context.Background()
	e := New(&session.Env{Store: memstore.New(memstore.WithHost("seam")), Repo: &gitrepo.Location{CommonDir: t.TempDir()}, Actor: machine.Human})
	e.Worktrees = g
	g.t, g.e, g.dest = t, e, t.TempDir()
	sn, err := e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "add the feature"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.TargetBranch = "main" // the branch it merges into, with no git to ask
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	g.id = sn.Task.ID
	walk(t, e, sn.Task.ID, machine.Working, machine.Blocked)
	wt := t.TempDir()
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Worktree: wt, Branch: "lazy/" + sn.Task.Slug}); err != nil {
		t.Fatal(err)
	}
	if sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Session.ID = sid
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return e, sn, wt
}

// TestAnAcceptRecordsMergingBeforeItMergesAndEndsAccepted runs on
// memstore with git faked and no git on PATH: the task's record says
// merging into main, at main's tip, before git is asked to merge, and the
// accept ends with the task complete, accepted, its squash commit
// carrying the task's trailers, and its worktree and branch removed.
func TestAnAcceptRecordsMergingBeforeItMergesAndEndsAccepted(t *testing.T) {
	t.Setenv("PATH", "")
	ctx := context.Background()
	g := &landingGit{}
	e, sn, wt := blockedTask(t, g)
	res, err := e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
	if err != nil {
		t.Fatalf("accept: %v (git: %q)", err, g.calls)
	}
	at := g.seenAtMerge
	if at == nil {
		t.Fatalf("git was never asked to merge: %q", g.calls)
	}
	if at.Task.Status != machine.Merging || at.Task.Accept == nil || at.Task.Accept.Into != "main" || at.Task.Accept.IntoSHA != intoSHA || at.Task.Accept.From != machine.Blocked || at.Task.Accept.Host != "seam" {
		t.Fatalf("when git merged, the record said %s with accept %+v; want merging into main at %s from blocked", at.Task.Status, at.Task.Accept, intoSHA)
	}
	branch := "lazy/" + sn.Task.Slug
	for _, want := range []string{"add the feature", "\nLazy-Task: " + sn.Task.ID + "\n", "\nLazy-Branch: " + branch + "\n"} {
		if !strings.Contains(g.message, want) {
			t.Fatalf("the squash commit's message lacks %q:\n%s", want, g.message)
		}
	}
	if res.Commit != squashSHA || res.Into != "main" {
		t.Fatalf("the accept says it merged into %q as %q", res.Into, res.Commit)
	}
	got, err := e.Store.Load(sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Status != machine.Complete || got.Task.Outcome != task.OutcomeAccepted || got.Task.Accept != nil || got.Session.Outcome != task.OutcomeAccepted || got.Session.EndedAt == nil {
		t.Fatalf("after the accept the task is %s/%s, accept %+v, session %+v", got.Task.Status, got.Task.Outcome, got.Task.Accept, got.Session)
	}
	c, err := e.Store.Comments(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) == 0 || !strings.Contains(c[len(c)-1].Text, "accepted: squash-merged into main as "+squashSHA) {
		t.Fatalf("the completion's comment: %+v", c)
	}
	calls := strings.Join(g.calls, "\n")
	for _, want := range []string{"remove " + wt, "delete-branch " + branch} {
		if !strings.Contains(calls, want) {
			t.Fatalf("git was not asked to %s:\n%s", want, calls)
		}
	}
	if mine, err := e.Accepts().Match(sn.Task.ID, ""); err == nil {
		t.Fatalf("this machine still records the finished accept: %+v", mine)
	}
}

// strandedAccept is a task whose accept died in git (g.dieAt): its record
// says merging, and this machine's record of the accept names it.
func strandedAccept(t *testing.T, g *landingGit) (*Service, *task.Snapshot, string) {
	t.Helper()
	e, sn, wt := blockedTask(t, g)
	died := true
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.Accept(context.Background(), sn.Task.ID, nil, AcceptOptions{})
		died = false
	}()
	<-done
	if !died {
		t.Fatalf("the accept did not die at %s: %q", g.dieAt, g.calls)
	}
	got, err := e.Store.Load(sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Status != machine.Merging || got.Task.Accept == nil {
		t.Fatalf("the dead accept left the task %s, accept %+v; want merging", got.Task.Status, got.Task.Accept)
	}
	if _, err := e.Accepts().Match(sn.Task.ID, got.Task.Accept.ID); err != nil {
		t.Fatalf("this machine has no record of the dead accept: %v", err)
	}
	g.calls = nil
	return e, got, wt
}

// TestAStrandedAcceptWhoseMergeLandedIsFinishedAsAccepted runs on
// memstore with git faked and no git on PATH: an accept that died once
// its squash commit was on main is found by Recovery (git says main
// carries the task's trailer above the recorded tip) and finished as
// accepted, its worktree and branch removed and its local record gone.
func TestAStrandedAcceptWhoseMergeLandedIsFinishedAsAccepted(t *testing.T) {
	t.Setenv("PATH", "")
	g := &landingGit{dieAt: "commit"}
	e, sn, wt := strandedAccept(t, g)
	out, landed, _, err := e.Recovery().RecoverStrandedAccept(context.Background(), sn)
	if err != nil {
		t.Fatalf("recover: %v (git: %q)", err, g.calls)
	}
	if !landed || out == nil || out.Task.Status != machine.Complete || out.Task.Outcome != task.OutcomeAccepted || out.Task.Accept != nil {
		t.Fatalf("recovery of a landed merge: landed %v, %+v", landed, out)
	}
	calls := strings.Join(g.calls, "\n")
	branch := "lazy/" + sn.Task.Slug
	for _, want := range []string{fmt.Sprintf("has-commit-with %q since %s on main", session.AcceptTrailer(sn.Task.ID), intoSHA), "remove " + wt, "delete-branch " + branch} {
		if !strings.Contains(calls, want) {
			t.Fatalf("git was not asked %s:\n%s", want, calls)
		}
	}
	c, err := e.Store.Comments(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) == 0 || !strings.Contains(c[len(c)-1].Text, "a stranded accept had merged; finished as accepted") {
		t.Fatalf("the recovery's comment: %+v", c)
	}
	if mine, err := e.Accepts().Match(sn.Task.ID, ""); err == nil {
		t.Fatalf("this machine still records the recovered accept: %+v", mine)
	}
}

// TestAStrandedAcceptThatNeverMergedIsPutBackForReview runs on memstore
// with git faked and no git on PATH: an accept that died before its
// squash commit is found by Recovery (git says main has no commit with
// the task's trailer) and the task goes back to blocked, for review,
// with nothing removed and its local record gone.
func TestAStrandedAcceptThatNeverMergedIsPutBackForReview(t *testing.T) {
	t.Setenv("PATH", "")
	g := &landingGit{dieAt: "merge"}
	e, sn, _ := strandedAccept(t, g)
	out, landed, _, err := e.Recovery().RecoverStrandedAccept(context.Background(), sn)
	if err != nil {
		t.Fatalf("recover: %v (git: %q)", err, g.calls)
	}
	if landed || out == nil || out.Task.Status != machine.Blocked || out.Task.Outcome != "" || out.Task.Accept != nil {
		t.Fatalf("recovery of a merge that never landed: landed %v, %+v", landed, out)
	}
	calls := strings.Join(g.calls, "\n")
	if !strings.Contains(calls, fmt.Sprintf("has-commit-with %q since %s on main", session.AcceptTrailer(sn.Task.ID), intoSHA)) {
		t.Fatalf("git was not asked whether the merge landed:\n%s", calls)
	}
	if strings.Contains(calls, "remove ") || strings.Contains(calls, "delete-branch ") {
		t.Fatalf("the recovery of an accept that never merged removed the task's work:\n%s", calls)
	}
	c, err := e.Store.Comments(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) == 0 || !strings.Contains(c[len(c)-1].Text, "a stranded accept never merged; status before the accept restored") {
		t.Fatalf("the recovery's comment: %+v", c)
	}
	if mine, err := e.Accepts().Match(sn.Task.ID, ""); err == nil {
		t.Fatalf("this machine still records the recovered accept: %+v", mine)
	}
}

// TestAGateFailureParksTheTaskWithItsRunAndMergesNothing runs on
// memstore with git faked and no git on PATH: the gate committed at
// main's tip (.lazy/gate, read through git) fails on the candidate tree,
// and the task stays blocked with that run recorded on it, while git is
// never asked to merge or commit into main.
func TestAGateFailureParksTheTaskWithItsRunAndMergesNothing(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // where the scratch checkout goes
	ctx := context.Background()
	g := &landingGit{gate: "# the checks\nexit 3\n"}
	e, sn, _ := blockedTask(t, g)
	_, err := e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
	var ge *GateError
	if !errors.As(err, &ge) {
		t.Fatalf("accept with a failing gate: %v (git: %q)", err, g.calls)
	}
	calls := strings.Join(g.calls, "\n")
	if !strings.Contains(calls, "add-detached "+candCommit) {
		t.Fatalf("the gate did not run on the candidate:\n%s", calls)
	}
	if g.seenAtMerge != nil || g.message != "" {
		t.Fatalf("a failed gate merged anyway:\n%s", calls)
	}
	got, err := e.Store.Load(sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Status != machine.Blocked || got.Task.Accept != nil || got.Task.Outcome != "" {
		t.Fatalf("after the failed gate the task is %s/%s, accept %+v; want blocked", got.Task.Status, got.Task.Outcome, got.Task.Accept)
	}
	if got.Task.Gate == nil || len(got.Task.Gate.Runs) != 1 {
		t.Fatalf("the task's gate record: %+v", got.Task.Gate)
	}
	run := got.Task.Gate.Runs[0]
	if run.Passed || run.Error != "" || run.Failed != "exit 3" || run.ID != ge.Run.ID || run.Target != "main" || run.Base != intoSHA || run.Tree != candTree || run.BranchTip != branchTip ||
		len(run.Commands) != 1 || run.Commands[0].Cmd != "exit 3" || run.Host != "seam" {
		t.Fatalf("the recorded gate run: %+v", run)
	}
	if mine, err := e.Accepts().Match(sn.Task.ID, ""); err == nil {
		t.Fatalf("this machine recorded an accept the gate stopped: %+v", mine)
	}
}

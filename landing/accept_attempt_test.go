package landing

import (
	"context"
	"github.com/lazyorch/lazy/attempts"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// attemptsRepo is a real repository whose Env records launches instead
// of running supervisors: a test plays each attempt's agent itself.
func attemptsRepo(t *testing.T) (*Service, *[]string) {
	t.Helper()
	e := env(t)
	e.RepoDir = filepath.Dir(e.Repo.CommonDir)
	var mu sync.Mutex
	launched := &[]string{}
	e.Launch = func(id string) error {
		mu.Lock()
		defer mu.Unlock()
		*launched = append(*launched, id)
		return nil
	}
	return e, launched
}

// playTurn does what attempt id's agent would: commits files in its
// worktree, reports usage, and parks the task blocked.
func playTurn(t *testing.T, e *Service, id string, files map[string]string, cost float64) {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	wt := sn.Session.Worktree
	for name, content := range files {
		write(t, wt, name, content)
	}
	testrepo.Git(t, wt, "add", ".")
	testrepo.Git(t, wt, "commit", "-q", "-m", "attempt work")
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = machine.Blocked
		s.Task.Usage = &task.Usage{CostUSD: cost, InputTokens: 100, OutputTokens: 10}
		return &task.Op{Name: "test-turn", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAcceptAttemptLandsItAndClosesTheOthers: two attempts of one task,
// each its own task, branch and worktree; accepting attempt 2 lands its
// work (and only its) on main, completes the group with the reason and
// closes attempt 1 with "attempt 2 was chosen", keeping its branch.
func TestAcceptAttemptLandsItAndClosesTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, launched := attemptsRepo(t)
	g, err := e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "Fix the login race", Goal: "It fails one run in ten."})
	if err != nil {
		t.Fatal(err)
	}
	base := session.StartInput{Agent: "exec", ExecCommand: []string{"true"}, RepoDir: e.RepoDir}
	res, err := e.attempts().Start(ctx, g.Task.Slug, attempts.Input{N: 2, Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Started) != 2 || len(res.NotStart) != 0 || len(*launched) != 2 {
		t.Fatalf("started %d, not started %v, launched %v", len(res.Started), res.NotStart, *launched)
	}
	group := res.Group
	if group.Task.Status != machine.Backlog || len(group.Task.Attempts) != 2 {
		t.Fatalf("group %s with attempts %v", group.Task.Status, group.Task.Attempts)
	}
	var branches []string
	for i, a := range res.Started {
		k := i + 1
		if a.Task.AttemptOf != group.Task.ID || a.Task.Attempt != k || a.Task.Parent != "" || a.Task.Slug != attempts.Slug(group.Task.Slug, k) {
			t.Fatalf("attempt %d: %+v", k, a.Task)
		}
		if a.Task.Status != machine.Working || a.Session == nil || a.Session.Branch != "lazy/"+a.Task.Slug || a.Session.Agent != "exec" {
			t.Fatalf("attempt %d did not start on its own branch: %s %+v", k, a.Task.Status, a.Session)
		}
		if goal, _ := a.Goal(); goal != "It fails one run in ten." || a.Task.Title != group.Task.Title {
			t.Fatalf("attempt %d carries %q / %q", k, a.Task.Title, goal)
		}
		branches = append(branches, a.Session.Branch)
	}
	a1, a2 := res.Started[0].Task.ID, res.Started[1].Task.ID

	// The group cannot be started, accepted or closed as a task of its own.
	if _, err := e.lifecycle().Start(ctx, group.Task.ID, base); err == nil || !strings.Contains(err.Error(), "tried 2 ways") {
		t.Fatalf("start of the group: %v", err)
	}
	if _, err := e.lifecycle().Close(ctx, group.Task.ID, "nah"); err == nil || !strings.Contains(err.Error(), "attempts") {
		t.Fatalf("close of the group under running attempts: %v", err)
	}
	if _, err := e.attempts().Start(ctx, res.Started[0].Task.Slug, attempts.Input{N: 2, Base: base}); err == nil || !strings.Contains(err.Error(), "itself an attempt") {
		t.Fatalf("attempts of an attempt: %v", err)
	}

	playTurn(t, e, a1, map[string]string{"one.txt": "the first way\n"}, 0.25)
	playTurn(t, e, a2, map[string]string{"two.txt": "the second way\nin two lines\n"}, 0.5)

	v, err := e.attempts().Compare(ctx, group.Task.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Attempts) != 2 || v.Usage == nil || v.Usage.CostUSD != 0.75 || v.Usage.InputTokens != 200 || v.Chosen != 0 {
		t.Fatalf("view %+v usage %+v", v, v.Usage)
	}
	if d := v.Attempts[1].Diff; d == nil || d.Files != 1 || d.Additions != 2 || v.Attempts[1].Status != machine.Blocked || v.Attempts[1].Agent != "exec" {
		t.Fatalf("attempt 2 view %+v diff %+v", v.Attempts[1], d)
	}
	// The group's budget covers its attempts together.
	entries, err := e.Store.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := cost.NewTree(entries).Subtree(group.Task.ID).CostUSD; got != 0.75 {
		t.Fatalf("the group's subtree spent %v, want 0.75", got)
	}

	if _, err := e.AcceptAttempt(ctx, group.Task.Slug, 3, nil, AcceptOptions{}); err == nil || !strings.Contains(err.Error(), "has 2 attempts; --attempt 3 is not one of them") {
		t.Fatalf("--attempt 3: %v", err)
	}
	if _, err := e.Accept(ctx, group.Task.Slug, nil, AcceptOptions{}); err == nil || !strings.Contains(err.Error(), "--attempt K") {
		t.Fatalf("accept of the group itself: %v", err)
	}
	acc, err := e.AcceptAttempt(ctx, group.Task.Slug, 2, nil, AcceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.Warnings) != 0 {
		t.Fatalf("warnings: %v", acc.Warnings)
	}
	log := testrepo.Git(t, e.RepoDir, "log", "--format=%s%n%b", "main")
	if !strings.Contains(log, "Lazy-Task: "+a2) || strings.Contains(log, "Lazy-Task: "+a1) {
		t.Fatalf("main's log does not hold attempt 2 alone:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(e.RepoDir, "two.txt")); err != nil {
		t.Fatalf("attempt 2's file did not land: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.RepoDir, "one.txt")); err == nil {
		t.Fatal("attempt 1's file landed too")
	}
	gs, _ := e.Store.Load(group.Task.ID)
	if gs.Task.Status != machine.Complete || gs.Task.Outcome != task.OutcomeAccepted || gs.Task.Reason != "attempt 2 ("+res.Started[1].Task.Slug+") landed" {
		t.Fatalf("group %s %s %q", gs.Task.Status, gs.Task.Outcome, gs.Task.Reason)
	}
	s1, _ := e.Store.Load(a1)
	if s1.Task.Status != machine.Abandoned || s1.Task.Outcome != task.OutcomeClosed || s1.Task.Reason != "attempt 2 was chosen" {
		t.Fatalf("attempt 1: %s %s %q", s1.Task.Status, s1.Task.Outcome, s1.Task.Reason)
	}
	if tip := testrepo.Git(t, e.RepoDir, "rev-parse", "--verify", "-q", branches[0]); strings.TrimSpace(tip) == "" {
		t.Fatal("the closed attempt's branch is gone")
	}
	if s2, _ := e.Store.Load(a2); s2.Task.Usage == nil || s2.Task.Usage.CostUSD != 0.5 {
		t.Fatal("the landed attempt lost its cost")
	}
	if v, err := e.attempts().Compare(ctx, group.Task.Slug); err != nil || v.Chosen != 2 || v.Usage == nil || v.Usage.CostUSD != 0.75 {
		t.Fatalf("after the accept: %+v %v", v, err)
	}
	// Asked again (a crash after the merge, say), it lands nothing twice.
	if _, err := e.AcceptAttempt(ctx, group.Task.Slug, 2, nil, AcceptOptions{}); err != nil {
		t.Fatalf("accept again: %v", err)
	}
	if _, err := e.AcceptAttempt(ctx, group.Task.Slug, 1, nil, AcceptOptions{}); err == nil || !strings.Contains(err.Error(), "complete already") {
		t.Fatalf("accept of another attempt after the choice: %v", err)
	}
}

// TestAcceptingAnAttemptDirectlySettlesItsGroup: lazy accept on the
// attempt itself (not through the group) completes the group too, and a
// running sibling is stopped before it is closed.
func TestAcceptingAnAttemptDirectlySettlesItsGroup(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	e, _ := attemptsRepo(t)
	g, err := e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "Speed up the build"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.attempts().Start(ctx, g.Task.Slug, attempts.Input{N: 3, Base: session.StartInput{Agent: "exec", ExecCommand: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	a1 := res.Started[0].Task.ID
	playTurn(t, e, a1, map[string]string{"fast.txt": "yes\n"}, 0)
	if _, err := e.Accept(ctx, res.Started[0].Task.Slug, nil, AcceptOptions{}); err != nil {
		t.Fatal(err)
	}
	if gs, _ := e.Store.Load(g.Task.ID); gs.Task.Status != machine.Complete {
		t.Fatalf("group %s", gs.Task.Status)
	}
	for _, a := range res.Started[1:] {
		s, _ := e.Store.Load(a.Task.ID)
		if s.Task.Status != machine.Abandoned || s.Task.Reason != "attempt 1 was chosen" {
			t.Fatalf("%s: %s %q", s.Task.Slug, s.Task.Status, s.Task.Reason)
		}
	}
}

// TestAnAttemptLandedInATrainSettlesItsGroup: lazy accept A B C with an
// attempt among the tasks (a speculative train, lazy.gate.parallel 2)
// completes the attempt's group and closes its sibling, as lazy accept
// GROUP --attempt K does; the sibling named later in the train is then
// refused, not landed beside the chosen one.
func TestAnAttemptLandedInATrainSettlesItsGroup(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := newGateRepo(t, "true")
	r.config(t, "lazy.gate.parallel", "2")
	r.e.Launch = func(string) error { return nil }
	g, err := r.e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "Try the cache two ways"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.attempts().Start(ctx, g.Task.Slug, attempts.Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := res.Started[0].Task, res.Started[1].Task
	playTurn(t, r.e, a1.ID, map[string]string{"cache1.txt": "lru\n"}, 0.1)
	playTurn(t, r.e, a2.ID, map[string]string{"cache2.txt": "arc\n"}, 0.2)
	other := r.task(t, "unrelated", map[string]string{"other.txt": "x\n"})

	results := r.e.AcceptMany(ctx, []string{other.Task.ID, a2.Slug, a1.Slug}, nil, AcceptOptions{})
	if results[0].Err != nil || results[1].Err != nil {
		t.Fatalf("other: %v, attempt 2: %v", results[0].Err, results[1].Err)
	}
	if err := results[2].Err; err == nil || !strings.Contains(err.Error(), "attempt 1 of "+g.Task.Slug+", which is complete already") {
		t.Fatalf("attempt 1 after attempt 2 was chosen: %v", err)
	}
	gs := r.load(t, g.Task.ID)
	if gs.Task.Status != machine.Complete || gs.Task.Outcome != task.OutcomeAccepted || !strings.Contains(gs.Task.Reason, "attempt 2") {
		t.Fatalf("group %s %s %q", gs.Task.Status, gs.Task.Outcome, gs.Task.Reason)
	}
	if s1 := r.load(t, a1.ID); s1.Task.Status != machine.Abandoned || s1.Task.Reason != "attempt 2 was chosen" {
		t.Fatalf("attempt 1: %s %q", s1.Task.Status, s1.Task.Reason)
	}
	for _, q := range r.e.queue().Queues() {
		if len(q.Entries) != 0 {
			t.Fatalf("the queue into %s still holds %+v", q.Target, q.Entries)
		}
	}
	if out := testrepo.Git(t, r.dir, "ls-tree", "--name-only", "main"); strings.Contains(out, "cache1.txt") || !strings.Contains(out, "cache2.txt") || !strings.Contains(out, "other.txt") {
		t.Fatalf("main's files:\n%s", out)
	}
}

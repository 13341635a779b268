package attempts

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// TestStartRecordsTheGroupThenStartsEachAttempt: the group is recorded
// with its attempts' ids before the first attempt launches; each
// attempt is a task of its own that carries the group's title, goal,
// target, allowed paths and metadata, no budget of its own, and starts
// on its own branch from where the group would have.
func TestStartRecordsTheGroupThenStartsEachAttempt(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	g := e.create(t, lifecycle.CreateInput{Title: "Fix the login race", Goal: "It fails one run in ten.", TargetBranch: "release", AllowedPaths: []string{"auth/**"}})
	e.set(t, g.Task.ID, func(s *task.Snapshot) { s.Task.Metadata = map[string]string{"ticket": "LOG-7"} })
	var seen [][]string
	e.onLaunch = func(string) { seen = append(seen, e.load(t, g.Task.ID).Task.Attempts) }

	res, err := e.attempts().Start(ctx, g.Task.Slug, Input{N: 3, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd, Model: "ignored"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Started) != 3 || len(res.NotStart) != 0 || len(e.launches()) != 3 {
		t.Fatalf("started %d, not started %v, launched %v", len(res.Started), res.NotStart, e.launches())
	}
	group := e.load(t, g.Task.ID)
	if group.Task.Status != machine.Backlog || len(group.Task.Attempts) != 3 || !group.Task.IsAttemptGroup() {
		t.Fatalf("group %s with attempts %v", group.Task.Status, group.Task.Attempts)
	}
	for i, ids := range seen {
		if !slices.Equal(ids, group.Task.Attempts) {
			t.Fatalf("launch %d saw the group list %v, want %v recorded before it", i+1, ids, group.Task.Attempts)
		}
	}
	var creates []string
	for i, a := range res.Started {
		k := i + 1
		at := e.load(t, a.Task.ID)
		if at.Task.ID != group.Task.Attempts[i] || at.Task.AttemptOf != group.Task.ID || at.Task.Attempt != k || at.Task.Slug != Slug(group.Task.Slug, k) || at.Task.Parent != "" {
			t.Fatalf("attempt %d: %+v", k, at.Task)
		}
		if at.Task.TargetBranch != "release" || !slices.Equal(at.Task.AllowedPaths, []string{"auth/**"}) || at.Task.Metadata["ticket"] != "LOG-7" || at.Task.BudgetUSD != nil {
			t.Fatalf("attempt %d carries target %q, paths %v, metadata %v, budget %v", k, at.Task.TargetBranch, at.Task.AllowedPaths, at.Task.Metadata, at.Task.BudgetUSD)
		}
		if goal, _ := at.Goal(); goal != "It fails one run in ten." || at.Task.Title != group.Task.Title {
			t.Fatalf("attempt %d carries %q / %q", k, at.Task.Title, goal)
		}
		if at.Task.Status != machine.Working || at.Session == nil || at.Session.Branch != "lazy/"+at.Task.Slug || at.Session.Agent != "exec" || at.Session.Model != "" {
			t.Fatalf("attempt %d did not start on its own branch: %s %+v", k, at.Task.Status, at.Session)
		}
		creates = append(creates, "Create lazy/"+at.Task.Slug+" from release")
	}
	for _, c := range creates {
		if !slices.Contains(e.git.calls, c) {
			t.Fatalf("git calls %v lack %q", e.git.calls, c)
		}
	}
	comments, err := e.Store.Comments(group)
	if err != nil {
		t.Fatal(err)
	}
	want := "tried 3 ways: attempt 1 " + Slug(g.Task.Slug, 1) + " (exec), attempt 2 " + Slug(g.Task.Slug, 2) + " (exec), attempt 3 " + Slug(g.Task.Slug, 3) + " (exec)"
	if len(comments) == 0 || comments[len(comments)-1].Text != want {
		t.Fatalf("the group's comments %+v, want %q", comments, want)
	}

	// The group is not started again, nor tried again, nor is an attempt.
	if _, err := e.lifecycle().Start(ctx, g.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd}); err == nil || !strings.Contains(err.Error(), "tried 3 ways") {
		t.Fatalf("start of the group: %v", err)
	}
	if _, err := e.attempts().Start(ctx, g.Task.Slug, Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}}); err == nil || !strings.Contains(err.Error(), "already tried 3 ways") {
		t.Fatalf("attempts of a group: %v", err)
	}
	if _, err := e.attempts().Start(ctx, res.Started[0].Task.Slug, Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}}); err == nil || !strings.Contains(err.Error(), "itself an attempt") {
		t.Fatalf("attempts of an attempt: %v", err)
	}
}

// TestStartRefusesBeforeRecordingAnything: a count out of bounds, a
// task that is not in backlog, a repository with no commit, a sandbox
// that cannot run and an agent asking for less confinement than its own
// are refused in one sentence, with no group recorded and nothing
// launched.
func TestStartRefusesBeforeRecordingAnything(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	base := session.StartInput{Agent: "exec", ExecCommand: trueCmd}
	untouched := func(id, what string, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %v, want it to say %q", what, err, w)
			}
		}
		if sn := e.load(t, id); sn.Task.IsAttemptGroup() {
			t.Fatalf("%s recorded the group", what)
		}
		if l := e.launches(); len(l) != 0 {
			t.Fatalf("%s launched %v", what, l)
		}
	}
	g := e.create(t, lifecycle.CreateInput{Title: "Try it", TargetBranch: "release"})
	for n, want := range map[int]string{0: "2 to 8", 1: "without --attempts", 9: "at most 8"} {
		_, err := e.attempts().Start(ctx, g.Task.Slug, Input{N: n, Base: base})
		untouched(g.Task.ID, "--attempts "+string(rune('0'+n)), err, want)
	}
	_, err := e.attempts().Start(ctx, g.Task.Slug, Input{N: 2, Base: session.StartInput{Agent: "nosuchagent"}})
	untouched(g.Task.ID, "an unknown agent", err, "nosuchagent")
	_, err = e.attempts().Start(ctx, g.Task.Slug, Input{N: 2, Base: session.StartInput{Agent: "claude"}})
	untouched(g.Task.ID, "an agent not on PATH", err, "not an executable on PATH")

	e.git.noCommits = true
	_, err = e.attempts().Start(ctx, g.Task.Slug, Input{N: 2, Base: base})
	untouched(g.Task.ID, "no commits", err, "no commits yet")
	e.git.noCommits = false

	done := e.create(t, lifecycle.CreateInput{Title: "Done already", TargetBranch: "release"})
	e.set(t, done.Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Abandoned })
	_, err = e.attempts().Start(ctx, done.Task.Slug, Input{N: 2, Base: base})
	untouched(done.Task.ID, "a closed task", err, "start")

	noLauncher := e.attempts()
	env2 := e.Env
	env2.Launch = nil
	noLauncher.Env = &env2
	_, err = noLauncher.Start(ctx, g.Task.Slug, Input{N: 2, Base: base})
	untouched(g.Task.ID, "no launcher", err, "start")

	// A sandboxed parent's work is never run unconfined where the
	// sandbox cannot run (no bwrap on PATH).
	sandboxed := e.create(t, lifecycle.CreateInput{Title: "sandboxed parent"})
	e.runningHere(t, sandboxed.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, Sandbox: &proto.Sandbox{Network: "on"}})
	ag := e.asAgent(sandboxed.Task.ID)
	sub := ag.create(t, lifecycle.CreateInput{Title: "sub", Parent: sandboxed.Task.ID})
	_, err = ag.attempts().Start(ctx, sub.Task.ID, Input{N: 2, Base: base})
	untouched(sub.Task.ID, "a sandbox that cannot run", err, "bwrap", "nothing was started")

	// An agent held to its CLI's permissions cannot try its subtask with
	// the exec agent, which runs any command.
	held := e.create(t, lifecycle.CreateInput{Title: "held parent"})
	e.runningHere(t, held.Task.ID, owned.Session{Agent: "claude", PermissionMode: "default"})
	hag := e.asAgent(held.Task.ID)
	hsub := hag.create(t, lifecycle.CreateInput{Title: "held sub", Parent: held.Task.ID})
	_, err = hag.attempts().Start(ctx, hsub.Task.ID, Input{N: 2, Base: base})
	untouched(hsub.Task.ID, "an agent's attempts looser than itself", err, "less confined", "any command")
}

// TestAttemptsInheritConfinementAndTheBudgetLeft: an agent's attempts of
// its subtask run as confined as the agent's own session, and each
// attempt's turn may spend no more than what the parent's budget has
// left; the group's budget covers its attempts together.
func TestAttemptsInheritConfinementAndTheBudgetLeft(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	parent := e.create(t, lifecycle.CreateInput{Title: "parent", BudgetUSD: ptr(1.0)})
	e.runningHere(t, parent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, PermissionMode: "plan"})
	e.set(t, parent.Task.ID, func(s *task.Snapshot) { s.Task.Usage = &task.Usage{CostUSD: 0.9} })
	ag := e.asAgent(parent.Task.ID)
	tried := ag.create(t, lifecycle.CreateInput{Title: "tried", Parent: parent.Task.ID})

	loose := session.StartInput{Agent: "exec", ExecCommand: trueCmd}
	loose.Request.PermissionMode = "bypassPermissions"
	if _, err := ag.attempts().Start(ctx, tried.Task.ID, Input{N: 2, Base: loose}); err == nil || !strings.Contains(err.Error(), "less confined") {
		t.Fatalf("attempts looser than the agent's own session: %v", err)
	}
	if e.load(t, tried.Task.ID).Task.IsAttemptGroup() {
		t.Fatal("refused attempts recorded the group")
	}

	res, err := ag.attempts().Start(ctx, tried.Task.ID, Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}})
	if err != nil || len(res.Started) != 2 {
		t.Fatalf("attempts: %+v, %v", res, err)
	}
	for _, a := range res.Started {
		l, err := e.Sessions().Load(a.Task.ID)
		if err != nil || l.PermissionMode != "plan" || l.Sandbox != nil {
			t.Fatalf("attempt %s runs %+v (%v), want the parent's permission mode plan", a.Task.Slug, l, err)
		}
		if a.Task.Parent != parent.Task.ID || !strings.Contains(strings.Join(e.git.calls, "\n"), "Create lazy/"+a.Task.Slug+" from lazy/"+parent.Task.Slug) {
			t.Fatalf("attempt %s does not start from its parent's branch: %v", a.Task.Slug, e.git.calls)
		}
		if got := e.command(t, a.Task.ID).MaxBudgetUSD; got <= 0 || got > 0.1+1e-9 {
			t.Fatalf("attempt %s may spend $%v, more than the parent has left", a.Task.Slug, got)
		}
	}
	for i, a := range res.Started {
		e.set(t, a.Task.ID, func(s *task.Snapshot) { s.Task.Usage = &task.Usage{CostUSD: 0.25 * float64(i+1)} })
	}
	entries, err := e.Store.List()
	if err != nil {
		t.Fatal(err)
	}
	tree := cost.NewTree(entries)
	if got := tree.Subtree(tried.Task.ID).CostUSD; math.Abs(got-0.75) > 1e-9 {
		t.Fatalf("the group's subtree spent %v, want its attempts' 0.75", got)
	}
	if got := tree.Subtree(parent.Task.ID).CostUSD; math.Abs(got-1.65) > 1e-9 {
		t.Fatalf("the parent's subtree spent %v, want 1.65 with the attempts under it", got)
	}
}

// started is a group of n attempts started on e, exec agents all.
func started(t *testing.T, e *testEnv, title string, n int) (*task.Snapshot, []*task.Snapshot) {
	t.Helper()
	g := e.create(t, lifecycle.CreateInput{Title: title, TargetBranch: "release"})
	res, err := e.attempts().Start(context.Background(), g.Task.Slug, Input{N: n, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}})
	if err != nil || len(res.Started) != n {
		t.Fatalf("attempts: %+v, %v", res, err)
	}
	return res.Group, res.Started
}

// TestCompareRollsUpTheAttempts: the comparison lists every attempt in
// order with its agent, status, gate, diff and cost, totals the cost of
// trying, names the one that landed, and shows an attempt the group
// lists but whose record is not here as missing.
func TestCompareRollsUpTheAttempts(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	g, as := started(t, e, "Speed up the build", 2)
	a1, a2 := as[0].Task, as[1].Task
	e.git.stats["tip-"+a1.ID] = worktree.DiffStat{Files: 1, Additions: 2}
	e.set(t, a1.ID, func(s *task.Snapshot) {
		s.Task.Status = machine.Blocked
		s.Task.Usage = &task.Usage{CostUSD: 0.25, InputTokens: 100, OutputTokens: 10}
		s.Task.Gate = &task.GateRecord{Runs: []task.GateRun{{Passed: true, Target: "release"}}}
	})
	e.set(t, a2.ID, func(s *task.Snapshot) { s.Task.Usage = &task.Usage{CostUSD: 0.5, InputTokens: 100, OutputTokens: 10} })
	e.land(t, a2.ID)
	lost, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	e.set(t, g.Task.ID, func(s *task.Snapshot) { s.Task.Attempts = append(s.Task.Attempts, lost) })

	v, err := e.attempts().Compare(ctx, g.Task.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if v.Group != g.Task.Slug || len(v.Attempts) != 3 || v.Chosen != 2 || v.Usage == nil || v.Usage.CostUSD != 0.75 || v.Usage.InputTokens != 200 {
		t.Fatalf("comparison %+v usage %+v", v, v.Usage)
	}
	one, two, three := v.Attempts[0], v.Attempts[1], v.Attempts[2]
	if one.K != 1 || one.Slug != a1.Slug || one.Diff == nil || one.Diff.Files != 1 || one.Review == nil || one.Review.BranchSHA != "tip-"+a1.ID {
		t.Fatalf("attempt 1 %+v diff %+v", one, one.Diff)
	}
	cells := func(a Attempt) string {
		return strings.Join([]string{a.AgentCell(), a.StatusCell(), a.CostCell(), a.GateCell(), a.DiffCell()}, " | ")
	}
	if got, want := cells(one), "exec | blocked | $0.2500 | passed | "+one.Diff.String(); got != want {
		t.Fatalf("attempt 1's cells %q, want %q", got, want)
	}
	if got, want := cells(two), "exec | complete (landed) | $0.5000 | - | landed (branch removed)"; got != want || !two.Landed() {
		t.Fatalf("attempt 2's cells %q, want %q", got, want)
	}
	if !three.Missing || three.K != 3 || three.ID != lost || cells(three) != "- |  | - | - | -" {
		t.Fatalf("the missing attempt %+v: %q", three, cells(three))
	}
	if UsageCell(&task.Usage{InputTokens: 5}) != "unpriced" || UsageCell(&task.Usage{CostUSD: 1, Unpriced: 1}) != "$1.0000 + unpriced" || UsageCell(&task.Usage{Flagged: "x"}) != "left out (out of bounds)" {
		t.Fatal("usage cells")
	}

	if _, err := e.attempts().Compare(ctx, a1.Slug); err == nil || !strings.Contains(err.Error(), "is attempt 1 of "+g.Task.Slug) {
		t.Fatalf("compare of an attempt: %v", err)
	}
	plain := e.create(t, lifecycle.CreateInput{Title: "plain"})
	if _, err := e.attempts().Compare(ctx, plain.Task.Slug); err == nil || !strings.Contains(err.Error(), "is not tried as attempts") {
		t.Fatalf("compare of a plain task: %v", err)
	}
	for _, c := range e.git.calls {
		if strings.HasPrefix(c, "Numstat") && c != "Numstat base..tip-"+a1.ID {
			t.Fatalf("measured %q: only the attempt with a branch here is", c)
		}
	}
}

// TestSettleCompletesTheGroupAndClosesTheOthers: once an attempt lands,
// its group completes with the reason, the running sibling is stopped
// and every open one closed with "attempt K was chosen"; settling again
// changes nothing, accepting a sibling is refused, and choosing the
// landed attempt again finds nothing to merge.
func TestSettleCompletesTheGroupAndClosesTheOthers(t *testing.T) {
	ctx := context.Background()
	e := env(t)
	g, as := started(t, e, "Try the cache three ways", 3)
	at := e.attempts()
	if _, err := at.Choose(ctx, g.Task.Slug, 4); err == nil || !strings.Contains(err.Error(), "has 3 attempts; --attempt 4 is not one of them (give 1 to 3)") {
		t.Fatalf("--attempt 4: %v", err)
	}
	plain := e.create(t, lifecycle.CreateInput{Title: "plain"})
	if _, err := at.Choose(ctx, plain.Task.Slug, 1); err == nil || !strings.Contains(err.Error(), "is not tried as attempts") {
		t.Fatalf("--attempt of a plain task: %v", err)
	}
	c, err := at.Choose(ctx, g.Task.Slug, 2)
	if err != nil || c.Landed || c.Attempt.Task.ID != as[1].Task.ID || c.Group.Task.ID != g.Task.ID {
		t.Fatalf("choice %+v, %v", c, err)
	}
	if g2, w, err := at.SettleGroup(ctx, as[1].Task.ID); g2 != nil || w != nil || err != nil {
		t.Fatalf("settling before anything landed: %v %v %v", g2, w, err)
	}

	e.set(t, as[2].Task.ID, func(s *task.Snapshot) { s.Task.Status = machine.Blocked })
	sibling := e.load(t, as[0].Task.ID) // still working, as read before the choice
	e.land(t, as[1].Task.ID)
	group, warnings, err := at.SettleGroup(ctx, as[1].Task.ID)
	if err != nil || len(warnings) != 0 || group == nil {
		t.Fatalf("settle: %v %v %v", group, warnings, err)
	}
	gs := e.load(t, g.Task.ID)
	if want := "attempt 2 (" + as[1].Task.Slug + ") landed"; gs.Task.Status != machine.Complete || gs.Task.Outcome != task.OutcomeAccepted || gs.Task.Reason != want {
		t.Fatalf("group %s %s %q, want %q", gs.Task.Status, gs.Task.Outcome, gs.Task.Reason, want)
	}
	for _, a := range []*task.Snapshot{as[0], as[2]} {
		s := e.load(t, a.Task.ID)
		if s.Task.Status != machine.Abandoned || s.Task.Outcome != task.OutcomeClosed || s.Task.Reason != "attempt 2 was chosen" {
			t.Fatalf("%s: %s %s %q", s.Task.Slug, s.Task.Status, s.Task.Outcome, s.Task.Reason)
		}
	}
	if err := at.SiblingChosen(sibling); err == nil || !strings.Contains(err.Error(), "attempt 1 of "+g.Task.Slug+", which is complete already") {
		t.Fatalf("accepting a sibling after the choice: %v", err)
	}
	if err := at.SiblingChosen(e.load(t, as[1].Task.ID)); err != nil {
		t.Fatalf("the landed attempt itself: %v", err)
	}
	if group, warnings, err := at.SettleGroup(ctx, as[1].Task.ID); group != nil || len(warnings) != 0 || err != nil {
		t.Fatalf("settling again: %v %v %v", group, warnings, err)
	}
	c, err = at.Choose(ctx, g.Task.Slug, 2)
	if err != nil || !c.Landed || c.Attempt.Task.ID != as[1].Task.ID || len(c.Warnings) != 0 {
		t.Fatalf("choosing the landed attempt again: %+v, %v", c, err)
	}
	if _, err := at.Choose(ctx, g.Task.Slug, 1); err == nil || !strings.Contains(err.Error(), "the group is complete already") {
		t.Fatalf("choosing another attempt after the choice: %v", err)
	}
}

package attempts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Input is how to try a task several ways.
type Input struct {
	// N is how many attempts (2 to task.MaxAttempts).
	N int
	// Agents are cycled over the attempts (attempt K runs
	// Agents[(K-1) % len]); empty: Base.Agent for all.
	Agents []string
	// Base is what every attempt starts with (its Agent the default,
	// its Model the model each attempt asks for).
	Base session.StartInput
	// Pick is how the attempt that lands is chosen: task.PickHuman ("",
	// a human reads the comparison) or task.PickGate (each attempt gated
	// when it parks, the best proposed; see PickStep). Land, with
	// PickGate, lands the best through the normal accept.
	Pick string
	Land bool
}

// Result is what Start did: the group, the attempts it
// started, and those it could not (each waits in backlog).
type Result struct {
	Group    *task.Snapshot
	Started  []*task.Snapshot
	NotStart []error
}

// Slug is attempt k's slug: the group's, cut to leave room, and
// "-a<k>".
func Slug(group string, k int) string {
	suffix := "-a" + strconv.Itoa(k)
	base := group
	for base != "" && !task.ValidSlug(base+suffix) {
		base = strings.TrimRight(base[:len(base)-1], "-")
	}
	return base + suffix
}

// Check refuses a number of attempts lazy does not run, in one
// sentence.
func Check(n int) error {
	switch {
	case n < 2:
		return fmt.Errorf("--attempts %d: attempts try a task 2 to %d ways side by side; for one, lazy start it without --attempts", n, task.MaxAttempts)
	case n > task.MaxAttempts:
		return fmt.Errorf("--attempts %d: lazy runs at most %d attempts of one task (each is a worktree and an agent at work); ask for %d or fewer", n, task.MaxAttempts, task.MaxAttempts)
	}
	return nil
}

// attemptInput is attempt k's start settings.
func (in Input) attemptInput(k int) session.StartInput {
	s := in.Base
	if len(in.Agents) > 0 {
		s.Agent = in.Agents[(k-1)%len(in.Agents)]
	}
	if s.Agent != "exec" {
		s.ExecCommand = nil
	} else {
		s.Model = ""
	}
	return s
}

// Start tries a backlog task N ways: it records the task as an
// attempt group, creates its N attempts and starts each. Everything
// that can be checked is checked before anything is recorded (the
// count, the model, that every agent can run here); an attempt whose
// start fails after that waits in backlog, and the result says so.
func (at *Service) Start(ctx context.Context, name string, in Input) (*Result, error) {
	e := at.Env
	if err := Check(in.N); err != nil {
		return nil, err
	}
	pick, err := Pick(in.Pick)
	if err != nil {
		return nil, err
	}
	if in.Land && pick != task.PickGate {
		return nil, fmt.Errorf("--land lands the attempt the gate picks; give --pick gate with it (or git config lazy.attempts.pick gate)")
	}
	if err := e.RequireLauncher("start"); err != nil {
		return nil, err
	}
	if err := agent.ValidModel(in.Base.Model); err != nil {
		return nil, err
	}
	checked := map[string]bool{}
	for k := 1; k <= in.N; k++ {
		s := in.attemptInput(k)
		if checked[s.Agent] {
			continue
		}
		checked[s.Agent] = true
		if err := session.AgentRunnable(s); err != nil {
			return nil, err
		}
	}
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	slug := sn.Task.Slug
	switch {
	case sn.Task.AttemptOf != "":
		return nil, fmt.Errorf("start %s --attempts: the task is itself an attempt; try its group's task again instead", slug)
	case sn.Task.IsAttemptGroup():
		return nil, fmt.Errorf("start %s --attempts: the task is already tried %d ways; lazy show %s compares them", slug, len(sn.Task.Attempts), slug)
	case sn.Task.Status != machine.Backlog:
		return nil, lifecycle.NotStartable(slug, sn.Task.Status)
	}
	if err := lifecycle.ParentOpen(e.Store, sn, "start"); err != nil {
		return nil, err
	}
	if err := lifecycle.DepsDone(e.Store, sn); err != nil {
		return nil, err
	}
	// Each attempt is confined as a start of the task would be (its
	// parent's session, the asking agent's): refused here, before the
	// group is recorded, rather than attempt by attempt.
	for k := 1; k <= in.N; k++ {
		s, err := e.StartConfinement(sn, in.attemptInput(k))
		if err != nil {
			return nil, session.ConfinementRefusal("start", slug, err)
		}
		if err := session.SandboxReady(ctx, s.Sandbox); err != nil {
			return nil, fmt.Errorf("start %s --attempts: %w; nothing was started", slug, err)
		}
	}
	repoDir := in.Base.RepoDir
	if repoDir == "" {
		repoDir = e.Dir()
	}
	if at.worktrees().NoCommits(ctx, repoDir) {
		return nil, fmt.Errorf("start %s: this repository has no commits yet, so there is nothing to branch from; make a first commit (git commit --allow-empty -m init), then start again", slug)
	}
	if _, err := e.BaseBranch(ctx, sn, repoDir); err != nil {
		return nil, fmt.Errorf("start %s: %w", slug, err)
	}
	goal, err := sn.Goal()
	if err != nil {
		return nil, err
	}
	ids := make([]string, in.N)
	for i := range ids {
		if ids[i], err = task.NewID(); err != nil {
			return nil, err
		}
	}
	// The group is recorded first, with its attempts' ids: from here on
	// every surface knows the task is tried N ways, and an attempt a
	// crash leaves uncreated shows as missing rather than not at all.
	var plan []string
	for k := 1; k <= in.N; k++ {
		plan = append(plan, fmt.Sprintf("attempt %d %s (%s)", k, Slug(slug, k), AgentLabel(in.attemptInput(k).Agent, in.attemptInput(k).Model)))
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Backlog || s.Task.IsAttemptGroup() {
			return nil, fmt.Errorf("start %s: the task changed meanwhile (it is %s); look at it again", s.Task.Slug, s.Task.Status)
		}
		s.Task.Attempts = ids
		if pick == task.PickGate {
			s.Task.Pick = &task.AttemptPick{Rule: pick, Land: in.Land}
		}
		now := time.Now().UTC().Truncate(time.Second)
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: fmt.Sprintf("tried %d ways: %s", in.N, strings.Join(plan, ", "))})
		return &task.Op{Name: "attempts", Actor: e.Actor, Reason: fmt.Sprintf("tried %d ways", in.N)}, nil
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Group: sn}
	for k := 1; k <= in.N; k++ {
		spec := task.CreateSpec{
			ID: ids[k-1], Title: sn.Task.Title, Goal: goal, Slug: Slug(slug, k),
			Parent: sn.Task.Parent, TargetBranch: sn.Task.TargetBranch, AllowedPaths: sn.Task.AllowedPaths,
			Metadata: maps.Clone(sn.Task.Metadata), AttemptOf: sn.Task.ID, Attempt: k, Actor: e.Actor,
		}
		if _, err := e.Store.Create(spec); err != nil {
			res.NotStart = append(res.NotStart, fmt.Errorf("attempt %d (%s) was not created: %w", k, spec.Slug, err))
			continue
		}
		started, err := at.Lifecycle.Start(ctx, ids[k-1], in.attemptInput(k))
		if err != nil {
			res.NotStart = append(res.NotStart, fmt.Errorf("attempt %d (%s) did not start (it waits in backlog; lazy start %s starts it): %w", k, spec.Slug, spec.Slug, err))
			continue
		}
		res.Started = append(res.Started, started)
	}
	if len(res.Started) == 0 {
		return res, fmt.Errorf("start %s --attempts %d: no attempt started: %w", slug, in.N, errors.Join(res.NotStart...))
	}
	return res, nil
}

package conversation

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lazyorch/lazy/internal/allowpath"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// Pairing is a pairing that began: what EndPair needs to wrap it up.
type Pairing struct {
	Snapshot *task.Snapshot
	Argv     []string // the interactive agent command
	StartSHA string   // HEAD when pairing began
	Started  time.Time
}

// PairArgv is the interactive command for a session's agent: the agent
// CLI resumed in its own conversation, or the user's shell for an exec
// agent (which has no interactive mode of its own).
func PairArgv(s *task.Session) []string {
	switch s.Agent {
	case "claude":
		if s.AgentSessionID != "" {
			return []string{"claude", "--resume=" + s.AgentSessionID}
		}
		return []string{"claude"}
	case "codex":
		if s.AgentSessionID != "" {
			return []string{"codex", "resume", s.AgentSessionID}
		}
		return []string{"codex"}
	}
	if sh := os.Getenv("SHELL"); sh != "" {
		return []string{sh}
	}
	return []string{"/bin/sh"}
}

// BeginPair moves a parked or interrupted task to pairing. The pairing
// lock (pairing.json naming this process) is written first, so a pairing
// whose process dies is recovered by the reconciler.
func (cv *Service) BeginPair(ctx context.Context, name string) (*Pairing, error) {
	e := cv.Env
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := e.Turns().CheckResumable(sn, "pair", true, machine.Blocked, machine.Conflict, machine.Interrupted); err != nil {
		return nil, err
	}
	if _, err := e.Bind(sn); err != nil {
		return nil, fmt.Errorf("pair %w", err)
	}
	head, err := cv.worktrees().Head(ctx, sn.Session.Worktree)
	if err != nil {
		return nil, fmt.Errorf("pair %s: read its worktree: %w", sn.Task.Slug, err)
	}
	pd := proto.ForTask(e.Repo.LazyDir(), sn.Task.ID)
	now := time.Now().UTC()
	if err := pd.Write(proto.PairingFile, proto.Pairing{Session: sn.Session.ID, PID: os.Getpid(), StartedAt: now}); err != nil {
		return nil, err
	}
	sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if err := e.Turns().CheckResumable(s, "pair", true, machine.Blocked, machine.Conflict, machine.Interrupted); err != nil {
			return nil, err
		}
		if err := machine.Validate(s.Task.Status, machine.Pairing, e.Actor); err != nil {
			return nil, err
		}
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "pair", Content: "[pair] a human took over the worktree", At: now.Truncate(time.Second), Session: s.Session.ID})
		s.Task.Status = machine.Pairing
		return &task.Op{Name: "pair", Actor: e.Actor}, nil
	})
	if err != nil {
		pd.Remove(proto.PairingFile)
		return nil, err
	}
	if _, err := e.Bind(sn); err != nil { // sn is the record as just written
		return nil, fmt.Errorf("pair %w", err)
	}
	return &Pairing{Snapshot: sn, Argv: PairArgv(sn.Session), StartSHA: head, Started: now}, nil
}

// EndPair records what the pairing did as a turn, flags files changed
// outside the allowed paths, and parks the task (blocked, or conflict
// with violations pending).
func (cv *Service) EndPair(ctx context.Context, p *Pairing, exitCode int) (*task.Snapshot, error) {
	e := cv.Env
	id := p.Snapshot.Task.ID
	unlock, err := e.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	wt := p.Snapshot.Session.Worktree
	commits, _ := cv.worktrees().Commits(ctx, wt, p.StartSHA)
	changed, _ := cv.worktrees().ChangedFiles(ctx, wt, p.StartSHA)
	took := time.Since(p.Started).Round(time.Second)
	summary := fmt.Sprintf("[pair] paired for %s; %s; %s changed", took, words.Count(len(commits), "commit", "commits"), words.Count(len(changed), "file", "files"))
	if exitCode != 0 {
		summary += fmt.Sprintf("; the agent exited with code %d", exitCode)
	}
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Pairing {
			return nil, fmt.Errorf("pair %s: the task is %s, no longer pairing; the work in the worktree is kept", s.Task.Slug, s.Task.Status)
		}
		code := exitCode
		// The human did this work, through the agent CLI: the turn is
		// theirs, with what it produced.
		s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: e.Actor, Kind: "pair", Content: summary, At: time.Now().UTC().Truncate(time.Second), Session: s.Session.ID,
			Commits: commits, ChangedFiles: changed, ExitCode: &code})
		// Flag passes over files already approved.
		s.Violations.Flag(allowpath.Outside(s.Task.AllowedPaths, changed), p.StartSHA)
		s.Task.Status = machine.Park(s.PendingViolations())
		return &task.Op{Name: "pair-end", Actor: e.Actor, Reason: summary}, nil
	})
	proto.ForTask(e.Repo.LazyDir(), id).Remove(proto.PairingFile)
	return sn, err
}

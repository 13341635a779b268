package landing

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// load resolves name and loads the task, without a lock: for reads.
func (e *Service) load(name string) (*task.Snapshot, error) {
	id, err := e.Store.Resolve(name)
	if err != nil {
		return nil, err
	}
	return e.Store.Load(id)
}

// PreviewGit is what accept --dry-run reads of git: the commits and
// files the squash would bring, and whether the destination is dirty.
type PreviewGit interface {
	CommitLog(ctx context.Context, repoDir, from, to string) ([]string, error)
	NameStatus(ctx context.Context, repoDir, from, to string) ([]string, error)
	Stat(ctx context.Context, repoDir, from, to string, wide bool) (string, error)
	Dirty(ctx context.Context, dir string) (bool, error)
}

// previewGit is git in the dry run's role.
func (e *Service) previewGit() PreviewGit { return e.worktrees() }

// AcceptPreview is what `lazy accept --dry-run` reports: exactly what a
// local accept would squash-merge, and the commit message it would write.
type AcceptPreview struct {
	review.Review
	Commits []string `json:"commits"` // "sha subject", oldest first
	Files   []string `json:"files"`   // git diff --name-status lines
	Stat    string   `json:"stat"`
	Message string   `json:"message"`
	Blocker string   `json:"blocker,omitempty"` // why accept would refuse now
	// Protected names the protected paths the change touches, which
	// need a human's lazy accept --approve-protected.
	Protected *ProtectedView `json:"protected,omitempty"`
}

// AcceptableStatus refuses an accept in words about the task, never
// about the state machine's internals.
func AcceptableStatus(slug string, st machine.Status) error {
	switch st {
	case machine.Blocked, machine.Submitted, machine.Merging, machine.Conflict:
		return nil
	case machine.Backlog:
		return fmt.Errorf("accept %s: the task is in backlog and has no work yet; lazy start %s first", slug, slug)
	case machine.Working:
		return fmt.Errorf("accept %s: an agent turn is still running; wait for it (lazy wait %s) or lazy stop %s, then accept", slug, slug, slug)
	case machine.Pairing:
		return fmt.Errorf("accept %s: a human is pairing in its worktree; accept after the pairing session ends", slug)
	case machine.Interrupted:
		return fmt.Errorf("accept %s: its last turn was interrupted; lazy resume %s (or lazy unblock %s -m ...) and accept once it is blocked", slug, slug, slug)
	case machine.Abandoned:
		return fmt.Errorf("accept %s: the task is abandoned; lazy reopen %s first", slug, slug)
	}
	return fmt.Errorf("accept %s: the task is %s; accept works on blocked or submitted tasks", slug, st)
}

// PreviewAccept computes what accept would merge without writing
// anything: no record, no worktree, no merge.
func (e *Service) PreviewAccept(ctx context.Context, name string) (*AcceptPreview, error) {
	sn, err := e.load(name)
	if err != nil {
		return nil, err
	}
	slug := sn.Task.Slug
	if sn.Task.Status == machine.Complete && sn.Task.Outcome == task.OutcomeAccepted {
		return nil, fmt.Errorf("accept %s: %w", slug, session.ErrAlreadyAccepted)
	}
	if err := AcceptableStatus(slug, sn.Task.Status); err != nil {
		return nil, err
	}
	r, wt, err := e.review().Measure(ctx, sn, "no work to review")
	if err != nil {
		return nil, fmt.Errorf("accept %w", err)
	}
	p := &AcceptPreview{Review: *r, Commits: []string{}, Files: []string{}}
	commits, err := e.previewGit().CommitLog(ctx, e.Dir(), r.MergeBase, r.BranchSHA)
	if err != nil {
		return nil, err
	}
	p.Commits = append(p.Commits, commits...)
	files, err := e.previewGit().NameStatus(ctx, e.Dir(), r.MergeBase, r.BranchSHA)
	if err != nil {
		return nil, err
	}
	p.Files = append(p.Files, files...)
	if p.Stat, err = e.previewGit().Stat(ctx, e.Dir(), r.MergeBase, r.BranchSHA, false); err != nil {
		return nil, err
	}
	// The very message the accept writes.
	msg, err := e.acceptMessage(sn, r.Branch)
	if err != nil {
		return nil, err
	}
	p.Message = strings.TrimSuffix(msg, "\n")
	switch {
	case sn.Task.Status == machine.Conflict || sn.PendingViolations() > 0:
		p.Blocker = fmt.Sprintf("%s pending; decide them with lazy unblock --approve-file PATH or --no-approve-files first", words.Count(sn.PendingViolations(), "file-permission violation is", "file-permission violations are"))
	case len(p.Files) == 0:
		p.Blocker = "the branch changes nothing relative to " + r.Into + "; lazy close it instead"
	}
	if p.Protected, err = e.Gates().ProtectedChanges(ctx, sn); err != nil {
		return nil, fmt.Errorf("accept %s: %w", slug, err)
	}
	if p.Protected != nil && p.Blocker == "" {
		p.Blocker = "its change " + p.Protected.Line()
	}
	if wt != "" && p.Blocker == "" {
		if dirty, err := e.previewGit().Dirty(ctx, wt); err == nil && dirty {
			p.Blocker = "its worktree " + wt + " has uncommitted changes; commit or discard them first"
		}
	}
	return p, nil
}

package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/task"
)

// Decisions settle a task's pending file-permission violations: each
// approved file is kept, every other pending file is reverted to its
// pre-turn content. With neither set nothing is decided.
type Decisions struct {
	Approve    []string // --approve-file
	RevertRest bool     // --no-approve-files: revert everything not approved
}

func (d Decisions) any() bool { return len(d.Approve) > 0 || d.RevertRest }

// decide applies d to the task under its lock: the decisions are
// committed first (the durable record), then reverted files are restored
// in the worktree and committed on the task branch. It returns the
// snapshot after the record.
func (l *Service) decide(ctx context.Context, sn *task.Snapshot, d Decisions) (*task.Snapshot, error) {
	e := l.Env
	if !d.any() {
		return sn, nil
	}
	approve := map[string]bool{}
	pending := sn.Violations.Pending
	for _, p := range sanitize.Fields(d.Approve) {
		if _, decided := sn.Violations.Decided[p]; decided && !slices.Contains(pending, p) {
			continue // a decision is sticky; re-naming it is always accepted
		}
		approve[p] = true
	}
	if len(pending) == 0 {
		if len(approve) == 0 {
			return sn, nil // every file named was decided already; nothing is pending
		}
		return nil, fmt.Errorf("%s has no pending file-permission violations to decide", sn.Task.Slug)
	}
	for p := range approve {
		if !slices.Contains(pending, p) {
			return nil, fmt.Errorf("%q is not a pending violation of %s; pending: %s", p, sn.Task.Slug, strings.Join(pending, ", "))
		}
	}
	for _, p := range pending {
		if !filepath.IsLocal(p) {
			return nil, fmt.Errorf("the violation record of %s names %q, which is not a path inside the worktree; refusing to touch it", sn.Task.Slug, p)
		}
	}
	type revert struct{ path, base string }
	var reverts []revert
	sn, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		reverts = nil
		if s.Violations.Decided == nil {
			s.Violations.Decided = map[string]string{}
		}
		var kept, reverted []string
		for _, p := range s.Violations.Pending {
			if approve[p] {
				s.Violations.Decided[p] = task.Approved
				kept = append(kept, p)
			} else {
				s.Violations.Decided[p] = task.Reverted
				reverted = append(reverted, p)
				reverts = append(reverts, revert{p, s.Violations.Bases[p]})
			}
			delete(s.Violations.Bases, p)
		}
		s.Violations.Pending = []string{}
		s.AddComment(task.Comment{Actor: e.Actor, At: time.Now().UTC().Truncate(time.Second),
			Text: fmt.Sprintf("file-permission decisions: approved %s; reverted %s", listOrNone(kept), listOrNone(reverted))})
		return &task.Op{Name: "decide-violations", Actor: e.Actor}, nil
	})
	if err != nil {
		return nil, err
	}
	local, err := e.Owned(sn)
	if err != nil {
		return nil, fmt.Errorf("the decisions are recorded, but no file was reverted: %w", err)
	}
	dir := local.Worktree
	var commit []string
	for _, r := range reverts {
		staged, err := revertFile(ctx, l.worktrees(), dir, r.path, r.base)
		if err != nil {
			return nil, fmt.Errorf("the decisions are recorded, but reverting %s failed (restore it by hand: git -C %s checkout %s -- %s): %w", r.path, dir, r.base, r.path, err)
		}
		if staged {
			commit = append(commit, r.path)
		}
	}
	msg := "lazy: revert files outside the allowed paths\n\nNot approved: " + strings.Join(commit, ", ")
	if err := l.worktrees().CommitAsLazy(ctx, dir, msg, commit); err != nil {
		return nil, fmt.Errorf("the files are reverted, but committing the revert failed: %w", err)
	}
	return sn, nil
}

// revertFile restores path in the worktree dir to its content at base
// (see worktree.RevertFile); base must be a recorded commit.
func revertFile(ctx context.Context, wt Worktree, dir, path, base string) (bool, error) {
	if !task.ValidHex(base) {
		return false, fmt.Errorf("no pre-turn commit is recorded for %s", path)
	}
	return wt.RevertFile(ctx, dir, path, base)
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	sort.Strings(l)
	return strings.Join(l, ", ")
}

package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/task"
)

// AllowMode says how SetAllowedPaths combines patterns with the policy.
type AllowMode int

// Allow modes.
const (
	AllowReplace AllowMode = iota // the policy becomes patterns (none: no policy)
	AllowAdd
	AllowRemove
)

// SetAllowedPaths edits a task's allowed-paths policy. It applies from
// the next turn on; violations already pending keep owing a decision.
func (l *Service) SetAllowedPaths(ctx context.Context, name string, patterns []string, mode AllowMode) (*task.Snapshot, error) {
	e := l.Env
	var clean []string
	for _, p := range sanitize.Fields(patterns) {
		if err := task.ValidPattern(p); err != nil {
			return nil, err
		}
		clean = append(clean, p)
	}
	return e.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status.IsTerminal() {
			return nil, fmt.Errorf("allow %s: the task is %s; reopen it first", s.Task.Slug, s.Task.Status)
		}
		next := []string{}
		switch mode {
		case AllowReplace:
			next = append(next, clean...)
		case AllowAdd:
			next = append(next, s.Task.AllowedPaths...)
			for _, p := range clean {
				if !slices.Contains(next, p) {
					next = append(next, p)
				}
			}
		case AllowRemove:
			for _, p := range clean {
				if !slices.Contains(s.Task.AllowedPaths, p) {
					return nil, fmt.Errorf("allow %s: %q is not in its policy (%s)", s.Task.Slug, p, listOrNone(append([]string(nil), s.Task.AllowedPaths...)))
				}
			}
			for _, p := range s.Task.AllowedPaths {
				if !slices.Contains(clean, p) {
					next = append(next, p)
				}
			}
		}
		if len(next) == 0 {
			next = nil
		}
		s.Task.AllowedPaths = next
		reason := "allowed paths: " + strings.Join(next, ", ")
		if next == nil {
			reason = "no allowed-paths policy (every file allowed)"
		}
		return &task.Op{Name: "allow", Actor: e.Actor, Reason: reason}, nil
	})
}

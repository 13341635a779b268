package lifecycle

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/task"
)

// Reparent moves a task under another parent, or to the top level when
// parent is "". The task must not be active or finished, the new parent
// must be unfinished, and no task may become its own ancestor. A started
// task keeps its branch: from now on it merges upstream from, and is
// accepted into, the new parent's branch.
func (l *Service) Reparent(ctx context.Context, name, parent string) (*task.Snapshot, error) {
	e := l.Env
	newParent := ""
	if parent != "" {
		p, err := e.Store.Resolve(parent)
		if err != nil {
			return nil, fmt.Errorf("new parent: %w", err)
		}
		newParent = p
	}
	return e.Update(ctx, name, func(s *task.Snapshot) (*task.Op, error) {
		slug := s.Task.Slug
		switch {
		case s.Task.Status.IsActive():
			return nil, fmt.Errorf("reparent %s: the task is %s; wait until it is parked", slug, s.Task.Status)
		case s.Task.Status.IsTerminal():
			return nil, fmt.Errorf("reparent %s: the task is %s; reopen it first", slug, s.Task.Status)
		case newParent == s.Task.Parent:
			return nil, fmt.Errorf("reparent %s: it already has that parent", slug)
		case newParent == s.Task.ID:
			return nil, fmt.Errorf("reparent %s: a task cannot be its own parent", slug)
		}
		reason := "moved to the top level"
		if newParent != "" {
			// Walk up from the new parent: meeting this task would make a cycle.
			p, err := e.Store.Load(newParent)
			if err != nil {
				return nil, err
			}
			if p.Task.Status.IsTerminal() {
				return nil, fmt.Errorf("reparent %s: the new parent %s is %s", slug, p.Task.Slug, p.Task.Status)
			}
			reason = "moved under " + p.Task.Slug
			for cur, seen := p, 0; cur.Task.Parent != ""; seen++ {
				if cur.Task.Parent == s.Task.ID {
					return nil, fmt.Errorf("reparent %s: %s is one of its own subtasks; that would make a cycle", slug, p.Task.Slug)
				}
				if seen > 1000 {
					return nil, fmt.Errorf("reparent %s: the parent chain of %s does not end", slug, p.Task.Slug)
				}
				next, err := e.Store.Load(cur.Task.Parent)
				if err != nil {
					break // a missing ancestor ends the chain
				}
				cur = next
			}
		}
		s.Task.Parent = newParent
		return &task.Op{Name: "reparent", Actor: e.Actor, Reason: reason}, nil
	})
}

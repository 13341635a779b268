package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/task"
)

// WithTask resolves name, takes the task's lifecycle lock and runs fn.
func (e *Env) WithTask(ctx context.Context, name string, fn func(id string) error) error {
	id, err := e.Store.Resolve(name)
	if err != nil {
		return err
	}
	unlock, err := e.LockTask(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(id)
}

// Update resolves name, takes its lifecycle lock and applies fn through
// the store's compare-and-swap loop.
func (e *Env) Update(ctx context.Context, name string, fn task.UpdateFunc) (*task.Snapshot, error) {
	var sn *task.Snapshot
	err := e.WithTask(ctx, name, func(id string) error {
		var err error
		sn, _, err = e.Store.Update(ctx, id, fn)
		return err
	})
	return sn, err
}

// LockedLoad resolves name, takes the task's lifecycle lock and loads
// it. The caller must call unlock.
func (e *Env) LockedLoad(ctx context.Context, name string) (sn *task.Snapshot, unlock func(), err error) {
	id, err := e.Store.Resolve(name)
	if err != nil {
		return nil, nil, err
	}
	unlock, err = e.LockTask(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	sn, err = e.Store.Load(id)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return sn, unlock, nil
}

// heldTask is the context key of a task lock the caller holds.
type heldTask struct{}

// Holding returns ctx marked as running for a caller that holds task
// id's lock: LockTask of id under it takes nothing. Accept holds the
// lock through its pre-accept turn and reconciles that turn itself,
// under this context, instead of releasing the lock for the reconciler.
func Holding(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, heldTask{}, id)
}

// LockTask takes the lifecycle lock of task id, shared by the CLI, the
// daemon and MCP. The kernel releases it if the holder dies. Under a
// context of a caller that already holds it (holding), it takes nothing.
func (e *Env) LockTask(ctx context.Context, id string) (func(), error) {
	if held, _ := ctx.Value(heldTask{}).(string); held == id {
		return func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, LockTimeout)
	defer cancel()
	path := e.Repo.LazyDir("locks", "task-"+id+".lock")
	l, err := flock.Acquire(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("task %s is busy: another lazy process (pid %s) is working on it; try again when it finishes: %w", id, flock.Owner(path), err)
	}
	return func() { _ = l.Release() }, nil
}

// LockHeldElsewhere reports whether another caller than ctx's holds task
// id's lock right now (an accept running its pre-accept turn, say).
func (e *Env) LockHeldElsewhere(ctx context.Context, id string) bool {
	if held, _ := ctx.Value(heldTask{}).(string); held == id {
		return false
	}
	unlock, err := e.TryLockTask(id)
	if err != nil {
		return errors.Is(err, flock.ErrHeld)
	}
	unlock()
	return false
}

// TryLockTask takes the task lock without waiting; flock.ErrHeld means
// another lazy process (an accept in flight, say) holds it.
func (e *Env) TryLockTask(id string) (func(), error) {
	l, err := flock.TryLock(e.Repo.LazyDir("locks", "task-"+id+".lock"))
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

// LockWorktree takes the worktree lock of task id, which lazy chat holds
// while a human talks to the agent: commands that would start a turn in
// that worktree refuse meanwhile. The kernel releases it if chat dies.
func (e *Env) LockWorktree(id string) (func(), error) {
	path := e.Repo.LazyDir("locks", "worktree-"+id+".lock")
	l, err := flock.TryLock(path)
	if errors.Is(err, flock.ErrHeld) {
		return nil, fmt.Errorf("a lazy chat (pid %s) is open on this task's worktree; wait until it ends", flock.Owner(path))
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

// WorktreeFree refuses while a chat holds the task's worktree.
func (e *Env) WorktreeFree(id, verb, slug string) error {
	release, err := e.LockWorktree(id)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, slug, err)
	}
	release()
	return nil
}

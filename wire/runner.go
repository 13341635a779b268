package wire

import (
	"context"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/runner"
)

// Runner is the runner capability over e's core: lazy start --pool,
// deferred starts, lazy runner and lazy pool release. It starts and
// takes over sessions through e's lifecycle and pulls the task records
// through e's store.
func (e *Env) Runner() *runner.Service {
	s := runner.New(&e.Env, e.Lifecycle(), storeSync{e})
	s.Objects = e.Store.Objects()
	return s
}

// storeSync is the runner's Sync over the git task store: its pull, its
// task refs, and the remote's record as last fetched.
type storeSync struct{ e *Env }

// Pull is gitstore's pull from remote.
func (s storeSync) Pull(ctx context.Context, remote string) error {
	_, err := s.e.Store.Sync().Pull(ctx, remote)
	return err
}

// TaskRef is the ref task id's record is at.
func (storeSync) TaskRef(id string) string { return gitstore.TaskRef(id) }

// Fetched is the commit of task id's record as remote had it at the last
// pull ("" when it had none).
func (s storeSync) Fetched(_ context.Context, remote, id string) string {
	return s.e.Store.Sync().Fetched(remote, id)
}

var _ runner.Sync = storeSync{}

// Package gitstore keeps lazy's task records in the repository itself: one
// ref per task under refs/lazy/tasks/<id>, one commit per operation, the
// commit's tree the full snapshot after it.
//
// Writes are compare-and-swap on the ref using git's own .lock-file
// protocol, so lazy processes and the git CLI never lose each other's
// updates. Reads need nothing but the repository.
package gitstore

import "github.com/lazyorch/lazy/gitrepo"

// Repo is where the repository is (see gitrepo.Location): the store
// keeps its records there. The name stays for the packages that found
// the repository through gitstore.
type Repo = gitrepo.Location

// Config is git configuration as lazy reads it (see gitrepo.Config).
type Config = gitrepo.Config

// ErrNotRepo is returned when no git repository encloses the directory.
var ErrNotRepo = gitrepo.ErrNotRepo

// Discover finds the repository enclosing dir (see gitrepo.Discover).
func Discover(dir string) (*Repo, error) { return gitrepo.Discover(dir) }

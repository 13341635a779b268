package wire

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/task"
)

// The fixtures of ops' tests that share landing's (a repository with a
// gate, one that records launches): landing's own tests have theirs.

// gateRepo is a repository with a main checkout and blocked tasks of
// this machine, each with a branch that commits some files.
type gateRepo struct {
	e   *Env
	dir string
}

func newGateRepo(t *testing.T, gate ...string) *gateRepo {
	t.Helper()
	e := env(t)
	dir := filepath.Dir(e.Repo.CommonDir)
	e.RepoDir = dir
	for _, g := range gate {
		testrepo.Git(t, dir, "config", "--add", "lazy.gate", g)
	}
	return &gateRepo{e: e, dir: dir}
}

func (r *gateRepo) config(t *testing.T, key, value string) {
	t.Helper()
	testrepo.Git(t, r.dir, "config", key, value)
}

// task creates a blocked task whose branch (from main as it is now)
// commits files.
func (r *gateRepo) task(t *testing.T, title string, files map[string]string) *task.Snapshot {
	t.Helper()
	return startedWith(t, r.e, title, "", files)
}

// attemptsRepo is a real repository whose Env records launches instead
// of running supervisors: a test plays each attempt's agent itself.
func attemptsRepo(t *testing.T) (*Env, *[]string) {
	t.Helper()
	e := env(t)
	e.RepoDir = filepath.Dir(e.Repo.CommonDir)
	var mu sync.Mutex
	launched := &[]string{}
	e.Launch = func(id string) error {
		mu.Lock()
		defer mu.Unlock()
		*launched = append(*launched, id)
		return nil
	}
	return e, launched
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

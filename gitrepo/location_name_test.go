package gitrepo

import (
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestRepoNameIsTheSameFromEverywhere: the name notifications give a
// repository is its main checkout's directory whether lazy runs in the
// checkout, a subdirectory, a linked worktree or the git directory (as
// the daemon does); a bare repository is named without ".git".
func TestRepoNameIsTheSameFromEverywhere(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	main := filepath.Join(parent, "myapp")
	testrepo.Git(t, parent, "init", "-q", "-b", "main", main)
	testrepo.Identity(t, main)
	testrepo.Git(t, main, "commit", "-q", "--allow-empty", "-m", "initial")
	linked := filepath.Join(parent, "elsewhere", "feature-wt")
	testrepo.Git(t, main, "worktree", "add", "-q", "-b", "feature", linked)
	for _, dir := range []string{main, filepath.Join(main, ".git"), linked} {
		r, err := Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Name() != "myapp" || r.Top() != main {
			t.Errorf("from %s: name %q, top %q; want myapp, %s", dir, r.Name(), r.Top(), main)
		}
	}
	bare := filepath.Join(parent, "served.git")
	testrepo.Git(t, parent, "clone", "-q", "--bare", main, bare)
	r, err := Discover(bare)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "served" || r.Top() != "" {
		t.Errorf("bare: name %q, top %q", r.Name(), r.Top())
	}
}

package gitstore

import (
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitrepo/repotest"
)

// TestLocalConformance runs the shared suite, hostile packs and indexes
// included, on the in-process reader.
func TestLocalConformance(t *testing.T) {
	repotest.Run(t, gitrepo.SHA1, func(t testing.TB, gitDir string) gitrepo.Repo {
		t.Helper()
		repo, err := Discover(gitDir)
		if err != nil {
			t.Fatal(err)
		}
		return repo.Local()
	})
}

package gitrepo_test

import (
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitrepo/repotest"
)

func openGit(t testing.TB, gitDir string) gitrepo.Repo {
	t.Helper()
	g, err := gitrepo.OpenGit(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGitConformance runs the shared suite on the git-process
// implementation, for both object formats. Open serves only SHA-256
// repositories by it (a SHA-1 one is read in process, by Local), so the
// fast lane (-short) runs the SHA-256 suite only; the full suite
// (scripts/test.sh runs without -short) runs both.
func TestGitConformance(t *testing.T) {
	t.Parallel()
	for _, format := range []string{gitrepo.SHA1, gitrepo.SHA256} {
		t.Run(format, func(t *testing.T) {
			if testing.Short() && format == gitrepo.SHA1 {
				t.Skip("Open reads SHA-1 repositories in process (TestLocalConformance); the full suite runs Git on them too")
			}
			t.Parallel()
			repotest.Run(t, format, openGit)
		})
	}
}

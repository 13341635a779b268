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
// implementation, for both object formats.
func TestGitConformance(t *testing.T) {
	t.Parallel()
	for _, format := range []string{gitrepo.SHA1, gitrepo.SHA256} {
		t.Run(format, func(t *testing.T) { t.Parallel(); repotest.Run(t, format, openGit) })
	}
}

package gitrepo_test

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitrepo/repotest"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestLocalConformance runs the shared suite, hostile packs and indexes
// included, on the in-process reader.
func TestLocalConformance(t *testing.T) {
	t.Parallel()
	repotest.Run(t, gitrepo.SHA1, func(_ testing.TB, gitDir string) gitrepo.Repo {
		return gitrepo.OpenLocal(gitDir)
	})
}

// TestOpenChoosesByFormat: a SHA-1 repository is read in process, a
// SHA-256 one through git, and both answer for their own objects.
func TestOpenChoosesByFormat(t *testing.T) {
	for format, want := range map[string]string{gitrepo.SHA1: "*gitrepo.Local", gitrepo.SHA256: "*gitrepo.Git"} {
		dir := t.TempDir()
		if out, err := exec.Command("git", "init", "-q", "--bare", "--object-format="+format, dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		r, err := gitrepo.Open(dir, "")
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if got := fmt.Sprintf("%T", r); got != want || r.Format() != format {
			t.Errorf("%s repository served by %s (%s), want %s", format, got, r.Format(), want)
		}
		id, err := r.Write(gitrepo.Blob, []byte("hello\n"))
		if err != nil || id.Format() != format {
			t.Fatalf("%s: write: %s %v", format, id, err)
		}
		if ok, err := r.Has(id); !ok || err != nil {
			t.Errorf("%s: the written blob is not there: %v", format, err)
		}
		_ = r.Close()
	}
}

// TestLocalConformanceSHA256 runs the shared suite on what serves the
// task store in a SHA-256 repository: Local for that format, writing in
// process and reading through git.
func TestLocalConformanceSHA256(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	repotest.Run(t, gitrepo.SHA256, func(_ testing.TB, gitDir string) gitrepo.Repo {
		return gitrepo.OpenLocalFor(gitDir, gitrepo.SHA256)
	})
}

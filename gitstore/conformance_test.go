package gitstore

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/task/storetest"
)

// TestConformance runs the one suite every task.Store passes, in a
// SHA-1 and a SHA-256 repository. The fast lane runs it in SHA-1 only
// (TestSHA256Store and sha256_test.go hold a SHA-256 store there); the
// full suite runs both. It is not parallel with the package's other
// tests: its concurrent cases contend for one ref on purpose, run before
// the suite's other cases (storetest.Run), and other tests' load beside
// them is no part of what they test.
func TestConformance(t *testing.T) {
	for _, format := range []string{gitrepo.SHA1, gitrepo.SHA256} {
		t.Run(format, func(t *testing.T) {
			if testing.Short() && format != gitrepo.SHA1 {
				t.Skip("the fast lane runs the suite in a SHA-1 repository; the full suite in both")
			}
			storetest.Run(t, harness(format))
		})
	}
}

// harness is the suite's way into a Store in a new repository of the
// object format.
func harness(format string) storetest.Harness {
	return storetest.Harness{
		Open: func(t *testing.T, host string, now func() time.Time) task.Store {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			testrepo.Git(t, dir, "init", "-q", "-b", "main", "--object-format="+format)
			repo, err := Discover(dir)
			if err != nil {
				t.Fatal(err)
			}
			if repo.ObjectFormat != format {
				t.Fatalf("object format %q, want %s", repo.ObjectFormat, format)
			}
			return Open(repo, WithHost(host), WithClock(now))
		},
		// Another process's view: the repository discovered afresh.
		Reopen: func(t *testing.T, st task.Store) task.Store {
			s := st.(*Store)
			repo, err := Discover(s.repo.WorkTree)
			if err != nil {
				t.Fatal(err)
			}
			return Open(repo, WithHost(s.host), WithClock(s.now))
		},
		// A commit whose task.json is empty, written with git plumbing.
		Corrupt: func(t *testing.T, st task.Store, id string) {
			dir := st.(*Store).repo.WorkTree
			ref := TaskRef(id)
			testrepo.Identity(t, dir) // commit-tree needs one on an empty HOME
			blob := testrepo.Git(t, dir, "hash-object", "-w", "--stdin", "--path", "task.json")
			tree := strings.TrimSpace(gitIn(t, dir, "100644 blob "+blob+"\ttask.json\n", "mktree"))
			testrepo.Git(t, dir, "update-ref", ref, testrepo.Git(t, dir, "commit-tree", "-p", ref, "-m", "x", tree))
		},
	}
}

package supervise

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestUpstreamMergeIsLazys: the merge of upstream into a task branch
// before a turn is lazy's own commit, author and committer, whatever
// the user's environment names; the merge works with no identity set.
func TestUpstreamMergeIsLazys(t *testing.T) {
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/task")
	if err := os.WriteFile(filepath.Join(dir, "task.txt"), []byte("task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "task.txt")
	testrepo.Git(t, dir, "commit", "-q", "-m", "task work")
	testrepo.Git(t, dir, "switch", "-q", "main")
	if err := os.WriteFile(filepath.Join(dir, "main.txt"), []byte("main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "main.txt")
	testrepo.Git(t, dir, "commit", "-q", "-m", "upstream work")
	testrepo.Git(t, dir, "switch", "-q", "lazy/task")
	testrepo.Git(t, dir, "config", "--unset", "user.email")
	testrepo.Git(t, dir, "config", "--unset", "user.name")
	t.Setenv("GIT_AUTHOR_NAME", "Someone Else")
	t.Setenv("GIT_COMMITTER_EMAIL", "someone@else.invalid")
	conflicts, err := syncUpstream(context.Background(), dir, "main")
	if err != nil || len(conflicts) != 0 {
		t.Fatalf("syncUpstream: %v %v", conflicts, err)
	}
	if got := testrepo.Git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"); got != "lazy <lazy@lazy.invalid>|lazy <lazy@lazy.invalid>|Merge main (lazy: upstream before the next turn)" {
		t.Fatalf("the upstream merge reads %q", got)
	}
}

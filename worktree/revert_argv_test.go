package worktree

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestRevertCommandsArgv pins the argv of the file-permission revert;
// paths always follow "--".
func TestRevertCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"has blob", hasBlobCmd("d", "abc", "a/b"), []string{"cat-file", "-e", "abc:a/b"}},
		{"checkout path", checkoutPathCmd("d", "abc", "--force"), []string{"checkout", "abc", "--", "--force"}},
		{"unstage", unstageCmd("d", "-x"), []string{"rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", "-x"}},
		{"staged", stagedCmd("d", []string{"a", "b"}), []string{"diff", "--cached", "--quiet", "HEAD", "--", "a", "b"}},
		{"commit as lazy", commitAsLazyCmd("d", "m", []string{"a"}), []string{"commit", "-q", "--no-verify", "-m", "m", "--", "a"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestRevertFileAndCommitAsLazy reverts an edited file and a new one,
// commits the revert as lazy (author and committer, whatever the user's
// environment names), and refuses a path outside the worktree.
func TestRevertFileAndCommitAsLazy(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.New(t)
	t.Setenv("GIT_AUTHOR_NAME", "Someone Else")
	t.Setenv("GIT_COMMITTER_NAME", "Someone Else")
	base := testrepo.Git(t, dir, "rev-parse", "HEAD")
	argvWrite(t, dir, "README.md", "the agent's\n")
	argvWrite(t, dir, "secret.txt", "the agent's\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "turn")
	var commit []string
	for _, p := range []string{"README.md", "secret.txt"} {
		staged, err := RevertFile(ctx, dir, p, base)
		if err != nil {
			t.Fatal(err)
		}
		if staged {
			commit = append(commit, p)
		}
	}
	if err := CommitAsLazy(ctx, dir, "lazy: revert", commit); err != nil {
		t.Fatal(err)
	}
	if argvRead(t, dir, "README.md") != "# test\n" || testrepo.Git(t, dir, "log", "-1", "--format=%an|%cn|%s") != "lazy|lazy|lazy: revert" {
		t.Fatal("the revert was not committed as lazy")
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.txt")); !os.IsNotExist(err) {
		t.Fatal("a file new in the turn stayed")
	}
	if err := CommitAsLazy(ctx, dir, "nothing", commit); err != nil || testrepo.Git(t, dir, "log", "-1", "--format=%s") != "lazy: revert" {
		t.Fatalf("a commit with nothing staged: %v", err)
	}
	if _, err := RevertFile(ctx, dir, "../outside", base); err == nil {
		t.Fatal("a path outside the worktree was reverted")
	}
}

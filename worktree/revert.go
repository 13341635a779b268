package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The commands that undo a turn's change to a file outside the allowed
// paths; each argv is pinned by the argv tests.

func hasBlobCmd(dir, rev, path string) *gitcli.Cmd {
	return gitcli.New(dir, "cat-file", "-e", rev+":"+path)
}

func checkoutPathCmd(dir, rev, path string) *gitcli.Cmd {
	return gitcli.New(dir, "checkout", rev).Paths(path)
}

func unstageCmd(dir, path string) *gitcli.Cmd {
	return gitcli.New(dir, "rm", "-q", "-f", "--cached", "--ignore-unmatch").Paths(path)
}

// RevertFile restores path in the worktree dir to its content at commit
// base, or removes it when it did not exist there. It reports whether
// the index now holds a change to commit (a file that was never
// committed and is now gone leaves none). A path that leaves the
// worktree is refused.
func RevertFile(ctx context.Context, dir, path, base string) (bool, error) {
	if !filepath.IsLocal(path) {
		return false, fmt.Errorf("refusing to revert %q: it is not a path inside the worktree", path)
	}
	if !plain(base) {
		return false, errOption("commit", base)
	}
	if hasBlobCmd(dir, base, path).Run(ctx) == nil {
		return true, checkoutPathCmd(dir, base, path).Run(ctx)
	}
	tracked := hasBlobCmd(dir, "HEAD", path).Run(ctx) == nil
	if err := unstageCmd(dir, path).Run(ctx); err != nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(dir, path)); err != nil && !os.IsNotExist(err) {
		return false, err
	}
	return tracked, nil
}

func stagedCmd(dir string, paths []string) *gitcli.Cmd {
	return gitcli.New(dir, "diff", "--cached", "--quiet", "HEAD").Paths(paths...)
}

func commitAsLazyCmd(dir, msg string, paths []string) *gitcli.Cmd {
	return gitcli.New(dir, "commit", "-q", "--no-verify", "-m", msg).Paths(paths...).AsLazy()
}

// CommitAsLazy commits the staged changes to paths, if there are any,
// as lazy itself and without the repository's hooks (a revert lazy made
// must not be refused by the agent's own checks).
func CommitAsLazy(ctx context.Context, dir, msg string, paths []string) error {
	if len(paths) == 0 || stagedCmd(dir, paths).Run(ctx) == nil {
		return nil
	}
	return commitAsLazyCmd(dir, msg, paths).Run(ctx)
}

package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The git commands an accept runs on the destination checkout, the task's
// worktree and its branch. Each command's argv is built by one small
// function (…Cmd) that the argv tests pin; the exported functions run
// them. Callers say what to do; only this file says how git is asked.

// errOption refuses a value git would read as an option.
func errOption(what, v string) error {
	return fmt.Errorf("refusing to pass the %s %q to git: it starts with a dash", what, v)
}

// plain reports whether v is safe where git expects a branch or a path
// (not an option).
func plain(v string) bool { return v != "" && !strings.HasPrefix(v, "-") }

func branchCommitCmd(repoDir, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
}

// BranchCommit is the commit at the tip of branch; an error says there is
// no such branch.
func BranchCommit(ctx context.Context, repoDir, branch string) (string, error) {
	return branchCommitCmd(repoDir, branch).String(ctx)
}

func branchTipCmd(repoDir, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
}

// BranchTip is what refs/heads/branch points at, or "" with an error if
// there is no such branch.
func BranchTip(ctx context.Context, repoDir, branch string) (string, error) {
	return branchTipCmd(repoDir, branch).String(ctx)
}

func sameTreeCmd(repoDir, base, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--quiet", base+"..."+"refs/heads/"+branch)
}

// ChangesNothing reports whether branch changes nothing since it forked
// from commit base: then there is nothing to merge. Any doubt (git
// failed) reads as false.
func ChangesNothing(ctx context.Context, repoDir, base, branch string) bool {
	return sameTreeCmd(repoDir, base, branch).Run(ctx) == nil
}

func listCmd(repoDir string) *gitcli.Cmd {
	return gitcli.New(repoDir, "worktree", "list", "--porcelain")
}

// CheckedOutAt returns the worktree where branch is checked out, or "".
func CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error) {
	out, err := listCmd(repoDir).String(ctx)
	if err != nil {
		return "", err
	}
	path := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "worktree ") {
			path = strings.TrimPrefix(line, "worktree ")
		}
		if line == "branch refs/heads/"+branch {
			return path, nil
		}
	}
	return "", nil
}

func addCmd(repoDir, dir, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "worktree", "add", "--quiet", dir, branch)
}

// Add checks the existing branch out in a new worktree at dir.
func Add(ctx context.Context, repoDir, dir, branch string) error {
	if !plain(dir) {
		return errOption("worktree path", dir)
	}
	if !plain(branch) {
		return errOption("branch", branch)
	}
	return addCmd(repoDir, dir, branch).Run(ctx)
}

func removeCmd(repoDir, dir string, force bool) *gitcli.Cmd {
	if force {
		return gitcli.New(repoDir, "worktree", "remove", "--force", dir)
	}
	return gitcli.New(repoDir, "worktree", "remove", dir)
}

// Remove removes the worktree at dir; git refuses if it has changes.
func Remove(ctx context.Context, repoDir, dir string) error {
	if !plain(dir) {
		return errOption("worktree path", dir)
	}
	return removeCmd(repoDir, dir, false).Run(ctx)
}

// ForceRemove removes the worktree at dir whatever it holds: only for a
// checkout lazy made for itself.
func ForceRemove(ctx context.Context, repoDir, dir string) error {
	if !plain(dir) {
		return errOption("worktree path", dir)
	}
	return removeCmd(repoDir, dir, true).Run(ctx)
}

func deleteBranchCmd(repoDir, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "branch", "-D", "--quiet", branch)
}

// DeleteBranch deletes branch whether or not it is merged.
func DeleteBranch(ctx context.Context, repoDir, branch string) error {
	if !plain(branch) {
		return errOption("branch", branch)
	}
	return deleteBranchCmd(repoDir, branch).Run(ctx)
}

func squashCmd(dir, branch string) *gitcli.Cmd {
	return gitcli.New(dir, "merge", "--squash", "--no-commit", "refs/heads/"+branch)
}

func unmergedCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "diff", "--name-only", "--diff-filter=U")
}

func resetMergeCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "reset", "--merge", "--quiet", "HEAD")
}

// SquashMerge stages the squash of branch onto the checkout at dir,
// without committing. If it fails, the checkout is put back as it was
// and conflicts names the files that conflicted (none when something
// else failed: the error then carries what git said).
func SquashMerge(ctx context.Context, dir, branch string) (conflicts []string, err error) {
	out, err := squashCmd(dir, branch).Output(ctx)
	if err == nil {
		return nil, nil
	}
	unmerged, _ := unmergedCmd(dir).String(ctx)
	_ = resetMergeCmd(dir).Run(context.WithoutCancel(ctx))
	if unmerged != "" {
		return strings.Fields(unmerged), err
	}
	return nil, fmt.Errorf("%w (%s)", err, strings.TrimSpace(string(out)))
}

func commitCmd(dir, msg string) *gitcli.Cmd {
	return gitcli.New(dir, "commit", "-q", "-F", "-").Stdin([]byte(msg))
}

func headCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "rev-parse", "HEAD")
}

// CommitStaged commits what is staged at dir with message msg (read from
// stdin, so any text is safe) and returns the commit. If git refuses
// (a hook, no identity), the staged merge is undone.
func CommitStaged(ctx context.Context, dir, msg string) (string, error) {
	if err := commitCmd(dir, msg).Run(ctx); err != nil {
		_ = resetMergeCmd(dir).Run(context.WithoutCancel(ctx))
		return "", &CommitError{Err: err}
	}
	return headCmd(dir).String(ctx)
}

// CommitError is a commit git refused; the checkout is as it was.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return e.Err.Error() }

func (e *CommitError) Unwrap() error { return e.Err }

func stashPushCmd(dir, msg string) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "push", "--include-untracked", "--quiet", "-m", msg).AsLazy()
}

func stashTopCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "rev-parse", "--verify", "refs/stash")
}

// StashPush stashes everything uncommitted at dir (untracked files
// included) with message msg and returns the stash commit.
func StashPush(ctx context.Context, dir, msg string) (string, error) {
	if err := stashPushCmd(dir, msg).Run(ctx); err != nil {
		return "", err
	}
	return stashTopCmd(dir).String(ctx)
}

func stashApplyCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "apply", "--quiet", sha)
}

// StashApply applies stash commit sha at dir and keeps it in the list.
func StashApply(ctx context.Context, dir, sha string) error {
	if !plain(sha) {
		return errOption("stash", sha)
	}
	return stashApplyCmd(dir, sha).Run(ctx)
}

func stashListCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "list", "--format=%H")
}

func stashDropCmd(dir string, i int) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "drop", "--quiet", fmt.Sprintf("stash@{%d}", i))
}

// ErrNotStashed says a stash commit is not in the stash list.
var ErrNotStashed = errors.New("the stash is not in the stash list")

// StashDrop drops exactly stash commit sha from the stash list, wherever
// it now is in it: another stash may have been pushed on top meanwhile.
func StashDrop(ctx context.Context, dir, sha string) error {
	list, err := stashListCmd(dir).String(ctx)
	if err != nil {
		return err
	}
	for i, h := range strings.Split(list, "\n") {
		if h == sha {
			return stashDropCmd(dir, i).Run(ctx)
		}
	}
	return ErrNotStashed
}

func isAncestorCmd(repoDir, ancestor, of string) *gitcli.Cmd {
	return gitcli.New(repoDir, "merge-base", "--is-ancestor", ancestor, of)
}

// IsAncestor reports whether commit ancestor is reachable from commit
// of; any doubt (git failed) reads as false.
func IsAncestor(ctx context.Context, repoDir, ancestor, of string) bool {
	return plain(ancestor) && plain(of) && isAncestorCmd(repoDir, ancestor, of).Run(ctx) == nil
}

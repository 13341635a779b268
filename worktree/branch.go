package worktree

import (
	"context"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// Branch and checkout commands for start, take-over, edit, reject and
// the reconciler; each argv is pinned by the argv tests.

// Head is the commit checked out at dir.
func Head(ctx context.Context, dir string) (string, error) {
	return headCmd(dir).String(ctx)
}

func createBranchCmd(repoDir, branch, from string) *gitcli.Cmd {
	return gitcli.New(repoDir, "branch", "--quiet", "--no-track", branch, from)
}

// CreateBranch makes branch at from, without tracking it.
func CreateBranch(ctx context.Context, repoDir, branch, from string) error {
	if !plain(branch) {
		return errOption("branch", branch)
	}
	if !plain(from) {
		return errOption("start point", from)
	}
	return createBranchCmd(repoDir, branch, from).Run(ctx)
}

func moveCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "worktree", "move", from, to)
}

// Move moves the worktree at from to to.
func Move(ctx context.Context, repoDir, from, to string) error {
	if !plain(from) {
		return errOption("worktree path", from)
	}
	if !plain(to) {
		return errOption("worktree path", to)
	}
	return moveCmd(repoDir, from, to).Run(ctx)
}

func headCommitCmd(repoDir string) *gitcli.Cmd {
	return gitcli.New(repoDir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
}

func anyBranchCmd(repoDir string) *gitcli.Cmd {
	return gitcli.New(repoDir, "for-each-ref", "--count=1", "refs/heads/")
}

// NoCommits reports whether the repository has nothing to branch from:
// HEAD names no commit and no branch exists.
func NoCommits(ctx context.Context, repoDir string) bool {
	if r := openLocal(repoDir); r != nil && r.headCommit() {
		return false
	}
	return noCommitsGit(ctx, repoDir)
}

// noCommitsGit is NoCommits asked of git.
func noCommitsGit(ctx context.Context, repoDir string) bool {
	if headCommitCmd(repoDir).Run(ctx) == nil {
		return false
	}
	out, _ := anyBranchCmd(repoDir).String(ctx)
	return out == ""
}

func grepCommitsCmd(repoDir, text, since, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "log", "--format=%H", "--fixed-strings", "--grep="+text, since+"..refs/heads/"+branch)
}

// HasCommitWith reports whether a commit on branch after commit since
// has text in its message (a fixed string, not a pattern).
func HasCommitWith(ctx context.Context, repoDir, text, since, branch string) (bool, error) {
	if !plain(since) {
		return false, errOption("commit", since)
	}
	out, err := grepCommitsCmd(repoDir, text, since, branch).String(ctx)
	return out != "", err
}

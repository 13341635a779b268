package worktree

import (
	"context"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The git commands a runner of the pool runs on this clone beyond the
// pool's own refs: what a ref holds here, and a task branch as the
// remote has it.

func refCommitCmd(repoDir, ref string) *gitcli.Cmd {
	return gitcli.New(repoDir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
}

// RefCommit is the commit ref points at here ("" with an error when
// there is none).
func RefCommit(ctx context.Context, repoDir, ref string) (string, error) {
	if !strings.HasPrefix(ref, "refs/") {
		return "", fmt.Errorf("refusing to read %q: not a ref", ref)
	}
	return refCommitCmd(repoDir, ref).String(ctx)
}

func fetchBranchCmd(repoDir, remote, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "fetch", "--quiet", "--no-tags", remote, "refs/heads/"+branch+":refs/heads/"+branch)
}

// FetchBranch brings branch from remote into the branch of the same name
// here, only as a fast-forward: a local branch with commits the remote
// lacks is never moved (git refuses, and the error says so).
func FetchBranch(ctx context.Context, repoDir, remote, branch string) error {
	if !plain(remote) || !plain(branch) || strings.ContainsAny(branch, ": ") {
		return fmt.Errorf("refusing to fetch the branch %q from %q", branch, remote)
	}
	if err := fetchBranchCmd(repoDir, remote, branch).Run(ctx); err != nil {
		return fmt.Errorf("bring %s from %s here as a fast-forward (a branch here with commits %s lacks is never moved): %w", branch, remote, remote, err)
	}
	return nil
}

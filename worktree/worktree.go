// Package worktree owns the git commands lazy runs on task branches,
// their worktrees and the checkouts tasks merge into: it builds every
// argv, and the capabilities say what to do. It deletes a worktree or branch only
// when asked: removal belongs to accept and reject, which decide
// explicitly.
package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/proc"
)

// Branch is the task branch name for a slug.
func Branch(slug string) string { return "lazy/" + slug }

// DefaultBranch returns the branch a root task starts from when it names
// none: origin's HEAD if known, else the branch checked out in the main
// worktree.
func DefaultBranch(ctx context.Context, repoDir string) (string, error) {
	if r := openLocal(repoDir); r != nil {
		if b, ok := r.defaultBranch(); ok {
			return b, nil
		}
	}
	return defaultBranchGit(ctx, repoDir)
}

// defaultBranchGit is DefaultBranch asked of git.
func defaultBranchGit(ctx context.Context, repoDir string) (string, error) {
	if out, err := gitcli.New(repoDir, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD").String(ctx); err == nil && out != "" {
		return strings.TrimPrefix(out, "origin/"), nil
	}
	out, err := gitcli.New(repoDir, "symbolic-ref", "--quiet", "--short", "HEAD").String(ctx)
	if ctx.Err() != nil {
		// A git killed by a cancel says nothing about HEAD.
		return "", fmt.Errorf("cannot tell the default branch: %w", ctx.Err())
	}
	if err != nil || out == "" {
		return "", errors.New("cannot tell the default branch: HEAD is detached and origin/HEAD is unset; pass --target-branch when creating the task")
	}
	return out, nil
}

// Create makes branch from base and checks it out in a new worktree at
// dir. If the branch already exists (a restarted task), it is reused, never
// reset: it may hold work.
//
// A start waits on this, so it starts two git processes where it took
// four: one reads both refs, and a new branch starts at the commit read,
// which is then its start (no read of HEAD after).
func Create(ctx context.Context, repoDir, dir, branch, base string) (startSHA string, err error) {
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("worktree path %s already exists; lazy will not reuse or remove it", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("create worktree parent: %w", err)
	}
	tips, err := commitsOf(ctx, repoDir, "refs/heads/"+branch, "refs/heads/"+base)
	if err != nil {
		return "", fmt.Errorf("create worktree for %s: %w", branch, err)
	}
	if tips[0] != "" {
		if err := gitcli.New(repoDir, "worktree", "add", "--quiet", dir, branch).Run(ctx); err != nil {
			return "", fmt.Errorf("create worktree for %s: %w", branch, err)
		}
		return gitcli.New(dir, "rev-parse", "HEAD").String(ctx)
	}
	if tips[1] == "" {
		return "", fmt.Errorf("base branch %q does not exist", base)
	}
	if err := createCmd(repoDir, branch, dir, tips[1]).Run(ctx); err != nil {
		return "", fmt.Errorf("create worktree for %s: %w", branch, err)
	}
	return tips[1], nil
}

// createCmd makes a new branch at commit and checks it out at dir.
func createCmd(repoDir, branch, dir, commit string) *gitcli.Cmd {
	return gitcli.New(repoDir, "worktree", "add", "--quiet", "-b", branch, dir, commit)
}

// commitsOf reads the commit each ref names, "" for a ref that does not
// exist or names no commit, in one git process.
func commitsOf(ctx context.Context, repoDir string, refs ...string) ([]string, error) {
	var in strings.Builder
	for _, r := range refs {
		// One query per line: a name git would split (or read as an
		// option of the batch) is no ref of a task.
		if r == "" || strings.ContainsAny(r, "\n\r\x00 ") {
			return nil, fmt.Errorf("%q is not a branch name git accepts", r)
		}
		in.WriteString(r + "^{commit}\n")
	}
	if tips, ok := localCommitsOf(repoDir, refs); ok {
		return tips, nil
	}
	return commitsOfGit(ctx, repoDir, refs, in.String())
}

// commitsOfGit is commitsOf asked of git, in one process: query holds
// one "<ref>^{commit}" line per ref.
func commitsOfGit(ctx context.Context, repoDir string, refs []string, query string) ([]string, error) {
	out, err := commitsCmd(repoDir).Stdin([]byte(query)).String(ctx)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(out, "\n")
	if len(lines) != len(refs) {
		return nil, fmt.Errorf("git cat-file answered %d lines for %d refs", len(lines), len(refs))
	}
	tips := make([]string, len(refs))
	for i, l := range lines {
		// "<oid> commit <size>", or "<name> missing" (or "ambiguous").
		if f := strings.Fields(l); len(f) == 3 && f[1] == "commit" {
			tips[i] = f[0]
		}
	}
	return tips, nil
}

// localCommitsOf is commitsOf read in process, false when any ref needs
// git's answer.
func localCommitsOf(repoDir string, refs []string) ([]string, bool) {
	r := openLocal(repoDir)
	if r == nil {
		return nil, false
	}
	tips := make([]string, len(refs))
	for i, ref := range refs {
		tip, ok := r.commitOf(ref)
		if !ok {
			return nil, false
		}
		tips[i] = tip
	}
	return tips, true
}

// commitsCmd reads object names from stdin, one per line, and says what
// each names.
func commitsCmd(repoDir string) *gitcli.Cmd {
	return gitcli.New(repoDir, "cat-file", "--batch-check")
}

// Dirty reports whether the worktree has uncommitted changes (untracked
// files included).
func Dirty(ctx context.Context, dir string) (bool, error) {
	out, err := gitcli.New(dir, "status", "--porcelain").String(ctx)
	if err != nil {
		return false, err
	}
	return out != "", nil
}

// Commits lists commits on HEAD since base, oldest first, along the
// branch's own line (first parents): a merge the agent concluded counts,
// the upstream commits it brought in do not.
func Commits(ctx context.Context, dir, base string) ([]string, error) {
	out, err := gitcli.New(dir, "rev-list", "--reverse", "--first-parent", base+"..HEAD").String(ctx)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Fields(out), nil
}

// ChangedFiles lists files that differ between base and the worktree
// (committed or not), NUL-separated output so any file name survives.
func ChangedFiles(ctx context.Context, dir, base string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	add := func(out []byte) {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" && !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	out, err := gitcli.New(dir, "diff", "--name-only", "-z", base).Output(ctx)
	if err != nil {
		return nil, err
	}
	add(out)
	out, err = gitcli.New(dir, "ls-files", "--others", "--exclude-standard", "-z").Output(ctx)
	if err != nil {
		return nil, err
	}
	add(out)
	return files, nil
}

// ClearKilledIndexLock removes the index.lock of the worktree dir when no
// process holds it open: git keeps its lock file open until it commits
// or rolls it back, so such a lock was left by a git that was killed (an
// agent's commit when its turn crashed), and while it exists every git
// command that writes the index fails there. It reports whether it
// removed one. The caller must know that no turn runs in dir.
func ClearKilledIndexLock(ctx context.Context, dir string) bool {
	path, err := gitcli.New(dir, "rev-parse", "--path-format=absolute", "--git-path", "index.lock").String(ctx)
	if err != nil || path == "" {
		return false
	}
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() || proc.HeldOpen(path) {
		return false
	}
	return os.Remove(path) == nil
}

// CommitDirs are the parts of the repository's git directory a commit in
// the linked worktree dir writes: objects, the branch refs and their
// logs, and the worktree's own git directory (index, HEAD, MERGE_HEAD).
// Not the whole git directory: its config and hooks decide what git runs
// outside any sandbox. What Codex's workspace-write sandbox needs as
// writable roots to let an agent commit.
func CommitDirs(ctx context.Context, dir string) []string {
	gitDir, err := gitcli.New(dir, "rev-parse", "--absolute-git-dir").String(ctx)
	if err != nil {
		return nil
	}
	common, err := gitcli.New(dir, "rev-parse", "--git-common-dir").String(ctx)
	if err != nil {
		return nil
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	common = filepath.Clean(common)
	// git creates the logs directory on a ref's first update; it must be
	// there to be a writable root.
	_ = os.MkdirAll(filepath.Join(common, "logs"), 0o755)
	var dirs []string
	for _, d := range []string{filepath.Join(common, "objects"), filepath.Join(common, "refs", "heads"), filepath.Join(common, "logs"), filepath.Join(common, "reftable"), gitDir} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && d != common {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Except keeps the files that differ between other and the worktree:
// after a merge of other the agent resolved, the files it took from
// other unchanged are upstream's work, not the turn's.
func Except(ctx context.Context, dir, other string, files []string) ([]string, error) {
	out, err := gitcli.New(dir, "diff", "--name-only", "-z", other).Output(ctx)
	if err != nil {
		return nil, err
	}
	differs := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		differs[f] = true
	}
	untracked, err := gitcli.New(dir, "ls-files", "--others", "--exclude-standard", "-z").Output(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Split(string(untracked), "\x00") {
		differs[f] = true
	}
	var kept []string
	for _, f := range files {
		if differs[f] {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

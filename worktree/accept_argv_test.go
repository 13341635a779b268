package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestAcceptCommandsArgv pins the exact argv of every git command an
// accept runs: a change to any of them is a change to what lazy asks git.
func TestAcceptCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"branch commit", branchCommitCmd("r", "main"), []string{"rev-parse", "--verify", "refs/heads/main^{commit}"}},
		{"branch tip", branchTipCmd("r", "lazy/x"), []string{"rev-parse", "--verify", "--quiet", "refs/heads/lazy/x"}},
		{"changes nothing", sameTreeCmd("r", "abc", "lazy/x"), []string{"diff", "--quiet", "abc...refs/heads/lazy/x"}},
		{"list", listCmd("r"), []string{"worktree", "list", "--porcelain"}},
		{"add", addCmd("r", "/tmp/d", "main"), []string{"worktree", "add", "--quiet", "/tmp/d", "main"}},
		{"remove", removeCmd("r", "/tmp/d", false), []string{"worktree", "remove", "/tmp/d"}},
		{"force remove", removeCmd("r", "/tmp/d", true), []string{"worktree", "remove", "--force", "/tmp/d"}},
		{"delete branch", deleteBranchCmd("r", "lazy/x"), []string{"branch", "-D", "--quiet", "lazy/x"}},
		{"squash", squashCmd("d", "lazy/x"), []string{"merge", "--squash", "--no-commit", "refs/heads/lazy/x"}},
		{"unmerged", unmergedCmd("d"), []string{"diff", "--name-only", "--diff-filter=U"}},
		{"reset merge", resetMergeCmd("d"), []string{"reset", "--merge", "--quiet", "HEAD"}},
		{"commit", commitCmd("d", "-F evil"), []string{"commit", "-q", "-F", "-"}},
		{"head", headCmd("d"), []string{"rev-parse", "HEAD"}},
		{"stash push", stashPushCmd("d", "lazy accept x (id): yours"), []string{"stash", "push", "--include-untracked", "--quiet", "-m", "lazy accept x (id): yours"}},
		{"stash top", stashTopCmd("d"), []string{"rev-parse", "--verify", "refs/stash"}},
		{"stash apply", stashApplyCmd("d", "abc"), []string{"stash", "apply", "--quiet", "abc"}},
		{"stash list", stashListCmd("d"), []string{"stash", "list", "--format=%H"}},
		{"stash drop", stashDropCmd("d", 2), []string{"stash", "drop", "--quiet", "stash@{2}"}},
		{"stash changes", stashChangesCmd("d", "abc"), []string{"diff", "--no-renames", "--raw", "--no-abbrev", "-z", "abc^1", "abc"}},
		{"stash untracked", stashUntrackedCmd("d", "abc"), []string{"ls-tree", "-r", "-z", "abc^3"}},
		{"hash paths", hashPathsCmd("d", []string{"a", "b"}), []string{"hash-object", "--stdin-paths"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestAcceptCommandsRefuseOptionLikeValues checks that a branch, path
// or stash that starts with a dash never reaches git, where it would
// be read as an option.
func TestAcceptCommandsRefuseOptionLikeValues(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.New(t)
	for name, err := range map[string]error{
		"add path":      Add(ctx, dir, "--force", "main"),
		"add branch":    Add(ctx, dir, filepath.Join(t.TempDir(), "d"), "--detach"),
		"remove":        Remove(ctx, dir, "--force"),
		"force remove":  ForceRemove(ctx, dir, "-f"),
		"delete branch": DeleteBranch(ctx, dir, "-r"),
		"stash apply":   StashApply(ctx, dir, "--index"),
	} {
		if err == nil || !strings.Contains(err.Error(), "starts with a dash") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if StashInWorktree(ctx, dir, "--output=x") {
		t.Error("StashInWorktree trusted an option-like stash")
	}
}

// TestSquashMergeConflictLeavesTheCheckoutAsItWas runs the tricky path
// on a real repository: a conflicting squash names the files and resets
// the checkout; a clean one stages and commits with the message intact.
func TestSquashMergeConflictLeavesTheCheckoutAsItWas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
	argvWrite(t, dir, "f.txt", "theirs\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "theirs")
	testrepo.Git(t, dir, "switch", "-q", "main")
	argvWrite(t, dir, "f.txt", "ours\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "ours")
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")

	conflicts, err := SquashMerge(ctx, dir, "lazy/x")
	if err == nil || !reflect.DeepEqual(conflicts, []string{"f.txt"}) {
		t.Fatalf("conflicts %q, err %v", conflicts, err)
	}
	if st := testrepo.Git(t, dir, "status", "--porcelain"); st != "" || testrepo.Git(t, dir, "rev-parse", "HEAD") != head {
		t.Fatalf("the checkout changed after a conflicting squash:\n%s", st)
	}

	testrepo.Git(t, dir, "reset", "-q", "--hard", "HEAD~1")
	if conflicts, err := SquashMerge(ctx, dir, "lazy/x"); err != nil || conflicts != nil {
		t.Fatalf("clean squash: %q %v", conflicts, err)
	}
	msg := "title\n\n-F body that looks like options --amend\n"
	sha, err := CommitStaged(ctx, dir, msg)
	if err != nil {
		t.Fatal(err)
	}
	if got := testrepo.Git(t, dir, "log", "-1", "--format=%B", sha); got != strings.TrimSpace(msg) {
		t.Fatalf("commit message %q", got)
	}

	// A missing branch is not a conflict: the error says what git said.
	conflicts, err = SquashMerge(ctx, dir, "lazy/none")
	if err == nil || conflicts != nil || !strings.Contains(err.Error(), "lazy/none") {
		t.Fatalf("missing branch: %q %v", conflicts, err)
	}
}

// TestCommitStagedRefusedByAHookUndoesTheMerge checks that a commit git
// refuses leaves nothing staged.
func TestCommitStagedRefusedByAHookUndoesTheMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
	argvWrite(t, dir, "f.txt", "theirs\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "theirs")
	testrepo.Git(t, dir, "switch", "-q", "main")
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := SquashMerge(ctx, dir, "lazy/x"); err != nil {
		t.Fatal(err)
	}
	_, err := CommitStaged(ctx, dir, "x")
	var ce *CommitError
	if !errors.As(err, &ce) {
		t.Fatalf("a refused commit: %v, want a *CommitError", err)
	}
	if st := testrepo.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("a refused commit left the merge staged:\n%s", st)
	}
}

// TestStashDropDropsExactlyThatStash checks that a stash pushed on top
// meanwhile survives, and that a stash no longer listed is reported.
func TestStashDropDropsExactlyThatStash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	argvWrite(t, dir, "README.md", "mine\n")
	ours, err := StashPush(ctx, dir, "lazy accept x (id): yours")
	if err != nil {
		t.Fatal(err)
	}
	argvWrite(t, dir, "README.md", "later\n")
	theirs, err := StashPush(ctx, dir, "someone else's")
	if err != nil {
		t.Fatal(err)
	}
	if err := StashDrop(ctx, dir, ours); err != nil {
		t.Fatal(err)
	}
	if got := testrepo.Git(t, dir, "stash", "list", "--format=%H"); got != theirs {
		t.Fatalf("stash list after dropping ours: %q, want only %s", got, theirs)
	}
	if err := StashDrop(ctx, dir, ours); !errors.Is(err, ErrNotStashed) {
		t.Fatalf("dropping it again: %v", err)
	}
	if err := StashApply(ctx, dir, theirs); err != nil || argvRead(t, dir, "README.md") != "later\n" {
		t.Fatalf("apply: %v", err)
	}
}

// TestCheckedOutAtFindsTheLinkedWorktree checks the porcelain parsing.
func TestCheckedOutAtFindsTheLinkedWorktree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "branch", "side")
	wt := filepath.Join(t.TempDir(), "side wt")
	if err := Add(ctx, dir, wt, "side"); err != nil {
		t.Fatal(err)
	}
	for branch, want := range map[string]string{"main": dir, "side": wt, "none": ""} {
		got, err := CheckedOutAt(ctx, dir, branch)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", branch, got, err, want)
		}
	}
	if err := Remove(ctx, dir, wt); err != nil {
		t.Fatal(err)
	}
	if tip, err := BranchTip(ctx, dir, "side"); err != nil || tip == "" {
		t.Fatalf("tip of side: %q %v", tip, err)
	}
	if err := DeleteBranch(ctx, dir, "side"); err != nil {
		t.Fatal(err)
	}
	if _, err := BranchTip(ctx, dir, "side"); err == nil {
		t.Fatal("side still exists")
	}
}

func argvWrite(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func argvRead(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

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

const (
	sha1a = "0123456789abcdef0123456789abcdef01234567"
	sha1b = "89abcdef0123456789abcdef0123456789abcdef"
)

// TestGateCommandsArgv pins the exact argv of every git command the
// merge gate and the merge queue run.
func TestGateCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"merge tree", gateMergeTreeCmd("r", sha1a, "lazy/x"), []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", sha1a, "refs/heads/lazy/x"}},
		{"commit tree", commitTreeCmd("r", sha1a, sha1b, "-m evil"), []string{"commit-tree", sha1a, "-p", sha1b, "-F", "-"}},
		{"tree of", treeOfCmd("r", sha1a), []string{"rev-parse", "--verify", sha1a + "^{tree}"}},
		{"add detached", addDetachedCmd("r", "/tmp/gate wt", sha1a), []string{"worktree", "add", "--quiet", "--detach", "/tmp/gate wt", sha1a}},
		{"remove scratch", removeScratchCmd("r", "/tmp/gate wt"), []string{"worktree", "remove", "--force", "--force", "/tmp/gate wt"}},
		{"fast forward", fastForwardCmd("d", sha1a), []string{"merge", "--ff-only", "--quiet", sha1a}},
		{"reset to head", resetToHeadCmd("d"), []string{"read-tree", "--reset", "-u", "HEAD"}},
		{"update branch", updateBranchCmd("r", "main", sha1a, sha1b), []string{"update-ref", "-m", "lazy accept", "refs/heads/main", sha1a, sha1b}},
		{"ls-tree entry", lsTreeEntryCmd("r", sha1a, ".lazy/gate"), []string{"ls-tree", "-l", "-z", "--full-tree", sha1a, "--", ".lazy/gate"}},
		{"cat blob", catBlobCmd("r", sha1b), []string{"cat-file", "blob", sha1b}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestGateCommandsRefuseWhatIsNotAnObjectID checks that names,
// abbreviations, options and branches that start with a dash never
// reach git.
func TestGateCommandsRefuseWhatIsNotAnObjectID(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.New(t)
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")
	for _, bad := range []string{"", "HEAD", "main", head[:12], "--all", head + "0", strings.Repeat("g", 40), strings.Repeat("a", 63)} {
		errs := map[string]error{}
		_, _, errs["merge tree"] = MergeTree(ctx, dir, bad, "main")
		_, errs["commit tree tree"] = CommitTree(ctx, dir, bad, head, "m")
		_, errs["commit tree parent"] = CommitTree(ctx, dir, head, bad, "m")
		_, errs["tree of"] = TreeOf(ctx, dir, bad)
		errs["add detached"] = AddDetached(ctx, dir, filepath.Join(t.TempDir(), "d"), bad)
		errs["fast forward"] = FastForward(ctx, dir, bad)
		errs["update new"] = UpdateBranch(ctx, dir, "main", bad, head)
		errs["update old"] = UpdateBranch(ctx, dir, "main", head, bad)
		_, _, errs["file at"] = FileAt(ctx, dir, bad, "README.md")
		for name, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "not a full object id") {
				t.Errorf("%s %q: %v, want a refusal", name, bad, err)
			}
		}
	}
	for _, id := range []string{head, strings.ToUpper(head), strings.Repeat("ab", 32)} {
		if !isObjectID(id) {
			t.Errorf("%q refused", id)
		}
	}
	dash := map[string]error{}
	_, _, dash["merge tree"] = MergeTree(ctx, dir, head, "-x")
	dash["update branch"] = UpdateBranch(ctx, dir, "--stdin", head, head)
	dash["add detached"] = AddDetached(ctx, dir, "--lock", head)
	for name, err := range dash {
		if err == nil || !strings.Contains(err.Error(), "starts with a dash") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../b", "./a", "a//b", "a/", "a\x00b"} {
		if _, _, err := FileAt(ctx, dir, head, p); err == nil {
			t.Errorf("FileAt %q: no refusal", p)
		}
	}
}

// commitFile commits content at name on the checked-out branch of dir.
func commitFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	argvWrite(t, dir, name, content)
	testrepo.Git(t, dir, "add", "--", name)
	testrepo.Git(t, dir, "commit", "-q", "-m", "change "+name)
	return testrepo.Git(t, dir, "rev-parse", "HEAD")
}

// TestMergeTreeCommitTreeFastForward lands a merge the gate's way: the
// merged tree computed without a checkout, committed on the target's
// tip, and the checkout fast-forwarded to exactly that tree.
func TestMergeTreeCommitTreeFastForward(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
	commitFile(t, dir, "theirs.txt", "theirs\n")
	testrepo.Git(t, dir, "switch", "-q", "main")
	ours := commitFile(t, dir, "ours.txt", "ours\n")

	tree, conflicts, err := MergeTree(ctx, dir, ours, "lazy/x")
	if err != nil || conflicts != nil || !isObjectID(tree) {
		t.Fatalf("clean merge: %q %q %v", tree, conflicts, err)
	}
	if got := testrepo.Git(t, dir, "ls-tree", "--name-only", tree); got != "README.md\nours.txt\ntheirs.txt" {
		t.Fatalf("merged tree holds %q", got)
	}
	if st := testrepo.Git(t, dir, "status", "--porcelain"); st != "" || testrepo.Git(t, dir, "rev-parse", "HEAD") != ours {
		t.Fatalf("MergeTree touched the checkout: %q", st)
	}

	msg := "lazy: merge x\n\n-p --amend looks like options\n"
	commit, err := CommitTree(ctx, dir, tree, ours, msg)
	if err != nil {
		t.Fatal(err)
	}
	if got := testrepo.Git(t, dir, "log", "-1", "--format=%P%n%B", commit); got != ours+"\n"+strings.TrimSpace(msg) {
		t.Fatalf("commit: %q", got)
	}
	if got, err := TreeOf(ctx, dir, commit); err != nil || got != tree {
		t.Fatalf("tree of the commit: %q %v, want %s", got, err, tree)
	}
	if testrepo.Git(t, dir, "rev-parse", "refs/heads/main") != ours {
		t.Fatal("CommitTree moved a branch")
	}

	if err := FastForward(ctx, dir, commit); err != nil {
		t.Fatal(err)
	}
	if head := testrepo.Git(t, dir, "rev-parse", "refs/heads/main"); head != commit {
		t.Fatalf("main at %s, want %s", head, commit)
	}
	if argvRead(t, dir, "theirs.txt") != "theirs\n" || testrepo.Git(t, dir, "status", "--porcelain") != "" {
		t.Fatal("the checkout does not hold the merged tree")
	}
}

func TestMergeTreeConflictListsThePaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
	commitFile(t, dir, "f.txt", "theirs\n")
	commitFile(t, dir, "dir/weird name\twith tab", "theirs\n")
	commitFile(t, dir, "clean.txt", "theirs\n")
	testrepo.Git(t, dir, "switch", "-q", "main")
	commitFile(t, dir, "f.txt", "ours\n")
	ours := commitFile(t, dir, "dir/weird name\twith tab", "ours\n")

	tree, conflicts, err := MergeTree(ctx, dir, ours, "lazy/x")
	if !errors.Is(err, ErrMergeConflict) || tree != "" {
		t.Fatalf("%q %v, want ErrMergeConflict", tree, err)
	}
	if want := []string{"dir/weird name\twith tab", "f.txt"}; !reflect.DeepEqual(conflicts, want) {
		t.Fatalf("conflicts %q, want %q", conflicts, want)
	}
	if st := testrepo.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("a conflicting MergeTree touched the checkout: %q", st)
	}

	// A missing branch is an error, not a conflict.
	if _, conflicts, err := MergeTree(ctx, dir, ours, "lazy/none"); err == nil || errors.Is(err, ErrMergeConflict) || conflicts != nil {
		t.Fatalf("missing branch: %q %v", conflicts, err)
	}
}

// TestFastForwardChangesNothingWhenItCannot: a commit that does not
// descend from the checkout's is refused, and the checkout stays.
func TestFastForwardChangesNothingWhenItCannot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	testrepo.Git(t, dir, "switch", "-q", "-c", "side")
	side := commitFile(t, dir, "side.txt", "side\n")
	testrepo.Git(t, dir, "switch", "-q", "main")
	head := commitFile(t, dir, "main.txt", "main\n")
	if err := FastForward(ctx, dir, side); err == nil {
		t.Fatal("fast-forwarded to a commit that does not descend from HEAD")
	}
	if testrepo.Git(t, dir, "rev-parse", "HEAD") != head || testrepo.Git(t, dir, "status", "--porcelain") != "" {
		t.Fatal("a refused fast-forward changed the checkout")
	}
}

func TestUpdateBranchIsACompareAndSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	old := testrepo.Git(t, dir, "rev-parse", "HEAD")
	testrepo.Git(t, dir, "branch", "target")
	next := commitFile(t, dir, "n.txt", "n\n")
	later := commitFile(t, dir, "l.txt", "l\n")

	if err := UpdateBranch(ctx, dir, "target", next, old); err != nil {
		t.Fatal(err)
	}
	if got := testrepo.Git(t, dir, "rev-parse", "refs/heads/target"); got != next {
		t.Fatalf("target at %s, want %s", got, next)
	}
	if got := testrepo.Git(t, dir, "reflog", "-1", "--format=%gs", "refs/heads/target"); got != "lazy accept" {
		t.Fatalf("reflog %q", got)
	}
	// The caller's old value is stale now: nothing moves.
	err := UpdateBranch(ctx, dir, "target", later, old)
	if !errors.Is(err, ErrBranchMoved) || !strings.Contains(err.Error(), next) {
		t.Fatalf("stale old value: %v, want ErrBranchMoved", err)
	}
	if got := testrepo.Git(t, dir, "rev-parse", "refs/heads/target"); got != next {
		t.Fatalf("a refused swap moved target to %s", got)
	}
	if err := UpdateBranch(ctx, dir, "target", later, next); err != nil {
		t.Fatal(err)
	}
}

func TestFileAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	commitFile(t, dir, ".lazy/gate", "go test ./...\n")
	commitFile(t, dir, "dir/gate", "x\n")
	commitFile(t, dir, "big", strings.Repeat("x", MaxFileAt+1))
	commitFile(t, dir, "edge", strings.Repeat("y", MaxFileAt))
	if err := os.Symlink("dir/gate", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "add", "link")
	testrepo.Git(t, dir, "commit", "-q", "-m", "link")
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")
	// The working file differs: FileAt reads the commit, never the checkout.
	argvWrite(t, dir, ".lazy/gate", "rm -rf /\n")

	b, ok, err := FileAt(ctx, dir, head, ".lazy/gate")
	if err != nil || !ok || string(b) != "go test ./...\n" {
		t.Fatalf("present: %q %v %v", b, ok, err)
	}
	if b, ok, err := FileAt(ctx, dir, head, "edge"); err != nil || !ok || len(b) != MaxFileAt {
		t.Fatalf("a file of exactly %d bytes: %d %v %v", MaxFileAt, len(b), ok, err)
	}
	for _, absent := range []string{"nope", ".lazy/none", "gate", "nope/gate", "README.md/x"} {
		if b, ok, err := FileAt(ctx, dir, head, absent); err != nil || ok || b != nil {
			t.Errorf("absent %s: %q %v %v", absent, b, ok, err)
		}
	}
	for path, want := range map[string]string{"big": "more than", ".lazy": "directory", "dir": "directory", "link": "symbolic link"} {
		if _, ok, err := FileAt(ctx, dir, head, path); err == nil || ok || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v %v, want an error saying %q", path, ok, err, want)
		}
	}
	first := testrepo.Git(t, dir, "rev-list", "--max-parents=0", "HEAD")
	if _, ok, err := FileAt(ctx, dir, first, ".lazy/gate"); err != nil || ok {
		t.Fatalf("before the file was committed: %v %v", ok, err)
	}
}

func TestAddDetachedChecksOutTheCommitWithNoBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	first := testrepo.Git(t, dir, "rev-parse", "HEAD")
	commitFile(t, dir, "later.txt", "later\n")
	wt := filepath.Join(t.TempDir(), "gate wt")
	if err := AddDetached(ctx, dir, wt, first); err != nil {
		t.Fatal(err)
	}
	if got := testrepo.Git(t, wt, "rev-parse", "HEAD"); got != first {
		t.Fatalf("HEAD %s, want %s", got, first)
	}
	if _, err := testrepo.GitErr(wt, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Fatal("the scratch checkout is on a branch")
	}
	if _, err := os.Stat(filepath.Join(wt, "later.txt")); !os.IsNotExist(err) {
		t.Fatal("the scratch checkout holds a later commit's file")
	}
	if testrepo.Git(t, dir, "rev-parse", "HEAD") == first {
		t.Fatal("the main checkout moved")
	}
	if err := RemoveScratch(ctx, dir, wt); err != nil {
		t.Fatal(err)
	}
}

// TestResetToHeadUndoesAFastForwardALockStopped: git merge --ff-only
// writes the files and the index, then fails on a lock left on the
// branch (or HEAD); ResetToHead puts the checkout back with the lock
// still there.
func TestResetToHeadUndoesAFastForwardALockStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, lock := range []string{"HEAD.lock", "refs/heads/main.lock"} {
		dir := testrepo.New(t)
		base := testrepo.Git(t, dir, "rev-parse", "HEAD")
		commitFile(t, dir, "next.txt", "next\n")
		next := testrepo.Git(t, dir, "rev-parse", "HEAD")
		testrepo.Git(t, dir, "reset", "-q", "--hard", base)
		if err := os.WriteFile(filepath.Join(dir, ".git", lock), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := FastForward(ctx, dir, next); err == nil {
			t.Fatalf("%s: the fast-forward went through a lock", lock)
		}
		if st := testrepo.Git(t, dir, "status", "--porcelain"); st == "" {
			t.Fatalf("%s: git no longer writes the files before the ref: the undo is not needed", lock)
		}
		if err := ResetToHead(ctx, dir); err != nil {
			t.Fatalf("%s: %v", lock, err)
		}
		if st := testrepo.Git(t, dir, "status", "--porcelain"); st != "" || testrepo.Git(t, dir, "rev-parse", "HEAD") != base {
			t.Fatalf("%s: after the reset: %q", lock, st)
		}
	}
}

// TestRemoveScratchRemovesWhatAKilledGateLeft: a scratch checkout that
// git still marks locked (a worktree add killed midway) and one whose
// directory is gone are both removed, with git's record of them.
func TestRemoveScratchRemovesWhatAKilledGateLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")
	locked, gone := filepath.Join(t.TempDir(), "gate-locked"), filepath.Join(t.TempDir(), "gate-gone")
	for _, wt := range []string{locked, gone} {
		if err := AddDetached(ctx, dir, wt, head); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "worktrees", "gate-locked", "locked"), []byte("initializing"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	for _, wt := range []string{locked, gone} {
		if err := RemoveScratch(ctx, dir, wt); err != nil {
			t.Fatalf("remove %s: %v", wt, err)
		}
		if _, err := os.Stat(wt); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", wt, err)
		}
	}
	if list := testrepo.Git(t, dir, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("git still records a scratch checkout:\n%s", list)
	}
}

// TestGateCommandsInASHA256Repository: ids of 64 hex digits pass.
func TestGateCommandsInASHA256Repository(t *testing.T) {
	ctx := context.Background()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "init", "-q", "-b", "main", "--object-format=sha256")
	testrepo.Git(t, dir, "config", "user.email", "test@example.com")
	testrepo.Git(t, dir, "config", "user.name", "Test")
	base := commitFile(t, dir, "a.txt", "a\n")
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
	commitFile(t, dir, "b.txt", "b\n")
	testrepo.Git(t, dir, "switch", "-q", "main")
	tree, _, err := MergeTree(ctx, dir, base, "lazy/x")
	if err != nil || len(tree) != 64 {
		t.Fatalf("%q %v", tree, err)
	}
	commit, err := CommitTree(ctx, dir, tree, base, "m")
	if err != nil || len(commit) != 64 {
		t.Fatalf("%q %v", commit, err)
	}
	if err := UpdateBranch(ctx, dir, "lazy/x", commit, testrepo.Git(t, dir, "rev-parse", "lazy/x")); err != nil {
		t.Fatal(err)
	}
	if b, ok, err := FileAt(ctx, dir, commit, "b.txt"); err != nil || !ok || string(b) != "b\n" {
		t.Fatalf("%q %v %v", b, ok, err)
	}
}

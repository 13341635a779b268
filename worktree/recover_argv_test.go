package worktree

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestRecoverAndRefCommandsArgv pins the argv of the commands that give
// a stash back, undo a dead accept's squash and keep lazy's refs.
func TestRecoverAndRefCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"tracked changes", trackedChangesCmd("d"), []string{"status", "--porcelain", "--untracked-files=no"}},
		{"merge tree", mergeTreeCmd("d", "HEAD", "abc"), []string{"merge-tree", "--write-tree", "--no-messages", "HEAD", "abc"}},
		{"stash untracked names", stashUntrackedNamesCmd("d", "abc"), []string{"ls-tree", "-r", "-z", "--name-only", "abc^3"}},
		{"stash entries", stashEntriesCmd("d"), []string{"stash", "list", "--format=%H %s"}},
		{"reset hard", resetHardCmd("d", "abc"), []string{"reset", "--hard", "--quiet", "abc"}},
		{"squash msg path", squashMsgPathCmd("d"), []string{"rev-parse", "--git-path", "SQUASH_MSG"}},
		{"verify head", verifyHeadCmd("d"), []string{"rev-parse", "--verify", "HEAD"}},
		{"squash tree", squashTreeCmd("r", "abc", "lazy/x"), []string{"merge-tree", "--write-tree", "abc", "refs/heads/lazy/x"}},
		{"untracked", untrackedCmd("d"), []string{"ls-files", "--others", "--exclude-standard"}},
		{"stash create", stashCreateCmd("d"), []string{"stash", "create"}},
		{"tree", treeCmd("d", "abc^2"), []string{"rev-parse", "abc^2^{tree}"}},
		{"create ref", createRefCmd("d", "refs/lazy-kept/stash/t/abc", "abc", "lazy: stash kept"), []string{"update-ref", "-m", "lazy: stash kept", "refs/lazy-kept/stash/t/abc", "abc", ""}},
		{"delete ref", deleteRefCmd("d", "refs/x", "abc"), []string{"update-ref", "-d", "refs/x", "abc"}},
		{"ref exists", refExistsCmd("d", "refs/x"), []string{"rev-parse", "--verify", "--quiet", "refs/x"}},
		{"refs under", refsUnderCmd("d", "refs/lazy-kept/"), []string{"for-each-ref", "--format=%(refname) %(objectname)", "refs/lazy-kept/"}},
		{"commit info", commitInfoCmd("d", "abc"), []string{"log", "-1", "--format=%ct %s", "abc"}},
		{"is ancestor", isAncestorCmd("r", "a", "b"), []string{"merge-base", "--is-ancestor", "a", "b"}},
		{"swap ref", swapRefCmd("d", "refs/lazy-kept/owed/x", "abc", "", "why"), []string{"update-ref", "-m", "why", "refs/lazy-kept/owed/x", "abc", ""}},
		{"current branch", currentBranchCmd("d"), []string{"symbolic-ref", "--quiet", "--short", "HEAD"}},
		{"stash merge", stashMergeCmd("d", "a", "b", false), []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", "a", "b"}},
		{"untracked merge", stashMergeCmd("d", "a^3", "b^3", true), []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", "--allow-unrelated-histories", "a^3", "b^3"}},
		{"stash parents", parentsCmd("d", "abc"), []string{"log", "-1", "--format=%P%x00%s", "abc"}},
		{"empty tree", emptyTreeCmd("d"), []string{"mktree"}},
		{"stash commit", stashCommitCmd("d", "t", []string{"h", "i"}, "m"), []string{"commit-tree", "t", "-p", "h", "-p", "i", "-F", "-"}},
		{"stash store", stashStoreCmd("d", "abc", "On main: x"), []string{"stash", "store", "-m", "On main: x", "abc"}},
		{"stash conflicts", conflictsCmd("d", "abc"), []string{"log", "-1", "--format=%(trailers:key=Lazy-Conflict,valueonly,separator=%x00)", "abc"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestHalfSquashOnlyForExactlyTheSquash runs the proof a recovery needs
// before it resets a checkout: the squash alone, nothing of the user's.
func TestHalfSquashOnlyForExactlyTheSquash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (string, string) {
		dir := testrepo.New(t)
		base := testrepo.Git(t, dir, "rev-parse", "HEAD")
		testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
		argvWrite(t, dir, "f.txt", "task\n")
		testrepo.Git(t, dir, "add", ".")
		testrepo.Git(t, dir, "commit", "-q", "-m", "task")
		testrepo.Git(t, dir, "switch", "-q", "main")
		return dir, base
	}
	t.Run("clean checkout", func(t *testing.T) {
		dir, base := setup(t)
		if HalfSquash(ctx, dir, dir, base, "lazy/x") {
			t.Fatal("a checkout without the squash passed")
		}
	})
	t.Run("the squash alone, then undone", func(t *testing.T) {
		dir, base := setup(t)
		if _, err := SquashMerge(ctx, dir, "lazy/x"); err != nil {
			t.Fatal(err)
		}
		if !HalfSquash(ctx, dir, dir, base, "lazy/x") {
			t.Fatal("the squash alone did not pass")
		}
		if err := UndoSquash(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
		if st := testrepo.Git(t, dir, "status", "--porcelain"); st != "" {
			t.Fatalf("after the undo:\n%s", st)
		}
	})
	t.Run("the squash plus a user's edit", func(t *testing.T) {
		dir, base := setup(t)
		if _, err := SquashMerge(ctx, dir, "lazy/x"); err != nil {
			t.Fatal(err)
		}
		argvWrite(t, dir, "README.md", "mine\n")
		if HalfSquash(ctx, dir, dir, base, "lazy/x") {
			t.Fatal("a user's edit on top of the squash passed")
		}
	})
	t.Run("the squash plus an untracked file", func(t *testing.T) {
		dir, base := setup(t)
		if _, err := SquashMerge(ctx, dir, "lazy/x"); err != nil {
			t.Fatal(err)
		}
		argvWrite(t, dir, "new.txt", "mine\n")
		if HalfSquash(ctx, dir, dir, base, "lazy/x") {
			t.Fatal("an untracked file beside the squash passed")
		}
	})
}

// TestStashAppliesRefusesWhatWouldConflict checks the dry run before a
// stash is given back.
func TestStashAppliesRefusesWhatWouldConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	argvWrite(t, dir, "README.md", "mine\n")
	argvWrite(t, dir, "new.txt", "untracked of mine\n")
	sha, err := StashPush(ctx, dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := StashApplies(ctx, dir, sha); err != nil {
		t.Fatalf("a stash onto its own base: %v", err)
	}
	argvWrite(t, dir, "new.txt", "someone else's\n")
	if err := StashApplies(ctx, dir, sha); !errors.Is(err, ErrStashConflicts) {
		t.Fatalf("an untracked file in the way: %v", err)
	}
	testrepo.Git(t, dir, "clean", "-qfd")
	argvWrite(t, dir, "README.md", "other\n")
	testrepo.Git(t, dir, "commit", "-qam", "other")
	if err := StashApplies(ctx, dir, sha); !errors.Is(err, ErrStashConflicts) {
		t.Fatalf("a conflicting commit: %v", err)
	}
	if testrepo.Git(t, dir, "status", "--porcelain") != "" {
		t.Fatal("the dry run touched the checkout")
	}
}

// TestRefsRoundTrip creates, lists, checks and deletes a ref; a second
// create of the same ref is refused.
func TestRefsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")
	ref := "refs/lazy-kept/stash/t1/" + head
	if err := CreateRef(ctx, dir, ref, head, "test"); err != nil {
		t.Fatal(err)
	}
	if err := CreateRef(ctx, dir, ref, head, "test"); err == nil {
		t.Fatal("a second create overwrote the ref")
	}
	refs, err := RefsUnder(ctx, dir, "refs/lazy-kept/")
	if err != nil || !reflect.DeepEqual(refs, []Ref{{Name: ref, SHA: head}}) || !RefExists(ctx, dir, ref) {
		t.Fatalf("refs %v %v", refs, err)
	}
	if at, subject, err := CommitInfo(ctx, dir, head); err != nil || at.IsZero() || subject != "initial" {
		t.Fatalf("commit info %v %q %v", at, subject, err)
	}
	if err := DeleteRef(ctx, dir, ref, head); err != nil || RefExists(ctx, dir, ref) {
		t.Fatalf("delete: %v", err)
	}
	if CreateRef(ctx, dir, "-d", head, "x") == nil || RefExists(ctx, dir, "--all") || IsAncestor(ctx, dir, "--all", head) {
		t.Fatal("an option-like ref reached git")
	}
	if !IsAncestor(ctx, dir, head, head) {
		t.Fatal("a commit is its own ancestor")
	}
}

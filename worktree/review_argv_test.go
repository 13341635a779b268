package worktree

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestReviewCommandsArgv pins the argv of lazy diff and accept --dry-run.
func TestReviewCommandsArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"merge base", mergeBaseCmd("r", "main", "abc"), []string{"merge-base", "refs/heads/main", "abc"}},
		{"commit log", commitLogCmd("r", "a", "b"), []string{"log", "--reverse", "--format=%h %s", "a..b"}},
		{"name status", nameStatusCmd("r", "a", "b"), []string{"diff", "--name-status", "a", "b"}},
		{"stat", statCmd("r", "a", "b", false), []string{"diff", "--stat", "a", "b"}},
		{"wide stat", statCmd("r", "a", "b", true), []string{"diff", "--stat=200", "--no-color", "a", "b"}},
		{"names", diffNamesCmd("r", "a", "b"), []string{"diff", "--name-only", "-z", "a", "b"}},
		{"changed paths", changedPathsCmd("r", "a", "b"), []string{"diff", "--name-only", "-z", "--no-renames", "a", "b"}},
		{"patch", patchCmd("r", "a", "b"), []string{"diff", "--no-color", "--no-ext-diff", "a", "b"}},
		{"numstat", numstatCmd("r", "a", "b"), []string{"diff", "--numstat", "-z", "--no-renames", "a", "b"}},
		{"porcelain", porcelainCmd("d"), []string{"status", "--porcelain", "-z", "--untracked-files=all"}},
		{"uncommitted patch", uncommittedPatchCmd("d"), []string{"diff", "--no-color", "--no-ext-diff", "--stat=200", "--patch", "HEAD"}},
		{"untracked names", untrackedNamesCmd("d"), []string{"ls-files", "--others", "--exclude-standard", "-z"}},
		{"untracked patch", untrackedPatchCmd("d", "-n.txt"), []string{"diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", "-n.txt"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestReviewCommandsOnARealRepository checks the parsing: names with
// spaces and newlines survive, untracked files are listed one by one.
func TestReviewCommandsOnARealRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	base := testrepo.Git(t, dir, "rev-parse", "HEAD")
	argvWrite(t, dir, "a b\nc.txt", "x\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "odd name")
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")
	if names, err := DiffNames(ctx, dir, base, head); err != nil || !reflect.DeepEqual(names, []string{"a b\nc.txt"}) {
		t.Fatalf("names %q %v", names, err)
	}
	if log, err := CommitLog(ctx, dir, base, head); err != nil || len(log) != 1 {
		t.Fatalf("log %q %v", log, err)
	}
	if mb, err := MergeBase(ctx, dir, "main", head); err != nil || mb != head {
		t.Fatalf("merge base %q %v", mb, err)
	}
	if d, err := Numstat(ctx, dir, base, head); err != nil || d != (DiffStat{Files: 1, Additions: 1}) || d.String() != "1 file, +1 -0" {
		t.Fatalf("numstat %+v %v", d, err)
	}
	argvWrite(t, dir, "README.md", "changed\n")
	argvWrite(t, dir, "new.txt", "new\n")
	if files, err := Uncommitted(ctx, dir); err != nil || !reflect.DeepEqual(files, []string{"README.md", "new.txt"}) {
		t.Fatalf("uncommitted %q %v", files, err)
	}
	p, err := UncommittedPatch(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" README.md | 2 +-", "-# test\n", "+changed\n", "+++ b/new.txt\n", "+new\n"} {
		if !strings.Contains(string(p), want) {
			t.Fatalf("the uncommitted patch lacks %q:\n%s", want, p)
		}
	}
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "clean")
	if p, err := UncommittedPatch(ctx, dir); err != nil || len(p) != 0 {
		t.Fatalf("a clean worktree's uncommitted patch: %q %v", p, err)
	}
	if _, err := Patch(ctx, dir, "--output=/tmp/x", head); err == nil {
		t.Fatal("an option-like commit reached git")
	}
}

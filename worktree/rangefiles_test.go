package worktree

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestRangeFilesCommandArgv pins the overlap check's git command.
func TestRangeFilesCommandArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *gitcli.Cmd
		want []string
	}{
		{"range files", rangeFilesCmd("r", "abc", "def"), []string{"diff", "--name-only", "-z", "--no-renames", "abc...def"}},
		{"landed files", rangeFilesCmd("r", "def", "abc"), []string{"diff", "--name-only", "-z", "--no-renames", "def...abc"}},
	} {
		got, err := tc.cmd.Argv()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
	ctx := context.Background()
	dir := testrepo.New(t)
	for _, pair := range [][2]string{{"--output=/tmp/x", "HEAD"}, {"HEAD", "-p"}, {"", "HEAD"}} {
		if _, _, err := RangeFiles(ctx, dir, pair[0], pair[1]); err == nil || !strings.Contains(err.Error(), "starts with a dash") {
			t.Errorf("RangeFiles(%q, %q): %v, want a refusal", pair[0], pair[1], err)
		}
	}
}

// TestRangeFilesOnARealRepository checks both sides of a fork: what the
// branch changed since it left main, and what landed on main since; a
// rename is its two names, and odd names survive.
func TestRangeFilesOnARealRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testrepo.New(t)
	argvWrite(t, dir, "old.txt", "old\n")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "old")
	testrepo.Git(t, dir, "switch", "-q", "-c", "lazy/x")
	argvWrite(t, dir, "a b\nc.txt", "x\n")
	testrepo.Git(t, dir, "mv", "old.txt", "new.txt")
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "task work")
	testrepo.Git(t, dir, "switch", "-q", "main")
	argvWrite(t, dir, "README.md", "changed on main\n")
	testrepo.Git(t, dir, "commit", "-q", "-am", "main moves on")
	branch, main := testrepo.Git(t, dir, "rev-parse", "lazy/x"), testrepo.Git(t, dir, "rev-parse", "main")

	names, cut, err := RangeFiles(ctx, dir, main, branch)
	if want := []string{"a b\nc.txt", "new.txt", "old.txt"}; err != nil || cut || !reflect.DeepEqual(names, want) {
		t.Fatalf("the branch's files %q (cut %v, %v), want %q", names, cut, err, want)
	}
	landed, cut, err := LandedFiles(ctx, dir, branch, main)
	if err != nil || cut || !reflect.DeepEqual(landed, []string{"README.md"}) {
		t.Fatalf("landed %q (cut %v, %v), want README.md", landed, cut, err)
	}
	if names, _, err := RangeFiles(ctx, dir, "refs/heads/main", "refs/heads/lazy/x"); err != nil || len(names) != 3 {
		t.Fatalf("by ref names: %q %v", names, err)
	}
	if names, cut, err := RangeFiles(ctx, dir, main, main); err != nil || cut || len(names) != 0 {
		t.Fatalf("an empty range: %q %v %v", names, cut, err)
	}
	if _, _, err := RangeFiles(ctx, dir, main, "refs/heads/none"); err == nil {
		t.Fatal("a missing branch read as no changes")
	}
}

// TestRangeFilesStopsAtTheCap checks that a range of more files than the
// cap returns the first ones and says it was cut, and that exactly the
// cap is not cut.
func TestRangeFilesStopsAtTheCap(t *testing.T) {
	ctx := context.Background()
	dir := testrepo.New(t)
	base := testrepo.Git(t, dir, "rev-parse", "HEAD")
	for i := 0; i < 7; i++ {
		argvWrite(t, dir, fmt.Sprintf("f%d", i), "x")
	}
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", "many")
	names, cut, err := rangeFiles(ctx, dir, base, "HEAD", 4)
	if err != nil || !cut || !reflect.DeepEqual(names, []string{"f0", "f1", "f2", "f3"}) {
		t.Fatalf("%q (cut %v, %v), want the first 4 and cut", names, cut, err)
	}
	if names, cut, err := rangeFiles(ctx, dir, base, "HEAD", 7); err != nil || cut || len(names) != 7 {
		t.Fatalf("exactly the cap: %q (cut %v, %v)", names, cut, err)
	}
}

// TestNameCollectorIsSplitAnywhere feeds the collector byte by byte and
// in one piece: the names, the cap and the byte bound do not depend on
// how git's output was split.
func TestNameCollectorIsSplitAnywhere(t *testing.T) {
	out := []byte("a\x00bb\x00ccc\x00dddd\x00")
	for _, step := range []int{1, 2, 3, len(out)} {
		c := &nameCollector{max: 3, maxBytes: 1 << 10}
		var err error
		for i := 0; i < len(out) && err == nil; i += step {
			_, err = c.Write(out[i:min(i+step, len(out))])
		}
		if !errors.Is(err, errEnoughNames) || !c.truncated || !reflect.DeepEqual(c.finish(), []string{"a", "bb", "ccc"}) {
			t.Errorf("step %d: %q truncated %v err %v", step, c.names, c.truncated, err)
		}
		all := &nameCollector{max: 4, maxBytes: 1 << 10}
		for i := 0; i < len(out); i += step {
			if _, err := all.Write(out[i:min(i+step, len(out))]); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if all.truncated || !reflect.DeepEqual(all.finish(), []string{"a", "bb", "ccc", "dddd"}) {
			t.Errorf("step %d, room for all: %q truncated %v", step, all.names, all.truncated)
		}
	}
	c := &nameCollector{max: 10, maxBytes: 5}
	if _, err := c.Write(out); !errors.Is(err, errEnoughNames) || !c.truncated || !reflect.DeepEqual(c.finish(), []string{"a", "bb"}) {
		t.Errorf("byte bound: %q truncated %v err %v", c.names, c.truncated, err)
	}
}

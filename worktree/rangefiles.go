package worktree

import (
	"bytes"
	"context"
	"errors"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The read-only command behind the overlap check (lazy list's OVERLAPS):
// which files one side of a fork changed. Its argv is pinned by the argv
// tests.

// MaxRangeFiles is the most file names RangeFiles returns; past it the
// result says it was cut. A task that changes more files than this is
// checked for overlaps on its first MaxRangeFiles files only.
const MaxRangeFiles = 5000

// maxRangeBytes bounds the bytes of names RangeFiles keeps, so a
// repository of very long paths cannot make it hold more than this.
const maxRangeBytes = 4 << 20

func rangeFilesCmd(repoDir, base, tip string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--name-only", "-z", "--no-renames", base+"..."+tip)
}

// RangeFiles lists the files changed between the merge base of base and
// tip, and tip: what tip's side of the fork changed. Every name survives
// (NUL-separated output; a rename is its two names). At most
// MaxRangeFiles names (and a few MiB of them) are read; truncated says
// there were more, and git is stopped there rather than read to the end.
// base and tip are commits or full ref names, never options.
func RangeFiles(ctx context.Context, repoDir, base, tip string) (names []string, truncated bool, err error) {
	return rangeFiles(ctx, repoDir, base, tip, MaxRangeFiles)
}

// rangeFiles is RangeFiles with its cap as a parameter, for the tests.
func rangeFiles(ctx context.Context, repoDir, base, tip string, max int) ([]string, bool, error) {
	if !plain(base) || !plain(tip) {
		return nil, false, errOption("commit", base+" "+tip)
	}
	c := &nameCollector{max: max, maxBytes: maxRangeBytes}
	if err := rangeFilesCmd(repoDir, base, tip).Stream(ctx, c); err != nil && !errors.Is(err, errEnoughNames) {
		return nil, false, err
	}
	return c.finish(), c.truncated, nil
}

// LandedFiles lists the files the target branch changed since the task's
// branch forked from it: RangeFiles with the sides swapped, so what
// landed on targetTip after the merge base of the two.
func LandedFiles(ctx context.Context, repoDir, branchTip, targetTip string) ([]string, bool, error) {
	return RangeFiles(ctx, repoDir, branchTip, targetTip)
}

// errEnoughNames is how nameCollector stops git once it has its fill.
var errEnoughNames = errors.New("enough file names")

// nameCollector splits NUL-terminated names as git writes them and keeps
// at most max of them (and maxBytes of their bytes); the write that
// brings one more refuses, which stops git.
type nameCollector struct {
	names     []string
	cur       []byte // the name being read
	size      int    // bytes kept in names and cur
	max       int
	maxBytes  int
	truncated bool
}

func (c *nameCollector) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if len(c.names) >= c.max {
			// Every name ends in a NUL, so any byte after the last kept
			// one starts a name that does not fit.
			c.truncated = true
			return n, errEnoughNames
		}
		i := bytes.IndexByte(p, 0)
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if c.size+len(chunk) > c.maxBytes {
			c.truncated = true
			c.cur = c.cur[:0]
			return n, errEnoughNames
		}
		c.cur = append(c.cur, chunk...)
		c.size += len(chunk)
		n += len(chunk)
		p = p[len(chunk):]
		if i >= 0 {
			c.names = append(c.names, string(c.cur))
			c.cur = c.cur[:0]
			n++
			p = p[1:]
		}
	}
	return n, nil
}

// finish returns the names read, with a last one git did not terminate.
func (c *nameCollector) finish() []string {
	if len(c.cur) > 0 && !c.truncated {
		c.names = append(c.names, string(c.cur))
		c.cur = c.cur[:0]
	}
	return c.names
}

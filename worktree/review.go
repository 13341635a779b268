package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The read-only commands of lazy diff and lazy accept --dry-run: what a
// task branch holds relative to the branch it merges into. Each argv is
// pinned by the argv tests.

func mergeBaseCmd(repoDir, into, sha string) *gitcli.Cmd {
	return gitcli.New(repoDir, "merge-base", "refs/heads/"+into, sha)
}

// MergeBase is the best common ancestor of branch into and commit sha.
func MergeBase(ctx context.Context, repoDir, into, sha string) (string, error) {
	if !plain(sha) {
		return "", errOption("commit", sha)
	}
	return mergeBaseCmd(repoDir, into, sha).String(ctx)
}

func commitLogCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "log", "--reverse", "--format=%h %s", from+".."+to)
}

// CommitLog lists the commits after from up to to, oldest first, as
// "short-sha subject".
func CommitLog(ctx context.Context, repoDir, from, to string) ([]string, error) {
	if !plain(from) {
		return nil, errOption("commit", from)
	}
	out, err := commitLogCmd(repoDir, from, to).String(ctx)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

func nameStatusCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--name-status", from, to)
}

// NameStatus lists the files that differ between from and to, one
// "status<TAB>path" line each.
func NameStatus(ctx context.Context, repoDir, from, to string) ([]string, error) {
	if !plain(from) || !plain(to) {
		return nil, errOption("commit", from+" "+to)
	}
	out, err := nameStatusCmd(repoDir, from, to).String(ctx)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

func statCmd(repoDir, from, to string, wide bool) *gitcli.Cmd {
	if wide {
		return gitcli.New(repoDir, "diff", "--stat=200", "--no-color", from, to)
	}
	return gitcli.New(repoDir, "diff", "--stat", from, to)
}

// Stat is git's diffstat from from to to; wide lets long names through
// (lazy diff), else git's default width (the accept preview).
func Stat(ctx context.Context, repoDir, from, to string, wide bool) (string, error) {
	if !plain(from) || !plain(to) {
		return "", errOption("commit", from+" "+to)
	}
	// Only the trailing newline goes: the first line's leading space
	// lines its bar up with the others.
	out, err := statCmd(repoDir, from, to, wide).Output(ctx)
	return strings.TrimRight(string(out), "\n"), err
}

func diffNamesCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--name-only", "-z", from, to)
}

// DiffNames lists the files that differ between from and to; any name
// survives (NUL-separated output).
func DiffNames(ctx context.Context, repoDir, from, to string) ([]string, error) {
	if !plain(from) || !plain(to) {
		return nil, errOption("commit", from+" "+to)
	}
	return nulNames(ctx, diffNamesCmd(repoDir, from, to))
}

// nulNames runs a command that prints NUL-separated names and lists
// them.
func nulNames(ctx context.Context, c *gitcli.Cmd) ([]string, error) {
	out, err := c.Output(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			names = append(names, f)
		}
	}
	return names, nil
}

func changedPathsCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--name-only", "-z", "--no-renames", from, to)
}

// ChangedPaths lists every path whose content differs between from and
// to (commits or trees), as DiffNames does but with rename detection off
// whatever the configuration says: a file moved, or deleted while another
// with the same content was added, is both its names. A merge queue's
// lane compares trees with it, where a path left out is a change missed.
func ChangedPaths(ctx context.Context, repoDir, from, to string) ([]string, error) {
	if !plain(from) || !plain(to) {
		return nil, errOption("commit", from+" "+to)
	}
	return nulNames(ctx, changedPathsCmd(repoDir, from, to))
}

func patchCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--no-color", "--no-ext-diff", from, to)
}

// Patch is the diff from from to to, without colour or external diff
// drivers (the repository's config must not run programs here).
func Patch(ctx context.Context, repoDir, from, to string) ([]byte, error) {
	if !plain(from) || !plain(to) {
		return nil, errOption("commit", from+" "+to)
	}
	return patchCmd(repoDir, from, to).Output(ctx)
}

func porcelainCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "status", "--porcelain", "-z", "--untracked-files=all")
}

// Uncommitted lists the files with uncommitted changes at dir (each
// untracked file on its own).
func Uncommitted(ctx context.Context, dir string) ([]string, error) {
	out, err := porcelainCmd(dir).Output(ctx)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, rec := range strings.Split(string(out), "\x00") {
		if len(rec) > 3 && rec[2] == ' ' {
			files = append(files, rec[3:])
		}
	}
	return files, nil
}

func uncommittedPatchCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "diff", "--no-color", "--no-ext-diff", "--stat=200", "--patch", "HEAD").Env("GIT_OPTIONAL_LOCKS=0")
}

func untrackedNamesCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "ls-files", "--others", "--exclude-standard", "-z")
}

func untrackedPatchCmd(dir, file string) *gitcli.Cmd {
	return gitcli.New(dir, "diff", "--no-color", "--no-ext-diff", "--no-index").Paths(os.DevNull, file)
}

// MaxUntrackedShown is how many untracked files UncommittedPatch shows
// as new files; it names how many more there are.
const MaxUntrackedShown = 50

// UncommittedPatch is what the worktree at dir changed and has not
// committed, as a review reads it: the diffstat and patch of the tracked
// files against HEAD, then each untracked file (at most
// MaxUntrackedShown) as a new file. Empty when the worktree is clean. No
// colour and no external diff driver (the repository's config must not
// run programs here).
func UncommittedPatch(ctx context.Context, dir string) ([]byte, error) {
	out, err := uncommittedPatchCmd(dir).Output(ctx)
	if err != nil {
		return nil, err
	}
	names, err := untrackedNamesCmd(dir).Output(ctx)
	if err != nil {
		return nil, err
	}
	var untracked []string
	for _, f := range strings.Split(string(names), "\x00") {
		if f != "" {
			untracked = append(untracked, f)
		}
	}
	for i, f := range untracked {
		if i == MaxUntrackedShown {
			out = fmt.Appendf(out, "… and %d more untracked files\n", len(untracked)-i)
			break
		}
		// diff --no-index exits 1 when the files differ, which they do.
		p, err := untrackedPatchCmd(dir, f).Output(ctx)
		var ge *gitcli.Error
		if err != nil && (!errors.As(err, &ge) || ge.ExitCode() != 1) {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

func numstatCmd(repoDir, from, to string) *gitcli.Cmd {
	return gitcli.New(repoDir, "diff", "--numstat", "-z", "--no-renames", from, to)
}

// DiffStat is the size of a change: files touched, lines added and
// deleted (a binary file counts as a file with no lines).
type DiffStat struct {
	Files     int `json:"files"`
	Additions int `json:"additions"`
	Deletions int `json:"deletions"`
}

// String is the stat as one line: "3 files, +40 -2".
func (d DiffStat) String() string {
	unit := "files"
	if d.Files == 1 {
		unit = "file"
	}
	return fmt.Sprintf("%d %s, +%d -%d", d.Files, unit, d.Additions, d.Deletions)
}

// Numstat measures the change from from to to (git diff --numstat).
func Numstat(ctx context.Context, repoDir, from, to string) (DiffStat, error) {
	if !plain(from) || !plain(to) {
		return DiffStat{}, errOption("commit", from+" "+to)
	}
	out, err := numstatCmd(repoDir, from, to).Output(ctx)
	if err != nil {
		return DiffStat{}, err
	}
	// -z: "added\tdeleted\tpath\x00" per file ("-\t-\t" for a binary).
	var d DiffStat
	for _, rec := range strings.Split(string(out), "\x00") {
		add, rest, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		del, _, _ := strings.Cut(rest, "\t")
		d.Files++
		a, _ := strconv.Atoi(add)
		x, _ := strconv.Atoi(del)
		d.Additions += a
		d.Deletions += x
	}
	return d, nil
}

package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/proto"
)

// Bounds of what Diff and Logs return, so one call never floods a
// caller's context window.
const (
	DefaultDiffBytes = 64 << 10
	MaxDiffBytes     = 1 << 20
	DefaultLogLines  = 100
	MaxLogLines      = 5000
	maxLogRead       = 4 << 20
)

// DiffResult is what a task's branch changed against its base branch.
type DiffResult struct {
	ID, Slug string
	Branch   string
	Base     string
	// MergeBase and BranchSHA are the range diffed.
	MergeBase, BranchSHA string
	Stat                 string // git diff --stat
	Files                []string
	Patch                string // "" unless asked; cut at the byte bound
	Truncated            bool
	// Uncommitted lists worktree files changed but not committed yet.
	Uncommitted []string
}

// Diff reports the changes on a task's branch since it left its base
// branch (the range `lazy diff` shows), with the full patch when patch
// is set, cut at maxBytes (0: DefaultDiffBytes).
func (rv *Service) Diff(ctx context.Context, name string, patch bool, maxBytes int) (*DiffResult, error) {
	e := rv.Env
	sn, err := rv.load(name)
	if err != nil {
		return nil, err
	}
	r, wt, err := rv.Measure(ctx, sn, "no branch to diff")
	if err != nil {
		return nil, err
	}
	out := &DiffResult{ID: sn.Task.ID, Slug: sn.Task.Slug, Branch: r.Branch, Base: r.Into, MergeBase: r.MergeBase, BranchSHA: r.BranchSHA, Files: []string{}, Uncommitted: []string{}}
	stat, err := rv.worktrees().Stat(ctx, e.Dir(), r.MergeBase, r.BranchSHA, true)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", sn.Task.Slug, err)
	}
	out.Stat = sanitize.Field(stat)
	names, err := rv.worktrees().DiffNames(ctx, e.Dir(), r.MergeBase, r.BranchSHA)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", sn.Task.Slug, err)
	}
	for _, f := range names {
		out.Files = append(out.Files, sanitize.Field(f))
	}
	if patch {
		if maxBytes <= 0 {
			maxBytes = DefaultDiffBytes
		}
		maxBytes = min(maxBytes, MaxDiffBytes)
		p, err := rv.worktrees().Patch(ctx, e.Dir(), r.MergeBase, r.BranchSHA)
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", sn.Task.Slug, err)
		}
		if len(p) > maxBytes {
			p, out.Truncated = p[:maxBytes], true
		}
		out.Patch = sanitize.Field(string(p))
	}
	if wt != "" {
		if files, err := rv.worktrees().Uncommitted(ctx, wt); err == nil {
			for _, f := range files {
				out.Uncommitted = append(out.Uncommitted, sanitize.Field(f))
			}
		}
	}
	return out, nil
}

// LogTail is the end of a task's agent log.
type LogTail struct {
	Lines     []string
	Truncated bool // earlier lines exist
	Path      string
}

// Logs returns the last lines (0: DefaultLogLines) of the agent log of a
// task's latest turn on this machine, escaped for display.
func (rv *Service) Logs(_ context.Context, name string, lines int) (*LogTail, error) {
	e := rv.Env
	sn, err := rv.load(name)
	if err != nil {
		return nil, err
	}
	if lines <= 0 {
		lines = DefaultLogLines
	}
	lines = min(lines, MaxLogLines)
	path := proto.ForTask(e.Repo.LazyDir(), sn.Task.ID).Path(proto.LogFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &LogTail{Lines: []string{}, Path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the agent log of %s: %w", sn.Task.Slug, err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-maxLogRead, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, fmt.Errorf("read the agent log of %s: %w", sn.Task.Slug, err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if off > 0 && len(all) > 0 {
		all = all[1:] // a partial first line
	}
	out := &LogTail{Lines: []string{}, Path: path, Truncated: off > 0}
	if len(all) == 1 && all[0] == "" {
		return out, nil
	}
	if len(all) > lines {
		all, out.Truncated = all[len(all)-lines:], true
	}
	// The lines go to another agent (lazy_logs): without the secrets an
	// agent printed, each JSON line still JSON.
	secrets := e.Secrets()
	for _, l := range all {
		out.Lines = append(out.Lines, sanitize.Field(strings.TrimRight(string(secrets.Log([]byte(l))), "\r")))
	}
	return out, nil
}

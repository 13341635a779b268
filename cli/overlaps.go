package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/ops"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// overlaps is the overlap check of lazy list, show and watch (see
// ops.Env.Overlaps), keyed by task id. It never fails a view: a check
// that cannot be made shows no overlaps. cache (nil: none) serves views
// that refresh.
func (a *app) overlaps(ctx context.Context, entries []task.Entry, cache *review.OverlapCache) map[string]review.TaskOverlaps {
	// A read-only check needs neither the actor nor the turn policy, so a
	// bad lazy.* setting does not hide it.
	env := ops.New(a.store, session.Env{RepoDir: a.repoDir()})
	ov, err := env.Review().OverlapsOf(ctx, entries, cache)
	if err != nil {
		return nil
	}
	return ov
}

// taskOverlaps is the check for one task (lazy show): only a task that
// is unfinished and started on this machine can overlap, so any other
// lists nothing.
func (a *app) taskOverlaps(ctx context.Context, sn *task.Snapshot) review.TaskOverlaps {
	env := ops.New(a.store, session.Env{RepoDir: a.repoDir()})
	if sn.Task.Status.IsTerminal() || !env.Owns(sn) {
		return review.TaskOverlaps{}
	}
	entries, err := a.store.List()
	if err != nil {
		return review.TaskOverlaps{}
	}
	return a.overlaps(ctx, entries, nil)[sn.Task.ID]
}

// withOverlaps adds a task's overlaps to its summary's JSON object
// (lazy list --json), as the fields review.TaskOverlaps names; a task
// without any is written as it was.
func withOverlaps(obj []byte, o review.TaskOverlaps) []byte {
	if o.Empty() || len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj
	}
	fields, err := json.Marshal(o)
	if err != nil || len(fields) < 2 {
		return obj
	}
	out := append([]byte(nil), obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, fields[1:len(fields)-1]...)
	return append(out, '}')
}

// fileName is a path as lazy prints it on a terminal: as it is when it is
// plain, else quoted the way Go quotes a string (a newline, a control or
// a bidi character shows as an escape), so one name stays on one line
// and looks like what it is.
func fileName(f string) string {
	if strconv.CanBackquote(f) && termsafe.Safe(f) && !strings.Contains(f, "\t") {
		return f
	}
	return strconv.Quote(f)
}

// renderOverlaps prints lazy show's Overlaps section: per other task and
// for what landed on the target, the files, at most maxFilesShown each.
func renderOverlaps(w io.Writer, slug string, o review.TaskOverlaps) {
	if o.Empty() {
		return
	}
	into := o.Into
	if into == "" {
		into = "its target"
	}
	fmt.Fprintf(w, "\nOverlaps (files changed here and elsewhere; the later merge may conflict)\n")
	files := func(list []string) {
		for i, f := range list {
			if i == maxFilesShown && len(list) > maxFilesShown+1 {
				fmt.Fprintf(w, "      … and %d more\n", len(list)-i)
				return
			}
			fmt.Fprintf(w, "      %s\n", fileName(f))
		}
	}
	for _, other := range o.Others() {
		n := len(o.With[other])
		fmt.Fprintf(w, "  with %s, also merging into %s (%d %s):\n", other, into, n, plural(n, "file", "files"))
		files(o.With[other])
	}
	if n := len(o.Landed); n > 0 {
		fmt.Fprintf(w, "  landed on %s since the branch forked (%d %s; lazy sync %s merges it in now):\n", into, n, plural(n, "file", "files"), slug)
		files(o.Landed)
	}
	if o.Truncated {
		fmt.Fprintf(w, "  (a side changed more than %d files, which is all lazy compares: some overlaps may be missing)\n", worktree.MaxRangeFiles)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package review

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/task"
)

// TaskOverlaps is what one active task's changes share, before accept,
// with the other active tasks that merge into the same branch and with
// what landed on that branch since the task's branch forked from it:
// the files where a merge may conflict, or where one change may undo
// another. The JSON fields are those of lazy list --json and lazy show
// --json.
type TaskOverlaps struct {
	// With maps another active task's slug to the files both changed.
	With map[string][]string `json:"overlaps,omitempty"`
	// Landed are the files the task changed that its target branch also
	// changed since the task's branch forked from it.
	Landed []string `json:"landed_overlap,omitempty"`
	// Truncated says a file list was cut at worktree.MaxRangeFiles, so
	// some overlaps may be missing.
	Truncated bool `json:"overlaps_truncated,omitempty"`
	// Into is the branch the task merges into, for the words around the
	// files (lazy show's "landed on main").
	Into string `json:"-"`
}

// Empty reports whether there is no overlap to show.
func (o TaskOverlaps) Empty() bool { return len(o.With) == 0 && len(o.Landed) == 0 }

// Others is the other tasks' slugs, in order.
func (o TaskOverlaps) Others() []string {
	out := make([]string, 0, len(o.With))
	for slug := range o.With {
		out = append(out, slug)
	}
	slices.Sort(out)
	return out
}

// Brief is the overlaps in one line that names the other tasks, as the
// web view's list and lazy watch --json give them: "b (2 files), landed
// (1)".
func (o TaskOverlaps) Brief() string {
	var parts []string
	for _, slug := range o.Others() {
		n := len(o.With[slug])
		parts = append(parts, fmt.Sprintf("%s (%d %s)", slug, n, plural(n, "file", "files")))
	}
	if len(o.Landed) > 0 {
		parts = append(parts, fmt.Sprintf("landed (%d)", len(o.Landed)))
	}
	if o.Truncated && len(parts) > 0 {
		parts = append(parts, "partial")
	}
	return strings.Join(parts, ", ")
}

// Short is the overlaps counted, for a terminal table's narrow column
// (lazy list, lazy watch): "2 files with 1 task", "1 file landed", "3
// files with 2 tasks, 1 landed"; lazy show names the tasks and files. A
// "+" says a file list was cut (see Truncated).
func (o TaskOverlaps) Short() string {
	more := ""
	if o.Truncated {
		more = "+"
	}
	var parts []string
	if len(o.With) > 0 {
		files := map[string]bool{}
		for _, fs := range o.With {
			for _, f := range fs {
				files[f] = true
			}
		}
		parts = append(parts, fmt.Sprintf("%d%s %s with %s", len(files), more, plural(len(files), "file", "files"), words.Count(len(o.With), "task", "tasks")))
	}
	if n := len(o.Landed); n > 0 {
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("%d%s %s landed", n, more, plural(n, "file", "files")))
		} else {
			parts = append(parts, fmt.Sprintf("%d landed", n))
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// overlapWorkers bounds the git processes an overlap check runs at once.
const overlapWorkers = 4

// Overlaps finds, for every active task, what its changes share with
// the other active tasks and with its target branch (see TaskOverlaps),
// keyed by task id; tasks without an overlap are left out. Only tasks
// whose session this machine started are compared: their branches are
// here (a task running elsewhere is skipped). It costs one git diff per
// task, and one more for what landed on its target, never one per pair;
// with no such task it runs no git at all.
func (rv *Service) Overlaps(ctx context.Context) (map[string]TaskOverlaps, error) {
	e := rv.Env
	entries, err := e.Store.List()
	if err != nil {
		return nil, err
	}
	return rv.OverlapsOf(ctx, entries, nil)
}

// OverlapsOf is Overlaps over a task list the caller already read.
// cache, when not nil, keeps the file lists of the last calls, so a view
// that refreshes runs git only for the branches that moved.
func (rv *Service) OverlapsOf(ctx context.Context, entries []task.Entry, cache *OverlapCache) (map[string]TaskOverlaps, error) {
	e := rv.Env
	ids := rv.localActive(entries)
	if len(ids) == 0 {
		return nil, nil
	}
	gen := cache.begin()
	base := rv.baseResolver(ctx)
	var work []*overlapWork
	for _, id := range ids {
		if w := rv.overlapWork(id, base); w != nil {
			work = append(work, w)
		}
	}
	sem := make(chan struct{}, overlapWorkers)
	var wg sync.WaitGroup
	for _, w := range work {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			w.read(ctx, rv.worktrees(), e.Dir(), cache, gen)
		}()
	}
	wg.Wait()
	cache.end(gen)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return intersect(work), nil
}

// localActive is the ids of the unfinished tasks that have a session
// record on this machine, read from one directory listing, so a
// repository whose active tasks all run elsewhere (or that has none)
// costs no git and no task load.
func (rv *Service) localActive(entries []task.Entry) []string {
	e := rv.Env
	var active []string
	for i := range entries {
		if entries[i].Err == nil && !entries[i].Status.IsTerminal() {
			active = append(active, entries[i].ID)
		}
	}
	if len(active) == 0 {
		return nil
	}
	files, err := os.ReadDir(string(e.Sessions()))
	if err != nil {
		return nil
	}
	have := make(map[string]bool, len(files))
	for _, f := range files {
		if id, ok := strings.CutSuffix(f.Name(), ".json"); ok {
			have[id] = true
		}
	}
	var out []string
	for _, id := range active {
		if have[id] {
			out = append(out, id)
		}
	}
	return out
}

// baseResolver is BaseBranch for many tasks at once: the repository's
// default branch is asked of git once, not once per task.
func (rv *Service) baseResolver(ctx context.Context) func(*task.Snapshot) (string, error) {
	e := rv.Env
	var def string
	var defErr error
	asked := false
	return func(sn *task.Snapshot) (string, error) {
		if sn.Task.Parent != "" || sn.Task.TargetBranch != "" {
			return e.BaseBranch(ctx, sn, e.Dir())
		}
		if !asked {
			def, defErr = rv.worktrees().DefaultBranch(ctx, e.Dir())
			asked = true
		}
		return def, defErr
	}
}

// overlapWork is one task's side of the check.
type overlapWork struct {
	id, slug, into     string
	group              string // the attempt group it belongs to, if any
	branchTip, intoTip string
	mine, landed       []string
	cut, ok            bool
}

// overlapWork finds task id's branch and target as accept would (the
// branch this machine's session record names, never the record's copy),
// with their commits; nil when the task has no branch or target here.
func (rv *Service) overlapWork(id string, base func(*task.Snapshot) (string, error)) *overlapWork {
	e := rv.Env
	sn, err := e.Store.Load(id)
	if err != nil || sn.Task.Status.IsTerminal() {
		return nil
	}
	local, err := e.Owned(sn)
	if err != nil || task.ValidBranchName(local.Branch) != nil {
		return nil
	}
	into, err := base(sn)
	if err != nil || task.ValidBranchName(into) != nil {
		return nil
	}
	refs := rv.refs()
	tip, ok, err := refs.ReadRef("refs/heads/" + local.Branch)
	if err != nil || !ok {
		return nil
	}
	intoTip, ok, err := refs.ReadRef("refs/heads/" + into)
	if err != nil || !ok {
		return nil
	}
	return &overlapWork{id: id, slug: sn.Task.Slug, group: sn.Task.AttemptOf, into: into, branchTip: tip.String(), intoTip: intoTip.String()}
}

// read lists what the branch changed since it forked, and what landed on
// the target since then (only when the branch changed something).
func (w *overlapWork) read(ctx context.Context, git Worktree, repoDir string, cache *OverlapCache, gen uint64) {
	files := func(base, tip string) ([]string, bool, error) {
		if r, ok := cache.get(base, tip, gen); ok {
			return r.names, r.cut, nil
		}
		names, cut, err := git.RangeFiles(ctx, repoDir, base, tip)
		if err == nil {
			cache.put(base, tip, gen, rangeResult{names: names, cut: cut})
		}
		return names, cut, err
	}
	mine, cut, err := files(w.intoTip, w.branchTip)
	if err != nil {
		return
	}
	w.mine, w.cut, w.ok = mine, cut, true
	if len(mine) == 0 || w.intoTip == w.branchTip {
		return
	}
	landed, cut, err := files(w.branchTip, w.intoTip)
	if err != nil {
		return
	}
	w.landed, w.cut = landed, w.cut || cut
}

// intersect compares the tasks that merge into the same branch, through
// one map of file to tasks per target, and each task with what landed.
func intersect(work []*overlapWork) map[string]TaskOverlaps {
	out := map[string]TaskOverlaps{}
	byTarget := map[string]map[string][]*overlapWork{}
	for _, w := range work {
		if !w.ok {
			continue
		}
		files := byTarget[w.into]
		if files == nil {
			files = map[string][]*overlapWork{}
			byTarget[w.into] = files
		}
		for _, f := range w.mine {
			files[f] = append(files[f], w)
		}
	}
	add := func(w *overlapWork, edit func(*TaskOverlaps)) {
		o := out[w.id]
		edit(&o)
		o.Truncated = o.Truncated || w.cut
		o.Into = w.into
		out[w.id] = o
	}
	for _, files := range byTarget {
		for f, ws := range files {
			for _, a := range ws {
				for _, b := range ws {
					if a == b || a.slug == b.slug {
						continue
					}
					if a.group != "" && a.group == b.group {
						// Attempts of one task are alternatives: one lands
						// and the others close, so they never merge together.
						continue
					}
					add(a, func(o *TaskOverlaps) {
						if o.With == nil {
							o.With = map[string][]string{}
						}
						o.With[b.slug] = append(o.With[b.slug], f)
					})
				}
			}
		}
	}
	for _, w := range work {
		if !w.ok || len(w.landed) == 0 {
			continue
		}
		mine := make(map[string]bool, len(w.mine))
		for _, f := range w.mine {
			mine[f] = true
		}
		var both []string
		for _, f := range w.landed {
			if mine[f] {
				both = append(both, f)
			}
		}
		if len(both) > 0 {
			add(w, func(o *TaskOverlaps) { o.Landed = both })
		}
	}
	for id, o := range out {
		for slug := range o.With {
			slices.Sort(o.With[slug])
		}
		slices.Sort(o.Landed)
		out[id] = o
	}
	return out
}

// rangeResult is one range's files, as RangeFiles read them.
type rangeResult struct {
	names []string
	cut   bool
}

// OverlapCache keeps the file lists an overlap check read, keyed by the
// two commits of each range (whose files never change), for views that
// check again every few seconds: lazy watch and the web view. It keeps
// the ranges of the last two checks only. The zero value is ready; it
// is safe for concurrent use; nil caches nothing.
type OverlapCache struct {
	mu     sync.Mutex
	gen    uint64
	ranges map[[2]string]cachedRange
}

type cachedRange struct {
	rangeResult
	gen uint64
}

// begin starts a check and returns its generation.
func (c *OverlapCache) begin() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	return c.gen
}

func (c *OverlapCache) get(base, tip string, gen uint64) (rangeResult, bool) {
	if c == nil {
		return rangeResult{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ranges[[2]string{base, tip}]
	if ok {
		r.gen = max(r.gen, gen)
		c.ranges[[2]string{base, tip}] = r
	}
	return r.rangeResult, ok
}

func (c *OverlapCache) put(base, tip string, gen uint64, r rangeResult) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ranges == nil {
		c.ranges = map[[2]string]cachedRange{}
	}
	c.ranges[[2]string{base, tip}] = cachedRange{rangeResult: r, gen: max(gen, c.ranges[[2]string{base, tip}].gen)}
}

// end forgets the ranges neither this check nor the one before used.
func (c *OverlapCache) end(gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range c.ranges {
		if r.gen+1 < gen {
			delete(c.ranges, k)
		}
	}
}

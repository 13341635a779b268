package reconcile

import (
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/lazyorch/lazy/worktree"
)

// mergeMemo keeps the answers of the merged-branch sweep's git processes
// across passes. Each answer is keyed by everything it was computed from,
// read in-process (a few files), so a pass in which no such ref moved
// spawns no git process at all, and one in which one moved asks git
// again: the memo can delay nothing.
type mergeMemo struct {
	mu sync.Mutex
	// headKey is the content of the files the default branch is read
	// from (origin/HEAD and HEAD); defaultBranch is what git said then.
	headKey, defaultBranch string
	// byTarget is the set of lazy/ branches merged into a target, keyed
	// by the target's tip and the tips of every lazy/ branch.
	byTarget map[string]mergedSet
	// declined holds, by task, "record commit, target tip" of a merged
	// candidate that finishMerged left alone (no recorded commits, a
	// reopen, newest commit not on the target): the same inputs give the
	// same answer.
	declined map[string]string
}

type mergedSet struct {
	key    string
	ok     bool // false: the target branch does not exist
	merged map[string]bool
}

// defaultBranchOf returns the repository's default branch, asking git
// only when origin/HEAD or HEAD changed since it last did.
func (m *mergeMemo) defaultBranchOf(ctx context.Context, r *Reconciler) (string, error) {
	repo := r.Env.Store.Repo()
	var key []byte
	for _, p := range []string{filepath.Join(repo.CommonDir, "refs", "remotes", "origin", "HEAD"), filepath.Join(repo.GitDir, "HEAD")} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			key = nil // unreadable: ask git, remember nothing
			break
		}
		key = append(append(key, b...), 0)
	}
	m.mu.Lock()
	if key != nil && m.headKey == string(key) && m.defaultBranch != "" {
		b := m.defaultBranch
		m.mu.Unlock()
		return b, nil
	}
	m.mu.Unlock()
	b, err := worktree.DefaultBranch(ctx, r.Env.RepoDir)
	if err != nil {
		return "", err
	}
	if key != nil {
		m.mu.Lock()
		m.headKey, m.defaultBranch = string(key), b
		m.mu.Unlock()
	}
	return b, nil
}

// lazyTips fingerprints the tips of every lazy/ branch; "" when they
// cannot be read, which disables the memo for the pass.
func lazyTips(r *Reconciler) string {
	refs, err := r.Env.Store.Repo().ListRefs("refs/heads/lazy/")
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New128a()
	for _, n := range names {
		h1 := refs[n]
		_, _ = h.Write([]byte(n))
		_, _ = h.Write(h1[:])
	}
	return strconv.Itoa(len(names)) + ":" + string(h.Sum(nil))
}

// targetKey is what a target's merged set is computed from; "" when it
// cannot be told, so the set is computed afresh and not kept.
func targetKey(r *Reconciler, target, tips string) string {
	if tips == "" {
		return ""
	}
	h, ok, err := r.Env.Store.Repo().ReadRef("refs/heads/" + target)
	if err != nil {
		return ""
	}
	if !ok {
		return "absent " + tips
	}
	return h.String() + " " + tips
}

func (m *mergeMemo) lookup(target, key string) (mergedSet, bool) {
	if key == "" {
		return mergedSet{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byTarget[target]
	return s, ok && s.key == key
}

// keep records this pass's sets and declines as the memo for the next
// pass; targets and tasks this pass did not look at are dropped.
func (m *mergeMemo) keep(sets map[string]mergedSet, declined map[string]string) {
	m.mu.Lock()
	m.byTarget, m.declined = sets, declined
	m.mu.Unlock()
}

func (m *mergeMemo) wasDeclined(id, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return key != "" && m.declined[id] == key
}

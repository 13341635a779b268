package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"
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
	// by the target's tip and the stamp of every lazy/ branch (lazyTips).
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
func (m *mergeMemo) defaultBranchOf(ctx context.Context, s *mergedSweep) (string, error) {
	key := headKey(s)
	m.mu.Lock()
	if key != "" && m.headKey == key && m.defaultBranch != "" {
		b := m.defaultBranch
		m.mu.Unlock()
		return b, nil
	}
	m.mu.Unlock()
	b, err := s.git.DefaultBranch(ctx, s.env.RepoDir)
	if err != nil {
		return "", err
	}
	if key != "" {
		m.mu.Lock()
		m.headKey, m.defaultBranch = key, b
		m.mu.Unlock()
	}
	return b, nil
}

// headKey is the content of the files the default branch is read from
// (origin/HEAD and HEAD), or "" when one cannot be read.
func headKey(s *mergedSweep) string {
	repo := s.env.Repo
	var key []byte
	for _, p := range []string{filepath.Join(repo.CommonDir, "refs", "remotes", "origin", "HEAD"), filepath.Join(repo.GitDir, "HEAD")} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			return "" // unreadable: ask git, remember nothing
		}
		key = append(append(key, b...), 0)
	}
	return string(key)
}

// racyWindow is how recent a change to the files lazyTips stamps must be
// for the stamp to be distrusted: file times advance in clock ticks, so a
// second ref update within the tick of the first can leave them as they
// were (git's "racy index" problem, solved the same way).
const racyWindow = 2 * time.Second

// lazyTips stamps the tips of every lazy/ branch without reading them:
// the identity, size and time of packed-refs and of refs/heads/lazy/, the
// directory every task branch (lazy/<slug>, slugs have no slash) lives
// in, whose time moves with every loose ref written or removed there.
// Reading each branch instead costs a file per task ever started. ""
// when it cannot be told, or a change is too recent to trust the stamp;
// that disables the memo for the pass.
func lazyTips(s *mergedSweep) string {
	common := s.env.Repo.CommonDir
	stamp, settled := s.stamps.fileStamps(filepath.Join(common, "packed-refs"), filepath.Join(common, "refs", "heads", "lazy"))
	if !settled {
		return ""
	}
	return stamp
}

// fileStamps stamps files (or directories) as gitstore.FileStamp does,
// through the reconciler's StampWatcher. settled says every time was
// older than racyWindow, so that the same stamp read later means the
// files did not change; "" when one cannot be told.
func (r *Reconciler) fileStamps(paths ...string) (stamp string, settled bool) {
	stamp, newest, err := r.stamper().Stamp(paths...)
	if err != nil {
		return "", false
	}
	return stamp, time.Since(newest) >= racyWindow
}

// targetKey is what a target's merged set is computed from; "" when it
// cannot be told, so the set is computed afresh and not kept.
func targetKey(s *mergedSweep, target, tips string) string {
	if tips == "" {
		return ""
	}
	h, ok, err := s.env.Repo.ReadRef("refs/heads/" + target)
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

package gitstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestBatchListMatchesInProcessReader lists varied tasks through the
// cat-file batch (more misses than batchThreshold) and checks every entry
// against the in-process reader, which decodes with encoding/json: the
// fast decoder and its fallbacks must not change a byte.
func TestBatchListMatchesInProcessReader(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	s, _ := open(t)
	titles := []string{"plain", "ünïcödé 日本語", "<b>&amp;</b>", `quote " and \ backslash`, "sep \u2028\u2029", "emoji \U0001F600"}
	var parent string
	for i := 0; i < batchThreshold+20; i++ {
		spec := task.CreateSpec{Title: fmt.Sprintf("%s %d", titles[i%len(titles)], i), Actor: machine.Human}
		switch i % 5 {
		case 1:
			spec.Metadata = map[string]string{"z": "1", "a": "<2>"}
		case 2:
			spec.AllowedPaths = []string{"src/", "docs/<x>"}
		case 3:
			spec.Parent = parent
		case 4:
			spec.TargetBranch = "release"
		}
		sn, err := s.Create(spec)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			parent = sn.Task.ID
		}
	}
	bad := mustCreate(t, s, "corrupt").Task.ID
	plantHuge(t, s, bad, MaxMetaRecord+1)

	_ = os.Remove(s.repo.LazyDir("cache", cacheFile))
	cold, err := Open(s.repo).List()
	if err != nil {
		t.Fatal(err)
	}
	warm, err := Open(s.repo).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(cold) != batchThreshold+21 || len(warm) != len(cold) {
		t.Fatalf("listed %d then %d entries", len(cold), len(warm))
	}
	// The same batch split between two cat-file processes.
	ids := make([]string, len(cold))
	commits := make([]gitrepo.OID, len(cold))
	for i, e := range cold {
		ids[i], commits[i] = e.ID, e.Commit
	}
	split, err := Open(s.repo).lister().batchParts(ids, commits, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range cold {
		if got := (&cached{id: e.ID, cacheRec: split[i]}).entry(); fmt.Sprint(got) != fmt.Sprint(e) {
			t.Fatalf("split batch %s:\n got %+v\nwant %+v", e.ID, got, e)
		}
	}
	for i, e := range cold {
		c := cached{id: e.ID, cacheRec: Open(s.repo).lister().summarize(e.ID, e.Commit)}
		for what, got := range map[string]task.Entry{"cold": e, "warm": warm[i]} {
			want := c.entry()
			if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
				t.Fatalf("%s %s: error %v, want %v", what, e.ID, got.Err, want.Err)
			}
			got.Err, want.Err = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %s:\n got %+v\n %s\nwant %+v\n %s", what, e.ID, got, got.JSON, want, want.JSON)
			}
		}
	}
}

func TestCacheRoundTrip(t *testing.T) {
	s, _ := open(t)
	for i := 0; i < 3; i++ {
		mustCreate(t, s, fmt.Sprintf("task %d", i))
	}
	sn := mustCreate(t, s, "line\nbreak")
	recs := []cached{
		{id: sn.Task.ID, cacheRec: taskRec(sn.Commit, &sn.Task)},
		{id: "0123456789abcdef", cacheRec: corruptRec(sn.Commit, fmt.Errorf("broken\nrecord"))},
	}
	b := appendCache(nil, recs)
	got := parseCache(b)
	if len(got) != len(recs) {
		t.Fatalf("parsed %d records of %d", len(got), len(recs))
	}
	for _, r := range recs {
		if g := got[r.id]; !reflect.DeepEqual(g, r.cacheRec) {
			t.Fatalf("%s: got %+v, want %+v", r.id, g, r.cacheRec)
		}
	}
	for n := 0; n < len(b); n++ {
		parseCache(b[:n]) // a torn cache is rebuilt, never a panic
	}
}

// FuzzParseCache feeds damaged caches to the parser: it must never panic,
// and whatever it accepts must write back to the same bytes' records.
func FuzzParseCache(f *testing.F) {
	f.Add([]byte(cacheHeader))
	f.Add([]byte(cacheHeader + "0123456789abcdef 89abcdef0123456789abcdef0123456789abcdef backlog 5 2026-01-01T00:00:00Z - 2\n{}\n"))
	f.Add([]byte(cacheHeader + "0123456789abcdef 89abcdef0123456789abcdef0123456789abcdef ! 0 - - 3\nbad\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs := parseCache(b)
		if recs == nil {
			return
		}
		var list []cached
		for id, r := range recs {
			list = append(list, cached{id: id, cacheRec: r})
		}
		again := parseCache(appendCache(nil, list))
		if len(again) != len(recs) {
			t.Fatalf("re-parsed %d records of %d", len(again), len(recs))
		}
		for id, r := range recs {
			g := again[id]
			if g.commit != r.commit || g.status != r.status || g.created != r.created || g.updated != r.updated || g.parent != r.parent || !bytes.Equal(g.body, r.body) {
				t.Fatalf("%q: %+v became %+v", id, r, g)
			}
		}
	})
}

// TestListCacheInListingOrder: List writes its cache in the listing's
// order and a second list rewrites nothing; a cache in another order (an
// older lazy wrote records in map order) lists the same and is rewritten
// in order.
func TestListCacheInListingOrder(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	s, _ := open(t)
	for i := 0; i < 30; i++ {
		mustCreate(t, s, fmt.Sprintf("t%d", i))
	}
	path := s.repo.LazyDir("cache", cacheFile)
	first, err := Open(s.repo).List()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(s.repo).List()
	if err != nil {
		t.Fatal(err)
	}
	if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) {
		t.Fatalf("a list with nothing new rewrote the cache (%v)", err)
	}
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatal("the cached list differs from the first")
	}
	// The same records, reversed.
	recs := parseCache(mustRead(t, path))
	var list []cached
	for i := len(first) - 1; i >= 0; i-- {
		list = append(list, cached{id: first[i].ID, cacheRec: recs[first[i].ID]})
	}
	if err := os.WriteFile(path, appendCache(nil, list), 0o644); err != nil {
		t.Fatal(err)
	}
	reversed, err := Open(s.repo).List()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(reversed) != fmt.Sprint(first) {
		t.Fatal("a cache in another order lists differently")
	}
	var ids []string
	scanCache(mustRead(t, path), func(l *cacheLine) { ids = append(ids, string(l.id)) })
	for i, e := range first {
		if i >= len(ids) || ids[i] != e.ID {
			t.Fatalf("the cache was not rewritten in the listing's order: %v", ids)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSortEntries holds sortEntries to a plain sort of the entries.
func TestSortEntries(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		out := make([]task.Entry, n)
		for i := range out {
			out[i] = task.Entry{ID: fmt.Sprintf("%016x", (i*7919)%1009), Created: int64((i * 31) % 7), Updated: fmt.Sprint(i)}
		}
		want := slices.Clone(out)
		slices.SortStableFunc(want, func(a, b task.Entry) int { return entryCompare(&a, &b) })
		sortEntries(out)
		for i := range out {
			if out[i].ID != want[i].ID || out[i].Created != want[i].Created {
				t.Fatalf("n=%d: position %d holds %+v, want %+v", n, i, out[i], want[i])
			}
		}
		seen := map[string]bool{}
		for _, e := range out {
			seen[e.Updated] = true
		}
		if len(seen) != n {
			t.Fatalf("n=%d: %d distinct entries after sorting", n, len(seen))
		}
	}
}

// TestListTellsTransientReadErrors: an entry whose record could not be
// read because an object is missing (a concurrent repack may have moved
// it) says so through TransientReadError, as reconcile's kept listing
// relies on; a record that is simply corrupt does not.
func TestListTellsTransientReadErrors(t *testing.T) {
	s, dir := open(t)
	gone := mustCreate(t, s, "object moved away")
	bad := mustCreate(t, s, "corrupt record")
	blob := strings.TrimSpace(gitIn(t, dir, "", "rev-parse", TasksPrefix+gone.Task.ID+":task.json"))
	loose := filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])
	if err := os.Rename(loose, loose+".away"); err != nil {
		t.Fatal(err)
	}
	junk := strings.TrimSpace(gitIn(t, dir, "{not json", "hash-object", "-w", "--stdin"))
	tree := gitIn(t, dir, "100644 blob "+junk+"\ttask.json\n", "mktree")
	commit := strings.TrimSpace(gitIn(t, dir, "", "commit-tree", strings.TrimSpace(tree), "-m", "corrupt"))
	gitIn(t, dir, "", "update-ref", TasksPrefix+bad.Task.ID, commit)
	for round := range 2 { // the second list reads the cache the first wrote
		entries, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, e := range entries {
			switch e.ID {
			case gone.Task.ID:
				seen++
				if e.Err == nil || !TransientReadError(e.Err) {
					t.Errorf("round %d: missing object: err %v, transient %v", round, e.Err, TransientReadError(e.Err))
				}
			case bad.Task.ID:
				seen++
				if e.Err == nil || TransientReadError(e.Err) {
					t.Errorf("round %d: corrupt record: err %v, transient %v", round, e.Err, TransientReadError(e.Err))
				}
			}
		}
		if seen != 2 {
			t.Fatalf("round %d: %d of the 2 tasks listed", round, seen)
		}
	}
	if err := os.Rename(loose+".away", loose); err != nil {
		t.Fatal(err)
	}
	entries, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.ID == gone.Task.ID && e.Err != nil {
			t.Fatalf("object back, record still unreadable: %v", e.Err)
		}
	}
}

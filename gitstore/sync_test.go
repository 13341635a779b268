package gitstore

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// twoClones returns two stores on repositories that share a bare remote
// named origin, on this machine.
func twoClones(t *testing.T) (*Store, *Store) {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	var stores []*Store
	for _, host := range []string{"alpha", "beta"} {
		dir := testrepo.New(t)
		testrepo.Git(t, dir, "remote", "add", "origin", bare)
		repo, err := Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, Open(repo, WithHost(host)))
	}
	return stores[0], stores[1]
}

func comment(t *testing.T, s *Store, id, text string) {
	t.Helper()
	if _, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.AddComment(task.Comment{Actor: machine.Human, Text: text})
		return &task.Op{Name: "comment", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func toggle2(t *testing.T, s *Store, id string) {
	t.Helper()
	if _, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		if sn.Task.Status == machine.Backlog {
			sn.Task.Status, sn.Task.Outcome = machine.Abandoned, task.OutcomeClosed
			return &task.Op{Name: "close", Actor: machine.Human}, nil
		}
		sn.Task.Status, sn.Task.Outcome = machine.Backlog, ""
		return &task.Op{Name: "reopen", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func refs(t *testing.T, s *Store) map[string]string {
	t.Helper()
	m, err := s.objs.ListRefs(TasksPrefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.String()
	}
	return out
}

func mustPush(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.Sync().Push(context.Background(), "origin", ""); err != nil {
		t.Fatalf("push from %s: %v", s.Host(), err)
	}
}

func mustPull(t *testing.T, s *Store) *SyncReport {
	t.Helper()
	rep, err := s.Sync().Pull(context.Background(), "origin")
	if err != nil {
		t.Fatalf("pull into %s: %v", s.Host(), err)
	}
	if len(rep.Skipped) > 0 {
		t.Fatalf("pull into %s skipped %+v", s.Host(), rep.Skipped)
	}
	return rep
}

// converge syncs both ways until nothing moves, and checks both clones
// hold byte-identical task refs.
func converge(t *testing.T, a, b *Store) {
	t.Helper()
	for round := 0; round < 6; round++ {
		mustPush(t, a)
		mustPull(t, b)
		mustPush(t, b)
		mustPull(t, a)
		ra, rb := refs(t, a), refs(t, b)
		if fmt.Sprint(ra) == fmt.Sprint(rb) {
			return
		}
	}
	t.Fatalf("no convergence:\n%v\n%v", refs(t, a), refs(t, b))
}

func TestConcurrentEditsConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("races two clones: the full suite runs it (scripts/test.sh)")
	}
	a, b := twoClones(t)
	sn := mustCreate(t, a, "shared")
	id := sn.Task.ID
	mustPush(t, a)
	if rep := mustPull(t, b); len(rep.Created) != 1 {
		t.Fatalf("bootstrap: %+v", rep)
	}
	comment(t, a, id, "from alpha")
	comment(t, b, id, "from beta")
	toggle2(t, b, id) // beta closes it
	converge(t, a, b)
	got, err := a.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := a.Comments(got)
	if len(cs) != 2 || got.Task.Status != machine.Abandoned || len(got.Task.MergeRefused) != 0 {
		t.Fatalf("merged: %s, comments %+v, refused %+v", got.Task.Status, cs, got.Task.MergeRefused)
	}
	hist, err := a.History(got)
	if err != nil {
		t.Fatal(err)
	}
	ops := ""
	for _, h := range hist {
		ops += h.Op + " "
	}
	if ops != "create comment comment close merge " {
		t.Fatalf("history after the merge: %q", ops)
	}
}

func TestMergeIsDeterministicAndRefusesStaleTransitions(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	a, b := twoClones(t)
	id := mustCreate(t, a, "raced").Task.ID
	mustPush(t, a)
	mustPull(t, b)
	toggle2(t, a, id) // alpha: backlog -> abandoned
	toggle2(t, b, id) // beta:  backlog -> abandoned
	toggle2(t, b, id) // beta:  abandoned -> backlog
	comment(t, b, id, "beta keeps going")
	// Both fetch each other's state and merge the same pair themselves.
	mustPush(t, a)
	if err := b.Sync().Fetch(context.Background(), "origin"); err != nil {
		t.Fatal(err)
	}
	la, _, _ := a.repo.ReadRef(TaskRef(id))
	lb, _, _ := b.repo.ReadRef(TaskRef(id))
	testrepo.Git(t, a.repo.CommonDir, "fetch", "-q", b.repo.CommonDir, TaskRef(id)+":refs/peer/"+id)
	ma, _, err := a.merger().Merge(id, la, lb)
	if err != nil {
		t.Fatal(err)
	}
	mb, _, err := b.merger().Merge(id, lb, la)
	if err != nil {
		t.Fatal(err)
	}
	if ma != mb {
		t.Fatalf("two machines merged the same pair into %s and %s", ma, mb)
	}
	converge(t, a, b)
	got, _ := a.Load(id)
	// Clock order: both closes (clock 2), then beta's reopen (3) and
	// comment (4): the second close is a no-op, the reopen applies.
	if got.Task.Status != machine.Backlog {
		t.Fatalf("status %s", got.Task.Status)
	}

	// A transition made from a status the other side left is refused,
	// kept in history and listed on the task.
	toggle2(t, a, id) // alpha: backlog -> abandoned
	comment(t, a, id, "alpha closed it")
	if _, _, err := b.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Status = machine.Working
		return &task.Op{Name: "start", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	converge(t, a, b)
	got, _ = b.Load(id)
	if got.Task.Status != machine.Abandoned || len(got.Task.MergeRefused) != 1 || got.Task.MergeRefused[0].Op != "start" {
		t.Fatalf("after a stale transition: %s, refused %+v", got.Task.Status, got.Task.MergeRefused)
	}
	hist, _ := b.History(got)
	found := false
	for _, h := range hist {
		found = found || h.Op == "start"
	}
	if !found {
		t.Fatal("the refused operation is gone from history")
	}
}

// TestRandomInterleavingsConverge is the property test: 100 tasks, random
// operations on both machines interleaved with random pushes and pulls,
// always end in identical records holding every comment. The fast lane
// runs one seed over 20 tasks and 80 steps (a few pushes and pulls each
// way); the full suite runs both seeds at full size.
func TestRandomInterleavingsConverge(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	seeds, tasks, steps := []int64{1, 2}, 100, 300
	if testing.Short() {
		seeds, tasks, steps = []int64{1}, 20, 80
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			a, b := twoClones(t)
			sides := []*Store{a, b}
			known := map[*Store][]string{}
			want := map[string]map[string]bool{} // id -> comments
			for i := 0; i < tasks; i++ {
				s := sides[rng.Intn(2)]
				sn := mustCreate(t, s, fmt.Sprintf("task %d", i))
				known[s] = append(known[s], sn.Task.ID)
				want[sn.Task.ID] = map[string]bool{}
			}
			for step := 0; step < steps; step++ {
				s := sides[rng.Intn(2)]
				switch op := rng.Intn(10); {
				case op < 5 && len(known[s]) > 0:
					id := known[s][rng.Intn(len(known[s]))]
					text := fmt.Sprintf("c%d by %s", step, s.Host())
					comment(t, s, id, text)
					want[id][text] = true
				case op < 8 && len(known[s]) > 0:
					toggle2(t, s, known[s][rng.Intn(len(known[s]))])
				case op == 8:
					mustPush(t, s)
				default:
					rep := mustPull(t, s)
					_ = rep
					known[s] = nil
					for ref := range refs(t, s) {
						known[s] = append(known[s], ref[len(TasksPrefix):])
					}
					sort.Strings(known[s])
				}
			}
			converge(t, a, b)
			for id, comments := range want {
				sn, err := a.Load(id)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := a.Comments(sn)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]bool{}
				for _, c := range cs {
					got[c.Text] = true
				}
				for c := range comments {
					if !got[c] {
						t.Fatalf("task %s lost comment %q", id, c)
					}
				}
			}
		})
	}
}

// TestValidRemoteMatchesItsPattern holds the loop to the pattern it
// replaced, ^[A-Za-z0-9][A-Za-z0-9._-]*$ without "..", on every string of
// up to 4 bytes over the characters that matter.
func TestValidRemoteMatchesItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	alphabet := []byte("aZ09._-/ \x00:+@\xff")
	var walk func(s []byte)
	walk = func(s []byte) {
		name := string(s)
		want := re.MatchString(name) && !strings.Contains(name, "..")
		if got := ValidRemote(name) == nil; got != want {
			t.Fatalf("ValidRemote(%q) accepts: %v, want %v", name, got, want)
		}
		if len(s) == 4 {
			return
		}
		for _, c := range alphabet {
			walk(append(s, c))
		}
	}
	walk(nil)
}

// Push sends lazy's task records only: a configured refspec that would
// also send this machine's own refs (the stashes lazy keeps of the
// user's changes, under refs/lazy-kept/) is refused before git runs.
func TestPushNeverSendsLocalRefs(t *testing.T) {
	t.Parallel()
	a, _ := twoClones(t)
	dir := a.repo.WorkTree
	base := strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", "HEAD"))
	testrepo.Git(t, dir, "update-ref", "refs/lazy-kept/stash/0123456789abcdef/"+base, base)
	for _, spec := range []string{"refs/*:refs/*", "refs/lazy-kept/*:refs/lazy/kept/*", "refs/lazy*:refs/lazy*", "HEAD:refs/lazy/x"} {
		if _, err := a.Sync().Push(context.Background(), "origin", spec); err == nil || !strings.Contains(err.Error(), "refs/lazy/*:refs/lazy/*") {
			t.Fatalf("push with %s: %v", spec, err)
		}
	}
	mustCreate(t, a, "pushed")
	mustPush(t, a)
	if out := testrepo.Git(t, dir, "ls-remote", "origin"); !strings.Contains(out, "refs/lazy/tasks/") || strings.Contains(out, "lazy-kept") {
		t.Fatalf("a local ref reached the remote:\n%s", out)
	}
}

// TestFetchedIsTheRemotesRecordAsLastFetched: Fetched reads, in
// process, the commit the last fetch brought of a task's record, and
// nothing for a task the remote lacks or a name lazy does not read.
func TestFetchedIsTheRemotesRecordAsLastFetched(t *testing.T) {
	t.Parallel()
	a, b := twoClones(t)
	id := mustCreate(t, a, "fetched").Task.ID
	if got := b.Sync().Fetched("origin", id); got != "" {
		t.Fatalf("before any push: %q", got)
	}
	mustPush(t, a)
	mustPull(t, b)
	want := testrepo.Git(t, b.repo.CommonDir, "rev-parse", RemoteNamespace("origin")+"tasks/"+id)
	if got := b.Sync().Fetched("origin", id); got != want {
		t.Fatalf("Fetched = %q, want %q (git rev-parse)", got, want)
	}
	for _, bad := range [][2]string{{"--all", id}, {"origin", "../../heads/main"}, {"origin", "-x"}, {"nowhere", id}} {
		if got := b.Sync().Fetched(bad[0], bad[1]); got != "" {
			t.Errorf("Fetched(%q, %q) = %q, want nothing", bad[0], bad[1], got)
		}
	}
}

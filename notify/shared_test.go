package notify

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
)

// fakeShared is a remote's markers in memory; err makes it unreachable.
type fakeShared struct {
	mu      sync.Mutex
	markers map[string]string // ref -> host
	host    string
	err     error
	pruned  map[string]bool
}

func (f *fakeShared) Claim(_ context.Context, marks []Mark) (map[string]bool, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	taken := map[string]bool{}
	for _, m := range marks {
		if _, ok := f.markers[m.Ref()]; ok {
			taken[m.Ref()] = true
			continue
		}
		f.markers[m.Ref()] = f.host
	}
	return taken, nil
}

func (f *fakeShared) Prune(_ context.Context, done map[string]bool) (int, error) {
	f.pruned = done
	return 0, nil
}

const (
	idA = "0123456789abcdef"
	idB = "fedcba9876543210"
)

// TestOnceKeepsWhatNoOtherMachineAnnounced: two machines' notifiers on
// one shared remote, each deriving the same park: the first to claim it
// announces it, the other drops it; an unreachable remote keeps every
// event (news is never lost) and says why.
func TestOnceKeepsWhatNoOtherMachineAnnounced(t *testing.T) {
	clock := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	w := newWorld()
	w.set(observation(idA, machine.Working, 1), clock.Add(-time.Minute))
	remote := map[string]string{}
	a := &Notifier{Dir: filepath.Join(t.TempDir(), "a"), Now: now}
	b := &Notifier{Dir: filepath.Join(t.TempDir(), "b"), Now: now}
	sa, sb := &fakeShared{markers: remote, host: "a"}, &fakeShared{markers: remote, host: "b"}
	for _, n := range []*Notifier{a, b} {
		if evs, err := n.Pass(w.entries(), Policy{}, nil, w.load); err != nil || len(evs) != 0 {
			t.Fatalf("baseline: %+v %v", evs, err)
		}
	}
	clock = clock.Add(time.Minute)
	w.set(observation(idA, machine.Blocked, 2), clock)
	var sent []Event
	for _, x := range []struct {
		n *Notifier
		s *fakeShared
	}{{a, sa}, {b, sb}} {
		evs, err := x.n.Pass(w.entries(), Policy{}, nil, w.load)
		if err != nil || len(evs) != 1 {
			t.Fatalf("each machine derives the park: %+v %v", evs, err)
		}
		evs, err = x.n.Once(context.Background(), x.s, evs)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, evs...)
	}
	if len(sent) != 1 || sent[0].Kind != KindBlocked || len(remote) != 1 {
		t.Fatalf("sent %+v with markers %v: want the park announced once", sent, remote)
	}
	// The next park (a new turn) is news again, once.
	clock = clock.Add(time.Minute)
	w.set(observation(idA, machine.Blocked, 3), clock)
	evs, _ := b.Pass(w.entries(), Policy{}, nil, w.load)
	if evs, _ = b.Once(context.Background(), sb, evs); len(evs) != 1 {
		t.Fatalf("the next park on b: %+v", evs)
	}
	evs, _ = a.Pass(w.entries(), Policy{}, nil, w.load)
	if evs, _ = a.Once(context.Background(), sa, evs); len(evs) != 0 {
		t.Fatalf("a announced b's park again: %+v", evs)
	}

	// Offline: kept, and said.
	clock = clock.Add(time.Minute)
	w.set(observation(idB, machine.Conflict, 2), clock)
	off := &fakeShared{err: errors.New("could not read from remote repository")}
	evs, _ = a.Pass(w.entries(), Policy{}, nil, w.load)
	evs, err := a.Once(context.Background(), off, evs)
	if len(evs) != 1 || evs[0].Kind != KindConflict || err == nil {
		t.Fatalf("offline: %+v %v, want the conflict kept and the error", evs, err)
	}
	// A nil shared is this host alone.
	if got, err := a.Once(context.Background(), nil, evs); len(got) != 1 || err != nil {
		t.Fatalf("no shared remote: %+v %v", got, err)
	}
}

// TestPruneNamesOnlyLongFinishedTasks: the markers pruned are those of
// tasks this machine's records say finished more than Retention ago,
// at most every pruneEvery.
func TestPruneNamesOnlyLongFinishedTasks(t *testing.T) {
	clock := time.Date(2025, 5, 10, 12, 0, 0, 0, time.UTC)
	n := &Notifier{Dir: t.TempDir(), Now: func() time.Time { return clock }}
	w := newWorld()
	old := observation(idA, machine.Complete, 2)
	w.set(old, clock.Add(-Retention-time.Hour))
	w.set(observation(idB, machine.Complete, 2), clock.Add(-time.Hour))
	w.set(observation("00000000000000aa", machine.Blocked, 2), clock.Add(-30*24*time.Hour))
	s := &fakeShared{}
	if _, err := n.Prune(context.Background(), s, w.entries()); err != nil {
		t.Fatal(err)
	}
	if len(s.pruned) != 1 || !s.pruned[idA] {
		t.Fatalf("pruned %v, want only %s", s.pruned, idA)
	}
	s.pruned = nil
	clock = clock.Add(time.Hour)
	if _, _ = n.Prune(context.Background(), s, w.entries()); s.pruned != nil {
		t.Fatalf("pruned again within %s", pruneEvery)
	}
}

func TestMarkTaskReadsOnlyLazysNames(t *testing.T) {
	good := Mark{Task: idA, Slot: "park", Key: "s1.t2"}.Ref()
	if id, ok := markTask(good); !ok || id != idA {
		t.Fatalf("%s: %q %v", good, id, ok)
	}
	for _, bad := range []string{
		"refs/lazy-notified/" + idA,
		"refs/lazy-notified/NOTATASK/0123456789abcdef01234567",
		"refs/lazy-notified/" + idA + "/0123456789ABCDEF01234567",
		"refs/lazy-notified/" + idA + "/zz23456789abcdef01234567",
		"refs/lazy-notified/" + idA + "/0123",
		"refs/lazy-notified/" + idA + "/0123456789abcdef01234567/x",
		"refs/heads/main",
		"refs/lazy-notified/../../heads/main",
	} {
		if _, ok := markTask(bad); ok {
			t.Errorf("%q taken as a marker", bad)
		}
	}
	if strings.Contains(Mark{Task: idA, Slot: "gate", Key: "run\n; rm -rf /"}.Ref(), "rm") {
		t.Fatal("a key reached the ref name")
	}
}

// sharedNet is a bare remote and clones of it, for the markers on real git.
type sharedNet struct {
	t    *testing.T
	bare string
	root string
}

func newSharedNet(t *testing.T) *sharedNet {
	t.Helper()
	testrepo.FullLane(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(root, "remote.git")
	testrepo.Git(t, root, "init", "-q", "--bare", "-b", "main", bare)
	return &sharedNet{t: t, bare: bare, root: root}
}

// machine is a clone's notifier on the remote, its command target
// appending each event's kind and slug to the shared file got.
func (s *sharedNet) machine(name string) (*Notifier, *GitShared) {
	s.t.Helper()
	dir := filepath.Join(s.root, name)
	testrepo.Git(s.t, s.root, "init", "-q", dir)
	testrepo.Git(s.t, dir, "remote", "add", "origin", s.bare)
	return &Notifier{Dir: filepath.Join(dir, ".git", "lazy", "notify"), Repo: "r"},
		&GitShared{Dir: filepath.Join(dir, ".git"), Remote: "origin", Host: "host-" + name}
}

func (s *sharedNet) target() Target {
	s.t.Helper()
	got := filepath.Join(s.root, "got")
	tg, err := ParseTarget(`cmd:{ cat; echo; } >> ` + got)
	if err != nil {
		s.t.Fatal(err)
	}
	tg.Dir = s.root
	return tg
}

// got is what the target received: one line per delivery.
func (s *sharedNet) got() []string {
	b, err := os.ReadFile(filepath.Join(s.root, "got"))
	if err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// notifyPath is what the daemon's notifier does after a pass: derive,
// claim on the shared remote, deliver.
func notifyPath(t *testing.T, n *Notifier, sh Shared, w *world, tg Target) (sent int, claimErr error) {
	t.Helper()
	evs, err := n.Pass(w.entries(), Policy{}, nil, w.load)
	if err != nil {
		t.Fatal(err)
	}
	evs, claimErr = n.Once(context.Background(), sh, evs)
	for _, r := range n.Deliver(context.Background(), []Target{tg}, 10, evs) {
		if !r.OK {
			t.Fatalf("delivery: %+v", r)
		}
		sent++
	}
	return sent, claimErr
}

// TestSharedMarkersFireOnceAcrossClones: two clones (one acting as the
// runner's machine) on one bare remote run the notify path over the same
// parked task at once: exactly one notification reaches the target, and
// the marker records who announced it, when and which event. A fresh
// clone, and a clone that knew the task before the park, send nothing
// old; a remote that cannot be reached still gets the news announced
// once, locally.
func TestSharedMarkersFireOnceAcrossClones(t *testing.T) {
	s := newSharedNet(t)
	tg := s.target()
	w := newWorld()
	w.set(observation(idA, machine.Working, 1), time.Now().Add(-time.Minute))
	na, sa := s.machine("a")
	nb, sb := s.machine("runner")
	nc, sc := s.machine("late") // knew the task, but comes online later
	for _, n := range []*Notifier{na, nb, nc} {
		if sent, _ := notifyPath(t, n, nil, w, tg); sent != 0 {
			t.Fatal("a baseline announced")
		}
	}
	w.set(observation(idA, machine.Blocked, 2), time.Now())
	var wg sync.WaitGroup
	var errs [2]error
	for i, m := range []struct {
		n  *Notifier
		sh *GitShared
	}{{na, sa}, {nb, sb}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = notifyPath(t, m.n, m.sh, w, tg)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("claims: %v / %v", errs[0], errs[1])
	}
	if got := s.got(); len(got) != 1 || !strings.Contains(got[0], "blocked") {
		t.Fatalf("the target got %q: want the park once across both machines", got)
	}
	refs := strings.Fields(testrepo.Git(t, s.bare, "for-each-ref", "--format=%(refname)", MarkPrefix))
	if len(refs) != 1 || refs[0] != (Mark{Task: idA, Slot: slotPark, Key: "s1.t2"}).Ref() {
		t.Fatalf("markers on the remote: %v", refs)
	}
	var mk Marker
	if err := json.Unmarshal([]byte(testrepo.Git(t, s.bare, "cat-file", "blob", refs[0])), &mk); err != nil {
		t.Fatal(err)
	}
	if (mk.Host != "host-a" && mk.Host != "host-runner") || mk.Event != KindBlocked || mk.Task != idA || mk.Key != "s1.t2" || mk.Time == "" {
		t.Fatalf("the marker holds %+v", mk)
	}

	// The late clone derives the park too; the marker says it was told.
	if sent, err := notifyPath(t, nc, sc, w, tg); sent != 0 || err != nil {
		t.Fatalf("the late clone sent %d (%v)", sent, err)
	}
	// A fresh clone: a baseline, nothing old.
	nf, sf := s.machine("fresh")
	if sent, err := notifyPath(t, nf, sf, w, tg); sent != 0 || err != nil {
		t.Fatalf("a fresh clone sent %d (%v)", sent, err)
	}
	if got := s.got(); len(got) != 1 {
		t.Fatalf("after the late and the fresh clone the target got %q", got)
	}

	// Offline: the remote is gone; the next park is announced here, once.
	w.set(observation(idA, machine.Blocked, 3), time.Now())
	sa.Remote = filepath.Join(s.root, "gone.git")
	sent, err := notifyPath(t, na, sa, w, tg)
	if sent != 1 || err == nil {
		t.Fatalf("offline: sent %d (%v), want 1 and the reason", sent, err)
	}
	if sent, _ := notifyPath(t, na, sa, w, tg); sent != 0 {
		t.Fatal("offline: the park announced again")
	}
}

// TestHostileMarkersNeitherCrashNorSilence: a remote holding markers
// lazy did not make (oversized, badly named, from the future, a tag
// where a blob goes) changes nothing for an event whose own marker is
// not there: it is announced once; and pruning reads past them and
// deletes only markers of the tasks this machine says are finished.
func TestHostileMarkersNeitherCrashNorSilence(t *testing.T) {
	s := newSharedNet(t)
	tg := s.target()
	seed := filepath.Join(s.root, "seed")
	testrepo.Git(t, s.root, "init", "-q", seed)
	big := filepath.Join(s.root, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 2<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	bigOID := testrepo.Git(t, seed, "hash-object", "-w", big)
	future, _ := json.Marshal(Marker{Host: "evil", Time: "2999-01-01T00:00:00Z", Task: idB, Event: KindBlocked, Slot: slotPark, Key: "s1.t2"})
	futOID := hashBlob(t, seed, future)
	for _, ref := range []string{
		MarkPrefix + idA + "/ffffffffffffffffffffffff",   // oversized, another key
		MarkPrefix + "NOTATASK/ffffffffffffffffffffffff", // bad task id
		MarkPrefix + idA + "/" + strings.Repeat("g", 24), // bad digest
		MarkPrefix + "x",
	} {
		testrepo.Git(t, seed, "push", "-q", s.bare, bigOID+":"+ref)
	}
	futureRef := Mark{Task: idB, Slot: slotPark, Key: "s1.t2"}.Ref()
	testrepo.Git(t, seed, "push", "-q", s.bare, futOID+":"+futureRef)

	w := newWorld()
	w.set(observation(idA, machine.Working, 1), time.Now().Add(-time.Minute))
	na, sa := s.machine("a")
	notifyPath(t, na, sa, w, tg)
	w.set(observation(idA, machine.Blocked, 2), time.Now())
	if sent, err := notifyPath(t, na, sa, w, tg); sent != 1 || err != nil {
		t.Fatalf("beside hostile markers: sent %d (%v)", sent, err)
	}

	// Prune: idA finished long ago; idB's marker (the future one) stays,
	// as do the names lazy does not make.
	fin := observation(idA, machine.Complete, 3)
	fin.Outcome = "accepted"
	w.set(fin, time.Now().Add(-Retention-time.Hour))
	n, err := na.Prune(context.Background(), sa, w.entries())
	if err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want idA's two markers", n, err)
	}
	left := testrepo.Git(t, s.bare, "for-each-ref", "--format=%(refname)", MarkPrefix)
	if strings.Contains(left, "/"+idA+"/ffff") || strings.Contains(left, (Mark{Task: idA, Slot: slotPark, Key: "s1.t2"}).Ref()) ||
		!strings.Contains(left, futureRef) || !strings.Contains(left, "NOTATASK") || !strings.Contains(left, "gggg") {
		t.Fatalf("markers left: %s", left)
	}
}

func hashBlob(t *testing.T, dir string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return testrepo.Git(t, dir, "hash-object", "-w", p)
}

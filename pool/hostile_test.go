package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// attacker crafts pool refs with git plumbing in a clone of its own and
// pushes them to the remote as anyone with push access could.
type attacker struct {
	t   *testing.T
	dir string
}

func newAttacker(t *testing.T, victim *Remote) *attacker {
	t.Helper()
	url := testrepo.Git(t, victim.Dir, "remote", "get-url", "origin")
	dir := t.TempDir()
	testrepo.Git(t, dir, "clone", "-q", url, dir)
	return &attacker{t: t, dir: dir}
}

// git runs git with stdin in the attacker's clone.
func (a *attacker) git(stdin []byte, args ...string) string {
	a.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdin = a.dir, bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a")
	out, err := cmd.Output()
	if err != nil {
		a.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

func (a *attacker) blob(b []byte) string { return a.git(b, "hash-object", "-w", "--stdin") }

func (a *attacker) tree(name, blob string) string {
	return a.git([]byte("100644 blob "+blob+"\t"+name+"\n"), "mktree")
}

func (a *attacker) commit(tree string) string { return a.git([]byte("x\n"), "commit-tree", tree) }

// file is a commit holding name with content b.
func (a *attacker) file(name string, b []byte) string { return a.commit(a.tree(name, a.blob(b))) }

// push forces every ref (below refs/lazy-pool/) to its object.
func (a *attacker) push(refs map[string]string) {
	a.t.Helper()
	args := []string{"push", "-q", "origin"}
	for ref, obj := range refs {
		args = append(args, "+"+obj+":"+Prefix+ref)
	}
	a.git(nil, args...)
}

// hostileClaims pushes one claim ref of each kind lazy must skip, and
// returns them by task id with the words lazy must report.
func hostileClaims(t *testing.T, a *attacker) map[string]string {
	t.Helper()
	ids := func(n int) string { return fmt.Sprintf("%016x", 0xbad0000+n) }
	until9999 := `"lease_expires":"9999-12-31T23:59:59Z","claimed_at":"2024-01-01T00:00:00Z","renewed_at":"2024-01-01T00:00:00Z"`
	bigBlob := a.blob(bytes.Repeat([]byte("x"), 10<<20))
	tag := a.git([]byte("object "+a.file("claim.json", []byte("{}"))+"\ntype commit\ntag t\ntagger a <a@a> 0 +0000\n\nx\n"), "mktag")
	subtree := a.tree("x", a.blob([]byte("x")))
	want := map[string]string{
		ids(1):  "over lazy's limit",
		ids(2):  "generation 18446744073709551615 is out of range",
		ids(3):  "longer than lazy.pool.maxLease",
		ids(4):  "not a claim lazy writes",
		ids(5):  "not a claim lazy writes",
		ids(6):  "points at a tree",
		ids(7):  "points at a tag",
		ids(8):  "points at a blob",
		ids(9):  "claim.json is a tree",
		ids(10): "holds no claim.json",
		ids(11): "names the task",
		ids(12): "generation 0 is out of range",
		ids(13): "its runner holds control",
	}
	refs := map[string]string{
		"claims/" + ids(1):  a.commit(a.tree("claim.json", bigBlob)),
		"claims/" + ids(2):  a.file("claim.json", []byte(`{"task":"`+ids(2)+`","runner":"evil","generation":18446744073709551615,`+until9999+`}`)),
		"claims/" + ids(3):  a.file("claim.json", []byte(`{"task":"`+ids(3)+`","runner":"evil","generation":5,`+until9999+`}`)),
		"claims/" + ids(4):  a.file("claim.json", []byte(`{"task":`)),
		"claims/" + ids(5):  a.file("claim.json", []byte(`{"task":"`+ids(5)+`","runner":["x"],"generation":"one"}`)),
		"claims/" + ids(6):  a.tree("claim.json", a.blob([]byte("{}"))),
		"claims/" + ids(7):  tag,
		"claims/" + ids(8):  a.blob([]byte(`{"task":"` + ids(8) + `"}`)),
		"claims/" + ids(9):  a.commit(a.git([]byte("040000 tree "+subtree+"\tclaim.json\n"), "mktree")),
		"claims/" + ids(10): a.file("other.json", []byte("{}")),
		"claims/" + ids(11): a.file("claim.json", []byte(`{"task":"`+taskID+`","runner":"evil","generation":1,"lease_expires":"2024-01-01T00:00:00Z"}`)),
		"claims/" + ids(12): a.file("claim.json", []byte(`{"task":"`+ids(12)+`","runner":"evil","generation":0,"lease_expires":"2024-01-01T00:00:00Z"}`)),
		"claims/" + ids(13): a.file("claim.json", []byte(`{"task":"`+ids(13)+`","runner":"ev\u001b[2Jil","generation":1,"lease_expires":"2024-01-01T00:00:00Z"}`)),
		"claims/not-a-task": a.file("claim.json", []byte(`{"task":"not-a-task","runner":"evil","generation":1,"lease_expires":"2024-01-01T00:00:00Z"}`)),
	}
	a.push(refs)
	return want
}

// TestHostileClaimsAreSkippedAndReported: an attacker pushes claims that
// are oversized, absurd, malformed or not claims at all. Reading the pool
// fails on none of them and never reads the 10 MiB one; each is reported
// with its reason, holds nothing, and is taken over leased on its commit
// at a generation that does not wrap; a valid claim beside them stays
// live.
func TestHostileClaimsAreSkippedAndReported(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	ctx := context.Background()
	r := clones(t, 1)[0]
	now := time.Now()
	good, err := r.Take(ctx, taskID, "runner-a", nil, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	want := hostileClaims(t, newAttacker(t, r))
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	claims, problems, err := r.Claims(ctx, now)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("a hostile claim failed the read: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("reading the claims allocated %d bytes: the 10 MiB claim was read", alloc)
	}
	if c := claims[taskID]; !c.Live(now) || c.Commit != good.Commit || c.Problem != "" {
		t.Errorf("the valid claim beside the hostile ones: %+v", c)
	}
	reported := map[string]string{}
	for _, p := range problems {
		reported[strings.TrimPrefix(p.Ref, ClaimsPrefix)] = p.Reason
	}
	if !strings.Contains(reported["not-a-task"], "not a task id") {
		t.Errorf("the claim ref not named by a task id: reported %q", reported["not-a-task"])
	}
	for id, words := range want {
		h, ok := claims[id]
		if !strings.Contains(reported[id], words) {
			t.Errorf("claim %s: reported %q, want it to say %q", id, reported[id], words)
		}
		if !ok || h.Problem == "" || h.Live(now) || h.Live(time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour)) || h.Generation != 0 || h.Runner != "" {
			t.Errorf("claim %s as read: %+v, want it held by nothing, with nothing of its content", id, h)
		}
	}
	for _, p := range problems {
		t.Logf("%s: %s", p.Ref, p.Reason)
	}
	if len(problems) != len(want)+1 {
		t.Errorf("%d problems for %d hostile refs: %+v", len(problems), len(want)+1, problems)
	}

	// Each is taken over, leased on the hostile object, at generation 1
	// (Claims left 0: nothing of it is trusted), and is then a valid
	// claim; 2^64-1 never became 0 or wrapped anywhere.
	for id := range want {
		prev := claims[id]
		h, err := r.Take(ctx, id, "runner-b", &prev, time.Minute, now)
		if err != nil || h.Generation != 1 {
			t.Fatalf("take-over of hostile claim %s: %+v, %v", id, h, err)
		}
	}
	again := fetchClaims(t, r)
	for id := range want {
		if c := again[id]; !c.Live(now) || c.Runner != "runner-b" || c.Generation != 1 {
			t.Errorf("claim %s after the take-over: %+v", id, c)
		}
	}
}

// TestGenerationArithmeticIsBounded: 2^64-1 + 1 does not wrap into a
// low generation; a claim at the maximum cannot be followed, with a
// clear error and nothing pushed.
func TestGenerationArithmeticIsBounded(t *testing.T) {
	for _, g := range []uint64{MaxGeneration, MaxGeneration + 1, math.MaxUint64} {
		if n, err := NextGeneration(g); err == nil || n != 0 || !errors.Is(err, ErrGenerations) {
			t.Errorf("NextGeneration(%d) = %d, %v", g, n, err)
		}
	}
	if n, err := NextGeneration(MaxGeneration - 1); err != nil || n != MaxGeneration {
		t.Errorf("NextGeneration(max-1) = %d, %v", n, err)
	}
	ctx := context.Background()
	r := clones(t, 1)[0]
	old := time.Now().Add(-time.Hour)
	h, err := r.Take(ctx, taskID, "a", nil, time.Second, old)
	if err != nil {
		t.Fatal(err)
	}
	h.Generation = math.MaxUint64 // a caller that trusted a hostile value
	if _, err := r.Take(ctx, taskID, "b", &h, time.Minute, time.Now()); !errors.Is(err, ErrGenerations) {
		t.Fatalf("take-over after generation 2^64-1: %v", err)
	}
	if _, err := r.Free(ctx, h, "human", time.Now()); !errors.Is(err, ErrGenerations) {
		t.Fatalf("release after generation 2^64-1: %v", err)
	}
	if c := fetchClaims(t, r)[taskID]; c.Generation != 1 || c.Runner != "a" {
		t.Fatalf("the claim after refused take-overs: %+v", c)
	}
}

// TestAbsurdLeaseCountsAsExpired: a claim whose lease runs out later
// than the pool's maximum from now holds nothing; one within it holds.
func TestAbsurdLeaseCountsAsExpired(t *testing.T) {
	ctx := context.Background()
	r := clones(t, 1)[0]
	now := time.Now()
	if _, err := r.Take(ctx, taskID, "a", nil, 20*time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if c := fetchClaims(t, r)[taskID]; c.Live(now) || !strings.Contains(c.Problem, "lazy.pool.maxLease (10m0s)") {
		t.Fatalf("a 20m lease under the default 10m maximum: %+v", c)
	}
	r.MaxLease = time.Hour
	if c := fetchClaims(t, r)[taskID]; !c.Live(now) || c.Problem != "" || c.Generation != 1 {
		t.Fatalf("a 20m lease under a 1h maximum: %+v", c)
	}
}

// TestHostileRunnerRecordsAreSkippedAndReported.
func TestHostileRunnerRecordsAreSkippedAndReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := clones(t, 1)[0]
	now := time.Now()
	if _, err := r.Renew(ctx, nil, Runner{ID: "good", Labels: []string{"gpu"}, Agents: []string{"exec"}, MaxTasks: 1}, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	a := newAttacker(t, r)
	a.push(map[string]string{
		"runners/big":       a.file("runner.json", bytes.Repeat([]byte(" "), 10<<20)),
		"runners/mismatch":  a.file("runner.json", []byte(`{"id":"good"}`)),
		"runners/future":    a.file("runner.json", []byte(`{"id":"future","seen_at":"9999-01-01T00:00:00Z"}`)),
		"runners/labels":    a.file("runner.json", []byte(`{"id":"labels","labels":["GPU; rm -rf"]}`)),
		"runners/types":     a.file("runner.json", []byte(`{"id":"types","max_tasks":"lots"}`)),
		"runners/max":       a.file("runner.json", []byte(`{"id":"max","max_tasks":1000000}`)),
		"runners/holding":   a.file("runner.json", []byte(`{"id":"holding","holding":["../../etc"]}`)),
		"runners/tree-only": a.tree("runner.json", a.blob([]byte("{}"))),
	})
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	runners, problems, err := r.Runners(ctx, now)
	if err != nil {
		t.Fatalf("hostile runner records failed the read: %v", err)
	}
	if len(runners) != 1 || runners[0].ID != "good" {
		t.Errorf("runners: %+v, want only the good one", runners)
	}
	words := map[string]string{"big": "over lazy's limit", "mismatch": "not the name of its ref", "future": "later than lazy.pool.maxLease",
		"labels": "not a label", "types": "not a runner record", "max": "out of range", "holding": "not a task id", "tree-only": "points at a tree"}
	if len(problems) != len(words) {
		t.Errorf("problems %+v, want %d", problems, len(words))
	}
	for _, p := range problems {
		name := strings.TrimPrefix(p.Ref, RunnersPrefix)
		if w, ok := words[name]; !ok || !strings.Contains(p.Reason, w) {
			t.Errorf("%s: %q, want it to say %q", p.Ref, p.Reason, w)
		}
	}
	// The summary line says so too, and fails on none of them.
	line, err := Brief(ctx, r.Dir, "origin", now)
	if err != nil || !strings.Contains(line, "1 runner live") || !strings.Contains(line, "8 refs skipped") {
		t.Errorf("brief: %q, %v", line, err)
	}
}

// TestHumanReleaseIsFenced: a release is leased on the claim it read. A
// runner that renewed meanwhile makes it fail whole; one that lands
// fences the runner it released: its renewal and its result push are
// refused, and the next runner takes the task at the next generation.
func TestHumanReleaseIsFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := clones(t, 2)
	runner, human := rs[0], rs[1]
	now := time.Now()
	h, err := runner.Take(ctx, taskID, "a", nil, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	seen := fetchClaims(t, human)[taskID]
	// The runner renews between the human's look and the release.
	renewed, err := runner.Renew(ctx, []Held{h}, Runner{ID: "a"}, time.Minute, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := human.Free(ctx, seen, "human", now); !errors.Is(err, ErrLost) {
		t.Fatalf("a release over a renewal: %v", err)
	}
	if c := fetchClaims(t, human)[taskID]; c.Commit != renewed[0].Commit || !c.Live(now) {
		t.Fatalf("the renewed claim after the refused release: %+v", c)
	}
	seen = fetchClaims(t, human)[taskID]
	freed, err := human.Free(ctx, seen, "human", now)
	if err != nil || freed.Generation != 2 || !freed.Released {
		t.Fatalf("release: %+v, %v", freed, err)
	}
	if _, err := runner.Renew(ctx, renewed, Runner{ID: "a"}, time.Minute, now.Add(2*time.Second)); !errors.Is(err, ErrLost) {
		t.Fatalf("the released runner renewed: %v", err)
	}
	head := testrepo.Git(t, runner.Dir, "rev-parse", "HEAD")
	if _, err := runner.Fenced(ctx, renewed[0], time.Minute, now, []Update{{Ref: "refs/heads/result", New: head}}); !errors.Is(err, ErrLost) {
		t.Fatalf("the released runner pushed a result: %v", err)
	}
	prev := fetchClaims(t, runner)[taskID]
	if prev.Live(now) {
		t.Fatalf("the released claim is live: %+v", prev)
	}
	if next, err := runner.Take(ctx, taskID, "b", &prev, time.Minute, now); err != nil || next.Generation != 3 {
		t.Fatalf("take after the release: %+v, %v", next, err)
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// poolAttacker is a plain clone of the pool's remote where claims and
// runner records are crafted with git plumbing and force-pushed, as
// anyone with push access could.
type poolAttacker struct{ r *runner }

func newPoolAttacker(n *poolNet) *poolAttacker {
	n.t.Helper()
	dir := filepath.Join(n.root, "attacker")
	testrepo.Git(n.t, n.root, "clone", "-q", n.bare, dir)
	return &poolAttacker{r: &runner{t: n.t, dir: dir}}
}

func (a *poolAttacker) git(stdin []byte, args ...string) string {
	a.r.t.Helper()
	return strings.TrimSpace(a.r.gitIn(stdin, append([]string{"-c", "user.name=mallory", "-c", "user.email=m@example.com"}, args...)...))
}

func (a *poolAttacker) blob(b []byte) string { return a.git(b, "hash-object", "-w", "--stdin") }

func (a *poolAttacker) tree(name, blob string) string {
	return a.git([]byte("100644 blob "+blob+"\t"+name+"\n"), "mktree")
}

func (a *poolAttacker) commit(tree string) string {
	return a.git([]byte("crafted\n"), "commit-tree", tree)
}

func (a *poolAttacker) file(name string, b []byte) string { return a.commit(a.tree(name, a.blob(b))) }

func (a *poolAttacker) push(refs map[string]string) {
	a.r.t.Helper()
	args := []string{"push", "-q", "origin"}
	for ref, obj := range refs {
		args = append(args, "+"+obj+":refs/lazy-pool/"+ref)
	}
	a.git(nil, args...)
}

// claimJSON is a claim of task id as the attacker writes it.
func claimJSON(id, runner string, generation uint64, expires time.Time) []byte {
	return fmt.Appendf(nil, `{"task":%q,"runner":%q,"generation":%d,"lease_expires":%q,"claimed_at":"2024-01-01T00:00:00Z","renewed_at":"2024-01-01T00:00:00Z"}`,
		id, runner, generation, expires.UTC().Format(time.RFC3339))
}

// poolSkipped is lazy pool --json's skipped refs.
type poolSkipped struct {
	Skipped []struct {
		Ref    string `json:"ref"`
		Task   string `json:"task"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Claims []poolClaim `json:"claims"`
}

// The pool survives hostile refs (issue 43, item 5): an attacker pushes a
// 10 MiB claim, a claim leased until 9999 at generation 2^64-1, one
// leased until 9999 at a valid generation, malformed JSON, wrong types,
// refs that are a tree, a tag and a blob, and runner records as bad.
// lazy pool exits 0 and reports each, in text and JSON; a --once runner
// takes every pooled task (the hostile claims hold nothing: it takes
// them over, at generation 1, never 2^64-1+1) and stops; a claim with
// a live, plausible lease is left alone until a human releases it, which
// an agent or a builder may not, and a live claim needs --force.
func TestPoolSurvivesHostileRefs(t *testing.T) {
	n := newPoolNet(t)
	tasks := n.queue(5, "hostile", "--agent", "exec")
	big, absurd, longLease, plain, held := tasks[0], tasks[1], tasks[2], tasks[3], tasks[4]
	a := newPoolAttacker(n)
	a.git(nil, "fetch", "-q", "origin", "refs/lazy/*:refs/lazy/*")
	year9999 := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	tag := a.git([]byte("object "+a.file("claim.json", []byte("{}"))+"\ntype commit\ntag t\ntagger m <m@example.com> 0 +0000\n\nx\n"), "mktag")
	other := func(k int) string { return fmt.Sprintf("%016x", 0xbad00+k) }
	a.push(map[string]string{
		"claims/" + big.ID:       a.commit(a.tree("claim.json", a.blob(bytes.Repeat([]byte("{"), 10<<20)))),
		"claims/" + absurd.ID:    a.file("claim.json", claimJSON(absurd.ID, "mallory", 1<<64-1, year9999)),
		"claims/" + longLease.ID: a.file("claim.json", claimJSON(longLease.ID, "mallory", 5, year9999)),
		"claims/" + held.ID:      a.file("claim.json", claimJSON(held.ID, "mallory", 7, time.Now().Add(5*time.Minute))),
		"claims/" + other(1):     a.file("claim.json", []byte(`{"task": "`)),
		"claims/" + other(2):     a.file("claim.json", []byte(`{"task":"`+other(2)+`","runner":7,"generation":"many"}`)),
		"claims/" + other(3):     a.tree("claim.json", a.blob([]byte("{}"))),
		"claims/" + other(4):     tag,
		"claims/" + other(5):     a.blob([]byte("{}")),
		"runners/huge":           a.file("runner.json", bytes.Repeat([]byte(" "), 10<<20)),
		"runners/typed":          a.file("runner.json", []byte(`{"id":"typed","labels":"gpu"}`)),
	})
	wantSkipped := map[string]string{
		"claims/" + big.ID:       "over lazy's limit",
		"claims/" + absurd.ID:    "generation 18446744073709551615 is out of range",
		"claims/" + longLease.ID: "longer than lazy.pool.maxLease",
		"claims/" + other(1):     "not a claim lazy writes",
		"claims/" + other(2):     "not a claim lazy writes",
		"claims/" + other(3):     "points at a tree",
		"claims/" + other(4):     "points at a tag",
		"claims/" + other(5):     "points at a blob",
		"runners/huge":           "over lazy's limit",
		"runners/typed":          "not a runner record",
	}

	// lazy pool exits 0 and names every one, with its reason.
	res := n.human.run(nil, "pool")
	if res.Code != 0 || !strings.Contains(res.Stdout, fmt.Sprintf("Skipped (%d)", len(wantSkipped))) {
		t.Fatalf("lazy pool with hostile refs: %s", res)
	}
	for ref, why := range wantSkipped {
		if !strings.Contains(res.Stdout, "refs/lazy-pool/"+ref+": ") || !strings.Contains(res.Stdout, why) {
			t.Errorf("lazy pool does not report %s (%s):\n%s", ref, why, res.Stdout)
		}
	}
	var v poolSkipped
	out := n.human.ok("pool", "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("lazy pool --json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, s := range v.Skipped {
		got[strings.TrimPrefix(s.Ref, "refs/lazy-pool/")] = s.Reason
	}
	for ref, why := range wantSkipped {
		if !strings.Contains(got[ref], why) {
			t.Errorf("lazy pool --json: %s skipped for %q, want %q", ref, got[ref], why)
		}
	}
	if len(v.Claims) != 1 || v.Claims[0].Task != held.ID || v.Claims[0].Generation != 7 {
		t.Errorf("live claims: %+v, want only mallory's plausible one of %s", v.Claims, held.Slug)
	}
	// The scaler's figure: the four tasks no accepted claim holds, never
	// an error for what the attacker pushed.
	if out := n.human.ok("pool", "--count"); out != "4\n" {
		t.Errorf("lazy pool --count with hostile refs: %q, want 4", out)
	}

	// A --once runner takes every task no claim lazy accepts holds, and
	// stops; mallory's plausible live claim is respected.
	m := n.machine("m")
	p := startRunner(m, "m", "--once", "--lease", "3s", "--poll", "500ms")
	p.wait(3 * time.Minute)
	if said := p.out.String(); !strings.Contains(said, "skipped the pool ref refs/lazy-pool/claims/"+big.ID) || !strings.Contains(said, "taking over "+absurd.Slug) {
		t.Errorf("the runner does not say what it skipped and took over:\n%s", said)
	}
	if out := n.human.ok("pool", "--count"); out != "0\n" {
		t.Errorf("lazy pool --count once the runner has run the four: %q, want 0 (they are parked for review, the fifth is held live)", out)
	}
	runs := n.runs()
	for _, tk := range []task{big, absurd, longLease, plain} {
		c, ok := n.claim(tk.ID)
		if rs := runs[tk.ID]; len(rs) != 1 || rs[0].End.IsZero() || n.record(tk.ID).Status != "blocked" {
			t.Errorf("%s: runs %+v, status %s: want one finished run", tk.Slug, rs, n.record(tk.ID).Status)
		}
		if !ok || c.Generation != 1 || c.Runner != host(m) {
			t.Errorf("%s: claim %+v after the runner, want generation 1 by %s", tk.Slug, c, host(m))
		}
	}
	if len(runs[held.ID]) != 0 {
		t.Fatalf("the runner ran %s under mallory's live claim: %+v", held.Slug, runs[held.ID])
	}

	// Only a human releases, and a live claim needs --force; --generation
	// must match what the human saw.
	for _, actor := range []string{"agent", "builder"} {
		res := n.human.with("LAZY_ACTOR="+actor).run(nil, "pool", "release", held.Slug)
		if res.Code == 0 || !strings.Contains(res.Stderr, "only a human may do this") {
			t.Errorf("lazy pool release as %s: %s", actor, res)
		}
	}
	if res := n.human.run(nil, "pool", "release", held.Slug); res.Code == 0 || !strings.Contains(res.Stderr, "holds it live (generation 7") || !strings.Contains(res.Stderr, "--force") {
		t.Errorf("lazy pool release of a live claim without --force: %s", res)
	}
	if res := n.human.run(nil, "pool", "release", "--force", "--generation", "6", held.Slug); res.Code == 0 || !strings.Contains(res.Stderr, "generation 7 now, not 6") {
		t.Errorf("lazy pool release of generation 6 when it is at 7: %s", res)
	}
	if c, _ := n.claim(held.ID); c.Generation != 7 || c.Released {
		t.Fatalf("a refused release changed the claim: %+v", c)
	}
	res = n.human.run(nil, "pool", "release", "--force", "--generation", "7", held.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "Released "+held.Slug) || !strings.Contains(res.Stdout, "generation 8") {
		t.Fatalf("lazy pool release --force: %s", res)
	}
	if c, _ := n.claim(held.ID); c.Generation != 8 || !c.Released || c.Runner != host(n.human) {
		t.Fatalf("the released claim: %+v", c)
	}
	// A hostile claim is released without --force (it holds nothing).
	if res := n.human.run(nil, "pool", "release", other(1)); res.Code != 0 || !strings.Contains(res.Stdout, "a claim lazy does not accept") {
		t.Errorf("lazy pool release of a malformed claim: %s", res)
	}
	startRunner(m, "m2", "--once", "--lease", "3s", "--poll", "500ms").wait(3 * time.Minute)
	if rs := n.runs()[held.ID]; len(rs) != 1 || rs[0].End.IsZero() {
		t.Fatalf("%s after its release: runs %+v", held.Slug, rs)
	}
	if c, _ := n.claim(held.ID); c.Generation != 9 || c.Runner != host(m) {
		t.Fatalf("claim of %s after the release: %+v, want generation 9 by the runner", held.Slug, c)
	}
}

// A --once runner always ends: here its every push is refused (a remote
// that takes nothing), so every round fails; it stops after
// runner.OnceRounds of them, failing, and says why.
func TestPoolOnceRunnerEndsWhenEveryRoundFails(t *testing.T) {
	n := newPoolNet(t)
	n.queue(2, "refused", "--agent", "exec")
	m := n.machine("m")
	m.git("remote", "set-url", "--push", "origin", filepath.Join(n.root, "nowhere.git"))
	p := startRunner(m, "m", "--once", "--lease", "3s", "--poll", "200ms")
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the runner did not stop:\n%s", p.out)
	}
	if p.err == nil || !strings.Contains(p.out.String(), "failed rounds in a row") {
		t.Fatalf("the runner ended with %v:\n%s", p.err, p.out)
	}
	if rounds := strings.Count(p.out.String(), "round failed"); rounds != 5 {
		t.Fatalf("%d rounds failed before it stopped, want 5:\n%s", rounds, p.out)
	}
}

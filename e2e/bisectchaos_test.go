package e2e

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bisectChaosGate is the gate of TestBatchBisectionUnderKillsAndFlakyGates,
// committed on main as .lazy/check.sh with DIR the test's record
// directory. A tree holding a file named FAIL* (at the top, or in docs/
// or api/, the lanes of TestBatchBisectionInLanesUnderKillsAndFlakyGates)
// fails (a culprit: a verdict of the tree alone). Any other tree fails when the flaky list
// (one line per gate run, written from the seed) says so for this run's
// number: a flaky failure, independent of the tree. Every run appends its
// number, the tree it ran on and its verdict to DIR/runs, the test's own
// record of what passed, apart from lazy's. The counter is taken under
// flock, which a SIGKILLed gate releases.
const bisectChaosGate = `# the merge gate: no FAIL* file, and the test's flaky failures
set -e
tree=$(git rev-parse 'HEAD^{tree}')
exec 9>>DIR/lock
flock 9
n=$(cat DIR/count 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" >DIR/count
flock -u 9
for f in FAIL* docs/FAIL* api/FAIL*; do
	if [ -e "$f" ]; then echo "$n $tree fail" >>DIR/runs; echo "gate: $f must not land"; exit 1; fi
done
sleep 0.2
if [ "$(sed -n "${n}p" DIR/flaky)" = 1 ]; then echo "$n $tree flaky" >>DIR/runs; echo "gate: flaky failure $n"; exit 1; fi
echo "$n $tree pass" >>DIR/runs
echo "gate: ok"
`

// TestBatchBisectionUnderKillsAndFlakyGates is issue 46's chaos test of
// batching with bisection. N tasks (6 to 8) are accepted with
// lazy.gate.batch N (or auto, by the seed), one or two of them culprits
// (a FAIL* file: the gate fails on every tree holding it), while the gate
// also fails at random with a seeded probability whatever the tree (a
// flaky gate). lazy accept processes are SIGKILLed with their process
// group at random moments (in the batch's gates, its bisection or its
// landings), and the test then does what a user would: runs lazy doctor
// now and then, and accepts again whatever has not ended, until the queue
// settles. A good task a flaky failure sent back is accepted again, as a
// user who reads "flaky" would.
//
// What lazy does with a flaky gate, which this test holds it to: a task
// a batch's bisection isolated is gated once more on the same tree before
// it is sent back (queue.Bisect's confirming run), so a batch sends a
// good task back only when its own tree failed twice; an accept of a
// task on its own is not retried (one run of the tree that lands, as
// without batching).
//
// Afterwards, from git and lazy's records: (1) every commit main's ref
// ever pointed to since the start (its reflog and first-parent history)
// has a tree the gate passed on (the gate's own log) and that lazy's
// record of the run its trailer names passed on; (2) every good task
// landed exactly once (counted by the Lazy-Task trailer) and no culprit
// ever; (3) every task a batch isolated was isolated within
// ceil(log2 N)+1 rounds, and a good one only after its tree failed twice;
// (4) no branch of unlanded work was deleted; (5) no lazy, git or gate
// process is left.
//
// LAZY_BISECT_CHAOS_SEED replays a run's plan (the scheduling of the
// processes cannot be replayed, so a failure may need a few runs with its
// seed); LAZY_BISECT_CHAOS_DURATION runs fresh episodes (new repository,
// new seed from the first) until that long has passed (default: one).
func TestBatchBisectionUnderKillsAndFlakyGates(t *testing.T) {
	bisectChaos(t, false)
}

// TestBatchBisectionInLanesUnderKillsAndFlakyGates is the same chaos with
// lanes (lazy.gate.lanes docs=docs/ and api=api/): the tasks alternate
// between docs/ and api/, so each lane batches and bisects its own, a
// culprit in either. What it holds lazy to is the same, with the lane
// rule for (1): a commit may land on a run whose tree passed in the
// commit's lane, so the commit must match that tree in every path of its
// lane (the other lane may have landed meanwhile); and (3) bounds each
// culprit's rounds by its lane's count of tasks. Seeds and durations as
// above.
func TestBatchBisectionInLanesUnderKillsAndFlakyGates(t *testing.T) {
	bisectChaos(t, true)
}

// bisectChaos runs the chaos test's episodes, with lanes or without.
func bisectChaos(t *testing.T, lanes bool) {
	full(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LAZY_BISECT_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LAZY_BISECT_CHAOS_SEED=%q is not a number", v)
		}
		seed = n
	}
	var duration time.Duration
	if v := os.Getenv("LAZY_BISECT_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LAZY_BISECT_CHAOS_DURATION=%q is not a duration", v)
		}
		duration = d
	}
	began := time.Now()
	for episode := uint64(0); ; episode++ {
		s := seed + episode
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { bisectChaosEpisode(t, s, lanes) })
		if t.Failed() || time.Since(began) >= duration {
			return
		}
	}
}

// bisectChaosEpisode is one run of the chaos test on a fresh repository;
// with lanes, the tasks alternate between lanes docs and api.
func bisectChaosEpisode(t *testing.T, seed uint64, lanes bool) {
	r := newRepo(t)
	t.Logf("seed %d (replay with LAZY_BISECT_CHAOS_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 46))
	var trace []string
	fatalf := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("LAZY_BISECT_CHAOS_SEED=%d: %s\ntrace:\n%s", seed, fmt.Sprintf(format, a...), strings.Join(trace, "\n"))
	}

	// The plan: N tasks, one or two culprits, the batch size, the flaky
	// failure rate and which gate runs it fails.
	n := 6 + rng.IntN(3)
	batch := strconv.Itoa(n)
	if rng.IntN(3) == 0 {
		batch = "auto"
	}
	culprits := 1 + rng.IntN(2)
	flakyRate := 0.05 + rng.Float64()*0.15
	records := t.TempDir()
	var flaky strings.Builder
	for range 4000 {
		if rng.Float64() < flakyRate {
			flaky.WriteString("1\n")
		} else {
			flaky.WriteString("0\n")
		}
	}
	writeFile(t, filepath.Join(records, "flaky"), flaky.String())
	writeFile(t, filepath.Join(r.dir, ".lazy", "check.sh"), strings.ReplaceAll(bisectChaosGate, "DIR", records))
	writeFile(t, filepath.Join(r.dir, ".lazy", "gate"), "sh .lazy/check.sh\n")
	r.git("add", ".lazy")
	r.git("commit", "-q", "-m", "the merge gate")
	r.git("config", "lazy.gate.parallel", "2")
	r.git("config", "lazy.gate.batch", batch)
	// laneOf is the lane of task i ("" without lanes): its file is there.
	laneOf := func(int) string { return "" }
	if lanes {
		r.git("config", "--add", "lazy.gate.lanes", "docs=docs/")
		r.git("config", "--add", "lazy.gate.lanes", "api=api/")
		laneOf = func(i int) string { return []string{"docs", "api"}[i%2] }
	}
	start := strings.TrimSpace(r.git("rev-parse", "main"))
	trace = append(trace, fmt.Sprintf("%d tasks, %d culprits, lazy.gate.batch %s, flaky rate %.2f, lanes %v", n, culprits, batch, flakyRate, lanes))

	bad := map[int]bool{}
	for len(bad) < culprits {
		bad[rng.IntN(n)] = true
	}
	good := map[string]bool{}
	var slugs []string
	ids := map[string]string{}
	laneOfTask := map[string]string{} // task id -> its lane ("" without lanes)
	inLane := map[string]int{}        // lane -> its count of tasks
	for i := range n {
		file := fmt.Sprintf("work-%d.txt work of task %d", i, i)
		if bad[i] {
			file = fmt.Sprintf("FAIL-%d.txt work of task %d", i, i)
		}
		if l := laneOf(i); l != "" {
			file = l + "/" + file
		}
		title := fmt.Sprintf("batch task %d", i)
		rr := r.with(script(t, "write "+file, "commit agent: "+title, "print did "+title))
		tk := rr.create(title, "-m", "Do the work of task "+strconv.Itoa(i)+".")
		rr.ok("start", tk.Slug, "--command", fakeAgentBin)
		slugs = append(slugs, tk.Slug)
		ids[tk.Slug] = tk.ID
		laneOfTask[tk.ID] = laneOf(i)
		inLane[laneOf(i)]++
		good[tk.Slug] = !bad[i]
	}
	for _, s := range slugs {
		r.waitStatus(s, "blocked")
	}
	branchesBefore := strings.Fields(r.git("for-each-ref", "--format=%(refname)", "refs/heads/"))

	// Accept until every task has ended: each round accepts what has not
	// in one lazy accept (the batch), now and then beside a second
	// accepting some of the same tasks; the first rounds kill most
	// processes at a random moment.
	ended := map[string]string{}
	flakySentBack := map[string]int{}
	var mu sync.Mutex
	var procs []*queueAccept
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			if p.cmd.Process != nil {
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	})
	deadline := time.Now().Add(150 * time.Second)
	kills := 0
	for round := 0; ; round++ {
		var pending []string
		for _, s := range slugs {
			if ended[s] == "" {
				pending = append(pending, s)
			}
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			fatalf("tasks still not ended after 150s of rounds: %v", pending)
		}
		ps := []*queueAccept{{slugs: pending}}
		if len(pending) > 2 && rng.IntN(4) == 0 {
			ps = append(ps, &queueAccept{slugs: []string{pending[rng.IntN(len(pending))]}})
		}
		for i, p := range ps {
			// The very first batch is always killed, inside its gates.
			if round == 0 && i == 0 || round < 4 && rng.IntN(3) != 0 {
				p.armed = true
				p.delay = 300*time.Millisecond + time.Duration(rng.Int64N(int64(4*time.Second)))
				if round == 0 && i == 0 {
					// Within the first batch's gates, which a delay of up to
					// 4.3 s could outlast (seed 1796670603230072029 landed
					// every task first, and no accept was killed).
					p.delay = 300*time.Millisecond + p.delay%time.Second
				}
			}
		}
		var wg sync.WaitGroup
		for _, p := range ps {
			args := append([]string{"accept", "--json"}, p.slugs...)
			p.cmd = exec.Command(lazyBin, args...)
			p.cmd.Dir, p.cmd.Env = r.dir, r.environ()
			p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			procs = append(procs, p)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				var timer *time.Timer
				if p.armed {
					timer = time.AfterFunc(p.delay, func() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) })
				}
				_ = p.cmd.Wait()
				if timer != nil {
					timer.Stop()
				}
				// A killed lazy's git and gate children die with its group.
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}()
		}
		wg.Wait()
		killedAny := false
		for _, p := range ps {
			ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killedAny = true
				kills++
				trace = append(trace, fmt.Sprintf("round %d: accept %v killed after %s (%s)", round, p.slugs, p.delay.Round(time.Millisecond), acceptPhaseOf(p.err.String())))
				continue
			}
			if strings.Contains(p.err.String(), "panic:") || strings.Contains(p.err.String(), "DATA RACE") {
				fatalf("lazy accept %v crashed:\n%s", p.slugs, p.err.String())
			}
			for slug, how := range queueOutcomes(p) {
				trace = append(trace, fmt.Sprintf("round %d: accept %v: %s %s (%s)", round, p.slugs, slug, orRetry(how.end), oneLine(how.msg)))
				switch {
				case how.end == "":
					continue
				case how.end == endConflict:
					fatalf("%s conflicted, but no two tasks touch one file: %s", slug, how.msg)
				case how.end == endLanded && !good[slug]:
					fatalf("%s, a culprit, was accepted: %s", slug, how.msg)
				case how.end == endGateFailed && good[slug]:
					// Only a flaky failure may send a good task back; the
					// user accepts it again.
					if !strings.Contains(how.msg, "flaky failure") && !strings.Contains(r.ok("show", slug), "flaky failure") {
						fatalf("%s, a good task, failed the gate without a flaky failure: %s", slug, how.msg)
					}
					flakySentBack[slug]++
					continue
				}
				ended[slug] = how.end
			}
		}
		if aged := ageKilledGitLocks(t, r); len(aged) > 0 || killedAny && rng.IntN(2) == 0 {
			res := r.run(nil, "doctor")
			trace = append(trace, fmt.Sprintf("round %d: locks of killed gits %v; doctor exit %d", round, aged, res.Code))
		}
	}
	if kills == 0 {
		fatalf("no accept was killed")
	}
	t.Logf("%d accept processes, %d killed; good tasks a flaky failure sent back: %v\n%s", len(procs), kills, flakySentBack, strings.Join(trace, "\n"))
	ageKilledGitLocks(t, r)
	r.run(nil, "doctor")

	// The gate's own record: the verdicts on each tree.
	verdicts := map[string][]string{}
	raw, err := os.ReadFile(filepath.Join(records, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			verdicts[f[1]] = append(verdicts[f[1]], f[2])
		}
	}

	// lazy's records of every run, by id.
	type batched struct {
		Outcome string `json:"outcome"`
		Round   int    `json:"round"`
		Run     string `json:"run"`
		Lane    string `json:"lane"`
	}
	allRuns := map[string]gateRunJSON{}
	isolated := map[string]batched{}
	for _, s := range slugs {
		var sh struct {
			GateRecord struct {
				Runs    []gateRunJSON `json:"runs"`
				Batched *batched      `json:"batched"`
			} `json:"gate_record"`
		}
		if err := json.Unmarshal([]byte(r.ok("show", "--json", s)), &sh); err != nil {
			t.Fatal(err)
		}
		for _, run := range sh.GateRecord.Runs {
			run.task = ids[s]
			allRuns[run.ID] = run
		}
		if b := sh.GateRecord.Batched; b != nil && b.Outcome == "isolated" {
			isolated[s] = *b
		}
	}

	// (1) main only ever pointed to trees that passed: each commit its
	// reflog and first-parent history hold since the start names a run
	// that passed (in lazy's record and in the gate's own log) on a tree
	// holding every change the commit's tree has since the start: its
	// own tree, or a batch's that held it and more (the batch's run
	// vouches for the trees of its entries landing one by one, as bors
	// and Mergify land a batch). With lanes, every change in the lane of
	// the commit's task: the other lane's are what it landed meanwhile.
	commits := strings.Fields(r.git("rev-list", "--first-parent", start+"..main"))
	for _, c := range strings.Fields(r.git("reflog", "show", "--format=%H", "refs/heads/main")) {
		if c == start {
			break
		}
		if !slices.Contains(commits, c) {
			fatalf("main pointed to %s, which is not in its first-parent history since the start", c)
		}
	}
	landedBy := map[string]int{}
	for _, c := range commits {
		msg := r.git("log", "-1", "--format=%B", c)
		landedTask := trailer(msg, "Lazy-Task")
		landedBy[landedTask]++
		runID, ok := strings.CutPrefix(trailer(msg, "Lazy-Gate"), "passed ")
		runID, _, _ = strings.Cut(runID, " ")
		run, known := allRuns[runID]
		if !ok || !known || !run.Passed {
			fatalf("main's commit %s names run %q, which lazy's record does not hold as passed: %+v\n%s", c, runID, run, msg)
		}
		if !slices.Contains(verdicts[run.Tree], "pass") {
			fatalf("main's commit %s names run %s on tree %s, which the gate never passed (its runs: %v)", c, runID, run.Tree, verdicts[run.Tree])
		}
		for _, line := range strings.Split(strings.TrimSpace(r.git("diff-tree", "-r", "--no-renames", start, c)), "\n") {
			f := strings.Fields(line)
			if len(f) < 6 {
				continue
			}
			path, blob := f[5], f[3]
			if l := laneOfTask[landedTask]; l != "" && !strings.HasPrefix(path, l+"/") {
				continue
			}
			got, err := exec.Command("git", "-C", r.dir, "rev-parse", "--verify", "-q", run.Tree+":"+path).Output()
			if want := strings.TrimSpace(string(got)); f[4] == "D" && err == nil || f[4] != "D" && want != blob {
				fatalf("main's commit %s has %s at %s, but the tree %s its run %s passed on does not", c, path, blob, run.Tree, runID)
			}
		}
	}

	// (2) every good task landed exactly once, no culprit ever.
	for _, s := range slugs {
		want := 0
		if good[s] {
			want = 1
		}
		if got := landedBy[ids[s]]; got != want {
			fatalf("%s (good: %v) landed %d times, want %d", s, good[s], got, want)
		}
	}

	// (3) every isolated task within ceil(log2 N)+1 rounds of its search;
	// a good one only when its tree failed twice.
	for s, b := range isolated {
		// Without lanes, every task is in the lane "".
		lane := laneOfTask[ids[s]]
		of := n
		if b.Lane != "" {
			of = inLane[lane]
		}
		if bound := bits.Len(uint(of-1)) + 1; b.Round > bound {
			fatalf("%s was isolated in round %d, over ceil(log2 %d)+1 = %d", s, b.Round, of, bound)
		}
		if b.Lane != "" && b.Lane != lane {
			fatalf("%s, of lane %q, was isolated in lane %q", s, lane, b.Lane)
		}
		if run, ok := allRuns[b.Run]; ok && good[s] {
			failed := 0
			for _, v := range verdicts[run.Tree] {
				if v != "pass" {
					failed++
				}
			}
			if failed < 2 {
				fatalf("%s, a good task, was isolated on tree %s after fewer than two failures: %v", s, run.Tree, verdicts[run.Tree])
			}
		}
	}

	// (4) no branch of unlanded work was deleted.
	branchesAfter := strings.Fields(r.git("for-each-ref", "--format=%(refname)", "refs/heads/"))
	for _, s := range slugs {
		if good[s] {
			continue
		}
		for _, b := range branchesBefore {
			if strings.Contains(b, s) && !slices.Contains(branchesAfter, b) {
				fatalf("the branch %s of %s, a culprit that did not land, is gone", b, s)
			}
		}
	}

	// (5) nothing is left behind.
	if left := ourProcessesUnder(filepath.Dir(r.dir)); len(left) > 0 {
		fatalf("processes left: %s", strings.Join(left, "; "))
	}
	for _, dir := range []string{filepath.Join(r.dir, ".git"), gateScratchRoot(t, r.dir)} {
		if left := processesIn(dir); len(left) > 0 {
			fatalf("processes still run in %s: %s", dir, strings.Join(left, "; "))
		}
	}
}

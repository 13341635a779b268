package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
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

// queueGate is the merge gate of the queue test, committed on main as
// .lazy/check.sh and run by .lazy/gate: a tree passes unless it holds a
// file named FAIL*, so whether a tree passes follows from the tree alone,
// and it takes a moment, as real checks do.
const queueGate = `# the merge gate: no file named FAIL* may land
for f in FAIL*; do
	if [ -e "$f" ]; then echo "gate: $f must not land"; exit 1; fi
done
sleep 0.3
echo "gate: ok"
`

// The kinds of work in the queue test.
const (
	workPasses   = "passes"   // its own file: passes the gate, lands
	workFails    = "fails"    // a FAIL* file: fails the gate, never lands
	workConflict = "conflict" // shared.txt, which every such task writes: the first lands, the rest conflict
)

// How an accept of a task ended, when it ended by itself.
const (
	endLanded     = "landed"
	endGateFailed = "gate failed"
	endConflict   = "conflict"
)

// queueTask is one task of the queue test.
type queueTask struct {
	task
	work string
}

// queueAccept is one lazy accept process of the queue test. One armed
// to be killed is SIGKILLed (with its process group) after its
// narration first holds mark, or after its start if mark is "", and
// then after delay.
type queueAccept struct {
	slugs []string
	armed bool
	mark  string
	delay time.Duration
	cmd   *exec.Cmd
	out   bytes.Buffer
	err   syncBuffer
}

// queueKillMarks are where a killed accept dies: at a random moment from
// its start (which may fall in a speculative train's gates), or just
// after it narrates a phase of its accept.
var queueKillMarks = []string{"", "", ": run the gate on the tree that would land", ": run the gate on the tree that would land",
	": record the accept (merging)", ": squash-merge the task branch", ": record the task complete", ": remove the task's worktree and branch"}

// TestMergeQueueUnderConcurrentAcceptsAndKills accepts ten tasks whose
// work passes the gate, fails it, or conflicts with one another, in
// several lazy accept processes at once (queues of one to three tasks,
// two gates at a time with lazy.gate.parallel 2), SIGKILLs some of them at
// random moments, and accepts again whatever has not ended until every
// task has landed, failed its gate or conflicted. Then it checks what
// must hold whatever the interleaving: main only ever moved to trees that
// passed (each commit says so, and the gate, run by the test on that
// commit's tree, passes); every task whose work passes landed exactly
// once and the others not at all, each with its gate record; no task is
// lost or left merging; the queue is empty; no scratch checkout of the
// gate and no process is left behind.
//
// The plan (kinds of work, groups, kills) comes from a seed:
// LAZY_PROPERTY_SEED replays it (the scheduling of the processes cannot
// be replayed, so a failure may need a few runs with its seed).
func TestMergeQueueUnderConcurrentAcceptsAndKills(t *testing.T) {
	r := newRepo(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LAZY_PROPERTY_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LAZY_PROPERTY_SEED=%q is not a number", v)
		}
		seed = n
	}
	t.Logf("seed %d (replay with LAZY_PROPERTY_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 31))
	var trace []string
	fatalf := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("LAZY_PROPERTY_SEED=%d: %s\ntrace:\n%s", seed, fmt.Sprintf(format, a...), strings.Join(trace, "\n"))
	}

	// The gate is committed on main; the queue gates two trees at once.
	writeFile(t, filepath.Join(r.dir, ".lazy", "check.sh"), queueGate)
	writeFile(t, filepath.Join(r.dir, ".lazy", "gate"), "sh .lazy/check.sh\n")
	r.git("add", ".lazy")
	r.git("commit", "-q", "-m", "the merge gate")
	r.git("config", "lazy.gate.parallel", "2")
	start := strings.TrimSpace(r.git("rev-parse", "main"))

	// Ten tasks: two to four conflict in shared.txt, two or three fail
	// the gate, the rest pass; which is which is the seed's.
	kinds := make([]string, 10)
	nConflict, nFail := 2+rng.IntN(3), 2+rng.IntN(2)
	for i := range kinds {
		switch {
		case i < nConflict:
			kinds[i] = workConflict
		case i < nConflict+nFail:
			kinds[i] = workFails
		default:
			kinds[i] = workPasses
		}
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	tasks := map[string]*queueTask{}
	var slugs []string
	for i, kind := range kinds {
		var file string
		switch kind {
		case workConflict:
			file = fmt.Sprintf("shared.txt from task %d", i)
		case workFails:
			file = fmt.Sprintf("FAIL-%d.txt work of task %d", i, i)
		default:
			file = fmt.Sprintf("work-%d.txt work of task %d", i, i)
		}
		title := fmt.Sprintf("queue task %d", i)
		rr := r.with(script(t, "write "+file, "commit agent: "+title, "print did "+title))
		tk := rr.create(title, "-m", "Do the work of task "+strconv.Itoa(i)+".")
		rr.ok("start", tk.Slug, "--command", fakeAgentBin)
		tasks[tk.Slug] = &queueTask{task: tk, work: kind}
		slugs = append(slugs, tk.Slug)
	}
	for _, s := range slugs {
		r.waitStatus(s, "blocked")
	}
	t.Logf("tasks: %s", describeQueueTasks(tasks, slugs))

	// Accept in rounds until every task has ended by itself: each round
	// runs the tasks not ended yet, shuffled into queues of one to three
	// accepted by concurrent processes (now and then a second process
	// accepts a task already in another's queue, as a user in another
	// terminal might), and kills some processes at random moments in the
	// first rounds.
	ended := map[string]string{}
	killedWith := map[string]bool{} // tasks an accept that was killed carried
	killedIn := map[string]int{}    // kills by the phase they fell in
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
	deadline := time.Now().Add(50 * time.Second)
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
			fatalf("tasks still not accepted, failed or conflicted after 50s of rounds: %v", pending)
		}
		rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
		var batch []*queueAccept
		for len(pending) > 0 {
			n := min(1+rng.IntN(3), len(pending))
			p := &queueAccept{slugs: pending[:n]}
			pending = pending[n:]
			// The first rounds kill two processes in three, the very
			// first always, in its gate.
			if first := len(procs) == 0 && len(batch) == 0; first || round < 3 && rng.IntN(3) != 0 {
				p.armed, p.mark = true, queueKillMarks[rng.IntN(len(queueKillMarks))]
				if first {
					p.mark = queueKillMarks[2]
				}
				switch p.mark {
				case "":
					p.delay = 200*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
				case queueKillMarks[2]:
					p.delay = time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
				default: // the other phases take milliseconds
					p.delay = time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
				}
			}
			batch = append(batch, p)
		}
		if rng.IntN(3) == 0 {
			again := batch[rng.IntN(len(batch))]
			batch = append(batch, &queueAccept{slugs: []string{again.slugs[rng.IntN(len(again.slugs))]}})
		}
		var wg sync.WaitGroup
		for _, p := range batch {
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
				var tmu sync.Mutex
				var timer *time.Timer
				kill := func() {
					tmu.Lock()
					defer tmu.Unlock()
					timer = time.AfterFunc(p.delay, func() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) })
				}
				switch {
				case p.armed && p.mark == "":
					kill()
				case p.armed:
					p.err.onFirst(p.mark, kill)
				}
				_ = p.cmd.Wait()
				tmu.Lock()
				if timer != nil {
					timer.Stop()
				}
				tmu.Unlock()
				// A killed lazy's git children die with its group.
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}()
		}
		wg.Wait()
		killedAny := false
		for _, p := range batch {
			ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killedAny = true
				kills++
				for _, s := range p.slugs {
					killedWith[s] = true
				}
				phase := acceptPhaseOf(p.err.String())
				killedIn[phase]++
				trace = append(trace, fmt.Sprintf("round %d: accept %v killed %s after %q, in phase %s", round, p.slugs, p.delay.Round(time.Millisecond), strings.TrimPrefix(p.mark, ": "), phase))
				continue
			}
			if strings.Contains(p.err.String(), "panic:") || strings.Contains(p.err.String(), "DATA RACE") {
				fatalf("lazy accept %v crashed:\n%s", p.slugs, p.err.String())
			}
			for slug, how := range queueOutcomes(p) {
				tk := tasks[slug]
				trace = append(trace, fmt.Sprintf("round %d: accept %v: %s %s (%s)", round, p.slugs, slug, orRetry(how.end), oneLine(how.msg)))
				switch {
				case how.end == "":
					continue // not ended: a task busy or merging, accepted again next round
				case how.end == endLanded && tk.work == workFails:
					fatalf("%s, whose work fails the gate, was accepted: %s", slug, how.msg)
				case how.end == endGateFailed && tk.work != workFails:
					fatalf("%s, whose work passes the gate on every tree it can land on, failed it: %s", slug, how.msg)
				case how.end == endConflict && tk.work != workConflict:
					fatalf("%s, which touches no other task's file, conflicted: %s", slug, how.msg)
				}
				ended[slug] = how.end
			}
		}
		// A killed accept's task may be merging: lazy doctor recovers it
		// now and then, otherwise the next accept does. A git killed in
		// the main checkout (the fast-forward of a landing, a branch
		// deletion) leaves a lock there that doctor removes once it is
		// two minutes old: every process of the round has ended, so
		// the test ages it as a user who waited would find it.
		if aged := ageKilledGitLocks(t, r); len(aged) > 0 || killedAny && rng.IntN(2) == 0 {
			res := r.run(nil, "doctor")
			trace = append(trace, fmt.Sprintf("round %d: locks of killed gits %v; doctor exit %d", round, aged, res.Code))
		}
	}
	t.Logf("%d accept processes, %d killed (by phase: %v); ends %v\n%s", len(procs), kills, killedIn, ended, strings.Join(trace, "\n"))

	// Quiet: doctor repairs what the kills left until it finds nothing.
	ageKilledGitLocks(t, r)
	var last doctorReport
	for i := 0; i < 4; i++ {
		res := r.run(nil, "doctor", "--json")
		if err := json.Unmarshal([]byte(res.Stdout), &last); err != nil {
			fatalf("doctor --json: %v\n%s", err, res)
		}
		if last.Remaining == 0 {
			break
		}
	}
	// What doctor leaves for a human by design (a worktree an accept
	// killed in its cleanup left half removed: lazy removes no worktree
	// with changes) is not a failure here.
	if last.Remaining != 0 && !onlyWorkLeftForAHuman(r) {
		fatalf("lazy doctor leaves %d problems: %+v", last.Remaining, last.Findings)
	}

	// (a) main only moved to trees that passed: every commit since the
	// start says which run passed on it, this machine holds its pass mark
	// of the very tree, and the gate passes on the tree when the test
	// runs it.
	landedBy := map[string]int{}
	runs := map[string]string{} // main's commit -> the run its trailer names
	commits := strings.Fields(r.git("rev-list", "--first-parent", start+"..main"))
	for _, c := range commits {
		msg := r.git("log", "-1", "--format=%B", c)
		run := trailer(msg, "Lazy-Gate")
		id := trailer(msg, "Lazy-Task")
		runID, ok := strings.CutPrefix(run, "passed ")
		if !ok || id == "" {
			fatalf("main's commit %s does not carry Lazy-Gate: passed and Lazy-Task:\n%s", c, msg)
		}
		runID, _, _ = strings.Cut(runID, " ")
		tree := strings.TrimSpace(r.git("rev-parse", c+"^{tree}"))
		marks, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "gate", "passed", tree+"-*"))
		if len(marks) != 1 {
			fatalf("main's commit %s (tree %s) has %d pass marks on this machine", c, tree, len(marks))
		}
		runs[c] = runID
		if out, err := gateOnCommit(t, r, c); err != nil {
			fatalf("the gate fails on main's commit %s, which landed: %v\n%s", c, err, out)
		}
		landedBy[id]++
	}
	if parents := strings.Fields(r.git("rev-list", "--no-walk", "--parents", "main")); len(commits) > 0 && len(parents) != 2 {
		fatalf("main's tip is not a squash commit with one parent: %v", parents)
	}

	// (b) what passes landed exactly once, what fails or conflicts not at
	// all, each with the record that says why.
	allRuns := map[string]gateRunJSON{}
	keptAll := true // no record dropped an old run (each keeps its newest ten)
	for _, s := range slugs {
		got := r.showQueueGate(s)
		keptAll = keptAll && len(got.GateRecord.Runs) < 10
		for _, run := range got.GateRecord.Runs {
			run.task = tasks[s].ID
			allRuns[run.ID] = run
		}
	}
	conflictsLanded, borrowed := 0, 0
	for _, s := range slugs {
		tk := tasks[s]
		got := r.showQueueGate(s)
		n := landedBy[tk.ID]
		switch ended[s] {
		case endLanded:
			if n != 1 || got.Status != "complete" || got.Outcome != "accepted" {
				fatalf("%s (%s) landed %d times and is %s/%s, want once and complete", s, tk.work, n, got.Status, got.Outcome)
			}
			if tk.work == workConflict {
				conflictsLanded++
			}
			// The run the commit names passed on exactly the commit's
			// tree. It is in the record of the task that ran it: this
			// one's, or another's whose speculative train built the very
			// same tree (tasks ahead of each other in two trains).
			c := strings.TrimSpace(r.git("log", "--format=%H", "--grep", "^Lazy-Task: "+tk.ID+"$", start+"..main"))
			tree := strings.TrimSpace(r.git("rev-parse", c+"^{tree}"))
			run, ok := allRuns[runs[c]]
			switch {
			case ok && (!run.Passed || run.Tree != tree):
				fatalf("%s landed as %s (tree %s) naming run %s, which the record says did not pass on that tree: %+v", s, c, tree, runs[c], run)
			case !ok && !keptAll:
				fatalf("%s landed naming run %s, which no task's gate record holds", s, runs[c])
			case ok && run.task != tk.ID:
				borrowed++
			}
		default:
			if n != 0 || got.Status != "blocked" {
				fatalf("%s (%s, %s) is on main %d times and %s, want blocked and not on main", s, tk.work, ended[s], n, got.Status)
			}
		}
		if tk.work == workFails {
			if !slices.ContainsFunc(got.GateRecord.Runs, func(r gateRunJSON) bool {
				return !r.Passed && !r.Speculative && r.Failed == "sh .lazy/check.sh" && strings.Contains(r.Tail, "must not land")
			}) {
				fatalf("%s failed the gate, and its gate record shows no failed run of its own: %+v", s, got.GateRecord)
			}
		}
		// No run that was not speculative ever failed a task whose work
		// passes: its accept gated what actually was on main.
		if tk.work != workFails {
			for _, run := range got.GateRecord.Runs {
				if !run.Passed && !run.Speculative {
					fatalf("%s (%s) has a failed gate run that was not speculative: %+v", s, tk.work, run)
				}
			}
		}
	}
	speculative := 0
	for _, run := range allRuns {
		if run.Speculative {
			speculative++
		}
	}
	t.Logf("%d gate runs kept, %d of them speculative; %d tasks landed on a run another task's train made on the same tree", len(allRuns), speculative, borrowed)
	if conflictsLanded != 1 {
		fatalf("%d of the tasks writing shared.txt landed, want exactly one", conflictsLanded)
	}
	for _, s := range slugs {
		if tasks[s].work == workPasses && ended[s] != endLanded {
			fatalf("%s passes the gate and ended %q", s, ended[s])
		}
	}

	// (c) no task is lost, none is left merging.
	listed := map[string]string{}
	for _, tk := range r.list() {
		listed[tk.ID] = tk.Status
	}
	for _, s := range slugs {
		st, ok := listed[tasks[s].ID]
		if !ok || st == "merging" {
			fatalf("%s is %q in lazy list after doctor (listed: %v)", s, st, ok)
		}
	}

	// (d) the queue is empty, and says why each entry left.
	var queues []struct {
		Target  string            `json:"target"`
		Entries []json.RawMessage `json:"entries"`
		Left    []struct {
			Slug    string `json:"slug"`
			Outcome string `json:"outcome"`
		} `json:"left"`
	}
	if err := json.Unmarshal([]byte(r.ok("queue", "--json")), &queues); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string][]string{}
	for _, q := range queues {
		if len(q.Entries) > 0 {
			fatalf("the queue into %s still holds %d entries", q.Target, len(q.Entries))
		}
		for _, l := range q.Left {
			outcomes[l.Slug] = append(outcomes[l.Slug], l.Outcome)
		}
	}
	for _, s := range slugs {
		want := map[string]string{endLanded: "landed", endGateFailed: "failed", endConflict: "conflict"}[ended[s]]
		if ended[s] == endLanded && killedWith[s] && !slices.Contains(outcomes[s], want) {
			// The accept that landed it was killed before its entry left
			// (then a recovery may have finished the task): the entry left
			// with the accept.
			want = "error"
		}
		if !slices.Contains(outcomes[s], want) {
			fatalf("the queue's log says %s left %v, want among them %s", s, outcomes[s], want)
		}
	}

	// (e) nothing is left behind: no scratch worktree of the gate (nor
	// its owner file), no lazy, no agent and no gate command.
	for _, line := range strings.Split(r.git("worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok && (strings.HasPrefix(filepath.Base(p), ".gate-") || within(p, filepath.Join(r.dir, ".git"))) {
			fatalf("a scratch worktree is left: %s\n%s", p, r.git("worktree", "list"))
		}
	}
	if left, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "tmp", "gate-*")); len(left) > 0 {
		fatalf("gate owner files are left: %v", left)
	}
	if left := ourProcessesUnder(filepath.Dir(r.dir)); len(left) > 0 {
		fatalf("processes left: %s", strings.Join(left, "; "))
	}
	for _, dir := range []string{filepath.Join(r.dir, ".git"), gateScratchRoot(t, r.dir)} {
		if left := processesIn(dir); len(left) > 0 {
			fatalf("processes still run in %s (gate commands of a killed accept?): %s", dir, strings.Join(left, "; "))
		}
	}
}

// writeFile writes content to path, making its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func describeQueueTasks(tasks map[string]*queueTask, slugs []string) string {
	var parts []string
	for _, s := range slugs {
		parts = append(parts, s+"="+tasks[s].work)
	}
	return strings.Join(parts, " ")
}

// queueOutcome is how one task's accept ended, as the accept said.
type queueOutcome struct {
	end string // "" when it did not end (busy, merging, ...)
	msg string
}

// queueOutcomes reads what a finished lazy accept --json said of each of
// its tasks: several print an array; one prints its result, or fails
// with the reason on stderr.
func queueOutcomes(p *queueAccept) map[string]queueOutcome {
	out := map[string]queueOutcome{}
	if len(p.slugs) == 1 {
		if p.cmd.ProcessState.ExitCode() == 0 {
			out[p.slugs[0]] = queueOutcome{end: endLanded, msg: "accepted"}
		} else {
			out[p.slugs[0]] = classifyAccept(p.err.String())
		}
		return out
	}
	var results []struct {
		Task     task   `json:"task"`
		Accepted bool   `json:"accepted"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &results); err != nil {
		for _, s := range p.slugs {
			out[s] = queueOutcome{msg: fmt.Sprintf("no JSON (%v): %s", err, p.err.String())}
		}
		return out
	}
	for _, res := range results {
		if res.Accepted {
			out[res.Task.Slug] = queueOutcome{end: endLanded, msg: "accepted"}
			continue
		}
		out[res.Task.Slug] = classifyAccept(res.Error)
	}
	return out
}

// classifyAccept tells from an accept's error how it ended.
func classifyAccept(msg string) queueOutcome {
	switch {
	case strings.Contains(msg, "the gate failed"):
		return queueOutcome{end: endGateFailed, msg: msg}
	case strings.Contains(msg, "no longer merges cleanly"):
		return queueOutcome{end: endConflict, msg: msg}
	case strings.Contains(msg, "already accepted"):
		return queueOutcome{end: endLanded, msg: msg}
	}
	return queueOutcome{msg: msg}
}

func orRetry(end string) string {
	if end == "" {
		return "not ended"
	}
	return end
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// trailer is the value of the trailer key in a commit message.
func trailer(msg, key string) string {
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// gateOnCommit runs the gate committed in commit on its own tree, in a
// checkout of its own, as lazy would.
func gateOnCommit(t *testing.T, r *runner, commit string) (string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "check")
	r.git("worktree", "add", "-q", "--detach", dir, commit)
	defer r.git("worktree", "remove", "--force", dir)
	var out bytes.Buffer
	for _, line := range strings.Split(r.git("show", commit+":.lazy/gate"), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
		if err := cmd.Run(); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

type gateRunJSON struct {
	task        string // whose record holds it
	ID          string `json:"id"`
	Passed      bool   `json:"passed"`
	Speculative bool   `json:"speculative"`
	Failed      string `json:"failed"`
	Tail        string `json:"tail"`
	Tree        string `json:"tree"`
	Error       string `json:"error"`
	Commands    []struct {
		Cmd  string `json:"cmd"`
		Exit int    `json:"exit"`
	} `json:"commands"`
}

// queueGateShow is lazy show --json with the task's gate record.
type queueGateShow struct {
	task
	GateRecord struct {
		Runs []gateRunJSON `json:"runs"`
	} `json:"gate_record"`
}

func (r *runner) showQueueGate(name string) queueGateShow {
	r.t.Helper()
	var s queueGateShow
	if err := json.Unmarshal([]byte(r.ok("show", "--json", name)), &s); err != nil {
		r.t.Fatalf("show --json %s: %v", name, err)
	}
	return s
}

// ageKilledGitLocks ages the lock files a killed git left in the main
// repository (index.lock, packed-refs.lock, HEAD.lock, a ref's lock) past lazy
// doctor's two-minute guard, which then removes them; the caller knows
// no process that could hold them runs. It returns those it aged.
func ageKilledGitLocks(t *testing.T, r *runner) []string {
	t.Helper()
	gitDir := filepath.Join(r.dir, ".git")
	old := time.Now().Add(-3 * time.Minute)
	var aged []string
	age := func(p string) {
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() && info.ModTime().After(old) {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			aged = append(aged, strings.TrimPrefix(p, gitDir+"/"))
		}
	}
	for _, name := range []string{"index.lock", "packed-refs.lock", "HEAD.lock", "ORIG_HEAD.lock"} {
		age(filepath.Join(gitDir, name))
	}
	_ = filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			age(p)
		}
		return nil
	})
	return aged
}

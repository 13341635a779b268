// Command poolbench measures the runner pool on one machine, as the pool
// end-to-end tests run it: a bare repository stands in for the forge, and
// clones with a HOME of their own for the machines, each running `lazy
// runner` with the exec agent. In one run it reports:
//
//   - what a claim costs: its remote round trips (the git push and fetch
//     processes the runner starts, read from GIT_TRACE2) and their
//     latency, per claim and per task; and, with 8 runners racing for
//     the same tasks, claim pushes per claim won;
//   - throughput in tasks/min with 1, 2, 4 and 8 runners on turns of
//     fixed length (the agent sleeps -turn), against the ideal of
//     runners x one task per turn;
//   - the rate of ref updates the pool lands on the remote with instant
//     turns, against the rate at which plain leased pushes saturate the
//     same remote: how close the pool comes to the remote's limit.
//
// Every figure comes from this one run on this machine, runners, agents
// and remote sharing its cores. scripts/bench-pool.sh builds lazy and
// runs it.
//
// Usage: poolbench -lazy LAZY [-turn 1s] [-per 6] [-quick] [-keep]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	lazyBin = flag.String("lazy", "lazy", "lazy binary")
	turn    = flag.Duration("turn", time.Second, "how long each agent turn runs in the throughput rows")
	per     = flag.Int("per", 6, "tasks per runner in the throughput rows")
	poll    = flag.Duration("poll", 500*time.Millisecond, "lazy runner --poll")
	lease   = flag.Duration("lease", 10*time.Second, "lazy runner --lease")
	quick   = flag.Bool("quick", false, "fewer tasks and shorter windows: a smoke run")
	keep    = flag.Bool("keep", false, "keep the scratch directory")
	runners = flag.String("runners", "1,2,4,8", "the runner counts of the throughput rows")
	only    = flag.String("only", "", "run only these sections (comma-separated: claim, race, throughput, saturation)")
)

// marker names a clone's machine in the environment of every process it
// starts, so the bench can end whatever a phase left running.
const marker = "POOLBENCH_MACHINE"

func main() {
	flag.Parse()
	if *quick {
		*per = 2
	}
	work, err := os.MkdirTemp("", "lazy-poolbench-")
	check(err)
	work, err = filepath.EvalSymlinks(work)
	check(err)
	if !*keep {
		defer os.RemoveAll(work)
	}
	fmt.Printf("the runner pool on one machine (%d cores): a bare remote, a clone per runner, lazy runner --poll %s --lease %s\n\n", runtime.NumCPU(), *poll, *lease)
	for _, sec := range []struct {
		name string
		run  func(string)
	}{{"claim", claimCost}, {"race", contention}, {"throughput", throughput}, {"saturation", saturation}} {
		if *only == "" || strings.Contains(","+*only+",", ","+sec.name+",") {
			sec.run(filepath.Join(work, sec.name))
		}
	}
}

// claimCost: one runner, instant turns, every git process it starts
// traced.
func claimCost(dir string) {
	tasks := 10
	if *quick {
		tasks = 4
	}
	n := newNet(dir, 0)
	n.queue(tasks)
	res := n.run(1, true, "--max-tasks", "1")
	fmt.Printf("what a claim costs: 1 runner, %d tasks, instant turns (each git process the runner starts, from GIT_TRACE2)\n", tasks)
	claims := res.pushes["claim"]
	write := append(append(res.procs["hash-object"], res.procs["mktree"]...), res.procs["commit-tree"]...)
	fmt.Printf("  %-44s %d round trip (one atomic push, leased): median %.1f ms, max %.1f ms over %d claims\n", "a claim", 1, ms(median(durations(claims))), ms(maxOf(durations(claims))), len(claims))
	fmt.Printf("  %-44s 3 local git processes (hash-object, mktree, commit-tree): median %.1f ms each\n", "writing the claim's commit first", ms(median(durations(write))))
	fetch := median(durations(flatten(res.fetches)))
	fmt.Printf("  %-44s 2 fetches (tasks, pool) + the commit + the push: %.1f ms (medians)\n", "a round that claims, from its start", ms(2*fetch+3*median(durations(write))+median(durations(claims))))
	pushes, fetches := 0, 0
	var kinds []string
	for k, ps := range res.pushes {
		pushes += len(ps)
		kinds = append(kinds, fmt.Sprintf("%s %.1f", k, float64(len(ps))/float64(tasks)))
	}
	sort.Strings(kinds)
	for _, ps := range res.fetches {
		fetches += len(ps)
	}
	fmt.Printf("  %-44s %.1f pushes (%s), %.1f fetches (%d rounds, 2 each)\n", "round trips per task, start to stop", float64(pushes)/float64(tasks), strings.Join(kinds, ", "), float64(fetches)/float64(tasks), len(res.fetches["pool"]))
	fmt.Printf("  %-44s median %.1f ms, %.1f ms\n", "a push, a fetch (all kinds)", ms(median(durations(flatten(res.pushes)))), ms(median(durations(flatten(res.fetches)))))
	fmt.Printf("  %-44s %.2f refs per push, %.1f ref updates per task\n\n", "what lands on the remote", float64(res.updates)/float64(pushes), float64(res.updates)/float64(tasks))
	n.stop()
}

// contention: 8 runners start at once on the same queue of instant
// tasks; every claim push is traced.
func contention(dir string) {
	runners, tasks := 8, 48
	if *quick {
		tasks = 16
	}
	n := newNet(dir, 0)
	n.queue(tasks)
	res := n.run(runners, true, "--max-tasks", "2")
	won, lost := 0, 0
	for _, p := range res.pushes["claim"] {
		if p.code == 0 {
			won++
		} else {
			lost++
		}
	}
	fmt.Printf("claims under contention: %d runners started together on %d instant tasks\n", runners, tasks)
	fmt.Printf("  %-44s %d won, %d refused by the remote's compare-and-swap: %.2f pushes per claim won\n", "claim pushes", won, lost, float64(won+lost)/float64(max(won, 1)))
	fmt.Printf("  %-44s median %.1f ms, max %.1f ms\n", "a claim push", ms(median(durations(res.pushes["claim"]))), ms(maxOf(durations(res.pushes["claim"]))))
	fmt.Printf("  %-44s %d of %d tasks, %d runs (want one each)\n\n", "tasks run", res.ranTasks, tasks, res.runs)
	n.stop()
}

// throughput: 1, 2, 4 and 8 runners, one turn at a time each, on turns
// that take -turn.
func throughput(dir string) {
	fmt.Printf("throughput: turns of %s, each runner one turn at a time (--max-tasks 1), %d tasks per runner\n", *turn, *per)
	fmt.Printf("  %-8s %8s %10s %12s %10s %12s %12s %16s\n", "runners", "tasks", "time", "tasks/min", "of ideal", "vs 1 runner", "updates/s", "between turns")
	var base float64
	for _, runners := range runnerCounts() {
		tasks := runners * *per
		n := newNet(filepath.Join(dir, strconv.Itoa(runners)), *turn)
		n.queue(tasks)
		res := n.run(runners, false, "--max-tasks", "1")
		rate := float64(tasks) / res.took.Minutes()
		if runners == 1 {
			base = rate
		}
		ideal := float64(runners) * time.Minute.Seconds() / turn.Seconds()
		g := n.gaps()
		between := "-"
		if len(g) > 0 {
			between = fmt.Sprintf("%.2fs (p90 %.2fs)", median(g).Seconds(), pct(g, 90).Seconds())
		}
		fmt.Printf("  %-8d %8d %9.1fs %12.1f %9.0f%% %11.2fx %12.1f %16s%s\n", runners, tasks, res.took.Seconds(), rate, 100*rate/ideal, rate/base, float64(res.updates)/res.took.Seconds(), between, res.defect(tasks))
		n.stop()
	}
	fmt.Println()
}

// saturation: the pool with instant turns, 1 to 8 runners, against
// plain leased pushes into the same kind of remote from 1 to 16 pushers.
func saturation(dir string) {
	perRunner := 12
	if *quick {
		perRunner = 4
	}
	fmt.Printf("ref updates landing on the remote: the pool with instant turns (--max-tasks 2, %d tasks per runner)\n", perRunner)
	fmt.Printf("  %-8s %8s %10s %12s %12s\n", "runners", "tasks", "time", "tasks/min", "updates/s")
	var poolPeak float64
	for _, runners := range []int{1, 2, 4, 8} {
		tasks := runners * perRunner
		n := newNet(filepath.Join(dir, "pool", strconv.Itoa(runners)), 0)
		n.queue(tasks)
		res := n.run(runners, false, "--max-tasks", "2")
		rate := float64(res.updates) / res.took.Seconds()
		poolPeak = max(poolPeak, rate)
		fmt.Printf("  %-8d %8d %9.1fs %12.1f %12.1f%s\n", runners, tasks, res.took.Seconds(), float64(tasks)/res.took.Minutes(), rate, res.defect(tasks))
		n.stop()
	}
	window := 4 * time.Second
	if *quick {
		window = time.Second
	}
	fmt.Printf("  plain leased pushes into a bare remote (git push --atomic --force-with-lease, one ref each), %s per row:\n", window)
	var rawPeak float64
	for _, pushers := range []int{1, 2, 4, 8, 16} {
		rate := rawPushes(filepath.Join(dir, "raw", strconv.Itoa(pushers)), pushers, window)
		rawPeak = max(rawPeak, rate)
		fmt.Printf("  %-8s %8d pushers %30.1f\n", "", pushers, rate)
	}
	fmt.Printf("  the pool's peak is %.2fx the remote's saturated rate (%.1f of %.1f updates/s)\n", poolPeak/rawPeak, poolPeak, rawPeak)
}

// net is one bench's remote and clones.
type net struct {
	root, bare, agent, runs string
	turn                    time.Duration
	human                   *clone
	clones                  []*clone
}

type clone struct {
	name, dir, home string
	env             []string
}

const agentScript = `#!/bin/sh
echo "S $LAZY_TASK_ID $1 $$ $(date +%%s.%%N)" >> %[1]q
[ %[2]q = 0 ] || sleep %[2]q
echo "$1" > "bench-$LAZY_TASK_ID.txt"
git add "bench-$LAZY_TASK_ID.txt" && git commit -q -m "agent $1: $LAZY_TASK_ID" || exit 1
echo "E $LAZY_TASK_ID $1 $$ $(date +%%s.%%N)" >> %[1]q
echo '{"summary":"done"}'
`

// newNet makes a bare remote (logging every ref update, so they can be
// counted), a seed commit on main and the human's clone.
func newNet(root string, turn time.Duration) *net {
	check(os.MkdirAll(root, 0o755))
	n := &net{root: root, bare: filepath.Join(root, "remote.git"), agent: filepath.Join(root, "agent.sh"), runs: filepath.Join(root, "runs.log"), turn: turn}
	secs := strconv.FormatFloat(turn.Seconds(), 'f', -1, 64)
	check(os.WriteFile(n.agent, []byte(fmt.Sprintf(agentScript, n.runs, secs)), 0o755))
	git(root, "init", "-q", "--bare", "-b", "main", n.bare)
	git(n.bare, "config", "core.logAllRefUpdates", "always")
	seed := filepath.Join(root, "seed")
	git(root, "init", "-q", "-b", "main", seed)
	git(seed, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init")
	git(seed, "push", "-q", n.bare, "main")
	n.human = n.clone("human")
	return n
}

// clone makes a machine: a clone with its own HOME and XDG_DATA_HOME,
// lazy initialised (its own host id), running the exec agent.
func (n *net) clone(name string) *clone {
	c := &clone{name: name, dir: filepath.Join(n.root, name), home: filepath.Join(n.root, "home-"+name)}
	check(os.MkdirAll(filepath.Join(c.home, "data"), 0o755))
	git(n.root, "clone", "-q", n.bare, c.dir)
	for _, kv := range [][2]string{{"user.email", name + "@example.com"}, {"user.name", name}, {"commit.gpgsign", "false"},
		{"lazy.runner.agents", "exec"}, {"lazy.exec.command", n.agent + " " + name}} {
		git(c.dir, "config", kv[0], kv[1])
	}
	c.env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LAZY_NO_DAEMON=1", "HOME="+c.home, "XDG_DATA_HOME="+filepath.Join(c.home, "data"), marker+"="+c.home)
	c.lazy("init")
	n.clones = append(n.clones, c)
	return c
}

func (c *clone) lazy(args ...string) {
	cmd := exec.Command(*lazyBin, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "lazy %s in %s: %v\n%s", strings.Join(args, " "), c.dir, err, out)
		os.Exit(1)
	}
}

// queue creates tasks on the human's clone and pools them.
func (n *net) queue(count int) {
	var slugs []string
	for i := 0; i < count; i++ {
		slug := fmt.Sprintf("bench-%03d", i)
		n.human.lazy("create", slug)
		slugs = append(slugs, slug)
	}
	for i := 0; i < len(slugs); i += 50 {
		n.human.lazy(append([]string{"start", "--pool", "--agent", "exec"}, slugs[i:min(i+50, len(slugs))]...)...)
	}
}

// proc is one traced git process.
type proc struct {
	argv []string
	took time.Duration
	code int
}

// result is one run of the pool.
type result struct {
	took            time.Duration
	updates         int               // ref updates the remote logged
	runs, ranTasks  int               // agent runs, and the tasks they were for
	pushes, fetches map[string][]proc // by kind (traced runs only)
	procs           map[string][]proc // every traced git process, by subcommand
}

// defect says what went wrong with the runs, if anything.
func (r result) defect(tasks int) string {
	if r.runs == tasks && r.ranTasks == tasks {
		return ""
	}
	return fmt.Sprintf("   DEFECT: %d runs of %d tasks for %d queued", r.runs, r.ranTasks, tasks)
}

// run starts runners --once runners on new clones, each in a process
// group of its own, and waits until they have all stopped.
func (n *net) run(runners int, trace bool, args ...string) result {
	var machines []*clone
	for i := 0; i < runners; i++ {
		machines = append(machines, n.clone(fmt.Sprintf("r%d", i)))
	}
	before := n.updates()
	var cmds []*exec.Cmd
	began := time.Now()
	for _, m := range machines {
		cmd := exec.Command(*lazyBin, append([]string{"runner", "--once", "--poll", poll.String(), "--lease", lease.String()}, args...)...)
		cmd.Dir, cmd.Env = m.dir, m.env
		if trace {
			td := filepath.Join(n.root, "trace-"+m.name)
			check(os.MkdirAll(td, 0o755))
			cmd.Env = append(cmd.Env, "GIT_TRACE2_EVENT="+td)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		log, err := os.Create(filepath.Join(n.root, "runner-"+m.name+".log"))
		check(err)
		cmd.Stdout, cmd.Stderr = log, log
		check(cmd.Start())
		cmds = append(cmds, cmd)
	}
	failed := false
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			fmt.Fprintf(os.Stderr, "runner %s: %v (see %s)\n", machines[i].name, err, filepath.Join(n.root, "runner-"+machines[i].name+".log"))
			failed = true
		}
	}
	res := result{took: time.Since(began), updates: n.updates() - before}
	if failed {
		n.stop()
		os.Exit(1)
	}
	res.runs, res.ranTasks = n.countRuns()
	if trace {
		res.pushes, res.fetches, res.procs = map[string][]proc{}, map[string][]proc{}, map[string][]proc{}
		for _, m := range machines {
			for _, p := range readTrace(filepath.Join(n.root, "trace-"+m.name)) {
				if len(p.argv) < 2 {
					continue
				}
				sub := p.argv[1]
				res.procs[sub] = append(res.procs[sub], p)
				switch sub {
				case "push":
					res.pushes[pushKind(p.argv)] = append(res.pushes[pushKind(p.argv)], p)
				case "fetch":
					res.fetches[fetchKind(p.argv)] = append(res.fetches[fetchKind(p.argv)], p)
				}
			}
		}
	}
	return res
}

// stop ends whatever the clones left running (the turns' supervisors are
// detached from their runner).
func (n *net) stop() {
	for _, c := range n.clones {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			pids := withEnv(marker + "=" + c.home)
			if len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// updates counts the ref updates the remote has logged.
func (n *net) updates() int {
	count := 0
	_ = filepath.Walk(filepath.Join(n.bare, "logs"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			count += strings.Count(string(b), "\n")
		}
		return nil
	})
	return count
}

// countRuns reads the agent's run log: runs, and distinct tasks.
func (n *net) countRuns() (runs, tasks int) {
	seen := map[string]bool{}
	for _, e := range n.runLog() {
		if e.start {
			runs++
			seen[e.task] = true
		}
	}
	return runs, len(seen)
}

// runEvent is a line of the agent's run log: a run's start or end.
type runEvent struct {
	start         bool
	task, machine string
	at            time.Time
}

func (n *net) runLog() []runEvent {
	b, _ := os.ReadFile(n.runs)
	var out []runEvent
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "S" && f[0] != "E" {
			continue
		}
		secs, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		out = append(out, runEvent{start: f[0] == "S", task: f[1], machine: f[2], at: time.Unix(0, int64(secs*1e9))})
	}
	return out
}

// gaps is the pool's own time between turns: on each runner, from an
// agent run's end to the start of its next run (the claim, the record
// and branch pushed, the next task started; turn time excluded).
func (n *net) gaps() []time.Duration {
	last := map[string]time.Time{}
	var out []time.Duration
	ev := n.runLog()
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].at.Before(ev[j].at) })
	for _, e := range ev {
		if e.start {
			if t, ok := last[e.machine]; ok {
				out = append(out, e.at.Sub(t))
			}
			delete(last, e.machine)
			continue
		}
		last[e.machine] = e.at
	}
	return out
}

// pushKind tells the runner's pushes apart by what they update: a first
// claim (one claim ref that must not exist yet), a release or re-claim
// (one claim ref, leased on its old value), a heartbeat (the runner's
// own record with the claims it renews), or a result (a task's record).
func pushKind(argv []string) string {
	var refs []string
	firstClaim := false
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, "--force-with-lease="); ok {
			if _, old, _ := strings.Cut(v, ":"); old == "" {
				firstClaim = true
			}
			continue
		}
		if _, dst, ok := strings.Cut(a, ":refs/"); ok && !strings.HasPrefix(a, "-") {
			refs = append(refs, "refs/"+dst)
		}
	}
	has := func(prefix string) bool {
		for _, r := range refs {
			if strings.HasPrefix(r, prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case has("refs/lazy/tasks/"):
		return "result"
	case has("refs/lazy-pool/runners/"):
		return "heartbeat"
	case len(refs) == 1 && has("refs/lazy-pool/claims/") && firstClaim:
		return "claim"
	case len(refs) == 1 && has("refs/lazy-pool/claims/"):
		return "release"
	}
	return "other"
}

func fetchKind(argv []string) string {
	for _, a := range argv {
		if strings.Contains(a, "refs/lazy-pool/") {
			return "pool"
		}
	}
	return "tasks"
}

// readTrace reads a GIT_TRACE2_EVENT directory: the git processes the
// runner started itself (their children, such as the receive-pack a
// local push runs, have a parent's session id in theirs).
func readTrace(dir string) []proc {
	ents, _ := os.ReadDir(dir)
	byID := map[string]*proc{}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev struct {
				Event string   `json:"event"`
				SID   string   `json:"sid"`
				Argv  []string `json:"argv"`
				TAbs  float64  `json:"t_abs"`
				Code  int      `json:"code"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil || strings.Contains(ev.SID, "/") {
				continue
			}
			p := byID[ev.SID]
			if p == nil {
				p = &proc{code: -1}
				byID[ev.SID] = p
			}
			switch ev.Event {
			case "start":
				p.argv = ev.Argv
			case "exit":
				p.took, p.code = time.Duration(ev.TAbs*float64(time.Second)), ev.Code
			}
		}
		_ = f.Close()
	}
	var out []proc
	for _, p := range byID {
		if p.argv != nil && p.code >= 0 {
			out = append(out, *p)
		}
	}
	return out
}

// rawPushes runs pushers goroutines against a new bare remote for
// window, each updating a ref of its own with leased atomic pushes (as
// a claim is), alternating between two commits already on the remote,
// and returns the updates per second that landed.
func rawPushes(root string, pushers int, window time.Duration) float64 {
	check(os.MkdirAll(root, 0o755))
	bare, src := filepath.Join(root, "remote.git"), filepath.Join(root, "src")
	git(root, "init", "-q", "--bare", "-b", "main", bare)
	git(root, "init", "-q", "-b", "main", src)
	git(src, "remote", "add", "origin", bare)
	tree := strings.TrimSpace(gitOut(src, "", "mktree"))
	type side struct{ ref, a, b string }
	var sides []side
	for i := 0; i < pushers; i++ {
		ref := fmt.Sprintf("refs/lazy-pool/claims/raw%02d", i)
		a := strings.TrimSpace(gitOut(src, fmt.Sprintf("%s a\n", ref), "commit-tree", tree, "-F", "-"))
		b := strings.TrimSpace(gitOut(src, fmt.Sprintf("%s b\n", ref), "commit-tree", tree, "-F", "-"))
		git(src, "push", "-q", "origin", a+":"+ref, b+":"+ref+"-b")
		sides = append(sides, side{ref, a, b})
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(window)
	for _, s := range sides {
		wg.Add(1)
		go func(s side) {
			defer wg.Done()
			old, next := s.a, s.b
			for time.Now().Before(deadline) {
				cmd := exec.Command("git", "push", "--atomic", "--porcelain", "--no-verify", "--force-with-lease="+s.ref+":"+old, "origin", next+":"+s.ref)
				cmd.Dir = src
				if cmd.Run() != nil {
					fmt.Fprintf(os.Stderr, "a leased push of %s was refused: only this pusher writes it\n", s.ref)
					os.Exit(1)
				}
				done.Add(1)
				old, next = next, old
			}
		}(s)
	}
	began := time.Now()
	wg.Wait()
	return float64(done.Load()) / time.Since(began).Seconds()
}

// withEnv lists the live processes whose environment holds kv.
func withEnv(kv string) []int {
	want := kv + "\x00"
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !strings.Contains(string(env)+"\x00", want) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

func durations(ps []proc) []time.Duration {
	out := make([]time.Duration, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.took)
	}
	return out
}

func flatten(m map[string][]proc) []proc {
	var out []proc
	for _, ps := range m {
		out = append(out, ps...)
	}
	return out
}

// runnerCounts parses -runners; 1 is always measured first, the base
// of the "vs 1 runner" column.
func runnerCounts() []int {
	out := []int{1}
	for _, f := range strings.Split(*runners, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			fmt.Fprintf(os.Stderr, "-runners %q: want counts like 1,4\n", *runners)
			os.Exit(2)
		}
		if k != 1 {
			out = append(out, k)
		}
	}
	return out
}

// pct is the p-th percentile of ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := (len(s)*p + 99) / 100
	return s[max(0, min(k, len(s))-1)]
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func git(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "git %v: %v\n%s", args, err, out)
		os.Exit(1)
	}
}

func gitOut(dir, stdin string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "git %v: %v\n", args, err)
		os.Exit(1)
	}
	return string(out)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

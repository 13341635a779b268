package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
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

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// The runner pool end to end (issue 32): a bare repository stands in for
// the forge and clones of it for machines. Each clone has its own HOME
// and XDG_DATA_HOME (so its own lazy host id, worktrees and runner id)
// and a marker in its environment that every process it starts inherits
// (its runner, the supervisors, the agents), by which the tests find and
// kill a "machine" whole. The exec agent is one shell script every clone
// runs by its own lazy.exec.command, with the clone's name as its first
// argument; it logs every run to a shared file, so runs can be counted.

// poolMarker is the environment variable that names a clone's machine.
const poolMarker = "LAZY_E2E_POOL_MACHINE"

// poolNet is the remote, the clones and the agents' shared control
// directory of one test.
type poolNet struct {
	t     *testing.T
	root  string
	bare  string
	ctl   string // the run log, hold files and prompts of the agent
	agent string
	human *runner
	hosts map[string]string // host id -> clone name
	bin   string            // the lazy every clone runs ("" is lazyBin)
}

// poolAgent is the exec agent. It logs "start" and "end" lines (task,
// machine, pid, Unix nanoseconds), keeps each run's prompt, waits while
// the control directory holds a hold file for its machine, and commits
// one file in the task's worktree.
const poolAgent = `#!/bin/sh
ctl=%s
m=$1
echo "start $LAZY_TASK_ID $m $$ $(date +%%s%%N)" >> "$ctl/runs.log"
printf '%%s' "$LAZY_PROMPT" > "$ctl/prompt-$LAZY_TASK_ID-$$"
while [ -e "$ctl/hold-$m" ]; do sleep 0.05; done
echo "$m $$" >> "pool-$LAZY_TASK_ID.txt"
git add "pool-$LAZY_TASK_ID.txt" && git commit -q -m "agent $m: $LAZY_TASK_ID" || exit 1
echo "end $LAZY_TASK_ID $m $$ $(date +%%s%%N)" >> "$ctl/runs.log"
printf '{"summary":"done on %%s"}\n' "$m"
`

func newPoolNet(t *testing.T) *poolNet { t.Helper(); return newPoolNetOf(t, "") }

// newPoolNetOf is newPoolNet whose clones run the lazy binary bin.
func newPoolNetOf(t *testing.T, bin string) *poolNet {
	t.Helper()
	full(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := &poolNet{t: t, root: root, bare: filepath.Join(root, "remote.git"), ctl: filepath.Join(root, "ctl"), hosts: map[string]string{}, bin: bin}
	if err := os.Mkdir(n.ctl, 0o755); err != nil {
		t.Fatal(err)
	}
	n.agent = filepath.Join(root, "agent.sh")
	if err := os.WriteFile(n.agent, []byte(fmt.Sprintf(poolAgent, n.ctl)), 0o755); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, root, "init", "-q", "--bare", "-b", "main", n.bare)
	seed := testrepo.New(t)
	testrepo.Git(t, seed, "push", "-q", n.bare, "main")
	n.human = n.clone("human")
	return n
}

// clone makes a machine: a clone of the remote with a home of its own,
// lazy initialised there with a host id no other clone has. Whatever it
// leaves running is killed when the test ends.
func (n *poolNet) clone(name string) *runner {
	t := n.t
	t.Helper()
	home := filepath.Join(n.root, "home-"+name)
	dir := filepath.Join(n.root, name)
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, n.root, "clone", "-q", n.bare, dir)
	for _, kv := range [][2]string{{"user.email", name + "@example.com"}, {"user.name", name}, {"commit.gpgsign", "false"}} {
		testrepo.Git(t, dir, "config", kv[0], kv[1])
	}
	r := &runner{t: t, dir: dir, bin: n.bin, env: []string{"HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "data"), poolMarker + "=" + home}}
	t.Cleanup(func() { killMachine(t, home) })
	r.ok("init")
	host := r.git("config", "lazy.hostid")
	if host == "" || n.hosts[host] != "" {
		t.Fatalf("clone %s got host id %q, which clone %q has already: every machine needs its own", name, host, n.hosts[host])
	}
	n.hosts[host] = name
	return r
}

// machine makes a clone that runs the exec agent as a runner.
func (n *poolNet) machine(name string) *runner {
	n.t.Helper()
	r := n.clone(name)
	r.git("config", "lazy.runner.agents", "exec")
	r.git("config", "lazy.exec.command", n.agent+" "+name)
	return r
}

// host is the lazy host id (and runner id) of clone r.
func host(r *runner) string {
	r.t.Helper()
	return r.git("config", "lazy.hostid")
}

// machineHome is the HOME of clone r: its machine marker.
func machineHome(r *runner) string {
	for _, kv := range r.env {
		if v, ok := strings.CutPrefix(kv, poolMarker+"="); ok {
			return v
		}
	}
	r.t.Fatal("not a pool clone")
	return ""
}

// queue creates count tasks on the human's clone, marks them for the
// pool with lazy start --pool (and poolArgs) and pushes them.
func (n *poolNet) queue(count int, prefix string, poolArgs ...string) []task {
	n.t.Helper()
	var tasks []task
	for i := 0; i < count; i++ {
		tasks = append(tasks, n.human.create(fmt.Sprintf("%s-%03d", prefix, i)))
	}
	for i := 0; i < len(tasks); i += 50 {
		args := []string{"start", "--pool"}
		for _, tk := range tasks[i:min(i+50, len(tasks))] {
			args = append(args, tk.Slug)
		}
		if out := n.human.ok(append(args, poolArgs...)...); strings.Count(out, "Pooled ") != len(args)-2 {
			n.t.Fatalf("lazy start --pool: %s", out)
		}
	}
	return tasks
}

// hold makes machine name's agent wait until release.
func (n *poolNet) hold(name string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.ctl, "hold-"+name), nil, 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *poolNet) release(name string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.ctl, "hold-"+name)); err != nil {
		n.t.Fatal(err)
	}
}

// agentRun is one run of the agent, from the run log.
type agentRun struct {
	Task, Machine string
	PID           int
	Start, End    time.Time // End is zero for a run that never finished
}

// runs reads the run log: the runs by task, in the order they started.
func (n *poolNet) runs() map[string][]agentRun {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.ctl, "runs.log"))
	if err != nil && !os.IsNotExist(err) {
		n.t.Fatal(err)
	}
	out := map[string][]agentRun{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		pid, _ := strconv.Atoi(f[3])
		ns, _ := strconv.ParseInt(f[4], 10, 64)
		at := time.Unix(0, ns)
		switch f[0] {
		case "start":
			out[f[1]] = append(out[f[1]], agentRun{Task: f[1], Machine: f[2], PID: pid, Start: at})
		case "end":
			rs := out[f[1]]
			for i := range rs {
				if rs[i].PID == pid && rs[i].Machine == f[2] {
					rs[i].End = at
				}
			}
		default:
			n.t.Fatalf("run log line %q", line)
		}
	}
	return out
}

// prompt is what the agent run pid of task id was asked.
func (n *poolNet) prompt(id string, pid int) string {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.ctl, fmt.Sprintf("prompt-%s-%d", id, pid)))
	if err != nil {
		n.t.Fatal(err)
	}
	return string(b)
}

// poolClaim is claim.json as the remote holds it.
type poolClaim struct {
	Task       string    `json:"task"`
	Runner     string    `json:"runner"`
	Generation uint64    `json:"generation"`
	Expires    time.Time `json:"lease_expires"`
	ClaimedAt  time.Time `json:"claimed_at"`
	Released   bool      `json:"released"`
}

// claim reads task id's claim on the remote.
func (n *poolNet) claim(id string) (poolClaim, bool) {
	n.t.Helper()
	out, err := testrepo.GitErr(n.bare, "cat-file", "blob", "refs/lazy-pool/claims/"+id+":claim.json")
	if err != nil {
		return poolClaim{}, false
	}
	var c poolClaim
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		n.t.Fatalf("claim of %s: %v\n%s", id, err, out)
	}
	return c, true
}

// remoteTask is the part of task.json (and the session) on the remote
// the tests read.
type remoteTask struct {
	Status string `json:"status"`
	Turns  int    `json:"turns"`
	Host   string `json:"host"`
	Pool   *struct {
		Runner     string `json:"runner"`
		Generation uint64 `json:"generation"`
	} `json:"pool"`
}

// record reads task id's record on the remote.
func (n *poolNet) record(id string) remoteTask {
	n.t.Helper()
	out, err := testrepo.GitErr(n.bare, "cat-file", "blob", "refs/lazy/tasks/"+id+":task.json")
	if err != nil {
		n.t.Fatalf("the remote has no record of %s: %v", id, err)
	}
	var r remoteTask
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		n.t.Fatalf("record of %s: %v\n%s", id, err, out)
	}
	return r
}

// branchCommits lists the subjects of the commits on slug's task branch
// on the remote that main does not have.
func (n *poolNet) branchCommits(slug string) []string {
	n.t.Helper()
	out, err := testrepo.GitErr(n.bare, "log", "--format=%s", "main..refs/heads/lazy/"+slug)
	if err != nil {
		n.t.Fatalf("the remote has no branch lazy/%s: %v", slug, err)
	}
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runnerProc is a lazy runner process, in a process group of its own.
type runnerProc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
}

// startRunner starts lazy runner args on clone r.
func startRunner(r *runner, name string, args ...string) *runnerProc {
	r.t.Helper()
	t := r.t.(*testing.T)
	p := &runnerProc{t: t, name: name, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(r.lazy(), append([]string{"runner"}, args...)...)
	p.cmd.Dir, p.cmd.Env = r.dir, r.environ()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("runner %s said:\n%s", name, p.out)
		}
	})
	return p
}

// wait waits for the runner to exit on its own and requires exit 0.
func (p *runnerProc) wait(limit time.Duration) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.t.Fatalf("runner %s did not stop within %s:\n%s", p.name, limit, p.out)
	}
	if p.err != nil {
		p.t.Fatalf("runner %s: %v\n%s", p.name, p.err, p.out)
	}
	if s := p.out.String(); strings.Contains(s, "panic:") || strings.Contains(s, "DATA RACE") {
		p.t.Fatalf("runner %s crashed:\n%s", p.name, s)
	}
}

// stop asks the runner to end (SIGTERM, as a service manager does) and
// waits for it.
func (p *runnerProc) stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(60 * time.Second)
}

// waitOutput polls the runner's output until it says one of want.
func (p *runnerProc) waitOutput(want ...string) {
	p.t.Helper()
	poolWait(p.t, 60*time.Second, fmt.Sprintf("runner %s to say one of %q", p.name, want), func() bool {
		out := p.out.String()
		return slices.ContainsFunc(want, func(w string) bool { return strings.Contains(out, w) })
	})
}

// poolWait polls cond until it holds, failing after limit.
func poolWait(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// machineProcs lists the live processes whose environment carries the
// marker of the machine at home.
func machineProcs(home string) []int {
	want := []byte(poolMarker + "=" + home + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !liveProc(e.Name()) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(append(env, 0), want) {
			out = append(out, pid)
		}
	}
	return out
}

// killMachine kills every process of the machine at home, as a power
// cut would, until none is left (a dying runner may still fork).
func killMachine(t testing.TB, home string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := machineProcs(home)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of machine %s outlived SIGKILL: %v", home, pids)
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// poolView is lazy pool --json.
type poolView struct {
	Runners []struct {
		ID      string   `json:"id"`
		Agents  []string `json:"agents"`
		Stopped bool     `json:"stopped"`
	} `json:"runners"`
	Claims []poolClaim `json:"claims"`
	Wait   []struct {
		Task   string `json:"task"`
		Status string `json:"status"`
		Agent  string `json:"agent"`
		Why    string `json:"why"`
	} `json:"waiting"`
}

func pool(r *runner) poolView {
	r.t.Helper()
	var v poolView
	out := r.ok("pool", "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		r.t.Fatalf("lazy pool --json: %v\n%s", err, out)
	}
	return v
}

// checkDoneOnce holds for every task: exactly one agent run, finished;
// its record on the remote blocked with the turn recorded, under the
// claim's generation 1; its branch on the remote with exactly that
// run's one commit.
func (n *poolNet) checkDoneOnce(tasks []task) {
	n.t.Helper()
	runs := n.runs()
	if len(runs) != len(tasks) {
		n.t.Errorf("the agent ran for %d distinct tasks, want %d", len(runs), len(tasks))
	}
	total, by := 0, map[string]int{}
	for _, rs := range runs {
		total += len(rs)
		for _, r := range rs {
			by[r.Machine]++
		}
	}
	n.t.Logf("runs by machine: %v", by)
	if total != len(tasks) {
		n.t.Errorf("the agent ran %d times for %d tasks, want once each", total, len(tasks))
	}
	for _, tk := range tasks {
		rs := runs[tk.ID]
		if len(rs) != 1 || rs[0].End.IsZero() {
			n.t.Errorf("%s: runs %+v, want one that finished", tk.Slug, rs)
			continue
		}
		rec := n.record(tk.ID)
		if rec.Status != "blocked" || rec.Turns != 2 || rec.Pool == nil || rec.Pool.Generation != 1 || n.hosts[rec.Pool.Runner] != rs[0].Machine {
			n.t.Errorf("%s on the remote: %+v (pool %+v), want blocked with its two turns (the start, the agent's), by %s under generation 1", tk.Slug, rec, rec.Pool, rs[0].Machine)
		}
		if c, ok := n.claim(tk.ID); !ok || c.Generation != 1 || n.hosts[c.Runner] != rs[0].Machine {
			n.t.Errorf("%s: claim %+v (present %v), want generation 1 by the runner on %s", tk.Slug, c, ok, rs[0].Machine)
		}
		want := []string{"agent " + rs[0].Machine + ": " + tk.ID}
		if got := n.branchCommits(tk.Slug); !slices.Equal(got, want) {
			n.t.Errorf("%s: branch commits on the remote %q, want %q", tk.Slug, got, want)
		}
	}
}

// checkHumanSees pulls on the human's clone and requires every task
// blocked there and no live claim in lazy pool.
func (n *poolNet) checkHumanSees(tasks []task) {
	n.t.Helper()
	n.human.ok("pull")
	seen := map[string]task{}
	for _, tk := range n.human.list() {
		seen[tk.ID] = tk
	}
	for _, tk := range tasks {
		if s := seen[tk.ID]; s.Status != "blocked" || s.Turns != 2 {
			n.t.Errorf("after lazy pull the human sees %s %s with %d turns, want blocked with 2", tk.Slug, s.Status, s.Turns)
		}
	}
	if v := pool(n.human); len(v.Claims) != 0 {
		n.t.Errorf("lazy pool shows live claims after every runner stopped: %+v", v.Claims)
	}
}

// runPool runs runners --once runners over queued tasks until they all
// stop, and returns how long that took and the CPU time the runners and
// the git processes they waited for used (the turns' supervisors and
// agents, detached, are not in it).
func (n *poolNet) runPool(runners int, args ...string) (took, cpu time.Duration) {
	n.t.Helper()
	var machines []*runner
	for i := 0; i < runners; i++ {
		machines = append(machines, n.machine(fmt.Sprintf("m%d", i)))
	}
	var procs []*runnerProc
	began := time.Now()
	for i, m := range machines {
		procs = append(procs, startRunner(m, fmt.Sprintf("m%d", i), append([]string{"--once"}, args...)...))
	}
	// The bound only catches a runner that never stops: eight runners
	// and a hundred tasks on two cores beside the race-built packages of
	// the full suite took just over three minutes in CI, still claiming.
	for _, p := range procs {
		p.wait(10 * time.Minute)
		cpu += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	}
	return time.Since(began), cpu
}

func TestPoolFourRunnersRunFortyTasksExactlyOnce(t *testing.T) {
	n := newPoolNet(t)
	tasks := n.queue(40, "four", "--agent", "exec")
	took, cpu := n.runPool(4, "--lease", "10s", "--poll", "500ms", "--max-tasks", "2")
	t.Logf("4 runners ran 40 tasks in %s (runners' CPU %s)", took.Round(time.Millisecond), cpu.Round(time.Millisecond))
	n.checkDoneOnce(tasks)
	n.checkHumanSees(tasks)
}

func TestPoolEightRunnersRaceForAHundredTasksWithoutADoubleClaim(t *testing.T) {
	full(t)
	// The race detector makes every lazy process several times slower,
	// and this test runs thousands of them on two cores: the races it
	// looks for are on the remote, between runners, not in one process
	// (the other pool tests run the race build).
	plain, err := plainLazy()
	if err != nil {
		t.Fatal(err)
	}
	n := newPoolNetOf(t, plain)
	began := time.Now()
	tasks := n.queue(100, "race")
	queued := time.Since(began)
	// A 20-second lease: the races this test looks for are between
	// runners on the remote, not leases running out. Eight runners with
	// two turns each on two cores beside the full suite's race-built
	// packages can take several seconds for one step of a round (a pull
	// of a hundred records, a turn's start), and a lease that runs out is
	// by design taken over, running the agent again
	// (TestPoolKilledRunnersTaskIsTakenOverAfterItsLease holds that).
	took, cpu := n.runPool(8, "--lease", "20s", "--poll", "500ms", "--max-tasks", "2")
	t.Logf("queueing 100 tasks took %s; 8 runners ran them in %s (runners' CPU %s)", queued.Round(time.Millisecond), took.Round(time.Millisecond), cpu.Round(time.Millisecond))
	n.checkDoneOnce(tasks)
	n.checkHumanSees(tasks)
}

func TestPoolKilledRunnersTaskIsTakenOverAfterItsLease(t *testing.T) {
	n := newPoolNet(t)
	a, b := n.machine("a"), n.machine("b")
	tk := n.queue(1, "killed")[0]
	n.hold("a")
	pa := startRunner(a, "a", "--lease", "3s", "--poll", "1s")
	poolWait(t, 60*time.Second, "a's agent to start", func() bool { return len(n.runs()[tk.ID]) == 1 })
	poolWait(t, 30*time.Second, "a's record of the running turn on the remote", func() bool { return n.record(tk.ID).Status == "working" })
	killed := n.runs()[tk.ID][0]

	// The machine dies: its runner, supervisor and agent at once.
	_ = syscall.Kill(-pa.cmd.Process.Pid, syscall.SIGKILL)
	killMachine(t, machineHome(a))
	diedAt := time.Now()
	if !gone(killed.PID) {
		t.Fatalf("a's agent %d outlived its machine", killed.PID)
	}
	last, ok := n.claim(tk.ID)
	if !ok || last.Generation != 1 || last.Runner != host(a) {
		t.Fatalf("a's claim before the take-over: %+v", last)
	}

	pb := startRunner(b, "b", "--lease", "3s", "--poll", "1s")
	pb.waitOutput("took " + tk.Slug + " over")
	poolWait(t, 60*time.Second, "b's finished turn on the remote", func() bool {
		rec := n.record(tk.ID)
		return rec.Status == "blocked" && rec.Pool != nil && rec.Pool.Runner == host(b)
	})
	pb.stop()

	c, _ := n.claim(tk.ID)
	if c.Generation != 2 || c.Runner != host(b) {
		t.Fatalf("claim after the take-over: %+v, want generation 2 by %s", c, host(b))
	}
	if c.ClaimedAt.Before(last.Expires) {
		t.Fatalf("b claimed at %s, before a's lease ran out at %s", c.ClaimedAt, last.Expires)
	}
	runs := n.runs()[tk.ID]
	if len(runs) != 2 || runs[0].Machine != "a" || !runs[0].End.IsZero() || runs[1].Machine != "b" || runs[1].End.IsZero() {
		t.Fatalf("runs %+v: want a's, never finished, then b's, finished", runs)
	}
	// No two live runs: b's began after a's machine was gone.
	if !runs[1].Start.After(diedAt) {
		t.Fatalf("b's run began at %s, before a's machine died at %s", runs[1].Start, diedAt)
	}
	// The work is b's, committed once; b ran its own command, though the
	// record it took over named a's.
	if got := n.branchCommits(tk.Slug); !slices.Equal(got, []string{"agent b: " + tk.ID}) {
		t.Fatalf("branch commits on the remote: %q", got)
	}
	n.human.ok("pull")
	s := n.human.showFull(tk.Slug)
	tookOver := false
	for _, h := range s.History {
		tookOver = tookOver || h.Op == "take-over" && h.Host == host(b)
	}
	if s.Status != "blocked" || !tookOver {
		t.Fatalf("the human sees %s with history %+v, want blocked after b's take-over", s.Status, s.History)
	}
}

// cutOff runs a task on runner a until a is cut off from the remote
// (its URL points at nothing) while its agent still works, and runner b
// takes the task over once a's lease ran out and finishes its turn. It
// returns with a's agent still waiting; stale is a mirror of the remote
// as a last saw it, before b took the task.
func cutOff(t *testing.T) (n *poolNet, a, b *runner, pa, pb *runnerProc, tk task, stale string) {
	n = newPoolNet(t)
	a, b = n.machine("a"), n.machine("b")
	tk = n.queue(1, "cutoff")[0]
	n.hold("a")
	pa = startRunner(a, "a", "--lease", "3s", "--poll", "1s")
	poolWait(t, 60*time.Second, "a's agent to start", func() bool { return len(n.runs()[tk.ID]) == 1 })
	poolWait(t, 30*time.Second, "a's record of the running turn on the remote", func() bool { return n.record(tk.ID).Status == "working" })

	said := len(pa.out.String())
	a.git("remote", "set-url", "origin", "/nonexistent")
	// Once a round has failed since, every push a started before is done
	// (a round's pushes come after its fetch, and it says so at its end).
	poolWait(t, 30*time.Second, "a round of a to fail", func() bool { return strings.Contains(pa.out.String()[said:], "round failed") })
	stale = filepath.Join(n.root, "stale.git")
	testrepo.Git(t, n.root, "clone", "-q", "--mirror", n.bare, stale)
	if c, _ := n.claim(tk.ID); c.Generation != 1 || c.Runner != host(a) {
		t.Fatalf("a's claim when it was cut off: %+v", c)
	}

	pb = startRunner(b, "b", "--lease", "3s", "--poll", "1s")
	pb.waitOutput("took " + tk.Slug + " over")
	poolWait(t, 60*time.Second, "b's finished turn on the remote", func() bool {
		rec := n.record(tk.ID)
		return rec.Status == "blocked" && rec.Pool != nil && rec.Pool.Runner == host(b)
	})
	return n, a, b, pa, pb, tk, stale
}

// checkBsResult requires the remote to hold b's result and claim, and
// nothing a wrote after tip (the record when b's turn had landed).
func checkBsResult(t *testing.T, n *poolNet, a, b *runner, tk task, tip string) {
	t.Helper()
	if got := n.branchCommits(tk.Slug); !slices.Equal(got, []string{"agent b: " + tk.ID}) {
		t.Fatalf("branch commits on the remote: %q, want only b's", got)
	}
	c, _ := n.claim(tk.ID)
	if c.Generation != 2 || c.Runner != host(b) {
		t.Fatalf("claim: %+v, want generation 2 by %s", c, host(b))
	}
	rec := n.record(tk.ID)
	if rec.Status != "blocked" || rec.Host != host(b) || rec.Pool.Runner != host(b) || rec.Pool.Generation != 2 {
		t.Fatalf("record on the remote: %+v (pool %+v), want b's, generation 2", rec, rec.Pool)
	}
	if log := testrepo.Git(t, n.bare, "log", "--format=%ae %s", tip+"..refs/lazy/tasks/"+tk.ID); strings.Contains(log, host(a)) {
		t.Fatalf("a wrote to the record after b's result:\n%s", log)
	}
	runs := n.runs()[tk.ID]
	if len(runs) != 2 || runs[0].Machine != "a" || runs[0].End.IsZero() || runs[1].Machine != "b" || runs[1].End.IsZero() {
		t.Fatalf("runs %+v: want a's and b's, both finished", runs)
	}
}

func TestPoolCutOffRunnerCannotPushAStaleResult(t *testing.T) {
	n, a, b, pa, pb, tk, _ := cutOff(t)
	tip := testrepo.Git(t, n.bare, "rev-parse", "refs/lazy/tasks/"+tk.ID)
	// a's agent finishes its turn while a is cut off; then a gets the
	// remote back, sees the claim moved, and drops the task unpushed.
	n.release("a")
	poolWait(t, 30*time.Second, "a's agent to finish", func() bool { return !n.runs()[tk.ID][0].End.IsZero() })
	a.git("remote", "set-url", "origin", n.bare)
	pa.waitOutput("lost "+tk.Slug, "lost "+tk.ID)
	pa.stop()
	pb.stop()
	checkBsResult(t, n, a, b, tk, tip)
}

// A runner whose view of the remote is stale (it fetches from a mirror
// that lags, and pushes to the remote) believes it still holds the task:
// its result push, fenced by its claim, is refused whole.
func TestPoolStaleRunnersResultPushIsRefused(t *testing.T) {
	n, a, b, pa, pb, tk, stale := cutOff(t)
	tip := testrepo.Git(t, n.bare, "rev-parse", "refs/lazy/tasks/"+tk.ID)
	a.git("remote", "set-url", "origin", stale)
	a.git("remote", "set-url", "--push", "origin", n.bare)
	n.release("a")
	// Whichever of a's pushes meets the moved claim first (the result
	// pushed as the turn parks, the round's, or a lease renewal) drops
	// the task and says why.
	pa.waitOutput("lost "+tk.Slug, "lost "+tk.ID)
	if out := pa.out.String(); !strings.Contains(out, "the claim changed on the remote") && !strings.Contains(out, "holds it (generation 2)") {
		t.Fatalf("runner a lost %s without saying the claim moved:\n%s", tk.Slug, out)
	}
	a.git("remote", "set-url", "origin", n.bare)
	pa.stop()
	pb.stop()
	checkBsResult(t, n, a, b, tk, tip)
}

func TestPoolFeedbackFromAnotherCloneReachesTheRunner(t *testing.T) {
	n := newPoolNet(t)
	m := n.machine("r")
	tk := n.queue(1, "feedback")[0]
	p := startRunner(m, "r", "--lease", "6s", "--poll", "500ms")
	poolWait(t, 60*time.Second, "the first turn on the remote", func() bool {
		rec := n.record(tk.ID)
		return rec.Status == "blocked"
	})
	n.human.ok("pull")
	if out := n.human.ok("unblock", tk.Slug, "-m", "more"); !strings.Contains(out, "Left the feedback for runner "+host(m)) {
		t.Fatalf("unblock of a pooled task: %s", out)
	}
	poolWait(t, 60*time.Second, "the second run", func() bool {
		rs := n.runs()[tk.ID]
		return len(rs) == 2 && !rs[1].End.IsZero()
	})
	rs := n.runs()[tk.ID]
	if got := n.prompt(tk.ID, rs[1].PID); !strings.Contains(got, "more") {
		t.Fatalf("the second run's prompt has no feedback: %q", got)
	}
	poolWait(t, 60*time.Second, "the second turn on the remote", func() bool {
		rec := n.record(tk.ID)
		return rec.Status == "blocked" && len(n.branchCommits(tk.Slug)) == 2
	})
	p.stop()
	n.human.ok("pull")
	s := n.human.showFull(tk.Slug)
	var agentTurns int
	var delivered bool
	for _, tu := range s.TurnList {
		if tu.Role == "agent" {
			agentTurns++
		}
		if tu.Role == "human" && tu.Content == "more" && tu.FeedbackDelivery != "pending" {
			delivered = true
		}
	}
	if s.Status != "blocked" || agentTurns != 2 || !delivered {
		t.Fatalf("the human sees %s with turns %+v: want blocked after a second agent turn that took the feedback", s.Status, s.TurnList)
	}
}

func TestPoolRunnerRunsOnlyWhatItsOwnConfigAllows(t *testing.T) {
	n := newPoolNet(t)
	m := n.machine("r")
	wants := n.queue(1, "claude", "--agent", "claude")[0]
	fits := n.queue(1, "exec", "--agent", "exec")[0]
	// The human's own exec command is its own: it never travels.
	n.human.git("config", "lazy.exec.command", n.agent+" human")
	p := startRunner(m, "r", "--lease", "6s", "--poll", "500ms")
	poolWait(t, 60*time.Second, "the exec task's turn on the remote", func() bool { return n.record(fits.ID).Status == "blocked" })

	v := pool(n.human)
	var why string
	for _, w := range v.Wait {
		if w.Task == wants.ID {
			why = w.Why
		}
	}
	if !strings.Contains(why, "agent") {
		t.Fatalf("lazy pool does not say why %s waits: %+v", wants.Slug, v.Wait)
	}
	p.stop()
	if _, ok := n.claim(wants.ID); ok {
		t.Fatalf("the runner claimed %s, which asks for an agent its config does not allow", wants.Slug)
	}
	if rec := n.record(wants.ID); rec.Status != "backlog" {
		t.Fatalf("%s is %s", wants.Slug, rec.Status)
	}
	runs := n.runs()
	if len(runs[wants.ID]) != 0 || len(runs[fits.ID]) != 1 || runs[fits.ID][0].Machine != "r" {
		t.Fatalf("runs %+v: want one of %s, by the runner's own command", runs, fits.Slug)
	}
}

// Two clones of one repository on one machine share its task ids: a
// turn started in one must not end an agent of the same task in the
// other (a runner taking over a task whose old holder still runs it, or
// two runners of a pool on one host).
func TestPoolClonesOnOneMachineLeaveEachOthersAgentsAlone(t *testing.T) {
	n := newPoolNet(t)
	a, b := n.machine("a"), n.machine("b")
	tk := a.create("shared")
	n.hold("a")
	a.ok("start", tk.Slug, "--agent", "exec")
	poolWait(t, 30*time.Second, "a's agent to start", func() bool { return len(n.runs()[tk.ID]) == 1 })
	a.ok("push")
	b.ok("pull")
	b.ok("start", tk.Slug, "--take-over", "--agent", "exec")
	b.ok("resume", tk.Slug)
	poolWait(t, 30*time.Second, "b's agent to finish", func() bool {
		return slices.ContainsFunc(n.runs()[tk.ID], func(r agentRun) bool { return r.Machine == "b" && !r.End.IsZero() })
	})
	runs := n.runs()[tk.ID]
	if len(runs) != 2 || runs[0].Machine != "a" || gone(runs[0].PID) {
		t.Fatalf("b's turn ended a's agent (runs %+v; a's first agent alive: %v)", runs, !gone(runs[0].PID))
	}
	n.release("a")
	poolWait(t, 30*time.Second, "a's agent to finish", func() bool { return !n.runs()[tk.ID][0].End.IsZero() })
	if got := n.runs()[tk.ID]; len(got) != 2 {
		t.Fatalf("runs %+v: a's agent was run again", got)
	}
}

// A --once runner that cannot run what is left (here: lazy.exec.command
// unset on its machine) lets it go and stops, rather than claiming and
// letting it go again every lease until its CI job times out; a runner
// that can run it takes it then.
func TestPoolOnceRunnerStopsWhenItCannotRunWhatIsLeft(t *testing.T) {
	n := newPoolNet(t)
	broken := n.clone("broken")
	broken.git("config", "lazy.runner.agents", "exec")
	tk := n.queue(1, "left", "--agent", "exec")[0]
	p := startRunner(broken, "broken", "--once", "--lease", "3s", "--poll", "1s")
	p.wait(60 * time.Second)
	if out := p.out.String(); !strings.Contains(out, "could not run "+tk.Slug) {
		t.Fatalf("the runner did not say why it let %s go:\n%s", tk.Slug, out)
	}
	if c, ok := n.claim(tk.ID); !ok || !c.Released || c.Generation != 1 {
		t.Fatalf("claim after the broken runner: %+v (present %v), want generation 1, released", c, ok)
	}
	if rec := n.record(tk.ID); rec.Status != "backlog" || len(n.runs()) != 0 {
		t.Fatalf("%s is %s after runs %+v", tk.Slug, rec.Status, n.runs())
	}
	startRunner(n.machine("good"), "good", "--once", "--lease", "3s", "--poll", "1s").wait(60 * time.Second)
	if rs := n.runs()[tk.ID]; len(rs) != 1 || rs[0].Machine != "good" || n.record(tk.ID).Status != "blocked" {
		t.Fatalf("runs %+v: the runner that can run %s did not", rs, tk.Slug)
	}
}

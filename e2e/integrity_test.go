package e2e

import (
	"bytes"
	"encoding/json"
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

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/session"
)

// Integrity tests: one supervisor per task whatever runs concurrently,
// and no agent process lazy does not account for.

// liveProc reports whether pid runs (a zombie does not).
func liveProc(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// turnProcs lists the live processes of task id's turns: supervisors (by
// argv) and agents (by the turn marker in their environment).
func turnProcs(id string) (supervisors, agents []int) {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !liveProc(e.Name()) {
			continue
		}
		// The parent is read before the command line, in the same look: a
		// supervisor's child between fork and exec shows the supervisor's
		// argv, and read later it may have exited, leaving no parent to
		// tell it by.
		pp := ppid(pid)
		if pp == 0 {
			continue // gone already
		}
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(cmd, []byte("supervise\x00"+id)) && !bytes.HasPrefix(cmd, []byte("/bin/sh")) && !bytes.Contains(cmd, []byte("sh\x00-c")) {
			supervisors = append(supervisors, pid)
			parent[pid] = pp
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				if string(kv) == "LAZY_TURN_TASK="+id {
					agents = append(agents, pid)
					break
				}
			}
		}
	}
	// A supervisor's child between fork and exec still shows its argv.
	var own []int
	for _, pid := range supervisors {
		if !slices.Contains(supervisors, parent[pid]) {
			own = append(own, pid)
		}
	}
	return own, agents
}

func ppid(pid int) int {
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// agentLeaders are the agents that lead their own process group: one per
// running agent, however many helpers it started.
func agentLeaders(agents []int) []int {
	var out []int
	for _, pid := range agents {
		if g, err := syscall.Getpgid(pid); err == nil && g == pid {
			out = append(out, pid)
		}
	}
	return out
}

func TestConcurrentReconcilersKeepOneSupervisorPerTask(t *testing.T) {
	r := crashRepo(t)
	counter := t.TempDir() + "/runs"
	r = r.with(script(t, "ignore-hup", "attempt "+counter, "print working", "hang"))
	tk := r.create("one supervisor only")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	waitRun(t, counter, "1")
	crash(t, sup) // its agent lives on, orphaned, in the worktree

	// Many reconcilers (and a human's resume) race to judge the dead turn.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var mu sync.Mutex
	worst := ""
	sample := func() {
		sups, agents := turnProcs(tk.ID)
		if len(sups) > 1 || len(agentLeaders(agents)) > 1 {
			mu.Lock()
			worst = "supervisors " + strconv.Itoa(len(sups)) + ", agents " + strconv.Itoa(len(agentLeaders(agents)))
			for _, p := range sups {
				c, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
				s, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
				worst += "\n" + strconv.Itoa(p) + ": " + strings.ReplaceAll(string(c), "\x00", " ") + " | " + string(s)
			}
			mu.Unlock()
		}
	}
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				args := []string{"list"}
				if i == 0 {
					args = []string{"resume", tk.Slug}
				}
				cmd := exec.Command(lazyBin, args...)
				cmd.Dir, cmd.Env = r.dir, r.environ()
				_ = cmd.Run()
				sample()
			}
		}(i)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(counter)
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatal("the task was never resumed")
		}
		sample()
		time.Sleep(20 * time.Millisecond)
	}
	// Keep the reconcilers racing a little past the resume.
	time.Sleep(500 * time.Millisecond) // a load window, not a wait for a condition
	close(stop)
	wg.Wait()
	if worst != "" {
		t.Fatalf("more than one turn ran at once: %s", worst)
	}
	s := r.showFull(tk.Slug)
	if s.Status != "working" {
		t.Fatalf("status %s after one crash and a resume", s.Status)
	}
	if b, _ := os.ReadFile(counter); strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("the agent ran %s times for one crash", strings.TrimSpace(string(b)))
	}
	if n := s.Session.ConsecutiveInterruptions; n > 1 {
		t.Fatalf("one crash counted %d interruptions toward the circuit breaker", n)
	}
	sups, agents := turnProcs(tk.ID)
	if len(sups) != 1 || len(agentLeaders(agents)) != 1 {
		t.Fatalf("after the race: supervisors %v, agents %v", sups, agents)
	}
	r.ok("stop", tk.Slug)
	if sups, agents := turnProcs(tk.ID); len(sups)+len(agents) != 0 {
		t.Fatalf("stop left supervisors %v, agents %v", sups, agents)
	}
}

func TestStopEndsAnAgentItsDeadSupervisorLeft(t *testing.T) {
	r := newRepo(t) // the 30 s start grace: nothing interrupts the task meanwhile
	counter := t.TempDir() + "/runs"
	r = r.with(script(t, "ignore-hup", "attempt "+counter, "print working", "hang"))
	tk := r.create("orphaned agent")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	waitRun(t, counter, "1") // SIGHUP is ignored from here on
	crash(t, sup)
	if _, agents := turnProcs(tk.ID); len(agents) == 0 {
		t.Fatal("the agent died with its supervisor; the test needs it orphaned")
	}
	r.ok("stop", tk.Slug)
	if sups, agents := turnProcs(tk.ID); len(sups)+len(agents) != 0 {
		t.Fatalf("stop left supervisors %v, agents %v", sups, agents)
	}
	if st := r.showFull(tk.Slug).Status; st != "blocked" {
		t.Fatalf("status %s", st)
	}
}

func TestDoctorEndsAStrayAgentOfAParkedTask(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "print done"))
	tk := r.create("parked with a stray")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	stray := exec.Command("sleep", "300")
	stray.Env = append(os.Environ(), "LAZY_TURN_TASK="+tk.ID)
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stray.Process.Kill(); _ = stray.Wait() }()
	var report struct {
		Findings []struct {
			Kind string `json:"kind"`
		} `json:"findings"`
	}
	out := r.run(nil, "doctor", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out.Stdout), &report); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	found := false
	for _, f := range report.Findings {
		found = found || f.Kind == "stray-turn"
	}
	if !found {
		t.Fatalf("doctor did not report the stray agent: %s", out.Stdout)
	}
	r.run(nil, "doctor")
	done := make(chan error, 1)
	go func() { done <- stray.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("doctor did not end the stray agent")
	}
	if out := r.run(nil, "doctor"); out.Code != 0 {
		t.Fatalf("doctor after its repair: %s", out)
	}
}

func TestParallelAcceptsIntoOneBranchAreSerialized(t *testing.T) {
	r := newRepo(t)
	const n = 5
	var tasks []task
	for i := 0; i < n; i++ {
		name := "par" + strconv.Itoa(i)
		tasks = append(tasks, workedTask(t, r, name, name+".txt from "+name))
	}
	// The user has work in progress in the destination throughout.
	if err := os.WriteFile(r.dir+"/wip.txt", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]string, n)
	for i, tk := range tasks {
		wg.Add(1)
		go func(i int, slug string) {
			defer wg.Done()
			cmd := exec.Command(lazyBin, "accept", slug)
			cmd.Dir, cmd.Env = r.dir, r.environ()
			out, err := cmd.CombinedOutput()
			if err != nil {
				results[i] = slug + ": " + err.Error() + "\n" + string(out)
			}
		}(i, tk.Slug)
	}
	wg.Wait()
	for _, res := range results {
		if res != "" {
			t.Errorf("a parallel accept failed: %s", res)
		}
	}
	// Every squash commit holds exactly its own task's file.
	for _, tk := range tasks {
		sha := strings.TrimSpace(r.git("log", "--format=%H", "--fixed-strings", "--grep=Lazy-Task: "+tk.ID, "main"))
		if sha == "" || strings.Contains(sha, "\n") {
			t.Fatalf("task %s has squash commits %q on main", tk.Slug, sha)
		}
		files := strings.Fields(r.git("show", "--name-only", "--format=", sha))
		if len(files) != 1 || files[0] != tk.Slug+".txt" {
			t.Errorf("the squash of %s holds %v", tk.Slug, files)
		}
	}
	if b, err := os.ReadFile(r.dir + "/wip.txt"); err != nil || string(b) != "mine\n" {
		t.Fatalf("the user's work in progress: %q %v", b, err)
	}
	if st := r.git("stash", "list"); st != "" {
		t.Fatalf("stashes left: %q", st)
	}
}

func TestDoctorReleasesASlugAKilledCreateReserved(t *testing.T) {
	r := newRepo(t)
	// What a create killed between its two ref writes leaves: a slug
	// reservation naming a task that was never written.
	hashBlob := func(content string) string {
		c := exec.Command("git", "-C", r.dir, "hash-object", "-w", "--stdin")
		c.Stdin = strings.NewReader(content)
		out, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	blob := hashBlob("0123456789abcdef\n")
	r.git("update-ref", "refs/lazy/slugs/half-created", blob)
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(r.dir+"/.git/refs/lazy/slugs/half-created", old, old); err != nil {
		t.Fatal(err)
	}
	// A fresh reservation may be a create in flight: left alone.
	fresh := hashBlob("fedcba9876543210\n")
	r.git("update-ref", "refs/lazy/slugs/in-flight", fresh)
	res := r.run(nil, "doctor", "--dry-run")
	if res.Code != 1 || !strings.Contains(res.Stdout+res.Stderr, "half-created") || strings.Contains(res.Stdout+res.Stderr, "in-flight") {
		t.Fatalf("doctor --dry-run: %s", res)
	}
	r.run(nil, "doctor")
	if out, _ := exec.Command("git", "-C", r.dir, "show-ref", "refs/lazy/slugs/half-created").Output(); len(out) != 0 {
		t.Fatalf("the orphaned reservation is still there: %s", out)
	}
	tk := r.create("half created", "--slug", "half-created")
	if tk.Slug != "half-created" {
		t.Fatalf("the released slug was not free again: %s", tk.Slug)
	}
}

// TestDoctorIndexesAPackOverlappingRepacksOrphaned leaves what two git
// repacks that produced the same pack at once leave (a pack whose .idx is
// gone, its objects' loose copies already pruned): every task in it reads
// as corrupt until doctor rebuilds the index with git index-pack.
func TestDoctorIndexesAPackOverlappingRepacksOrphaned(t *testing.T) {
	r := newRepo(t)
	a := r.create("packed one")
	b := r.create("packed two")
	r.git("gc", "-q", "--prune=now")
	idxs, _ := filepath.Glob(filepath.Join(r.dir, ".git", "objects", "pack", "pack-*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("want one pack after gc, found %v", idxs)
	}
	if err := os.Remove(idxs[0]); err != nil {
		t.Fatal(err)
	}
	pack := strings.TrimSuffix(idxs[0], ".idx") + ".pack"
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(pack, old, old); err != nil {
		t.Fatal(err)
	}
	res := r.run(nil, "doctor", "--dry-run", "--json")
	if res.Code != 1 || !strings.Contains(res.Stdout, `"kind": "orphaned-pack"`) || !strings.Contains(res.Stdout, "would index it") {
		t.Fatalf("doctor --dry-run: %s", res)
	}
	if _, err := os.Stat(idxs[0]); err == nil {
		t.Fatal("a dry run wrote the index")
	}
	res = r.run(nil, "doctor", "--json")
	if !strings.Contains(res.Stdout, "indexed it") {
		t.Fatalf("doctor: %s", res)
	}
	r.git("fsck", "--no-dangling")
	for _, tk := range []task{a, b} {
		if got := r.show(tk.ID); got.Title != tk.Title {
			t.Fatalf("task %s after the repair: %+v", tk.ID, got)
		}
	}
	if res := r.run(nil, "doctor", "--dry-run"); res.Code != 0 {
		t.Fatalf("doctor after the repair: %s", res)
	}
}

// processesIn lists the live processes whose working directory is dir or
// below it.
func processesIn(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || !liveProc(e.Name()) {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		if within(strings.TrimSuffix(cwd, " (deleted)"), dir) {
			b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+" "+strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")+" in "+cwd)
		}
	}
	return out
}

// gateScratchRoot is where the gate's scratch worktrees of the
// repository at dir live: beside its task worktrees, in a directory of
// that repository's own (other tests' repositories run at the same time).
func gateScratchRoot(t testing.TB, dir string) string {
	t.Helper()
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := session.DefaultWorktreeRoot(repo)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

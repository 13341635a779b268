// Command turnbench measures agent turns: the time from `lazy start` to
// the agent process running, supervisor RSS, and daemon CPU while N turns
// of the fake agent run at once. scripts/bench-turns.sh builds and runs it.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	lazyBin = flag.String("lazy", "lazy", "lazy binary")
	fake    = flag.String("fake", "fakeagent", "fake agent binary")
	n       = flag.Int("n", 20, "concurrent turns")
	hold    = flag.Duration("hold", 15*time.Second, "how long each agent runs")
	sandbox = flag.Bool("sandbox", false, "run every turn under bubblewrap (lazy.sandbox on)")
	profile = flag.Int("profile", 5, "starts traced with strace (execve only) to say where the time goes; 0: none")
)

func main() {
	flag.Parse()
	work, err := os.MkdirTemp("", "lazy-turnbench-")
	check(err)
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "repo")
	check(os.MkdirAll(repo, 0o755))
	git(repo, "init", "-q", "-b", "main")
	git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init")
	script := filepath.Join(work, "script")
	check(os.WriteFile(script, []byte(fmt.Sprintf("argv started.json\nsleep %s\nprint done\n", *hold)), 0o644))
	env := append(os.Environ(), "FAKE_AGENT_SCRIPT="+script)
	lazy(repo, env, "init")
	// The worktrees go where the bench looks for the agent's marker.
	wts := filepath.Join(work, "worktrees")
	git(repo, "config", "lazy.worktreeDir", wts)
	mode := "unsandboxed"
	if *sandbox {
		git(repo, "config", "lazy.sandbox", "on")
		// The script lives outside the worktree, in what the sandbox
		// replaces with a private /tmp when the bench runs there.
		git(repo, "config", "--add", "lazy.sandbox.expose", script)
		mode = "sandboxed (bubblewrap)"
	}
	lazy(repo, env, "daemon", "--ensure")
	var info struct {
		PID int `json:"pid"`
	}
	check(json.Unmarshal([]byte(lazy(repo, env, "daemon", "--status")), &info))

	var latencies []time.Duration
	for i := 0; i < *n; i++ {
		slug := fmt.Sprintf("turn-%d", i)
		lazy(repo, env, "create", slug)
		began := time.Now()
		lazy(repo, env, "start", slug, "--command", *fake)
		marker := filepath.Join(wts, slug, "started.json")
		for {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Since(began) > 30*time.Second {
				fmt.Fprintln(os.Stderr, "agent never started for", slug)
				os.Exit(1)
			}
			time.Sleep(time.Millisecond)
		}
		latencies = append(latencies, time.Since(began))
	}
	sort.Slice(latencies, func(a, b int) bool { return latencies[a] < latencies[b] })
	// The floor in the same run: what git alone takes to make a branch
	// and its worktree, the one step of a start lazy cannot skip.
	var raw []time.Duration
	for i := 0; i < 9; i++ {
		began := time.Now()
		git(repo, "worktree", "add", "--quiet", "-b", fmt.Sprintf("raw-%d", i), filepath.Join(work, fmt.Sprintf("raw-%d", i)), "HEAD")
		raw = append(raw, time.Since(began))
	}
	sort.Slice(raw, func(a, b int) bool { return raw[a] < raw[b] })
	phases := profileStarts(repo, env, wts, *profile)

	// With all turns running: supervisor RSS and daemon CPU over a window.
	byTask := supervisors(repo)
	var sups, rss []int
	doubled := 0
	for _, pids := range byTask {
		if len(pids) > 1 {
			doubled++
		}
		for _, pid := range pids {
			sups = append(sups, pid)
			if kb := rssKB(pid); kb > 0 {
				rss = append(rss, kb)
			}
		}
	}
	sort.Ints(rss)
	window := 5 * time.Second
	c0 := cpuTicks(info.PID)
	time.Sleep(window)
	c1 := cpuTicks(info.PID)
	daemonRSS := rssKB(info.PID)

	fmt.Printf("%d concurrent turns of the fake agent, %s\n", *n, mode)
	fmt.Printf("  lazy start -> agent running: median %.1f ms, max %.1f ms (includes the lazy start process)\n", ms(latencies[len(latencies)/2]), ms(latencies[len(latencies)-1]))
	fmt.Printf("  git worktree add -b alone: median %.1f ms; lazy start -> agent running is %.2fx that\n", ms(raw[len(raw)/2]), float64(latencies[len(latencies)/2])/float64(raw[len(raw)/2]))
	if phases != "" {
		fmt.Print(phases)
	}
	if len(rss) > 0 {
		fmt.Printf("  supervisor RSS: median %d KiB, max %d KiB (%d supervisors of %d tasks still running; turns whose agent finished before the count have none)\n", rss[len(rss)/2], rss[len(rss)-1], len(rss), len(byTask))
	}
	if doubled > 0 {
		fmt.Printf("  DEFECT: %d tasks had more than one supervisor process\n", doubled)
	}
	fmt.Printf("  daemon CPU over %s with %d turns running: %.2f%% of one core; RSS %d KiB\n", window, *n, float64(c1-c0)/100/window.Seconds()*100, daemonRSS)
	lazy(repo, env, "daemon", "--stop")
	for _, pid := range sups {
		_ = exec.Command("kill", strconv.Itoa(pid)).Run()
	}
}

// supervisors finds this repository's `lazy -C <git dir> supervise <id>`
// processes, by task id.
//
// Why a run once reported "36 supervisors" for 20 turns: lazy starts one
// supervisor per turn, but under `sh -c` (app.go's exitRecorder), whose
// argv carries the same "supervise <id>" arguments, so that the shell can
// record the exit status of a supervisor killed by SIGKILL. The count then
// matched each turn's shell as well as its supervisor (2 per turn), and it
// is taken after the last start: on a loaded machine the first two turns'
// 15 s agents had already finished, leaving 18 turns x 2 = 36. The shell is
// now told apart by its comm, and the count is per task, so a second
// supervisor of one task (which would wait for the first's lock and exit)
// is reported as such rather than folded into the total.
func supervisors(repo string) map[string][]int {
	out := map[string][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, []byte("\x00supervise\x00")) || !bytes.Contains(b, []byte(repo)) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
		// The shell that launches a supervisor (to record its exit
		// status) carries the same arguments; it is not a supervisor.
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "lazy" {
			continue
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		out[string(args[len(args)-1])] = append(out[string(args[len(args)-1])], pid)
	}
	return out
}

func rssKB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return 0
}

// cpuTicks is utime+stime of a process, in clock ticks (100 Hz).
func cpuTicks(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

func lazy(dir string, env []string, args ...string) string {
	cmd := exec.Command(*lazyBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lazy %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		os.Exit(1)
	}
	return string(out)
}

func git(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "git %v: %v\n%s", args, err, out)
		os.Exit(1)
	}
}

// profileStarts runs k more starts under strace, tracing only execve and
// process exits (seccomp-filtered, so the rest runs at full speed), and
// says where the time of a start goes, as medians from the lazy start
// process's exec: until git worktree add is executed (the process's own
// start-up, reading the task and checking it), git worktree add itself,
// from its end to the agent's exec (recording the turn, then the
// supervisor, launched early, running the command), and when the
// supervisor was executed. It returns "" when strace is missing.
func profileStarts(repo string, env []string, wts string, k int) string {
	strace, err := exec.LookPath("strace")
	if k <= 0 || err != nil {
		if k > 0 {
			return "  (strace is not installed: no profile of a start)\n"
		}
		return ""
	}
	var toWorktree, worktree, toAgent, toSupervisor []time.Duration
	for i := 0; i < k; i++ {
		slug := fmt.Sprintf("traced-%d", i)
		lazy(repo, env, "create", slug)
		out := filepath.Join(wts, "..", slug+".strace")
		cmd := exec.Command(strace, "-f", "--seccomp-bpf", "-q", "-ttt", "-e", "trace=execve", "-e", "signal=none", "-o", out, *lazyBin, "start", slug, "--command", *fake)
		cmd.Dir, cmd.Env = repo, env
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Sprintf("  (strace could not trace a start: %v %s)\n", err, b)
		}
		marker := filepath.Join(wts, slug, "started.json")
		for began := time.Now(); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(marker); err == nil || time.Since(began) > 30*time.Second {
				break
			}
		}
		ph, ok := phasesOf(out, *fake)
		if !ok {
			continue
		}
		toWorktree, worktree, toAgent, toSupervisor = append(toWorktree, ph[0]), append(worktree, ph[1]), append(toAgent, ph[2]), append(toSupervisor, ph[3])
	}
	if len(worktree) == 0 {
		return "  (no traced start could be read)\n"
	}
	med := func(d []time.Duration) float64 {
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		return ms(d[len(d)/2])
	}
	return fmt.Sprintf("  where a start goes (strace of %d starts, medians): %.1f ms to git worktree add (lazy's start-up, the task read and checked), "+
		"%.1f ms in git worktree add, %.1f ms from its end to the agent's exec (the turn recorded, the supervisor told to go); the supervisor was executed at %.1f ms\n",
		len(worktree), med(toWorktree), med(worktree), med(toAgent), med(toSupervisor))
}

// phasesOf reads an strace -f -ttt of one lazy start: the durations from
// the start's exec to git worktree add's, of git worktree add (its exec to
// its exit), from that exit to the agent's exec, and from the start's exec
// to the supervisor's.
func phasesOf(path, agent string) ([4]time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [4]time.Duration{}, false
	}
	var t0, wtBegin, wtEnd, agentAt, supAt float64
	wtPid := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		at, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		rest := strings.Join(f[2:], " ")
		switch {
		case t0 == 0 && strings.HasPrefix(rest, "execve("):
			t0 = at
		case wtBegin == 0 && strings.HasPrefix(rest, "execve(") && strings.Contains(rest, `"worktree", "add"`):
			wtBegin, wtPid = at, f[0]
		case wtPid != "" && wtEnd == 0 && f[0] == wtPid && strings.HasPrefix(rest, "+++ exited"):
			wtEnd = at
		case supAt == 0 && strings.HasPrefix(rest, "execve(") && strings.Contains(rest, `"supervise"`) && !strings.Contains(rest, `"-c"`):
			supAt = at
		case agentAt == 0 && strings.HasPrefix(rest, `execve("`+agent+`"`):
			agentAt = at
		}
	}
	if t0 == 0 || wtBegin == 0 || wtEnd == 0 || agentAt == 0 || supAt == 0 {
		return [4]time.Duration{}, false
	}
	d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return [4]time.Duration{d(wtBegin - t0), d(wtEnd - wtBegin), d(agentAt - wtEnd), d(supAt - t0)}, true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

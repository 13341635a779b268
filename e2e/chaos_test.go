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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestChaos runs many lazy processes at once (create, start, unblock,
// accept, resume, stop, close, reopen, comment, list, doctor) beside git
// gc and repack loops, SIGKILLs supervisors and accepts at random
// moments, then checks what must hold once everything is quiet.
//
// The operations each worker picks, and the kills, come from a seed:
// LAZY_CHAOS_SEED reproduces a run (the scheduling of processes cannot
// be replayed, so a failure may need a few runs with its seed).
// LAZY_CHAOS_DURATION sets how long the chaos lasts (default 20s);
// scripts/chaos.sh runs it long.
func TestChaos(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LAZY_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LAZY_CHAOS_SEED=%q is not a number", v)
		}
		seed = n
	}
	duration := 20 * time.Second
	if v := os.Getenv("LAZY_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LAZY_CHAOS_DURATION=%q is not a duration", v)
		}
		duration = d
	}
	t.Logf("chaos seed %d for %s (reproduce with LAZY_CHAOS_SEED=%d)", seed, duration, seed)
	fatalf := func(format string, a ...any) {
		t.Helper()
		t.Fatalf(format+" (LAZY_CHAOS_SEED=%d)", append(a, seed)...)
	}

	// Two clones share a remote: tasks travel with push and pull while
	// the rest goes on.
	r, other := clones(t)
	r.git("config", "lazy.startGrace", "1s")
	r = r.with(script(t, "taskfile work", "commit agent: work", "sleep 300ms", "print done"))
	// The user's work in progress sits in the destination throughout.
	wip := r.dir + "/wip.txt"
	if err := os.WriteFile(wip, []byte("mine, uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var created []task             // acknowledged creates
	acked := map[string][]string{} // acknowledged comments, by slug
	var problems []string
	problem := func(s string) {
		mu.Lock()
		if len(problems) < 20 {
			problems = append(problems, s)
		}
		mu.Unlock()
	}
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(lazyBin, args...)
		cmd.Dir, cmd.Env = r.dir, r.environ()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	// A panic, a race report or a claim of corruption is a problem
	// whatever the command.
	check := func(args []string, out string) {
		for _, bad := range []string{"panic:", "WARNING: DATA RACE", "is corrupt", "invalid sha1 pointer"} {
			if strings.Contains(out, bad) {
				problem(fmt.Sprintf("lazy %s: %s", strings.Join(args, " "), out))
			}
		}
	}
	run := func(rng *rand.Rand, killable bool, args ...string) (string, bool) {
		cmd := command(args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			problem(err.Error())
			return "", false
		}
		if killable && rng.IntN(4) == 0 {
			// SIGKILL it at a random moment, as an OOM kill would.
			time.AfterFunc(time.Duration(rng.IntN(1500))*time.Millisecond, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		}
		_ = cmd.Wait()
		ok := cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 0
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0 {
			check(args, out.String())
		}
		return out.String(), ok
	}
	pick := func(rng *rand.Rand) string {
		mu.Lock()
		defer mu.Unlock()
		if len(created) == 0 {
			return ""
		}
		return created[rng.IntN(len(created))].Slug
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Git maintenance beside lazy, one maintainer at a time as git's own
	// gc.pid lock keeps it. (--prune=now and repack -a -d drop unreachable
	// objects with no grace, unsafe beside any writer, git's own included;
	// concurrent repackers are not covered either; see SECURITY.md.)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			maintenance := [][]string{{"gc", "-q"}, {"repack", "-A", "-d", "-q"}, {"pack-refs", "--all", "--prune"}}
			c := exec.Command("git", maintenance[i%len(maintenance)]...)
			c.Dir = r.dir
			_ = c.Run()
		}
	}()
	// Supervisor killer, and the one-turn-per-task sampler.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(300+rng.IntN(700)) * time.Millisecond):
			}
			mu.Lock()
			ids := make([]string, len(created))
			for i, tk := range created {
				ids[i] = tk.ID
			}
			mu.Unlock()
			for _, id := range ids {
				sups, agents := turnProcs(id)
				if len(sups) > 1 || len(agentLeaders(agents)) > 1 {
					problem(fmt.Sprintf("task %s: %d supervisors and %d agents at once", id, len(sups), len(agentLeaders(agents))))
				}
				if len(sups) == 1 && rng.IntN(3) == 0 {
					_ = syscall.Kill(sups[0], syscall.SIGKILL)
				}
			}
		}
	}()
	// The other clone pulls, comments and pushes.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 77))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(200+rng.IntN(800)) * time.Millisecond):
			}
			var args []string
			switch rng.IntN(3) {
			case 0:
				args = []string{"pull", "origin"}
			case 1:
				mu.Lock()
				id := ""
				if len(created) > 0 {
					id = created[rng.IntN(len(created))].ID
				}
				mu.Unlock()
				if id == "" {
					continue
				}
				args = []string{"comment", id, "-m", "from the other clone"}
			default:
				args = []string{"push", "origin"}
			}
			c := exec.Command(lazyBin, args...)
			c.Dir, c.Env = other.dir, other.environ()
			out, _ := c.CombinedOutput()
			check(append([]string{"(other clone)"}, args...), string(out))
		}
	}()
	const workers = 4
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				slug := pick(rng)
				op := rng.IntN(20)
				switch {
				case slug == "" || op < 3:
					out, _ := run(rng, false, "create", "--json", fmt.Sprintf("chaos %d %d", w, n))
					var tk task
					if err := jsonUnmarshal(out, &tk); err == nil && tk.ID != "" {
						mu.Lock()
						created = append(created, tk)
						mu.Unlock()
					}
				case op < 6:
					run(rng, false, "start", slug, "--command", fakeAgentBin)
				case op < 8:
					run(rng, false, "unblock", slug, "-m", "more")
				case op < 11:
					run(rng, true, "accept", slug)
				case op < 12:
					run(rng, false, "resume", slug)
				case op < 13:
					run(rng, false, "stop", slug)
				case op < 14:
					run(rng, false, "close", slug, "--reason", "chaos")
				case op < 15:
					run(rng, false, "reopen", slug, "--reason", "chaos")
				case op < 16:
					text := fmt.Sprintf("note %d/%d", w, n)
					if _, ok := run(rng, false, "comment", slug, "-m", text); ok {
						mu.Lock()
						acked[slug] = append(acked[slug], text)
						mu.Unlock()
					}
				case op < 17:
					run(rng, rng.IntN(2) == 0, []string{"push", "pull"}[rng.IntN(2)], "origin")
				default:
					run(rng, false, "list")
				}
			}
		}(w)
	}
	time.Sleep(duration) // the chaos runs for a fixed time by design
	close(stop)
	wg.Wait()

	// Every process the chaos started has ended, so every ref lock left
	// now is a killed git's: age them past doctor's two-minute guard (time
	// a user would have waited), which doctor then removes in the clones.
	// The bare remote's are a killed receive-pack's, the server's own
	// debris that no client may touch: removed as its admin would.
	remote := strings.TrimSpace(r.git("remote", "get-url", "origin"))
	if !filepath.IsAbs(remote) {
		remote = filepath.Join(r.dir, remote) // relative to the work tree
	}
	old := time.Now().Add(-3 * time.Minute)
	// An index.lock a killed accept's git left is aged the same way (git
	// writes no index in that checkout while it exists), and so is a
	// packed-refs.lock a killed gc or branch deletion left (git deletes
	// no packed branch while it exists).
	for _, dir := range []string{r.dir, other.dir} {
		for _, name := range []string{"index.lock", "packed-refs.lock"} {
			_ = os.Chtimes(filepath.Join(dir, ".git", name), old, old)
		}
	}
	for _, dir := range []string{filepath.Join(r.dir, ".git", "refs"), filepath.Join(other.dir, ".git", "refs"), filepath.Join(remote, "refs")} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".lock") {
				return nil
			}
			if strings.HasPrefix(path, remote) {
				t.Logf("removing the remote's stale lock %s", path)
				return os.Remove(path)
			}
			return os.Chtimes(path, old, old)
		})
	}

	// Quiescence: end every turn, then let doctor repair until clean.
	mu.Lock()
	all := append([]task(nil), created...)
	mu.Unlock()
	for _, tk := range all {
		_ = command("stop", tk.ID).Run()
	}
	clean := false
	var last result
	for i := 0; i < 6 && !clean; i++ {
		last = r.run(nil, "doctor")
		check([]string{"doctor"}, last.Stdout+last.Stderr)
		clean = last.Code == 0
		if !clean {
			r.run(nil, "list")
		}
	}
	if !clean && !onlyWorkLeftForAHuman(r) {
		problem("lazy doctor did not converge to no problems:\n" + last.String())
	}
	if len(problems) > 0 {
		fatalf("%d problems during the chaos:\n%s", len(problems), strings.Join(problems, "\n---\n"))
	}

	// Every acknowledged create is there and readable.
	status := map[string]string{}
	for _, tk := range all {
		res := r.run(nil, "show", "--json", tk.ID)
		var s task
		if res.Code != 0 || jsonUnmarshal(res.Stdout, &s) != nil {
			fatalf("task %s unreadable after the chaos: %s", tk.ID, res)
		}
		status[tk.ID] = s.Status
	}
	for _, dir := range []string{r.dir, other.dir} {
		if out, err := exec.Command("git", "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
			fatalf("git fsck in %s: %v\n%s", dir, err, out)
		}
	}
	// Every acknowledged comment is there.
	for slug, texts := range acked {
		s := r.show(slug)
		have := map[string]bool{}
		for _, c := range s.CommentList {
			have[c.Text] = true
		}
		for _, text := range texts {
			if !have[text] {
				fatalf("task %s lost the acknowledged comment %q", slug, text)
			}
		}
	}
	// What the clones exchanged is readable on both sides.
	r.ok("push", "origin")
	other.ok("pull", "origin")
	if res := other.run(nil, "list", "--json"); res.Code != 0 || strings.Contains(res.Stdout+res.Stderr, "corrupt") {
		fatalf("lazy list in the other clone: %s", res)
	}
	// At most one turn per task, now that everything is stopped: none.
	for _, tk := range all {
		if sups, agents := turnProcs(tk.ID); len(sups)+len(agents) > 0 {
			fatalf("task %s still has supervisors %v and agents %v after stop and doctor", tk.ID, sups, agents)
		}
	}
	// main holds only accepted tasks' files, each squash only its own.
	files := strings.Fields(r.git("ls-tree", "--name-only", "main"))
	for _, f := range files {
		id, ok := strings.CutPrefix(strings.TrimSuffix(f, ".txt"), "task-")
		if !ok {
			continue
		}
		// Only the task's own accepts may have brought it there (a task
		// accepted and then reopened keeps its merged file on main).
		for _, tr := range strings.Split(strings.TrimSpace(r.git("log", "--format=%(trailers:key=Lazy-Task,valueonly,separator=)", "main", "--", f)), "\n") {
			if strings.TrimSpace(tr) != id {
				fatalf("main holds %s of task %s (now %s) from a commit that is not its accept (%q)", f, id, status[id], tr)
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(r.git("log", "--format=%H %(trailers:key=Lazy-Task,valueonly,separator=)", "main")), "\n") {
		sha, id, _ := strings.Cut(line, " ")
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		for _, f := range strings.Fields(r.git("show", "--name-only", "--format=", sha)) {
			if f != "task-"+id+".txt" {
				fatalf("the squash of task %s (%s) holds %s", id, sha, f)
			}
		}
	}
	// The user's work in progress survived, and no stash was left behind.
	if b, err := os.ReadFile(wip); err != nil || string(b) != "mine, uncommitted\n" {
		// The tasks whose stashes are left say, in their comments, what
		// their accepts met.
		var told strings.Builder
		for _, line := range strings.Split(r.git("stash", "list", "--format=%s"), "\n") {
			if _, rest, ok := strings.Cut(line, "("); ok {
				if id, _, ok := strings.Cut(rest, ")"); ok {
					told.WriteString(r.run(nil, "show", id).Stdout)
				}
			}
		}
		fatalf("the user's uncommitted wip.txt: %q %v\ngit stash list:\n%s\ngit status:\n%s\nlast doctor:\n%s\nthe stashes' tasks:\n%s",
			b, err, r.git("stash", "list"), r.git("status", "--porcelain", "--untracked-files=all"), last.String(), told.String())
	}
	if st := r.git("stash", "list"); st != "" {
		fatalf("stashes left in the user's repository: %s", st)
	}
	t.Logf("%d tasks; statuses %v", len(all), countStatuses(status))
}

func countStatuses(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, s := range m {
		out[s]++
	}
	return out
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// onlyWorkLeftForAHuman reports whether everything doctor still finds is
// left for a human by design, never repairable by lazy: a finished task's
// worktree with uncommitted changes (a turn killed or closed mid-edit;
// lazy never deletes work without a human's decision), or an interrupted
// task the spec forbids to auto-resume (a crash during the upstream merge,
// the circuit breaker).
func onlyWorkLeftForAHuman(r *runner) bool {
	res := r.run(nil, "doctor", "--dry-run", "--json")
	var out struct {
		Findings []struct {
			Kind   string `json:"kind"`
			Detail string `json:"detail"`
			Action string `json:"action"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil || len(out.Findings) == 0 {
		return false
	}
	for _, f := range out.Findings {
		dirtyWork := f.Kind == "orphaned-worktree" && strings.Contains(f.Detail, "uncommitted changes")
		heldBack := f.Kind == "interrupted" && strings.Contains(f.Detail, "not auto-resumed")
		if f.Action != "" || !dirtyWork && !heldBack {
			return false
		}
	}
	return true
}

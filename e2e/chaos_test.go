package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/landing"
)

// TestChaos runs many lazy processes at once (create, start, unblock,
// accept, resume, stop, close, reopen, comment, list, doctor) beside git
// gc, repack and pack-refs loops and a user editing the main checkout,
// SIGKILLs supervisors at random moments and accepts both at random
// moments and, through the test-only crash hook (ops.CrashAtEnv), as
// each phase of the accept begins, then checks what must hold once
// everything is quiet: among it, that every byte of the user's
// uncommitted changes is in the checkout or in a stash lazy doctor
// reports, and that accepts were killed in every phase.
//
// The operations each worker picks, and the kills, come from a seed:
// LAZY_CHAOS_SEED reproduces a run (the scheduling of processes cannot
// be replayed, so a failure may need a few runs with its seed).
// LAZY_CHAOS_DURATION sets how long the chaos lasts at least (default
// 30s, 10s with -short): it goes on until accepts were killed as every
// phase began, for at most chaosGrace more; scripts/chaos.sh runs it
// long.
func TestChaos(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LAZY_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LAZY_CHAOS_SEED=%q is not a number", v)
		}
		seed = n
	}
	duration := 30 * time.Second
	if testing.Short() {
		duration = 10 * time.Second
	}
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
	// The user works in the destination throughout: an edit of a
	// tracked file and untracked files, rewritten as the chaos goes on.
	user := newChaosUser(t, r.dir)
	if err := user.edit(0); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var created []task // acknowledged creates
	accepts := newAcceptKiller(seed)
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
	// runIn runs lazy with extra environment; a killAt over zero has it
	// SIGKILLed (with its git children) at a random moment up to that
	// long after its start, or after its output first holds from if that
	// is set, as an OOM kill would.
	runIn := func(rng *rand.Rand, env []string, killAt time.Duration, from string, args ...string) (string, *os.ProcessState) {
		cmd := command(args...)
		cmd.Env = append(cmd.Env, env...)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		var delay time.Duration
		if killAt > 0 {
			delay = time.Duration(rng.Int64N(int64(killAt)))
		}
		if err := cmd.Start(); err != nil {
			problem(err.Error())
			return "", nil
		}
		if killAt > 0 {
			kill := func() { time.AfterFunc(delay, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) }
			if from == "" {
				kill()
			} else {
				out.onFirst(from, kill)
			}
		}
		_ = cmd.Wait()
		// A killed lazy's git children die with its process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if cmd.ProcessState.ExitCode() >= 0 {
			check(args, out.String())
		}
		return out.String(), cmd.ProcessState
	}
	run := func(rng *rand.Rand, killable bool, args ...string) (string, bool) {
		var killAt time.Duration
		if killable && rng.IntN(4) == 0 {
			killAt = 1500 * time.Millisecond
		}
		out, st := runIn(rng, nil, killAt, "", args...)
		return out, st != nil && st.ExitCode() == 0
	}
	// accept runs one accept: most die through the crash hook as the
	// phase the killer picks begins, some at a random moment, the rest
	// run to their end.
	accept := func(rng *rand.Rand, slug string) (string, *os.ProcessState) {
		phase, random := accepts.arm(rng)
		var env []string
		if phase != "" {
			env = []string{landing.CrashAtEnv + "=" + phase}
		}
		// A random kill lands within the phases, mostly: between the
		// crash hook's boundaries, in the middle of a git command.
		var killAt time.Duration
		from := ""
		if random {
			killAt = 2 * time.Second
			if rng.IntN(4) != 0 {
				from = " step 1 of "
			}
		}
		out, st := runIn(rng, env, killAt, from, "accept", slug)
		if st == nil {
			return out, st
		}
		if err := accepts.record(phase, out, st); err != nil {
			problem(fmt.Sprintf("lazy accept %s: %v\n%s", slug, err, out))
		}
		return out, st
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
	// The user edits the destination now and then, as the accepts into
	// it let them (see chaosUser).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 1; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(700 * time.Millisecond):
			}
			if err := user.editLocked(k); err != nil {
				problem(err.Error())
			}
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
	// Accept loops: each creates a task, runs it, and accepts it until
	// it is accepted (an accept killed before its end is recovered by
	// the next), so that accepts reach every phase.
	const acceptLoops = 3
	for w := 0; w < acceptLoops; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+w)))
			stopped := func() bool {
				select {
				case <-stop:
					return true
				default:
					return false
				}
			}
			for n := 0; !stopped(); n++ {
				out, _ := run(rng, false, "create", "--json", fmt.Sprintf("accept loop %d %d", w, n))
				var tk task
				if jsonUnmarshal(out, &tk) != nil || tk.ID == "" {
					continue
				}
				mu.Lock()
				created = append(created, tk)
				mu.Unlock()
				if _, ok := run(rng, false, "start", tk.Slug, "--command", fakeAgentBin); !ok {
					continue
				}
				// An accept of a task whose turn still runs is refused
				// before its first phase.
				run(rng, false, "wait", tk.Slug, "--timeout", "30s")
				for try := 0; try < 20 && !stopped(); try++ {
					out, st := accept(rng, tk.Slug)
					if st != nil && st.ExitCode() == 0 || strings.Contains(out, "already accepted") {
						break
					}
					if st != nil && st.ExitCode() > 0 {
						// Not ready yet (the agent runs), or taken
						// elsewhere by the other workers: a moment later.
						select {
						case <-stop:
						case <-time.After(250 * time.Millisecond):
						}
					}
				}
			}
		}(w)
	}
	const workers = 2
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
				mu.Lock()
				enough := len(created) >= 16
				mu.Unlock()
				switch {
				case slug == "" || op < 3 && !enough:
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
					accept(rng, slug)
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
	// The chaos lasts its duration, and then until accepts were killed
	// as every phase began, up to a limit.
	atLeast, limit := time.After(duration), time.After(duration+chaosGrace)
	<-atLeast
	poll := time.NewTicker(200 * time.Millisecond)
waiting:
	for !accepts.everyPhase() {
		select {
		case <-poll.C:
		case <-limit:
			break waiting
		}
	}
	poll.Stop()
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
	// Every byte of the user's uncommitted changes is in the checkout or
	// in a stash doctor reports, with the command that restores it; and
	// every stash left is one doctor reports.
	owed := owedStashes(t, r)
	// However many accepts were killed, the changes owed in the one
	// checkout are in one stash, the stashes folded into it its parents.
	if len(owed) > 1 {
		fatalf("%d stashes are owed in one checkout, want them folded into one: %v\ngit stash list:\n%s", len(owed), owed, r.git("stash", "list"))
	}
	var parts []string
	for _, sha := range owed {
		parts = append(parts, foldedParts(t, r.dir, sha)...)
	}
	if lost := user.lost(parts); len(lost) > 0 {
		fatalf("the user's uncommitted changes are neither in the checkout nor in a stash doctor reports (%v):\n%s\ngit stash list:\n%s\ngit status:\n%s\nlast doctor:\n%s",
			owed, strings.Join(lost, "\n"), r.git("stash", "list"), r.git("status", "--porcelain", "--untracked-files=all"), last.String())
	}
	reported := map[string]bool{}
	for _, sha := range owed {
		reported[sha] = true
	}
	for _, sha := range strings.Fields(r.git("stash", "list", "--format=%H")) {
		if !reported[sha] {
			fatalf("stash %s is left in the user's repository and doctor does not report it:\n%s", sha, r.git("stash", "list"))
		}
	}
	// The user edited under the very lock the accepts into main took.
	if locks, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "locks", "accept-into-*")); len(locks) != 1 || locks[0] != user.lock {
		fatalf("the accepts into main locked %v, the user %s", locks, user.lock)
	}
	// No process of the run is left: every lazy and agent it started
	// has ended.
	if left := ourProcesses(); len(left) > 0 {
		fatalf("processes left after the chaos: %s", strings.Join(left, "; "))
	}
	// Accepts were killed in every phase.
	counts := accepts.counts()
	t.Logf("killed accepts by crash-hook phase: %v; at random moments, by the phase they were in: %v; %d stash(es) owed and reported by doctor, folding %d; user edits %d",
		counts.hook, counts.random, len(owed), len(parts), user.edits())
	for _, p := range chaosPhases {
		if counts.hook[p] == 0 {
			fatalf("no accept was killed as phase %s began (killed: %v)", p, counts.hook)
		}
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
// lazy never deletes work without a human's decision), an interrupted
// task the spec forbids to auto-resume (a crash during the upstream merge,
// the circuit breaker), or a stash of the user's changes an accept owes
// (given back only by the user, with the command doctor prints).
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
		owed := f.Kind == "owed-stash" // the user's changes, which only the user restores
		if f.Action != "" || !dirtyWork && !heldBack && !owed {
			return false
		}
	}
	return true
}

// chaosPhases are the accept phases the crash hook kills at: those of an
// accept into a dirty checkout without a pre-accept turn.
var chaosPhases = func() []string {
	var ids []string
	for _, p := range landing.AcceptPlan(false, true) {
		ids = append(ids, p.ID)
	}
	return ids
}()

// chaosGrace is how much longer than its duration the chaos may go on
// for accepts to be killed in every phase. On two idle cores every phase
// is hit within the duration; on busy ones (an accept takes seconds, and
// accepts into one branch run one at a time) it can take a minute more.
const chaosGrace = time.Minute

// acceptKiller decides how each accept of the chaos ends and counts the
// kills by phase. Five accepts in eight die through the crash hook, at the
// phase killed least so far (ties in a round-robin order that starts
// where the seed says), an eighth at a random moment
// (mostly within 2s of its first phase).
type acceptKiller struct {
	mu     sync.Mutex
	order  []string // chaosPhases rotated by the seed
	next   int
	hook   map[string]int // kills by the crash hook, by phase
	random map[string]int // random kills, by the phase narrated last
}

func newAcceptKiller(seed uint64) *acceptKiller {
	k := &acceptKiller{hook: map[string]int{}, random: map[string]int{}}
	off := int(seed % uint64(len(chaosPhases)))
	k.order = append(append(k.order, chaosPhases[off:]...), chaosPhases[:off]...)
	return k
}

// arm says how the next accept ends: killed by the crash hook as phase
// begins, killed at a random moment, or neither.
func (k *acceptKiller) arm(rng *rand.Rand) (phase string, random bool) {
	switch n := rng.IntN(8); {
	case n == 0:
		return "", true
	case n >= 6:
		return "", false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	best := -1
	for i := range k.order {
		j := (k.next + i) % len(k.order)
		if best < 0 || k.hook[k.order[j]] < k.hook[k.order[best]] {
			best = j
		}
	}
	k.next = (best + 1) % len(k.order)
	return k.order[best], false
}

// record counts how an accept armed with phase ended; an error is an
// accept the hook killed anywhere but where it was set to.
func (k *acceptKiller) record(phase, out string, st *os.ProcessState) error {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return nil
	}
	at := acceptPhaseOf(out)
	k.mu.Lock()
	defer k.mu.Unlock()
	if phase == "" {
		k.random[at]++
		return nil
	}
	if at != phase {
		return fmt.Errorf("killed by the crash hook set to %s, in phase %s", phase, at)
	}
	k.hook[phase]++
	return nil
}

// everyPhase reports whether the crash hook killed accepts in every
// phase.
func (k *acceptKiller) everyPhase() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range chaosPhases {
		if k.hook[p] == 0 {
			return false
		}
	}
	return true
}

type killCounts struct{ hook, random map[string]int }

func (k *acceptKiller) counts() killCounts {
	k.mu.Lock()
	defer k.mu.Unlock()
	return killCounts{hook: maps.Clone(k.hook), random: maps.Clone(k.random)}
}

// acceptPhaseOf is the phase a killed accept was in: the last step it
// narrated ("step n of m: <label>"), or pre-flight before any.
func acceptPhaseOf(out string) string {
	phase := "pre-flight"
	for _, line := range strings.Split(out, "\n") {
		for _, p := range landing.AcceptPhases {
			if strings.Contains(line, " step ") && strings.HasSuffix(strings.TrimSpace(line), ": "+p.Label) {
				phase = p.ID
			}
		}
	}
	return phase
}

// chaosUser is the user working in the main checkout during the chaos:
// it edits a tracked file and rewrites and adds untracked ones. It edits
// holding the accept lock of main, as git itself cannot make a write
// that races git stash safe (a byte written between the stash's read and
// its reset is lost by git, whoever runs it); everything lazy does
// around the edits (a stash taken and not given back, a stash that comes
// back onto newer edits) is what the test is about.
//
// Each version written must survive until the user overwrites it while
// it is still in the checkout: lost names those that are neither there
// nor in an owed stash.
type chaosUser struct {
	t    *testing.T
	dir  string
	lock string
	mu   sync.Mutex
	n    int
	// owed are the versions that must survive: path -> contents.
	owed map[string]map[string]bool
}

func newChaosUser(t *testing.T, dir string) *chaosUser {
	sum := sha256.Sum256([]byte("main"))
	lock := filepath.Join(dir, ".git", "lazy", "locks", "accept-into-"+hex.EncodeToString(sum[:8])+".lock")
	return &chaosUser{t: t, dir: dir, lock: lock, owed: map[string]map[string]bool{}}
}

// editLocked edits as no accept into main runs.
func (u *chaosUser) editLocked(k int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(u.lock), 0o755); err != nil {
		return err
	}
	l, err := flock.Acquire(ctx, u.lock)
	if err != nil {
		return fmt.Errorf("the user could not take the accept lock of main: %w", err)
	}
	defer func() { _ = l.Release() }()
	return u.edit(k)
}

// edit writes version k of the tracked README.md and of wip.txt, and,
// every third time, a new untracked file.
func (u *chaosUser) edit(k int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.n++
	files := map[string]string{
		"README.md": fmt.Sprintf("# test\nthe user's edit %d, uncommitted\n", k),
		"wip.txt":   fmt.Sprintf("mine, uncommitted, version %d\n", k),
	}
	if k%3 == 0 {
		files[fmt.Sprintf("notes/%d.txt", k)] = fmt.Sprintf("note %d\n", k)
	}
	for f, b := range files {
		path := filepath.Join(u.dir, f)
		if cur, err := os.ReadFile(path); err == nil {
			// What the user overwrites in the checkout is theirs to lose.
			delete(u.owed[f], string(cur))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			return err
		}
		if u.owed[f] == nil {
			u.owed[f] = map[string]bool{}
		}
		u.owed[f][b] = true
	}
	return nil
}

func (u *chaosUser) edits() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

// lost lists the versions that are neither in the checkout nor in one of
// the stashes.
func (u *chaosUser) lost(stashes []string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for f, versions := range u.owed {
		for v := range versions {
			if b, err := os.ReadFile(filepath.Join(u.dir, f)); err == nil && string(b) == v {
				continue
			}
			found := false
			for _, sha := range stashes {
				for _, rev := range []string{sha + ":" + f, sha + "^3:" + f} {
					if got, err := exec.Command("git", "-C", u.dir, "show", rev).Output(); err == nil && string(got) == v {
						found = true
					}
				}
			}
			if !found {
				out = append(out, fmt.Sprintf("%s: %q", f, v))
			}
		}
	}
	slices.Sort(out)
	return out
}

// owedStashes are the stashes doctor reports as owed to the user.
func owedStashes(t *testing.T, r *runner) []string {
	t.Helper()
	res := r.run(nil, "doctor", "--dry-run", "--json")
	var out struct {
		Findings []struct {
			Kind   string `json:"kind"`
			Detail string `json:"detail"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	var shas []string
	for _, f := range out.Findings {
		if f.Kind != "owed-stash" {
			continue
		}
		m := regexp.MustCompile(`stash apply ([0-9a-f]{40})`).FindStringSubmatch(f.Detail)
		if m == nil {
			t.Fatalf("doctor reports an owed stash without the command that restores it: %s", f.Detail)
		}
		shas = append(shas, m[1])
	}
	return shas
}

// ourProcesses are the processes of this test binary's lazy and fake
// agent still running.
func ourProcesses() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || !liveProc(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if argv[0] == lazyBin || argv[0] == fakeAgentBin {
			out = append(out, e.Name()+" "+strings.Join(argv, " "))
		}
	}
	return out
}

// ourProcessesUnder are ourProcesses that belong to the test whose
// files are under dir: their command line names a path there, or they
// run there. Other tests of the same binary run at the same time, and
// what they leave is theirs to report.
func ourProcessesUnder(dir string) []string {
	var out []string
	for _, p := range ourProcesses() {
		pid, _, _ := strings.Cut(p, " ")
		cwd, _ := os.Readlink(filepath.Join("/proc", pid, "cwd"))
		if strings.Contains(p, dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, p)
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a process's stdout and stderr
// at once, which can call a function once the output holds a mark.
type syncBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark []byte
	fire func()
}

// onFirst calls fire once the output holds mark.
func (b *syncBuffer) onFirst(mark string, fire func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mark, b.fire = []byte(mark), fire
	b.check()
}

func (b *syncBuffer) check() {
	if b.fire != nil && bytes.Contains(b.buf.Bytes(), b.mark) {
		b.fire()
		b.fire = nil
	}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	b.check()
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

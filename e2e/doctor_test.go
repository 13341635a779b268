package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type doctorReport struct {
	DryRun   bool `json:"dry_run"`
	Findings []struct {
		TaskID   string `json:"task_id"`
		Slug     string `json:"slug"`
		Kind     string `json:"kind"`
		Detail   string `json:"detail"`
		Action   string `json:"action"`
		Repaired bool   `json:"repaired"`
		Error    string `json:"error"`
	} `json:"findings"`
	Remaining int `json:"remaining"`
}

func (r *runner) doctor(code int, args ...string) doctorReport {
	r.t.Helper()
	res := r.run(nil, append([]string{"doctor", "--json"}, args...)...)
	if res.Code != code {
		r.t.Fatalf("doctor %v exited %d, want %d: %s", args, res.Code, code, res)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		r.t.Fatalf("doctor --json: %v\n%s", err, res.Stdout)
	}
	return rep
}

func (rep doctorReport) kinds() map[string]string {
	m := map[string]string{}
	for _, f := range rep.Findings {
		m[f.Slug+"/"+f.Kind] = f.Action
	}
	return m
}

func TestDoctorReportsThenRepairs(t *testing.T) {
	r := manualResume(crashRepo(t))
	counter := filepath.Join(t.TempDir(), "n")
	r = r.with(script(t, "attempt "+counter,
		"when 1 print hanging", "when 1 hang", "write work.txt w", "commit agent: work", "print done"))
	dead := r.create("dead supervisor")
	r.ok("start", dead.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, dead.ID, 0)
	waitRun(t, counter, "1") // the next task's agent must be run 2
	crash(t, sup)

	clean := r.create("finished clean")
	r.ok("start", clean.Slug, "--command", fakeAgentBin)
	r.waitStatus(clean.Slug, "blocked")
	r.ok("close", clean.Slug)
	// A clean worktree close did not get to remove (an older lazy, a
	// crash), where older lazies put worktrees: doctor knows both places.
	r.git("worktree", "add", "-q", filepath.Join(r.dir, ".git", "lazy", "worktrees", clean.Slug), "lazy/"+clean.Slug)
	dirty := r.create("finished dirty")
	r.ok("start", dirty.Slug, "--command", fakeAgentBin)
	dirtyTree := r.waitStatus(dirty.Slug, "blocked").Session.Worktree
	if err := os.WriteFile(filepath.Join(dirtyTree, "unsaved.txt"), []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := r.ok("close", dirty.Slug); !strings.Contains(out, "kept the worktree") {
		t.Fatalf("close of a dirty task: %s", out)
	}
	stranded := r.create("stranded accept")
	r.ok("start", stranded.Slug, "--command", fakeAgentBin)
	r.waitStatus(stranded.Slug, "blocked")
	r.strandAccept(stranded.ID, map[string]any{"accept_in_flight_from": "blocked", "into": "main", "into_sha": strings.TrimSpace(r.git("rev-parse", "main"))})
	lock := filepath.Join(r.dir, ".git", "refs", "lazy", "tasks", stranded.ID+".lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	// The start grace (1 s) must pass before a dead supervisor counts.
	deadline := time.Now().Add(30 * time.Second)
	for r.doctor(1, "--dry-run").kinds()[dead.Slug+"/dead-supervisor"] == "" {
		if time.Now().After(deadline) {
			t.Fatal("doctor never saw the dead supervisor")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A dry run reports and changes nothing.
	rep := r.doctor(1, "--dry-run")
	k := rep.kinds()
	for _, want := range []string{dead.Slug + "/dead-supervisor", stranded.Slug + "/stranded-merge", stranded.Slug + "/stale-ref-lock",
		clean.Slug + "/orphaned-worktree", dirty.Slug + "/orphaned-worktree"} {
		if _, ok := k[want]; !ok {
			t.Fatalf("dry run lacks %s: %+v", want, rep.Findings)
		}
	}
	if r.refStatus(dead.ID) != "working" || r.refStatus(stranded.ID) != "merging" {
		t.Fatal("a dry run changed a task")
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("a dry run removed the lock")
	}

	// One task only.
	one := r.doctor(1, "--dry-run", dead.Slug)
	for _, f := range one.Findings {
		if f.TaskID != dead.ID {
			t.Fatalf("doctor %s reported another task: %+v", dead.Slug, f)
		}
	}

	// The repair. The dirty worktree is the one thing left for a human.
	rep = r.doctor(1)
	if rep.Remaining != 1 {
		t.Fatalf("%d findings remain, want only the dirty worktree: %+v", rep.Remaining, rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Repaired == (f.Slug == dirty.Slug && f.Kind == "orphaned-worktree") {
			t.Fatalf("finding %+v", f)
		}
	}
	if got := r.refStatus(dead.ID); got != "interrupted" {
		t.Fatalf("dead supervisor's task is %s", got)
	}
	if got := r.refStatus(stranded.ID); got != "blocked" {
		t.Fatalf("stranded accept's task is %s", got)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("stale lock remains: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "lazy", "worktrees", clean.Slug)); !os.IsNotExist(err) {
		t.Fatalf("the clean worktree of a finished task remains: %v", err)
	}
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/"+clean.Slug); err != nil {
		t.Fatal("doctor deleted a branch")
	}
	if b, err := os.ReadFile(filepath.Join(dirtyTree, "unsaved.txt")); err != nil || string(b) != "precious\n" {
		t.Fatalf("doctor touched a dirty worktree: %q %v", b, err)
	}
	// With the lock gone, the task can be written again.
	r.ok("comment", stranded.Slug, "-m", "writable again")

	res := r.run(nil, "doctor")
	if res.Code != 1 || !strings.Contains(res.Stdout, "uncommitted changes") || !strings.Contains(res.Stdout, dead.Slug+": interrupted:") ||
		!strings.Contains(res.Stderr, "2 problems left unrepaired") {
		t.Fatalf("human-readable doctor: %s", res)
	}
}

func TestDoctorDeletesTheLeftoverBranchOfAnAcceptedTask(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "accepted once", "a.txt a")
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug))
	r.ok("accept", tk.Slug)
	// An accept killed during its cleanup leaves the branch behind.
	r.git("branch", "lazy/"+tk.Slug, tip)
	rep := r.doctor(1, "--dry-run")
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "leftover-branch" || !strings.Contains(rep.Findings[0].Detail, tip) {
		t.Fatalf("dry run: %+v", rep.Findings)
	}
	r.doctor(0)
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/"+tk.Slug); err == nil {
		t.Fatal("the leftover branch survived the repair")
	}
	if rep := r.doctor(0); len(rep.Findings) != 0 {
		t.Fatalf("after the repair: %+v", rep.Findings)
	}
}

// A gc, pack-refs or branch deletion killed while it rewrote packed-refs
// leaves packed-refs.lock, and git deletes no packed branch while it is
// there: the chaos test found a leftover branch doctor could not delete
// for it, run after run.
func TestDoctorRemovesAStalePackedRefsLock(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "accepted packed", "p.txt p")
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug))
	r.ok("accept", tk.Slug)
	r.git("branch", "lazy/"+tk.Slug, tip)
	r.git("pack-refs", "--all")
	lock := filepath.Join(r.dir, ".git", "packed-refs.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Fresh, it may be a git at work: left alone, and the branch with it.
	rep := r.doctor(1)
	for _, f := range rep.Findings {
		if f.Kind == "stale-packed-refs-lock" {
			t.Fatalf("doctor took a fresh packed-refs.lock for a leftover: %+v", f)
		}
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("doctor removed a fresh packed-refs.lock: %v", err)
	}
	old := time.Now().Add(-3 * time.Minute)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	rep = r.doctor(0)
	kinds := map[string]bool{}
	for _, f := range rep.Findings {
		kinds[f.Kind] = f.Repaired
	}
	if !kinds["stale-packed-refs-lock"] || !kinds["leftover-branch"] {
		t.Fatalf("doctor with a stale packed-refs.lock: %+v", rep.Findings)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatal("doctor left the stale packed-refs.lock")
	}
	if _, err := gitErr(r, "rev-parse", "--verify", "lazy/"+tk.Slug); err == nil {
		t.Fatal("the leftover branch survived the repair")
	}
}

func TestDoctorRemovesTokensOfEndedTurns(t *testing.T) {
	r := crashRepo(t)
	r = manualResume(r)
	r = r.with(script(t, "print hanging", "hang"))
	tk := r.create("token left behind")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	tokens := filepath.Join(r.dir, ".git", "lazy", "tokens")
	ents, err := os.ReadDir(tokens)
	if err != nil || len(ents) != 1 {
		t.Fatalf("a running turn should have one token record: %v %v", ents, err)
	}
	if fi, _ := ents[0].Info(); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token record mode %v", fi.Mode().Perm())
	}
	if rep := r.doctor(0, "--dry-run"); len(rep.Findings) != 0 {
		t.Fatalf("a live turn's token was reported: %+v", rep.Findings)
	}
	crash(t, sup) // never revoked
	r.waitStatus(tk.Slug, "interrupted")
	rep := r.doctor(1)
	k := rep.kinds()
	if _, ok := k["/stale-token"]; !ok {
		t.Fatalf("doctor: %+v", rep.Findings)
	}
	if ents, _ := os.ReadDir(tokens); len(ents) != 0 {
		t.Fatalf("stale token records remain: %v", ents)
	}
}

// A parked task whose worktree an older lazy put inside .git keeps
// working there, and doctor moves it out (Claude Code edits nothing under
// .git), uncommitted changes and all.
func TestDoctorMovesAWorktreeOutOfGitDir(t *testing.T) {
	r := newRepo(t)
	r.git("config", "lazy.worktreeDir", ".git/lazy/worktrees")
	r.git("config", "lazy.uncommitted", "keep")
	argvFile := filepath.Join(t.TempDir(), "argv.json")
	r = r.with(script(t, "argv "+argvFile, "write wip.txt work in progress", "print left wip.txt"))
	tk := r.create("old place")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	old := r.waitStatus(tk.Slug, "blocked").Session.Worktree
	if old != filepath.Join(r.dir, ".git", "lazy", "worktrees", tk.Slug) {
		t.Fatalf("worktree %s", old)
	}
	r.git("config", "--unset", "lazy.worktreeDir")
	if k := r.doctor(1, "--dry-run").kinds(); k[tk.Slug+"/legacy-worktree"] == "" {
		t.Fatalf("doctor --dry-run: %v", k)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatal("a dry run moved the worktree")
	}
	rep := r.doctor(0)
	moved := r.showFull(tk.Slug).Session.Worktree
	if moved == old || within(moved, r.dir) || !strings.Contains(rep.kinds()[tk.Slug+"/legacy-worktree"], "moved it to "+moved) {
		t.Fatalf("worktree %s after doctor: %+v", moved, rep.Findings)
	}
	if b, err := os.ReadFile(filepath.Join(moved, "wip.txt")); err != nil || string(b) != "work in progress\n" {
		t.Fatalf("the uncommitted change did not move: %q %v", b, err)
	}
	r.ok("unblock", tk.Slug, "-m", "go on")
	r.waitStatus(tk.Slug, "blocked")
	var got struct {
		Cwd string `json:"cwd"`
	}
	b, _ := os.ReadFile(argvFile)
	if err := json.Unmarshal(b, &got); err != nil || got.Cwd != moved {
		t.Fatalf("the next turn ran in %q, want %s", got.Cwd, moved)
	}
}

// TestAKilledGateIsEndedAndRemoved: an accept killed while its gate runs
// leaves the gate's command running (its process group is its own) in a
// scratch worktree; lazy doctor ends the command and removes the
// worktree, and the next accept lands the task.
func TestAKilledGateIsEndedAndRemoved(t *testing.T) {
	r := newRepo(t)
	started := filepath.Join(t.TempDir(), "gate-started")
	r.git("config", "--add", "lazy.gate", "touch "+started+" && sleep 30")
	tk := workedTask(t, r, "gated work", "work.txt w")
	accept := startLazy(t, r, "accept", tk.Slug)
	waitFile(t, started)
	_ = syscall.Kill(-accept.Process.Pid, syscall.SIGKILL)
	_ = accept.Wait()
	gates := func() []string {
		var out []string
		for _, p := range processesIn(gateScratchRoot(t, r.dir)) {
			if strings.Contains(p, "/.gate-") {
				out = append(out, p)
			}
		}
		return out
	}
	if len(gates()) == 0 {
		t.Fatal("the gate's command died with its accept: nothing left to test")
	}
	if res := r.run(nil, "doctor", "--json"); !strings.Contains(res.Stdout, "gate-leftover") {
		t.Fatalf("doctor: %s", res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(gates()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the killed gate's command still runs after doctor: %v", gates())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if list := r.git("worktree", "list", "--porcelain"); strings.Contains(list, ".gate-") {
		t.Fatalf("a scratch worktree is left:\n%s", list)
	}
	r.git("config", "--unset-all", "lazy.gate")
	r.git("config", "--add", "lazy.gate", "true")
	r.ok("accept", tk.Slug)
}

// A git killed as an accept fast-forwarded its target leaves HEAD.lock,
// ORIG_HEAD.lock or the branch's lock in the main checkout, and git
// moves nothing there after it: an accept meanwhile lands nothing and
// leaves the checkout as it was; once they are stale, doctor removes
// them and the accept lands. (The merge queue test found them.)
func TestDoctorRemovesStaleLocksOfTheCheckedOutBranch(t *testing.T) {
	r := newRepo(t)
	r.git("config", "--add", "lazy.gate", "true")
	tk := workedTask(t, r, "locked target", "l.txt l")
	var locks []string
	for _, name := range []string{"HEAD.lock", "ORIG_HEAD.lock", "refs/heads/main.lock"} {
		p := filepath.Join(r.dir, ".git", name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		locks = append(locks, p)
	}
	before := r.git("rev-parse", "main")
	if msg := r.fails(1, nil, "accept", tk.Slug); !strings.Contains(msg, "nothing was merged") {
		t.Fatalf("accept beside the locks: %s", msg)
	}
	if st := r.git("status", "--porcelain"); st != "" || r.git("rev-parse", "main") != before {
		t.Fatalf("the failed accept left the checkout %q, main %s (was %s)", st, r.git("rev-parse", "main"), before)
	}
	for _, f := range r.doctor(0).Findings {
		if f.Kind == "stale-ref-lock" {
			t.Fatalf("doctor took a fresh lock for a leftover: %+v", f)
		}
	}
	old := time.Now().Add(-3 * time.Minute)
	for _, p := range locks {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed := 0
	for _, f := range r.doctor(0).Findings {
		if f.Kind == "stale-ref-lock" && f.Repaired {
			removed++
		}
	}
	if removed != len(locks) {
		t.Fatalf("doctor removed %d of the %d stale locks", removed, len(locks))
	}
	r.ok("accept", tk.Slug)
}

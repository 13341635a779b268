package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/landing"
)

// killedTarget is a branch accepts merge into and the checkout where the
// user works on it, editing tracked and writing untracked files.
type killedTarget struct {
	branch, dir, tracked string
	// owed are the versions of each file the user wrote that must
	// survive: path -> contents (see chaosUser).
	owed map[string]map[string]bool
	k    int
}

// edit writes a new version of the tracked file and a new untracked one.
func (tg *killedTarget) edit(t *testing.T) {
	t.Helper()
	tg.k++
	files := map[string]string{
		tg.tracked:                       fmt.Sprintf("# %s\nthe user's edit %d of %s, uncommitted\n", tg.branch, tg.k, tg.branch),
		fmt.Sprintf("mine-%d.txt", tg.k): fmt.Sprintf("note %d of %s\n", tg.k, tg.branch),
	}
	for f, b := range files {
		path := filepath.Join(tg.dir, f)
		if cur, err := os.ReadFile(path); err == nil {
			delete(tg.owed[f], string(cur)) // what the user overwrites is theirs to lose
		}
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if tg.owed[f] == nil {
			tg.owed[f] = map[string]bool{}
		}
		tg.owed[f][b] = true
	}
}

// foldedParts are the stashes folded into stash sha, oldest first (sha
// alone when it is not a folded stash), read from the commits as git
// has them.
func foldedParts(t *testing.T, dir, sha string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%P%x00%s", sha).Output()
	if err != nil {
		t.Fatalf("read stash %s: %v", sha, err)
	}
	parents, subject, _ := strings.Cut(strings.TrimSpace(string(out)), "\x00")
	p := strings.Fields(parents)
	if len(p) == 5 && strings.Contains(subject, "lazy accept: your uncommitted changes from ") {
		return append(foldedParts(t, dir, p[3]), foldedParts(t, dir, p[4])...)
	}
	return []string{sha}
}

// lostFrom lists the versions the user wrote in tg that are neither in
// its checkout nor in one of the stashes (tracked or untracked part).
func (tg *killedTarget) lostFrom(t *testing.T, stashes []string) []string {
	t.Helper()
	var out []string
	for f, versions := range tg.owed {
		for v := range versions {
			if b, err := os.ReadFile(filepath.Join(tg.dir, f)); err == nil && string(b) == v {
				continue
			}
			found := false
			for _, sha := range stashes {
				for _, rev := range []string{sha + ":" + f, sha + "^3:" + f} {
					if got, err := exec.Command("git", "-C", tg.dir, "show", rev).Output(); err == nil && string(got) == v {
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

// stashList is lazy stash --json.
type stashList struct {
	Owed []struct {
		SHA     string `json:"sha"`
		Dir     string `json:"dir"`
		Target  string `json:"target"`
		Restore string `json:"restore"`
		Parts   []struct {
			SHA string    `json:"sha"`
			At  time.Time `json:"at"`
		} `json:"parts"`
		Conflicts []string `json:"conflicts"`
	} `json:"owed"`
}

// Killed work is easy to get back (issue 43, item 7). Accepts into two
// checkouts are killed (kill -9, through the crash hook) as each step of
// the accept begins, gate and cleanup included, twice over in an order a
// seed picks, some of them the second accept of lazy accept A B, while
// the user keeps editing both checkouts. Afterwards: each checkout's
// changes are in one stash that holds every version the user wrote and
// lost from the checkout; lazy stash lists it, its parts oldest first,
// with the command that restores them, which restores all of them;
// every accept killed during its cleanup is finished by lazy doctor,
// which says so; and no branch or worktree is left that nothing
// accounts for.
func TestKilledAcceptsKeepTheUsersChangesInOnePlacePerCheckout(t *testing.T) {
	seed := uint64(43)
	if v := os.Getenv("LAZY_KILL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LAZY_KILL_SEED=%q is not a number", v)
		}
		seed = n
	}
	t.Logf("seed %d (LAZY_KILL_SEED reproduces it)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	r := newRepo(t)
	rel := filepath.Join(filepath.Dir(r.dir), "release-checkout")
	r.git("branch", "release")
	r.git("worktree", "add", "-q", rel, "release")
	if err := os.WriteFile(filepath.Join(rel, "REL.md"), []byte("# release\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testGit(t, rel, "add", "REL.md")
	testGit(t, rel, "commit", "-q", "-m", "release notes")
	targets := []*killedTarget{
		{branch: "main", dir: r.dir, tracked: "README.md", owed: map[string]map[string]bool{}},
		{branch: "release", dir: rel, tracked: "REL.md", owed: map[string]map[string]bool{}},
	}
	n := 0
	worked := func(tg *killedTarget) task {
		n++
		title := fmt.Sprintf("killed %d", n)
		rr := r.with(script(t, fmt.Sprintf("write task-%d.txt work %d", n, n), "commit agent: "+title, "print did "+title))
		tk := rr.create(title, "-m", "Goal of "+title+".", "--target-branch", tg.branch)
		rr.ok("start", tk.Slug, "--command", fakeAgentBin)
		rr.waitStatus(tk.Slug, "blocked")
		return tk
	}
	kills := map[string]int{}
	var all []task
	accept := func(crashAt string, tasks ...task) {
		t.Helper()
		args := []string{"accept"}
		for _, tk := range tasks {
			args = append(args, tk.Slug)
		}
		cmd := exec.Command(lazyBin, args...)
		cmd.Dir, cmd.Env = r.dir, append(r.environ(), landing.CrashAtEnv+"="+crashAt)
		out, _ := cmd.CombinedOutput()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		phase, _, _ := strings.Cut(crashAt, ":")
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || acceptPhaseOf(string(out)) != phase {
			t.Fatalf("lazy %s with %s=%s was not killed in %s (%v):\n%s", strings.Join(args, " "), landing.CrashAtEnv, crashAt, phase, cmd.ProcessState, out)
		}
		kills[phase]++
	}
	phases := func(gate bool) []string {
		var ids []string
		plan := landing.AcceptPlan(false, true)
		if gate {
			ids = append(ids, "gate")
		}
		for _, p := range plan {
			ids = append(ids, p.ID)
		}
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids
	}
	for round := 0; round < 2; round++ {
		if round == 1 {
			r.git("config", "lazy.gate", "true")
		}
		// Each checkout sees an accept killed at every step, in an order
		// the seed picks.
		for _, phase := range phases(round == 1) {
			for _, i := range rng.Perm(len(targets)) {
				tg := targets[i]
				tk := worked(tg)
				all = append(all, tk)
				tg.edit(t)
				accept(phase, tk)
			}
		}
	}
	// Queued accepts: the second of lazy accept A B dies.
	for _, crashAt := range []string{"stash:2", "restore:2"} {
		tg := targets[rng.IntN(len(targets))]
		a, b := worked(tg), worked(tg)
		all = append(all, a, b)
		tg.edit(t)
		accept(crashAt, a, b)
	}
	for _, tg := range targets {
		tg.edit(t) // the user goes on working
	}
	t.Logf("killed accepts by phase: %v", kills)

	// lazy doctor finishes or reports every one.
	first := r.doctor(1)
	cleanups := 0
	for _, f := range first.Findings {
		if f.Kind == "interrupted-cleanup" {
			cleanups++
			if !f.Repaired || !strings.Contains(f.Detail, "killed before it removed its worktree") || !strings.Contains(f.Action, "recreates the branch") {
				t.Errorf("doctor on an interrupted cleanup: %+v", f)
			}
		}
	}
	if cleanups != kills["cleanup"] {
		t.Errorf("doctor finished %d interrupted cleanups, %d accepts were killed in theirs: %+v", cleanups, kills["cleanup"], first.Findings)
	}
	rep := r.doctor(1)
	for _, f := range rep.Findings {
		if f.Kind != "owed-stash" {
			t.Errorf("after the repair doctor still finds %+v", f)
		}
	}

	// One stash per checkout, holding everything the user lost from it.
	var list stashList
	out := r.ok("stash", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("lazy stash --json: %v\n%s", err, out)
	}
	byTarget := map[string]int{}
	for _, o := range list.Owed {
		if byTarget[o.Target]++; byTarget[o.Target] > 1 {
			t.Fatalf("%s has %d owed stashes, want one: %+v", o.Target, byTarget[o.Target], list.Owed)
		}
		parts := foldedParts(t, r.dir, o.SHA)
		if len(parts) > 1 && len(o.Parts) != len(parts) {
			t.Errorf("lazy stash lists %d parts of %s, git has %d", len(o.Parts), o.SHA, len(parts))
		}
		for j := 1; j < len(o.Parts); j++ {
			if o.Parts[j].At.Before(o.Parts[j-1].At) || o.Parts[j].SHA != parts[j] {
				t.Errorf("the parts of %s are not oldest first: %+v (git: %v)", o.SHA, o.Parts, parts)
			}
		}
	}
	for _, tg := range targets {
		var stashes []string
		for _, o := range list.Owed {
			if o.Target == tg.branch {
				stashes = append(stashes, foldedParts(t, r.dir, o.SHA)...)
				if o.Dir != tg.dir {
					t.Errorf("the stash of %s restores in %s, not its checkout %s", tg.branch, o.Dir, tg.dir)
				}
			}
		}
		if lost := tg.lostFrom(t, stashes); len(lost) > 0 {
			t.Fatalf("the user's changes in %s are neither there nor in its owed stash %v:\n%s\ngit stash list:\n%s", tg.branch, stashes, strings.Join(lost, "\n"), r.git("stash", "list"))
		}
	}
	text := r.ok("stash")
	t.Logf("lazy stash:\n%s", text)
	for _, o := range list.Owed {
		if !strings.Contains(text, "restore them all: lazy stash restore "+o.Target) || !strings.Contains(text, o.Restore) {
			t.Errorf("lazy stash does not say how to restore %s:\n%s", o.Target, text)
		}
		for j, p := range o.Parts {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %d\. .* stash %s`, j+1, p.SHA)).MatchString(text) {
				t.Errorf("lazy stash does not list part %d (%s) of %s in order:\n%s", j+1, p.SHA, o.Target, text)
			}
		}
	}
	if len(list.Owed) != len(targets) {
		t.Fatalf("%d checkouts have owed stashes, want both: the kills did not test what they should: %+v", len(list.Owed), list.Owed)
	}
	for _, o := range list.Owed {
		if len(o.Parts) < 2 {
			t.Fatalf("the owed stash of %s holds %d accepts' stashes: nothing was folded", o.Target, len(o.Parts))
		}
	}

	// No branch or worktree nothing accounts for: a complete task's are
	// gone, no accept record or accept checkout is left.
	status := map[string]string{}
	for _, tk := range all {
		status["lazy/"+tk.Slug] = r.show(tk.Slug).Status
	}
	for _, b := range strings.Fields(r.git("branch", "--list", "--format=%(refname:short)", "lazy/*")) {
		if st := status[b]; st == "" || st == "complete" {
			t.Errorf("the branch %s is left, its task %q", b, st)
		}
	}
	for _, line := range strings.Split(r.git("worktree", "list", "--porcelain"), "\n") {
		if b, ok := strings.CutPrefix(line, "branch refs/heads/"); ok && strings.HasPrefix(b, "lazy/") && (status[b] == "" || status[b] == "complete") {
			t.Errorf("the worktree of %s is left, its task %q", b, status[b])
		}
	}
	if left, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "accepts", "*.json")); len(left) > 0 {
		t.Errorf("accept records are left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "tmp", "accept-*")); len(left) > 0 {
		t.Errorf("accept checkouts are left: %v", left)
	}

	// The one command restores everything, once the checkout is clean:
	// lazy stash restore for main, the git stash apply it prints for the
	// release checkout.
	for _, tg := range targets {
		testGit(t, tg.dir, "stash", "push", "-q", "--include-untracked", "-m", "the user's work of now")
	}
	for _, o := range list.Owed {
		tg := targets[0]
		if o.Target == "release" {
			tg = targets[1]
			args := strings.Fields(o.Restore)
			if len(args) < 4 || args[0] != "git" {
				t.Fatalf("restore command %q", o.Restore)
			}
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", o.Restore, err, out)
			}
		} else if out := r.ok("stash", "restore", "main"); !strings.Contains(out, "from "+words.Count(max(1, len(o.Parts)), "interrupted accept", "interrupted accepts")+" in ") {
			t.Fatalf("lazy stash restore main: %s", out)
		}
		for _, part := range foldedParts(t, r.dir, o.SHA) {
			for _, rev := range []string{part, part + "^3"} {
				files := strings.Fields(testGitOK(tg.dir, "ls-tree", "-r", "--name-only", rev)) // untracked
				if rev == part {
					files = strings.Fields(testGit(t, tg.dir, "diff", "--name-only", rev+"^1", rev))
				}
				for _, f := range files {
					got, err := os.ReadFile(filepath.Join(tg.dir, f))
					// Every line of it is back (two versions of one line
					// come back between conflict markers).
					for _, line := range strings.Split(strings.TrimSpace(testGitOK(tg.dir, "show", rev+":"+f)), "\n") {
						if err != nil || !strings.Contains(string(got), line) {
							t.Errorf("after the restore %s in %s lacks %q of stash %s: %q", f, tg.branch, line, part, got)
						}
					}
				}
			}
		}
	}
	if rep := r.doctor(0); len(rep.Findings) != 0 {
		t.Fatalf("doctor after the restore: %+v", rep.Findings)
	}
}

// testGit runs git in dir, failing the test on an error.
func testGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// testGitOK is git's output in dir, "" on an error.
func testGitOK(dir string, args ...string) string {
	out, _ := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	return string(out)
}

// An accept into a branch no worktree has checked out merges in a
// checkout of its own; killed before its record, or before it removed
// that checkout, it leaves one nothing else accounts for: lazy doctor
// names it and removes it (after recovering the accept), and the task
// is then accepted normally. A branch of its own doctor keeps, it says
// why.
func TestDoctorFinishesWhatAKilledAcceptLeftOutsideTheCheckout(t *testing.T) {
	r := newRepo(t)
	r.git("branch", "release")
	for _, phase := range []string{"record", "merge", "cleanup"} {
		rr := r.with(script(t, "write rel-"+phase+".txt work", "commit agent: rel "+phase, "print done"))
		tk := rr.create("into release "+phase, "-m", "Goal.", "--target-branch", "release")
		rr.ok("start", tk.Slug, "--command", fakeAgentBin)
		rr.waitStatus(tk.Slug, "blocked")
		cmd := exec.Command(lazyBin, "accept", tk.Slug)
		cmd.Dir, cmd.Env = r.dir, append(r.environ(), landing.CrashAtEnv+"="+phase)
		out, _ := cmd.CombinedOutput()
		if got := acceptPhaseOf(string(out)); got != phase {
			t.Fatalf("accept with %s=%s died in %s:\n%s", landing.CrashAtEnv, phase, got, out)
		}
		left, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "tmp", "accept-*"))
		if phase != "cleanup" && len(left) != 1 {
			t.Fatalf("killed in %s, the accept left checkouts %v", phase, left)
		}
		rep := r.doctor(0)
		saw := false
		for _, f := range rep.Findings {
			saw = saw || (f.Kind == "left-accept-checkout" || f.Kind == "interrupted-cleanup") && f.Repaired
		}
		if !saw && phase != "cleanup" {
			t.Errorf("killed in %s: doctor did not remove the checkout it left: %+v", phase, rep.Findings)
		}
		if left, _ := filepath.Glob(filepath.Join(r.dir, ".git", "lazy", "tmp", "accept-*")); len(left) != 0 {
			t.Fatalf("killed in %s: after doctor the accept checkouts %v are left", phase, left)
		}
		if st := r.show(tk.Slug).Status; st != "complete" {
			if res := r.run(nil, "accept", tk.Slug); res.Code != 0 {
				t.Fatalf("accept after doctor (killed in %s): %s", phase, res)
			}
		}
		if got := r.git("show", "release:rel-"+phase+".txt"); got != "work" {
			t.Fatalf("release lacks the work of %s: %q", tk.Slug, got)
		}
		if b := r.git("branch", "--list", "lazy/"+tk.Slug); b != "" {
			t.Fatalf("the branch of accepted %s is left: %q", tk.Slug, b)
		}
	}

	// A branch of this machine's session whose merge it cannot see (the
	// target was reset under it): kept, and doctor says why.
	tk := workedTask(t, r, "reset away", "gone.txt gone")
	tip := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug))
	r.ok("accept", tk.Slug)
	r.git("reset", "-q", "--hard", "HEAD~1")
	r.git("branch", "lazy/"+tk.Slug, tip)
	rep := r.doctor(1)
	kept := false
	for _, f := range rep.Findings {
		if f.Kind == "kept-branch" && f.Slug == tk.Slug && strings.Contains(f.Detail, "cannot confirm the merge") && strings.Contains(f.Detail, tip) && !f.Repaired {
			kept = true
		}
	}
	if !kept {
		t.Fatalf("doctor keeps the branch of %s without saying why: %+v", tk.Slug, rep.Findings)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "lazy/"+tk.Slug)); got != tip {
		t.Fatalf("doctor deleted a branch whose merge it cannot confirm")
	}
}

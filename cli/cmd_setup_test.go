package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
)

// TestInitSetsUpOnce: lazy init gives the repository a host id and the
// refspecs for refs/lazy/*, says what it did (in text and JSON), and a
// second run says it is set up already and changes nothing.
func TestInitSetsUpOnce(t *testing.T) {
	l := newLazy(t)
	var res struct {
		HostID string `json:"host_id"`
	}
	out := l.ok("init", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.HostID == "" {
		t.Fatalf("init --json: %v\n%s", err, out)
	}
	if got := testrepo.Git(t, l.dir, "config", "lazy.hostid"); got != res.HostID {
		t.Errorf("lazy.hostid is %q, init said %q", got, res.HostID)
	}
	again := l.ok("init")
	has(t, "a second init", again, "lazy is already set up in "+filepath.Join(l.dir, ".git"), "(host id "+res.HostID+")", "refs/lazy/*:refs/lazy/*")
	if got := testrepo.Git(t, l.dir, "config", "lazy.hostid"); got != res.HostID {
		t.Errorf("a second init changed the host id to %q", got)
	}
}

// TestDoctorFindsAndRepairs: a worktree removed by hand is a finding;
// --dry-run reports it and exits 1 saying one problem is left, doctor
// repairs it (git's entry pruned), and then finds nothing; --json says
// the same.
func TestDoctorFindsAndRepairs(t *testing.T) {
	l := newLazy(t)
	if out := l.ok("doctor"); !strings.HasPrefix(out, "No problems found.\nSandbox: ") {
		t.Fatalf("doctor on a clean repository:\n%s", out)
	}
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	wt := filepath.Join(testrepo.Git(t, l.dir, "config", "lazy.worktreeDir"), tk.Slug)
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	r := l.run("doctor", "--dry-run")
	if r.code != 1 || r.err != "lazy: 1 problem left unrepaired\n" {
		t.Fatalf("doctor --dry-run: %+v", r)
	}
	has(t, "doctor --dry-run", r.out, "fix-the-login: missing-worktree: git records a worktree at "+wt+" but the directory is gone", "would prune the entry")
	var rep struct {
		DryRun   bool `json:"dry_run"`
		Findings []struct {
			Slug     string `json:"slug"`
			Kind     string `json:"kind"`
			Repaired bool   `json:"repaired"`
		} `json:"findings"`
		Remaining int `json:"remaining"`
	}
	r = l.run("doctor", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != 1 || !rep.DryRun || rep.Remaining != 1 ||
		len(rep.Findings) != 1 || rep.Findings[0].Kind != "missing-worktree" || rep.Findings[0].Repaired {
		t.Fatalf("doctor --dry-run --json (exit %d, %v): %+v", r.code, err, rep)
	}
	if wts := testrepo.Git(t, l.dir, "worktree", "list"); !strings.Contains(wts, wt) {
		t.Fatalf("--dry-run pruned: %s", wts)
	}
	out := l.ok("doctor")
	has(t, "doctor", out, "pruned the entry")
	if wts := testrepo.Git(t, l.dir, "worktree", "list"); strings.Contains(wts, wt) {
		t.Errorf("doctor left git's entry: %s", wts)
	}
	if out := l.ok("doctor", tk.Slug); !strings.HasPrefix(out, "No problems found.") {
		t.Errorf("doctor after the repair:\n%s", out)
	}
	l.fails(1, []string{"doctor", "nope"}, `no task named "nope"`)
}

// TestReadsReconcileADeadTurn: a task recorded working whose supervisor
// is gone (none ever ran here) is marked interrupted by the next
// command that reads the list, past lazy.startGrace, and lazy show says
// why; with lazy.autoResume off nothing is relaunched.
func TestReadsReconcileADeadTurn(t *testing.T) {
	l := newLazy(t)
	tk := l.worked("Fix the login", "auth/login.go", "package auth\n")
	testrepo.Git(t, l.dir, "config", "lazy.startGrace", "1ms")
	testrepo.Git(t, l.dir, "config", "lazy.autoResume", "false")
	l.setStatus(tk.ID, machine.Working)
	out := l.ok("list")
	has(t, "list after a dead turn", out, tk.Slug, "interrupted")
	got := l.show(tk.Slug)
	if got.Status != "interrupted" {
		t.Fatalf("after the read: %+v", got)
	}
	has(t, "show of the interrupted task", l.ok("show", tk.Slug), "interrupted", "lazy resume "+tk.Slug)
}

// TestNotifyListsAndTestsTargets: lazy notify lists the targets of
// lazy.notify and what they announce, lazy notify test sends each a
// sample event (a cmd: target gets it as JSON on stdin) and says how it
// went; a value that is no target is one sentence naming the forms.
func TestNotifyListsAndTestsTargets(t *testing.T) {
	l := newLazy(t)
	if out := l.ok("notify"); !strings.HasPrefix(out, "No notification targets: add one with git config --add lazy.notify VALUE") {
		t.Errorf("notify with none: %q", out)
	}
	l.fails(1, []string{"notify", "test"}, "no notification targets to test")
	got := filepath.Join(t.TempDir(), "got.jsonl")
	target := "cmd:cat >> " + got
	testrepo.Git(t, l.dir, "config", "--add", "lazy.notify", target)
	out := l.ok("notify")
	// A cmd: target's command is shown cut (it may carry a secret).
	has(t, "lazy notify", out, "cmd:cat >> ", "at most 10 events a minute per target", "blocked, conflict")
	var list struct {
		Targets []struct{ Target, Kind string } `json:"targets"`
		Events  []string                        `json:"events"`
	}
	l.json(&list, "notify", "--json")
	if len(list.Targets) != 1 || list.Targets[0].Kind != "cmd" || len(list.Events) == 0 {
		t.Errorf("notify --json: %+v", list)
	}
	if out := l.ok("notify", "test"); !strings.HasPrefix(out, "ok") || !strings.Contains(out, "cmd:cat >> ") {
		t.Errorf("notify test: %q", out)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Kind, Slug, Repo string
	}
	if err := json.Unmarshal(b, &ev); err != nil || ev.Kind != "test" || ev.Repo != filepath.Base(l.dir) {
		t.Errorf("the target got %q (%v)", b, err)
	}
	// A value that is no target is named, and the good ones still listed.
	testrepo.Git(t, l.dir, "config", "--add", "lazy.notify", "carrier-pigeon")
	r := l.run("notify")
	if r.code != 0 || !strings.Contains(r.out, "cmd:cat >> ") ||
		r.err != "lazy: lazy.notify \"carrier-pigeon\" is not a target: write cmd:COMMAND, desktop, an http(s) URL, or json:URL\n" {
		t.Errorf("notify with a bad value: %+v", r)
	}
	// With only values that are no target, nothing is announced: the
	// listing says to fix them, not to add one, and exits 1, its --json
	// naming them.
	testrepo.Git(t, l.dir, "config", "--unset-all", "lazy.notify", "^cmd:")
	r = l.run("notify")
	if r.code != 1 || !strings.HasPrefix(r.out, "No valid notification targets: fix the values above with lazy config lazy.notify") ||
		!strings.Contains(r.err, "carrier-pigeon") {
		t.Errorf("notify with only a bad value: %+v", r)
	}
	r = l.run("notify", "--json")
	var bad struct {
		Targets  []any    `json:"targets"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.out), &bad); err != nil || r.code != 1 || len(bad.Targets) != 0 ||
		len(bad.Problems) != 1 || !strings.Contains(bad.Problems[0], "carrier-pigeon") {
		t.Errorf("notify --json with only a bad value: %+v (%v)", r, err)
	}
}

// clone is a second machine's clone of the remote at bare: its own
// checkout, the same HOME (the tests' environment is one process's).
func clone(t *testing.T, l *lazyT, bare string) *lazyT {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	testrepo.Git(t, t.TempDir(), "clone", "-q", bare, dir)
	testrepo.Identity(t, dir)
	return l.in(dir)
}

// TestPushAndPullCarryTasksBetweenClones: tasks created in one clone
// and pushed reach another by pull, task by task, said in text and JSON;
// what the second adds comes back the same way; an unknown remote and a
// repository without one are errors that say what to do.
func TestPushAndPullCarryTasksBetweenClones(t *testing.T) {
	testrepo.FullLane(t)
	l := newLazy(t)
	l.fails(1, []string{"push"}, "this repository has no remote; add one with git remote add")
	l.fails(1, []string{"pull"}, "this repository has no remote")
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, l.dir, "init", "-q", "--bare", bare)
	testrepo.Git(t, l.dir, "remote", "add", "origin", bare)
	testrepo.Git(t, l.dir, "push", "-q", "origin", "main")
	a := l.create("Fix the login", "-m", "goal one")
	l.create("Write docs")

	if out := l.ok("push"); out != "Pushed to origin: 2 tasks sent (new there)\n" {
		t.Errorf("push says %q", out)
	}
	var again struct {
		Remote   string `json:"remote"`
		UpToDate int    `json:"up_to_date"`
		Pushed   int    `json:"pushed_tasks"`
	}
	l.json(&again, "push", "--json")
	if again.Remote != "origin" || again.UpToDate != 2 || again.Pushed != 0 {
		t.Errorf("a second push --json: %+v", again)
	}

	b := clone(t, l, bare)
	out := b.ok("pull")
	has(t, "pull in the clone", out, "origin", "2")
	if got := b.show(a.Slug); got.ID != a.ID || got.Goal != "goal one" || got.Status != "backlog" {
		t.Fatalf("the pulled task: %+v", got)
	}
	b.ok("comment", a.Slug, "-m", "from the other machine")
	b.ok("push")
	var rep struct {
		Remote    string   `json:"remote"`
		Created   []string `json:"created"`
		FastFwd   []string `json:"fast_forwarded"`
		Merged    []string `json:"merged"`
		Refused   []any    `json:"refused"`
		UpToDate  int      `json:"up_to_date"`
		LocalAhed int      `json:"local_ahead"`
	}
	l.json(&rep, "pull", "--json")
	if rep.Remote != "origin" || len(rep.FastFwd) != 1 || rep.FastFwd[0] != a.Slug || len(rep.Created) != 0 || len(rep.Refused) != 0 {
		t.Errorf("pull --json back in the first clone: %+v", rep)
	}
	if got := l.show(a.Slug); got.Comments != 1 || got.CommentList[0].Text != "from the other machine" {
		t.Errorf("the comment did not come back: %+v", got.CommentList)
	}
	l.fails(1, []string{"pull", "nowhere"}, "nowhere")
	l.fails(1, []string{"push", "nowhere"}, "nowhere")
}

// TestPoolShowsAnEmptyPool: lazy pool on a remote with no runner says
// so section by section, --json has the empty lists, and releasing a
// task that is not there is an error.
func TestPoolShowsAnEmptyPool(t *testing.T) {
	l := newLazy(t)
	l.fails(1, []string{"pool"}, "this repository has no remote")
	bare := filepath.Join(t.TempDir(), "remote.git")
	testrepo.Git(t, l.dir, "init", "-q", "--bare", bare)
	testrepo.Git(t, l.dir, "remote", "add", "origin", bare)
	if out := l.ok("pool"); out != "Pool on origin\n\nRunners (0):\n\nClaims (0):\n\nWaiting (0):\n" {
		t.Errorf("lazy pool: %q", out)
	}
	var p struct {
		Remote  string `json:"remote"`
		Runners []any  `json:"runners"`
		Claims  []any  `json:"claims"`
		Waiting []any  `json:"waiting"`
	}
	l.json(&p, "pool", "--json")
	if p.Remote != "origin" || p.Runners == nil || p.Claims == nil || p.Waiting == nil || len(p.Runners)+len(p.Claims)+len(p.Waiting) != 0 {
		t.Errorf("pool --json: %+v", p)
	}
	l.fails(1, []string{"pool", "release", "nope"}, `no task named "nope"`)
	l.fails(1, []string{"pool", "--remote", "nowhere"}, "nowhere")
}

// TestConfigNamesAnIncludedFileAsTheOrigin: a value set in a file the
// global config includes (include.path) or includes for this repository
// (includeIf gitdir:) is lazy's effective value, and lazy config names
// that file as where it comes from; a repository the condition does not
// match does not get it.
func TestConfigNamesAnIncludedFileAsTheOrigin(t *testing.T) {
	l := ownHomeLazy(t)
	work := filepath.Join(l.home, "work.inc")
	always := filepath.Join(l.home, "always.inc")
	global := "[include]\n\tpath = always.inc\n[includeIf \"gitdir:" + l.dir + "/\"]\n\tpath = work.inc\n"
	for path, body := range map[string]string{
		filepath.Join(l.home, ".gitconfig"): global,
		always:                              "[lazy]\n\tagent = codex\n",
		work:                                "[lazy]\n\twatchdogTimeout = 45m\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var rows []configSetting
	l.json(&rows, "config", "--json")
	by := map[string]configSetting{}
	for _, r := range rows {
		by[r.Name] = r
	}
	if r := by["lazy.agent"]; r.Value != "codex" || r.Scope != "global" || r.File != always {
		t.Errorf("lazy.agent from include.path: %+v", r)
	}
	if r := by["lazy.watchdogTimeout"]; r.Value != "45m" || r.Scope != "global" || r.File != work {
		t.Errorf("lazy.watchdogTimeout from includeIf: %+v", r)
	}
	out := l.ok("config", "--changed")
	has(t, "lazy config --changed", out, "global "+work, "global "+always)

	other := ownHomeLazy(t)
	if err := os.WriteFile(filepath.Join(other.home, ".gitconfig"), []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other.home, "always.inc"), []byte("[lazy]\n\tagent = codex\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other.json(&rows, "config", "--json")
	for _, r := range rows {
		if r.Name == "lazy.watchdogTimeout" && r.Scope != "default" {
			t.Errorf("another repository got the includeIf's value: %+v", r)
		}
	}
}

// TestMCPServesTheBuilderOverStdio: lazy mcp answers MCP's initialize
// and a tool call on stdin/stdout, in the test's process: lazy_list
// returns the tasks.
func TestMCPServesTheBuilderOverStdio(t *testing.T) {
	l := newLazy(t)
	l.create("Fix the login")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lazy_list","arguments":{}}}`,
	}, "\n") + "\n"
	pr, pw := io.Pipe()
	out, wait := l.start(pr, "mcp")
	if _, err := io.WriteString(pw, in); err != nil {
		t.Fatal(err)
	}
	// The answers come as the requests are served; the input ends once
	// the tool call has its answer.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), `"id":2`); {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to the tool call:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = pw.Close()
	r := wait()
	if r.code != 0 {
		t.Fatalf("lazy mcp: %+v", r)
	}
	sc := bufio.NewScanner(strings.NewReader(r.out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var sawInit, sawList bool
	for sc.Scan() {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		switch msg.ID {
		case 1:
			sawInit = strings.Contains(string(msg.Result), `"tools"`)
		case 2:
			sawList = strings.Contains(string(msg.Result), "fix-the-login")
		}
	}
	if !sawInit || !sawList {
		t.Errorf("lazy mcp's answers (initialize %v, lazy_list %v):\n%s", sawInit, sawList, r.out)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gate cannot be decided by the candidate (SECURITY.md): a task
// that rewrites what its gate runs does not land through the gate; only
// a human's approval lands it.

// checkScript is the gate script these tests commit on main: it fails
// while forbidden.txt exists.
const checkScript = "test ! -e forbidden.txt || { echo 'GATE: forbidden.txt must not exist'; exit 1; }\n"

// protectRepo is a repository whose gate is "sh check.sh", check.sh
// committed on main.
func protectRepo(t *testing.T) *runner {
	t.Helper()
	r := newRepo(t)
	if err := os.WriteFile(filepath.Join(r.dir, "check.sh"), []byte(checkScript), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "check.sh")
	r.git("commit", "-q", "-m", "the gate's script")
	r.git("config", "lazy.gate", "sh check.sh")
	return r
}

// execAgent writes a shell script for the exec agent (it runs in the
// task's worktree, the prompt in LAZY_PROMPT) and returns its path.
func execAgent(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nset -e\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// cheatAgent rewrites the gate's script to pass and adds the file the
// gate forbids.
const cheatAgent = `printf 'exit 0\n' > check.sh
printf 'nope\n' > forbidden.txt
git add check.sh forbidden.txt
git commit -q -m "agent: make the check pass"
echo "the checks pass now"
`

// startWith starts task slug with the exec agent command and waits for
// it to park.
func startWith(t *testing.T, r *runner, slug, command string) {
	t.Helper()
	r.ok("start", slug, "--agent", "exec", "--command", command)
	r.waitStatus(slug, "blocked")
}

// protectedShow is what show --json and the MCP results say of a task's
// protected changes and its gate record.
type protectedShow struct {
	Protected *struct {
		Files   []string `json:"files"`
		Approve string   `json:"approve"`
	} `json:"protected_changes"`
	GateRecord *struct {
		Runs []struct {
			ID     string `json:"id"`
			Passed bool   `json:"passed"`
			Origin string `json:"origin"`
			Host   string `json:"host"`
		} `json:"runs"`
		Approved *struct {
			By    string   `json:"by"`
			Files []string `json:"files"`
		} `json:"approved_protected"`
	} `json:"gate_record"`
	Gate *struct {
		State  string `json:"state"`
		Origin string `json:"origin"`
	} `json:"gate"`
}

func (r *runner) protectedShow(name string) protectedShow {
	r.t.Helper()
	var s protectedShow
	out := r.ok("show", "--json", name)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		r.t.Fatalf("show --json: %v\n%s", err, out)
	}
	return s
}

// TestATaskThatRewritesItsGateDoesNotLandWithoutAHuman: the task
// rewrites check.sh (which the gate runs) to exit 0 and adds the file
// the gate forbids. Its gate would pass; accept, the queue, a builder
// over MCP and an agent's actor all refuse to land it, and show, diff,
// the dry run, the queue, the web page and MCP name check.sh. A human's
// lazy accept --approve-protected lands it, with the decision recorded
// on the task and in the commit's trailer.
func TestATaskThatRewritesItsGateDoesNotLandWithoutAHuman(t *testing.T) {
	r := withDaemon(t, protectRepo(t))
	cheat := r.create("Make the checks pass", "-m", "Make the checks pass.")
	startWith(t, r, cheat.Slug, execAgent(t, cheatAgent))
	honest := workedTask(t, r, "honest work", "honest.txt yes")
	before := strings.TrimSpace(r.git("rev-parse", "main"))
	notLanded := func(after string) {
		t.Helper()
		if got := strings.TrimSpace(r.git("rev-parse", "main")); got != before {
			t.Fatalf("after %s main moved to %s", after, got)
		}
		if res := r.gitRun("cat-file", "-e", "main:forbidden.txt"); res == nil {
			t.Fatalf("after %s forbidden.txt is on main", after)
		}
		if st := r.refStatus(cheat.ID); st != "blocked" {
			t.Fatalf("after %s the task is %s", after, st)
		}
	}

	// accept refuses, names the file and the way on, and runs no gate.
	msg := r.fails(1, nil, "accept", cheat.Slug)
	for _, want := range []string{"touches protected paths", "(check.sh)", "nothing was merged", "lazy diff " + cheat.Slug, "a human lands it with lazy accept " + cheat.Slug + " --approve-protected"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("accept's refusal lacks %q:\n%s", want, msg)
		}
	}
	notLanded("accept")
	if s := r.protectedShow(cheat.Slug); s.GateRecord != nil && len(s.GateRecord.Runs) > 0 {
		t.Fatalf("the gate ran on a change it may not decide: %+v", s.GateRecord)
	}

	// What a person reads names it: show (text and JSON), diff, the dry run.
	out := r.ok("show", cheat.Slug)
	for _, want := range []string{"protected: touches protected paths the gate alone may not decide: check.sh; it lands only when a human approves them: lazy accept " + cheat.Slug + " --approve-protected", "--approve-protected   # a human, after reviewing them"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	if s := r.protectedShow(cheat.Slug); s.Protected == nil || !slices.Equal(s.Protected.Files, []string{"check.sh"}) || s.Protected.Approve != "lazy accept "+cheat.Slug+" --approve-protected" {
		t.Fatalf("show --json protected_changes: %+v", s.Protected)
	}
	diff := r.run(nil, "diff", cheat.Slug)
	if diff.Code != 0 || !strings.Contains(diff.Stderr, "touches protected paths the gate alone may not decide: check.sh") || !strings.Contains(diff.Stdout, "+exit 0") {
		t.Fatalf("diff: %s", diff)
	}
	var dj protectedShow
	if err := json.Unmarshal([]byte(r.ok("diff", "--json", cheat.Slug)), &dj); err != nil || dj.Protected == nil || !slices.Equal(dj.Protected.Files, []string{"check.sh"}) {
		t.Fatalf("diff --json protected_changes: %+v (%v)", dj.Protected, err)
	}
	dry := r.run(nil, "accept", "--dry-run", cheat.Slug)
	if dry.Code != 1 || !strings.Contains(dry.Stdout, "Accept would refuse now: its change touches protected paths the gate alone may not decide: check.sh") {
		t.Fatalf("accept --dry-run: %s", dry)
	}

	// The queue: the honest task lands, the cheat leaves for a human.
	q := r.run(nil, "accept", cheat.Slug, honest.Slug)
	if q.Code != 1 || !strings.Contains(q.Stdout, "Not accepted "+cheat.Slug+": accept "+cheat.Slug+": its change touches protected paths") || !strings.Contains(q.Stdout, "Accepted "+honest.Slug) {
		t.Fatalf("accept of a queue: %s", q)
	}
	// main moved by the honest task alone.
	if n := strings.TrimSpace(r.git("rev-list", "--count", before+"..main")); n != "1" || !strings.Contains(r.git("log", "-1", "--format=%B", "main"), "Lazy-Task: "+honest.ID) {
		t.Fatalf("the queue landed %s commit(s), want the honest task's", n)
	}
	before = strings.TrimSpace(r.git("rev-parse", "main"))
	notLanded("the queue")
	if _, left := r.queueOf(cheat.ID); !slices.Contains(left, "protected") {
		t.Fatalf("the queue did not record the protected change: %v", left)
	}
	if out := r.ok("queue"); !strings.Contains(out, "protected") || !strings.Contains(out, "touches protected paths (check.sh): parked for a human's lazy accept "+cheat.Slug+" --approve-protected") {
		t.Fatalf("lazy queue:\n%s", out)
	}

	// The web view names it.
	full, base := webURL(t, r)
	_, token, _ := strings.Cut(full, "?token=")
	page := get(t, base+"/task/"+cheat.ID+"?token="+token, "")
	for _, want := range []string{`<div id="protected">`, "<li><code>check.sh</code></li>", "lazy accept " + cheat.Slug + " --approve-protected"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the task page lacks %q:\n%s", want, page)
		}
	}

	// The web accept page names them beside the box that approves them;
	// an accept posted without the box is refused, naming the file.
	actions, _ := webURL(t, r, "--actions")
	_, actToken, _ := strings.Cut(actions, "?token=")
	acceptPage := get(t, base+"/task/"+cheat.ID+"/accept?token="+actToken, "")
	for _, want := range []string{"<li><code>check.sh</code></li>", `name="approve_protected" value="yes"`, "I reviewed them and approve them"} {
		if !strings.Contains(acceptPage, want) {
			t.Fatalf("the accept page lacks %q:\n%s", want, acceptPage)
		}
	}
	m := csrfField.FindStringSubmatch(acceptPage)
	if m == nil {
		t.Fatal("the accept page has no CSRF token")
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if code, body := postForm(t, noRedirect, base+"/task/"+cheat.ID+"/accept", actToken, m[1], base, ""); code != http.StatusConflict || !strings.Contains(body, "(check.sh)") {
		t.Fatalf("a web accept without the approval: %d\n%s", code, body)
	}
	notLanded("a web accept without the box")

	// A builder over MCP sees it, and can never approve it.
	s, _ := mcpClient(t, r, nil, "mcp")
	var shown protectedShow
	decodeInto(t, call(t, s, "lazy_show", map[string]any{"task": cheat.ID}, false), &shown)
	if shown.Protected == nil || !slices.Equal(shown.Protected.Files, []string{"check.sh"}) {
		t.Fatalf("lazy_show protected_changes: %+v", shown.Protected)
	}
	decodeInto(t, call(t, s, "lazy_diff", map[string]any{"task": cheat.ID}, false), &shown)
	if shown.Protected == nil || !slices.Equal(shown.Protected.Files, []string{"check.sh"}) {
		t.Fatalf("lazy_diff protected_changes: %+v", shown.Protected)
	}
	refusal := call(t, s, "lazy_accept", map[string]any{"task": cheat.ID}, true)
	for _, want := range []string{"check.sh", "only a human can approve them", "lazy accept " + cheat.Slug + " --approve-protected"} {
		if !strings.Contains(refusal, want) {
			t.Fatalf("lazy_accept's refusal lacks %q: %s", want, refusal)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "lazy_accept", Arguments: map[string]any{"task": cheat.ID, "approve_protected": true}}); err == nil && !res.IsError {
		t.Fatalf("lazy_accept took an approval: %+v", res)
	}
	notLanded("MCP")

	// Nor can a command labelled as an agent or a builder.
	for _, actor := range []string{"agent", "builder"} {
		if msg := r.with("LAZY_ACTOR="+actor).fails(1, nil, "accept", cheat.Slug, "--approve-protected"); !strings.Contains(msg, "only a human may approve changes to protected paths") {
			t.Fatalf("accept --approve-protected as %s: %s", actor, msg)
		}
	}
	notLanded("an agent's approval")

	// A human approves: it lands, through its gate, with the decision
	// recorded.
	res := r.run(nil, "accept", cheat.Slug, "--approve-protected")
	if res.Code != 0 || !strings.Contains(res.Stderr, "protected paths approved by a human: check.sh") {
		t.Fatalf("accept --approve-protected: %s", res)
	}
	msgOnMain := r.git("log", "-1", "--format=%B", "main")
	for _, want := range []string{"Lazy-Task: " + cheat.ID, "Lazy-Gate: passed ", "Lazy-Approved-Protected: check.sh"} {
		if !strings.Contains(msgOnMain, want) {
			t.Fatalf("the landed commit lacks %q:\n%s", want, msgOnMain)
		}
	}
	if got := strings.TrimSpace(r.git("show", "main:forbidden.txt")); got != "nope" {
		t.Fatalf("main:forbidden.txt = %q", got)
	}
	sh := r.protectedShow(cheat.Slug)
	if sh.GateRecord == nil || sh.GateRecord.Approved == nil || sh.GateRecord.Approved.By != "human" || !slices.Equal(sh.GateRecord.Approved.Files, []string{"check.sh"}) {
		t.Fatalf("the approval is not recorded: %+v", sh.GateRecord)
	}
	if out := r.ok("show", cheat.Slug); !strings.Contains(out, "protected paths approved by human at ") || !strings.Contains(out, ": check.sh") {
		t.Fatalf("show does not say who approved what:\n%s", out)
	}
	humanAccept := false
	for _, h := range r.showFull(cheat.Slug).History {
		humanAccept = humanAccept || h.Op == "accept" && h.Actor == "human" && h.To == "merging"
	}
	if !humanAccept {
		t.Fatal("no human accept in the history")
	}
}

// gitRun runs git and returns its error (nil: it exited 0).
func (r *runner) gitRun(args ...string) error {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	return cmd.Run()
}

// TestAutoFixThatRewritesTheGateParksForAHuman: with lazy.gate.autoFix,
// the agent's "fix" of a failed gate is to rewrite the gate's script.
// The daemon's re-entry refuses it as a protected change and leaves it
// parked for a human, with the file named: no further fix round, no
// loop, nothing landed.
func TestAutoFixThatRewritesTheGateParksForAHuman(t *testing.T) {
	r := protectRepo(t)
	r.git("config", "lazy.gate.autoFix", "true")
	r.git("config", "lazy.gate.maxAttempts", "3")
	prompts := t.TempDir()
	agent := execAgent(t, `n=$(ls `+prompts+` | wc -l)
printf '%s' "$LAZY_PROMPT" > `+prompts+`/prompt-$((n+1)).txt
case "$LAZY_PROMPT" in
*"GATE: forbidden.txt must not exist"*)
  printf 'exit 0\n' > check.sh
  git add check.sh
  git commit -q -m "agent: the check was wrong"
  echo "fixed the check"
  ;;
*)
  printf 'work\n' > work.txt
  printf 'x\n' > forbidden.txt
  git add work.txt forbidden.txt
  git commit -q -m "agent: the work"
  echo "did the work"
  ;;
esac
`)
	tk := r.create("Gated work", "-m", "Write work.txt.")
	log := startDaemon(t, r)
	startWith(t, r, tk.Slug, agent)
	before := strings.TrimSpace(r.git("rev-parse", "main"))
	gateRes := r.run(nil, "accept", tk.Slug)
	if gateRes.Code == 0 || !strings.Contains(gateRes.Stderr, "the failure went to the agent (fix round 1 of 3)") {
		t.Fatalf("accept with a failing gate: %s", gateRes)
	}
	// The daemon re-enters it after the fix turn, and the queue lets it
	// go as protected.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, left := r.queueOf(tk.ID); slices.Contains(left, "protected") {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log)
			t.Fatalf("the re-entry never left as protected; daemon log:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if entries, _ := r.queueOf(tk.ID); len(entries) != 0 {
		t.Fatalf("the task is still queued: %v", entries)
	}
	s := r.gateShow(tk.Slug)
	if s.Status != "blocked" || s.GateRecord == nil || len(s.GateRecord.Runs) != 1 || s.GateRecord.FixRounds != 1 {
		t.Fatalf("after the re-entry: status %s, gate %+v", s.Status, s.GateRecord)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "main")); got != before {
		t.Fatalf("main moved to %s", got)
	}
	if n := len(agentPrompts(t, prompts)); n != 2 {
		t.Fatalf("the agent had %d turns, want 2 (the work and one fix): a protected change must not go back to it", n)
	}
	if out := r.ok("queue"); !strings.Contains(out, "touches protected paths (check.sh): parked for a human's lazy accept "+tk.Slug+" --approve-protected") {
		t.Fatalf("lazy queue:\n%s", out)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "protected: touches protected paths the gate alone may not decide: check.sh") {
		t.Fatalf("show:\n%s", out)
	}
}

// TestGateThatRunsTheTasksOwnTests: a gate that runs the task's own
// tests (check.sh runs every tests/*.sh). What protected means there:
// the harness the gate names (check.sh) is protected; the tests are the
// task's work, which it may add to and change, unless the repository
// names them in lazy.gate.protect: then rewriting an existing test to
// pass needs a human, and the refusal names it.
func TestGateThatRunsTheTasksOwnTests(t *testing.T) {
	r := newRepo(t)
	for name, body := range map[string]string{
		"check.sh":       "for t in tests/*.sh; do sh \"$t\" || exit 1; done\n",
		"tests/login.sh": "grep -q secure login.txt\n",
		"login.txt":      "secure\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(r.dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.git("add", ".")
	r.git("commit", "-q", "-m", "tests")
	r.git("config", "lazy.gate", "sh check.sh")

	// A task that adds a test and the code it tests lands through the
	// gate alone.
	add := workedTask(t, r, "add logout", "logout.txt bye", "tests/logout.sh grep -q bye logout.txt")
	if res := r.run(nil, "accept", add.Slug); res.Code != 0 || strings.Contains(r.git("log", "-1", "--format=%B", "main"), "Lazy-Approved-Protected") {
		t.Fatalf("a task adding its own test: %s", res)
	}

	// Protecting the tests: a task that weakens an existing one to pass
	// (and breaks what it tested) does not land without a human.
	r.git("config", "--add", "lazy.gate.protect", "tests/")
	weak := r.create("Make login pass", "-m", "Make the tests pass.")
	startWith(t, r, weak.Slug, execAgent(t, `printf 'insecure\n' > login.txt
printf 'true\n' > tests/login.sh
git add login.txt tests/login.sh
git commit -q -m "agent: tests pass"
`))
	msg := r.fails(1, nil, "accept", weak.Slug)
	if !strings.Contains(msg, "touches protected paths, which the gate alone may not decide (tests/login.sh)") {
		t.Fatalf("accept of a weakened test: %s", msg)
	}
	if out := r.ok("show", weak.Slug); !strings.Contains(out, "protected: touches protected paths the gate alone may not decide: tests/login.sh;") {
		t.Fatalf("show:\n%s", out)
	}
	if got := strings.TrimSpace(r.git("show", "main:login.txt")); got != "secure" {
		t.Fatalf("main:login.txt = %q", got)
	}
}

// TestAGateFasterThanItsMinimumFails: lazy.gate.minDuration refuses a
// pass that came too fast to have checked anything.
func TestAGateFasterThanItsMinimumFails(t *testing.T) {
	r := newRepo(t)
	r.git("config", "lazy.gate", "true")
	r.git("config", "lazy.gate.minDuration", "1m")
	tk := workedTask(t, r, "quick work", "quick.txt q")
	before := strings.TrimSpace(r.git("rev-parse", "main"))
	msg := r.fails(1, nil, "accept", tk.Slug)
	if !strings.Contains(msg, "less than lazy.gate.minDuration (1m0s)") || !strings.Contains(msg, "nothing was merged") {
		t.Fatalf("accept of a too-fast gate: %s", msg)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "main")); got != before {
		t.Fatal("main moved")
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "not passed: its one command exited 0 in") {
		t.Fatalf("show:\n%s", out)
	}
	// lazy config refuses a protect glob the gate would refuse to read.
	if msg := r.fails(1, nil, "config", "lazy.gate.protect", "/etc/passwd"); !strings.Contains(msg, "absolute") || !strings.Contains(msg, "changed nothing") {
		t.Fatalf("lazy config of an absolute protect glob: %s", msg)
	}
	r.git("config", "--unset", "lazy.gate.minDuration")
	r.ok("accept", tk.Slug)
}

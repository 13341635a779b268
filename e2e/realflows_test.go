package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// Two flows the exec agent covers elsewhere (gate_test.go, pool_test.go),
// run here by the real agent CLIs against the mock API: the merge gate's
// automatic fix round, and a pool runner. The model is scripted; the
// agent's tool calls really write, run and commit, and the tests assert
// on the branches and what landed.

// realGateMark is what the gate of TestRealClaudeFixesWhatTheGateFound
// prints when it fails. The command builds it with printf, so the text
// occurs only in the gate's output: a request that carries it carries
// the gate's feedback, not merely the configured command.
const (
	realGateMark  = "GATE-FIX-NEEDED-42"
	realGateCheck = `grep -qx ok fixed.txt || { printf 'GATE-%s\n' FIX-NEEDED-42; exit 3; }`
)

// waitShow polls show --json until done holds, failing with the daemon's
// log after limit. The real CLIs' turns take seconds each.
func waitShow(t *testing.T, r *runner, slug, daemonLog, what string, limit time.Duration, done func(gateShow) bool) gateShow {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := r.gateShow(slug)
		if done(s) {
			return s
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(daemonLog)
			t.Fatalf("timed out after %s waiting for %s: %+v\ngate: %+v\ndaemon log:\n%s", limit, what, s.task, s.GateRecord, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A real Claude's work fails the merge gate; lazy.gate.autoFix hands it
// the failing command and its output, Claude fixes it in a turn of its
// own (it writes, runs nothing lazy did not allow, and commits), and the
// daemon lands the fixed branch with no human command.
func TestRealClaudeFixesWhatTheGateFound(t *testing.T) {
	r := projectRepo(t)
	r.git("config", "lazy.gate", realGateCheck)
	r.git("config", "lazy.gate.autoFix", "true")
	r.git("config", "lazy.gate.maxAttempts", "3")
	r, srv := withRealAgents(t, r, []mockapi.Reply{
		{When: workMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/work.txt","content":"work\n"}`},
			{Name: "Bash", Input: `{"command":"sh check.sh","description":"run the project's check"}`},
			{Name: "Bash", Input: `{"command":"git add work.txt check.out && git commit -q -m 'the work'","description":"commit"}`},
		}, Text: "Wrote work.txt and ran the check."},
		// Later in the script than the work's reply: the fix turn resumes
		// the conversation, which still carries workMark.
		{When: realGateMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/fixed.txt","content":"ok\n"}`},
			{Name: "Bash", Input: `{"command":"git add fixed.txt && git commit -q -m 'fixed.txt says ok'","description":"commit the fix"}`},
		}, Text: "Fixed what the gate found."},
	}, nil)
	tk := r.create("Gated work "+workMark, "-m", "Write work.txt, run the check and commit.")
	log := startDaemon(t, r)
	r.ok("start", tk.Slug)
	s := r.waitStatus(tk.Slug, "blocked")
	if work := s.TurnList[len(s.TurnList)-1]; work.FailureClass != "" || len(work.Commits) != 1 {
		t.Fatalf("work turn %+v\nresults %+v\nlog:\n%s", work, srv.ToolResults("anthropic"), agentLog(t, r, tk.ID))
	}
	if got := branchFiles(r, tk.Slug); got != "check.out\nwork.txt" {
		t.Fatalf("the work turn's branch changed %q", got)
	}
	before := r.git("rev-parse", "main")
	workCalls := srv.Calls("anthropic")

	began := time.Now()
	res := r.run(nil, "accept", tk.Slug)
	for _, want := range []string{"the gate failed: ", "nothing was merged", "the failure went to the agent (fix round 1 of 3)"} {
		if res.Code == 0 || !strings.Contains(res.Stderr, want) {
			t.Fatalf("accept with a failing gate lacks %q: %s", want, res)
		}
	}
	if got := r.git("rev-parse", "main"); got != before {
		t.Fatalf("a failed gate moved main from %s to %s", before, got)
	}

	// No human command from here on.
	g := waitShow(t, r, tk.Slug, log, "the daemon to land Claude's fix", 3*time.Minute, func(s gateShow) bool {
		for _, c := range s.CommentList {
			if strings.Contains(c.Text, gaveUp) {
				t.Fatalf("the gate gave up on a task Claude fixed: %+v\nresults %+v", s.CommentList, srv.ToolResults("anthropic"))
			}
		}
		return s.Status == "complete"
	})
	t.Logf("from the failed accept to the landed fix: %s", time.Since(began).Round(time.Millisecond))
	if g.Outcome != "accepted" {
		t.Fatalf("landed with outcome %q", s.Outcome)
	}

	// The feedback reached Claude: a model call after the work turn's
	// carries the failing command's output, and none before it does.
	bodies := srv.Bodies("anthropic")
	for i, b := range bodies {
		if i < workCalls && strings.Contains(b, realGateMark) {
			t.Fatalf("model call %d, in the work turn, already carries the gate's output", i)
		}
	}
	fed := false
	for _, b := range bodies[workCalls:] {
		fed = fed || strings.Contains(b, realGateMark) && strings.Contains(b, "exited 3")
	}
	if !fed {
		t.Fatalf("no model call after the failed gate carries its output (%d calls, %d in the work turn); the last:\n%.3000s", len(bodies), workCalls, bodies[len(bodies)-1])
	}
	checkToolResults(t, srv.ToolResults("anthropic"), len(srv.ToolResults("anthropic")), 0)
	if n := len(srv.ToolResults("anthropic")); n != 5 {
		t.Fatalf("%d tool calls came back, want the work's 3 and the fix's 2: %+v", n, srv.ToolResults("anthropic"))
	}
	if last := g.TurnList[len(g.TurnList)-1]; last.Role != "agent" || last.Content != "Fixed what the gate found." || len(last.Commits) != 1 {
		t.Fatalf("Claude's fix turn: %+v", last)
	}

	// One commit landed: the gated tree, with the work and the fix, and
	// the gate's trailer.
	if n := r.git("rev-list", "--count", before+"..main"); n != "1" {
		t.Fatalf("%s commits landed on main, want 1", n)
	}
	rec := g.GateRecord
	if rec == nil || len(rec.Runs) != 2 || rec.Runs[0].Passed || !rec.Runs[1].Passed || rec.FixRounds != 1 {
		t.Fatalf("gate record: %+v", rec)
	}
	msg := r.git("log", "-1", "--format=%B", "main")
	for _, want := range []string{"Lazy-Task: " + tk.ID, "Lazy-Gate: passed " + rec.Runs[1].ID} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the landed commit's message lacks %q:\n%s", want, msg)
		}
	}
	for f, want := range map[string]string{"fixed.txt": "ok", "work.txt": "work", "check.out": "checked"} {
		if got := r.git("show", "main:"+f); got != want {
			t.Fatalf("main:%s = %q, want %q", f, got, want)
		}
	}
	// The fix is Claude's own commit (lazy deleted the landed branch;
	// the turn records it).
	fix := g.TurnList[len(g.TurnList)-1].Commits[0]
	if got := r.git("show", "--format=%s", "--name-only", fix); got != "fixed.txt says ok\n\nfixed.txt" {
		t.Fatalf("the fix turn's commit %s reads %q", fix, got)
	}
}

// poolFeedbackMark is in the feedback the pooling clone leaves for
// Claude's task; it picks the reply of the resumed turn.
const poolFeedbackMark = "POOL-FEEDBACK-7"

// A pool runner whose lazy.runner.agents names the real CLIs runs a
// pooled task with each: Claude and Codex each write a file, run the
// project's command and commit on the task's branch, which the runner
// pushes. The clone that pooled the tasks pulls and sees them blocked
// with the agents' commits; its feedback reaches the runner, whose
// Claude resumes its session and commits again; it accepts that task.
func TestRealAgentsRunOnAPoolRunner(t *testing.T) {
	realCLI(t, "claude")
	realCLI(t, "codex")
	n := newPoolNet(t)
	// The project's command, on the remote's main before any runner.
	if err := os.WriteFile(filepath.Join(n.human.dir, "check.sh"), []byte("printf 'checked\\n' > check.out\necho CHECK-OK\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	n.human.git("add", "check.sh")
	n.human.git("commit", "-q", "-m", "a project command")
	n.human.git("push", "-q", "origin", "main")

	m := n.clone("r")
	m.git("config", "lazy.runner.agents", "claude codex")
	m.git("config", "--add", "lazy.agent.allow", "sh check.sh")
	m, srv := withRealAgents(t, m, []mockapi.Reply{{When: "real-claude", Tools: []mockapi.Call{
		{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/by-claude.txt","content":"pooled claude\n"}`},
		{Name: "Bash", Input: `{"command":"sh check.sh","description":"run the project's check"}`},
		{Name: "Bash", Input: `{"command":"git add by-claude.txt check.out && git commit -q -m 'claude on the runner'","description":"commit"}`},
	}, Text: "Claude did the pooled work."}, {When: poolFeedbackMark, Tools: []mockapi.Call{
		{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/note.txt","content":"as asked\n"}`},
		{Name: "Bash", Input: `{"command":"git add note.txt && git commit -q -m 'claude adds the note'","description":"commit"}`},
	}, Text: "Claude added the note."}}, []mockapi.Reply{{Tools: []mockapi.Call{
		{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: by-codex.txt\n+pooled codex\n*** End Patch\nEOF"}`},
		{Name: "exec_command", Input: `{"cmd":"sh check.sh"}`},
		{Name: "exec_command", Input: `{"cmd":"git add by-codex.txt check.out && git commit -q -m 'codex on the runner' && echo COMMITTED"}`},
	}, Text: "Codex did the pooled work."}})
	// The machine keeps the HOME it was initialised with; the agents'
	// configuration comes from the rest of withRealAgents' environment.
	m = m.with("HOME=" + machineHome(m))

	byClaude := n.queue(1, "real-claude", "--agent", "claude")[0]
	byCodex := n.queue(1, "real-codex", "--agent", "codex")[0]
	began := time.Now()
	p := startRunner(m, "r", "--lease", "20s", "--poll", "500ms")
	poolWait(t, 3*time.Minute, "both tasks' turns on the remote", func() bool {
		return n.record(byClaude.ID).Status == "blocked" && n.record(byCodex.ID).Status == "blocked"
	})
	t.Logf("the runner ran both real agents' tasks in %s", time.Since(began).Round(time.Millisecond))

	for _, c := range []struct {
		tk            task
		api, file     string
		content, subj string
	}{
		{byClaude, "anthropic", "by-claude.txt", "pooled claude", "claude on the runner"},
		{byCodex, "openai", "by-codex.txt", "pooled codex", "codex on the runner"},
	} {
		results := srv.ToolResults(c.api)
		checkToolResults(t, results, len(results), 0)
		if len(results) != 3 {
			t.Fatalf("%s: %d tool calls came back, want 3: %+v\nrunner said:\n%s", c.api, len(results), results, p.out)
		}
		rec := n.record(c.tk.ID)
		if rec.Status != "blocked" || rec.Pool == nil || rec.Pool.Runner != host(m) {
			t.Fatalf("%s on the remote: %+v (pool %+v), want blocked by runner %s\nrunner said:\n%s", c.tk.Slug, rec, rec.Pool, host(m), p.out)
		}
		if got := n.branchCommits(c.tk.Slug); len(got) != 1 || got[0] != c.subj {
			t.Fatalf("%s: branch commits on the remote %q, want %q", c.tk.Slug, got, c.subj)
		}
		for f, want := range map[string]string{c.file: c.content, "check.out": "checked"} {
			if got := testrepo.Git(t, n.bare, "show", "refs/heads/lazy/"+c.tk.Slug+":"+f); got != want {
				t.Fatalf("%s: %s on the remote's branch is %q, want %q", c.tk.Slug, f, got, want)
			}
		}
	}

	// The clone that pooled them sees what the runner did.
	n.human.ok("pull")
	for _, tk := range []task{byClaude, byCodex} {
		s := n.human.showFull(tk.Slug)
		last := s.TurnList[len(s.TurnList)-1]
		if s.Status != "blocked" || last.Role != "agent" || !strings.HasSuffix(last.Content, "did the pooled work.") || len(last.Commits) != 1 {
			t.Fatalf("after lazy pull the human sees %s %s, last turn %+v", tk.Slug, s.Status, last)
		}
	}

	// Its feedback goes to the runner, whose Claude resumes the session
	// it began there and commits again.
	if out := n.human.ok("unblock", byClaude.Slug, "-m", "Add note.txt too. "+poolFeedbackMark); !strings.Contains(out, "Left the feedback for runner "+host(m)) {
		t.Fatalf("unblock of a pooled task: %s", out)
	}
	poolWait(t, 3*time.Minute, "Claude's second turn on the remote", func() bool {
		return n.record(byClaude.ID).Status == "blocked" && len(n.branchCommits(byClaude.Slug)) == 2
	})
	p.stop()
	if got := n.branchCommits(byClaude.Slug); got[0] != "claude adds the note" {
		t.Fatalf("%s: branch commits on the remote %q", byClaude.Slug, got)
	}
	bodies := srv.Bodies("anthropic")
	if last := bodies[len(bodies)-1]; !strings.Contains(last, poolFeedbackMark) || !strings.Contains(last, "Claude did the pooled work.") {
		t.Fatalf("Claude's second turn did not resume its session with the feedback: %.3000s", last)
	}
	if results := srv.ToolResults("anthropic"); len(results) != 5 {
		t.Fatalf("%d of Claude's tool calls came back, want 5: %+v", len(results), results)
	}
	checkToolResults(t, srv.ToolResults("anthropic"), 5, 0)

	// It lands Claude's work, both turns of it.
	n.human.ok("pull")
	if s := n.human.showFull(byClaude.Slug); s.Status != "blocked" || s.TurnList[len(s.TurnList)-1].Content != "Claude added the note." {
		t.Fatalf("after lazy pull the human sees %s %s, turns %+v", byClaude.Slug, s.Status, s.TurnList)
	}
	before := n.human.git("rev-parse", "main")
	out := n.human.ok("accept", byClaude.Slug)
	for f, want := range map[string]string{"by-claude.txt": "pooled claude", "note.txt": "as asked", "check.out": "checked"} {
		if got := n.human.git("show", "main:"+f); got != want {
			t.Fatalf("accept did not land Claude's work (main:%s %q):\n%s", f, got, out)
		}
	}
	if cnt := n.human.git("rev-list", "--count", before+"..main"); cnt != "1" {
		t.Fatalf("%s commits landed on main, want 1:\n%s", cnt, out)
	}
	msg := n.human.git("log", "-1", "--format=%B", "main")
	for _, want := range []string{"Lazy-Task: " + byClaude.ID, "Lazy-Branch: lazy/" + byClaude.Slug, "Lazy-Cost: $"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the landed commit's message lacks %q:\n%s", want, msg)
		}
	}
	if s := n.human.showFull(byClaude.Slug); s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("after accept %s is %s (%s)", byClaude.Slug, s.Status, s.Outcome)
	}
	n.human.ok("push")
	if rec := n.record(byClaude.ID); rec.Status != "complete" {
		t.Fatalf("after lazy push the remote has %s %s", byClaude.Slug, rec.Status)
	}
}

package e2e

import (
	"encoding/json"
	"io/fs"
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

// realFixReplies are the model's scripts of the gate's fix round: the
// work turn writes, runs the project's check and commits; the fix turn
// (its reply picked by the gate's output, which only the feedback
// carries) writes fixed.txt and commits.
func realFixReplies(agentName string) []mockapi.Reply {
	if agentName == "codex" {
		return []mockapi.Reply{
			{When: workMark, Tools: []mockapi.Call{
				{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: work.txt\n+work\n*** End Patch\nEOF"}`},
				{Name: "exec_command", Input: `{"cmd":"sh check.sh"}`},
				{Name: "exec_command", Input: `{"cmd":"git add work.txt check.out && git commit -q -m 'the work' && echo COMMITTED"}`},
			}, Text: realWorkAnswer},
			{When: realGateMark, Tools: []mockapi.Call{
				{Name: "exec_command", Input: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: fixed.txt\n+ok\n*** End Patch\nEOF"}`},
				{Name: "exec_command", Input: `{"cmd":"git add fixed.txt && git commit -q -m 'fixed.txt says ok' && echo COMMITTED"}`},
			}, Text: realFixAnswer},
		}
	}
	return []mockapi.Reply{
		{When: workMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/work.txt","content":"work\n"}`},
			{Name: "Bash", Input: `{"command":"sh check.sh","description":"run the project's check"}`},
			{Name: "Bash", Input: `{"command":"git add work.txt check.out && git commit -q -m 'the work'","description":"commit"}`},
		}, Text: realWorkAnswer},
		// Later in the script than the work's reply: a resumed fix turn's
		// conversation still carries workMark.
		{When: realGateMark, Tools: []mockapi.Call{
			{Name: "Write", Input: `{"file_path":"` + mockapi.Cwd + `/fixed.txt","content":"ok\n"}`},
			{Name: "Bash", Input: `{"command":"git add fixed.txt && git commit -q -m 'fixed.txt says ok'","description":"commit the fix"}`},
		}, Text: realFixAnswer},
	}
}

// The work turn's and the fix turn's last words: a request that
// carries realWorkAnswer carries the work turn's conversation.
const (
	realWorkAnswer = "Wrote work.txt and ran the check."
	realFixAnswer  = "Fixed what the gate found."
	realTaskGoal   = "Write work.txt, run the check and commit."
)

// A real Claude's work fails the merge gate; lazy.gate.autoFix hands it
// the failing command and its output in its own session (the fix turn's
// request carries the work turn's conversation), Claude fixes it in a
// turn of its own (it writes, runs nothing lazy did not allow, and
// commits), and the daemon lands the fixed branch with no human command.
func TestRealClaudeFixesWhatTheGateFound(t *testing.T) {
	realGateFix(t, "claude", false)
}

// The same with the real Codex: the fix turn resumes its thread.
func TestRealCodexFixesWhatTheGateFound(t *testing.T) {
	realGateFix(t, "codex", false)
}

// The agent's own session is gone before the fix round (its CLI's
// stored conversation deleted, as on another machine or after a
// cleanup): the CLI refuses the resume, and the fix turn starts a new
// session at once with the task's prompt and the failure, not a retry
// loop; the fix still lands, and lazy show says a new session was
// started and why.
func TestRealClaudeFixStartsANewSessionWhenItsOwnIsGone(t *testing.T) {
	realGateFix(t, "claude", true)
}

// The same with the real Codex, whose thread's rollout is deleted.
func TestRealCodexFixStartsANewSessionWhenItsOwnIsGone(t *testing.T) {
	realGateFix(t, "codex", true)
}

// realGateFix drives a gate's fix round with the real agentName. With
// gone, the agent's stored conversation is deleted before the accept.
func realGateFix(t *testing.T, agentName string, gone bool) {
	api := map[string]string{"claude": "anthropic", "codex": "openai"}[agentName]
	r := projectRepo(t)
	r.git("config", "lazy.gate", realGateCheck)
	r.git("config", "lazy.gate.autoFix", "true")
	r.git("config", "lazy.gate.maxAttempts", "3")
	var srv *mockapi.Server
	if agentName == "codex" {
		r, srv = withRealAgents(t, r, nil, realFixReplies(agentName))
	} else {
		r, srv = withRealAgents(t, r, realFixReplies(agentName), nil)
	}
	tk := r.create("Gated work "+workMark, "-m", realTaskGoal)
	log := startDaemon(t, r)
	r.ok("start", tk.Slug, "--agent", agentName)
	s := r.waitStatus(tk.Slug, "blocked")
	if work := s.TurnList[len(s.TurnList)-1]; work.FailureClass != "" || len(work.Commits) != 1 {
		t.Fatalf("work turn %+v\nresults %+v\nlog:\n%s", work, srv.ToolResults(api), agentLog(t, r, tk.ID))
	}
	if got := branchFiles(r, tk.Slug); got != "check.out\nwork.txt" {
		t.Fatalf("the work turn's branch changed %q", got)
	}
	sid := sessionOf(t, r, tk.ID)["agent_session_id"]
	if sid == nil || sid == "" {
		t.Fatalf("no agent session id recorded after the work turn: %v", sessionOf(t, r, tk.ID))
	}
	agentSession := sid.(string)
	if gone {
		removeAgentSession(t, r, agentName, agentSession)
	}
	before := r.git("rev-parse", "main")
	workCalls := srv.Calls(api)

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
	g := waitShow(t, r, tk.Slug, log, "the daemon to land the agent's fix", 3*time.Minute, func(s gateShow) bool {
		for _, c := range s.CommentList {
			if strings.Contains(c.Text, gaveUp) {
				t.Fatalf("the gate gave up on a task the agent fixed: %+v\nresults %+v", s.CommentList, srv.ToolResults(api))
			}
		}
		return s.Status == "complete"
	})
	t.Logf("from the failed accept to the landed fix: %s", time.Since(began).Round(time.Millisecond))
	if g.Outcome != "accepted" {
		t.Fatalf("landed with outcome %q", g.Outcome)
	}

	// The feedback reached the agent: the fix turn's requests carry the
	// failing command and its output's tail, and none before do.
	bodies := srv.Bodies(api)
	for i, b := range bodies {
		if i < workCalls && strings.Contains(b, realGateMark) {
			t.Fatalf("model call %d, in the work turn, already carries the gate's output", i)
		}
	}
	if len(bodies) <= workCalls {
		t.Fatalf("no model call after the failed gate (%d calls)", len(bodies))
	}
	fix := bodies[workCalls] // the fix turn's first request
	for _, want := range []string{realGateMark, "exited 3", "grep -qx ok fixed.txt", "The end of its output"} {
		if !strings.Contains(fix, want) {
			t.Fatalf("the fix turn's first request lacks %q (the failing command and its output):\n%.4000s", want, fix)
		}
	}
	// Context: a resumed session carries the work turn's conversation; a
	// new one carries the task's prompt and lazy's note instead.
	if kept := strings.Contains(fix, realWorkAnswer); kept == gone {
		t.Fatalf("the fix turn's request carries the work turn's answer: %v, want %v (session gone: %v):\n%.4000s", kept, !gone, gone, fix)
	}
	if gone {
		for _, want := range []string{realTaskGoal, "your earlier session could not be resumed, so this is a new session"} {
			if !strings.Contains(fix, want) {
				t.Fatalf("the new session's request lacks %q:\n%.4000s", want, fix)
			}
		}
	}
	checkToolResults(t, srv.ToolResults(api), len(srv.ToolResults(api)), 0)
	if n := len(srv.ToolResults(api)); n != 5 {
		t.Fatalf("%d tool calls came back, want the work's 3 and the fix's 2: %+v", n, srv.ToolResults(api))
	}
	last := g.TurnList[len(g.TurnList)-1]
	if last.Role != "agent" || last.Content != realFixAnswer || len(last.Commits) != 1 || last.FailureClass != "" {
		t.Fatalf("the agent's fix turn: %+v", last)
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
	// The fix is the agent's own commit (lazy deleted the landed branch;
	// the turn records it).
	if got := r.git("show", "--format=%s", "--name-only", last.Commits[0]); got != "fixed.txt says ok\n\nfixed.txt" {
		t.Fatalf("the fix turn's commit %s reads %q", last.Commits[0], got)
	}

	// The record and lazy show say which happened.
	var js struct {
		GateRecord struct {
			Fixes []struct {
				Round, Max int
				Run        string
				Resume     *struct {
					Resumed    string `json:"resumed"`
					NewSession string `json:"new_session"`
					Reason     string `json:"reason"`
				}
			}
		} `json:"gate_record"`
		TurnList []struct {
			Resume *struct {
				Resumed string `json:"resumed"`
			}
		} `json:"turn_list"`
	}
	if err := json.Unmarshal([]byte(r.ok("show", "--json", tk.Slug)), &js); err != nil {
		t.Fatal(err)
	}
	fixes := js.GateRecord.Fixes
	if len(fixes) != 1 || fixes[0].Round != 1 || fixes[0].Max != 3 || fixes[0].Run != rec.Runs[0].ID || fixes[0].Resume == nil {
		t.Fatalf("gate_record.fixes: %+v", fixes)
	}
	fr := fixes[0].Resume
	text := r.ok("show", tk.Slug)
	if !gone {
		if fr.Resumed != agentSession || fr.NewSession != "" {
			t.Fatalf("the fix round's resume %+v, want the session %s resumed", fr, agentSession)
		}
		if want := "fix round 1 of 3: resumed the agent's session " + agentSession + "\n"; !strings.Contains(text, want) {
			t.Fatalf("show lacks %q:\n%s", want, text)
		}
		return
	}
	refusal := map[string]string{"claude": "No conversation found with session ID: " + agentSession,
		"codex": "no rollout found for thread id " + agentSession}[agentName]
	if fr.Resumed != "" || fr.NewSession == "" || fr.NewSession == agentSession || !strings.Contains(fr.Reason, refusal) {
		t.Fatalf("the fix round's resume %+v, want a new session because %q", fr, refusal)
	}
	if want := "fix round 1 of 3: started a new session (the old one could not be resumed: "; !strings.Contains(text, want) || !strings.Contains(text, refusal) {
		t.Fatalf("show lacks %q and %q:\n%s", want, refusal, text)
	}
	// Not a failure nor a retry loop: one refused launch, then the new
	// session; the fix turn records no failure and no attempts.
	if strings.Contains(agentLog(t, r, tk.ID), "retrying") {
		t.Fatalf("the refused resume was retried:\n%s", agentLog(t, r, tk.ID))
	}
}

// removeAgentSession deletes the CLI's stored conversation id (Claude's
// session log under HOME/.claude/projects, Codex's rollout under
// CODEX_HOME/sessions), as a session from another machine or one
// cleaned up would be: the CLI cannot resume it.
func removeAgentSession(t *testing.T, r *runner, agentName, id string) {
	t.Helper()
	var root string
	for _, kv := range r.env {
		if v, ok := strings.CutPrefix(kv, map[string]string{"claude": "HOME=", "codex": "CODEX_HOME="}[agentName]); ok {
			root = v // the last one wins, as in the environment
		}
	}
	removed := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), id+".jsonl") {
			removed++
			return os.Remove(p)
		}
		return err
	})
	if err != nil || removed == 0 {
		t.Fatalf("the %s session %s was not found under %s to remove (%v)", agentName, id, root, err)
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

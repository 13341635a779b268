package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gateCheck is the merge gate of these tests: it passes only on a tree
// whose fixed.txt says ok, and says so on stdout when it fails.
const gateCheck = `grep -qx ok fixed.txt || { echo "GATE: fixed.txt must say ok"; exit 3; }`

// gateAgent writes the exec agent of these tests and returns its command
// and the directory where it keeps every prompt it got (prompt-N.txt).
// Its first turn writes work.txt and commits. A later turn whose prompt
// carries the gate's failure writes fixed.txt, and commits, when fixes
// is set; otherwise it only records a try (and commits that), so the
// gate keeps failing.
func gateAgent(t *testing.T, fixes bool) (command, prompts string) {
	t.Helper()
	dir := t.TempDir()
	prompts = filepath.Join(dir, "prompts")
	if err := os.Mkdir(prompts, 0o755); err != nil {
		t.Fatal(err)
	}
	fix := `printf 'ok\n' > fixed.txt
  git add fixed.txt
  git commit -q -m "agent: fixed.txt says ok"
  echo "fixed what the gate found"`
	if !fixes {
		fix = `echo try >> tries.txt
  git add tries.txt
  git commit -q -m "agent: another try"
  echo "tried, but fixed.txt is not mine to write"`
	}
	body := fmt.Sprintf(`#!/bin/sh
set -e
n=$(ls %[1]s | wc -l)
printf '%%s' "$LAZY_PROMPT" > %[1]s/prompt-$((n+1)).txt
case "$LAZY_PROMPT" in
*"GATE: fixed.txt must say ok"*)
  %[2]s
  ;;
*)
  printf 'work\n' > work.txt
  git add work.txt
  git commit -q -m "agent: the work"
  echo "did the work"
  ;;
esac
`, prompts, fix)
	command = filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(command, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return command, prompts
}

// agentPrompts are the prompts the gate agent got, in order.
func agentPrompts(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "prompt-*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(names[i]), "prompt-"), ".txt"))
		b, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(names[j]), "prompt-"), ".txt"))
		return a < b
	})
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// gateShow is the gate part of show --json.
type gateShow struct {
	showFull
	GateRecord *struct {
		Runs []struct {
			ID       string `json:"id"`
			Target   string `json:"target"`
			Tree     string `json:"tree"`
			Passed   bool   `json:"passed"`
			Failed   string `json:"failed"`
			Tail     string `json:"tail"`
			Commands []struct {
				Cmd  string `json:"cmd"`
				Exit int    `json:"exit"`
			} `json:"commands"`
		} `json:"runs"`
		FixRounds int `json:"fix_rounds"`
	} `json:"gate_record"`
}

func (r *runner) gateShow(name string) gateShow {
	r.t.Helper()
	var s gateShow
	out := r.ok("show", "--json", name)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		r.t.Fatalf("show: %v\n%s", err, out)
	}
	return s
}

// queueJSON is lazy queue --json.
type queueJSON []struct {
	Target  string `json:"target"`
	Entries []struct {
		Task  string `json:"task"`
		State string `json:"state"`
	} `json:"entries"`
	Left []struct {
		Task    string `json:"task"`
		Outcome string `json:"outcome"`
		Commit  string `json:"commit"`
	} `json:"left"`
}

// queueOf returns the task's entries in this machine's queues and the
// outcomes of its entries that left, oldest first.
func (r *runner) queueOf(id string) (entries, left []string) {
	r.t.Helper()
	var q queueJSON
	out := r.ok("queue", "--json")
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		r.t.Fatalf("queue --json: %v\n%s", err, out)
	}
	for _, v := range q {
		for _, en := range v.Entries {
			if en.Task == id {
				entries = append(entries, v.Target+":"+en.State)
			}
		}
		for _, l := range v.Left {
			if l.Task == id {
				left = append(left, l.Outcome)
			}
		}
	}
	return entries, left
}

// gaveUp is the comment lazy leaves when lazy.gate.autoFix runs out of
// rounds.
const gaveUp = "automatic fix rounds (lazy.gate.maxAttempts); parked for a human"

// waitGate polls show --json until done holds of the task, failing with
// the daemon's log after a minute.
func waitGate(t *testing.T, r *runner, slug, daemonLog, what string, done func(gateShow) bool) gateShow {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := r.gateShow(slug)
		if done(s) {
			return s
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(daemonLog)
			t.Fatalf("timed out waiting for %s: %+v\ngate: %+v\ndaemon log:\n%s", what, s.task, s.GateRecord, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func gateFailed(t *testing.T, res result, round, max int) {
	t.Helper()
	want := []string{
		"the gate failed: " + strconv.Quote(gateCheck) + " exited 3",
		"nothing was merged",
		fmt.Sprintf("the failure went to the agent (fix round %d of %d)", round, max),
	}
	for _, w := range want {
		if res.Code == 0 || !strings.Contains(res.Stderr, w) {
			t.Fatalf("accept with a failing gate lacks %q: %s", w, res)
		}
	}
}

func TestGateFailureIsFixedByTheAgentAndLands(t *testing.T) {
	t.Run("the agent fixes it and the daemon lands it", func(t *testing.T) {
		r := newRepo(t)
		r.git("config", "lazy.gate", gateCheck)
		r.git("config", "lazy.gate.autoFix", "true")
		r.git("config", "lazy.gate.maxAttempts", "3")
		command, prompts := gateAgent(t, true)
		tk := r.create("Gated work", "-m", "Write work.txt.")
		log := startDaemon(t, r)
		r.ok("start", tk.Slug, "--agent", "exec", "--command", command)
		r.waitStatus(tk.Slug, "blocked")
		before := strings.TrimSpace(r.git("rev-parse", "main"))

		began := time.Now()
		res := r.run(nil, "accept", tk.Slug)
		gateFailed(t, res, 1, 3)
		t.Logf("the failing accept took %s", time.Since(began).Round(time.Millisecond))

		// No human command from here: the agent's fix turn ends, and the
		// daemon puts the task back in the queue, where it lands.
		s := waitGate(t, r, tk.Slug, log, "the daemon to land the fixed task", func(s gateShow) bool {
			for _, c := range s.CommentList {
				if strings.Contains(c.Text, gaveUp) {
					t.Fatalf("the gate gave up on a task its agent fixed: %+v", s.CommentList)
				}
			}
			return s.Status == "complete"
		})
		t.Logf("from the failed accept to the landed fix: %s", time.Since(began).Round(time.Millisecond))
		if s.Outcome != "accepted" {
			t.Fatalf("landed with outcome %q", s.Outcome)
		}

		// Exactly one commit landed: the gated tree, with the trailers.
		if n := strings.TrimSpace(r.git("rev-list", "--count", before+"..main")); n != "1" {
			t.Fatalf("%s commits landed on main, want 1", n)
		}
		if parent := strings.TrimSpace(r.git("rev-parse", "main^")); parent != before {
			t.Fatalf("main^ is %s, want the old main %s", parent, before)
		}
		g := s.GateRecord
		if g == nil || len(g.Runs) != 2 || g.Runs[0].Passed || !g.Runs[1].Passed || g.FixRounds != 1 {
			t.Fatalf("gate record: %+v", g)
		}
		failed, passed := g.Runs[0], g.Runs[1]
		if failed.Failed != gateCheck || !strings.Contains(failed.Tail, "GATE: fixed.txt must say ok") ||
			len(failed.Commands) != 1 || failed.Commands[0].Exit != 3 || failed.Target != "main" {
			t.Fatalf("the failed run: %+v", failed)
		}
		msg := r.git("log", "-1", "--format=%B", "main")
		for _, want := range []string{"Lazy-Task: " + tk.ID, "Lazy-Gate: passed " + passed.ID} {
			if !strings.Contains(msg, want) {
				t.Fatalf("the landed commit's message lacks %q:\n%s", want, msg)
			}
		}
		if tree := strings.TrimSpace(r.git("rev-parse", "main^{tree}")); tree != passed.Tree {
			t.Fatalf("main's tree %s is not the tree that passed (%s)", tree, passed.Tree)
		}
		for f, want := range map[string]string{"fixed.txt": "ok", "work.txt": "work"} {
			if got := r.git("show", "main:"+f); got != want {
				t.Fatalf("main:%s = %q, want %q", f, got, want)
			}
			if b, err := os.ReadFile(filepath.Join(r.dir, f)); err != nil || strings.TrimSpace(string(b)) != want {
				t.Fatalf("the main checkout's %s = %q (%v), want %q", f, b, err, want)
			}
		}

		// The fix turn was given the gate's failure: the failing command,
		// how it ended and its output's tail, recorded on the task and
		// received by the agent.
		feedback := []string{"Failing check: " + strconv.Quote(gateCheck) + " exited 3", "GATE: fixed.txt must say ok"}
		var fixTurn *turnJSON
		for i, tr := range s.TurnList {
			if tr.Kind == "unblock" && strings.Contains(tr.Content, "merge gate") {
				fixTurn = &s.TurnList[i]
			}
		}
		if fixTurn == nil {
			t.Fatalf("no turn handed the gate's failure to the agent: %+v", s.TurnList)
		}
		for _, want := range feedback {
			if !strings.Contains(fixTurn.Content, want) {
				t.Fatalf("the fix turn's feedback lacks %q:\n%s", want, fixTurn.Content)
			}
		}
		if fixTurn.FeedbackDelivery != "consumed" {
			t.Fatalf("the gate's feedback is %q, want consumed", fixTurn.FeedbackDelivery)
		}
		last := s.TurnList[len(s.TurnList)-1]
		if last.Role != "agent" || !strings.Contains(last.Content, "fixed what the gate found") || last.Seq <= fixTurn.Seq {
			t.Fatalf("the agent's fix turn: %+v", last)
		}
		got := agentPrompts(t, prompts)
		if len(got) != 2 {
			t.Fatalf("the agent ran %d turns, want 2 (the work, the fix): %q", len(got), got)
		}
		for _, want := range feedback {
			if strings.Contains(got[0], want) || !strings.Contains(got[1], want) {
				t.Fatalf("the prompts do not carry %q to the fix turn only:\n%q", want, got)
			}
		}

		// The queue: the accept left failed, the re-entry landed, and
		// nothing of the task waits.
		entries, left := r.queueOf(tk.ID)
		if len(entries) != 0 || strings.Join(left, ",") != "failed,landed" {
			t.Fatalf("queue: entries %v, left %v", entries, left)
		}
	})

	t.Run("the gate gives up after maxAttempts rounds", func(t *testing.T) {
		r := newRepo(t)
		r.git("config", "lazy.gate", gateCheck)
		r.git("config", "lazy.gate.autoFix", "true")
		r.git("config", "lazy.gate.maxAttempts", "2")
		command, prompts := gateAgent(t, false)
		tk := r.create("Never fixed", "-m", "Write work.txt.")
		log := startDaemon(t, r)
		r.ok("start", tk.Slug, "--agent", "exec", "--command", command)
		r.waitStatus(tk.Slug, "blocked")
		before := strings.TrimSpace(r.git("rev-parse", "main"))

		began := time.Now()
		gateFailed(t, r.run(nil, "accept", tk.Slug), 1, 2)
		s := waitGate(t, r, tk.Slug, log, "the gate to give up", func(s gateShow) bool {
			for _, c := range s.CommentList {
				if strings.Contains(c.Text, gaveUp) {
					return true
				}
			}
			return s.Status == "complete"
		})
		t.Logf("from the failed accept to giving up: %s", time.Since(began).Round(time.Millisecond))
		if s.Status != "blocked" {
			t.Fatalf("after giving up the task is %s, want blocked", s.Status)
		}
		if c := s.CommentList[len(s.CommentList)-1].Text; !strings.Contains(c, "the merge gate failed after 2 automatic fix rounds") {
			t.Fatalf("the last comment: %q", c)
		}
		g := s.GateRecord
		if g == nil || len(g.Runs) != 3 || g.FixRounds != 2 {
			t.Fatalf("gate record: %+v", g)
		}
		for i, run := range g.Runs {
			if run.Passed || run.Failed != gateCheck {
				t.Fatalf("run %d: %+v", i, run)
			}
		}
		if after := strings.TrimSpace(r.git("rev-parse", "main")); after != before {
			t.Fatal("main moved though the gate never passed")
		}
		if got := agentPrompts(t, prompts); len(got) != 3 {
			t.Fatalf("the agent ran %d turns, want 3 (the work, two fixes)", len(got))
		}
		entries, left := r.queueOf(tk.ID)
		if len(entries) != 0 || strings.Join(left, ",") != "failed,failed,failed" {
			t.Fatalf("queue: entries %v, left %v", entries, left)
		}
	})
}

func TestForgeAcceptRunsTheGateFirst(t *testing.T) {
	t.Run("a failing gate asks the forge nothing", forgeGateRefuses)
	t.Run("autoFix: the fix goes back through the pull request", forgeGateAutoFix)
}

// forgeGateRefuses: a branch that fails the gate is not merged; with
// lazy.gate.forge checks the forge's checks are the gate; a branch that
// passes is merged.
func forgeGateRefuses(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	r.git("config", "lazy.gate", gateCheck)
	failing := workedTask(t, r, "Ungated", "a.txt one")
	passing := workedTask(t, r, "Gated", "fixed.txt ok")
	r.ok("submit", failing.Slug)
	r.ok("submit", passing.Slug)

	// The branch fails the gate: no merge is asked of the forge, and the
	// task stays submitted with the run on record.
	msg := r.fails(1, nil, "accept", failing.Slug)
	for _, want := range []string{"the gate failed: " + strconv.Quote(gateCheck) + " exited 3", "nothing was merged"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("accept of a branch that fails the gate lacks %q: %s", want, msg)
		}
	}
	st := f.load()
	if n := f.calls("pr merge"); n != 0 || st.PRs[0].State != "OPEN" || st.PRs[0].AutoMerge != "" {
		t.Fatalf("the forge was asked to merge (%d pr merge calls): %+v", n, st.PRs[0])
	}
	s := r.gateShow(failing.Slug)
	if s.Status != "submitted" || s.GateRecord == nil || len(s.GateRecord.Runs) != 1 || s.GateRecord.Runs[0].Passed {
		t.Fatalf("after the refused accept: %s, gate %+v", s.Status, s.GateRecord)
	}

	// The forge's required checks are the gate: the merge is requested
	// without a local run.
	r.git("config", "lazy.gate.forge", "checks")
	if out := r.ok("accept", failing.Slug); !strings.Contains(out, "pull request #1 merged into main") {
		t.Fatalf("accept with lazy.gate.forge checks: %s", out)
	}
	if f.calls("pr merge") != 1 || f.load().PRs[0].State != "MERGED" {
		t.Fatalf("the forge did not merge: %+v", f.load().PRs[0])
	}
	if s := r.gateShow(failing.Slug); s.Status != "complete" || len(s.GateRecord.Runs) != 1 {
		t.Fatalf("after the forge merge: %s, gate %+v", s.Status, s.GateRecord)
	}

	// Gated locally again, a branch that passes gets its merge.
	r.git("config", "--unset", "lazy.gate.forge")
	res := r.run(nil, "accept", passing.Slug)
	if res.Code != 0 || !strings.Contains(res.Stdout, "pull request #2 merged into main") || !strings.Contains(res.Stderr, "run the gate on the tree that would land") {
		t.Fatalf("accept of a branch that passes the gate: %s", res)
	}
	if f.calls("pr merge") != 2 || f.load().PRs[1].State != "MERGED" {
		t.Fatalf("the forge did not merge the passing branch: %+v", f.load().PRs[1])
	}
	s = r.gateShow(passing.Slug)
	if s.Status != "complete" || s.GateRecord == nil || len(s.GateRecord.Runs) != 1 || !s.GateRecord.Runs[0].Passed {
		t.Fatalf("after the gated forge merge: %s, gate %+v", s.Status, s.GateRecord)
	}
}

// forgeGateAutoFix: with lazy.gate.autoFix, a forge accept's failed gate
// goes to the agent, and the daemon's re-entry pushes the fix to the
// same pull request and has the forge merge it; the local main never
// moves.
func forgeGateAutoFix(t *testing.T) {
	f := newFakeForge(t)
	r := f.r
	r.git("config", "lazy.gate", gateCheck)
	r.git("config", "lazy.gate.autoFix", "true")
	command, _ := gateAgent(t, true)
	tk := r.create("Forge fix", "-m", "Write work.txt.")
	log := startDaemon(t, r)
	r.ok("start", tk.Slug, "--agent", "exec", "--command", command)
	r.waitStatus(tk.Slug, "blocked")
	r.ok("submit", tk.Slug)
	before := strings.TrimSpace(r.git("rev-parse", "main"))

	began := time.Now()
	gateFailed(t, r.run(nil, "accept", tk.Slug), 1, 3)
	if n := f.calls("pr merge"); n != 0 {
		t.Fatalf("the forge was asked to merge a branch that failed the gate (%d times)", n)
	}
	s := waitGate(t, r, tk.Slug, log, "the fix to merge through the forge", func(s gateShow) bool { return s.Status == "complete" })
	t.Logf("from the failed forge accept to the forge merge: %s", time.Since(began).Round(time.Millisecond))
	if s.Outcome != "accepted" || s.GateRecord == nil || len(s.GateRecord.Runs) != 2 || !s.GateRecord.Runs[1].Passed || s.GateRecord.FixRounds != 1 {
		t.Fatalf("after the fix: %+v, gate %+v", s.task, s.GateRecord)
	}
	st := f.load()
	if len(st.PRs) != 1 || st.PRs[0].State != "MERGED" || f.calls("pr merge") != 1 || f.calls("pr create") != 1 {
		t.Fatalf("the forge: %d pull requests, %d merges: %+v", len(st.PRs), f.calls("pr merge"), st.PRs)
	}
	if out, err := gitCmd(r.dir, "--git-dir", f.remote, "show", st.PRs[0].HeadOid+":fixed.txt").Output(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("the pull request's head %s lacks the fix: %q %v", st.PRs[0].HeadOid, out, err)
	}
	if after := strings.TrimSpace(r.git("rev-parse", "main")); after != before {
		t.Fatal("the fixed task was merged locally, beside its pull request")
	}
	entries, left := r.queueOf(tk.ID)
	if len(entries) != 0 || strings.Join(left, ",") != "landed" {
		t.Fatalf("queue: entries %v, left %v", entries, left)
	}
}

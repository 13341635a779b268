package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An attacker with push access to a shared remote crafts task records
// with git plumbing in a clone of its own. These tests are the threat
// model's "execution comes only from local decisions" (SECURITY.md).

// craft rewrites files of a task's record at ref in dir with git plumbing
// (a temporary index, write-tree, commit-tree, update-ref), the way an
// attacker who bypasses lazy entirely would.
func craft(t *testing.T, dir, ref string, edit func(files map[string][]byte)) {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	plumb := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "GIT_CONFIG_NOSYSTEM=1")
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	plumb(nil, "read-tree", ref)
	files := map[string][]byte{}
	for _, name := range strings.Fields(plumb(nil, "ls-tree", "--name-only", ref)) {
		if strings.HasSuffix(name, ".json") {
			files[name] = []byte(plumb(nil, "cat-file", "blob", ref+":"+name))
		}
	}
	edit(files)
	for name, body := range files {
		sha := plumb(body, "hash-object", "-w", "--stdin")
		plumb(nil, "update-index", "--add", "--cacheinfo", "100644,"+sha+","+name)
	}
	tree := plumb(nil, "write-tree")
	commit := plumb([]byte("crafted\n"), "commit-tree", tree, "-p", ref)
	plumb(nil, "update-ref", ref, commit)
}

// setJSON edits one JSON record of a crafted task.
func setJSON(t *testing.T, files map[string][]byte, name string, set map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(files[name], &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k, v := range set {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	files[name] = b
}

// sessionOf reads a task's session.json as the record has it.
func sessionOf(t *testing.T, r *runner, id string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.git("cat-file", "blob", "refs/lazy/tasks/"+id+":session.json")), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPulledRecordNeverRunsCommands(t *testing.T) {
	victim, attacker := clones(t)
	mine := workedTask(t, victim, "victim work", "v.txt v")
	victim.ok("push")
	attacker.ok("init")
	// What the victim published: its host id and a worktree path.
	vs := sessionOf(t, attacker, mine.ID)
	host, wt := vs["host"].(string), vs["worktree"].(string)

	proof := filepath.Join(t.TempDir(), "proof")
	evil := attacker.create("innocent looking")
	// A session that claims the victim's host, runs the attacker's
	// command, in the victim's worktree, interrupted so that the
	// reconciler would auto-resume it; its session id is copied from the
	// victim's own task so an id match alone proves nothing.
	craft(t, attacker.dir, "refs/lazy/tasks/"+evil.ID, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"status": "interrupted", "host": host, "sessions": 1})
		f["session.json"] = mustJSON(t, map[string]any{
			"id": vs["id"], "number": 1, "host": host, "agent": "exec",
			"exec_command": []string{"/bin/sh", "-c", "touch " + proof},
			"branch":       vs["branch"], "worktree": wt, "started_at": "2026-01-01T00:00:00Z",
			"interrupt_reason": "crash", "consecutive_interruptions": 0,
		})
	})
	attacker.git("push", "-q", "origin", "refs/lazy/tasks/"+evil.ID+":refs/lazy/tasks/"+evil.ID)

	// The victim pulls: the hostile task is reported, and nothing runs
	// on any path that would have resumed it.
	res := victim.run(nil, "pull")
	if res.Code != 0 || !strings.Contains(res.Stderr, "never started") {
		t.Fatalf("pull did not report the foreign session:\n%s", res)
	}
	victim.ok("list")
	victim.ok("list", "--status", "interrupted")
	if msg := victim.fails(1, nil, "resume", evil.ID); !strings.Contains(msg, "take-over") {
		t.Fatalf("resume of a foreign session: %s", msg)
	}
	if msg := victim.fails(1, nil, "unblock", evil.ID, "-m", "go"); !strings.Contains(msg, "not started on this machine") {
		t.Fatalf("unblock of a foreign session: %s", msg)
	}
	if out := victim.ok("show", evil.ID); !strings.Contains(out, "never started it") {
		t.Fatalf("show does not warn:\n%s", out)
	}
	dr := victim.run(nil, "doctor", "--json")
	if dr.Code != 1 || !strings.Contains(dr.Stdout, "foreign-session") {
		t.Fatalf("doctor does not report it:\n%s", dr)
	}
	if _, err := os.Stat(proof); err == nil {
		t.Fatal("the attacker's command ran on the victim's machine")
	}
	// The victim's own task is untouched and still resumable here.
	if s := victim.show(mine.Slug); s.Status != "blocked" {
		t.Fatalf("the victim's task is %s", s.Status)
	}

	// Taking it over is explicit, and runs what this machine decides, in a
	// worktree derived from the slug, never the record's command or path.
	ran := filepath.Join(t.TempDir(), "ran")
	out := victim.ok("start", "--take-over", evil.ID, "--command", fakeAgentBin)
	if !strings.Contains(out, "Took over") {
		t.Fatalf("take-over: %s", out)
	}
	ts := sessionOf(t, victim, evil.ID)
	if ts["worktree"] == wt || ts["id"] == vs["id"] || ts["agent"] != "exec" {
		t.Fatalf("the taken-over session reuses the record's values: %v", ts)
	}
	victim.with(script(t, "write "+ran+" yes", "exit 0")).ok("resume", evil.ID)
	victim.waitStatus(evil.Slug, "blocked")
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the locally chosen agent did not run: %v", err)
	}
	if _, err := os.Stat(proof); err == nil {
		t.Fatal("the attacker's command ran after the take-over")
	}
}

func TestPulledRecordCannotTouchAnotherTasksWorktree(t *testing.T) {
	victim, attacker := clones(t)
	mine := workedTask(t, victim, "victim work", "v.txt v")
	victim.ok("push")
	attacker.ok("init")
	vs := sessionOf(t, attacker, mine.ID)

	evil := attacker.create("hijack")
	attacker.ok("close", evil.Slug, "-m", "done")
	craft(t, attacker.dir, "refs/lazy/tasks/"+evil.ID, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"host": vs["host"], "sessions": 1})
		f["session.json"] = mustJSON(t, map[string]any{
			"id": vs["id"], "number": 1, "host": vs["host"], "agent": "claude",
			"branch": vs["branch"], "worktree": vs["worktree"], "started_at": "2026-01-01T00:00:00Z",
		})
	})
	attacker.git("push", "-q", "origin", "refs/lazy/tasks/"+evil.ID+":refs/lazy/tasks/"+evil.ID)
	victim.ok("pull")

	victim.ok("reopen", evil.ID, "--reason", "looks useful")
	out := victim.ok("close", evil.ID, "-m", "no", "--delete-branch")
	if !strings.Contains(out, "left every worktree and branch alone") {
		t.Fatalf("close of a foreign session: %s", out)
	}
	if _, err := os.Stat(vs["worktree"].(string)); err != nil {
		t.Fatalf("the victim's worktree is gone: %v", err)
	}
	if got := victim.git("rev-parse", "--verify", "refs/heads/"+vs["branch"].(string)); got == "" {
		t.Fatal("the victim's branch is gone")
	}
	// The victim's task still works with its own worktree.
	victim.ok("accept", mine.Slug)
	if got := victim.git("show", "main:v.txt"); got != "v" {
		t.Fatalf("main lacks the victim's work: %q", got)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

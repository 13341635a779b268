package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
	// victim's own task so an id match alone proves nothing. Each step
	// is one the state machine allows (backlog -> working ->
	// interrupted), so pull takes the record in and the foreign-session
	// defences below are what stop it.
	craft(t, attacker.dir, "refs/lazy/tasks/"+evil.ID, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"status": "working", "host": host, "sessions": 1})
	})
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

// A merging record is evidence of an accept only on the machine that
// began it. An attacker crafts one for the victim's own task naming the
// victim's host (read from its public Lazy-Host trailer) and a stash the
// victim really has: no command the victim runs may take the accept
// lock, run git in its checkout, commit an abort, or apply or drop the
// stash; doctor reports the record, and nothing is pushed from the
// victim's local records of its own accepts and stashes.
func TestPulledMergingRecordNeverTouchesTheVictimsCheckout(t *testing.T) {
	victim, attacker := clones(t)
	mine := workedTask(t, victim, "victim work", "v.txt v")
	victim.ok("push")
	attacker.ok("init")
	host := attacker.lazyHost(mine.ID)

	// The victim's own stash, and a clean checkout, where a recovery
	// would give a stash back.
	readme := filepath.Join(victim.dir, "README.md")
	if err := os.WriteFile(readme, []byte("# my experiment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	victim.git("stash", "push", "-q", "-m", "my experiment")
	stash := strings.TrimSpace(victim.git("rev-parse", "stash@{0}"))
	stashes := victim.git("stash", "list", "--format=%H %s")
	mainTip := strings.TrimSpace(victim.git("rev-parse", "main"))
	mainFiles := victim.git("ls-files", "-s")

	ref := "refs/lazy/tasks/" + mine.ID
	craft(t, attacker.dir, ref, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"status": "merging", "accept": map[string]any{
			"id": "0123456789abcdef", "accept_in_flight_from": "blocked", "into": "main", "into_sha": mainTip,
			"started_at": "2026-01-01T00:00:00Z", "host": host, "stash_sha": stash, "dest_dirty": true,
		}})
	})
	attacker.git("push", "-q", "origin", ref+":"+ref)

	// The victim pulls. Whatever pull decides about the record, this
	// layer must hold on its own: the record is placed as a pull that
	// took it would.
	victim.run(nil, "pull")
	victim.git("fetch", "-q", "origin", "+"+ref+":refs/crafted/"+mine.ID)
	victim.git("update-ref", ref, "refs/crafted/"+mine.ID)

	untouched := func(after string) {
		t.Helper()
		if got := victim.git("stash", "list", "--format=%H %s"); got != stashes {
			t.Fatalf("after %s the victim's stash list changed:\n%s\nwas:\n%s", after, got, stashes)
		}
		if b, err := os.ReadFile(readme); err != nil || string(b) != "# test\n" {
			t.Fatalf("after %s README.md is %q (%v)", after, b, err)
		}
		if st := victim.git("status", "--porcelain"); st != "" {
			t.Fatalf("after %s the victim's checkout changed:\n%s", after, st)
		}
		if got := strings.TrimSpace(victim.git("rev-parse", "main")); got != mainTip {
			t.Fatalf("after %s main moved to %s", after, got)
		}
		if got := victim.git("ls-files", "-s"); got != mainFiles {
			t.Fatalf("after %s the victim's index changed", after)
		}
		sum := sha256.Sum256([]byte("main"))
		lock := filepath.Join(victim.dir, ".git", "lazy", "locks", "accept-into-"+hex.EncodeToString(sum[:8])+".lock")
		if _, err := os.Stat(lock); err == nil {
			t.Fatalf("after %s the accept lock of main was taken", after)
		}
		log := victim.git("log", "--format=%B", ref)
		if strings.Contains(log, "Lazy-Op: accept-abort") || strings.Contains(log, "Lazy-Op: accept-recovered") {
			t.Fatalf("after %s the victim committed an accept recovery:\n%s", after, log)
		}
		if st := victim.refStatus(mine.ID); st != "merging" {
			t.Fatalf("after %s the crafted record was acted on: %s", after, st)
		}
	}
	victim.ok("list")
	untouched("list")
	if out := victim.ok("status"); !strings.Contains(out, "foreign merge: "+mine.Slug+" is merging, but this machine did not start that accept") {
		t.Fatalf("status does not report the foreign merge:\n%s", out)
	}
	untouched("status")
	if out := victim.ok("show", mine.Slug); !strings.Contains(out, "merging") {
		t.Fatalf("show: %s", out)
	}
	untouched("show")
	rep := victim.doctor(1, "--dry-run")
	if a, ok := rep.kinds()[mine.Slug+"/foreign-merge"]; !ok || a != "" {
		t.Fatalf("doctor does not report the foreign merge: %+v", rep.Findings)
	}
	victim.doctor(1)
	untouched("doctor")
	for _, verb := range [][]string{{"close", mine.Slug, "-m", "no"}, {"reject", mine.Slug, "--reason", "no"}} {
		if msg := victim.fails(1, nil, verb...); !strings.Contains(msg, "did not start that accept") {
			t.Fatalf("%s of a foreign merge: %s", verb[0], msg)
		}
		untouched(verb[0])
	}

	// An accept of another task into main, which first recovers the dead
	// accepts into main, leaves the crafted one alone too.
	other := workedTask(t, victim, "other work", "o.txt o")
	victim.ok("accept", other.Slug)
	if got := victim.git("stash", "list", "--format=%H %s"); got != stashes {
		t.Fatalf("the accept of another task changed the victim's stash list:\n%s", got)
	}
	if log := victim.git("log", "--format=%B", ref); strings.Contains(log, "Lazy-Op: accept-abort") || victim.refStatus(mine.ID) != "merging" {
		t.Fatalf("the accept of another task recovered the crafted accept:\n%s", log)
	}

	// The victim's local records (its accepts, the stashes it keeps) are
	// never pushed.
	victim.git("update-ref", "refs/lazy-kept/stash/"+mine.ID+"/"+stash, stash)
	victim.run(nil, "push")
	if got := strings.TrimSpace(attacker.git("ls-remote", "origin")); strings.Contains(got, "refs/lazy-kept/") || strings.Contains(got, "refs/lazy-local/") {
		t.Fatalf("a local record reached the remote:\n%s", got)
	}

	// The human's way out: release the record, which touches nothing else.
	tip := strings.TrimSpace(victim.git("rev-parse", "main"))
	if msg := victim.fails(1, nil, "doctor", "--release-merge", other.Slug); !strings.Contains(msg, "not merging by an accept begun elsewhere") {
		t.Fatalf("release of a task not in a foreign merge: %s", msg)
	}
	if out := victim.ok("doctor", "--release-merge", mine.Slug); !strings.Contains(out, "Released") {
		t.Fatalf("release: %s", out)
	}
	if got := victim.git("stash", "list", "--format=%H %s"); got != stashes || strings.TrimSpace(victim.git("rev-parse", "main")) != tip || victim.git("status", "--porcelain") != "" {
		t.Fatalf("the release touched the stash list, main or the checkout:\n%s", got)
	}
	if got := victim.refStatus(mine.ID); got != "blocked" {
		t.Fatalf("after the release the task is %s, want blocked", got)
	}
	// (The stash the test recorded above is reported as owed: that is
	// the only finding left.)
	if rep := victim.doctor(1, "--dry-run"); len(rep.Findings) != 1 || rep.Findings[0].Kind != "owed-stash" {
		t.Fatalf("doctor after the release: %+v", rep.Findings)
	}
}

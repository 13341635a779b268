package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// editTaskJSON rewrites a task's task.json with plain git, the way an
// older lazy, a crashed command or a hand edit could have left it. The
// rest of the record's tree is kept.
func (r *runner) editTaskJSON(id string, edit func(m map[string]any)) {
	r.t.Helper()
	ref := "refs/lazy/tasks/" + id
	var m map[string]any
	if err := json.Unmarshal([]byte(r.git("show", ref+":task.json")), &m); err != nil {
		r.t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		r.t.Fatal(err)
	}
	blob := strings.TrimSpace(r.gitIn(b, "hash-object", "-w", "--stdin"))
	var tree strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(r.git("ls-tree", ref)), "\n") {
		if strings.HasSuffix(line, "\ttask.json") {
			line = "100644 blob " + blob + "\ttask.json"
		}
		tree.WriteString(line + "\n")
	}
	treeID := strings.TrimSpace(r.gitIn([]byte(tree.String()), "mktree"))
	commit := strings.TrimSpace(r.git("commit-tree", "-p", ref, "-m", "hand edit", treeID))
	r.git("update-ref", ref, commit)
}

// lazyHost is the host id a task's latest record commit names in its
// Lazy-Host trailer: public, as everything in a record is.
func (r *runner) lazyHost(id string) string {
	r.t.Helper()
	host := strings.TrimSpace(r.git("log", "-1", "--format=%(trailers:key=Lazy-Host,valueonly)", "refs/lazy/tasks/"+id))
	if host == "" {
		r.t.Fatalf("no Lazy-Host trailer on the record of %s", id)
	}
	return host
}

// strandAccept makes task id look as a local accept that died mid-merge
// leaves it: merging with an accept record (accept: the fields to record
// besides id and host), and this machine's own record of that accept,
// which lazy writes before the task's record says merging.
func (r *runner) strandAccept(id string, accept map[string]any) {
	r.t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		r.t.Fatal(err)
	}
	acceptID := hex.EncodeToString(b[:])
	accept["id"], accept["host"] = acceptID, r.lazyHost(id)
	local, err := json.Marshal(map[string]any{"task_id": id, "id": acceptID, "from": accept["accept_in_flight_from"],
		"into": accept["into"], "into_sha": accept["into_sha"], "dest_dirty": accept["dest_dirty"] == true})
	if err != nil {
		r.t.Fatal(err)
	}
	dir := filepath.Join(r.dir, ".git", "lazy", "accepts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".json"), local, 0o600); err != nil {
		r.t.Fatal(err)
	}
	r.editTaskJSON(id, func(m map[string]any) {
		m["status"] = "merging"
		m["accept"] = accept
	})
}

// waitUntil polls lazy show (which reconciles) until ok holds.
func (r *runner) waitUntil(name, what string, ok func(showFull) bool) showFull {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := r.showFull(name)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s never %s: %+v", name, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBlockedWithoutSessionGoesBackToBacklog(t *testing.T) {
	r := newRepo(t)
	tk := r.create("legacy blocked")
	r.editTaskJSON(tk.ID, func(m map[string]any) { m["status"] = "blocked" })
	r.ok("list")
	s := r.showFull(tk.Slug)
	last := s.History[len(s.History)-1]
	if s.Status != "backlog" || last.Actor != "system" || last.From != "blocked" {
		t.Fatalf("after a list: %s, last %+v", s.Status, last)
	}
}

func TestBranchMergedOutsideLazyCompletesTheTask(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "attempt "+filepath.Join(t.TempDir(), "n"),
		"when 1 write feature.txt the feature", "when 1 commit agent: feature", "print done"))
	done := r.create("merged by hand")
	empty := r.create("no commits")
	r.ok("start", done.Slug, "--command", fakeAgentBin)
	r.waitStatus(done.Slug, "blocked")
	r.ok("start", empty.Slug, "--command", fakeAgentBin)
	r.waitStatus(empty.Slug, "blocked")

	r.git("merge", "-q", "--no-ff", "-m", "merge by hand", "lazy/"+done.Slug)
	r.ok("list")
	s := r.showFull(done.Slug)
	if s.Status != "complete" || s.Outcome != "accepted" {
		t.Fatalf("merged task: %s outcome %q", s.Status, s.Outcome)
	}
	n := len(s.History)
	if h1, h2 := s.History[n-2], s.History[n-1]; h1.To != "zombie" || h2.From != "zombie" || h2.To != "complete" || h1.Actor != "system" || h2.Actor != "system" {
		t.Fatalf("not finished through zombie by the system: %+v %+v", h1, h2)
	}
	// A branch with no commits of its own is trivially "merged" into
	// main; it must not be taken for accepted work.
	if got := r.showFull(empty.Slug); got.Status != "blocked" {
		t.Fatalf("a task with no commits became %s", got.Status)
	}
}

func TestStalePairingIsParked(t *testing.T) {
	r := crashRepo(t)
	r = r.with(script(t, "print done"))
	tk := r.create("paired once")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	// A pairing whose process is long gone (no pairing.json at all).
	r.editTaskJSON(tk.ID, func(m map[string]any) { m["status"] = "pairing" })
	s := r.waitUntil(tk.Slug, "left pairing", func(s showFull) bool { return s.Status != "pairing" })
	if last := s.History[len(s.History)-1]; s.Status != "blocked" || last.Actor != "system" {
		t.Fatalf("stale pairing became %s by %+v", s.Status, last)
	}
}

func TestFinishedTaskLeftoverSupervisorIsStopped(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "print working", "hang"))
	tk := r.create("closed under it")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	sup := waitSupervisor(t, r, tk.ID, 0)
	agent := agentPID(t, r)
	// A finish whose cleanup never ran (a crash right after the record).
	r.editTaskJSON(tk.ID, func(m map[string]any) { m["status"] = "abandoned"; m["outcome"] = "closed" })
	r.ok("list")
	deadline := time.Now().Add(20 * time.Second)
	for !gone(sup) || !gone(agent) {
		if time.Now().After(deadline) {
			t.Fatalf("supervisor %d (gone %v) or agent %d (gone %v) survived", sup, gone(sup), agent, gone(agent))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID)); !os.IsNotExist(err) {
		t.Fatalf("protocol files of a finished task remain: %v", err)
	}
	if s := r.showFull(tk.Slug); s.Status != "abandoned" {
		t.Fatalf("cleanup changed the status to %s", s.Status)
	}
}

// gone reports whether pid is dead or a zombie nobody reaped yet.
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Contains(string(b), ") Z ")
}

func TestStrandedMergeIsRecovered(t *testing.T) {
	for _, landed := range []bool{false, true} {
		name := map[bool]string{false: "never merged: prior status restored", true: "merged: finished"}[landed]
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			r = r.with(script(t, "write x.txt work", "commit agent: x", "print done"))
			tk := r.create("stranded")
			r.ok("start", tk.Slug, "--command", fakeAgentBin)
			r.waitStatus(tk.Slug, "blocked")
			tip := strings.TrimSpace(r.git("rev-parse", "main"))
			if landed {
				r.git("merge", "-q", "--squash", "lazy/"+tk.Slug)
				r.git("commit", "-q", "-m", "stranded (squash)\n\nLazy-Task: "+tk.ID)
			}
			// An accept that died mid-merge: merging, with its record.
			r.strandAccept(tk.ID, map[string]any{"accept_in_flight_from": "blocked", "into": "main", "into_sha": tip, "started_at": "2026-01-01T00:00:00Z"})
			r.ok("list")
			s := r.showFull(tk.Slug)
			want := map[bool]string{false: "blocked", true: "complete"}[landed]
			if s.Status != want {
				t.Fatalf("stranded merge became %s, want %s", s.Status, want)
			}
			if landed && s.Outcome != "accepted" {
				t.Fatalf("outcome %q", s.Outcome)
			}
			if landed {
				// The accept died before its cleanup; the recovery does it.
				if _, err := gitErr(r, "rev-parse", "--verify", "refs/heads/lazy/"+tk.Slug); err == nil {
					t.Fatal("the merged task's branch was kept")
				}
				if _, err := os.Stat(s.Session.Worktree); !os.IsNotExist(err) {
					t.Fatalf("the merged task's worktree was kept: %v", err)
				}
			}
			if !landed && strings.TrimSpace(r.git("rev-parse", "main")) != tip {
				t.Fatal("recovery touched main")
			}
		})
	}
}

func TestConcurrentReconcilersRecordOnce(t *testing.T) {
	r := newRepo(t)
	r = r.with(script(t, "print answered once"))
	tk := r.create("raced record")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	waitFile(t, filepath.Join(r.dir, ".git", "lazy", "proto", tk.ID, "response.json"))
	// Six readers at once, each running the reconciler.
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := r.run(nil, "list"); res.Code != 0 {
				t.Errorf("list: %s", res)
			}
		}()
	}
	wg.Wait()
	s := r.showFull(tk.Slug)
	agentTurns, parks := 0, 0
	for _, tn := range s.TurnList {
		if tn.Role == "agent" {
			agentTurns++
		}
	}
	for _, h := range s.History {
		if h.From == "working" && h.To == "blocked" {
			parks++
		}
	}
	if s.Status != "blocked" || agentTurns != 1 || parks != 1 {
		t.Fatalf("status %s, %d agent turns, %d parks; want blocked, 1, 1", s.Status, agentTurns, parks)
	}
}

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type daemonInfo struct {
	PID     int    `json:"pid"`
	Version string `json:"version"`
}

// withDaemon enables the daemon for a runner and stops it at cleanup.
func withDaemon(t *testing.T, r *runner) *runner {
	t.Helper()
	d := r.with("LAZY_NO_DAEMON=")
	t.Cleanup(func() {
		res := d.run(nil, "daemon", "--status")
		var info daemonInfo
		if res.Code == 0 && json.Unmarshal([]byte(res.Stdout), &info) == nil {
			d.run(nil, "daemon", "--stop")
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(info.PID, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
	return d
}

func (r *runner) daemonInfo() daemonInfo {
	r.t.Helper()
	var info daemonInfo
	out := r.ok("daemon", "--status")
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		r.t.Fatalf("daemon --status: %v\n%s", err, out)
	}
	return info
}

// refStatus reads a task's status with plain git, so nothing reconciles.
func (r *runner) refStatus(id string) string {
	r.t.Helper()
	var tk task
	if err := json.Unmarshal([]byte(r.git("show", "refs/lazy/tasks/"+id+":task.json")), &tk); err != nil {
		r.t.Fatal(err)
	}
	return tk.Status
}

func TestDaemonRecordsTurnsAndSurvivesBeingKilled(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	marker := filepath.Join(t.TempDir(), "agent-finished")
	goAhead := filepath.Join(t.TempDir(), "daemon-killed")
	r = r.with(script(t, "print started", "wait-file "+goAhead, "write "+marker+" yes", "print finished after the daemon died"))
	tk := r.create("outlives the daemon")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)

	info := r.daemonInfo()
	sock := filepath.Join(r.dir, ".git", "lazy", "daemon.sock")
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, mode %v", sock, err, fi.Mode())
	}
	// A second daemon does not take over.
	if res := r.run(nil, "daemon"); res.Code != 0 || !strings.Contains(res.Stderr, "already running") {
		t.Fatalf("second daemon: %s", res)
	}
	agent := agentPID(t, r)
	// SIGKILL the daemon mid-turn: the agent is not its child.
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(agent, 0) != nil {
		t.Fatal("killing the daemon killed the agent")
	}
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not finish after the daemon was killed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := r.waitStatus(tk.Slug, "blocked")
	if last := s.TurnList[len(s.TurnList)-1]; !strings.Contains(last.Content, "finished after the daemon died") {
		t.Fatalf("agent turn %+v", last)
	}
}

func TestDaemonReconcilesWithoutAnyRead(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	r = r.with(script(t, "print quick"))
	tk := r.create("quick")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	deadline := time.Now().Add(20 * time.Second)
	for r.refStatus(tk.ID) != "blocked" {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never recorded the turn (status %s)", r.refStatus(tk.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if log := r.git("log", "-1", "--format=%(trailers:key=Lazy-Actor,valueonly)", "refs/lazy/tasks/"+tk.ID); strings.TrimSpace(log) != "system" {
		t.Fatalf("the park was recorded by %q, want system", log)
	}
}

func TestDaemonRestartsOnVersionMismatch(t *testing.T) {
	other := filepath.Join(t.TempDir(), "lazy-other")
	build := exec.Command("go", "build", "-o", other, "-ldflags", "-X main.version=other-version", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	r := withDaemon(t, newRepo(t))
	r.ok("init")
	r.ok("daemon", "--ensure")
	first := r.daemonInfo()
	cmd := exec.Command(other, "daemon", "--ensure")
	cmd.Dir = r.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ensure with another version: %v\n%s", err, out)
	}
	second := r.daemonInfo()
	if second.PID == first.PID || !strings.HasPrefix(second.Version, "other-version+") {
		t.Fatalf("daemon not replaced: %+v then %+v", first, second)
	}
	if syscall.Kill(first.PID, 0) == nil {
		t.Fatal("the old daemon is still running")
	}
}

func TestDaemonStreamsEvents(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	r.ok("init")
	r.ok("daemon", "--ensure")
	cmd := exec.Command(lazyBin, "daemon", "--events")
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 64)
	go func() {
		dec := json.NewDecoder(out)
		for {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				close(lines)
				return
			}
			lines <- string(raw)
		}
	}()
	if first := <-lines; !strings.Contains(first, `"heartbeat"`) {
		t.Fatalf("first event %s, want a heartbeat", first)
	}
	q := r.with(script(t, "print quick"))
	tk := q.create("evented")
	q.ok("start", tk.Slug, "--command", fakeAgentBin)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if strings.Contains(l, `"reconcile"`) && strings.Contains(l, tk.ID) && strings.Contains(l, `"to":"blocked"`) {
				return
			}
		case <-deadline:
			t.Fatal("no reconcile event for the finished turn")
		}
	}
}

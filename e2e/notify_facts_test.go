package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sentEvent is what a cmd: target read on stdin.
type sentEvent struct {
	Kind, Slug, Status, Outcome, Reason, Repo, Time string
}

// sentEvents reads the events a cmd: target appended to path.
func sentEvents(t *testing.T, path string) []sentEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []sentEvent
	dec := json.NewDecoder(strings.NewReader(string(b)))
	for {
		var ev sentEvent
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("the events file does not parse: %v\n%s", err, b)
		}
		out = append(out, ev)
	}
}

// countOf counts the events of slug and kind.
func countOf(evs []sentEvent, slug, kind string) int {
	n := 0
	for _, ev := range evs {
		if ev.Slug == slug && ev.Kind == kind {
			n++
		}
	}
	return n
}

// stopDaemon stops the repository's daemon and waits until it is gone.
func stopDaemon(t *testing.T, r *runner) {
	t.Helper()
	info := r.daemonInfo()
	r.ok("daemon", "--stop")
	eventually(t, "the daemon to exit", func() bool { return syscall.Kill(info.PID, 0) != nil })
}

// TestNotifyStatesFacts: with the daemon lazy starts itself (in the git
// directory), notifications name the repository as lazy notify test
// does; turning them on announces nothing that happened before, also
// after a daemon restart; an ask on a blocked task is asked/answered,
// never another blocked (nor another lazy.notify.command run); turned
// off and on again, what happened meanwhile is not announced.
func TestNotifyStatesFacts(t *testing.T) {
	r := newRepo(t)
	hookRuns := filepath.Join(t.TempDir(), "hook-runs")
	r.git("config", "lazy.notify.command", `printf '%s\n' "$LAZY_TASK_SLUG" >> `+hookRuns)
	agent := r.with(script(t, "print done"))

	// Before notifications: one task parked, one accepted.
	parked := agent.create("parked before notify")
	agent.ok("start", parked.Slug, "--command", fakeAgentBin, "--wait")
	landed := agent.create("accepted before notify")
	writer := r.with(script(t, "write landed.txt landed", "commit the landed work", "print done"))
	writer.ok("start", landed.Slug, "--command", fakeAgentBin, "--wait")
	writer.ok("accept", landed.Slug)

	d := withDaemon(t, agent)
	d.ok("daemon", "--ensure")
	events := filepath.Join(t.TempDir(), "events.json")
	state := filepath.Join(r.dir, ".git", "lazy", "notify", "state.json")
	d.ok("config", "--add", "lazy.notify", "cmd:cat >> "+events)
	eventually(t, "the baseline", func() bool { _, err := os.Stat(state); return err == nil })
	d.ok("notify", "test")
	evs := sentEvents(t, events)
	if len(evs) != 1 || evs[0].Kind != "test" || evs[0].Repo != filepath.Base(r.dir) {
		t.Fatalf("lazy notify test sent %+v; want one test event naming %s", evs, filepath.Base(r.dir))
	}
	repo := evs[0].Repo

	fresh := d.create("parked after notify")
	d.ok("start", fresh.Slug, "--command", fakeAgentBin, "--wait")
	eventually(t, "the new task's blocked event", func() bool { return countOf(sentEvents(t, events), fresh.Slug, "blocked") == 1 })

	// An ask: answered, and no second blocked; a failing ask: answered,
	// outcome failed.
	if out := d.ok("ask", fresh.Slug, "-m", "why so?"); !strings.Contains(out, "done") {
		t.Fatalf("ask printed %q", out)
	}
	eventually(t, "the answered event", func() bool { return countOf(sentEvents(t, events), fresh.Slug, "answered") == 1 })
	failing := d.with(script(t, "exit 3"))
	failing.run(nil, "ask", fresh.Slug, "-m", "and now?")
	eventually(t, "the failed answer's event", func() bool { return countOf(sentEvents(t, events), fresh.Slug, "answered") == 2 })

	// A restart, a comment: nothing old comes back; a new task is news.
	stopDaemon(t, d)
	d.ok("daemon", "--ensure")
	d.ok("comment", parked.Slug, "-m", "a new record, the same state")
	d.ok("comment", fresh.Slug, "-m", "a new record, the same state")
	after := d.create("parked after the restart")
	d.ok("start", after.Slug, "--command", fakeAgentBin, "--wait")
	eventually(t, "the post-restart task's event", func() bool { return countOf(sentEvents(t, events), after.Slug, "blocked") == 1 })

	// Off, a turn ends meanwhile, on again: not announced.
	d.ok("config", "--unset", "lazy.notify")
	eventually(t, "the state forgotten", func() bool { _, err := os.Stat(state); return os.IsNotExist(err) })
	d.ok("unblock", after.Slug, "-m", "once more", "--wait")
	d.ok("config", "--add", "lazy.notify", "cmd:cat >> "+events)
	eventually(t, "the new baseline", func() bool { _, err := os.Stat(state); return err == nil })
	last := d.create("parked at the end")
	d.ok("start", last.Slug, "--command", fakeAgentBin, "--wait")
	eventually(t, "the last task's event", func() bool { return countOf(sentEvents(t, events), last.Slug, "blocked") == 1 })

	evs = sentEvents(t, events)
	for _, ev := range evs {
		if ev.Repo != repo {
			t.Errorf("an event names the repository %q, lazy notify test %q: %+v", ev.Repo, repo, ev)
		}
		if ev.Slug == parked.Slug || ev.Slug == landed.Slug {
			t.Errorf("a task as it was before notifications was announced: %+v", ev)
		}
	}
	for slug, want := range map[string]map[string]int{
		fresh.Slug: {"blocked": 1, "answered": 2},
		after.Slug: {"blocked": 1},
		last.Slug:  {"blocked": 1},
	} {
		for kind, n := range want {
			if got := countOf(evs, slug, kind); got != n {
				t.Errorf("%s: %d %s events, want %d; all: %+v", slug, got, kind, n, evs)
			}
		}
	}
	if n := countOf(evs, fresh.Slug, "asked"); n > 2 {
		t.Errorf("%s was asked twice and announced %d times", fresh.Slug, n)
	}
	// The first ask was answered, the second could not be.
	var answers []sentEvent
	for _, ev := range evs {
		if ev.Slug == fresh.Slug && ev.Kind == "answered" {
			answers = append(answers, ev)
		}
	}
	if len(answers) != 2 || answers[0].Outcome != "" || !strings.Contains(answers[0].Reason, "answered a question; the task is still blocked") ||
		answers[1].Outcome != "failed" || !strings.Contains(answers[1].Reason, "could not answer") {
		t.Errorf("the answered events: %+v", answers)
	}
	// The older hook ran once for the fresh task: its turn's end, not
	// its asks.
	b, _ := os.ReadFile(hookRuns)
	if n := strings.Count(string(b), fresh.Slug+"\n"); n != 1 {
		t.Errorf("lazy.notify.command ran %d times for %s:\n%s", n, fresh.Slug, b)
	}
}

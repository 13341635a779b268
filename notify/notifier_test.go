package notify

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// world is a fake listing: tasks with observations and record commits.
type world struct {
	obs     map[string]Observation
	version map[string]int
	updated map[string]time.Time
}

func newWorld() *world {
	return &world{obs: map[string]Observation{}, version: map[string]int{}, updated: map[string]time.Time{}}
}

func (w *world) set(o Observation, at time.Time) {
	w.obs[o.TaskID] = o
	w.version[o.TaskID]++
	w.updated[o.TaskID] = at
}

func (w *world) entries() []task.Entry {
	var out []task.Entry
	for id := range w.obs {
		sum := sha1.Sum([]byte(fmt.Sprintf("%s/%d", id, w.version[id])))
		oid, _ := gitrepo.FromBytes(sum[:])
		out = append(out, task.Entry{ID: id, Commit: oid, Status: w.obs[id].Status, Updated: w.updated[id].UTC().Format(task.TimeLayout)})
	}
	return out
}

func (w *world) load(e *task.Entry) (Observation, error) { return w.obs[e.ID], nil }

func observation(id string, st machine.Status, turns int) Observation {
	return Observation{TaskID: id, Slug: "task-" + id, Title: "Task " + id, Status: st, Sessions: 1, Turns: turns}
}

// TestPassAnnouncesOnceAcrossRestarts: a change is announced once; a new
// notifier on the same directory (a daemon restart) announces nothing it
// announced before, nor the tasks that were as they are before
// notifications began, but does announce what changed while it was down.
func TestPassAnnouncesOnceAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notify")
	clock := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	w := newWorld()
	w.set(observation("old", machine.Blocked, 2), clock.Add(-time.Hour)) // blocked before notifications began
	w.set(observation("a", machine.Working, 1), clock.Add(-time.Minute))
	pass := func(n *Notifier) []Event {
		t.Helper()
		evs, err := n.Pass(w.entries(), Policy{BreakerAt: 3}, nil, w.load)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	n := &Notifier{Dir: dir, Repo: "myrepo", Now: now}
	if evs := pass(n); len(evs) != 0 {
		t.Fatalf("first pass announced %+v; the old blocked task predates notifications", evs)
	}
	clock = clock.Add(time.Minute)
	w.set(observation("a", machine.Blocked, 2), clock)
	evs := pass(n)
	if len(evs) != 1 || evs[0].Slug != "task-a" || evs[0].Kind != KindBlocked || evs[0].Repo != "myrepo" || evs[0].Time != Stamp(clock) {
		t.Fatalf("got %+v, want task-a blocked once", evs)
	}
	if evs := pass(n); len(evs) != 0 {
		t.Fatalf("a second pass announced %+v", evs)
	}
	w.set(observation("a", machine.Blocked, 2), clock) // a comment: a new record commit, the same state
	if evs := pass(n); len(evs) != 0 {
		t.Fatalf("a new commit of the same state announced %+v", evs)
	}

	restarted := &Notifier{Dir: dir, Repo: "myrepo", Now: now}
	if evs := pass(restarted); len(evs) != 0 {
		t.Fatalf("after a restart: %+v announced again", evs)
	}
	if fi, err := os.Stat(filepath.Join(dir, StateFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}

	// While the daemon was down, task a was accepted.
	clock = clock.Add(time.Hour)
	fin := observation("a", machine.Complete, 3)
	fin.Outcome = "accepted"
	w.set(fin, clock)
	again := &Notifier{Dir: dir, Repo: "myrepo", Now: now}
	evs = pass(again)
	if len(evs) != 1 || evs[0].Kind != KindFinished || evs[0].Outcome != "accepted" {
		t.Fatalf("after a restart, the change made while down: %+v", evs)
	}
	// A filter keeps a kind quiet but still remembers it.
	w.set(observation("b", machine.Conflict, 2), clock)
	if evs, _ := again.Pass(w.entries(), Policy{}, map[Kind]bool{KindBlocked: true}, w.load); len(evs) != 0 {
		t.Fatalf("lazy.notify.events blocked let %+v through", evs)
	}
	if evs := pass(again); len(evs) != 0 {
		t.Fatalf("a filtered event came later: %+v", evs)
	}
}

// TestLimiterCollapsesTheExcess: at most max events a minute per target;
// the rest become one "and K more" event when the window has room.
func TestLimiterCollapsesTheExcess(t *testing.T) {
	l := newLimiter(2)
	t0 := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	var evs []Event
	for i := range 5 {
		evs = append(evs, Event{Kind: KindBlocked, Slug: "t" + strconv.Itoa(i), Repo: "r"})
	}
	got := l.admit(t0, evs)
	if len(got) != 2 || got[0].Slug != "t0" || got[1].Slug != "t1" {
		t.Fatalf("first minute sent %+v", got)
	}
	if got := l.admit(t0.Add(30*time.Second), nil); len(got) != 0 || !l.pending() {
		t.Fatalf("within the minute: %+v, pending %v", got, l.pending())
	}
	got = l.admit(t0.Add(61*time.Second), []Event{{Kind: KindFinished, Slug: "t9", Outcome: "accepted", Repo: "r"}})
	if len(got) != 2 || got[0].Kind != KindMore || got[0].Count != 3 || !strings.Contains(got[0].Reason, "t2 blocked, t3 blocked, t4 blocked") || got[1].Slug != "t9" {
		t.Fatalf("after the minute: %+v", got)
	}
	if !strings.Contains(got[0].Headline(), "and 3 more") {
		t.Fatalf("headline %q", got[0].Headline())
	}
	if got := l.admit(t0.Add(62*time.Second), []Event{{Kind: KindBlocked, Slug: "t10"}}); len(got) != 0 || !l.pending() {
		t.Fatalf("a full window sent %+v", got)
	}
	if got := l.admit(t0.Add(122*time.Second), nil); len(got) != 1 || got[0].Count != 1 || !strings.Contains(got[0].Reason, "t10 blocked") || l.pending() {
		t.Fatalf("room again: %+v", got)
	}
}

// hook is a local HTTP server that records what it receives.
type hook struct {
	mu   sync.Mutex
	reqs []received
	code int
}

type received struct {
	method, path string
	header       http.Header
	body         string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs = append(h.reqs, received{r.Method, r.URL.RequestURI(), r.Header.Clone(), string(b)})
	code := h.code
	h.mu.Unlock()
	if code != 0 {
		w.WriteHeader(code)
	}
}

func (h *hook) got() []received {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]received(nil), h.reqs...)
}

func sample() Event {
	return Event{Kind: KindBlocked, TaskID: "t1", Slug: "fix-login", Title: "Fix the login race", Status: machine.Blocked,
		Reason: "its turn ended; it waits for your review", Time: "2025-05-01T12:00:00Z", Repo: "myrepo"}
}

func TestNtfyWebhook(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tg, err := ParseTarget(srv.URL + "/lazy-topic-s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Kind != TargetNtfy || strings.Contains(tg.String(), "s3cret") {
		t.Fatalf("target %s (%s)", tg, tg.Kind)
	}
	if err := tg.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	reqs := h.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.path != "/lazy-topic-s3cret" {
		t.Fatalf("%s %s", r.method, r.path)
	}
	if got := r.header.Get("Title"); got != "lazy (myrepo): fix-login is blocked" {
		t.Fatalf("Title %q", got)
	}
	if r.header.Get("Priority") != "high" || !strings.Contains(r.header.Get("Tags"), "warning") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || r.header.Get("X-Lazy-Kind") != "blocked" {
		t.Fatalf("headers %v", r.header)
	}
	if r.body != "its turn ended; it waits for your review\nFix the login race\nlazy show fix-login" {
		t.Fatalf("body %q", r.body)
	}
}

func TestJSONWebhook(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tg, err := ParseTarget("json:" + srv.URL + "/hooks/T000/B000/XXXX?token=abc")
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	r := h.got()[0]
	if r.method != http.MethodPost || r.header.Get("Content-Type") != "application/json" || r.path != "/hooks/T000/B000/XXXX?token=abc" {
		t.Fatalf("%s %s %v", r.method, r.path, r.header)
	}
	var ev Event
	if err := json.Unmarshal([]byte(r.body), &ev); err != nil {
		t.Fatal(err)
	}
	if ev != sample() {
		t.Fatalf("received %+v", ev)
	}
}

// TestWebhookErrorsHideTheURL: a refused or unreachable webhook says so
// without printing its path or query, where the secret lives.
func TestWebhookErrorsHideTheURL(t *testing.T) {
	h := &hook{code: http.StatusForbidden}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tg, _ := ParseTarget(srv.URL + "/topic-s3cret?auth=tok3n")
	err := tg.Send(context.Background(), sample())
	if err == nil || !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
		t.Fatalf("refused: %v", err)
	}
	srv.Close()
	err = tg.Send(context.Background(), sample())
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
		t.Fatalf("unreachable: %v", err)
	}
	if _, err := ParseTarget("ftp://host/s3cret"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad scheme: %v", err)
	}
}

// TestCommandTarget: the command reads the event as JSON on stdin, runs
// in the repository, and is killed with its whole process group when it
// outlives its time.
func TestCommandTarget(t *testing.T) {
	dir := t.TempDir()
	tg, err := ParseTarget(`cmd:cat > got.json; pwd > where`)
	if err != nil {
		t.Fatal(err)
	}
	tg.Dir = dir
	if err := tg.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "got.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil || ev != sample() {
		t.Fatalf("stdin: %q (%v)", b, err)
	}
	if where, _ := os.ReadFile(filepath.Join(dir, "where")); strings.TrimSpace(string(where)) != dir {
		t.Fatalf("ran in %q", where)
	}

	failing, _ := ParseTarget(`cmd:echo no route to pager >&2; exit 3`)
	if err := failing.Send(context.Background(), sample()); err == nil || !strings.Contains(err.Error(), "no route to pager") {
		t.Fatalf("failing command: %v", err)
	}

	hang, _ := ParseTarget(`cmd:sleep 60 & echo $! > child; wait`)
	hang.Dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := hang.Send(ctx, sample()); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("hanging command: %v", err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "child"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %d outlived the kill", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// TestDeliverRateLimitsAndLogs: Deliver holds each target to its rate,
// the excess arriving later as one event, and logs every delivery with
// the target redacted.
func TestDeliverRateLimitsAndLogs(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tg, _ := ParseTarget(srv.URL + "/s3cret-topic")
	dir := t.TempDir()
	clock := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	n := &Notifier{Dir: dir, Repo: "r", Now: func() time.Time { return clock }}
	var evs []Event
	for i := range 4 {
		ev := sample()
		ev.Slug = "t" + strconv.Itoa(i)
		evs = append(evs, ev)
	}
	res := n.Deliver(context.Background(), []Target{tg}, 3, evs)
	if len(res) != 3 || !res[0].OK || len(h.got()) != 3 || !n.Pending() {
		t.Fatalf("results %+v, %d received, pending %v", res, len(h.got()), n.Pending())
	}
	clock = clock.Add(time.Minute)
	res = n.Deliver(context.Background(), []Target{tg}, 3, nil)
	if len(res) != 1 || res[0].Kind != KindMore || n.Pending() {
		t.Fatalf("after a minute: %+v", res)
	}
	last := h.got()[3]
	if !strings.Contains(last.header.Get("Title"), "and 1 more") || !strings.Contains(last.body, "t3 blocked") {
		t.Fatalf("collapse: %v %q", last.header, last.body)
	}
	log, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(log), "\n") != 4 || strings.Contains(string(log), "s3cret") {
		t.Fatalf("log:\n%s", log)
	}
}

func TestParseTargets(t *testing.T) {
	for _, c := range []struct{ in, kind, shown string }{
		{"desktop", TargetDesktop, "desktop"},
		{"cmd: notify-me --urgent", TargetCommand, "cmd:notify-me --urgent"},
		{"https://ntfy.sh/my-secret-topic", TargetNtfy, "https://ntfy.sh/…"},
		{"ntfy:https://ntfy.example.com/t", TargetNtfy, "https://ntfy.example.com/…"},
		{"json:https://hooks.slack.com/services/T/B/X", TargetJSON, "json:https://hooks.slack.com/…"},
		{"https://user:pw@example.com", TargetNtfy, "https://example.com"},
	} {
		tg, err := ParseTarget(c.in)
		if err != nil || tg.Kind != c.kind || tg.String() != c.shown {
			t.Errorf("ParseTarget(%q) = %s %q, %v; want %s %q", c.in, tg.Kind, tg.String(), err, c.kind, c.shown)
		}
	}
	for _, bad := range []string{"cmd:", "mailto:me@example.com", "https://", "json:ftp://x/y", "bell"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) took it", bad)
		}
	}
	s := Load(fakeConfig{"lazy.notify": {"desktop", "nope", "https://ntfy.sh/x"}, "lazy.notify.perMinute": {"3"}, "lazy.notify.events": {"blocked, finished,bogus"}}, "/repo")
	if len(s.Targets) != 2 || len(s.Problems) != 2 || s.PerMinute != 3 || !s.Events[KindBlocked] || !s.Events[KindFinished] || len(s.Events) != 2 {
		t.Fatalf("Load: %+v", s)
	}
}

type fakeConfig map[string][]string

func (c fakeConfig) Get(k string) (string, bool) {
	v := c[k]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func (c fakeConfig) All(k string) []string { return c[k] }

func TestDesktopWithoutNotifySendIsSkipped(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	tg, _ := ParseTarget("desktop")
	err := tg.Send(context.Background(), sample())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
	n := &Notifier{Dir: t.TempDir()}
	n.Deliver(context.Background(), []Target{tg}, 10, []Event{sample()})
	n.Deliver(context.Background(), []Target{tg}, 10, []Event{sample()})
	log, _ := os.ReadFile(filepath.Join(n.Dir, LogFile))
	if strings.Count(string(log), "skipped") != 1 {
		t.Fatalf("the note is not once:\n%s", log)
	}
}

func TestDesktopNotifySend(t *testing.T) {
	bin := t.TempDir()
	out := filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + out + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	tg, _ := ParseTarget("desktop")
	if err := tg.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	want := "--app-name=lazy\n--urgency=critical\n--\nlazy (myrepo): fix-login is blocked\nits turn ended; it waits for your review\nFix the login race\nlazy show fix-login\n"
	if string(b) != want {
		t.Fatalf("notify-send got\n%s\nwant\n%s", b, want)
	}
}

// alive reports whether pid runs: a killed process is a zombie until
// whoever inherited it reaps it, and a zombie runs nothing.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: the signal probe is all there is
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

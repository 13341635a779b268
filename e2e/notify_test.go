package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// webhook is a local HTTP server that records the notifications it
// receives.
type webhook struct {
	mu   sync.Mutex
	got  []notified
	srv  *httptest.Server
	hits chan struct{}
}

type notified struct {
	path, title, ctype, body string
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{hits: make(chan struct{}, 64)}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost {
			t.Errorf("webhook got %s %s", r.Method, r.URL.Path)
		}
		w.mu.Lock()
		w.got = append(w.got, notified{r.URL.Path, r.Header.Get("Title"), r.Header.Get("Content-Type"), string(b)})
		w.mu.Unlock()
		w.hits <- struct{}{}
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// count is how many requests on path mention slug.
func (w *webhook) count(path, slug string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, g := range w.got {
		if g.path == path && strings.Contains(g.title+g.body, slug) {
			n++
		}
	}
	return n
}

// waitFor waits until cond holds, woken by each request, for at most 60s.
func (w *webhook) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-w.hits:
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("waited 60s for %s; received %+v", what, w.got)
		}
	}
}

// foregroundDaemon runs lazy daemon in the foreground; stop ends it and
// waits for it, and the test's end does too.
func foregroundDaemon(t *testing.T, r *runner) (stop func()) {
	t.Helper()
	cmd := exec.Command(lazyBin, "daemon", "--tick", "100ms", "--idle", "0")
	cmd.Dir = r.dir
	cmd.Env = r.with("LAZY_NO_DAEMON=").environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(t.TempDir(), "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			_ = logf.Close()
		})
	}
	t.Cleanup(stop)
	// Up when it answers: the events that follow are its.
	deadline := time.Now().Add(20 * time.Second)
	for r.with("LAZY_NO_DAEMON=").run(nil, "daemon", "--status").Code != 0 {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("the daemon did not come up:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	return stop
}

// TestDaemonNotifiesOnceAcrossRestarts: a real task whose exec-agent turn
// ends blocked reaches the webhooks (ntfy-style text and JSON) exactly
// once: not again on later passes, and not after the daemon restarts.
// A second task's notification is the proof that the passes in between
// ran.
func TestDaemonNotifiesOnceAcrossRestarts(t *testing.T) {
	r := newRepo(t)
	hook := newWebhook(t)
	r.git("config", "--add", "lazy.notify", hook.srv.URL+"/ntfy-topic-s3cret")
	r.git("config", "--add", "lazy.notify", "json:"+hook.srv.URL+"/json-hook")
	stop := foregroundDaemon(t, r)

	first := r.create("first notified task")
	r.ok("start", first.Slug, "--agent", "exec", "--command", "echo done with the first")
	hook.waitFor(t, "the first task's notifications", func() bool {
		return hook.count("/ntfy-topic-s3cret", first.Slug) >= 1 && hook.count("/json-hook", first.Slug) >= 1
	})
	hook.mu.Lock()
	var text, js notified
	for _, g := range hook.got {
		switch g.path {
		case "/ntfy-topic-s3cret":
			text = g
		case "/json-hook":
			js = g
		}
	}
	hook.mu.Unlock()
	if !strings.Contains(text.title, first.Slug+" is blocked") || !strings.HasPrefix(text.ctype, "text/plain") || !strings.Contains(text.body, "lazy show "+first.Slug) {
		t.Fatalf("ntfy-style notification: %+v", text)
	}
	var ev struct {
		Kind, Slug, Status, Repo, Time string
		TaskID                         string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(js.body), &ev); err != nil || js.ctype != "application/json" {
		t.Fatalf("JSON notification %+v: %v", js, err)
	}
	if ev.Kind != "blocked" || ev.Slug != first.Slug || ev.Status != "blocked" || ev.TaskID != first.ID || ev.Repo != filepath.Base(r.dir) || ev.Time == "" {
		t.Fatalf("JSON event %+v", ev)
	}

	second := r.create("second notified task")
	r.ok("start", second.Slug, "--agent", "exec", "--command", "echo done with the second")
	hook.waitFor(t, "the second task's notification", func() bool { return hook.count("/json-hook", second.Slug) == 1 })
	if n := hook.count("/json-hook", first.Slug); n != 1 {
		t.Fatalf("the first task was announced %d times", n)
	}

	// A restart: the new daemon remembers what this host announced.
	stop()
	foregroundDaemon(t, r)
	r.ok("comment", first.Slug, "-m", "a new record, the same state")
	third := r.create("third notified task")
	r.ok("start", third.Slug, "--agent", "exec", "--command", "echo done with the third")
	hook.waitFor(t, "the third task's notification", func() bool { return hook.count("/json-hook", third.Slug) == 1 })
	for _, tk := range []task{first, second} {
		if n, m := hook.count("/json-hook", tk.Slug), hook.count("/ntfy-topic-s3cret", tk.Slug); n != 1 || m != 1 {
			t.Fatalf("after a restart, %s was announced %d and %d times", tk.Slug, n, m)
		}
	}
	log, err := os.ReadFile(filepath.Join(r.dir, ".git", "lazy", "notify", "notify.log"))
	if err != nil || strings.Contains(string(log), "s3cret") {
		t.Fatalf("the delivery log holds the webhook's secret path or is missing (%v):\n%s", err, log)
	}

	// lazy notify test reaches every target and says so per target.
	var res struct {
		Results []struct {
			Target string `json:"target"`
			OK     bool   `json:"ok"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.ok("notify", "test", "--json")), &res); err != nil || len(res.Results) != 2 || !res.Results[0].OK || !res.Results[1].OK {
		t.Fatalf("lazy notify test: %+v %v", res, err)
	}
	if strings.Contains(r.ok("notify"), "s3cret") {
		t.Fatal("lazy notify prints the webhook's secret path")
	}
}

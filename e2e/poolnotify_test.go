package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestPoolParkIsNotifiedOnceAcrossMachines: the runner's clone and the
// human's clone each run the daemon's notifier, with a command target
// appending to one file; the runner's task parks, the runner's daemon
// sees it at once and the human's after lazy pull, and the file gets
// exactly one notification, the remote one marker. A fresh clone's
// daemon, after lazy pull, sends nothing old.
func TestPoolParkIsNotifiedOnceAcrossMachines(t *testing.T) {
	n := newPoolNet(t)
	m := n.machine("r")
	got := filepath.Join(n.root, "got")
	target := "cmd:{ cat; echo; } >> " + got
	for _, c := range []*runner{n.human, m} {
		c.git("config", "--add", "lazy.notify", target)
		foregroundDaemon(t, c)
		waitState(t, c, "") // the baseline, before anything parks
	}
	tk := n.queue(1, "notify")[0]
	p := startRunner(m, "r", "--lease", "30s", "--poll", "2s")
	defer p.stop()
	poolWait(t, 60*time.Second, "both machines to see the park", func() bool {
		n.human.ok("pull")
		return hasState(n.human, tk.ID, "park") && hasState(m, tk.ID, "park")
	})
	markers := func() []string {
		return strings.Fields(testrepo.Git(t, n.bare, "for-each-ref", "--format=%(refname)", "refs/lazy-notified/"+tk.ID+"/"))
	}
	poolWait(t, 30*time.Second, "the notification", func() bool { return len(lines(t, got)) >= 1 && len(markers()) == 1 })
	// Both machines' notifiers have passed over the park; watch the file
	// a while for a second delivery.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if ls := lines(t, got); len(ls) != 1 || !strings.Contains(ls[0], `"kind":"blocked"`) || !strings.Contains(ls[0], tk.Slug) {
			t.Fatalf("the target got %q: want the park once across both machines", ls)
		}
		time.Sleep(100 * time.Millisecond) // polling for a duplicate within a bounded window
	}
	if ms := markers(); len(ms) != 1 {
		t.Fatalf("markers on the remote: %v", ms)
	}

	fresh := n.clone("fresh")
	fresh.git("config", "--add", "lazy.notify", target)
	fresh.ok("pull")
	foregroundDaemon(t, fresh)
	waitState(t, fresh, tk.ID)
	if ls := lines(t, got); len(ls) != 1 {
		t.Fatalf("after a fresh clone's daemon the target got %q", ls)
	}
}

func notifyState(c *runner) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, ".git", "lazy", "notify", "state.json"))
	return string(b)
}

// waitState waits for clone c's notifier to have a state holding id
// ("" for any state: its baseline).
func waitState(t *testing.T, c *runner, id string) {
	t.Helper()
	poolWait(t, 30*time.Second, "the notifier's state", func() bool {
		s := notifyState(c)
		return s != "" && strings.Contains(s, id)
	})
}

// hasState says whether c's notifier remembers slot for task id.
func hasState(c *runner, id, slot string) bool {
	s := notifyState(c)
	i := strings.Index(s, `"`+id+`":{`)
	return i >= 0 && strings.Contains(s[i:min(len(s), i+200)], `"`+slot+`"`)
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

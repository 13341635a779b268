package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

type noMarks struct{}

func (noMarks) Substate(s *gitstore.Summary) string {
	if s.Status == machine.Working {
		return "agent: running tests"
	}
	return ""
}

func TestTaskTableGolden(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(-d).Format(gitstore.TimeLayout) }
	tasks := []*gitstore.Summary{
		{ID: "aaaaaaaa1111", Slug: "fix-the-flaky-login-test", Title: "Fix the flaky login test that fails one run in twenty on CI under load", Status: machine.Working, UpdatedAt: at(3 * time.Minute)},
		{ID: "bbbbbbbb2222", Slug: "cover-logout", Parent: "aaaaaaaa1111", Title: "Cover logout too", Status: machine.Blocked, UpdatedAt: at(2 * time.Hour)},
		{ID: "cccccccc3333", Slug: "write-docs", Title: "Write the docs for the new review loop: diff, logs, wait and the TUI", Status: machine.Backlog, UpdatedAt: at(3 * 24 * time.Hour)},
		{ID: "dddddddd4444", Slug: "old-thing", Title: "Old thing", Status: machine.Complete, UpdatedAt: at(90 * 24 * time.Hour)},
		{ID: "eeeeeeee5555", Slug: "crashed", Title: "Crashed – needs a look", Status: machine.Interrupted, UpdatedAt: at(10 * time.Second)},
	}
	for _, width := range []int{60, 100, 200} {
		for _, color := range []bool{false, true} {
			var b bytes.Buffer
			st := style{color: color, width: width, now: now}
			if err := taskTable(&b, st, treeOrder(tasks, taskLess("attention")), noMarks{}, nil); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("list-%d-color-%v.golden", width, color)
			golden(t, name, b.Bytes())
			if !color {
				for _, line := range bytes.Split(bytes.TrimRight(b.Bytes(), "\n"), []byte("\n")) {
					if n := len([]rune(string(line))); n > width {
						t.Errorf("%s: a line of %d columns at width %d: %q", name, n, width, line)
					}
				}
			} else if !bytes.Contains(b.Bytes(), []byte("\x1b[1;33mblocked\x1b[0m")) {
				t.Errorf("%s: blocked is not painted", name)
			}
		}
	}
}

func TestRelTime(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{10 * time.Second: "just now", 3 * time.Minute: "3m ago", 5 * time.Hour: "5h ago", 50 * time.Hour: "2d ago"} {
		if got := relTime(now.Add(-d), now); got != want {
			t.Errorf("relTime(-%s) = %q, want %q", d, got, want)
		}
	}
}

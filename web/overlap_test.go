package web

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// startedHere makes a blocked task whose session this machine started,
// with a branch off main that commits files.
func startedHere(t *testing.T, st *gitstore.Store, dir, title string, files ...string) *task.Snapshot {
	t.Helper()
	return startedAs(t, st, dir, task.CreateSpec{Title: title, Actor: machine.Human}, files...)
}

// startedAs is startedHere for the task spec makes.
func startedAs(t *testing.T, st *gitstore.Store, dir string, spec task.CreateSpec, files ...string) *task.Snapshot {
	t.Helper()
	title := spec.Title
	sn, err := st.Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	branch := "lazy/" + sn.Task.Slug
	testrepo.Git(t, dir, "switch", "-q", "-c", branch, "main")
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(title+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testrepo.Git(t, dir, "add", ".")
	testrepo.Git(t, dir, "commit", "-q", "-m", title)
	testrepo.Git(t, dir, "switch", "-q", "main")
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := owned.For(st.Repo().LazyDir()).Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Worktree: filepath.Join(t.TempDir(), "wt"), Branch: branch}); err != nil {
		t.Fatal(err)
	}
	for _, to := range []machine.Status{machine.Working, machine.Blocked} {
		sn, _, err = st.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Session = &task.Session{ID: sid, Number: 1, Host: "test-host", Branch: branch}
			s.Task.Sessions = 1
			s.Task.Status = to
			return &task.Op{Name: "test", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sn
}

// TestPagesFlagOverlappingTasks checks the list's mark and the task
// page's Overlaps section, with a file name that is HTML escaped.
func TestPagesFlagOverlappingTasks(t *testing.T) {
	testrepo.FullLane(t)
	s, st, dir := newServer(t)
	odd := "x<script>&y.txt"
	a := startedHere(t, st, dir, "task a", "shared.txt", odd)
	b := startedHere(t, st, dir, "task b", "shared.txt", odd)
	quiet := startedHere(t, st, dir, "task c", "own.txt")
	h := s.Handler()

	for _, path := range []string{"/", "/?view=board"} {
		list := page(t, h, path)
		if !strings.Contains(list, "⚠ task-b (2 files)") || !strings.Contains(list, "⚠ task-a (2 files)") {
			t.Fatalf("GET %s does not mark the overlap:\n%s", path, list)
		}
		if strings.Count(list, `class="overlap"`) != 2 {
			t.Fatalf("GET %s marks %d tasks, want a and b", path, strings.Count(list, `class="overlap"`))
		}
	}
	task := page(t, h, "/task/"+a.Task.ID)
	if !strings.Contains(task, `<div id="overlaps">`) || !strings.Contains(task, `With <a href="/task/task-b">task-b</a>, also merging into <code>main</code>`) {
		t.Fatalf("the task page has no overlaps section:\n%s", task)
	}
	if strings.Contains(task, "<script>") || !strings.Contains(task, "<code>x&lt;script&gt;&amp;y.txt</code>") || !strings.Contains(task, "<code>shared.txt</code>") {
		t.Fatalf("the files are not listed, or not escaped:\n%s", task)
	}
	if other := page(t, h, "/task/"+quiet.Task.ID); strings.Contains(other, `id="overlaps"`) {
		t.Fatal("a task that overlaps nothing has an overlaps section")
	}

	// What lands on main after b forked shows on b's page.
	testrepo.Git(t, dir, "merge", "-q", "--no-edit", "lazy/"+a.Task.Slug)
	task = page(t, h, "/task/"+b.Task.ID)
	if !strings.Contains(task, `id="landed"`) || !strings.Contains(task, "lazy sync "+b.Task.Slug) {
		t.Fatalf("b's page does not show what landed:\n%s", task)
	}
}

package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
)

// TestPagesShowTheGate checks the list's gate mark and the task page's
// Merge gate section, with a pulled record whose command and output try
// to inject markup and terminal control.
func TestPagesShowTheGate(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedHere(t, st, dir, "task a", "a.txt")
	at := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	if _, _, err := st.Update(context.Background(), sn.Task.ID, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		s.Task.Gate = &gitstore.GateRecord{FixRounds: 1}
		s.Task.Gate.AddRun(gitstore.GateRun{ID: "r1", At: at, Target: "main", Base: "abc", Tree: "def", Source: "git config lazy.gate",
			Commands: []gitstore.GateCommand{{Cmd: "make <b>test</b>", Exit: 2}}, Failed: "make <b>test</b>",
			Tail: "FAIL: TestX\x1b[2J<script>alert(1)</script>\n"})
		return &gitstore.Op{Name: "gate", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	list := page(t, h, "/")
	if !strings.Contains(list, `class="gate-failed"`) || !strings.Contains(list, "gate failed: make &lt;b&gt;test&lt;/b&gt;") {
		t.Fatalf("the list does not mark the failed gate:\n%s", list)
	}
	task := page(t, h, "/task/"+sn.Task.ID)
	for _, want := range []string{`<div id="gate">`, "<b>run r1</b>", "exit 2", "FAIL: TestX", "Automatic fix rounds: 1"} {
		if !strings.Contains(task, want) {
			t.Fatalf("the task page lacks %q:\n%s", want, task)
		}
	}
	if strings.Contains(task, "<script>alert") || strings.Contains(task, "\x1b") || strings.Contains(task, "<b>test</b>") {
		t.Fatalf("the gate record reached the page unescaped:\n%s", task)
	}
}

// TestTheListShowsTheMergeQueue: an accept in flight appears under its
// target with its state.
func TestTheListShowsTheMergeQueue(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedHere(t, st, dir, "task a", "a.txt")
	en := fmt.Sprintf(`{"task":%q,"slug":%q,"target":"main","state":"gating","detail":"on main at abc","entered":"2026-12-06T04:00:00Z","since":"2026-12-06T04:00:00Z","pid":%d}`, sn.Task.ID, sn.Task.Slug, os.Getpid())
	p := st.Repo().LazyDir("queue", "active", sn.Task.ID+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(en), 0o644); err != nil {
		t.Fatal(err)
	}
	list := page(t, s.Handler(), "/")
	if !strings.Contains(list, "Merge queue into <code>main</code>") || !strings.Contains(list, "task-a</a> <b>gating</b>") {
		t.Fatalf("the list does not show the queue:\n%s", list)
	}
}

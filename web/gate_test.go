package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestPagesShowTheGate checks the list's gate mark and the task page's
// Merge gate section, with a pulled record whose command and output try
// to inject markup and terminal control.
func TestPagesShowTheGate(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedHere(t, st, dir, "task a", "a.txt")
	at := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	if _, _, err := st.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Gate = &task.GateRecord{FixRounds: 1}
		s.Task.Gate.AddRun(task.GateRun{ID: "r1", At: at, Target: "main", Base: "abc", Tree: "def", Source: "git config lazy.gate",
			Commands: []task.GateCommand{{Cmd: "make <b>test</b>", Exit: 2}}, Failed: "make <b>test</b>",
			Tail: "FAIL: TestX\x1b[2J<script>alert(1)</script>\n"})
		return &task.Op{Name: "gate", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	list := page(t, h, "/")
	// This machine did not run r1: its record alone says it failed.
	if !strings.Contains(list, `class="gate-failed"`) || !strings.Contains(list, "gate failed (remote, not verified here): make &lt;b&gt;test&lt;/b&gt;") {
		t.Fatalf("the list does not mark the failed gate:\n%s", list)
	}
	task := page(t, h, "/task/"+sn.Task.ID)
	for _, want := range []string{`<div id="gate">`, "<b>run r1</b>", "exit 2", "FAIL: TestX", "Automatic fix rounds: 1", "remote, not verified here", "(its record says failed, host "} {
		if !strings.Contains(task, want) {
			t.Fatalf("the task page lacks %q:\n%s", want, task)
		}
	}
	if strings.Contains(task, "<script>alert") || strings.Contains(task, "\x1b") || strings.Contains(task, "<b>test</b>") {
		t.Fatalf("the gate record reached the page unescaped:\n%s", task)
	}
}

// TestTaskPageExplainsABatchedTrain: the Merge gate section says where
// each run stood in a batched train and what the train decided for the
// task ("failed in batch 2 of 3, isolated in round 2"), and the lane its
// accept went through, with a pulled record's names escaped.
func TestTaskPageExplainsABatchedTrain(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedHere(t, st, dir, "task a", "a.txt")
	at := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	run, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Gate = &task.GateRecord{Lane: "docs<i>+api",
			Batched: &task.BatchOutcome{Outcome: task.BatchIsolated, Target: "main<script>", Batch: 2, Of: 3, Round: 2, Run: run, At: at}}
		s.Task.Gate.AddRun(task.GateRun{ID: "r1", At: at, Target: "main", Base: "abc", Tree: "def", Source: "git config lazy.gate",
			Commands: []task.GateCommand{{Cmd: "make test", Exit: 2}}, Failed: "make test", Batch: &task.GateBatch{Batch: 2, Of: 3, Round: 1, Entries: 3, Part: 3}})
		s.Task.Gate.AddRun(task.GateRun{ID: "r2", At: at, Target: "main", Base: "abc", Tree: "def", Source: "git config lazy.gate",
			Commands: []task.GateCommand{{Cmd: "make test", Exit: 2}}, Failed: "make test", Batch: &task.GateBatch{Batch: 1, Of: 1, Round: 2, Entries: 2, Part: 1, Lane: "api<b>"}})
		return &task.Op{Name: "gate", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	page := page(t, s.Handler(), "/task/"+sn.Task.ID)
	for _, want := range []string{
		"batch 2 of 3, round 1, 3 entries as one tree",
		"batch 1 of 1 of lane <code>api&lt;b&gt;</code>, round 2, 2 entries as one tree",
		`Batched train into <code>main&lt;script&gt;</code> (lazy.gate.batch): failed in batch 2 of 3, isolated in round 2 (run ` + run + `)`,
		`Lane <code>docs&lt;i&gt;&#43;api</code> (lazy.gate.lanes)`,
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("the task page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>") && strings.Contains(page, "main<script>") || strings.Contains(page, "docs<i>") || strings.Contains(page, "api<b>") {
		t.Fatalf("a pulled record's names reached the page unescaped:\n%s", page)
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

// TestPagesTellARunMadeHereFromARemoteClaim: a passing run this
// machine's own record names shows as passed; one only the task's
// record claims (a forged, pulled run) shows as remote, not verified
// here, on the list and on the task page.
func TestPagesTellARunMadeHereFromARemoteClaim(t *testing.T) {
	s, st, dir := newServer(t)
	sn := startedHere(t, st, dir, "task a", "a.txt")
	at := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	here, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	forged, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	run := task.GateRun{ID: here, At: at, Target: "main", Base: "abc", Tree: "def", Host: "test-host", Passed: true,
		Commands: []task.GateCommand{{Cmd: "make test"}}}
	if err := owned.GateRunsFor(st.Repo().LazyDir()).Save(owned.GateRun{ID: here, TaskID: sn.Task.ID, Target: "main", Base: "abc", Tree: "def", Passed: true,
		Commands: []owned.GateCommand{{Cmd: "make test"}}}); err != nil {
		t.Fatal(err)
	}
	add := func(r task.GateRun) {
		t.Helper()
		if _, _, err := st.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			if s.Task.Gate == nil {
				s.Task.Gate = &task.GateRecord{}
			}
			s.Task.Gate.AddRun(r)
			return &task.Op{Name: "gate", Actor: machine.Human}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	add(run)
	h := s.Handler()
	if list := page(t, h, "/"); !strings.Contains(list, `<span class="gate-passed meta">gate passed</span>`) || strings.Contains(list, "not verified") {
		t.Fatalf("a run made here is not shown as passed:\n%s", list)
	}
	// The forged run claims this very host, and says it passed, with
	// the origin a record may not set.
	claim := run
	claim.ID, claim.Origin = forged, task.GateHere
	add(claim)
	list := page(t, h, "/")
	if !strings.Contains(list, "gate: remote, not verified here") || strings.Contains(list, `class="gate-passed`) {
		t.Fatalf("a forged run is not shown as remote:\n%s", list)
	}
	task := page(t, h, "/task/"+sn.Task.ID)
	for _, want := range []string{"<b>run " + here + `</b> <span class="gate-passed">passed</span>`, "<b>run " + forged + `</b> <span class="gate-remote"`, "(its record says passed, host test-host)"} {
		if !strings.Contains(task, want) {
			t.Fatalf("the task page lacks %q:\n%s", want, task)
		}
	}
}

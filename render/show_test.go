package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// TestShowRendersOnlyWhatWasFetched checks the split of lazy show: the
// text comes from the view alone (the live substate the JSON carries,
// the parent, PR and next steps fetch put there), so the two outputs
// cannot disagree.
func TestShowRendersOnlyWhatWasFetched(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "the-task", Title: "The task",
		Status: machine.Blocked, CreatedAt: at, Parent: "fedcba9876543210"}}
	sn.Session = &task.Session{ID: "aaaabbbbccccdddd", Number: 2, Host: "here", Agent: "claude", Branch: "lazy/the-task"}
	d := &task.Detail{Summary: task.NewSummary(&sn.Task), Live: "waiting on the user", Goal: "do it",
		History: []task.Change{{At: at, Op: "create", To: machine.Backlog, Host: "here"}}}
	v := &Show{Snapshot: sn, Detail: d, Parent: "the-parent (fedcba98)", Foreign: true, Next: []string{"lazy accept the-task"}}
	var out bytes.Buffer
	if err := v.Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"the-task  (0123456789abcdef)\n",
		"  Status:   blocked (waiting on the user)\n",
		"  Parent:   the-parent (fedcba98)\n",
		"\nGoal:\n  do it\n",
		"\nSession 2 (",
		"  Warning:  the record says this host runs this session",
		"\nTurns (0)\n",
		"\nHistory\n",
		"\nNext\n  lazy accept the-task\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "PR:") {
		t.Errorf("a PR line without a pull request:\n%s", text)
	}
	v.Detail.Live, v.Foreign, v.Next = "", false, nil
	out.Reset()
	if err := v.Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "  Status:   blocked\n") || strings.Contains(text, "Warning:") || strings.Contains(text, "\nNext\n") {
		t.Errorf("without a substate, foreign session or next step:\n%s", text)
	}
}

// TestShowFlagsATurnWhoseToolCallsAllFailed: a turn whose every tool
// call failed is flagged on a line of its own with the command that
// shows why; a turn with some failures counts them; a record whose
// counts do not add up says nothing.
func TestShowFlagsATurnWhoseToolCallsAllFailed(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "the-task", Title: "The task", Status: machine.Blocked, CreatedAt: at}}
	zero := 0
	d := &task.Detail{Summary: task.NewSummary(&sn.Task), TurnList: []task.Turn{
		{Seq: 2, Role: task.RoleAgent, Kind: "agent", Content: "Done: the tests pass.", At: at, ExitCode: &zero, Tools: &task.Tools{Calls: 5, Failed: 5}},
		{Seq: 4, Role: task.RoleAgent, Kind: "agent", Content: "Fixed.", At: at, ExitCode: &zero, Commits: []string{"abc"}, ChangedFiles: []string{"a.go", "b.go"}, Tools: &task.Tools{Calls: 7, Failed: 2}},
		{Seq: 6, Role: task.RoleAgent, Kind: "agent", Content: "Hm.", At: at, ExitCode: &zero, Tools: &task.Tools{Calls: 1, Failed: 1}},
		{Seq: 8, Role: task.RoleAgent, Kind: "agent", Content: "Odd.", At: at, ExitCode: &zero, Tools: &task.Tools{Calls: 2, Failed: 9}},
	}}
	var out bytes.Buffer
	if err := (&Show{Snapshot: sn, Detail: d}).Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"      -- 0 commits, 0 files changed\n      ⚠ all 5 tool calls failed; lazy logs the-task --turn 2 shows why\n",
		"      -- 1 commit, 2 files changed, 7 tool calls (2 failed)\n",
		"      ⚠ its only tool call failed; lazy logs the-task --turn 6 shows why\n",
		"  #8 ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Count(text, "⚠") != 2 || strings.Contains(text, "9 failed") {
		t.Errorf("a flag too many:\n%s", text)
	}
	checkNoGoSyntax(t, "show", text)
}

// TestShowExplainsABatchedTrain: lazy show places each run in its batch
// and says how the batch decided the task, in words.
func TestShowExplainsABatchedTrain(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "the-task", Title: "The task", Status: machine.Blocked, CreatedAt: at}}
	g := &task.GateRecord{
		Runs: []task.GateRun{{ID: "aaaabbbbccccdddd", At: at, Target: "main", Base: "b", Tree: "t", Speculative: true, Failed: "make",
			Origin: task.GateHere, Batch: &task.GateBatch{Batch: 2, Of: 3, Round: 1, Entries: 4, Part: 4}}},
		Batched: &task.BatchOutcome{Outcome: task.BatchIsolated, Target: "main\x1b[2J", Batch: 2, Of: 3, Round: 2, Run: "aaaabbbbccccdddd", At: at},
	}
	v := &Show{Snapshot: sn, Detail: &task.Detail{Summary: task.NewSummary(&sn.Task), GateRecord: g}}
	var out bytes.Buffer
	if err := v.Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		", speculative, batch 2 of 3, round 1, 4 entries)",
		"  batched train into main",
		"failed in batch 2 of 3, isolated in round 2 (run aaaabbbbccccdddd)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.ContainsRune(text, '\x1b') {
		t.Errorf("a control character reached the output:\n%q", text)
	}
}

// TestShowExplainsABatchInALane: in a train split into lanes, each lane
// batched on its own, lazy show says which lane's batch a run and the
// decision were in, the lane escaped.
func TestShowExplainsABatchInALane(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "the-task", Title: "The task", Status: machine.Blocked, CreatedAt: at}}
	g := &task.GateRecord{
		Runs: []task.GateRun{{ID: "aaaabbbbccccdddd", At: at, Target: "main", Base: "b", Tree: "t", Speculative: true, Failed: "make",
			Origin: task.GateHere, Batch: &task.GateBatch{Batch: 1, Of: 2, Round: 3, Entries: 2, Part: 1, Lane: "api\x1b[2J"}}},
		Batched: &task.BatchOutcome{Outcome: task.BatchIsolated, Target: "main", Batch: 1, Of: 2, Round: 3, Run: "aaaabbbbccccdddd", At: at, Lane: "api\x1b[2J"},
		Lane:    "api",
	}
	var out bytes.Buffer
	if err := (&Show{Snapshot: sn, Detail: &task.Detail{Summary: task.NewSummary(&sn.Task), GateRecord: g}}).Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		", speculative, batch 1 of 2 of lane api",
		", round 3, 2 entries)",
		"failed in batch 1 of 2 of lane api",
		", isolated in round 3 (run aaaabbbbccccdddd)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.ContainsRune(text, '\x1b') {
		t.Errorf("a control character reached the output:\n%q", text)
	}
}

// TestShowSaysTheLane: lazy show names the lane of the merge train the
// task's accept went through, escaped (a record arrives from anyone who
// can push).
func TestShowSaysTheLane(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "the-task", Title: "The task", Status: machine.Complete, CreatedAt: at}}
	g := &task.GateRecord{Runs: []task.GateRun{{ID: "aaaabbbbccccdddd", At: at, Target: "main", Base: "b", Tree: "t", Passed: true, Origin: task.GateHere}},
		Lane: "docs+api\x1b[2J"}
	var out bytes.Buffer
	if err := (&Show{Snapshot: sn, Detail: &task.Detail{Summary: task.NewSummary(&sn.Task), GateRecord: g}}).Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "  lane: docs+api") || strings.ContainsRune(text, '\x1b') {
		t.Errorf("lane missing or unescaped:\n%q", text)
	}
}

// TestShowSaysWhetherAFixRoundResumed: the gate section says, for each
// automatic fix round, whether the agent's own session was resumed or
// a new one started and why (the CLI's words, escaped), and the agent
// turn says it too.
func TestShowSaysWhetherAFixRoundResumed(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", Slug: "the-task", Title: "The task", Status: machine.Working, CreatedAt: at}}
	g := &task.GateRecord{FixRounds: 3}
	g.NoteFix(task.GateFix{Round: 1, Max: 3, Turn: 3, At: at})
	g.NoteResume(3, &task.Resume{Resumed: "01a2b3c4-session"})
	g.NoteFix(task.GateFix{Round: 2, Max: 3, Turn: 5, At: at})
	g.NoteResume(5, &task.Resume{NewSession: "s-new", Reason: "No conversation found with session ID: x\x1b[31m"})
	g.NoteFix(task.GateFix{Round: 3, Max: 3, Turn: 7, At: at})
	sn.Task.Gate = g
	zero := 0
	d := &task.Detail{Summary: task.NewSummary(&sn.Task), TurnList: []task.Turn{{Seq: 4, Role: task.RoleAgent, Kind: "agent", At: at, ExitCode: &zero,
		Resume: &task.Resume{Resumed: "01a2b3c4-session"}}}, GateRecord: g}
	var out bytes.Buffer
	if err := (&Show{Snapshot: sn, Detail: d}).Render(&out, Style{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"  fix round 1 of 3: resumed the agent's session 01a2b3c4-session\n",
		"  fix round 2 of 3: started a new session (the old one could not be resumed: No conversation found with session ID: x\\u001b[31m)\n",
		"  fix round 3 of 3: the agent's turn has not ended yet\n",
		"      resumed the agent's session 01a2b3c4-session\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("an escape reached the terminal:\n%q", text)
	}
	// A human's accept starts the rounds again, and the list is bounded.
	g.NoteFix(task.GateFix{Round: 1, Max: 3, Turn: 9})
	if len(g.Fixes) != 1 {
		t.Fatalf("fixes after a new first round: %+v", g.Fixes)
	}
	for i := 2; i < 30; i++ {
		g.NoteFix(task.GateFix{Round: i, Max: 30, Turn: 9 + i})
	}
	if n := len(g.Fixes); n != task.MaxFixes || g.Fixes[n-1].Round != 29 {
		t.Fatalf("%d fixes kept, the last %+v", n, g.Fixes[n-1])
	}
}

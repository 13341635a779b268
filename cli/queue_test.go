package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/queue"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/task"
)

// TestRenderQueuesSaysWhatEachEntryDoesAndWhyEntriesLeft, with names and
// reasons that try terminal control.
func TestRenderQueuesSaysWhatEachEntryDoesAndWhyEntriesLeft(t *testing.T) {
	now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	q := []queue.View{{Target: "main",
		Entries: []queue.Entry{
			{Slug: "fix-login", State: queue.Gating, Detail: "on main at abc123", Since: now.Add(-5 * time.Second)},
			{Slug: "cover-logout", State: queue.Fixing, Detail: "the agent is fixing\x1b[2J", Since: now.Add(-time.Minute)},
		},
		Left: []queue.Left{
			{Slug: "add-metrics", Outcome: queue.LeftLanded, Commit: "0123456789abcdef", At: now.Add(-2 * time.Minute)},
			{Slug: "bad\x1b]0;pwned\x07", Outcome: queue.LeftFailed, Why: "the gate failed: \"go test\" exited 1", At: now.Add(-time.Minute)},
			{Slug: "culprit", Outcome: queue.LeftFailed, Why: "the gate failed", At: now.Add(-time.Minute),
				Batch: &task.BatchOutcome{Outcome: task.BatchIsolated, Target: "main", Batch: 2, Of: 3, Round: 2, Run: "0123456789abcdef"}},
			{Slug: "lane-culprit", Outcome: queue.LeftFailed, Why: "the gate failed", At: now.Add(-time.Minute), Lane: "api",
				Batch: &task.BatchOutcome{Outcome: task.BatchIsolated, Target: "main", Batch: 1, Of: 2, Round: 3, Lane: "api"}},
		}}}
	var b bytes.Buffer
	renderQueues(&b, q, now)
	out := b.String()
	for _, want := range []string{
		"Queue into main: 2 waiting or running",
		"1. fix-login", "gating", "5s ago  on main at abc123",
		"2. cover-logout", "fixing",
		"add-metrics", "landed", "as 0123456789ab",
		"failed", "the gate failed",
		"culprit", "failed in batch 2 of 3, isolated in round 2 (run 0123456789abcdef);  the gate failed",
		"lane api  failed in batch 1 of 2 of lane api, isolated in round 3;  the gate failed",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, '\x1b') || strings.ContainsRune(out, '\x07') {
		t.Fatalf("control characters reached the output:\n%q", out)
	}
	b.Reset()
	renderQueues(&b, nil, now)
	if !strings.Contains(b.String(), "No merge queue on this machine") {
		t.Fatalf("empty: %q", b.String())
	}
}

// TestStatusCellFlagsAFailedGate.
func TestStatusCellFlagsAFailedGate(t *testing.T) {
	r := statusRow{Status: "blocked", Gate: &task.GateSummary{State: task.GateFailed, Failed: "make\x1b[31m test"}}
	got := statusCell(r)
	if !strings.Contains(got, "✗ gate: make") || strings.ContainsRune(got, '\x1b') {
		t.Fatalf("%q", got)
	}
	r.Gate.State = task.GatePassed
	if got := statusCell(r); got != "blocked" {
		t.Fatalf("a passed gate is flagged: %q", got)
	}
}

// TestWatchScreenShowsTheQueue.
func TestWatchScreenShowsTheQueue(t *testing.T) {
	var b bytes.Buffer
	drawScreen(&b, nil, []queue.View{{Target: "main", Entries: []queue.Entry{{Slug: "a", State: queue.Gating}, {Slug: "b\x1b[2J", State: queue.Waiting}}}}, nil)
	out := b.String()
	if !strings.Contains(out, "merge queue into main: a gating, b") || strings.Count(out, "\x1b[2J") != 1 {
		t.Fatalf("%q", out)
	}
}

// TestWatchScreenShowsTheLanes: lazy watch's plain screen (no terminal)
// has lazy queue's lanes line under a queue split into lanes, a lane
// name's control bytes escaped; a queue without lanes has none.
func TestWatchScreenShowsTheLanes(t *testing.T) {
	split := queue.View{Target: "main", Entries: []queue.Entry{
		{Slug: "a", State: queue.Gating, Lane: "docs"}, {Slug: "b", State: queue.Waiting, Lane: "ap\x1b]0;x\x07i"}}}
	split.Lanes = queue.LaneSummary(split)
	var b bytes.Buffer
	drawScreen(&b, nil, []queue.View{split, {Target: "release", Entries: []queue.Entry{{Slug: "c", State: queue.Gating}}}}, nil)
	out := b.String()
	want := "merge queue into main: a gating, b waiting\n  " + render.Lanes(split.Lanes) + "\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "Lanes: lane docs: 1 entry, gating; lane ap") {
		t.Fatalf("no lanes line %q in:\n%q", want, out)
	}
	if strings.Count(out, "Lanes:") != 1 || strings.Contains(out, "\x07") || strings.Contains(out, "\x1b]") {
		t.Fatalf("a lanes line too many, or a lane name's control bytes came through:\n%q", out)
	}
}

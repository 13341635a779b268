package reconcile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func TestExitReasonNamesTheSignal(t *testing.T) {
	for code, want := range map[int]string{
		137: "OOM killed or SIGKILL (exit code 137)",
		143: "terminated by SIGTERM (exit code 143)",
		139: "killed by signal 11 (exit code 139)",
		-1:  "exit code unknown",
		3:   "exited with code 3",
	} {
		if got := exitReason(code); got != want {
			t.Errorf("exitReason(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestNeutralKinds(t *testing.T) {
	for kind, want := range map[string]bool{"ask": true, "sync": true, "pre-accept": true, "start": false, "unblock": false, "resume": false} {
		if neutralKind(kind) != want {
			t.Errorf("neutralKind(%q) = %v", kind, !want)
		}
	}
}

func TestHasSessionReadsTheSummaryBytes(t *testing.T) {
	for _, c := range []struct {
		sessions int
		want     bool
	}{{0, false}, {1, true}, {10, true}} {
		rec := task.Task{ID: "0123456789abcdef", Slug: "x", Status: machine.Blocked, Sessions: c.sessions}
		e := task.Entry{ID: rec.ID, Status: rec.Status, JSON: summaryBytes(t, &rec)}
		if hasSession(&e) != c.want {
			t.Errorf("sessions %d: hasSession = %v", c.sessions, !c.want)
		}
	}
}

func summaryBytes(t *testing.T, rec *task.Task) []byte {
	t.Helper()
	s := task.NewSummary(rec)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"sessions":`) {
		t.Fatalf("the summary has no sessions field: %s", b)
	}
	return b
}

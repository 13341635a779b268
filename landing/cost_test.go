package landing

import (
	"context"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func TestSquashMessageCarriesTheCostTrailers(t *testing.T) {
	sn := &task.Snapshot{Task: task.Task{ID: "0123abcd", Title: "Fix the login race"}}
	sn.SetGoal("It fails one run in ten.")
	got := squashMessage(sn, "lazy/fix-the-login-race", task.Usage{CostUSD: 4.02134, InputTokens: 1000012, OutputTokens: 1007})
	want := "Fix the login race\n\nIt fails one run in ten.\n\nLazy-Task: 0123abcd\nLazy-Branch: lazy/fix-the-login-race\nLazy-Cost: $4.0213\nLazy-Tokens: 1000012 in, 0 cached, 1007 out\n"
	if got != want {
		t.Fatalf("message:\n%q\nwant\n%q", got, want)
	}
	if got := squashMessage(sn, "lazy/x", task.Usage{}); strings.Contains(got, "Lazy-Cost") || strings.Contains(got, "Lazy-Tokens") {
		t.Fatalf("nothing recorded, yet:\n%s", got)
	}
}

// recordSpend records that task id's turns cost u, as the reconciler records
// an agent turn's usage.
func recordSpend(t *testing.T, e *Service, id string, u task.Usage) {
	t.Helper()
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Usage = &u
		return &task.Op{Name: "test", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAcceptCommitsSayWhatTheTaskCost: both local accept paths (the
// squash, and the gated tree committed as it passed) write the task's
// cost, its rejected subtask's included, where git log finds it.
func TestAcceptCommitsSayWhatTheTaskCost(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	for _, gated := range []bool{false, true} {
		t.Run(map[bool]string{false: "squash", true: "gated"}[gated], func(t *testing.T) {
			ctx := context.Background()
			var r *gateRepo
			if gated {
				r = newGateRepo(t, "true")
			} else {
				r = newGateRepo(t)
			}
			sn := r.task(t, "add the feature", map[string]string{"feature.txt": "ok\n"})
			recordSpend(t, r.e, sn.Task.ID, task.Usage{CostUSD: 4, InputTokens: 1000000, CachedInputTokens: 5, OutputTokens: 1000})
			sub, err := r.e.lifecycle().Create(ctx, lifecycle.CreateInput{Title: "a try that was thrown away", Parent: sn.Task.ID})
			if err != nil {
				t.Fatal(err)
			}
			recordSpend(t, r.e, sub.Task.ID, task.Usage{CostUSD: 0.0213, InputTokens: 12, OutputTokens: 7})
			walk(t, r.e, sub.Task.ID, machine.Abandoned)

			res, err := r.e.Accept(ctx, sn.Task.ID, nil, AcceptOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if gated != (res.Gate != "") {
				t.Fatalf("gate run %q, want the gated path %v", res.Gate, gated)
			}
			got := testrepo.Git(t, r.dir, "log", "-1", "--format=%(trailers:key=Lazy-Cost,valueonly)%(trailers:key=Lazy-Tokens,valueonly)", "main")
			if want := "$4.0213\n1000012 in, 5 cached, 1007 out\n"; strings.TrimSpace(got) != strings.TrimSpace(want) {
				t.Fatalf("trailers on main: %q, want %q", got, want)
			}
		})
	}
}

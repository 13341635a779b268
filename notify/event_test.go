package notify

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

func obs(st machine.Status, sessions, turns int) Observation {
	return Observation{TaskID: "t1", Slug: "fix-login", Title: "Fix the login", Status: st, Sessions: sessions, Turns: turns}
}

// TestDerive: each state announces once, the most specific thing first,
// and only what needs a human or finished.
func TestDerive(t *testing.T) {
	policy := Policy{BreakerAt: 3}
	failedGate := func(o Observation, run string, rounds int) Observation {
		o.Gate = &task.GateSummary{State: task.GateFailed, Run: run, Failed: "go test ./...", Rounds: rounds}
		return o
	}
	held := func(o Observation, kind string) Observation {
		o.HoldKind, o.HoldReason = kind, "spent $5.10 of $5.00"
		return o
	}
	interrupted := func(n int) Observation {
		o := obs(machine.Interrupted, 1, 3)
		o.Interruptions, o.InterruptReason = n, "killed by signal 9"
		return o
	}
	finished := func(st machine.Status, outcome string) Observation { o := obs(st, 1, 4); o.Outcome = outcome; return o }

	type step struct {
		o      Observation
		p      *Policy
		want   Kind // "" for no event
		reason string
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a turn ends blocked, once", []step{
			{o: obs(machine.Working, 1, 1)},
			{o: obs(machine.Blocked, 1, 2), want: KindBlocked, reason: "waits for your review"},
			{o: obs(machine.Blocked, 1, 2)},
		}},
		{"the next turn's end is news again, even unseen working between", []step{
			{o: obs(machine.Blocked, 1, 2), want: KindBlocked},
			{o: obs(machine.Blocked, 1, 4), want: KindBlocked},
		}},
		{"a conflict the human resolves into blocked is not news", []step{
			{o: obs(machine.Conflict, 1, 2), want: KindConflict, reason: "allowed paths"},
			{o: obs(machine.Blocked, 1, 2)},
		}},
		{"a failed gate outranks blocked, and both are remembered", []step{
			{o: failedGate(obs(machine.Blocked, 1, 2), "g1", 0), want: KindGateFailed, reason: "go test ./..."},
			{o: failedGate(obs(machine.Blocked, 1, 2), "g1", 0)},
			{o: failedGate(obs(machine.Blocked, 1, 2), "g2", 0), want: KindGateFailed},
		}},
		{"a failed gate the agent still fixes is not news until the rounds are spent", []step{
			{o: failedGate(obs(machine.Blocked, 1, 2), "g1", 1), p: &Policy{GateFixRounds: 3}, want: KindBlocked},
			{o: failedGate(obs(machine.Blocked, 1, 6), "g3", 3), p: &Policy{GateFixRounds: 3}, want: KindGateFailed},
		}},
		{"a budget hold is budget", []step{
			{o: held(obs(machine.Blocked, 1, 2), "budget"), want: KindBudget, reason: "spent $5.10"},
		}},
		{"a usage-limit hold is nobody's business, and blocked once it lifts", []step{
			{o: held(obs(machine.Blocked, 1, 2), "limit")},
			{o: obs(machine.Blocked, 1, 2), want: KindBlocked},
		}},
		{"interrupted below the breaker resumes by itself", []step{
			{o: interrupted(1)},
			{o: interrupted(2)},
			{o: interrupted(3), want: KindInterrupted, reason: "3 times in a row"},
			{o: interrupted(3)},
		}},
		{"interrupted with auto-resume off needs a human at once", []step{
			{o: interrupted(1), p: &Policy{NoAutoResume: true}, want: KindInterrupted, reason: "autoResume is off"},
		}},
		{"finished: accepted, once", []step{
			{o: finished(machine.Complete, task.OutcomeAccepted), want: KindFinished},
			{o: finished(machine.Complete, task.OutcomeAccepted)},
		}},
		{"backlog, working, submitted and a sessionless blocked say nothing", []step{
			{o: obs(machine.Backlog, 0, 0)},
			{o: obs(machine.Working, 1, 1)},
			{o: obs(machine.Submitted, 1, 2)},
			{o: obs(machine.Blocked, 0, 0)},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys map[string]string
			for i, s := range c.steps {
				p := policy
				if s.p != nil {
					p = *s.p
				}
				var ev *Event
				ev, keys = Derive(keys, s.o, p)
				switch {
				case s.want == "" && ev != nil:
					t.Fatalf("step %d: got %+v, want no event", i, *ev)
				case s.want != "" && ev == nil:
					t.Fatalf("step %d: no event, want %s", i, s.want)
				case ev != nil && ev.Kind != s.want:
					t.Fatalf("step %d: got %s, want %s", i, ev.Kind, s.want)
				case ev != nil && !strings.Contains(ev.Reason, s.reason):
					t.Fatalf("step %d: reason %q lacks %q", i, ev.Reason, s.reason)
				}
				if ev != nil && (ev.Slug != "fix-login" || ev.TaskID != "t1" || ev.Status != s.o.Status) {
					t.Fatalf("step %d: event %+v does not name the task", i, *ev)
				}
			}
		})
	}
}

func TestDeriveFinishedOutcomes(t *testing.T) {
	for _, outcome := range []string{"accepted", "rejected", "closed"} {
		o := obs(machine.Abandoned, 1, 3)
		if outcome == "accepted" {
			o.Status = machine.Complete
		}
		o.Outcome = outcome
		ev, _ := Derive(nil, o, Policy{})
		if ev == nil || ev.Kind != KindFinished || ev.Outcome != outcome || ev.NeedsHuman() {
			t.Fatalf("%s: got %+v", outcome, ev)
		}
		if !strings.Contains(ev.Headline(), "fix-login "+outcome) {
			t.Fatalf("%s: headline %q", outcome, ev.Headline())
		}
	}
}

// TestCleanKeepsSecretsOut: what an event carries is one bounded line
// without what looks like a credential.
func TestCleanKeepsSecretsOut(t *testing.T) {
	for _, c := range []struct{ in, secret string }{
		{"make test GITHUB_TOKEN=ghp_abc123", "ghp_abc123"},
		{"deploy --password: hunter2x", "hunter2x"},
		{"fetch https://bob:s3cr3t@example.com/repo failed", "s3cr3t"},
		{"curl -H 'Authorization: Bearer abcdefgh12345678'", "abcdefgh12345678"},
		{"key 0123456789abcdef0123456789abcdef0123 leaked", "0123456789abcdef0123456789abcdef"},
		{"API_KEY=\"with spaces inside\" go", "with spaces"},
	} {
		got := Clean(c.in, 300)
		if strings.Contains(got, c.secret) {
			t.Errorf("Clean(%q) = %q, keeps %q", c.in, got, c.secret)
		}
	}
	if got := Clean("a\nb\x1b[31m", 300); strings.ContainsAny(got, "\n\x1b") {
		t.Errorf("Clean kept a newline or an escape: %q", got)
	}
	long := strings.Repeat("é ", 400)
	if got := Clean(long, 100); len(got) > 100 || !strings.HasSuffix(got, "…") {
		t.Errorf("Clean bounded to %d bytes: %q", len(got), got)
	}
	if got := Clean("go test ./... failed in pkg/auth", 300); got != "go test ./... failed in pkg/auth" {
		t.Errorf("ordinary text changed: %q", got)
	}
}

// TestObserveReadsTheHold: a blocked task parked by its budget is a
// budget event in the hold's words; one waiting for a usage limit is no
// event at all.
func TestObserveReadsTheHold(t *testing.T) {
	s := &task.Summary{ID: "t1", Slug: "fix-login", Status: machine.Blocked, Sessions: 1, Turns: 2,
		Hold: &task.Hold{Kind: task.HoldBudget, Scope: "task", LimitUSD: 0.5, SpentUSD: 4.02}}
	ev, _ := Derive(nil, Observe(s), Policy{})
	if ev == nil || ev.Kind != KindBudget || !strings.Contains(ev.Reason, "$4.02") || !strings.Contains(ev.Reason, "--budget") {
		t.Fatalf("budget hold: %+v", ev)
	}
	if !strings.Contains(ev.Headline(), "over its budget") {
		t.Fatalf("headline %q", ev.Headline())
	}
	s.Hold = &task.Hold{Kind: task.HoldLimit, Reason: "usage limit"}
	if ev, _ := Derive(nil, Observe(s), Policy{}); ev != nil {
		t.Fatalf("a usage-limit hold announced %+v", *ev)
	}
	s.Hold = nil
	if ev, _ := Derive(nil, Observe(s), Policy{}); ev == nil || ev.Kind != KindBlocked {
		t.Fatalf("no hold: %+v", ev)
	}
}

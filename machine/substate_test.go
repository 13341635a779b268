package machine

import (
	"strings"
	"testing"
	"time"
)

func TestSubstate(t *testing.T) {
	w := func(slug string, d time.Duration) WaitLabel { return WaitLabel{Slug: slug, For: d} }
	for _, c := range []struct {
		in   SubstateInput
		want string
	}{
		{SubstateInput{}, "not-alive"},
		{SubstateInput{Alive: false, Waits: []WaitLabel{w("a", time.Second)}, Progress: "x"}, "not-alive"},
		{SubstateInput{Alive: true, Phase: "agent"}, "agent"},
		{SubstateInput{Alive: true, Phase: "agent", Progress: "running migration 3/7"}, "agent: running migration 3/7"},
		{SubstateInput{Alive: true, Phase: "merge_and_fix", Progress: "stale"}, "harness:merge_and_fix"},
		{SubstateInput{Alive: true, Phase: "agent", AgentRetrying: true, Attempt: 3, RetryClass: "transient_unreachable", RetryReason: "cannot connect to its API", Progress: "old line"}, "retrying (agent: transient_unreachable) attempt 3: cannot connect to its API"},
		{SubstateInput{Alive: true, Phase: "retrying", Attempt: 7, RetryClass: "transient_overload", RetryReason: "API Error:  529\n overloaded", Waits: []WaitLabel{w("a", 1)}}, "retrying attempt 7 (transient_overload): API Error: 529 overloaded"},
		{SubstateInput{Alive: true, Phase: "merge_and_fix"}, "harness:merge_and_fix"},
		{SubstateInput{Alive: true, Phase: "agent", Kind: "agent:answering", Progress: "reading"}, "agent:answering: reading"},
		{SubstateInput{Alive: true, Phase: "agent", Kind: "agent:pre-accept"}, "agent:pre-accept"},
		{SubstateInput{Alive: true, Phase: "agent", Kind: "agent:pre-accept", Progress: "p"}, "agent:pre-accept: p"},
		{SubstateInput{Alive: true, Waits: []WaitLabel{w("fix-foo", 130*time.Second)}}, "waiting on fix-foo (2m10s)"},
		{SubstateInput{Alive: true, Kind: "agent:pre-accept", Waits: []WaitLabel{w("a", 5*time.Second)}}, "waiting on a (5s)"},
		{SubstateInput{Alive: true, Waits: []WaitLabel{w("a", time.Second), w("b", 2*time.Second)}, Progress: "fan-out"}, "waiting on a (1s), b (2s): fan-out"},
		{SubstateInput{Alive: true, Waits: []WaitLabel{w("a", 0), w("b", 0), w("c", 0), w("d", time.Hour+5*time.Minute)}}, "waiting on a (0s), b (0s) +2"},
	} {
		if got := Substate(c.in); got != c.want {
			t.Errorf("Substate(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := RetrySummary(2, "", strings.Repeat("x", 200)); len([]rune(got)) != len("retrying attempt 2: ")+maxRetrySnippet {
		t.Errorf("a long reason is not cut: %q", got)
	}
	if got := shortDuration(time.Hour + 5*time.Minute); got != "1h05m" {
		t.Errorf("shortDuration = %q", got)
	}
}

package landing

import (
	"testing"

	"github.com/lazyorch/lazy/forge"
)

func TestMergeableAndWaiting(t *testing.T) {
	open := func(checks, review, blocked string) *forge.PR {
		pr := &forge.PR{State: forge.StateOpen, Review: review, Blocked: blocked}
		if checks != "" {
			pr.Checks = []forge.Check{{Name: "c", State: checks}}
		}
		return pr
	}
	for _, c := range []struct {
		pr              *forge.PR
		mergeable, wait bool
	}{
		{open("", "", ""), true, false},
		{open(forge.ChecksPassing, forge.ReviewApproved, ""), true, false},
		{open(forge.ChecksPending, "", ""), false, true},
		{open(forge.ChecksPassing, forge.ReviewRequired, "blocked"), false, true},
		{open(forge.ChecksFailing, "", ""), false, false},
		{open(forge.ChecksPassing, forge.ReviewChangesRequested, ""), false, false},
		{open(forge.ChecksPassing, "", "dirty"), false, false},
		{&forge.PR{State: forge.StateMerged}, false, false},
	} {
		if Mergeable(c.pr) != c.mergeable || waitingOnly(c.pr) != c.wait {
			t.Errorf("%+v: mergeable %v waiting %v", c.pr, Mergeable(c.pr), waitingOnly(c.pr))
		}
	}
}

package submission

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/task"
)

func TestForgeFeedbackIsNewSanitizedBoundedAndNeverLazysOwn(t *testing.T) {
	rec := &task.ForgeRecord{HeadSHA: strings.Repeat("a", 40)}
	pr := &forge.PR{Number: 4, URL: "https://github.com/o/r/pull/4", HeadSHA: strings.Repeat("b", 40),
		Checks: []forge.Check{
			{Name: "unit", State: forge.ChecksFailing, URL: "https://ci/1", Summary: strings.Repeat("x", 10000)},
			{Name: "lint", State: forge.ChecksPassing},
			{Name: "slow", State: forge.ChecksPending},
		},
		Comments: []forge.Comment{
			{ID: "review:1", Author: "eve\x1b[2J", Body: "rename\x07 it", URL: "https://github.com/o/r/pull/4", Review: "changes_requested"},
			{ID: "comment:2", Author: "lazy", Body: "lazy: reject: no\n\n" + forgeMarker, URL: "https://github.com/o/r/pull/4#c2"},
			{ID: "review:3", Author: "amy", Body: "", Review: "approved", URL: "https://github.com/o/r/pull/4"},
		}}
	keys, text := ForgeFeedback(rec, pr)
	if strings.Join(keys, " ") != "check:unit@"+strings.Repeat("b", 40)+" review:1" {
		t.Fatalf("keys %v", keys)
	}
	for _, bad := range []string{"\x1b", "\x07", "lint", "slow", "reject: no", "amy"} {
		if strings.Contains(text, bad) {
			t.Errorf("feedback contains %q:\n%s", bad, text)
		}
	}
	for _, want := range []string{"pull request #4 (https://github.com/o/r/pull/4)", `CI check "unit" failed`, "Details: https://ci/1", "[... cut by lazy", "Review (changes requested) by @eve"} {
		if !strings.Contains(text, want) {
			t.Errorf("feedback lacks %q", want)
		}
	}
	if len(text) > maxFeedbackTurn+100 {
		t.Errorf("feedback is %d bytes", len(text))
	}
	for _, k := range keys {
		rec.MarkDelivered(k)
	}
	if keys, text := ForgeFeedback(rec, pr); len(keys) != 0 || text != "" {
		t.Fatalf("delivered again: %v %q", keys, text)
	}
	// The same check failing on a new push is new feedback.
	pr.HeadSHA = strings.Repeat("c", 40)
	if keys, _ := ForgeFeedback(rec, pr); len(keys) != 1 || !strings.HasPrefix(keys[0], "check:unit@ccc") {
		t.Fatalf("a failure on a new commit: %v", keys)
	}
}

package reconcile

import (
	"context"
	"slices"
	"testing"

	"github.com/lazyorch/lazy/worktree"
)

// TestMergedPassByTarget: the merged-branch sweep compares a task with
// the branch its work merges into: its own target branch, or its
// parent's branch for a subtask. A subtask whose parent is gone, and a
// target that is not a valid branch name, are never compared (and never
// reach git's argv).
func TestMergedPassByTarget(t *testing.T) {
	p := &mergedPass{s: (&Reconciler{}).merged(), parents: map[string]*mergeFields{
		"parent": {ID: "parent", Slug: "the-parent"},
		"gone":   nil,
	}}
	candidates := []mergeFields{
		{ID: "a", Slug: "a", TargetBranch: "main"},
		{ID: "b", Slug: "b", TargetBranch: "release/1"},
		{ID: "c", Slug: "c", Parent: "parent"},
		{ID: "d", Slug: "d", Parent: "gone"},
		{ID: "e", Slug: "e", TargetBranch: "--upload-pack=x"},
		{ID: "f", Slug: "f", TargetBranch: "main"},
	}
	groups, err := p.byTarget(context.Background(), candidates)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for target, cs := range groups {
		for _, c := range cs {
			got[target] = append(got[target], c.ID)
		}
	}
	want := map[string][]string{"main": {"a", "f"}, "release/1": {"b"}, worktree.Branch("the-parent"): {"c"}}
	if len(got) != len(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for target, ids := range want {
		if !slices.Equal(got[target], ids) {
			t.Errorf("target %s: %v, want %v", target, got[target], ids)
		}
	}
	if len(p.errs) != 0 {
		t.Errorf("errors recorded: %v", p.errs)
	}
}

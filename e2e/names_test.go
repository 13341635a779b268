package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDuplicateSlugsAcrossClones: two clones create tasks with the same
// title. After a pull every clone agrees which task owns the slug (the one
// the remote had first) and the other is renamed <slug>-<6 id hex>; pull
// says so in text and --json; push succeeds; both clones resolve both
// names to the same tasks and list each slug once.
func TestDuplicateSlugsAcrossClones(t *testing.T) {
	a, b := clones(t)
	b.ok("init")
	a1, b1 := a.create("dup title"), b.create("dup title")
	a2, b2 := a.create("other dup"), b.create("other dup")
	if a1.Slug != "dup-title" || b1.Slug != "dup-title" {
		t.Fatalf("slugs %s %s", a1.Slug, b1.Slug)
	}
	a.ok("push")

	var rep struct {
		Renamed []struct{ ID, From, To, Winner string } `json:"renamed"`
	}
	if err := json.Unmarshal([]byte(b.ok("pull", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Renamed) != 2 {
		t.Fatalf("pull --json renamed %+v", rep.Renamed)
	}
	for _, r := range rep.Renamed {
		want := map[string][2]string{b1.ID: {"dup-title", a1.ID}, b2.ID: {"other-dup", a2.ID}}[r.ID]
		if r.From != want[0] || r.Winner != want[1] || r.To != want[0]+"-"+r.ID[:6] {
			t.Fatalf("rename %+v", r)
		}
	}
	b.ok("push")
	a.ok("pull")

	for _, c := range []*runner{a, b} {
		for name, want := range map[string]string{
			"dup-title": a1.ID, "dup-title-" + b1.ID[:6]: b1.ID,
			"other-dup": a2.ID, "other-dup-" + b2.ID[:6]: b2.ID,
		} {
			if got := c.show(name); got.ID != want {
				t.Fatalf("%s names %s, want %s", name, got.ID, want)
			}
		}
		seen := map[string]bool{}
		for _, tk := range c.list() {
			if seen[tk.Slug] {
				t.Fatalf("list shows slug %s twice", tk.Slug)
			}
			seen[tk.Slug] = true
		}
		if len(seen) != 4 {
			t.Fatalf("list has %d tasks", len(seen))
		}
	}

	// The text report, and a push that has to pull first.
	a3, b3 := a.create("third dup"), b.create("third dup")
	a.ok("push")
	out := b.ok("push")
	if !strings.Contains(out, "renamed third-dup to third-dup-"+b3.ID[:6]) || !strings.Contains(out, a3.ID) {
		t.Fatalf("push did not report the rename:\n%s", out)
	}
	a.ok("pull")
	if got := a.show("third-dup-" + b3.ID[:6]); got.ID != b3.ID {
		t.Fatalf("a resolves the renamed slug to %s", got.ID)
	}
}

// TestDoctorSettlesSlugConflicts: two records with one slug (an older
// lazy let a pulled task keep a slug a local task had) are reported by
// doctor and repaired the way a pull would settle them.
func TestDoctorSettlesSlugConflicts(t *testing.T) {
	r := newRepo(t)
	owner := r.create("shared name")
	other := r.create("something else")
	r.editTaskJSON(other.ID, func(m map[string]any) { m["slug"] = "shared-name" })

	res := r.run(nil, "doctor", "--dry-run")
	if res.Code != 1 || !strings.Contains(res.Stdout, "slug-conflict") || !strings.Contains(res.Stdout, "would rename it to shared-name-"+other.ID[:6]) {
		t.Fatalf("doctor --dry-run:\n%s", res)
	}
	var rep struct {
		Findings []struct {
			TaskID string `json:"task_id"`
			Kind   string `json:"kind"`
		} `json:"findings"`
	}
	res = r.run(nil, "doctor", "--json")
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		found = found || (f.Kind == "slug-conflict" && f.TaskID == other.ID)
	}
	if !found {
		t.Fatalf("doctor --json: %s", res)
	}
	if got := r.show("shared-name"); got.ID != owner.ID {
		t.Fatalf("shared-name names %s", got.ID)
	}
	if got := r.show("shared-name-" + other.ID[:6]); got.ID != other.ID {
		t.Fatalf("the renamed slug names %s", got.ID)
	}
	if out := r.run(nil, "doctor").Stdout; strings.Contains(out, "slug-conflict") {
		t.Fatalf("doctor after the repair:\n%s", out)
	}
}

// TestTitlesNeverMakeUnreadableOrShadowingSlugs: the two
// reproductions. "@{-1}" once made the slug t--1 that lazy then refused to
// read; a title that is another task's id prefix once made a slug that
// took that prefix over, so `lazy close <prefix>` closed the new task.
func TestTitlesNeverMakeUnreadableOrShadowingSlugs(t *testing.T) {
	r := newRepo(t)
	odd := r.create("--", "@{-1}")
	if odd.Slug != "t-1" || r.show(odd.Slug).ID != odd.ID {
		t.Fatalf("@{-1} made slug %q", odd.Slug)
	}
	victim := r.create("victim")
	prefix := victim.ID[:8]
	shadow := r.create("--", prefix)
	if shadow.Slug == prefix || !strings.HasPrefix(shadow.Slug, "t-") {
		t.Fatalf("title %s made slug %s", prefix, shadow.Slug)
	}
	r.ok("close", prefix)
	if got := r.show(victim.ID); got.Status != "abandoned" {
		t.Fatalf("close %s did not close the task with that id prefix: %s", prefix, got.Status)
	}
	if got := r.show(shadow.Slug); got.Status != "backlog" {
		t.Fatalf("close %s closed the task titled %s", prefix, prefix)
	}
	if msg := r.fails(1, nil, "create", "--slug", "cafe", "hex slug"); !strings.Contains(msg, "id prefix") {
		t.Fatalf("--slug cafe: %s", msg)
	}
}

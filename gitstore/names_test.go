package gitstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// FuzzCreate: every created task can be shown by its slug (and its
// suffixed twin too).
func FuzzCreate(f *testing.F) {
	for _, s := range []string{"@{-1}", "dc0a8c51", "a", "HEAD", "refs/heads/main", "..", "x.lock", "1", "  ", "ünï"} {
		f.Add(s)
	}
	s, _ := open(f)
	f.Fuzz(func(t *testing.T, title string) {
		for i := 0; i < 2; i++ {
			sn, err := s.Create(task.CreateSpec{Title: title, Actor: machine.Human})
			if err != nil {
				t.Fatalf("create %q: %v", title, err)
			}
			id, err := s.Resolve(sn.Task.Slug)
			if err != nil || id != sn.Task.ID {
				t.Fatalf("create %q made slug %q, which resolves to %q (%v), not %s", title, sn.Task.Slug, id, err, sn.Task.ID)
			}
			if _, err := s.Load(id); err != nil {
				t.Fatalf("create %q: the task is unreadable: %v", title, err)
			}
		}
	})
}

// TestSlugNeverShadowsIDPrefix: a title that is another task's id prefix
// gets a slug that is not, the prefix keeps naming that task, and a hex
// slug planted by hand (an older lazy, a remote) cannot take an id
// prefix over either.
func TestSlugNeverShadowsIDPrefix(t *testing.T) {
	s, dir := open(t)
	var victims []*task.Snapshot
	for len(victims) < 8 {
		sn := mustCreate(t, s, "victim")
		victims = append(victims, sn)
	}
	for _, v := range victims {
		prefix := v.Task.ID[:8]
		sn := mustCreate(t, s, prefix)
		if sn.Task.Slug == prefix || task.ShadowsID(sn.Task.Slug) {
			t.Fatalf("title %q got slug %q", prefix, sn.Task.Slug)
		}
		if id, err := s.Resolve(prefix); err != nil || id != v.Task.ID {
			t.Fatalf("%s now names %q (%v), want the victim %s", prefix, id, err, v.Task.ID)
		}
		if id, err := s.Resolve(sn.Task.Slug); err != nil || id != sn.Task.ID {
			t.Fatalf("slug %s: %q %v", sn.Task.Slug, id, err)
		}
		if _, err := s.Create(task.CreateSpec{Title: "x", Slug: prefix, Actor: machine.Human}); err == nil || (!strings.Contains(err.Error(), "id prefix") && !strings.Contains(err.Error(), "starting with a letter")) {
			t.Fatalf("--slug %s: %v", prefix, err)
		}
	}
	// A hex slug ref planted by hand, naming another task.
	v, planted := victims[0], victims[1]
	prefix := v.Task.ID[:6]
	blob := testrepo.Git(t, dir, "rev-parse", SlugsPrefix+planted.Task.Slug)
	testrepo.Git(t, dir, "update-ref", SlugsPrefix+prefix, blob)
	if id, err := s.Resolve(prefix); err != nil || id != v.Task.ID {
		t.Fatalf("planted slug %s: resolves to %q (%v), want %s", prefix, id, err, v.Task.ID)
	}
	// ... but a hex slug no id starts with still answers.
	testrepo.Git(t, dir, "update-ref", SlugsPrefix+"fade", blob)
	ids, err := names{s}.IDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if strings.HasPrefix(id, "fade") {
			t.Skip("an id happens to start with fade")
		}
	}
	if id, err := s.Resolve("fade"); err != nil || id != planted.Task.ID {
		t.Fatalf("hex slug fade: %q %v", id, err)
	}
}

// TestDuplicateSlugsOnTwoClonesConverge: both clones create a task with
// the same title; the first push owns the slug on the remote, the other
// clone's task is renamed to LoserSlug on pull, pushes succeed, and every
// clone resolves both names to the same tasks.
func TestDuplicateSlugsOnTwoClonesConverge(t *testing.T) {
	a, b := twoClones(t)
	ta := mustCreate(t, a, "dup title").Task
	tb := mustCreate(t, b, "dup title").Task
	if ta.Slug != "dup-title" || tb.Slug != "dup-title" {
		t.Fatalf("slugs %s %s", ta.Slug, tb.Slug)
	}
	mustPush(t, a)
	// b pushes without pulling first: the rejected slug ref makes push
	// pull, settle and retry.
	rep, err := b.Push(context.Background(), "origin", "")
	if err != nil {
		t.Fatalf("push from b: %v (%+v)", err, rep)
	}
	loser := task.LoserSlug("dup-title", tb.ID)
	if len(rep.Renamed) != 1 || rep.Renamed[0] != (Rename{ID: tb.ID, From: "dup-title", To: loser, Winner: ta.ID}) {
		t.Fatalf("renamed %+v", rep.Renamed)
	}
	mustPull(t, a)
	for _, s := range []*Store{a, b} {
		for name, want := range map[string]string{"dup-title": ta.ID, loser: tb.ID} {
			if id, err := s.Resolve(name); err != nil || id != want {
				t.Fatalf("%s: %s names %q (%v), want %s", s.Host(), name, id, err, want)
			}
		}
		list, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range list {
			sum, err := e.Summary()
			if err != nil {
				t.Fatal(err)
			}
			if seen[sum.Slug] {
				t.Fatalf("%s lists slug %s twice", s.Host(), sum.Slug)
			}
			seen[sum.Slug] = true
		}
	}
	converge(t, a, b)
	// The same conflict settles to the same name everywhere.
	if task.LoserSlug("dup-title", tb.ID) != "dup-title-"+tb.ID[:6] {
		t.Fatal("LoserSlug is not slug-<first 6 hex>")
	}
}

// TestBareSlugClaimTakesNoName: a remote slug ref naming a task the
// remote does not have cannot rename a local task.
func TestBareSlugClaimTakesNoName(t *testing.T) {
	victim, attacker := twoClones(t)
	mine := mustCreate(t, victim, "my task").Task
	mustPush(t, victim)
	// The attacker points the remote's slug ref at a made-up id (a direct
	// write stands in for a push the server accepted).
	bare := strings.TrimSpace(testrepo.Git(t, attacker.repo.CommonDir, "config", "remote.origin.url"))
	blob := gitIn(t, bare, "0123456789abcdef\n", "hash-object", "-w", "--stdin")
	testrepo.Git(t, bare, "update-ref", "refs/lazy/slugs/my-task", strings.TrimSpace(blob))
	rep, err := victim.Pull(context.Background(), "origin")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Renamed) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "does not have") {
		t.Fatalf("renamed %+v skipped %+v", rep.Renamed, rep.Skipped)
	}
	if id, err := victim.Resolve("my-task"); err != nil || id != mine.ID {
		t.Fatalf("my-task names %q (%v)", id, err)
	}
}

// TestResolveSaysDidYouMean: a name that names no task is one sentence
// that names the nearest slugs (a typo, a prefix, a part, another
// spelling), or says where to look when none is near, and is still
// ErrNotFound.
func TestResolveSaysDidYouMean(t *testing.T) {
	s, _ := open(t)
	for _, title := range []string{"fix login", "fix logout", "release notes", "cover the docs"} {
		if _, err := s.Create(task.CreateSpec{Title: title, Actor: machine.Human}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{
		"fix-logn":      `no task named "fix-logn"; did you mean fix-login?`,
		"relase-notes":  `no task named "relase-notes"; did you mean release-notes?`,
		"fix-log":       `no task named "fix-log"; did you mean fix-login or fix-logout?`,
		"notes":         `no task named "notes"; did you mean release-notes?`,
		"Release_Notes": `no task named "Release_Notes" (slugs are lowercase letters, digits and dashes; ids are hex); did you mean release-notes?`,
		"zzzzzzzz":      `no task named "zzzzzzzz"; lazy list shows the tasks`,
		"abc":           `no task named "abc" (an id prefix needs at least 4 characters); lazy list shows the tasks`,
		"cafe":          `no task named "cafe"; lazy list shows the tasks`,
		"":              `no task named: give a task's slug or id (lazy list shows them)`,
	} {
		_, err := s.Resolve(name)
		if err == nil || err.Error() != want || !errors.Is(err, task.ErrNotFound) {
			t.Errorf("Resolve(%q) = %v; want %q (and ErrNotFound)", name, err, want)
		}
	}
	for i := 0; i < 7; i++ {
		if _, err := s.Create(task.CreateSpec{Title: "cover the docs", Actor: machine.Human}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Resolve("cover-the-doc")
	if err == nil || !strings.Contains(err.Error(), "did you mean cover-the-docs, cover-the-docs-2, cover-the-docs-3, cover-the-docs-4 or cover-the-docs-5? (and 3 more: lazy list -q cover-the-doc)") {
		t.Fatalf("many near slugs: %v", err)
	}
}

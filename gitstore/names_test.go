package gitstore

import (
	"context"
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

// TestSlugNeverShadowsIDPrefix: a hex slug planted by hand (an older
// lazy, a remote) cannot take an id prefix over (the suite of
// task/storetest holds the slugs lazy gives).
func TestSlugNeverShadowsIDPrefix(t *testing.T) {
	s, dir := open(t)
	var victims []*task.Snapshot
	for len(victims) < 2 {
		sn := mustCreate(t, s, "victim")
		victims = append(victims, sn)
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
	testrepo.FullLane(t)
	t.Parallel()
	a, b := twoClones(t)
	ta := mustCreate(t, a, "dup title").Task
	tb := mustCreate(t, b, "dup title").Task
	if ta.Slug != "dup-title" || tb.Slug != "dup-title" {
		t.Fatalf("slugs %s %s", ta.Slug, tb.Slug)
	}
	mustPush(t, a)
	// b pushes without pulling first: the rejected slug ref makes push
	// pull, settle and retry.
	rep, err := b.Sync().Push(context.Background(), "origin", "")
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
	t.Parallel()
	victim, attacker := twoClones(t)
	mine := mustCreate(t, victim, "my task").Task
	mustPush(t, victim)
	// The attacker points the remote's slug ref at a made-up id (a direct
	// write stands in for a push the server accepted).
	bare := strings.TrimSpace(testrepo.Git(t, attacker.repo.CommonDir, "config", "remote.origin.url"))
	blob := gitIn(t, bare, "0123456789abcdef\n", "hash-object", "-w", "--stdin")
	testrepo.Git(t, bare, "update-ref", "refs/lazy/slugs/my-task", strings.TrimSpace(blob))
	rep, err := victim.Sync().Pull(context.Background(), "origin")
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

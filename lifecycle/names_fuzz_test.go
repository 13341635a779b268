package lifecycle

import (
	"context"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// FuzzCreateIsReadableBySlug: whatever title lazy create accepts, through
// the same intake as the CLI (sanitizing, the title's line rule, the
// limits), the task can be read back by its slug, and the slug never
// reads as an id prefix.
func FuzzCreateIsReadableBySlug(f *testing.F) {
	for _, s := range []string{"@{-1}", "dc0a8c51", "fix the flaky login test", "\x1b]52;c;Zm9v\x07", "a\rb", "1", "..", "-", "ÿ", "cafe\nbabe"} {
		f.Add(s)
	}
	repo, err := gitrepo.Discover(testrepo.New(f))
	if err != nil {
		f.Fatal(err)
	}
	st := gitstore.Open(repo, gitstore.WithHost("ops-fuzz"))
	e := &testEnv{session.Env{Store: st, Repo: repo, Actor: machine.Human}}
	f.Fuzz(func(t *testing.T, title string) {
		sn, err := e.Lifecycle().Create(context.Background(), CreateInput{Title: title, Goal: "fuzzed"})
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("create %q failed without saying why", title)
			}
			return
		}
		slug := sn.Task.Slug
		if !task.ValidSlug(slug) || task.ShadowsID(slug) {
			t.Fatalf("create %q made slug %q", title, slug)
		}
		id, err := e.Store.Resolve(slug)
		if err != nil || id != sn.Task.ID {
			t.Fatalf("create %q: slug %q resolves to %q (%v), want %s", title, slug, id, err, sn.Task.ID)
		}
		if _, err := e.Store.Load(id); err != nil {
			t.Fatalf("create %q: unreadable: %v", title, err)
		}
	})
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/wire"
	"github.com/lazyorch/lazy/worktree"
)

// StashCmd lists the uncommitted changes of the user's lazy keeps, or
// gives them back.
type StashCmd struct {
	Action string `arg:"" optional:"" enum:"list,restore" default:"list" help:"list (the default): the changes lazy keeps for you, by checkout, oldest first, with the command that restores them; restore [BRANCH]: give them back in the checkout of BRANCH."`
	Branch string `arg:"" optional:"" help:"restore: the branch whose checkout gets its changes back (default: the branch checked out here)."`
	JSON   bool   `help:"Print the result as JSON."`
}

// Help implements kong's detailed help.
func (c *StashCmd) Help() string {
	return `An accept stashes your uncommitted changes in the checkout it merges
into and gives them back after the merge. An accept that was killed, or
whose changes would not go back cleanly, leaves them in a stash lazy
keeps under refs/lazy-kept/. However many there are, lazy folds the ones
of one checkout into one stash (the older changes first, the newer on top;
the stashes folded stay its parents, so nothing is lost), and lazy stash
lists it with the command that restores them all. A file two of them
changed differently comes back with both versions between conflict
markers.`
}

// stashView is lazy stash --json.
type stashView struct {
	Owed []landing.OwedStash `json:"owed"`
}

// Run implements lazy stash.
func (c *StashCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	if c.Action == "restore" {
		return c.restore(a, ctx, env)
	}
	if c.Branch != "" {
		return usageError{"lazy stash lists every checkout's changes; BRANCH goes with lazy stash restore BRANCH"}
	}
	owed, err := env.Landing().Stashes().OwedStashes(ctx, true)
	if err != nil {
		return err
	}
	if c.JSON {
		if owed == nil {
			owed = []landing.OwedStash{}
		}
		return a.io.printJSON(stashView{Owed: owed})
	}
	if len(owed) == 0 {
		_, err := fmt.Fprintln(a.io.out, "lazy keeps none of your uncommitted changes: every accept gave them back.")
		return err
	}
	for i, o := range owed {
		if i > 0 {
			fmt.Fprintln(a.io.out)
		}
		renderOwed(a, o)
	}
	return nil
}

// renderOwed prints one checkout's kept changes, oldest first.
func renderOwed(a *app, o landing.OwedStash) {
	where := sanitize.Field(o.Dir)
	if o.Target != "" {
		where = sanitize.Field(o.Target) + " in " + where
	}
	parts := o.Parts
	if len(parts) == 0 {
		parts = []landing.StashPart{{SHA: o.SHA, TaskID: o.TaskID, At: o.At}}
	}
	fmt.Fprintf(a.io.out, "Your uncommitted changes of %s, from %s, oldest first, kept in stash %s:\n", where, words.Count(len(parts), "interrupted accept", "interrupted accepts"), o.SHA)
	for i, p := range parts {
		task := ""
		if p.TaskID != "" {
			task = " (the accept of " + slugOf(a.store, p.TaskID) + ")"
		}
		fmt.Fprintf(a.io.out, "  %d. %s  stash %s%s\n", i+1, p.At.Local().Format(time.DateTime), p.SHA, task)
	}
	if len(o.Conflicts) > 0 {
		what := "them"
		if len(o.Conflicts) == 1 {
			what = "it"
		}
		fmt.Fprintf(a.io.out, "  %s: two of them changed %s differently; the restore leaves both versions between conflict markers, to resolve\n", sanitize.Field(strings.Join(o.Conflicts, ", ")), what)
	}
	restore := "lazy stash restore"
	if o.Target != "" {
		restore += " " + sanitize.Field(o.Target)
	}
	fmt.Fprintf(a.io.out, "  restore them all: %s   (or: %s)\n", restore, sanitize.Field(o.Restore))
}

// slugOf names task id by its slug when store has it.
func slugOf(store *gitstore.Store, id string) string {
	if sn, err := store.Load(id); err == nil {
		return sanitize.Field(sn.Task.Slug)
	}
	return render.ShortID(id)
}

// restore runs lazy stash restore [BRANCH].
func (c *StashCmd) restore(a *app, ctx context.Context, env *wire.Env) error {
	branch := c.Branch
	if branch == "" {
		b, err := worktree.CurrentBranch(ctx, a.repoDir())
		if err != nil || b == "" {
			return usageError{"this checkout has no branch checked out; name the branch whose changes to restore: lazy stash restore BRANCH"}
		}
		branch = b
	}
	o, err := env.Landing().Stashes().RestoreOwed(ctx, branch)
	if errors.Is(err, landing.ErrNothingOwed) && !c.JSON {
		return fmt.Errorf("%w; lazy stash lists what it keeps", err)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(map[string]any{"restored": o})
	}
	n := max(1, len(o.Parts))
	fmt.Fprintf(a.io.out, "Restored your uncommitted changes from %s in %s (stash %s); lazy keeps no copy now\n", words.Count(n, "interrupted accept", "interrupted accepts"), sanitize.Field(o.Dir), o.SHA)
	if len(o.Conflicts) > 0 {
		fmt.Fprintf(a.io.out, "%s hold two versions between conflict markers (<<<<<<< older, >>>>>>> newer): resolve them\n", sanitize.Field(strings.Join(o.Conflicts, ", ")))
	}
	return nil
}

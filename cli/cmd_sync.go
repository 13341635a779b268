package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
	"github.com/lazyorch/lazy/worktree"
)

// PullCmd takes in another machine's task state.
type PullCmd struct {
	Remote string `arg:"" optional:"" help:"Remote to pull from (default: origin, or the only remote)."`
	JSON   bool   `help:"Print the report as JSON."`
}

// PushCmd publishes this machine's task state.
type PushCmd struct {
	Remote string `arg:"" optional:"" help:"Remote to push to (default: origin, or the only remote)."`
	JSON   bool   `help:"Print the report as JSON."`
}

// defaultRemote picks, among the remotes of the repository whose git
// directory is gitDir, name when it is one (or a URL or a path), else
// origin, or the only remote.
func defaultRemote(ctx context.Context, gitDir, name string) (string, error) {
	out, err := gitcli.New(gitDir, "remote").String(ctx)
	if err != nil {
		return "", err
	}
	remotes := strings.Fields(out)
	if name != "" {
		if err := gitstore.ValidRemote(name); err != nil {
			return "", err
		}
		for _, r := range remotes {
			if r == name {
				return name, nil
			}
		}
		if strings.ContainsAny(name, ":/") {
			return name, nil // a URL or a path: git says whether it works
		}
		if len(remotes) == 0 {
			return "", fmt.Errorf("there is no remote named %q (this repository has none); add one with git remote add %s URL", name, name)
		}
		return "", fmt.Errorf("there is no remote named %q; this repository's remotes are %s (git remote -v lists them)", name, strings.Join(remotes, ", "))
	}
	for _, r := range remotes {
		if r == "origin" {
			return r, nil
		}
	}
	switch len(remotes) {
	case 0:
		return "", errors.New("this repository has no remote; add one with git remote add")
	case 1:
		return remotes[0], nil
	}
	return "", fmt.Errorf("there is no origin and several remotes (%s); name one", strings.Join(remotes, ", "))
}

// syncOptions are what lazy pull and lazy push consume (gh's Options):
// the streams, the store, the wire env the pulled records are judged
// with, and the repository's directories. syncOptionsOf fills them from
// a run; a test gives its own.
type syncOptions struct {
	io    ioStreams
	store *gitstore.Store
	env   func() (*wire.Env, error)
	// gitDir is the common git directory, repoDir the main worktree
	// (gitDir in a bare repository).
	gitDir, repoDir string
	// pushRefspec is git config lazy.pushRefspec.
	pushRefspec string
}

// syncOptionsOf fills syncOptions from an opened run.
func syncOptionsOf(a *app) syncOptions {
	spec, _ := a.cfg.Get("lazy.pushRefspec")
	return syncOptions{io: a.io, store: a.store, env: a.env, gitDir: a.repo.CommonDir, repoDir: a.repoDir(), pushRefspec: spec}
}

// Run implements lazy pull.
func (c *PullCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	return c.run(ctx, syncOptionsOf(a))
}

// run is lazy pull on what o gives it.
func (c *PullCmd) run(ctx context.Context, o syncOptions) error {
	remote, err := defaultRemote(ctx, o.gitDir, c.Remote)
	if err != nil {
		return err
	}
	line := o.io.progressLine(c.JSON)
	line.Start(time.Second)
	line.Set("pull " + remote + ": fetching")
	err = o.store.Sync().Fetch(ctx, remote)
	var rep *gitstore.SyncReport
	if err == nil {
		line.Set("pull " + remote + ": taking in the tasks that differ")
		rep, err = o.store.Sync().Integrate(ctx, remote)
	}
	line.Close()
	if err != nil {
		return err
	}
	foreign, err := o.foreignSessions(rep)
	if err != nil {
		return err
	}
	pooled := o.fetchPooledBranches(ctx, remote)
	if c.JSON {
		emptyLists(rep)
		return o.io.printJSON(struct {
			*gitstore.SyncReport
			Foreign []string `json:"foreign_sessions"`
			Pooled  []string `json:"pooled_branches"`
		}{rep, foreign, pooled})
	}
	if err := o.report("Pulled from", rep, false); err != nil {
		return err
	}
	for _, slug := range foreign {
		fmt.Fprintf(o.io.errOut, "lazy: %s arrived claiming a session of this machine that this machine never started; nothing will run, stop or delete anything for it (lazy show %s; lazy start --take-over %s to adopt it)\n", slug, slug, slug)
	}
	return nil
}

// foreignSessions lists the pulled tasks whose record claims this host
// runs their session although no local session matches: records written
// elsewhere that lazy refuses to act on.
func (o syncOptions) foreignSessions(rep *gitstore.SyncReport) ([]string, error) {
	env, err := o.env()
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, l := range [][]string{rep.Created, rep.FastForwarded, rep.Merged} {
		for _, slug := range l {
			id, err := o.store.Resolve(slug)
			if err != nil {
				continue
			}
			if sn, err := o.store.Load(id); err == nil && env.Foreign(sn) {
				out = append(out, sn.Task.Slug)
			}
		}
	}
	return out, nil
}

// Run implements lazy push.
func (c *PushCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	return c.run(ctx, syncOptionsOf(a))
}

// run is lazy push on what o gives it.
func (c *PushCmd) run(ctx context.Context, o syncOptions) error {
	remote, err := defaultRemote(ctx, o.gitDir, c.Remote)
	if err != nil {
		return err
	}
	spec := o.pushRefspec
	line := o.io.progressLine(c.JSON)
	line.Start(time.Second)
	rep, err := o.store.Sync().PushPhases(ctx, remote, spec, func(phase string) { line.Set("push " + remote + ": " + phase) })
	line.Close()
	var re *gitstore.RemoteError
	if errors.As(err, &re) && rep != nil && rep.Pushed == 0 && !c.JSON {
		return err // nothing moved: the one-sentence error says it all
	}
	if rep != nil {
		if rerr := o.report("Pushed to", rep, c.JSON); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// report prints what a pull or push did.
func (o syncOptions) report(verb string, rep *gitstore.SyncReport, asJSON bool) error {
	if asJSON {
		emptyLists(rep)
		return o.io.printJSON(rep)
	}
	if verb == "Pushed to" {
		fmt.Fprintf(o.io.out, "%s %s: %s\n", verb, rep.Remote, pushSummary(rep))
	} else {
		fmt.Fprintf(o.io.out, "%s %s: %s\n", verb, rep.Remote, pullSummary(rep))
	}
	for _, r := range rep.Refused {
		if r.KeptLocal {
			fmt.Fprintf(o.io.out, "  refused %s: the remote's record moves it %s -> %s (%s by %s on host %s): %s; the local record stays as it was\n",
				r.Task, orDash(r.From), r.To, orDash(r.Op), orDash(string(r.Actor)), orDash(r.Host), r.Reason)
			continue
		}
		fmt.Fprintf(o.io.out, "  refused after reordering: %s by %s on %s (%s -> %s): %s\n", r.Op, r.Actor, r.Host, r.From, r.To, r.Reason)
	}
	for _, u := range rep.Unverified {
		fmt.Fprintf(o.io.out, "  unverified %s: %s; lazy removes none of its worktrees or branches on this record's word\n", u.Task, u.Reason)
	}
	for _, f := range rep.Flagged {
		fmt.Fprintf(o.io.out, "  flagged %s; it counts in no budget and no lazy cost (lazy doctor lists every such figure)\n", sanitize.Field(f.String()))
	}
	for _, r := range rep.Renamed {
		fmt.Fprintf(o.io.out, "  renamed %s to %s (task %s): another clone created task %s with that slug first; its claim on the remote wins\n", r.From, r.To, r.ID, r.Winner)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(o.io.errOut, "lazy: skipped %s: %s\n", s.Ref, s.Reason)
	}
	for _, r := range rep.Rejected {
		fmt.Fprintf(o.io.errOut, "lazy: the remote rejected %s\n", r)
	}
	return nil
}

// emptyLists makes rep's lists [] rather than null, for scripts (pull
// and push print the same shape).
func emptyLists(rep *gitstore.SyncReport) {
	for _, l := range []*[]string{&rep.Created, &rep.FastForwarded, &rep.Merged, &rep.Rejected} {
		if *l == nil {
			*l = []string{}
		}
	}
	if rep.Refused == nil {
		rep.Refused = []task.Refused{}
	}
	if rep.Unverified == nil {
		rep.Unverified = []gitstore.Unverified{}
	}
	if rep.Skipped == nil {
		rep.Skipped = []gitstore.Skip{}
	}
	if rep.Flagged == nil {
		rep.Flagged = []task.Flag{}
	}
	if rep.Renamed == nil {
		rep.Renamed = []gitstore.Rename{}
	}
}

// pullSummary says what a pull took in, in words: "2 new tasks, 1
// updated; 5 unchanged, 1 newer here (lazy push sends it)".
func pullSummary(rep *gitstore.SyncReport) string {
	took := tookIn(rep)
	if took == "" {
		took = "nothing new"
	}
	var rest []string
	if rep.UpToDate > 0 {
		rest = append(rest, fmt.Sprintf("%s unchanged", words.Count(rep.UpToDate, "task", "tasks")))
	}
	if n := rep.LocalAhead; n > 0 {
		rest = append(rest, fmt.Sprintf("%d newer here (lazy push sends %s)", n, render.Plural(n, "it", "them")))
	}
	if len(rest) == 0 {
		return took
	}
	return took + "; " + strings.Join(rest, ", ")
}

// tookIn is what a pull (or a push's merge with a remote that moved)
// brought: new tasks, fast-forwards, merges; "" when nothing.
func tookIn(rep *gitstore.SyncReport) string {
	var parts []string
	if n := len(rep.Created); n > 0 {
		parts = append(parts, words.Count(n, "new task", "new tasks"))
	}
	if n := len(rep.FastForwarded); n > 0 {
		parts = append(parts, fmt.Sprintf("%d updated", n))
	}
	if n := len(rep.Merged); n > 0 {
		parts = append(parts, fmt.Sprintf("%d merged (changed on both sides)", n))
	}
	return strings.Join(parts, ", ")
}

// pushSummary says what a push moved, in words: "3 tasks sent (1 new
// there, 2 updated); 9 already up to date there".
func pushSummary(rep *gitstore.SyncReport) string {
	var b strings.Builder
	switch n := rep.PushedTasks; {
	case n == 0 && rep.Pushed == 0:
		b.WriteString("nothing to send")
	case n == 0:
		// Only slug names moved (a rename): no task record changed.
		fmt.Fprintf(&b, "%s sent, no task record changed", words.Count(rep.Pushed, "task name", "task names"))
	default:
		fmt.Fprintf(&b, "%s sent", words.Count(n, "task", "tasks"))
		switch upd := n - rep.NewOnRemote; {
		case rep.NewOnRemote == n:
			b.WriteString(" (new there)")
		case rep.NewOnRemote > 0:
			fmt.Fprintf(&b, " (%d new there, %d updated)", rep.NewOnRemote, upd)
		}
	}
	if rep.UpToDate > 0 {
		fmt.Fprintf(&b, "; %s already up to date there", words.Count(rep.UpToDate, "task", "tasks"))
	}
	if rep.Retries > 0 {
		times := "once"
		if rep.Retries == 2 {
			times = "twice"
		} else if rep.Retries > 2 {
			times = fmt.Sprintf("%d times", rep.Retries)
		}
		fmt.Fprintf(&b, "; the remote had moved, so lazy merged its records in first (%s)", times)
		if took := tookIn(rep); took != "" {
			b.WriteString(": " + took)
		}
	}
	return b.String()
}

// orDash shows an empty field of a remote record as "-".
func orDash[T ~string](v T) string {
	if v == "" {
		return "-"
	}
	return string(v)
}

// fetchPooledBranches brings here, as fast-forwards, the branches of the
// pooled tasks that runners elsewhere work, so lazy diff and lazy accept
// see their work; it returns the branches it brought. A branch with
// commits of this machine's the remote lacks is never moved.
func (o syncOptions) fetchPooledBranches(ctx context.Context, remote string) []string {
	env, err := o.env()
	if err != nil {
		return nil
	}
	entries, err := o.store.List()
	if err != nil {
		return nil
	}
	fetched := []string{}
	for i := range entries {
		en := &entries[i]
		if en.Err != nil || en.Status.IsTerminal() || en.Status == machine.Backlog {
			continue
		}
		sn, err := o.store.Load(en.ID)
		if err != nil || sn.Task.Pool == nil || sn.Session == nil || env.Owns(sn) {
			continue
		}
		branch := worktree.Branch(sn.Task.Slug)
		if worktree.FetchBranch(ctx, o.repoDir, remote, branch) == nil {
			fetched = append(fetched, branch)
		}
	}
	return fetched
}

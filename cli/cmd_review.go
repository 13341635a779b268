package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/landing"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/progress"
	"github.com/lazyorch/lazy/internal/redact"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
	"github.com/lazyorch/lazy/worktree"
)

// DiffCmd shows a task's work.
type DiffCmd struct {
	Task     string   `arg:"" help:"Slug or id prefix." predictor:"task"`
	Paths    []string `arg:"" optional:"" help:"Limit the diff to these paths (after --)." placeholder:"PATH"`
	Stat     bool     `help:"Show a diffstat instead of the patch." xor:"form"`
	NameOnly bool     `name:"name-only" help:"Show only the names of changed files." xor:"form"`
	Tool     bool     `help:"Open the diff in your git difftool (git difftool --dir-diff)." xor:"form"`
	// Committed leaves out what the worktree has not committed yet.
	Committed bool `help:"Only the branch's commits: leave out the worktree's uncommitted changes (for a patch to apply elsewhere)."`
	// Attempts compares the attempts of a task tried several ways.
	Attempts bool `help:"For a task tried several ways (lazy start --attempts): each attempt's diff stat, then each attempt's committed work one after another under a header (with --stat or --name-only, that form)."`
	JSON     bool `help:"Print the diff as JSON: the branch, its target, the changed files, the stat, the patch (cut at 1 MiB) and the uncommitted files." xor:"form"`
}

// Run implements lazy diff: git diff of the task branch against its merge
// base with the branch it merges into, run by git itself so the user's
// pager, colour and diff settings apply.
func (c *DiffCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	if c.Attempts {
		if c.JSON {
			return usageError{"--attempts has no --json; lazy show GROUP --json compares the attempts, and lazy diff SLUG-aK --json gives one attempt's diff"}
		}
		return c.attempts(a, ctx, env)
	}
	if c.JSON {
		return c.json(a, ctx, env)
	}
	r, err := env.Review().ReviewRange(ctx, c.Task)
	if err != nil {
		return err
	}
	// An empty diff prints nothing from git: say so instead.
	changed, err := c.changed(ctx, a, r)
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintln(a.io.out, c.nothing(r))
		return nil
	}
	// Said on stderr, so a patch piped to a file stays exact.
	if sn, err := a.openTask(c.Task); err == nil {
		if pv, _ := env.Landing().Gates().ProtectedChanges(ctx, sn); pv != nil {
			fmt.Fprintf(a.io.errOut, "lazy: this change %s\n", pv.Line())
		}
	}
	args := []string{"diff"}
	switch {
	case c.Stat:
		args = append(args, "--stat")
	case c.NameOnly:
		args = append(args, "--name-only")
	case c.Tool:
		args = []string{"difftool", "--dir-diff"}
	}
	if a.io.noColor {
		args = append(args, "--no-color")
	}
	form := append([]string(nil), args...)
	args = append(args, r.MergeBase, r.BranchSHA)
	// git gets the real stdout, as for a git diff the user typed: its
	// pager and colour apply, and a patch piped to a file is exact.
	err = gitcli.New(a.repoDir(), args...).Paths(c.Paths...).Attach(ctx, a.io.in, rawWriter(a.io.out), a.io.errOut)
	var ge *gitcli.Error
	if errors.As(err, &ge) && ge.ExitCode() > 0 {
		return silentExit{code: ge.ExitCode(), err: err}
	}
	if err != nil || c.Committed || c.Tool || r.Worktree == "" {
		return err
	}
	return c.uncommitted(ctx, a, r, form)
}

// changed reports whether lazy diff has anything to show: the branch's
// commits change something (in the paths asked for), or, unless
// --committed, the worktree holds uncommitted changes there.
func (c *DiffCmd) changed(ctx context.Context, a *app, r *review.Review) (bool, error) {
	err := gitcli.New(a.repoDir(), "diff", "--quiet", "--no-ext-diff", r.MergeBase, r.BranchSHA).Paths(c.Paths...).Run(ctx)
	var ge *gitcli.Error
	switch {
	case errors.As(err, &ge) && ge.ExitCode() == 1:
		return true, nil
	case err != nil:
		return false, err
	}
	if c.Committed || r.Worktree == "" {
		return false, nil
	}
	st, err := gitcli.New(r.Worktree, "status", "--porcelain", "-z", "--untracked-files=all").Env("GIT_OPTIONAL_LOCKS=0").Paths(c.Paths...).Output(ctx)
	return err == nil && len(st) > 0, nil
}

// nothing is what an empty lazy diff says.
func (c *DiffCmd) nothing(r *review.Review) string {
	msg := noChanges(r, c.Committed)
	if len(c.Paths) > 0 {
		msg = strings.TrimSuffix(msg, ".") + " in " + words.List(quotedNames(c.Paths), "") + "."
	}
	return msg
}

// quotedNames are file names as lazy prints them (see fileName).
func quotedNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = render.FileName(n)
	}
	return out
}

// diffJSON is lazy diff --json: what the task's branch changed against
// the branch it merges into, and what its worktree has not committed.
type diffJSON struct {
	ID          string   `json:"id"`
	Slug        string   `json:"slug"`
	Branch      string   `json:"branch"`
	Into        string   `json:"into"`
	MergeBase   string   `json:"merge_base"`
	BranchSHA   string   `json:"branch_sha"`
	Files       []string `json:"files"`
	Stat        string   `json:"stat"`
	Patch       string   `json:"patch"`
	Truncated   bool     `json:"truncated"`
	Uncommitted []string `json:"uncommitted"`
	// ProtectedChanges names the protected paths the change touches,
	// which only a human can approve (lazy accept --approve-protected).
	ProtectedChanges *landing.ProtectedView `json:"protected_changes,omitempty"`
}

// json prints lazy diff --json. A task with no change is the same shape
// with empty lists and strings.
func (c *DiffCmd) json(a *app, ctx context.Context, env *wire.Env) error {
	if len(c.Paths) > 0 {
		return usageError{"--json gives the task's whole diff; leave out the paths (its files list says which changed)"}
	}
	d, err := env.Review().Diff(ctx, c.Task, true, review.MaxDiffBytes)
	if err != nil {
		return err
	}
	out := diffJSON{ID: d.ID, Slug: d.Slug, Branch: d.Branch, Into: d.Base, MergeBase: d.MergeBase, BranchSHA: d.BranchSHA,
		Files: d.Files, Stat: d.Stat, Patch: d.Patch, Truncated: d.Truncated, Uncommitted: d.Uncommitted}
	if c.Committed || out.Uncommitted == nil {
		out.Uncommitted = []string{}
	}
	if out.Files == nil {
		out.Files = []string{}
	}
	if sn, err := a.openTask(c.Task); err == nil {
		out.ProtectedChanges, _ = env.Landing().Gates().ProtectedChanges(ctx, sn)
	}
	return a.io.printJSON(out)
}

// attempts prints the attempts of a group: the table show prints, then
// each attempt's work under a "# attempt K" header, one after another
// (git's output taken whole, so one pager or one pipe reads it all).
func (c *DiffCmd) attempts(a *app, ctx context.Context, env *wire.Env) error {
	if c.Tool || len(c.Paths) > 0 {
		return usageError{"--attempts shows every attempt's whole work; for --tool or paths, lazy diff SLUG-aK one attempt"}
	}
	v, err := env.Attempts().Compare(ctx, c.Task)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.io.out, "# %s, tried %d ways\n", v.Group, len(v.Attempts))
	render.AttemptTable(a.io.out, v)
	for _, at := range v.Attempts {
		head := fmt.Sprintf("\n# attempt %d: %s (%s, %s", at.K, orDash(at.Slug), orDash(sanitize.Field(attempts.AgentLabel(at.Agent, at.Model))), at.Status)
		if at.Diff != nil {
			head += ", " + at.Diff.String()
		}
		head += ")"
		r := at.Review
		if r == nil {
			fmt.Fprintf(a.io.out, "%s\n(no branch here to diff: %s)\n", head, at.DiffCell())
			continue
		}
		fmt.Fprintf(a.io.out, "%s %s..%s on %s\n", head, render.ShortSHA(r.MergeBase), render.ShortSHA(r.BranchSHA), r.Branch)
		var out string
		switch {
		case c.Stat:
			out, err = worktree.Stat(ctx, a.repoDir(), r.MergeBase, r.BranchSHA, true)
		case c.NameOnly:
			var names []string
			names, err = worktree.DiffNames(ctx, a.repoDir(), r.MergeBase, r.BranchSHA)
			out = strings.Join(names, "\n")
		default:
			var b []byte
			b, err = worktree.Patch(ctx, a.repoDir(), r.MergeBase, r.BranchSHA)
			out = string(b)
		}
		if err != nil {
			return fmt.Errorf("diff attempt %d (%s): %w", at.K, at.Slug, err)
		}
		if out = strings.TrimRight(out, "\n"); out != "" {
			if _, err := io.WriteString(a.io.out, out+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// uncommitted shows, after the branch's diff and under a header that
// says so, what the task's worktree changed but did not commit: git diff
// HEAD for tracked files, and each untracked file against nothing.
func (c *DiffCmd) uncommitted(ctx context.Context, a *app, r *review.Review, form []string) error {
	st, err := gitcli.New(r.Worktree, "status", "--porcelain", "-z", "--untracked-files=all").Env("GIT_OPTIONAL_LOCKS=0").Paths(c.Paths...).Output(ctx)
	if err != nil || len(st) == 0 {
		return nil // a worktree git cannot read has nothing to add here
	}
	fmt.Fprintf(a.io.out, "\n# Uncommitted in the worktree %s (not committed to %s):\n", r.Worktree, r.Branch)
	out := rawWriter(a.io.out)
	if err := gitcli.New(r.Worktree, append(form, "HEAD")...).Paths(c.Paths...).Attach(ctx, a.io.in, out, a.io.errOut); err != nil {
		return err
	}
	untracked, err := gitcli.New(r.Worktree, "ls-files", "--others", "--exclude-standard", "-z").Paths(c.Paths...).Output(ctx)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(string(untracked), "\x00") {
		if f == "" {
			continue
		}
		if c.NameOnly {
			fmt.Fprintln(a.io.out, f)
			continue
		}
		// diff --no-index exits 1 when the files differ, which they do.
		err := gitcli.New(r.Worktree, append(append([]string(nil), form...), "--no-index")...).Paths(os.DevNull, f).Attach(ctx, a.io.in, out, a.io.errOut)
		var ge *gitcli.Error
		if err != nil && (!errors.As(err, &ge) || ge.ExitCode() != 1) {
			return err
		}
	}
	return nil
}

// nextSteps are the commands that make sense for a task in its status,
// printed by show and blocked so the next move is never a guess.
func nextSteps(slug string, st machine.Status, pending bool) []string {
	switch st {
	case machine.Backlog:
		return []string{"lazy start " + slug, "lazy edit " + slug + " --goal TEXT", "lazy close " + slug}
	case machine.Working:
		return []string{"lazy logs -f " + slug, "lazy wait " + slug, "lazy stop " + slug}
	case machine.Blocked:
		if pending {
			return []string{"lazy unblock " + slug + " --approve-file PATH", "lazy unblock " + slug + " --no-approve-files"}
		}
		return []string{"lazy diff " + slug, "lazy accept " + slug, "lazy unblock " + slug + " -m TEXT", "lazy pair " + slug, "lazy reject " + slug}
	case machine.Conflict:
		return []string{"lazy diff " + slug, "lazy unblock " + slug + " --approve-file PATH", "lazy unblock " + slug + " --no-approve-files"}
	case machine.Interrupted:
		return []string{"lazy logs " + slug, "lazy resume " + slug, "lazy unblock " + slug + " -m TEXT"}
	case machine.Pairing:
		return []string{"lazy show " + slug + " (a human is pairing; it parks again when they exit)"}
	case machine.Merging:
		return []string{"lazy accept " + slug + " (finishes the merge)", "lazy doctor"}
	case machine.Submitted:
		return []string{"lazy accept " + slug, "lazy show " + slug}
	case machine.Complete, machine.Abandoned:
		return []string{"lazy reopen " + slug}
	}
	return nil
}

// LogsCmd prints a task's agent output.
type LogsCmd struct {
	Task   string `arg:"" help:"Slug or id prefix." predictor:"task"`
	Follow bool   `short:"f" help:"Keep printing as the agent writes, until its turn ends."`
	Turn   int    `help:"Only the agent run of turn N (a number from lazy show: the human turn or the agent turn that answered it)." placeholder:"N"`
	Raw    bool   `help:"Print the log as JSON Lines instead of rendering it: the agent's own events as it wrote them (Claude's stream-json, Codex's JSONL), each agent launch begun by a {\"lazy\":\"turn\",...} line, lazy's notes as {\"lazy\":\"note\",...}, and text the agent printed as {\"lazy\":\"out\",\"text\":...}."`
}

// logsOptions are what lazy logs, and a follow of a turn just launched,
// consume (gh's Options): the streams, the store, the wire env, the
// settings the pool's remote is read from, and the lazy directory the
// logs are in. logsOptionsOf fills them from an opened run.
type logsOptions struct {
	io       ioStreams
	store    *gitstore.Store
	env      func() (*wire.Env, error)
	settings settings
	lazyDir  string
	// reconcile sweeps the tasks a follow waits on, so that a turn that
	// ended is seen to end.
	reconcile func(ctx context.Context, entries []task.Entry) bool
}

// logsOptionsOf fills logsOptions from an opened run.
func logsOptionsOf(a *app) logsOptions {
	return logsOptions{io: a.io, store: a.store, env: a.env, settings: a.settings(), lazyDir: a.repo.LazyDir(), reconcile: a.reconcileBeforeRead}
}

// Run implements lazy logs.
func (c *LogsCmd) Run(a *app, ctx context.Context) error {
	sn, err := a.openTask(c.Task)
	if err != nil {
		return err
	}
	return c.run(ctx, logsOptionsOf(a), sn)
}

// run is lazy logs of sn on what o gives it.
func (c *LogsCmd) run(ctx context.Context, o logsOptions, sn *task.Snapshot) error {
	id := sn.Task.ID
	if sn.Session == nil {
		return fmt.Errorf("%s has not started, so there is no agent output yet; lazy start %s", sn.Task.Slug, sn.Task.Slug)
	}
	pd := proto.ForTask(o.lazyDir, id)
	o.fetchPoolLog(ctx, sn, pd)
	start, end, err := logRange(pd, c.Turn)
	if err != nil {
		return fmt.Errorf("%s: %w", sn.Task.Slug, err)
	}
	lw := &logWriter{w: o.io.out, raw: c.Raw, marks: pd.LogMarks(), secrets: o.secrets()}
	off, err := lw.copyFrom(pd.Path(proto.LogFile), start, end)
	if errors.Is(err, os.ErrNotExist) {
		if !c.Follow {
			return fmt.Errorf("%s: %s", sn.Task.Slug, o.noLogWhy(sn))
		}
		err = nil
	}
	if err != nil || !c.Follow || end >= 0 {
		lw.flush()
		return err
	}
	return o.follow(ctx, id, lw, pd, off)
}

// noLogWhy says why this machine has no agent output of sn: its turns
// run on another host, or (a session of this host's) none was kept.
func (o logsOptions) noLogWhy(sn *task.Snapshot) string {
	if env, err := o.env(); err == nil && !env.Owns(sn) && sn.Session.Host != o.store.Host() {
		return "no agent output on this machine (its turns run on host " + sn.Session.Host + "; run lazy logs there)"
	}
	return "no agent output was kept on this machine for it (its log was never written, or was removed by hand)"
}

// follow prints what the agent appends until the task leaves working
// and everything it wrote is shown.
func (o logsOptions) follow(ctx context.Context, id string, lw *logWriter, pd proto.Dir, off int64) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		sn, err := o.store.Load(id)
		if err != nil {
			return err
		}
		settled := sn.Task.Status != machine.Working
		if !settled {
			o.reconcile(ctx, []task.Entry{{ID: id, Status: sn.Task.Status}})
		}
		lw.marks = pd.LogMarks()
		n, err := lw.copyFrom(pd.Path(proto.LogFile), off, -1)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if n > off {
			off = n
		}
		if settled {
			lw.flush()
			line, _ := outcome(ctx, o.env, sn)
			o.io.info("%s is %s", sn.Task.Slug, line)
			return nil
		}
		select {
		case <-ctx.Done():
			lw.flush()
			return nil
		case <-tick.C:
		}
	}
}

// logRange is the byte range of turn's output in agent.log ([start,
// end), end -1 for the end of the file); turn 0 is the whole log.
func logRange(pd proto.Dir, turn int) (int64, int64, error) {
	if turn == 0 {
		return 0, -1, nil
	}
	marks := pd.LogMarks()
	start, end := int64(-1), int64(-1)
	for i, m := range marks {
		if m.Seq == turn || m.Seq+1 == turn {
			if start < 0 {
				start = m.Offset
			}
			end = -1
			if i+1 < len(marks) {
				end = marks[i+1].Offset
			}
		}
	}
	if start < 0 {
		var seen []string
		for _, m := range marks {
			seen = append(seen, fmt.Sprint(m.Seq))
		}
		if len(seen) == 0 {
			return 0, 0, fmt.Errorf("no agent run of turn %d is logged on this machine", turn)
		}
		return 0, 0, fmt.Errorf("no agent run of turn %d is logged; logged turns: %s", turn, strings.Join(seen, ", "))
	}
	return start, end, nil
}

// secrets is what lazy takes out of the agent output it shows: the
// shapes of credentials, and the paths and queries of the URLs lazy.notify
// names (as wire.Env.Secrets for what it records and sends).
func (o logsOptions) secrets() *redact.Redactor {
	cfg, err := o.store.Repo().Config()
	if err != nil {
		return redact.New()
	}
	return redact.New(cfg.All(notify.KeyTargets)...)
}

// logWriter renders agent.log line by line: each line through the one
// renderer (agent.RenderLine), or, raw, as one JSON value a line
// (agent.RawLine). marks is the log's index, which a log an older lazy
// wrote needs to tell its launches apart (agent.SplitLog).
type logWriter struct {
	w       io.Writer
	raw     bool
	secrets *redact.Redactor // nil: the shapes of secrets only
	marks   []proto.LogMark
	partial []byte
	pos     int64 // offset of partial's first byte
}

// copyFrom renders path's bytes from off to end (-1: EOF) and returns
// the offset it read up to.
func (l *logWriter) copyFrom(path string, off, end int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return off, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off, err
	}
	var r io.Reader = f
	if end >= 0 {
		r = io.LimitReader(f, end-off)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return off, err
	}
	if len(l.partial) == 0 {
		l.pos = off
	}
	l.partial = append(l.partial, b...)
	n := agent.SplitLog(l.partial, l.pos, l.marks, l.line)
	l.pos += int64(n)
	l.partial = append(l.partial[:0], l.partial[n:]...)
	return off + int64(len(b)), nil
}

func (l *logWriter) flush() {
	if len(l.partial) > 0 {
		agent.FlushLog(l.partial, l.pos, l.marks, l.line)
		l.pos += int64(len(l.partial))
		l.partial = nil
	}
}

func (l *logWriter) line(s string) {
	// What an agent printed may hold a credential it read: a log shows
	// it without (internal/redact), a raw line still JSON.
	if l.raw {
		if out, ok := agent.RawLine(s); ok {
			fmt.Fprintln(l.w, string(l.secrets.Log([]byte(out))))
		}
		return
	}
	for _, out := range agent.RenderLine(s) {
		fmt.Fprintln(l.w, l.secrets.Text(out))
	}
}

// WaitCmd waits for tasks to need a human.
type WaitCmd struct {
	Tasks   []string      `arg:"" help:"Slugs or id prefixes."`
	Any     bool          `help:"Return when the first task settles instead of all of them."`
	Timeout time.Duration `help:"Give up after this long (0: wait as long as it takes)." default:"0"`
	JSON    bool          `help:"Print the settled tasks as a JSON array."`
}

// Exit codes of lazy wait.
const (
	waitNeedsAttention = 3   // a task is interrupted, conflicted or abandoned
	waitTimedOut       = 124 // as timeout(1)
)

// Run implements lazy wait: exit 0 when every task (or, with --any, one)
// settled in blocked, submitted or complete; 3 when one settled as
// interrupted, conflict or abandoned; 124 on --timeout.
func (c *WaitCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	ids := make([]string, 0, len(c.Tasks))
	for _, t := range c.Tasks {
		id, err := a.store.Resolve(t)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	final, timedOut, err := a.waitSettled(ctx, ids, c.Any, c.Timeout, a.io.progressLine(c.JSON))
	if err != nil {
		return err
	}
	code := 0
	var out []task.Summary
	for _, id := range ids {
		sn, ok := final[id]
		if !ok {
			continue
		}
		out = append(out, toJSON(&sn.Task))
		if !c.JSON {
			// A task that is held, or whose gate failed, says so and how
			// to carry it on; any other says its status alone.
			if line, facts := outcome(ctx, a.env, sn); facts {
				fmt.Fprintf(a.io.out, "%s: %s\n", sn.Task.Slug, line)
			} else {
				fmt.Fprintf(a.io.out, "%s: %s\n", sn.Task.Slug, sn.Task.Status)
			}
		}
		switch sn.Task.Status {
		case machine.Interrupted, machine.Conflict, machine.Abandoned:
			code = waitNeedsAttention
		}
	}
	if c.JSON {
		if out == nil {
			out = []task.Summary{}
		}
		if err := a.io.printJSON(out); err != nil {
			return err
		}
	}
	if timedOut {
		return silentExit{code: waitTimedOut, err: fmt.Errorf("timed out after %s", c.Timeout)}
	}
	if code != 0 {
		return silentExit{code: code, err: errors.New("a task needs attention")}
	}
	return nil
}

// settled reports whether a task no longer runs anything by itself.
func settled(st machine.Status) bool {
	return st != machine.Working && st != machine.Merging
}

// waitSettled reconciles and polls until the tasks settle. Reconciling
// here (safe alongside a daemon: every step is locked and CAS) means the
// wait ends as soon as a turn's response is on disk, daemon or not.
//
// line (nil: none) shows what the pending tasks are doing; waitSettled
// erases it before it returns, so what the caller prints next starts on
// a clean line.
func (a *app) waitSettled(ctx context.Context, ids []string, anyOne bool, timeout time.Duration, line *progress.Line) (map[string]*task.Snapshot, bool, error) {
	defer line.Close()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		final := map[string]*task.Snapshot{}
		var pending []task.Entry
		var running []*task.Snapshot
		for _, id := range ids {
			sn, err := a.store.Load(id)
			if err != nil {
				return nil, false, err
			}
			if settled(sn.Task.Status) {
				final[id] = sn
			} else {
				pending = append(pending, task.Entry{ID: id, Status: sn.Task.Status})
				running = append(running, sn)
			}
		}
		if len(pending) == 0 || (anyOne && len(final) > 0) {
			return final, false, nil
		}
		if line.On() {
			line.Set(a.waitingLine(running))
		}
		if a.reconcileBeforeRead(ctx, pending) {
			continue
		}
		select {
		case <-ctx.Done():
			return final, false, ctx.Err()
		case <-deadline:
			return final, true, nil
		case <-tick.C:
		}
	}
}

// needsHuman reports whether an action parks a task for a human: not
// the end of an ask or a sync, which parks it back where it was.
func needsHuman(act reconcile.Action) bool {
	return act.From != act.To && (act.To.IsBlocked() || act.To == machine.Interrupted) && !act.From.IsBlocked() && !act.Neutral
}

// followFlags are start's, unblock's and resume's ways to stay with the
// turn they launch.
type followFlags struct {
	Wait   bool `help:"Wait until the turn ends; exit 0 when the task is blocked for review, 3 when it needs attention (interrupted, conflict)." xor:"stay"`
	Follow bool `help:"Print the agent's output as it works (lazy logs -f) until the turn ends." xor:"stay"`
}

// logSize is where the next turn's output will begin in agent.log.
func (o logsOptions) logSize(name string) int64 {
	id, err := o.store.Resolve(name)
	if err != nil {
		return 0
	}
	fi, err := os.Stat(proto.ForTask(o.lazyDir, id).Path(proto.LogFile))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// stay follows or waits for a turn just launched, or says how to.
func (a *app) stay(ctx context.Context, f followFlags, sn *task.Snapshot, logOff int64) error {
	slug := sn.Task.Slug
	switch {
	case f.Follow:
		o := logsOptionsOf(a)
		pd := proto.ForTask(o.lazyDir, sn.Task.ID)
		return o.follow(ctx, sn.Task.ID, &logWriter{w: o.io.out, marks: pd.LogMarks(), secrets: o.secrets()}, pd, logOff)
	case f.Wait:
		final, _, err := a.waitSettled(ctx, []string{sn.Task.ID}, false, 0, a.io.progressLine(false))
		if err != nil {
			return err
		}
		end := final[sn.Task.ID]
		line, _ := outcome(ctx, a.env, end)
		fmt.Fprintf(a.io.out, "%s: %s\n", slug, line)
		switch end.Task.Status {
		case machine.Interrupted, machine.Conflict, machine.Abandoned:
			return silentExit{code: waitNeedsAttention, err: errors.New("the task needs attention")}
		}
		return nil
	}
	a.io.info("follow it with lazy logs -f %s, or lazy wait %s", slug, slug)
	return nil
}

// fetchPoolLog brings the log of a pooled task a runner elsewhere ran:
// the newest part it pushed to the pool, kept here where lazy logs reads
// a log. A log of this machine's own session is never replaced.
func (o logsOptions) fetchPoolLog(ctx context.Context, sn *task.Snapshot, pd proto.Dir) {
	if sn.Task.Pool == nil || sn.Session == nil {
		return
	}
	if env, err := o.env(); err != nil || env.Owns(sn) {
		return
	}
	remote, err := o.settings.poolRemote(ctx, "")
	if err != nil {
		return
	}
	p, err := pool.New(o.settings.repoDir, remote)
	if err != nil || p.Fetch(ctx) != nil {
		return
	}
	b, err := p.Log(ctx, sn.Task.ID)
	if err != nil || b == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(pd.Path(proto.LogFile)), 0o755); err != nil {
		return
	}
	_ = renameio.WriteFile(pd.Path(proto.LogFile), b, 0o644)
}

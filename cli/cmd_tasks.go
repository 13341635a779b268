package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/deploy"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// InitCmd sets lazy up in the repository.
type InitCmd struct {
	JSON    bool `help:"Print the result as JSON."`
	Actions bool `help:"Also write .github/workflows/lazy-runner.yml: a GitHub Actions workflow that runs lazy runner --once on workflow_dispatch and on a schedule."`
	Force   bool `help:"--actions: replace a different .github/workflows/lazy-runner.yml already there."`
}

// Run implements lazy init.
func (c *InitCmd) Run(a *app) error {
	if err := a.open(); err != nil {
		return err
	}
	if c.Force && !c.Actions {
		return usageError{"--force goes with --actions: lazy init --actions --force replaces a different workflow file"}
	}
	if c.Actions && a.repo.WorkTree == "" {
		return errors.New("lazy init --actions writes a file into a checkout, and this repository is bare; run it in a clone")
	}
	res, err := initRepo(a.repo, a.cfg)
	if err != nil {
		return err
	}
	if c.Actions {
		w, err := deploy.WriteWorkflow(a.repo.WorkTree, c.Force)
		if err != nil {
			return err
		}
		res.Actions = &w
	}
	if err := a.loadConfig(); err != nil {
		return err
	}
	// A clone of a repository that already has tasks starts with them.
	for _, r := range res.Remotes {
		rep, err := a.store.Sync().Pull(context.Background(), r)
		if err != nil {
			res.Bootstrap = append(res.Bootstrap, fmt.Sprintf("%s: not fetched (%v)", r, err))
			continue
		}
		if n := len(rep.Created) + len(rep.FastForwarded) + len(rep.Merged); n > 0 {
			res.Bootstrap = append(res.Bootstrap, fmt.Sprintf("%s: took in %s", r, words.Count(n, "task", "tasks")))
		}
	}
	if c.JSON {
		return a.io.printJSON(res)
	}
	if res.CreatedHostID {
		fmt.Fprintf(a.io.out, "Initialized lazy in %s (host id %s)\n", a.repo.CommonDir, res.HostID)
	} else {
		fmt.Fprintf(a.io.out, "lazy is already set up in %s (host id %s)\n", a.repo.CommonDir, res.HostID)
	}
	for _, r := range res.Remotes {
		fmt.Fprintf(a.io.out, "  remote %s: fetches refs/lazy/* into refs/lazy-remotes/%s/\n", r, r)
	}
	for _, r := range res.Skipped {
		fmt.Fprintf(a.io.errOut, "lazy: skipped remote %q: its name is not safe to put in a refspec\n", r)
	}
	fmt.Fprintf(a.io.out, "  lazy push uses %s (your plain git push is unchanged)\n", res.PushRefspec)
	for _, b := range res.Bootstrap {
		fmt.Fprintf(a.io.out, "  %s\n", b)
	}
	if w := res.Actions; w != nil {
		what := fmt.Sprintf("lazy runner --once on workflow_dispatch and on the schedule %q", deploy.WorkflowSchedule())
		switch {
		case w.Replaced:
			fmt.Fprintf(a.io.out, "Replaced %s with lazy's runner workflow: %s\n", w.Path, what)
		case w.Written:
			fmt.Fprintf(a.io.out, "Wrote %s: %s\n", w.Path, what)
		default:
			fmt.Fprintf(a.io.out, "%s is already lazy's runner workflow; left as it is\n", w.Path)
		}
		fmt.Fprintf(a.io.out, "Next: commit and push it (git add %s && git commit -m 'Run lazy runners on GitHub Actions' && git push),\n"+
			"  set the agent's key as a repository secret (gh secret set ANTHROPIC_API_KEY),\n"+
			"  then start runners: gh workflow run lazy-runner.yml -f runners=2\n", w.Path)
	}
	return nil
}

// CreateCmd creates a task.
type CreateCmd struct {
	Title        string   `arg:"" optional:"" help:"One-line title. Omit it to take the first line of the description."`
	Message      *string  `short:"m" name:"message" help:"Description / goal for the agent (\"-\" reads stdin). Without -m, piped stdin or $EDITOR is used."`
	Parent       string   `help:"Make this a subtask of TASK (slug or id prefix)." placeholder:"TASK"`
	TargetBranch string   `name:"target-branch" help:"Branch the task merges into when accepted (default: the repository's default branch)." placeholder:"BRANCH"`
	Slug         string   `help:"Use this slug instead of one derived from the title."`
	Allow        []string `name:"allow" help:"Allowed-paths glob; files changed outside these become violations (repeatable)." placeholder:"GLOB"`
	Sandbox      bool     `help:"Run this task's agent sandboxed (bubblewrap) even where lazy.sandbox is off; the setting travels with the task and can only add confinement."`
	JSON         bool     `help:"Print the created task as JSON."`
	Start        bool     `help:"Start it right away (as lazy start would), with --agent and --command."`
	Agent        string   `help:"With --start: the agent CLI to run (claude, codex or exec)." predictor:"agent"`
	Command      string   `help:"With --start: the exec agent's command line." placeholder:"CMD"`
	After        []string `help:"A task that must be complete (accepted) before this one starts, here or on the pool (repeatable)." placeholder:"TASK"`
	Budget       string   `help:"The task's own budget in US dollars, for its turns and its subtasks' (default: lazy.budget.task); 0 allows no spend." placeholder:"USD"`
	followFlags
}

// Run implements lazy create.
func (c *CreateCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if !c.Start && (c.Agent != "" || c.Command != "" || c.Wait || c.Follow) {
		return usageError{"--agent, --command, --wait and --follow go with --start (or use lazy start after creating)"}
	}
	// Checked before the description is read (it may be stdin); create
	// applies the same rule again.
	if err := lifecycle.CheckTargetBranch(ctx, a.repoDir(), strings.TrimSpace(c.TargetBranch), c.Parent != ""); err != nil {
		return fmt.Errorf("%w; nothing was created", err)
	}
	var usd *float64
	if c.Budget != "" {
		var err error
		if usd, err = parseBudgetFlag(c.Budget); err != nil {
			return err
		}
	}
	if strings.TrimSpace(c.Title) == "" && c.Message == nil && !readable(a.io.in) && (!isTerminal(a.io.in) || !isTerminal(a.io.out)) {
		// Nothing to take a title from: say how to give one.
		return usageError{`a task needs a title: lazy create "TITLE" [-m GOAL] (or pipe its description on stdin); nothing was created`}
	}
	goal, done, err := textInputOf(a).read(c.Message, "task description", c.Title == "")
	if err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	in := opsCreateInput(c, goal)
	in.BudgetUSD = usd
	sn, err := env.Lifecycle().Create(ctx, in)
	if err != nil {
		return err
	}
	done()
	if c.Start {
		if !c.JSON {
			fmt.Fprintf(a.io.out, "Created %s (%s)\n", sn.Task.Slug, render.ShortID(sn.Task.ID))
		}
		start := &StartCmd{Task: sn.Task.ID, Agent: c.Agent, Command: c.Command, JSON: c.JSON, followFlags: c.followFlags}
		if err := start.Run(a, ctx); err != nil {
			return fmt.Errorf("created %s, but it did not start (it waits in backlog; lazy start %s): %w", sn.Task.Slug, sn.Task.Slug, err)
		}
		return nil
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Created %s (%s) in backlog\n", sn.Task.Slug, render.ShortID(sn.Task.ID))
	return nil
}

// listFilter is shared by list, blocked and active.
type listFilter struct {
	Status []string `short:"s" help:"Only tasks in these statuses (repeatable or comma-separated)." sep:"," predictor:"status"`
	Open   bool     `help:"Hide complete and abandoned tasks."`
	Search string   `short:"q" help:"Only tasks whose slug or title contains TEXT (case-insensitive)." placeholder:"TEXT"`
	Sort   string   `help:"Order: attention (what needs a human first, then last update), updated, created or title. Subtasks stay under their parent." enum:"attention,updated,created,title" default:"attention"`
	Limit  int      `short:"n" help:"Show at most N tasks (0: all)." placeholder:"N" default:"0"`
	JSON   bool     `help:"Print tasks as a JSON array."`

	// next prints each task's next commands under the table (blocked).
	next bool
}

// ListCmd lists tasks.
type ListCmd struct {
	listFilter
	Parent string `help:"Only subtasks of TASK." placeholder:"TASK"`
}

// Run implements lazy list.
func (c *ListCmd) Run(a *app, ctx context.Context) error {
	statuses, err := parseStatuses(c.Status)
	if err != nil {
		return err
	}
	return listTasks(ctx, a, c.listFilter, statuses, c.Parent, func(machine.Status) bool { return true })
}

// BlockedCmd lists tasks waiting for a human.
type BlockedCmd struct {
	JSON bool `help:"Print tasks as a JSON array."`
}

// Run implements lazy blocked.
func (c *BlockedCmd) Run(a *app, ctx context.Context) error {
	return listTasks(ctx, a, listFilter{JSON: c.JSON, next: true, Sort: "attention"}, nil, "", machine.Status.IsBlocked)
}

// ActiveCmd lists tasks with a live worktree.
type ActiveCmd struct {
	JSON bool `help:"Print tasks as a JSON array."`
}

// Run implements lazy active.
func (c *ActiveCmd) Run(a *app, ctx context.Context) error {
	return listTasks(ctx, a, listFilter{JSON: c.JSON, Sort: "attention"}, nil, "", machine.Status.IsActive)
}

func parseStatuses(in []string) (map[machine.Status]bool, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[machine.Status]bool{}
	for _, s := range in {
		st, err := machine.ParseStatus(s)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		out[st] = true
	}
	return out, nil
}

type listError struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

func listTasks(ctx context.Context, a *app, f listFilter, statuses map[machine.Status]bool, parent string, keep func(machine.Status) bool) error {
	if err := a.open(); err != nil {
		return err
	}
	parentID := ""
	if parent != "" {
		id, err := a.store.Resolve(parent)
		if err != nil {
			return err
		}
		parentID = id
	}
	entries, err := a.reconciledList(ctx)
	if err != nil {
		return err
	}
	rows := make([]task.Entry, 0, len(entries))
	var bad []listError
	for _, e := range entries {
		if e.Err != nil {
			bad = append(bad, listError{ID: e.ID, Error: e.Err.Error()})
			continue
		}
		if !keep(e.Status) || (statuses != nil && !statuses[e.Status]) || (f.Open && e.Status.IsTerminal()) {
			continue
		}
		if parentID != "" && e.Parent != parentID {
			continue
		}
		rows = append(rows, e)
	}
	for _, b := range bad {
		fmt.Fprintf(a.io.errOut, "lazy: skipping unreadable task %s: %s\n", b.ID, b.Error)
	}
	if f.Limit < 0 {
		return usageError{"--limit takes a number of tasks, 0 or more"}
	}
	// Overlaps are measured against every active task, listed or not: a
	// filtered list still says what a shown task shares with a hidden one.
	ov := overlapCheckOf(a).of(ctx, entries, nil)
	// The plain JSON listing streams the cached bytes in creation order,
	// so thousands of tasks decode nothing; a search, an order or a limit
	// needs the summaries.
	if f.JSON && f.Search == "" && (f.Sort == "" || f.Sort == "created") && f.Limit == 0 {
		return writeJSONList(a.io.out, rows, bad, a.marks(), ov)
	}
	q := strings.ToLower(f.Search)
	if f.JSON && q == "" && f.Sort != "title" {
		// Ordered by fields every entry carries, a JSON listing prints the
		// cached bytes and decodes no summary.
		return writeJSONList(a.io.out, render.OrderEntries(rows, f.Sort, f.Limit), bad, a.marks(), ov)
	}
	tasks := make([]*task.Summary, 0, len(rows))
	rowOf := make(map[string]int, len(rows)) // task id -> index in rows
	for i := range rows {
		s, err := rows[i].Summary()
		if err != nil {
			return err
		}
		if q != "" && !strings.Contains(strings.ToLower(s.Slug+" "+s.Title), q) {
			continue
		}
		tasks = append(tasks, s)
		rowOf[s.ID] = i
	}
	ordered := render.TreeOrder(tasks, render.TaskLess(f.Sort))
	if f.Limit > 0 && len(ordered) > f.Limit {
		ordered = ordered[:f.Limit]
	}
	if f.JSON {
		kept := make([]task.Entry, 0, len(ordered))
		for _, r := range ordered {
			kept = append(kept, rows[rowOf[r.Item.ID]])
		}
		return writeJSONList(a.io.out, kept, bad, a.marks(), ov)
	}
	if len(ordered) == 0 {
		fmt.Fprintln(a.io.out, "No tasks.")
		return nil
	}
	st := a.io.style(a.now())
	if err := render.TaskTable(a.io.out, st, ordered, a.marks(), ov); err != nil {
		return err
	}
	if f.next {
		fmt.Fprintln(a.io.out, "\nNext")
		for _, r := range ordered {
			fmt.Fprintf(a.io.out, "  %s\n", strings.Join(nextSteps(r.Item.Slug, r.Item.Status, r.Item.Status == machine.Conflict), "  |  "))
		}
	}
	return nil
}

// withLive adds a working task's derived substate to its cached summary
// bytes; every other task is written as cached.
func withLive(e task.Entry, mk *marks.Marks) []byte {
	if e.Status != machine.Working || len(e.JSON) < 2 || e.JSON[len(e.JSON)-1] != '}' {
		return e.JSON
	}
	s, err := e.Summary()
	if err != nil {
		return e.JSON
	}
	live, err := json.Marshal(mk.Substate(s))
	if err != nil {
		return e.JSON
	}
	out := append([]byte(nil), e.JSON[:len(e.JSON)-1]...)
	out = append(out, `,"live_substate":`...)
	out = append(out, live...)
	return append(out, '}')
}

// marks reads the wait and progress markers of this repository.
func (a *app) marks() *marks.Marks {
	return &marks.Marks{LazyDir: a.repo.LazyDir(), Host: a.store.Host()}
}

// writeJSONList prints a JSON array with one task per line. The task
// objects are the cached summary bytes, so listing thousands of tasks
// decodes and re-encodes nothing; a working task gains its live
// substate and an overlapping one its overlaps.
func writeJSONList(w io.Writer, rows []task.Entry, bad []listError, mk *marks.Marks, ov map[string]review.TaskOverlaps) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString("[")
	sep := "\n"
	for _, e := range rows {
		bw.WriteString(sep)
		bw.Write(withOverlaps(withLive(e, mk), ov[e.ID]))
		sep = ",\n"
	}
	for _, b := range bad {
		line, err := json.Marshal(b)
		if err != nil {
			return err
		}
		bw.WriteString(sep)
		bw.Write(line)
		sep = ",\n"
	}
	if len(rows)+len(bad) > 0 {
		bw.WriteString("\n")
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// permissions is what sn's agent may do here (lazy show), or nil when
// another machine runs it or the configuration cannot say.
func (a *app) permissions(ctx context.Context, sn *task.Snapshot) *agent.TaskPermissions {
	env, err := a.env()
	if err != nil {
		return nil
	}
	in, err := a.settings().startInput("", "")
	if err != nil {
		return nil
	}
	return env.Permissions(ctx, sn, in)
}

// showClip is how much of one text lazy show prints without --full.
const showClip = 64 << 10

// ShowCmd shows one task.
type ShowCmd struct {
	Task string `arg:"" help:"Slug or id prefix." predictor:"task"`
	JSON bool   `help:"Print the task as JSON."`
	Full bool   `help:"Print every text whole (lazy show cuts texts over 64 KiB); a record over lazy's limits is still read only in part."`
}

// CommentCmd adds a comment.
type CommentCmd struct {
	Task    string  `arg:"" help:"Slug or id prefix." predictor:"task"`
	Message *string `short:"m" name:"message" help:"Comment text (\"-\" reads stdin). Without -m, piped stdin or $EDITOR is used."`
	JSON    bool    `help:"Print the comment as JSON."`
}

// Run implements lazy comment.
func (c *CommentCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if _, err := a.store.Resolve(c.Task); err != nil {
		return err // before opening an editor for a task that does not exist
	}
	text, done, err := textInputOf(a).read(c.Message, "comment", true)
	if err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, cm, err := env.Lifecycle().Comment(ctx, c.Task, text)
	if err != nil {
		return err
	}
	done()
	if c.JSON {
		return a.io.printJSON(cm)
	}
	fmt.Fprintf(a.io.out, "Commented on %s (#%d)\n", sn.Task.Slug, cm.Seq)
	return nil
}

// endCmd is shared by close and reject.
type endCmd struct {
	Task    string  `arg:"" help:"Slug or id prefix." predictor:"task"`
	Message *string `short:"m" name:"reason" aliases:"message" help:"Why (\"-\" reads stdin). Without it, piped stdin or $EDITOR is used."`
	JSON    bool    `help:"Print the task as JSON."`
	// DeleteBranch is the explicit decision to drop unmerged work.
	DeleteBranch bool `name:"delete-branch" help:"Also delete the task's branch when it holds work not merged into its base (its tip is recorded in a comment first). Without it such a branch is kept, and a comment says where; a branch with nothing unmerged is deleted either way."`
}

func (c *endCmd) run(a *app, ctx context.Context, env *wire.Env, verb string, do func(ctx context.Context, name, reason string) (*task.Snapshot, error)) error {
	if _, err := a.store.Resolve(c.Task); err != nil {
		return err
	}
	reason, done, err := textInputOf(a).read(c.Message, verb+" reason", false)
	if err != nil {
		return err
	}
	sn, err := do(ctx, c.Task, reason)
	if err != nil {
		return err
	}
	done()
	notes, cerr := env.Landing().Cleanups().CleanupAbandoned(ctx, sn, c.DeleteBranch)
	if c.JSON {
		out := struct {
			task.Summary
			Cleanup []string `json:"cleanup"`
		}{toJSON(&sn.Task), nonNil(notes)}
		if err := a.io.printJSON(out); err != nil {
			return err
		}
		return cerr
	}
	fmt.Fprintf(a.io.out, "%s %s: now %s\n", verbPast(verb), sn.Task.Slug, sn.Task.Status)
	for _, n := range notes {
		fmt.Fprintf(a.io.out, "  %s\n", n)
	}
	return cerr
}

func verbPast(v string) string {
	switch v {
	case "close":
		return "Closed"
	case "reject":
		return "Rejected"
	}
	return v
}

// CloseCmd abandons a task.
type CloseCmd struct{ endCmd }

// Run implements lazy close.
func (c *CloseCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	return c.run(a, ctx, env, "close", env.Lifecycle().Close)
}

// RejectCmd abandons a task, rejecting its work.
type RejectCmd struct{ endCmd }

// Run implements lazy reject.
func (c *RejectCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	return c.run(a, ctx, env, "reject", env.Lifecycle().Reject)
}

// ReopenCmd reopens a finished task.
type ReopenCmd struct {
	Task   string `arg:"" help:"Slug or id prefix." predictor:"task"`
	Reason string `help:"Why it is reopened (required for an accepted task)."`
	JSON   bool   `help:"Print the task as JSON."`
}

// Run implements lazy reopen.
func (c *ReopenCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Lifecycle().Reopen(ctx, c.Task, c.Reason)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	fmt.Fprintf(a.io.out, "Reopened %s: now %s\n", sn.Task.Slug, sn.Task.Status)
	return nil
}

// HousekeepCmd packs refs and objects.
type HousekeepCmd struct {
	Quiet bool `help:"Print nothing."`
	Auto  bool `help:"Only pack when loose objects are past lazy.gc.looseObjects."`
}

// Run implements lazy housekeep.
func (c *HousekeepCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	if _, err := looseObjectLimit(a.cfg); err != nil && c.Auto {
		return err
	}
	res, err := a.store.Housekeeping().Housekeep(ctx, c.Auto)
	if err != nil || c.Quiet {
		return err
	}
	if !res.Ran {
		fmt.Fprintln(a.io.out, "Nothing to do (below the threshold, or another pass is running).")
		return nil
	}
	fmt.Fprintf(a.io.out, "Packed: loose objects %d -> %d, loose refs %d -> 0\n", res.LooseBefore, res.LooseAfter, res.LooseRefsWas)
	return nil
}

// ReparentCmd moves a task under another parent.
type ReparentCmd struct {
	Task   string `arg:"" help:"Slug or id prefix." predictor:"task"`
	Parent string `help:"The new parent (slug or id prefix); give this or --root." xor:"where" placeholder:"TASK" predictor:"task"`
	Root   bool   `help:"Make it a top-level task; give this or --parent." xor:"where"`
	JSON   bool   `help:"Print the task as JSON."`
}

// Run implements lazy reparent.
func (c *ReparentCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if c.Parent == "" && !c.Root {
		return usageError{"lazy reparent needs --parent TASK (move it under TASK) or --root (make it a top-level task)"}
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Lifecycle().Reparent(ctx, c.Task, c.Parent)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	where := "now a top-level task"
	if sn.Task.Parent != "" {
		where = "now a subtask of " + render.ShortID(sn.Task.Parent)
		if p, err := a.store.Load(sn.Task.Parent); err == nil {
			where = "now a subtask of " + p.Task.Slug
		}
	}
	fmt.Fprintf(a.io.out, "Reparented %s: %s\n", sn.Task.Slug, where)
	return nil
}

// AllowCmd edits a task's allowed-paths policy.
type AllowCmd struct {
	Task     string   `arg:"" help:"Slug or id prefix." predictor:"task"`
	Patterns []string `arg:"" optional:"" help:"Globs (relative paths; * within a segment, ** across segments)."`
	Add      bool     `help:"Add the globs to the policy instead of replacing it." xor:"mode"`
	Remove   bool     `help:"Remove the globs from the policy." xor:"mode"`
	Clear    bool     `help:"Remove the policy: every file is allowed." xor:"mode"`
	JSON     bool     `help:"Print the task as JSON."`
}

// Run implements lazy allow.
func (c *AllowCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	if len(c.Patterns) == 0 && !c.Clear {
		return usageError{"lazy allow needs globs, or --clear to remove the policy"}
	}
	if len(c.Patterns) > 0 && c.Clear {
		return usageError{"--clear takes no globs"}
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	mode := lifecycle.AllowReplace
	switch {
	case c.Add:
		mode = lifecycle.AllowAdd
	case c.Remove:
		mode = lifecycle.AllowRemove
	}
	sn, err := env.Lifecycle().SetAllowedPaths(ctx, c.Task, c.Patterns, mode)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(toJSON(&sn.Task))
	}
	if len(sn.Task.AllowedPaths) == 0 {
		fmt.Fprintf(a.io.out, "%s: no allowed-paths policy; every file is allowed\n", sn.Task.Slug)
		return nil
	}
	fmt.Fprintf(a.io.out, "%s: allowed paths %s\n", sn.Task.Slug, strings.Join(sn.Task.AllowedPaths, ", "))
	return nil
}

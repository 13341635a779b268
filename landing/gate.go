package landing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// The merge gate: lazy, not the agent, runs the repository's checks on
// the exact tree an accept would land (the task's squash on the target's
// tip), in a scratch worktree, and lands that very tree only if they
// passed. Which trees passed is this machine's own knowledge (a mark per
// tree and command list under .git/lazy/gate), never a record's claim.

// GateGit is what the merge gate asks of git: the target's tip and the
// gate configuration and protected paths committed there, what the
// task's range touches, the candidate tree built without a checkout and
// its commit, and the scratch worktree the commands run in.
type GateGit interface {
	BranchCommit(ctx context.Context, repoDir, branch string) (string, error)
	FileAt(ctx context.Context, repoDir, commit, path string) ([]byte, bool, error)
	RangeFiles(ctx context.Context, repoDir, base, tip string) (names []string, truncated bool, err error)
	ExistingFiles(ctx context.Context, repoDir, commit string, paths []string) ([]string, error)
	MergeTree(ctx context.Context, repoDir, ours, branch string) (tree string, conflicts []string, err error)
	CommitTree(ctx context.Context, repoDir, tree, parent, message string) (string, error)
	AddDetached(ctx context.Context, repoDir, dir, commit string) error
	RemoveScratch(ctx context.Context, repoDir, dir string) error
}

// git is git in the gate's role.
func (e *Gates) git() GateGit { return e.worktrees() }

// gatePlan is the gate an accept into one target runs.
type gatePlan struct {
	gate.Settings
	cmds   []string
	source string
}

// enabled reports whether the gate has anything to run.
func (g *gatePlan) enabled() bool { return g != nil && len(g.cmds) > 0 }

// GateSettings reads lazy.gate.* from the repository's git config.
func (e *Gates) GateSettings() (gate.Settings, error) {
	cfg, err := e.Repo.Config()
	if err != nil {
		return gate.Settings{}, fmt.Errorf("read git config: %w", err)
	}
	return gate.Load(cfg)
}

// gateAt is the gate of an accept into branch into at commit tip: the
// commands of git config lazy.gate, else the .lazy/gate file committed at
// that tip (never the task branch's copy, which the agent could edit).
func (e *Gates) gateAt(ctx context.Context, into, tip string) (*gatePlan, error) {
	s, err := e.GateSettings()
	if err != nil {
		return nil, err
	}
	read := func(path string) ([]byte, bool, error) { return e.git().FileAt(ctx, e.Dir(), tip, path) }
	cmds, source, err := s.Commands(read, into)
	if err != nil {
		return nil, err
	}
	return &gatePlan{Settings: s, cmds: cmds, source: source}, nil
}

// candidate is a tree that would land: the task's squash applied onto
// base (the target's tip, or the queue ahead of the task), and a
// provisional commit of it, which the scratch worktree checks out.
type candidate struct {
	base, tree, commit, branchTip string
	// batch places a batched train's run (lazy.gate.batch).
	batch *task.GateBatch
}

// ConflictError says a task's branch no longer merges cleanly into its
// target.
type ConflictError struct {
	Task, Into string
	Files      []string
}

func (c *ConflictError) Error() string {
	return fmt.Sprintf("accept %s: its branch no longer merges cleanly into %s (conflicts in %s); nothing was merged: lazy unblock %s asks the agent to merge %s and resolve them",
		c.Task, c.Into, strings.Join(sanitizeAll(c.Files), ", "), c.Task, c.Into)
}

// buildCandidate merges the task branch onto base without touching any
// checkout and commits the result provisionally.
func (e *Gates) buildCandidate(ctx context.Context, base, branch, slug, into string) (*candidate, error) {
	tip, err := e.git().BranchCommit(ctx, e.Dir(), branch)
	if err != nil {
		return nil, fmt.Errorf("accept %s: its branch %s is missing: %w", slug, branch, err)
	}
	tree, conflicts, err := e.git().MergeTree(ctx, e.Dir(), base, branch)
	if errors.Is(err, worktree.ErrMergeConflict) {
		return nil, &ConflictError{Task: slug, Into: into, Files: conflicts}
	}
	if err != nil {
		return nil, fmt.Errorf("accept %s: merge %s onto %s: %w", slug, branch, into, err)
	}
	commit, err := e.git().CommitTree(ctx, e.Dir(), tree, base, "lazy gate candidate: "+slug+"\n")
	if err != nil {
		return nil, fmt.Errorf("accept %s: %w", slug, err)
	}
	return &candidate{base: base, tree: tree, commit: commit, branchTip: tip}, nil
}

// passMark is this machine's mark that the gate's commands passed on
// tree: the only thing that lets an accept land without running them
// again.
func (e *Gates) passMark(tree string, cmds []string) string {
	sum := sha256.Sum256([]byte(strings.Join(cmds, "\x00")))
	return e.Repo.LazyDir("gate", "passed", tree+"-"+hex.EncodeToString(sum[:8]))
}

// passedBefore returns the id of a run that passed on tree with cmds on
// this machine, if one did.
func (e *Gates) passedBefore(tree string, cmds []string) (string, bool) {
	b, err := os.ReadFile(e.passMark(tree, cmds))
	if err != nil {
		return "", false
	}
	id := strings.TrimSpace(string(b))
	return id, task.ValidID(id)
}

func (e *Gates) markPassed(tree string, cmds []string, id string) {
	p := e.passMark(tree, cmds)
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		_ = os.WriteFile(p, []byte(id+"\n"), 0o644)
	}
}

// GateLog is where the whole output of a task's gate run is kept.
func (e *Gates) GateLog(taskID, runID string) string {
	return e.Repo.LazyDir("logs", taskID, "gate-"+runID+".log")
}

// gateRun runs the gate's commands on c's tree in a scratch worktree
// and records the run on the task. A run that could not start at all is
// recorded as failed with its error.
func (e *Gates) gateRun(ctx context.Context, sn *task.Snapshot, g *gatePlan, c *candidate, into string, opts AcceptOptions, speculative bool) (task.GateRun, error) {
	id, err := task.NewID()
	if err != nil {
		return task.GateRun{}, err
	}
	run := task.GateRun{ID: id, At: time.Now().UTC().Truncate(time.Second), Host: e.Store.Host(), Source: g.source,
		Target: into, Base: c.base, Tree: c.tree, BranchTip: c.branchTip, Speculative: speculative, Log: e.GateLog(sn.Task.ID, id), Batch: c.batch}
	var res gate.Result
	opts.Sandbox, err = e.GateSandbox(ctx, sn, opts.Sandbox)
	if err == nil {
		res, err = e.runInScratch(ctx, g, c, opts, id, run.Log)
	}
	if err != nil {
		run.Error = err.Error()
	}
	// The record is pushed, shown and sent: what the commands printed (and
	// a command line that holds a token) leaves without its secrets.
	secrets := e.Secrets()
	run.DurationMS, run.Passed, run.Failed, run.Tail, run.Refused = res.DurationMS, res.Passed && err == nil, secrets.Text(res.Failed), secrets.Text(res.Tail), res.Refused
	run.Error = secrets.Text(run.Error)
	for _, cmd := range res.Commands {
		cmd.Cmd = secrets.Text(cmd.Cmd)
		run.Commands = append(run.Commands, task.GateCommand(cmd))
	}
	// This process's own record of what it saw comes first: it is what
	// makes the run "here" on every surface, and a pass without it is
	// not marked (nothing would let it be reused).
	if lerr := e.saveLocalRun(sn.Task.ID, run); lerr != nil {
		run.Passed = false
		if run.Error == "" {
			run.Error = lerr.Error()
		}
	}
	if run.Passed {
		e.markPassed(c.tree, g.cmds, id)
	}
	if rerr := e.recordGate(context.WithoutCancel(ctx), sn.Task.ID, run); rerr != nil {
		return run, rerr
	}
	e.noteGate(sn, run)
	return run, nil
}

// runInScratch checks the candidate out in a detached scratch worktree,
// runs the commands there (in the sandbox when lazy.sandbox is on) and
// removes the worktree.
func (e *Gates) runInScratch(ctx context.Context, g *gatePlan, c *candidate, opts AcceptOptions, runID, logPath string) (gate.Result, error) {
	dir, err := e.scratchDir(runID)
	if err != nil {
		return gate.Result{}, err
	}
	_ = os.RemoveAll(dir)
	// The owner file lets a later accept or lazy doctor end what a killed
	// one left running there (see SweepGateLeftovers).
	owner := e.ownerFile(runID)
	for _, d := range []string{filepath.Dir(dir), filepath.Dir(owner)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return gate.Result{}, err
		}
	}
	if err := os.WriteFile(owner, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return gate.Result{}, err
	}
	defer func() { _ = os.Remove(owner) }()
	if err := e.addScratch(ctx, dir, c.commit); err != nil {
		return gate.Result{}, fmt.Errorf("check out the tree to gate: %w", err)
	}
	defer func() { _ = e.removeScratch(ctx, dir) }()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return gate.Result{}, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return gate.Result{}, err
	}
	defer func() { _ = log.Close() }()
	spec := gate.Spec{Dir: dir, Commands: g.cmds, Timeout: g.Timeout, Log: log, MinDuration: g.MinDuration,
		Mark: gateMarker + runID, Scope: e.gateScope(), Reaper: e.GateReaper}
	if opts.Sandbox != nil {
		pol, stop, err := sandbox.Prepare(ctx, dir, "exec", "sh", false, opts.Sandbox)
		defer stop()
		if err != nil {
			return gate.Result{}, fmt.Errorf("sandbox the gate: %w", err)
		}
		spec.Wrap = func(argv []string) ([]string, error) { return sandbox.Wrap(argv, pol) }
	}
	return gate.Run(ctx, spec)
}

// scratchDir is where gate run id checks its tree out: beside the task
// worktrees, outside .git (which the sandbox hides and tools treat as
// special), so the gate sees an ordinary checkout.
func (e *Gates) scratchDir(id string) (string, error) {
	root, err := session.DefaultWorktreeRoot(e.Repo)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".gate-"+id), nil
}

// addScratch checks commit out at dir, the scratch worktree of a run. A
// git worktree add running at the same moment (the train's other gates,
// another accept's, a lazy start) makes git fail on its half-written
// record under .git/worktrees ("failed to read .../commondir"), so a
// failed checkout is cleaned up and tried again a few times.
func (e *Gates) addScratch(ctx context.Context, dir, commit string) error {
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		_ = os.RemoveAll(dir)
		err := e.git().AddDetached(ctx, e.Dir(), dir, commit)
		if err == nil {
			return nil
		}
		_ = e.removeScratch(ctx, dir)
		if wait > 400*time.Millisecond {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// removeScratch removes the scratch worktree at dir and git's record of
// it, whatever a killed git worktree add left: git refuses to remove a
// worktree it cannot validate (its .git file not written yet, the record
// locked "initializing"), so then the directory goes first, and after it
// git's record of a worktree whose directory is gone.
func (e *Gates) removeScratch(ctx context.Context, dir string) error {
	ctx = context.WithoutCancel(ctx)
	if e.git().RemoveScratch(ctx, e.Dir(), dir) == nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	_ = e.git().RemoveScratch(ctx, e.Dir(), dir) // "not a working tree" when git never recorded it
	return nil
}

// ownerFile names the process that runs gate run id.
func (e *Gates) ownerFile(id string) string {
	return e.Repo.LazyDir("tmp", "gate-"+id+".pid")
}

// recordGate adds run to the task's gate record.
func (e *Gates) recordGate(ctx context.Context, id string, run task.GateRun) error {
	reason := "passed on " + short(run.Tree)
	if !run.Passed {
		reason = "failed: " + session.OneLine(run.Failed+" "+run.Error+" "+run.Refused)
	}
	_, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Gate == nil {
			s.Task.Gate = &task.GateRecord{}
		}
		s.Task.Gate.AddRun(run)
		return &task.Op{Name: "gate", Actor: e.Actor, Reason: reason}, nil
	})
	return err
}

// GateError says the gate did not pass: nothing was merged.
type GateError struct {
	Task string
	Run  task.GateRun
	// Fixing says the failure went to the agent as feedback and the task
	// re-enters the queue after its turn (round Round of Max).
	Fixing     bool
	Round, Max int
	// Batch is how a batched train isolated the task (nil: it was gated
	// on its own).
	Batch *task.BatchOutcome
}

func (g *GateError) Error() string {
	what := "the gate did not pass"
	switch r := g.Run; {
	case r.Error != "":
		what = "the gate could not run: " + r.Error
	case r.Refused != "":
		what = "the gate did not pass: " + r.Refused
	case r.Failed != "":
		what = "the gate failed: " + describeFailure(r)
	}
	if g.Batch != nil {
		what += " (" + g.Batch.String() + ")"
	}
	next := fmt.Sprintf("lazy show %s has the output tail and %s the whole log; fix it (lazy unblock %s -m ...) and accept again, or land it anyway with lazy accept %s --skip-gate --reason ...", g.Task, g.Run.Log, g.Task, g.Task)
	if g.Fixing {
		next = fmt.Sprintf("the failure went to the agent (fix round %d of %d) and the task re-enters the queue after its turn; lazy show %s follows it", g.Round, g.Max, g.Task)
	}
	return fmt.Sprintf("accept %s: %s; nothing was merged: %s", g.Task, what, next)
}

// describeFailure says how the failing command of r ended.
func describeFailure(r task.GateRun) string {
	cmd := sanitize.Field(r.Failed)
	for _, c := range r.Commands {
		if c.Cmd != r.Failed {
			continue
		}
		switch {
		case c.TimedOut:
			return fmt.Sprintf("%q did not finish within the gate's timeout (lazy.gate.timeout)", cmd)
		case c.Missing:
			return fmt.Sprintf("%q was not found (exit 127)", cmd)
		case c.Exit < 0:
			return fmt.Sprintf("%q was killed", cmd)
		default:
			return fmt.Sprintf("%q exited %d", cmd, c.Exit)
		}
	}
	return fmt.Sprintf("%q failed", cmd)
}

// gateFeedback is what the agent is told about a failed run: the failing
// command, how it ended and its output's tail, sanitized and bounded.
func gateFeedback(into string, r task.GateRun) string {
	tail := r.Tail
	if len(tail) > 3000 {
		tail = tail[len(tail)-3000:]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lazy's merge gate ran the repository's checks on your work merged onto %s, and they failed, so nothing was merged.\n\n", into)
	switch {
	case r.Error != "":
		fmt.Fprintf(&b, "The gate could not run: %s\n", sanitize.Field(r.Error))
	case r.Refused != "":
		fmt.Fprintf(&b, "The gate did not pass: %s\n", sanitize.Field(r.Refused))
	default:
		fmt.Fprintf(&b, "Failing check: %s\n", describeFailure(r))
	}
	if strings.TrimSpace(tail) != "" {
		// The output is the candidate's (its tests, its scripts): quoted, so
		// it cannot pass for lazy's words.
		fmt.Fprintf(&b, "\nThe end of its output:\n\n%s\n", quote.Block(tail))
	}
	b.WriteString("\nFix the cause in this worktree and commit. lazy runs the gate again after your turn.")
	return b.String()
}

// gateTrailer is the squash commit's trailer naming the gate run that
// passed on its tree.
func gateTrailer(runID string, g *gatePlan) string {
	return fmt.Sprintf("Lazy-Gate: passed %s (%s from %s)\n", runID, words.Count(len(g.cmds), "command", "commands"), g.source)
}

// skipTrailer records a human's decision to land without the gate.
func skipTrailer(reason string) string {
	return "Lazy-Gate: skipped by human: " + session.OneLine(reason) + "\n"
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func sanitizeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = sanitize.Field(s)
	}
	return out
}

// gateMarker is the environment entry every process of a gate run
// inherits, so what leaves the run's process group is ended with it, and
// the run's leftovers can be found after its accept died.
const gateMarker = "LAZY_GATE_RUN="

// gateScopeEnv names the repository a gate run belongs to: two clones on
// one machine never take each other's gate processes for leftovers.
const gateScopeEnv = "LAZY_GATE_REPO"

func (e *Gates) gateScope() string {
	dir := e.Repo.LazyDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return gateScopeEnv + "=" + filepath.Clean(dir)
}

// SweepGateLeftovers ends what killed gate runs left behind: for each
// scratch worktree whose owner process is gone, the processes carrying
// its marker are killed and the worktree removed. It returns what it
// did, a line each.
func (e *Gates) SweepGateLeftovers(ctx context.Context) []string {
	owners, _ := filepath.Glob(e.Repo.LazyDir("tmp", "gate-*.pid"))
	var done []string
	for _, owner := range owners {
		b, err := os.ReadFile(owner)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 0 && proc.Alive(pid) {
			continue
		}
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(owner), "gate-"), ".pid")
		dir, err := e.scratchDir(id)
		if !task.ValidID(id) || err != nil {
			continue
		}
		killed := proc.KillMarked(gateMarker + id)
		_ = e.removeScratch(ctx, dir)
		_ = os.Remove(owner)
		done = append(done, fmt.Sprintf("removed the scratch worktree of gate run %s, whose accept died, and ended %d process(es) it left", id, len(killed)))
	}
	return done
}

// GateSurvivor is a process of a gate run that is still running after
// its run ended: it carries the run's mark, and no live lazy process
// runs that gate.
type GateSurvivor struct {
	PID int    `json:"pid"`
	Run string `json:"run"`
	// Cmd is its command line, escaped for display.
	Cmd string `json:"cmd"`
}

// GateSurvivors lists this repository's gate survivors: processes that
// carry a gate run's mark when that run is not in flight (its owner file
// gone, or its owner dead). A run ends what it started, so each is
// something that got past that: lazy doctor reports it and ends it.
func (e *Gates) GateSurvivors() []GateSurvivor {
	var out []GateSurvivor
	for run, pids := range proc.ByEnvStrict(strings.TrimSuffix(gateMarker, "="), e.gateScope()) {
		if e.gateInFlight(run) {
			continue
		}
		for _, pid := range pids {
			out = append(out, GateSurvivor{PID: pid, Run: sanitize.Field(run), Cmd: sanitize.Field(proc.Cmdline(pid))})
		}
	}
	slices.SortFunc(out, func(a, b GateSurvivor) int { return a.PID - b.PID })
	return out
}

// gateInFlight reports whether a live process runs gate run id.
func (e *Gates) gateInFlight(id string) bool {
	if !task.ValidID(id) {
		return false
	}
	b, err := os.ReadFile(e.ownerFile(id))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && pid > 0 && proc.Alive(pid)
}

// EndGateSurvivor ends survivor s if it still is one (the same run's
// mark, the run still not in flight) and reports whether it was ended.
func (e *Gates) EndGateSurvivor(s GateSurvivor) bool {
	if e.gateInFlight(s.Run) {
		return false
	}
	return len(proc.KillMarkedIn(gateMarker+s.Run, e.gateScope())) > 0
}

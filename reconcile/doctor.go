package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// pidList names processes for a person: "pid 41" or "pids 41, 42".
func pidList(pids []int) string {
	out := make([]string, len(pids))
	for i, p := range pids {
		out[i] = strconv.Itoa(p)
	}
	if len(out) == 1 {
		return "pid " + out[0]
	}
	return "pids " + strings.Join(out, ", ")
}

// Finding is one thing lazy doctor saw, and what it did about it.
type Finding struct {
	TaskID string `json:"task_id,omitempty"`
	Slug   string `json:"slug,omitempty"`
	// Kind names the problem: stranded-merge, dead-supervisor,
	// unrecorded-response, interrupted, stale-pairing, zombie,
	// sessionless-blocked, leftover-supervisor, merged-branch,
	// orphaned-worktree, missing-worktree, orphaned-protocol,
	// stale-ref-lock, stale-index-lock, stale-packed-refs-lock, orphaned-lock,
	// foreign-session, slug-conflict,
	// stray-turn, half-accepted-destination, orphaned-pack,
	// flagged-figure, interrupted-cleanup, left-accept-checkout,
	// kept-branch; the CLI adds gate-leftover and gate-survivor.
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	// Action is what was done (or, in a dry run, what would be); empty
	// when the finding needs a human.
	Action   string `json:"action,omitempty"`
	Repaired bool   `json:"repaired"`
	Error    string `json:"error,omitempty"`
	// Note marks a finding that needs neither a repair nor a human: what
	// lazy already does about it (Action) is all there is to do, so it
	// is not a problem left.
	Note bool `json:"note,omitempty"`
}

// StaleRefLock is the store's StaleLockAge, which pull's lock error names: how
// old a ref's .lock file must be before doctor takes it for a killed
// process's leftover.
const StaleRefLock = wire.StaleRefLock

// Doctor reports what is wrong in the repository (or, when only is a task
// id, with that task) and, when repair is set, repairs what the
// reconciler would: it runs the sweeps, prunes worktree entries whose
// directories are gone, removes clean worktrees of finished tasks (their
// branches stay), and removes stale lock and protocol files. A dirty
// worktree or an unmerged branch is only ever reported.
func (r *Reconciler) Doctor(ctx context.Context, entries []task.Entry, only string, repair bool) ([]Finding, error) {
	d := r.doctor()
	// Orphaned packs go first: their objects are invisible, so records
	// read before the repair would look corrupt.
	packs := d.checkPacks(ctx, repair)
	for _, f := range packs {
		if f.Repaired {
			fresh, err := r.store().List()
			if err != nil {
				return nil, err
			}
			entries = fresh
			break
		}
	}
	if only != "" {
		var kept []task.Entry
		for _, e := range entries {
			if e.ID == only {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	byID := map[string]*task.Entry{}
	for i := range entries {
		byID[entries[i].ID] = &entries[i]
	}
	// Stale ref locks go first: while one exists, no repair of its task
	// can be written; and git's own stale locks before the sweeps, which
	// give a stranded accept's stash back through the index and delete
	// merged branches through packed-refs.
	findings := packs
	findings = append(findings, d.checkRefLocks(byID, only, repair)...)
	if only == "" {
		findings = append(findings, d.checkGitLocks(repair)...)
	}
	index := map[string]int{} // task id -> its finding
	for i := range entries {
		f := r.diagnose(ctx, &entries[i])
		if f == nil {
			continue
		}
		index[f.TaskID] = len(findings)
		findings = append(findings, *f)
	}
	if repair {
		actions, err := r.Sweep(ctx, entries)
		for _, a := range actions {
			i, ok := index[a.TaskID]
			if !ok {
				kind := "merged-branch"
				if a.From == a.To {
					kind = "leftover-supervisor"
				}
				i = len(findings)
				index[a.TaskID] = i
				findings = append(findings, Finding{TaskID: a.TaskID, Slug: a.Slug, Kind: kind, Detail: a.Why})
			}
			f := &findings[i]
			f.Repaired = true
			f.Action = joinAction(f.Action, a)
		}
		if err != nil {
			findings = append(findings, Finding{Kind: "reconcile-error", Detail: "a sweep failed", Error: err.Error()})
		}
	}
	findings = append(findings, d.checkSlugs(ctx, entries, repair)...)
	findings = append(findings, d.checkStrays(ctx, entries, repair)...)
	findings = append(findings, d.checkOrphanSlugs(ctx, only, repair)...)
	// An accept killed during its cleanup is finished first, from its
	// record, so what it left is not reported again below.
	cleanups, covered := d.checkCleanups(ctx, only, repair)
	findings = append(findings, cleanups...)
	findings = append(findings, d.checkLeftCheckouts(ctx, only, repair)...)
	findings = append(findings, d.checkWorktrees(ctx, byID, only, repair, covered)...)
	findings = append(findings, d.checkLegacyWorktrees(ctx, entries, repair)...)
	findings = append(findings, d.checkFiles(byID, only, repair)...)
	findings = append(findings, d.checkTokens(only, repair)...)
	findings = append(findings, d.checkFigures(ctx, entries, repair)...)
	return findings, nil
}

// doctor owns lazy doctor's checks beyond the per-task judgement it
// shares with the sweeps (Reconciler.diagnose): slug refs, stray turn
// processes, worktrees and branches left behind, orphaned packs, stale
// lock files, files and tokens of tasks that are gone, flagged figures,
// and accepts killed during their cleanup. It finds and, when asked,
// repairs them. It holds only what those checks read and repair through,
// never the sweeps or their memory across passes.
type doctor struct {
	env *wire.Env
	// git reads whether a worktree is dirty.
	git Git
	// snapshots loads task records, counted as the reconciler's loads.
	snapshots snapshotLoader
	now       func() time.Time
	// worktreeDir is where a legacy worktree moves (lazy.worktreeDir).
	worktreeDir string
}

// doctor returns the reconciler's doctor checks, made for one run.
func (r *Reconciler) doctor() *doctor {
	return &doctor{env: r.Env, git: r.git(), snapshots: r, now: r.now, worktreeDir: r.WorktreeDir}
}

// store is the task store through the port the capabilities share.
func (d *doctor) store() task.Store { return d.env.Env.Store }

// checkSlugs finds tasks their slug does not name (two tasks with one
// slug, a missing or stale slug ref) and, when repairing, renames the
// task that does not own the slug (slug-<6 id hex>, the name a pull
// would give it) or re-points the ref.
func (d *doctor) checkSlugs(ctx context.Context, entries []task.Entry, repair bool) []Finding {
	var out []Finding
	for _, p := range d.env.Store.Slugs().CheckSlugs(entries) {
		f := Finding{TaskID: p.ID, Slug: p.Slug, Kind: "slug-conflict", Detail: p.Detail(), Action: "would " + p.Action()}
		if repair {
			if err := d.env.Store.Slugs().RepairSlug(ctx, p); err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = p.Action(), true
				f.Action = strings.Replace(f.Action, "rename it", "renamed it", 1)
				f.Action = strings.Replace(f.Action, "point ", "pointed ", 1)
			}
		}
		out = append(out, f)
	}
	return out
}

// remove deletes the file a finding is about, when repairing, and says
// what became of it.
func (f *Finding) remove(path string, repair bool) {
	if !repair {
		return
	}
	if err := os.Remove(path); err != nil {
		f.Error = err.Error()
		return
	}
	f.Action, f.Repaired = "removed it", true
}

func joinAction(prev string, a Action) string {
	s := fmt.Sprintf("%s -> %s: %s", a.From, a.To, a.Why)
	if a.From == a.To {
		s = a.Why
	}
	if prev == "" || strings.HasPrefix(prev, "would ") {
		return s
	}
	return prev + "; " + s
}

// diagnose inspects one task the way the sweeps would, without acting.
func (r *Reconciler) diagnose(ctx context.Context, e *task.Entry) *Finding {
	if e.Err != nil {
		return &Finding{TaskID: e.ID, Kind: "corrupt-record", Detail: e.Err.Error()}
	}
	if bytes.Contains(e.JSON, []byte(`"merge_refused":`)) {
		if s, err := e.Summary(); err == nil && s.Refused > 0 {
			return &Finding{TaskID: e.ID, Slug: s.Slug, Kind: "merge-refused",
				Detail: fmt.Sprintf("%s refused when two machines' histories were merged; lazy show %s lists %s", words.Count(s.Refused, "operation was", "operations were"), s.Slug, words.Plural(s.Refused, "it", "them"))}
		}
	}
	if !sweepable(e) && !e.Status.IsTerminal() {
		return nil
	}
	pd := r.proto(e.ID)
	if e.Status.IsTerminal() {
		if _, err := os.Stat(string(pd)); err != nil {
			return nil // the common case, checked before loading anything
		}
	}
	sn, err := r.store().Load(e.ID)
	if err != nil {
		return &Finding{TaskID: e.ID, Kind: "corrupt-record", Detail: err.Error()}
	}
	f := &Finding{TaskID: e.ID, Slug: sn.Task.Slug}
	ours := r.Env.Owns(sn)
	switch sn.Task.Status {
	case machine.Working:
		if !ours {
			return r.foreign(sn, f)
		}
		if _, ok := currentResponse(pd, sn.Session); ok {
			f.Kind, f.Detail, f.Action = "unrecorded-response", "the turn ended but its response is not recorded yet", "would record the turn and park the task"
			return f
		}
		st := supervisorStatus(pd, sn.Session)
		if r.supervised(e.ID) || r.now().Sub(lastStart(sn, pd)) < r.grace() {
			return nil
		}
		f.Kind, f.Detail, f.Action = "dead-supervisor", "working, but no supervisor runs its turn", "would mark it interrupted"
		if st.PID > 0 {
			f.Detail = fmt.Sprintf("working, but its supervisor (pid %d) is gone without a response", st.PID)
		}
	case machine.Interrupted:
		if !ours {
			return r.foreign(sn, f)
		}
		f.Kind = "interrupted"
		f.Detail = fmt.Sprintf("%s (%d consecutive)", sn.Session.InterruptReason, sn.Session.ConsecutiveInterruptions)
		switch why := r.lifecycle().AutoResumeRefusal(sn); {
		case why != "":
			f.Detail += "; not auto-resumed: " + why
			f.Action = ""
		case r.NoAutoResume || r.Env.Launch == nil:
			f.Detail += "; auto-resume is off (lazy.autoResume)"
		default:
			f.Action = "would auto-resume it"
		}
	case machine.Pairing:
		var p proto.Pairing
		if !ours {
			return r.foreign(sn, f)
		}
		if pd.Read(proto.PairingFile, &p) == nil && alive(p.PID) {
			return nil
		}
		f.Kind, f.Detail, f.Action = "stale-pairing", "pairing, but the pairing process is gone", "would park it"
	case machine.Merging:
		unlock, err := r.Env.TryLockTask(e.ID)
		if errors.Is(err, flock.ErrHeld) {
			return nil // an accept is in flight
		}
		if err == nil {
			unlock()
		}
		if sn.Task.ForgePending() && sn.Task.Forge.MergeRequested != nil {
			return nil // the forge merges it; the daemon's forge sync follows
		}
		if err := r.Env.Landing().Recovery().ForeignMerge(sn); err != nil {
			// Not an accept this machine began: reported, never acted on.
			f.Kind, f.Detail, f.Action = "foreign-merge", err.Error(), ""
			return f
		}
		landed, _ := MergeLanded(ctx, r.Env.RepoDir, sn)
		f.Kind, f.Detail, f.Action = "stranded-merge", "merging, but no accept is running", "would restore the status before the accept"
		if landed {
			f.Action = "would finish it: the squash merge landed"
		}
		if d := r.Env.Landing().Recovery().DescribeDestination(ctx, sn); d != "" {
			f.Detail += "; " + d
		}
	case machine.Zombie:
		f.Kind, f.Detail, f.Action = "zombie", "its branch was found merged but the task was not finished", "would complete it"
	case machine.Blocked:
		f.Kind, f.Detail, f.Action = "sessionless-blocked", "blocked, but it never had a session", "would move it to backlog"
	default: // terminal, with protocol files
		f.Kind, f.Detail, f.Action = "leftover-supervisor", "a finished task still has protocol files", "would stop its supervisor and remove them"
		var st proto.Status
		if pd.Read(proto.StatusFile, &st) == nil && isSupervisor(st.PID, e.ID) {
			f.Detail = fmt.Sprintf("a finished task's supervisor (pid %d) is still running", st.PID)
		}
	}
	return f
}

// checkStrays finds turn processes lazy does not account for: agents
// (processes carrying a task's turn marker) with no supervisor holding the
// task, and supervisors of tasks that are parked. A repair ends them,
// under the task lock and after judging again.
func (d *doctor) checkStrays(ctx context.Context, entries []task.Entry, repair bool) []Finding {
	marked := proc.ByEnvIn(proto.TurnEnv, proto.TurnScope(d.env.Repo.LazyDir()))
	var findings []Finding
	for i := range entries {
		e := &entries[i]
		if e.Err != nil {
			continue
		}
		pids := marked[e.ID]
		_, running := d.env.Supervisors().Running(e.ID)
		active := e.Status == machine.Working || e.Status == machine.Merging
		var detail string
		switch {
		case running && !active && !e.Status.IsTerminal():
			detail = fmt.Sprintf("%s, but a supervisor of it is still running", e.Status)
		case !running && len(pids) > 0 && e.Status != machine.Working:
			// A working task's leftovers are ended by its interrupt.
			detail = fmt.Sprintf("%s, but processes of its turn are still running with no supervisor (the agent, or what it left behind): %s", e.Status, describePids(pids))
		default:
			continue
		}
		f := Finding{TaskID: e.ID, Kind: "stray-turn", Detail: detail, Action: "would end them"}
		if s, err := e.Summary(); err == nil {
			f.Slug = s.Slug
		}
		if repair {
			if err := d.endStrays(ctx, e.ID); err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = "ended them", true
			}
		}
		findings = append(findings, f)
	}
	return findings
}

// endStrays ends a parked task's turn processes after judging again under
// its lock: a turn launched meanwhile is working, and left alone.
func (d *doctor) endStrays(ctx context.Context, id string) error {
	unlock, err := d.env.LockTask(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	sn, err := d.store().Load(id)
	if err != nil {
		return err
	}
	if sn.Task.Status == machine.Working || sn.Task.Status == machine.Merging {
		return nil
	}
	_, err = d.env.Supervisors().StopTurn(ctx, id)
	return err
}

// OrphanSlugAge is how old a slug reservation naming no task must be
// before doctor takes it for the leftover of a killed create.
const OrphanSlugAge = time.Minute

// checkOrphanSlugs finds slug reservations that name no task (a create killed
// between reserving the slug and writing the task) and releases them,
// compare-and-delete, so a create racing the repair keeps its own.
func (d *doctor) checkOrphanSlugs(ctx context.Context, only string, repair bool) []Finding {
	if only != "" {
		return nil
	}
	orphans, err := d.env.Store.Slugs().OrphanedSlugs(OrphanSlugAge)
	if err != nil {
		return []Finding{{Kind: "orphaned-slug", Detail: "could not list slug reservations", Error: err.Error()}}
	}
	var findings []Finding
	for _, o := range orphans {
		f := Finding{Slug: o.Slug, Kind: "orphaned-slug", Detail: fmt.Sprintf("the slug %s is reserved (%s) but names no task: a create died halfway", o.Slug, o.Ref), Action: "would release it"}
		if repair {
			if err := gitcli.New(d.env.Repo.CommonDir, "update-ref", "-d", o.Ref, o.Hash.String()).Run(ctx); err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = "released it", true
			}
		}
		findings = append(findings, f)
	}
	return findings
}

// foreign reports a task whose record claims a session of this host that
// this machine never started: crafted on another machine (and fetched) or
// left by lost local state. Nothing acts on it; a human decides.
func (r *Reconciler) foreign(sn *task.Snapshot, f *Finding) *Finding {
	if !r.Env.Foreign(sn) {
		return nil // another host's session: that host judges it
	}
	f.Kind = "foreign-session"
	f.Detail = fmt.Sprintf("%s, and its record says this host (%s) runs its session, but this machine never started it (a record written elsewhere, or lost local state); lazy will not run, stop or delete anything for it: take it over with lazy start --take-over %s, or close it",
		sn.Task.Status, sn.Session.Host, sn.Task.Slug)
	return f
}

// checkWorktrees reports lazy worktrees that no unfinished task owns;
// covered are worktrees and branches an interrupted-cleanup finding
// already names (in a dry run, where they are still there).
func (d *doctor) checkWorktrees(ctx context.Context, byID map[string]*task.Entry, only string, repair bool, covered map[string]bool) []Finding {
	repoDir := d.env.RepoDir
	out, err := gitcli.New(repoDir, "worktree", "list", "--porcelain").String(ctx)
	if err != nil {
		return []Finding{{Kind: "worktree-error", Detail: "cannot list worktrees", Error: err.Error()}}
	}
	slugs := map[string]*task.Summary{}
	for _, e := range byID {
		if s, err := e.Summary(); err == nil {
			slugs[s.Slug] = s
		}
	}
	var findings []Finding
	prune := false
	// freed are the branches whose worktree goes now (or would, in a dry
	// run): checkBranches then decides them in the same run.
	freed := map[string]bool{}
	for _, block := range strings.Split(out, "\n\n") {
		var path, branch string
		prunable := false
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "worktree "):
				path = strings.TrimPrefix(line, "worktree ")
			case strings.HasPrefix(line, "branch refs/heads/"):
				branch = strings.TrimPrefix(line, "branch refs/heads/")
			case strings.HasPrefix(line, "prunable"):
				prunable = true
			}
		}
		if !strings.HasPrefix(branch, "lazy/") || covered[path] {
			continue
		}
		task := slugs[strings.TrimPrefix(branch, "lazy/")]
		if only != "" && (task == nil || task.ID != only) {
			continue
		}
		f := Finding{Detail: path}
		if task != nil {
			f.TaskID, f.Slug = task.ID, task.Slug
		}
		switch {
		case prunable:
			f.Kind, f.Detail = "missing-worktree", "git records a worktree at "+path+" but the directory is gone"
			f.Action = "would prune the entry (the branch " + branch + " is decided on its own)"
			freed[branch] = true
			if repair {
				prune = true
				f.Action, f.Repaired = "pruned the entry (the branch "+branch+" is decided on its own)", true
			}
		case task == nil && only == "":
			f.Kind, f.Detail = "orphaned-worktree", fmt.Sprintf("%s (branch %s) belongs to no task; remove it yourself when its work is not needed: git worktree remove %s", path, branch, path)
		case task != nil && task.Status == machine.Backlog:
			// A backlog task owns no worktree: this one was left by a start
			// that failed after creating it (or made by hand). Its branch
			// may hold work, so lazy only reports it.
			f.Kind = "orphaned-worktree"
			f.Detail = fmt.Sprintf("%s (branch %s) belongs to no session: %s is in backlog; remove it when its work is not needed (git worktree remove %s), then lazy start %s", path, branch, task.Slug, path, task.Slug)
		case task != nil && task.Status.IsTerminal():
			f.Kind = "orphaned-worktree"
			f.Detail = fmt.Sprintf("%s is still checked out although the task is %s", path, task.Status)
			dirty, derr := d.git.Dirty(ctx, path)
			if derr != nil || dirty {
				f.Detail += "; it has uncommitted changes, so lazy leaves it, and its branch " + branch + " with it (inspect it, then git worktree remove --force " + path + ")"
				break
			}
			if ok, why := d.finishConfirmed(ctx, task.ID, branch); !ok {
				f.Detail += "; lazy leaves it, and its branch " + branch + ", because this machine cannot confirm that status (" + why + "): remove it yourself once you have checked (git worktree remove " + path + ")"
				break
			}
			f.Action = "would remove the clean worktree (its branch " + branch + " is decided on its own)"
			freed[branch] = true
			if repair {
				if err := gitcli.New(repoDir, "worktree", "remove", path).Run(ctx); err != nil {
					f.Error = err.Error()
					delete(freed, branch)
				} else {
					f.Action, f.Repaired = "removed the clean worktree (its branch "+branch+" is decided on its own)", true
				}
			}
		default:
			continue
		}
		findings = append(findings, f)
	}
	if prune {
		if err := gitcli.New(repoDir, "worktree", "prune").Run(ctx); err != nil {
			findings = append(findings, Finding{Kind: "worktree-error", Detail: "git worktree prune failed", Error: err.Error()})
		}
	}
	busy := checkedOut(out)
	for b := range freed {
		delete(busy, b)
	}
	for b := range covered {
		busy[b] = true // named by its interrupted cleanup
	}
	return append(findings, d.checkBranches(ctx, slugs, busy, only, repair)...)
}

// finishConfirmed reports whether this machine can confirm the terminal
// status of task id before cleanup acts on it, and why not: a completion
// needs the merge of branch to be visible here (gitstore.VerifyAccepted),
// a close or reject must have been made here. A status pulled from a
// remote is data anyone with push access could have written.
func (d *doctor) finishConfirmed(ctx context.Context, id, branch string) (bool, string) {
	sn, err := d.snapshots.load(id)
	if err != nil {
		return false, "its record cannot be read"
	}
	switch sn.Task.Status {
	case machine.Complete:
		return d.env.Store.Provenance().VerifyAccepted(ctx, sn, branch)
	case machine.Abandoned:
		if d.env.Store.Provenance().StatusMadeHere(sn) {
			return true, ""
		}
		return false, "it was closed on another machine"
	}
	return false, "it is " + string(sn.Task.Status)
}

// checkLegacyWorktrees finds parked tasks of this machine whose worktree
// is where lazy used to put them, inside the git directory (Claude Code
// edits nothing there), and when repairing moves each to where new
// worktrees go (wire.MoveWorktree). A task whose turn runs is left for a
// later doctor.
func (d *doctor) checkLegacyWorktrees(ctx context.Context, entries []task.Entry, repair bool) []Finding {
	var out []Finding
	for _, e := range entries {
		switch e.Status {
		case machine.Blocked, machine.Conflict, machine.Interrupted:
		default:
			continue
		}
		sn, err := d.snapshots.load(e.ID)
		if err != nil || sn.Session == nil {
			continue
		}
		local, err := d.env.Owned(sn)
		if err != nil || !d.env.Lifecycle().InGitDir(local.Worktree) {
			continue
		}
		f := Finding{TaskID: e.ID, Slug: sn.Task.Slug, Kind: "legacy-worktree",
			Detail: local.Worktree + " is inside the git directory, where Claude Code edits nothing and Codex may not write",
			Action: "would move it to where new worktrees go (git worktree move; its uncommitted changes and agent conversation move with it)"}
		if repair {
			to, err := d.env.Lifecycle().MoveWorktree(ctx, e.ID, d.worktreeDir)
			if err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = "moved it to "+to, true
			}
		}
		out = append(out, f)
	}
	return out
}

// checkedOut lists the branches checked out in some worktree.
func checkedOut(porcelain string) map[string]bool {
	m := map[string]bool{}
	for _, line := range strings.Split(porcelain, "\n") {
		if b, ok := strings.CutPrefix(line, "branch refs/heads/"); ok {
			m[b] = true
		}
	}
	return m
}

// checkBranches finds branches of accepted tasks that the accept did not
// get to delete (killed during its cleanup): the merge is recorded, so the
// branch goes, its tip named in the finding.
func (d *doctor) checkBranches(ctx context.Context, slugs map[string]*task.Summary, busy map[string]bool, only string, repair bool) []Finding {
	repoDir := d.env.RepoDir
	out, err := gitcli.New(repoDir, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/lazy/").String(ctx)
	if err != nil || out == "" {
		return nil
	}
	var findings []Finding
	for _, line := range strings.Split(out, "\n") {
		branch, tip, _ := strings.Cut(line, " ")
		sum := slugs[strings.TrimPrefix(branch, "lazy/")]
		if sum == nil || sum.Status != machine.Complete || sum.Outcome != task.OutcomeAccepted || busy[branch] || (only != "" && sum.ID != only) {
			continue
		}
		// A record says accepted; only a branch this machine's own
		// session made is deleted on its word (a record from a remote
		// could name any slug). Another is not lazy's to judge.
		if local, err := d.env.Sessions().Load(sum.ID); err != nil || local.Branch != branch {
			continue
		}
		// And only when this machine can see the merge: the record's
		// completion may have been pulled from anywhere. A branch of
		// its own lazy keeps says why.
		if ok, why := d.finishConfirmed(ctx, sum.ID, branch); !ok {
			findings = append(findings, Finding{TaskID: sum.ID, Slug: sum.Slug, Kind: "kept-branch",
				Detail: fmt.Sprintf("the branch %s (at %s) of the accepted task stays: this machine cannot confirm the merge (%s); delete it yourself once you have checked (git branch -D %s)", branch, tip, why, branch)})
			continue
		}
		f := Finding{TaskID: sum.ID, Slug: sum.Slug, Kind: "leftover-branch",
			Detail: fmt.Sprintf("the branch %s (at %s) of an accepted task was not deleted", branch, tip), Action: "would delete it (git branch " + branch + " " + tip + " recreates it)"}
		if repair {
			if err := gitcli.New(repoDir, "branch", "-D", "--quiet", branch).Run(ctx); err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = "deleted it (git branch "+branch+" "+tip+" recreates it)", true
			}
		}
		findings = append(findings, f)
	}
	return findings
}

// OrphanPackAge is how old a pack without its index must be before
// doctor indexes it: git renames a new pack's .pack an instant before its
// .idx.
const OrphanPackAge = time.Minute

// checkPacks finds packs whose index is missing (see
// gitstore.OrphanPack) and, when repairing, writes the index with git
// index-pack, which makes their objects readable again.
func (d *doctor) checkPacks(ctx context.Context, repair bool) []Finding {
	packs, err := d.env.Store.Housekeeping().OrphanPacks(d.now(), OrphanPackAge)
	if err != nil {
		return []Finding{{Kind: "orphaned-pack", Detail: "could not list the repository's packs", Error: err.Error()}}
	}
	var findings []Finding
	for _, p := range packs {
		f := Finding{Kind: "orphaned-pack", Detail: fmt.Sprintf("%s has no index, so git and lazy cannot read any object in it (overlapping git repacks leave this behind)", p.Path), Action: "would index it (git index-pack)"}
		if repair {
			if err := d.env.Store.Housekeeping().IndexPack(ctx, p); err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = "indexed it (git index-pack)", true
			}
		}
		findings = append(findings, f)
	}
	return findings
}

// checkRefLocks finds ref .lock files a killed process left behind:
// each blocks every update of its ref until removed.
func (d *doctor) checkRefLocks(byID map[string]*task.Entry, only string, repair bool) []Finding {
	var findings []Finding
	repo := d.env.Repo
	// Collect first, act after: the walk only reads. refs/lazy-remotes
	// holds the remote-tracking refs a pull's git fetch writes; a fetch
	// killed mid-update leaves its lock there, and every pull after it
	// fails until the lock is gone.
	var locks []string
	// refs/heads holds the branches accepts move: a git killed as it moved
	// one (an accept's fast-forward of its target) leaves its lock, and no
	// accept lands there after it.
	for _, sub := range []string{"lazy", "lazy-remotes", "heads"} {
		_ = filepath.WalkDir(filepath.Join(repo.CommonDir, "refs", sub), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".lock") {
				locks = append(locks, path)
			}
			return nil
		})
	}
	for _, path := range locks {
		id := strings.TrimSuffix(filepath.Base(path), ".lock")
		if only != "" && id != only {
			continue
		}
		info, err := os.Lstat(path)
		if err != nil || d.now().Sub(info.ModTime()) < StaleRefLock {
			continue
		}
		f := Finding{Kind: "stale-ref-lock", Detail: fmt.Sprintf("%s is %s old; it blocks every update of that ref", path, d.now().Sub(info.ModTime()).Round(time.Second)), Action: "would remove it"}
		if e := byID[id]; e != nil {
			f.TaskID = id
			if s, err := e.Summary(); err == nil {
				f.Slug = s.Slug
			}
		}
		f.remove(path, repair)
		findings = append(findings, f)
	}
	return findings
}

// checkGitLocks finds the repository-wide lock files a killed git left.
// The main checkout's index.lock (a SIGKILLed accept's git merge or stash
// apply): while it exists git writes no index there, so no accept can
// merge and a stranded accept cannot give the user's stash back. And
// packed-refs.lock (a killed gc, pack-refs, or deletion of a packed
// branch): while it exists no packed ref can be deleted or rewritten, so
// an accepted task's branch stays. And HEAD.lock and ORIG_HEAD.lock of
// the main checkout (an accept's fast-forward killed): while they exist
// git moves nothing there. git never removes any by itself;
// each is taken for a leftover at the age of a stale ref lock, which no
// git operation on them comes near.
func (d *doctor) checkGitLocks(repair bool) []Finding {
	repo := d.env.Repo
	var findings []Finding
	for _, l := range []struct{ path, kind, why string }{
		{filepath.Join(repo.GitDir, "index.lock"), "stale-index-lock", "git writes no index in that checkout while it exists (no accept can merge there)"},
		{filepath.Join(repo.CommonDir, "packed-refs.lock"), "stale-packed-refs-lock", "git deletes or rewrites no packed ref while it exists (an accepted task's branch cannot be deleted)"},
		// A git killed as it moved the checked-out branch (an accept's
		// fast-forward or commit): no accept can land there after it.
		{filepath.Join(repo.GitDir, "HEAD.lock"), "stale-ref-lock", "git moves no HEAD in that checkout while it exists (no accept can land there)"},
		{filepath.Join(repo.GitDir, "ORIG_HEAD.lock"), "stale-ref-lock", "git merges and resets nothing in that checkout while it exists (no accept can land there)"},
	} {
		info, err := os.Lstat(l.path)
		if err != nil || !info.Mode().IsRegular() || d.now().Sub(info.ModTime()) < StaleRefLock {
			continue
		}
		f := Finding{Kind: l.kind, Detail: fmt.Sprintf("%s is %s old; %s", l.path, d.now().Sub(info.ModTime()).Round(time.Second), l.why), Action: "would remove it"}
		f.remove(l.path, repair)
		findings = append(findings, f)
	}
	return findings
}

// checkFiles finds task locks, protocol directories and agent logs of
// tasks that no longer exist.
func (d *doctor) checkFiles(byID map[string]*task.Entry, only string, repair bool) []Finding {
	if only != "" {
		return nil
	}
	var findings []Finding
	repo := d.env.Repo
	for _, dir := range []struct{ path, prefix, suffix, kind string }{
		{repo.LazyDir("locks"), "task-", ".lock", "orphaned-lock"},
		{repo.LazyDir("proto"), "", "", "orphaned-protocol"},
		// A finished task keeps its agent log; a task that no longer
		// exists at all (its ref deleted) does not need one.
		{repo.LazyDir("logs"), "", "", "orphaned-log"},
	} {
		ents, err := os.ReadDir(dir.path)
		if err != nil {
			continue
		}
		for _, ent := range ents {
			id := strings.TrimSuffix(strings.TrimPrefix(ent.Name(), dir.prefix), dir.suffix)
			if !task.ValidID(id) || byID[id] != nil {
				continue
			}
			path := filepath.Join(dir.path, ent.Name())
			f := Finding{TaskID: id, Kind: dir.kind, Detail: path + " belongs to no task", Action: "would remove it"}
			did := "removed it"
			var st proto.Status
			if dir.kind == "orphaned-protocol" && proto.Dir(path).Read(proto.StatusFile, &st) == nil && isSupervisor(st.PID, id) {
				f.Detail += fmt.Sprintf(", but its supervisor (pid %d) still runs", st.PID)
				f.Action, did = "would stop the supervisor and remove it", "stopped the supervisor and removed it"
			}
			if repair {
				if dir.kind == "orphaned-lock" {
					l, err := flock.TryLock(path)
					if err != nil {
						continue // in use after all
					}
					_ = l.Release()
				} else {
					stopSupervisor(d.env, st.PID, id)
					killGroup(st.AgentPID)
				}
				if err := os.RemoveAll(path); err != nil {
					f.Error = err.Error()
				} else {
					f.Action, f.Repaired = did, true
				}
			}
			findings = append(findings, f)
		}
	}
	return findings
}

// checkTokens removes MCP token records whose turn is over (a supervisor
// that was killed never revoked its token). They are already refused, as
// the daemon accepts a token only while its turn runs; this is tidying.
func (d *doctor) checkTokens(only string, repair bool) []Finding {
	dir := d.env.Repo.LazyDir("tokens")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var findings []Finding
	for _, ent := range ents {
		path := filepath.Join(dir, ent.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var id struct {
			Task    string `json:"task"`
			Session string `json:"session"`
			Turn    int    `json:"turn"`
		}
		_ = json.Unmarshal(b, &id)
		if only != "" && id.Task != only {
			continue
		}
		if sn, err := d.store().Load(id.Task); err == nil && sn.Task.Status == machine.Working && sn.Session != nil && sn.Session.ID == id.Session && sn.Session.Turn == id.Turn {
			continue // its turn runs
		}
		f := Finding{TaskID: id.Task, Kind: "stale-token", Detail: "an MCP token record of a turn that has ended (" + ent.Name() + ")", Action: "would remove it"}
		f.remove(path, repair)
		findings = append(findings, f)
	}
	return findings
}

// describePids names each process by its pid and command line, escaped.
func describePids(pids []int) string {
	parts := make([]string, len(pids))
	for i, pid := range pids {
		parts[i] = fmt.Sprintf("pid %d (%s)", pid, sanitize.Field(proc.Cmdline(pid)))
	}
	return strings.Join(parts, ", ")
}

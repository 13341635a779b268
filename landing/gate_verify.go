package landing

import (
	"errors"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/task"
)

// A gate run is evidence only on the machine that ran it: there lazy's
// own process waited for each command's exit and wrote what it saw under
// <common dir>/lazy/gate/runs, where no fetch and no task writes. The
// copy in the task's record travels to every clone and anyone who can
// push can write one (host id included), so every surface shows a run
// as this machine's only when its own record says the same, and as
// "remote, not verified here" otherwise. Nothing reads a record's run to
// skip a gate: reuse goes through this machine's pass marks alone
// (passedBefore).

// GateRuns is this machine's own record of the gate runs it made.
func (e *Gates) GateRuns() owned.GateRuns { return owned.GateRunsFor(e.Repo.LazyDir()) }

// saveLocalRun records run as this process saw it, before the task's
// record names it.
func (e *Gates) saveLocalRun(taskID string, run task.GateRun) error {
	r := owned.GateRun{ID: run.ID, TaskID: taskID, Target: run.Target, Base: run.Base, Tree: run.Tree,
		Passed: run.Passed, DurationMS: run.DurationMS, At: run.At, Commands: []owned.GateCommand{}}
	for _, c := range run.Commands {
		r.Commands = append(r.Commands, owned.GateCommand{Cmd: c.Cmd, Exit: c.Exit, DurationMS: c.DurationMS})
	}
	return e.GateRuns().Save(r)
}

// ranHere reports whether this machine made run r of task taskID, and
// its own record of it says what the task's record says: the tree and
// base, the verdict, and each command's exit. A run made before lazy
// kept these records counts when it passed and this machine's pass
// mark for its tree and commands names it.
func (e *Gates) ranHere(taskID string, r task.GateRun) bool {
	local, err := e.GateRuns().Load(r.ID)
	if errors.Is(err, owned.ErrNoGateRun) {
		if !r.Passed || len(r.Commands) == 0 {
			return false
		}
		cmds := make([]string, len(r.Commands))
		for i, c := range r.Commands {
			cmds[i] = c.Cmd
		}
		id, ok := e.passedBefore(r.Tree, cmds)
		return ok && id == r.ID
	}
	if err != nil || local.TaskID != taskID || local.Tree != r.Tree || local.Base != r.Base ||
		local.Target != r.Target || local.Passed != r.Passed || len(local.Commands) != len(r.Commands) {
		return false
	}
	for i, c := range local.Commands {
		if c.Cmd != r.Commands[i].Cmd || c.Exit != r.Commands[i].Exit {
			return false
		}
	}
	return true
}

// VerifyGate returns a copy of task taskID's gate record with each run's
// Origin set: GateHere when this machine ran it, GateRemote otherwise.
// nil for nil.
func (e *Gates) VerifyGate(taskID string, g *task.GateRecord) *task.GateRecord {
	if g == nil {
		return nil
	}
	c := g.Clone()
	for i := range c.Runs {
		c.Runs[i].Origin = task.GateRemote
		if e.ranHere(taskID, c.Runs[i]) {
			c.Runs[i].Origin = task.GateHere
		}
	}
	return c
}

// VerifySummary sets the origin of the gate run a task's summary shows
// (its newest), reading g, the task's gate record.
func (e *Gates) VerifySummary(taskID string, g *task.GateRecord, s *task.GateSummary) {
	if s == nil || s.Run == "" || g == nil {
		return
	}
	last := g.Last()
	if last == nil || last.ID != s.Run {
		return
	}
	s.Origin = task.GateRemote
	if e.ranHere(taskID, *last) {
		s.Origin = task.GateHere
	}
}

// VerifyDetail marks the origin of every gate run d shows (its gate
// record and its summary's newest run) for a surface that prints it.
func (e *Gates) VerifyDetail(d *task.Detail) {
	if d == nil || d.GateRecord == nil {
		return
	}
	d.GateRecord = e.VerifyGate(d.ID, d.GateRecord)
	if d.Gate != nil {
		g := *d.Gate
		e.VerifySummary(d.ID, d.GateRecord, &g)
		d.Gate = &g
	}
}

// remoteClaim says, when the task's record claims a passing run on tree
// that this machine did not make, that the claim counts for nothing here
// ("": no such claim).
func (e *Gates) remoteClaim(sn *task.Snapshot, tree string) string {
	if sn.Task.Gate == nil {
		return ""
	}
	for i := len(sn.Task.Gate.Runs) - 1; i >= 0; i-- {
		r := sn.Task.Gate.Runs[i]
		if r.Tree == tree && r.Passed && !e.ranHere(sn.Task.ID, r) {
			return "the task's record says gate run " + sanitize.Field(r.ID) + " passed on this tree; it is " + task.GateRemote + ", so the gate runs here"
		}
	}
	return ""
}

// VerifyGateSummary sets the origin of a listing's gate summary from the
// summary alone (no record read): GateHere when this machine's own
// record of the run names the task, the target and base, and the same
// verdict.
func (e *Gates) VerifyGateSummary(taskID string, s *task.GateSummary) {
	if s == nil || s.Run == "" {
		return
	}
	s.Origin = task.GateRemote
	local, err := e.GateRuns().Load(s.Run)
	if err == nil && local.TaskID == taskID && local.Base == s.Base && local.Target == s.Target && local.Passed == (s.State == task.GatePassed) {
		s.Origin = task.GateHere
	}
}

package landing

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// What stops a task between turns (a budget, a usage limit, a failed
// gate) is told where a person reads what happened: in the task's agent
// log, at the point it happened (lazy logs, watch, the web view), and in
// the summary of a command that waited for it (--wait, lazy wait).

// noteGate writes a failed gate run into the task's agent log.
func (e *Gates) noteGate(sn *task.Snapshot, run task.GateRun) {
	if run.Passed || run.Speculative {
		return // a speculative run failed on an assumption about the queue ahead
	}
	e.Note(sn, proto.LogLine{Kind: proto.NoteGate, Text: GateFailure(run), Next: GateNext(sn.Task.Slug, run), At: run.At})
}

// GateFailure says how a gate run failed: "the merge gate failed on
// main: "go test ./..." exited 1 (run 01J...)".
func GateFailure(r task.GateRun) string {
	what := "the merge gate did not pass"
	switch {
	case r.Error != "":
		what = "the merge gate could not run: " + session.OneLine(r.Error)
	case r.Failed != "":
		what = "the merge gate failed: " + describeFailure(r)
	}
	if r.Target != "" {
		what += " on " + sanitize.Field(r.Target)
	}
	return what + " (run " + short(r.ID) + ")"
}

// GateNext is what carries a task on after its gate failed.
func GateNext(slug string, r task.GateRun) string {
	where := "lazy show " + slug + " has the output's tail"
	if r.Log != "" {
		where += " and " + sanitize.Field(r.Log) + " the whole log"
	}
	return fmt.Sprintf("%s; fix it with lazy unblock %s -m ... and accept again, or land it anyway with lazy accept %s --skip-gate --reason ...", where, slug, slug)
}

// FailedGate is the task's last gate run when this machine ran it and it
// failed on the work the branch holds now (a fix committed since, or a
// pass, makes it history), nil otherwise. A speculative run is about the
// queue, not the task; a run only the task's record names is anyone's
// claim (see gate_verify.go), and its words are never told as lazy's.
func (e *Gates) FailedGate(ctx context.Context, sn *task.Snapshot) *task.GateRun {
	if sn.Task.Gate == nil || sn.Task.Status.IsTerminal() {
		return nil
	}
	r := sn.Task.Gate.Last()
	if r == nil || r.Passed || r.Speculative || !e.ranHere(sn.Task.ID, *r) {
		return nil
	}
	if sn.Session != nil && sn.Session.Branch != "" && r.BranchTip != "" {
		if tip, err := e.git().BranchCommit(ctx, e.Dir(), sn.Session.Branch); err == nil && tip != r.BranchTip {
			return nil
		}
	}
	return r
}

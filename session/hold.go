package session

import (
	"strings"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// HoldNext is the one sentence that carries a held task on, with its
// command.
func HoldNext(slug string, h *task.Hold) string {
	if h.Kind == task.HoldLimit {
		return "the daemon resumes it after " + h.Until.UTC().Format("2006-01-02 15:04:05 UTC") + " (or lazy unblock " + slug + " now)"
	}
	return RaiseHint(slug, budget.Line{Scope: h.Scope, LimitUSD: h.LimitUSD, SpentUSD: h.SpentUSD})
}

// HoldText is a hold as a wait's summary and the log say it: what holds
// the task, and in whose words.
func HoldText(h *task.Hold) string {
	text := "held: " + h.String()
	if why := sanitize.Field(h.Reason); h.Kind == task.HoldLimit && why != "" && !strings.Contains(text, why) {
		text += " (the agent: " + Clip(why, 200) + ")"
	}
	return text
}

// NoteHold writes the hold sn parked with into its agent log. The log is
// a reading aid: a note that cannot be written loses nothing recorded.
func (e *Env) NoteHold(sn *task.Snapshot) {
	h := sn.Task.Hold
	if h == nil {
		return
	}
	kind := proto.NoteBudget
	if h.Kind == task.HoldLimit {
		kind = proto.NoteLimit
	}
	e.Note(sn, proto.LogLine{Kind: kind, Text: HoldText(h), Next: HoldNext(sn.Task.Slug, h), At: h.At})
}

// Note writes l into sn's agent log, at its current turn. The log is a
// reading aid: a note that cannot be written loses nothing recorded.
func (e *Env) Note(sn *task.Snapshot, l proto.LogLine) {
	if sn.Session != nil {
		l.Turn = sn.Session.Turn
	}
	_ = proto.ForTask(e.Repo.LazyDir(), sn.Task.ID).AppendLogNote(l)
}

// ParkBack is the status a task parks in when its current turn ends:
// conflict while violations are pending (derived), else blocked, or the
// status a status-neutral turn recorded it must go back to (a pre-accept
// turn of a submitted task goes back to submitted). It clears that
// record.
func ParkBack(s *task.Snapshot) machine.Status {
	to := machine.Park(s.PendingViolations())
	if s.Session != nil {
		if to == machine.Blocked && s.Session.ParkTo == machine.Submitted {
			to = machine.Submitted
		}
		s.Session.ParkTo = ""
	}
	return to
}

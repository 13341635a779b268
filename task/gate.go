package task

import (
	"fmt"
	"slices"
	"time"
)

// GateRecord is what a task's merge gate did: the runs lazy made of the
// repository's checks on the exact tree the task would land as, the
// rounds of automatic fixes it asked of the agent, and a human's decision
// to land without the gate. It is a record for people to read: an accept
// on this machine never trusts it to skip a run (this machine's own
// marks of passed trees decide that; see landing), because a record arrives
// from anyone who can push.
type GateRecord struct {
	Runs []GateRun `json:"runs,omitempty"`
	// FixRounds counts the failed runs handed to the agent to fix
	// (lazy.gate.autoFix) since a human last looked.
	FixRounds int `json:"fix_rounds,omitempty"`
	// Fixes are the automatic fix rounds since a human last accepted
	// (at most MaxFixes, the newest last): which turn each gave the
	// agent, and whether it resumed the agent's session.
	Fixes []GateFix `json:"fixes,omitempty"`
	// Skipped is the human decision to land without the gate.
	Skipped *GateSkip `json:"skipped,omitempty"`
	// Approved is the human decision to land a change that touches
	// protected paths (lazy.gate.protect), which the gate alone may not
	// decide. It is a record for people: an accept never reads it to let
	// anything land (the approval is given on the accept's own command
	// line), since a record arrives from anyone who can push.
	Approved *ProtectedApproval `json:"approved_protected,omitempty"`
	// Batched is how the task's last batched train (lazy.gate.batch)
	// decided it: landed with its batch, or isolated as the culprit.
	Batched *BatchOutcome `json:"batched,omitempty"`
	// Lane is the lane of the merge train (lazy.gate.lanes) its last
	// accept went through: one lane's name, or several joined by "+"
	// when its change spanned them.
	Lane string `json:"lane,omitempty"`
}

// MaxFixes bounds GateRecord.Fixes.
const MaxFixes = 10

// GateFix is one automatic fix round (lazy.gate.autoFix): round Round of
// Max, handed to the agent in the turn whose human half is Turn (the
// feedback); Resume is copied from the agent's turn once it ended.
type GateFix struct {
	Round  int       `json:"round"`
	Max    int       `json:"max"`
	Turn   int       `json:"turn"`
	Run    string    `json:"run,omitempty"`
	At     time.Time `json:"at"`
	Resume *Resume   `json:"resume,omitempty"`
}

// String says it in words: "fix round 1 of 3: resumed the agent's
// session 01a2..." (record text: callers sanitize it).
func (f GateFix) String() string {
	what := "the agent's turn has not ended yet"
	if f.Resume != nil {
		what = f.Resume.String()
	}
	return fmt.Sprintf("fix round %d of %d: %s", f.Round, f.Max, what)
}

// NoteFix records fix round f: a first round starts the list again (a
// human accepted), and it keeps the newest MaxFixes.
func (g *GateRecord) NoteFix(f GateFix) {
	if f.Round <= 1 {
		g.Fixes = nil
	}
	g.Fixes = append(g.Fixes, f)
	if n := len(g.Fixes); n > MaxFixes {
		g.Fixes = g.Fixes[n-MaxFixes:]
	}
}

// NoteResume gives the fix round whose feedback was human turn seq the
// resume of its agent turn.
func (g *GateRecord) NoteResume(seq int, r *Resume) {
	if g == nil || r == nil {
		return
	}
	for i := range g.Fixes {
		if g.Fixes[i].Turn == seq {
			rr := *r
			g.Fixes[i].Resume = &rr
		}
	}
}

// GateBatch places a gate run in a batched train (lazy.gate.batch): the
// tree of batch Batch of Of, gated in round Round of its bisection,
// merging Entries queued tasks of the train (Part of them new in this
// round) on the target. Lane is the lane whose train it is, in a train
// split into lanes (lazy.gate.lanes): each lane is batched on its own.
type GateBatch struct {
	Batch   int    `json:"batch"`
	Of      int    `json:"of"`
	Round   int    `json:"round"`
	Entries int    `json:"entries"`
	Part    int    `json:"part"`
	Lane    string `json:"lane,omitempty"`
}

// BatchPlace names a batch of a train in words: "batch 2 of 3", or
// "batch 2 of 3 of lane api" when the train is one lane's (record text:
// callers sanitize it).
func BatchPlace(batch, of int, lane string) string {
	s := fmt.Sprintf("batch %d of %d", batch, of)
	if lane != "" {
		s += " of lane " + lane
	}
	return s
}

// The outcomes of a batched train for one task (BatchOutcome.Outcome).
const (
	// BatchPassed: a tree holding the task and every entry landing
	// before it passed; it lands with its batch.
	BatchPassed = "passed"
	// BatchIsolated: the bisection isolated the task as the culprit.
	BatchIsolated = "isolated"
)

// BatchOutcome is what a batched train decided for one task.
type BatchOutcome struct {
	Outcome string    `json:"outcome"`
	Target  string    `json:"target"`
	Batch   int       `json:"batch"`
	Of      int       `json:"of"`
	Round   int       `json:"round"`
	Run     string    `json:"run,omitempty"`
	At      time.Time `json:"at"`
	// Lane is the lane whose train batched it (lazy.gate.lanes); "" in a
	// train without lanes.
	Lane string `json:"lane,omitempty"`
}

// String says it in words: "failed in batch 2 of 3, isolated in round
// 2 (run 01J...)", "passed in batch 1 of 2 of lane api, round 1".
func (b BatchOutcome) String() string {
	run := ""
	if b.Run != "" {
		run = " (run " + b.Run + ")"
	}
	place := BatchPlace(b.Batch, b.Of, b.Lane)
	if b.Outcome == BatchIsolated {
		return fmt.Sprintf("failed in %s, isolated in round %d%s", place, b.Round, run)
	}
	return fmt.Sprintf("passed in %s, round %d%s", place, b.Round, run)
}

// ProtectedApproval is a human's approval of the protected paths a
// task's change touched.
type ProtectedApproval struct {
	By    string    `json:"by"`
	At    time.Time `json:"at"`
	Files []string  `json:"files"`
	// BranchTip is the task branch's tip the approval was given on.
	BranchTip string `json:"branch_tip"`
}

// Where a gate run shown to a person was made (GateRun.Origin).
const (
	// GateHere: this machine's lazy ran it (its own record under
	// <common dir>/lazy/gate/runs says the same of it).
	GateHere = "here"
	// GateRemote: the run is only in the task's record, which anyone
	// who can push writes; it proves nothing here.
	GateRemote = "remote, not verified here"
)

// GateRun is one run of the gate's commands.
type GateRun struct {
	ID         string    `json:"id"`
	At         time.Time `json:"at"`
	DurationMS int64     `json:"duration_ms"`
	Host       string    `json:"host"`
	// Source says where the commands came from: "git config lazy.gate"
	// or ".lazy/gate at <target>".
	Source string `json:"source"`
	// Target is the branch the task lands in, Base the target commit the
	// run's tree was built on (the target's tip, or the queue ahead of
	// the task), Tree the tree that ran, BranchTip the task branch's tip.
	Target    string        `json:"target"`
	Base      string        `json:"base"`
	Tree      string        `json:"tree"`
	BranchTip string        `json:"branch_tip"`
	Commands  []GateCommand `json:"commands"`
	Passed    bool          `json:"passed"`
	// Failed is the command that failed, Tail the end of its output
	// (sanitized when shown), Log the whole log on the host that ran it.
	Failed string `json:"failed,omitempty"`
	Tail   string `json:"tail,omitempty"`
	Log    string `json:"log,omitempty"`
	// Speculative marks a run on a tree that assumed the entries ahead
	// in the queue land first.
	Speculative bool `json:"speculative,omitempty"`
	// Error says why the gate could not run at all (no commands ran).
	Error string `json:"error,omitempty"`
	// Refused says why a run whose commands all exited 0 did not pass
	// (faster than lazy.gate.minDuration).
	Refused string `json:"refused,omitempty"`
	// Origin is GateHere or GateRemote, set only on a copy made for
	// display (landing verifies it against this machine's own records); it
	// is cleared whenever a record is read or written, so what a record
	// says of it is never believed.
	Origin string `json:"origin,omitempty"`
	// Batch places the run in a batched train (lazy.gate.batch); nil for
	// a run of one entry's tree.
	Batch *GateBatch `json:"batch,omitempty"`
}

// GateCommand is one command of a run and how it ended.
type GateCommand struct {
	Cmd        string `json:"cmd"`
	Exit       int    `json:"exit"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Missing    bool   `json:"missing,omitempty"`
}

// GateSkip is a human's decision to land a task without its gate.
type GateSkip struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// MaxGateRuns is how many runs a task keeps (the newest): task.json is
// rewritten by every operation, so it stays small.
const MaxGateRuns = 10

// MaxApprovedFiles bounds the protected files an approval lists (a
// longer list is cut, and says so in its last entry).
const MaxApprovedFiles = 200

// MaxGateTail bounds the output tail a run keeps in the record.
const MaxGateTail = 2048

// AddRun appends r, keeping the newest MaxGateRuns runs and a tail of at
// most MaxGateTail bytes (its end, on a character boundary).
func (g *GateRecord) AddRun(r GateRun) {
	r.Origin = ""
	if len(r.Tail) > MaxGateTail {
		cut := len(r.Tail) - MaxGateTail
		for cut < len(r.Tail) && r.Tail[cut]&0xC0 == 0x80 {
			cut++
		}
		r.Tail = r.Tail[cut:]
	}
	g.Runs = append(g.Runs, r)
	if n := len(g.Runs); n > MaxGateRuns {
		g.Runs = slices.Clone(g.Runs[n-MaxGateRuns:])
	}
}

// Last is the newest run, or nil.
func (g *GateRecord) Last() *GateRun {
	if g == nil || len(g.Runs) == 0 {
		return nil
	}
	return &g.Runs[len(g.Runs)-1]
}

func (g *GateRecord) clone() *GateRecord {
	if g == nil {
		return nil
	}
	c := *g
	c.Runs = make([]GateRun, len(g.Runs))
	for i, r := range g.Runs {
		r.Commands = slices.Clone(r.Commands)
		if r.Batch != nil {
			b := *r.Batch
			r.Batch = &b
		}
		c.Runs[i] = r
	}
	if g.Batched != nil {
		b := *g.Batched
		c.Batched = &b
	}
	if g.Skipped != nil {
		s := *g.Skipped
		c.Skipped = &s
	}
	if g.Approved != nil {
		a := *g.Approved
		a.Files = slices.Clone(a.Files)
		c.Approved = &a
	}
	return &c
}

// Clone is a deep copy of g (nil for nil), for a surface that marks
// its runs' origin.
func (g *GateRecord) Clone() *GateRecord { return g.clone() }

// GateSummary is a task's gate on listing surfaces: how its newest run
// ended (passed, failed, or skipped by a human).
type GateSummary struct {
	State  string `json:"state"`
	At     string `json:"at"`
	Run    string `json:"run,omitempty"`
	Failed string `json:"failed,omitempty"`
	Base   string `json:"base,omitempty"`
	Target string `json:"target,omitempty"`
	Rounds int    `json:"fix_rounds,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Origin is the newest run's (GateHere or GateRemote) where a
	// surface verified it; "" where none did.
	Origin string `json:"origin,omitempty"`
}

// Gate states on listing surfaces.
const (
	GatePassed  = "passed"
	GateFailed  = "failed"
	GateSkipped = "skipped"
)

// Summary is the listing shape of g, or nil when nothing ran.
func (g *GateRecord) Summary() *GateSummary {
	if g == nil {
		return nil
	}
	last := g.Last()
	if g.Skipped != nil && (last == nil || !g.Skipped.At.Before(last.At)) {
		return &GateSummary{State: GateSkipped, At: g.Skipped.At.UTC().Format(TimeLayout), Reason: g.Skipped.Reason, Rounds: g.FixRounds}
	}
	if last == nil {
		return nil
	}
	s := &GateSummary{State: GateFailed, At: last.At.UTC().Format(TimeLayout), Run: last.ID, Failed: last.Failed, Base: last.Base, Target: last.Target, Rounds: g.FixRounds}
	if last.Passed {
		s.State = GatePassed
	}
	return s
}

// checkGate refuses a gate record larger than lazy ever writes: it comes
// from whoever can push, and every surface shows it. What a record says
// of a run's origin is dropped: only this machine can say that.
func checkGate(g *GateRecord) error {
	if g == nil {
		return nil
	}
	for i := range g.Runs {
		g.Runs[i].Origin = ""
	}
	if a := g.Approved; a != nil && len(a.Files) > MaxApprovedFiles {
		return fmt.Errorf("task.json approves %d protected files, more than lazy writes", len(a.Files))
	}
	if b := g.Batched; b != nil && ((b.Outcome != BatchPassed && b.Outcome != BatchIsolated) || (b.Run != "" && !ValidID(b.Run)) || len(b.Target) > 255 || len(b.Lane) > 255) {
		return fmt.Errorf("task.json has a batched train's outcome lazy does not write (%q)", b.Outcome)
	}
	if len(g.Lane) > 255 {
		return fmt.Errorf("task.json names a merge-train lane of %d bytes, more than lazy writes", len(g.Lane))
	}
	if len(g.Runs) > MaxGateRuns {
		return fmt.Errorf("task.json has %d gate runs; lazy keeps at most %d", len(g.Runs), MaxGateRuns)
	}
	for _, r := range g.Runs {
		if len(r.Commands) > 64 || len(r.Tail) > 4*MaxGateTail {
			return fmt.Errorf("task.json has a gate run of %d commands and a %d-byte tail, more than lazy writes", len(r.Commands), len(r.Tail))
		}
		if r.Batch != nil && len(r.Batch.Lane) > 255 {
			return fmt.Errorf("task.json places a gate run in a merge-train lane of %d bytes, more than lazy writes", len(r.Batch.Lane))
		}
	}
	return nil
}

// Package notify tells a human, wherever they are, that a task needs
// them or finished: it derives one event per change from the task
// records the daemon lists, remembers what it announced on this host
// (so a daemon restart never announces it again), rate-limits each
// target, and sends to the targets of git config lazy.notify (a command,
// a webhook, the desktop).
//
// An event carries only what the task record says in structured fields
// (slug, title, status, a one-line reason of lazy's wording), sanitized
// and bounded: never the environment, an agent's output, or a token.
package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/redact"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Kind is what an event announces.
type Kind string

// The kinds of event. All but asked, answered, finished, more and test
// mean a human is needed.
const (
	KindBlocked     Kind = "blocked"     // a work turn ended; the task waits for review
	KindPick        Kind = "pick"        // an attempt group's pick by the gate was made and waits for a human (one event for the group)
	KindConflict    Kind = "conflict"    // parked with pending file-permission violations
	KindGateFailed  Kind = "gate_failed" // the merge gate failed and no automatic fix round is left
	KindBudget      Kind = "budget"      // parked by its spending budget
	KindInterrupted Kind = "interrupted" // interrupted and not resumed by itself (circuit breaker)
	KindAsked       Kind = "asked"       // lazy ask: the agent answers a question, read-only
	KindAnswered    Kind = "answered"    // the ask ended: the answer is in (Outcome "failed" when there is none)
	KindFinished    Kind = "finished"    // accepted, rejected or closed (Outcome says which)
	KindMore        Kind = "more"        // the rate limit collapsed Count events into this one
	KindTest        Kind = "test"        // lazy notify test
)

// Kinds lists the kinds a task change can announce, in the order
// lazy.notify.events documents them (pick, the newest, last, so what
// lazy notify lists before it reads as it did).
func Kinds() []Kind {
	return []Kind{KindBlocked, KindConflict, KindGateFailed, KindBudget, KindInterrupted, KindAsked, KindAnswered, KindFinished, KindPick}
}

// AllKinds lists every kind an event can have: Kinds, then more and
// test, which no task change announces.
func AllKinds() []Kind { return append(Kinds(), KindMore, KindTest) }

// Event is one announcement, as a command target reads it on stdin and
// a JSON webhook receives it.
type Event struct {
	Kind    Kind           `json:"kind"`
	TaskID  string         `json:"task_id,omitempty"`
	Slug    string         `json:"slug,omitempty"`
	Title   string         `json:"title,omitempty"`
	Status  machine.Status `json:"status,omitempty"`
	Outcome string         `json:"outcome,omitempty"` // finished: accepted, rejected or closed; answered: failed when there is no answer
	// Reason is one line of lazy's wording, sanitized and bounded.
	Reason string `json:"reason"`
	// Time is when lazy noticed the change (RFC 3339, UTC).
	Time string `json:"time"`
	// Repo is the repository's name: the directory of its main worktree
	// (gitrepo.Location.Name), the same in every event and in lazy notify
	// test.
	Repo string `json:"repo"`
	// Count is, for a "more" event, how many events it stands for.
	Count int `json:"count,omitempty"`
	// Proposed is, for a pick event, the slug of the attempt the gate
	// proposes ("" when none passed, or the pick names no attempt that
	// waits for review), and Command the one command that answers the
	// group (lazy accept PROPOSED, or lazy show GROUP to compare them).
	// Both are lazy's words and slugs the store read and validated.
	Proposed string `json:"proposed,omitempty"`
	Command  string `json:"command,omitempty"`

	// mark is the announcement's task, dedup slot and key: what the
	// machines sharing a remote claim so that one of them announces it.
	mark Mark
}

// NeedsHuman reports whether the event asks for a human.
func (e Event) NeedsHuman() bool {
	switch e.Kind {
	case KindAsked, KindAnswered, KindFinished, KindMore, KindTest:
		return false
	}
	return true
}

// Headline is the event's title line: what happened to which task.
func (e Event) Headline() string {
	switch e.Kind {
	case KindMore:
		return fmt.Sprintf("lazy (%s): and %d more", e.Repo, e.Count)
	case KindTest:
		return fmt.Sprintf("lazy (%s): test notification", e.Repo)
	case KindFinished:
		return fmt.Sprintf("lazy (%s): %s %s", e.Repo, e.Slug, e.Outcome)
	case KindGateFailed:
		return fmt.Sprintf("lazy (%s): %s failed its merge gate", e.Repo, e.Slug)
	case KindBudget:
		return fmt.Sprintf("lazy (%s): %s is over its budget", e.Repo, e.Slug)
	case KindAsked:
		return fmt.Sprintf("lazy (%s): %s was asked a question", e.Repo, e.Slug)
	case KindAnswered:
		if e.Outcome == OutcomeFailed {
			return fmt.Sprintf("lazy (%s): %s could not answer a question", e.Repo, e.Slug)
		}
		return fmt.Sprintf("lazy (%s): %s answered a question", e.Repo, e.Slug)
	case KindPick:
		if e.Proposed != "" {
			return fmt.Sprintf("lazy (%s): %s: the gate proposes %s", e.Repo, e.Slug, e.Proposed)
		}
		return fmt.Sprintf("lazy (%s): %s: the gate's pick waits for you", e.Repo, e.Slug)
	}
	return fmt.Sprintf("lazy (%s): %s is %s", e.Repo, e.Slug, e.Status)
}

// Text is the event's body as plain text: the reason, the title and
// what to run (the event's command, else lazy show).
func (e Event) Text() string {
	var b strings.Builder
	b.WriteString(e.Reason)
	if e.Title != "" {
		b.WriteString("\n" + e.Title)
	}
	switch {
	case e.Command != "":
		b.WriteString("\n" + e.Command)
	case e.Slug != "":
		b.WriteString("\nlazy show " + e.Slug)
	}
	return b.String()
}

// Policy is what decides whether a state needs a human beyond the record
// itself: the repository's settings.
type Policy struct {
	// BreakerAt is the count of consecutive interruptions at which the
	// reconciler stops resuming a task by itself (lifecycle.MaxConsecutiveInterruptions).
	BreakerAt int
	// NoAutoResume: every interrupted task waits for a human (lazy.autoResume false).
	NoAutoResume bool
	// GateFixRounds is lazy.gate.maxAttempts when lazy.gate.autoFix is on,
	// 0 when it is off: a failed gate needs a human only once the rounds
	// are spent.
	GateFixRounds int
	// Secrets are the configuration's secrets (Settings.Secrets): taken
	// out of an event's text before it is cut to length, so no part of
	// one is left at the cut.
	Secrets *redact.Redactor
}

// OutcomeFailed is an answered event's Outcome when the ask ended with
// an error rather than an answer.
const OutcomeFailed = "failed"

// Observation is what derivation reads of one task: its summary and, for
// a parked or interrupted task, its session.
type Observation struct {
	TaskID, Slug, Title string
	Status              machine.Status
	Substate            string // working: agent:answering while an ask runs
	Outcome             string // complete or abandoned: accepted, rejected, closed
	Sessions, Turns     int
	// Turn and TurnKind are the session's latest turn (the sequence
	// number of the human turn that began it, and its kind: start,
	// unblock, ask, sync...): a park is keyed by the turn that ended,
	// and an ask or a sync, which park the task back as it was, is
	// not a new park. 0 and "" when the session was not read.
	Turn     int
	TurnKind string
	// AnswerFailed: the latest turn was an ask that ended with an error
	// rather than an answer.
	AnswerFailed bool
	// Gate is the newest gate run's summary, if any ran.
	Gate *task.GateSummary
	// HoldKind is task.HoldBudget or HoldLimit when a blocked task
	// is parked by its budget or waits for a usage limit to reset (the
	// daemon resumes that one: not news); HoldReason says why.
	HoldKind, HoldReason string
	// Interruptions counts consecutive interrupted turns (the circuit
	// breaker's counter); InterruptReason is the last one's.
	Interruptions   int
	InterruptReason string
	InterruptPhase  string
	// Folded: the task is a parked attempt of a group picked by the gate
	// (lazy start --attempts N --pick gate) while that pick is in force;
	// the group's pick answers it, so it announces nothing of its own
	// (the inbox lists no item for it either: inbox.Service.Notice).
	Folded bool
	// Pick is, on such a group, its pick once it was made and waits for
	// a human: one event for the group, in place of its attempts'.
	Pick *PickNotice
}

// PickNotice is what a pick event says of an attempt group whose pick by
// the gate was made and lands nothing by itself, read through the
// inbox's rule (inbox.Service.Notice). It holds numbers, a time, and
// slugs and a command lazy built from records the store validated:
// nothing of the pick's recorded words (its ranking, why a landing
// failed), which come from whoever can push and are never announced.
type PickNotice struct {
	// DecidedAt is when the pick was made: with Attempt, the event's key.
	DecidedAt time.Time
	// Attempt is the attempt number the pick proposes (0: none passed),
	// Of how many the group has.
	Attempt, Of int
	// Proposed is the proposed attempt's slug, read from the store; ""
	// when none passed or the attempt named no longer waits for review.
	Proposed string
	// Command is the one command that answers the group (the inbox
	// item's).
	Command string
	// LandFailed: the pick was to land by itself (--land) and did not.
	LandFailed bool
}

// reason is the pick in lazy's words.
func (p *PickNotice) reason(slug string) string {
	var why string
	switch {
	case p.Proposed != "":
		why = fmt.Sprintf("the gate proposes attempt %d of %d (%s); accept it, or compare them (lazy show %s) and choose another", p.Attempt, p.Of, p.Proposed, slug)
	case p.Attempt == 0:
		why = fmt.Sprintf("the gate picked none of the %d attempts, so nothing lands by itself; compare them (lazy show %s) and choose one", p.Of, slug)
	default:
		why = fmt.Sprintf("the gate's pick names attempt %d, which no longer waits for review; compare the attempts (lazy show %s) and choose one", p.Attempt, slug)
	}
	if p.LandFailed {
		why += "; it did not land by itself (lazy show " + slug + " says why)"
	}
	return why
}

// Observe reads the observation of a summary.
func Observe(s *task.Summary) Observation {
	o := Observation{TaskID: s.ID, Slug: s.Slug, Title: s.Title, Status: s.Status, Substate: s.Substate, Outcome: s.Outcome,
		Sessions: s.Sessions, Turns: s.Turns, Gate: s.Gate}
	if s.Hold != nil {
		o.HoldKind, o.HoldReason = s.Hold.Kind, s.Hold.String()
	}
	return o
}

// AddSession adds what the session says about interruptions.
func (o *Observation) AddSession(sess *task.Session) {
	if sess == nil {
		return
	}
	o.Interruptions, o.InterruptReason, o.InterruptPhase = sess.ConsecutiveInterruptions, sess.InterruptReason, sess.InterruptPhase
	o.Turn, o.TurnKind = sess.Turn, sess.TurnKind
}

// NeedsSession reports whether derivation reads the task's session
// (Observation.AddSession): a parked task's (which turn parked it) and
// an interrupted one's (the circuit breaker's count).
func NeedsSession(st machine.Status) bool {
	return st.IsBlocked() || st == machine.Interrupted
}

// Answering is the substate of a task whose agent answers an ask.
const Answering = "agent:answering"

// neutral says whether a turn kind parks the task back where it was
// (an ask, a sync, accept's pre-accept turn): its end is not a park of
// its own.
func neutral(kind string) bool { return kind == "ask" || kind == "sync" || kind == "pre-accept" }

// Dedup slots: each holds the key of the last state announced in it, so
// a state is announced once however often it is seen. Blocked, conflict
// and budget share one slot keyed by the turn that ended, so a conflict
// the human resolves into blocked is not news, while the next turn's end
// is; an ask or a sync leaves it as it was. Asked and answered are keyed
// by the ask's turn.
const (
	slotPark      = "park"
	slotGate      = "gate"
	slotInterrupt = "interrupt"
	slotFinish    = "finish"
	slotAsk       = "ask"
	slotAnswer    = "answer"
	slotPick      = "pick"
)

// claim is one thing the task's state says now: the slot and key it is
// remembered by, and the event it would announce.
type claim struct {
	slot, key string
	kind      Kind
	reason    string
}

// claims lists what an observation says, most specific first.
func claims(o Observation, p Policy) []claim {
	var out []claim
	// The turn that ended: the session's when it was read, else the
	// count of turns (a record without a session).
	seq := o.Turn
	if seq == 0 {
		seq = o.Turns
	}
	turn := fmt.Sprintf("s%d.t%d", o.Sessions, seq)
	if pk := o.Pick; pk != nil {
		// Keyed by when the pick was made and what it proposes: a pick
		// made again (the group reopened) is news, a later write to the
		// group is not.
		out = append(out, claim{slotPick, fmt.Sprintf("%s.a%d", pk.DecidedAt.UTC().Format(time.RFC3339Nano), pk.Attempt), KindPick, pk.reason(o.Slug)})
	}
	if o.Status.IsBlocked() && o.Gate != nil && o.Gate.State == task.GateFailed && o.Gate.Run != "" &&
		(p.GateFixRounds == 0 || o.Gate.Rounds >= p.GateFixRounds) {
		why := "the merge gate failed"
		if o.Gate.Failed != "" {
			why += ": " + o.Gate.Failed
		}
		out = append(out, claim{slotGate, o.Gate.Run, KindGateFailed, why})
	}
	parkedBack := o.Status.IsBlocked() && neutral(o.TurnKind)
	switch {
	case o.Status == machine.Working && o.Substate == Answering:
		out = append(out, claim{slotAsk, fmt.Sprintf("s%d.t%d", o.Sessions, o.Turns), KindAsked, "a question was asked; its agent answers it read-only, and the task stays as it was"})
	case parkedBack && o.TurnKind == "ask":
		// The ask ended: its answer is the news, and the question, if it
		// was not seen, is taken with it. The park is not new.
		why := fmt.Sprintf("its agent answered a question; the task is still %s", o.Status)
		if o.AnswerFailed {
			why = fmt.Sprintf("its agent could not answer a question (lazy show says why); the task is still %s", o.Status)
		}
		out = append(out, claim{slotAnswer, turn, KindAnswered, why}, claim{slotAsk, turn, KindAsked, ""})
	case parkedBack:
		// A sync or a pre-accept turn parked it back: nothing new.
	case o.Status == machine.Conflict:
		out = append(out, claim{slotPark, turn, KindConflict, "its turn changed files outside its allowed paths; approve or revert them"})
	case o.Status == machine.Blocked && o.HoldKind == task.HoldBudget:
		why := "it is parked by its budget; raise it to carry on (lazy unblock --budget +N)"
		if o.HoldReason != "" {
			why = o.HoldReason + "; raise the budget to carry on (lazy unblock --budget +N)"
		}
		out = append(out, claim{slotPark, turn, KindBudget, why})
	case o.Status == machine.Blocked && o.HoldKind != "":
		// A usage limit: the daemon resumes it by itself when the limit
		// resets, so nobody is needed.
	case o.Status == machine.Blocked && o.Sessions > 0:
		out = append(out, claim{slotPark, turn, KindBlocked, "its turn ended; it waits for your review"})
	case o.Status == machine.Interrupted && (p.NoAutoResume || (p.BreakerAt > 0 && o.Interruptions >= p.BreakerAt) || o.InterruptPhase == "merge_and_fix"):
		why := "interrupted, and lazy.autoResume is off"
		switch {
		case o.InterruptPhase == "merge_and_fix":
			why = "interrupted while merging upstream; resolve it by hand"
		case !p.NoAutoResume:
			why = fmt.Sprintf("interrupted %d times in a row (circuit breaker); resume or unblock it", o.Interruptions)
		}
		if o.InterruptReason != "" {
			why += ": " + o.InterruptReason
		}
		out = append(out, claim{slotInterrupt, fmt.Sprintf("%s.i%d", turn, o.Interruptions), KindInterrupted, why})
	case o.Status.IsTerminal():
		outcome := o.Outcome
		if outcome == "" {
			outcome = string(o.Status)
		}
		out = append(out, claim{slotFinish, turn + "." + outcome, KindFinished, outcome})
	}
	return out
}

// Derive compares an observation with the keys announced before for its
// task (nil for none) and returns the event to announce, if any, and the
// keys to remember. When several things are new at once (a failed gate
// that left the task blocked) the most specific is announced and all
// are remembered. It is pure.
func Derive(prev map[string]string, o Observation, p Policy) (*Event, map[string]string) {
	next := make(map[string]string, len(prev)+1)
	for k, v := range prev {
		next[k] = v
	}
	var ev *Event
	for _, c := range claims(o, p) {
		if prev[c.slot] == c.key {
			continue
		}
		next[c.slot] = c.key
		if ev == nil && !o.Folded {
			// A folded attempt's states are remembered unannounced: its
			// group's pick answers them, and should the pick no longer
			// be in force they are old news.
			e := Event{Kind: c.kind, TaskID: o.TaskID, Slug: clean(p.Secrets, o.Slug, 100), Title: clean(p.Secrets, o.Title, 200), Status: o.Status, Reason: clean(p.Secrets, c.reason, maxReason),
				mark: Mark{Task: o.TaskID, Slot: c.slot, Key: c.key, Kind: c.kind}}
			switch c.kind {
			case KindFinished:
				e.Outcome = clean(p.Secrets, c.reason, 40)
				e.Reason = "it is " + e.Outcome
			case KindAnswered:
				if o.AnswerFailed {
					e.Outcome = OutcomeFailed
				}
			case KindPick:
				e.Proposed, e.Command = clean(p.Secrets, o.Pick.Proposed, 100), clean(p.Secrets, o.Pick.Command, 200)
			}
			ev = &e
		}
	}
	return ev, next
}

// maxReason bounds an event's reason, in bytes.
const maxReason = 300

// Clean makes text fit an event: one line, what looks like a credential
// replaced by "…" (internal/redact), control, bidi and invisible
// characters escaped (internal/quote), and at most max bytes.
func Clean(s string, max int) string { return clean(nil, s, max) }

// clean is Clean that also takes out what secrets says is secret (the
// paths of the configured targets' URLs); secrets may be nil.
func clean(secrets *redact.Redactor, s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = quote.Inline(secrets.Line(s))
	if len(s) > max {
		cut := max - len("…")
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Stamp is the event time format.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

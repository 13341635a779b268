package session

import (
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// Feedback delivery (spec: "Feedback Redelivery"). A human-role turn that
// carries a message for the agent (the task prompt, an unblock's
// feedback, an ask's question, forge feedback, a reject's or reopen's
// reason) is recorded pending. Every turn lazy launches delivers, in its
// prompt, every message still pending before it: its own first, verbatim,
// then the older ones. When the turn completes normally, exactly what it
// delivered is marked consumed (Delivered, shared with the reconciler),
// so a message no agent received is never consumed.
//
// Kinds of turn deliver different things: a work turn (start, unblock,
// resume) delivers every pending message; an ask, which is read-only,
// delivers pending questions only, so work feedback waits for the next
// work turn instead of being consumed by a turn that may not act on it;
// a sync or a pre-accept turn delivers nothing.

// maxOlderFeedback bounds the older messages a prompt carries verbatim:
// past it they are named by turn number (read them with lazy show), so a
// long queue can never push a prompt past what an argv can hold.
const maxOlderFeedback = 32 << 10

// DeliversAll reports whether a turn of kind delivers every pending
// message (a work turn), and DeliversQuestions whether it delivers the
// pending questions (an ask). The reconciler consumes accordingly.
func DeliversAll(kind string) bool {
	switch kind {
	case "start", "unblock", "resume", "handoff":
		return true
	}
	return false
}

// Delivered reports whether t, a turn recorded before (or as) the
// launching turn seq of a turn of kind, was delivered by it: the
// reconciler marks exactly these consumed when that turn completes.
func Delivered(t task.Turn, seq int, kind string) bool {
	if t.FeedbackDelivery != task.FeedbackPending || t.Seq > seq {
		return false
	}
	return DeliversAll(kind) || (kind == "ask" && t.Kind == "ask")
}

// PendingBefore lists the pending messages a turn of kind launched as
// seq delivers besides its own, oldest first.
func PendingBefore(turns []task.Turn, seq int, kind string) []task.Turn {
	var out []task.Turn
	for _, t := range turns {
		if t.Seq < seq && Delivered(t, seq, kind) {
			out = append(out, t)
		}
	}
	return out
}

// WithUndelivered appends to prompt, a turn's own message, every older
// message that no agent has received: verbatim, oldest first, within
// maxOlderFeedback; the rest by turn number, so none is silently dropped.
func WithUndelivered(prompt, slug string, older []task.Turn) string {
	if len(older) == 0 {
		return prompt
	}
	var b strings.Builder
	b.WriteString(prompt)
	fmt.Fprintf(&b, "\n\n---\n\n%s recorded for you, but no turn of yours finished with %s (each was interrupted or stopped first). Here %s, oldest first, verbatim:", words.Count(len(older), "earlier message was", "earlier messages were"), words.Plural(len(older), "it", "them"), words.Plural(len(older), "it is", "they are"))
	used := 0
	var unsent []string
	for _, t := range older {
		if used+len(t.Content) > maxOlderFeedback {
			unsent = append(unsent, fmt.Sprint(t.Seq))
			continue
		}
		used += len(t.Content)
		fmt.Fprintf(&b, "\n\n[turn %d: %s]\n%s", t.Seq, describe(t), QuotedMessage(t))
	}
	if len(unsent) > 0 {
		fmt.Fprintf(&b, "\n\n(%d more were too long to repeat here: turns %s; read them with lazy_show or lazy show %s.)", len(unsent), strings.Join(unsent, ", "), slug)
	}
	return b.String()
}

// QuotedMessage is t's message as a prompt of lazy's carries it: a
// person's verbatim, as the spec has it; an agent's (a parent task's
// agent, the builder, over MCP) fenced (internal/quote), so it can never
// pass for lazy's framing around it or for a person's message.
func QuotedMessage(t task.Turn) string {
	if t.Actor == machine.Agent || t.Actor == machine.Builder {
		return quote.Block(t.Content)
	}
	return t.Content
}

// describe names what kind of message a pending turn holds.
func describe(t task.Turn) string {
	who := string(t.Actor)
	if who == "" {
		who = "human"
	}
	switch t.Kind {
	case "ask":
		return "a question from " + who + " (answer it too)"
	case "start":
		return "the task as given at its start"
	case "forge-feedback":
		return "pull-request feedback"
	case "reject":
		return "why " + who + " rejected the work before reopening it"
	case "reopen":
		return "why " + who + " reopened the task"
	}
	return "feedback from " + who
}

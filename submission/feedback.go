package submission

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Bounds on forge feedback: one item, and one delivered turn.
const (
	maxFeedbackItem = 4000
	maxFeedbackTurn = 32000
)

// ForgeFeedback is what a pull request says that the task's agent has
// not been told yet: failing checks on the pushed commit, and reviews
// and comments (lazy's own comments excluded). Keys are what
// ForgeRecord.Delivered remembers.
func ForgeFeedback(rec *task.ForgeRecord, pr *forge.PR) (keys []string, text string) {
	head := pr.HeadSHA
	if head == "" {
		head = rec.HeadSHA
	}
	var items []string
	for _, c := range pr.Checks {
		key := "check:" + c.Name + "@" + head
		if c.State != forge.ChecksFailing || rec.WasDelivered(key) {
			continue
		}
		item := fmt.Sprintf("- CI check %q failed", sanitize.Field(c.Name))
		if s := forge.Bound(quote.Escape(strings.TrimSpace(c.Summary)), maxFeedbackItem); strings.Contains(s, "\n") {
			item += ":\n  > " + quoteLines(s, "\n  > ")
		} else if s != "" {
			item += ": " + s
		}
		if c.URL != "" {
			item += "\n  Details: " + c.URL
		}
		if l := strings.TrimSpace(c.Log); l != "" {
			item += "\n  Log (tail):\n  | " + quoteLines(forge.Tail(quote.Escape(l), forge.MaxLog), "\n  | ")
		}
		keys, items = append(keys, key), append(items, item)
	}
	for _, c := range pr.Comments {
		body := strings.TrimSpace(c.Body)
		if rec.WasDelivered(c.ID) || IsLazyComment(body) || (body == "" && c.Review != "changes_requested") {
			continue
		}
		what := "Comment"
		switch c.Review {
		case "":
		case "changes_requested", "request_changes":
			what = "Review (changes requested)"
		default:
			what = "Review (" + sanitize.Field(c.Review) + ")"
		}
		item := fmt.Sprintf("- %s by @%s (%s):", what, sanitize.Field(c.Author), c.URL)
		if body != "" {
			item += "\n  > " + quoteLines(forge.Bound(quote.Escape(body), maxFeedbackItem), "\n  > ")
		}
		keys, items = append(keys, c.ID), append(items, item)
	}
	if len(items) == 0 {
		return nil, ""
	}
	text = fmt.Sprintf("Feedback on your pull request #%d (%s), delivered by lazy. Address it, commit, and say what you changed:\n\n%s", pr.Number, pr.URL, strings.Join(items, "\n\n"))
	return keys, forge.Bound(text, maxFeedbackTurn)
}

// quoteLines puts prefix before every line of s after its first: what a
// pull request says is quoted line by line (never cut inside a fence, as
// the whole text is bounded), so none of its lines can pass for lazy's.
// s is escaped already (quote.Escape): no CR or separator breaks a line.
func quoteLines(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", prefix)
}

// DeliverForgeFeedback records new pull-request feedback on a submitted
// task as a feedback turn (actor system; pending delivery), marking every
// item delivered in the same commit, so nothing is delivered twice and
// nothing is lost to a crash. With fix set the task is then unblocked:
// submitted -> blocked (revising, the pull request stays open) ->
// working, with the feedback as the agent's next prompt. It returns nil
// when there was nothing new. An Env without a Launcher leaves a fix
// recorded with the task blocked (revising), for a human to unblock.
func (sv *Service) DeliverForgeFeedback(ctx context.Context, id string, pr *forge.PR, fix bool) (*task.Snapshot, error) {
	e := sv.Env
	unlock, err := e.LockTask(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var turn task.Turn
	var text string
	sn, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Submitted || s.Task.Forge == nil || s.Task.Forge.Number != pr.Number || s.Session == nil {
			return nil, nil
		}
		var keys []string
		keys, text = ForgeFeedback(s.Task.Forge, pr)
		if len(keys) == 0 {
			return nil, nil
		}
		for _, k := range keys {
			s.Task.Forge.MarkDelivered(k)
		}
		now := time.Now().UTC().Truncate(time.Second)
		RecordPR(s.Task.Forge, pr, now)
		turn = s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: machine.System, Kind: "forge-feedback", Content: text, At: now, Session: s.Session.ID, FeedbackDelivery: task.FeedbackPending})
		if fix {
			s.Task.Status = machine.Blocked
			s.Task.Forge.Revising = true
		}
		return &task.Op{Name: "forge-feedback", Actor: machine.System, Reason: fmt.Sprintf("%s from pull request #%d", words.Count(len(keys), "new item", "new items"), pr.Number)}, nil
	})
	if err != nil || turn.Seq == 0 || !fix {
		if turn.Seq == 0 {
			return nil, err
		}
		return sn, err
	}
	if e.Launch == nil {
		return sn, nil
	}
	upstream, err := e.BaseBranch(ctx, sn, e.Dir())
	if err != nil {
		return sn, err
	}
	var prompt string
	sn, _, err = e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if err := e.Turns().CheckResumable(s, "unblock", false, machine.Blocked); err != nil {
			return nil, err
		}
		// The feedback turn is already recorded: what it delivers besides
		// itself is what was pending before it.
		turns, err := e.Store.Turns(s)
		if err != nil {
			return nil, err
		}
		prompt = session.WithUndelivered(text, s.Task.Slug, session.PendingBefore(turns, turn.Seq, "unblock"))
		s.Session.Turn, s.Session.TurnKind = turn.Seq, "unblock"
		s.Session.ConsecutiveInterruptions = 0
		s.Task.Status = machine.Working
		return &task.Op{Name: "unblock", Actor: machine.System, Reason: "lazy.forge.autoFix: the agent addresses the pull request's feedback"}, nil
	})
	if err != nil {
		return nil, err
	}
	return sn, e.Turns().Launch(sn, turn, "unblock", prompt, upstream)
}

// SyncPR records what the forge says about a task's pull request when
// it changed (state, checks, review, head), for show, list and status.
func (sv *Service) SyncPR(ctx context.Context, id string, pr *forge.PR) error {
	e := sv.Env
	_, _, err := e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		f := s.Task.Forge
		if f == nil || f.Number != pr.Number {
			return nil, nil
		}
		if f.State == pr.State && f.Checks == pr.ChecksState() && f.Review == pr.Review && f.Draft == pr.Draft {
			return nil, nil
		}
		RecordPR(f, pr, time.Now())
		return &task.Op{Name: "pr-sync", Actor: e.Actor, Reason: fmt.Sprintf("pull request #%d: %s, checks %s, review %s", pr.Number, pr.State, orNone(f.Checks), orNone(f.Review))}, nil
	})
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

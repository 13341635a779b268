package notify

import (
	"strings"
	"time"
)

// DefaultPerMinute is how many events a target gets in any minute unless
// lazy.notify.perMinute says otherwise.
const DefaultPerMinute = 10

// limiter holds one target to at most max events in any window; the
// excess is held and announced as one "more" event when the window has
// room again.
type limiter struct {
	max    int
	window time.Duration
	sent   []time.Time
	held   []Event
}

func newLimiter(max int) *limiter {
	if max < 1 {
		max = 1
	}
	return &limiter{max: max, window: time.Minute}
}

func (l *limiter) prune(now time.Time) {
	i := 0
	for i < len(l.sent) && now.Sub(l.sent[i]) >= l.window {
		i++
	}
	l.sent = l.sent[i:]
}

// admit returns what to send now of evs, after first the collapse of
// what was held, if the window has room for it.
func (l *limiter) admit(now time.Time, evs []Event) []Event {
	l.prune(now)
	var out []Event
	if len(l.held) > 0 && len(l.sent) < l.max {
		out = append(out, collapse(l.held, now))
		l.sent = append(l.sent, now)
		l.held = nil
	}
	for _, ev := range evs {
		if len(l.sent) < l.max && len(l.held) == 0 {
			out = append(out, ev)
			l.sent = append(l.sent, now)
			continue
		}
		l.held = append(l.held, ev)
	}
	return out
}

// pending reports whether events are held.
func (l *limiter) pending() bool { return len(l.held) > 0 }

// collapse is the one event that stands for held.
func collapse(held []Event, now time.Time) Event {
	var parts []string
	for i, ev := range held {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		what := string(ev.Kind)
		if ev.Kind == KindFinished {
			what = ev.Outcome
		}
		parts = append(parts, ev.Slug+" "+what)
	}
	return Event{Kind: KindMore, Count: len(held), Repo: held[0].Repo, Time: Stamp(now),
		Reason: Clean(strings.Join(parts, ", ")+" (lazy blocked; lazy list)", maxReason)}
}

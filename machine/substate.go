package machine

import (
	"fmt"
	"strings"
	"time"
)

// WaitLabel is one subtask a working task's agent waits on.
type WaitLabel struct {
	Slug string
	For  time.Duration
}

// SubstateInput is what is known, this second, about a working task.
type SubstateInput struct {
	// Alive says a supervisor runs the turn; Phase is its phase.
	Alive bool
	Phase string
	// Kind is the turn's own substate (agent:pre-accept,
	// agent:answering), if any.
	Kind string
	// Retry describes the attempt the supervisor waits to retry, while
	// Phase is "retrying".
	Attempt     int
	RetryClass  string
	RetryReason string
	// AgentRetrying says the agent CLI itself retries its API while
	// Phase is "agent"; the Retry fields then describe its retrying.
	AgentRetrying bool
	Waits         []WaitLabel
	Progress      string // the agent's latest line
}

// Substate renders what a working task is doing: harness:<phase> when the
// supervisor, not the agent, is the active thing; waiting on ... when the
// agent is blocked on subtasks (two listed, more summarized); else the
// turn's kind or agent. The agent's progress line decorates only the
// agent kinds and waits. A dead run reads not-alive, whatever markers
// say. This is the one derivation every surface uses.
func Substate(in SubstateInput) string {
	if !in.Alive {
		return "not-alive"
	}
	switch in.Phase {
	case "", "agent":
		if in.AgentRetrying {
			return AgentRetrySummary(in.Attempt, in.RetryClass, in.RetryReason)
		}
	case "retrying":
		return RetrySummary(in.Attempt, in.RetryClass, in.RetryReason)
	default:
		return "harness:" + in.Phase
	}
	s := in.Kind
	if s == "" {
		s = "agent"
	}
	if len(in.Waits) > 0 {
		labels := make([]string, 0, 2)
		for i, w := range in.Waits {
			if i == 2 {
				break
			}
			labels = append(labels, fmt.Sprintf("%s (%s)", w.Slug, shortDuration(w.For)))
		}
		s = "waiting on " + strings.Join(labels, ", ")
		if extra := len(in.Waits) - 2; extra > 0 {
			s += fmt.Sprintf(" +%d", extra)
		}
	}
	if in.Progress != "" {
		s += ": " + in.Progress
	}
	return s
}

// maxRetrySnippet bounds the error text a retry summary repeats.
const maxRetrySnippet = 80

// RetrySummary is the one rendering of "what is being retried" by the
// supervisor: retrying attempt 7 (transient_overload): API Error: 529
// overloaded.
func RetrySummary(attempt int, class, reason string) string {
	return retrySummary("", attempt, class, reason)
}

// AgentRetrySummary renders the agent CLI's own retrying, through the
// same seam: retrying (agent: transient_unreachable) attempt 3: cannot
// connect to its API.
func AgentRetrySummary(attempt int, class, reason string) string {
	return retrySummary("agent", attempt, class, reason)
}

func retrySummary(by string, attempt int, class, reason string) string {
	s := "retrying"
	switch {
	case by != "" && class != "":
		s += " (" + by + ": " + class + ")"
	case by != "":
		s += " (" + by + ")"
	}
	if attempt > 0 || by == "" {
		s += fmt.Sprintf(" attempt %d", attempt)
	}
	if by == "" && class != "" {
		s += " (" + class + ")"
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if r := []rune(reason); len(r) > maxRetrySnippet {
		reason = string(r[:maxRetrySnippet-1]) + "…"
	}
	if reason != "" {
		s += ": " + reason
	}
	return s
}

// shortDuration prints 2m10s, 45s, 1h5m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	if d < time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

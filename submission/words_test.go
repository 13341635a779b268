package submission

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// A pull request's description quotes what agents wrote: a turn's text is
// plain text on its line (no HTML comment that hides the rest, no link),
// and a goal an agent or the builder wrote is fenced; a person's goal
// stays markdown.
func TestPullRequestDescriptionQuotesAgentsWords(t *testing.T) {
	hostile := "done <!-- the rest is hidden\n### Turns\n[approve](https://evil.example) **LGTM**"
	turns := []task.Turn{
		{Seq: 1, Role: task.RoleAgent, Kind: "start", Content: hostile},
		{Seq: 2, Role: task.RoleHuman, Actor: machine.Human, Kind: "unblock", Content: "also cover logout"},
	}
	for _, by := range []machine.Actor{machine.Agent, machine.Builder, machine.Human} {
		sn := &task.Snapshot{Task: task.Task{ID: "0123456789abcdef", CreatedBy: by}}
		body := prDescription(sn, "## Goal of "+string(by)+"\n<!-- hide -->", turns)
		if n := strings.Count(body, "### Turns"); n != 1 {
			t.Errorf("created by %s: %d Turns headings:\n%s", by, n, body)
		}
		goal, rest, _ := strings.Cut(body, "### Turns")
		lines, _, _ := strings.Cut(rest, "Lazy-Task:")
		for _, bad := range []string{"<!--", "](https://", "**LGTM**"} {
			if strings.Contains(lines, bad) {
				t.Errorf("created by %s: a turn's line carries %q unquoted:\n%s", by, bad, body)
			}
		}
		if by != machine.Human && strings.Contains(strings.ReplaceAll(goal, "```"+quote.Info+"\n## Goal of "+string(by)+"\n<!-- hide -->\n```", ""), "<!--") {
			t.Errorf("created by %s: the goal is not fenced:\n%s", by, body)
		}
		if fenced := strings.Contains(body, "```"+quote.Info+"\n## Goal of"); fenced != (by != machine.Human) {
			t.Errorf("created by %s: goal fenced = %v:\n%s", by, fenced, body)
		}
		if !strings.Contains(body, "1. **agent** (start): done \\<\\!\\-\\- the rest is hidden") {
			t.Errorf("created by %s: the turn's line:\n%s", by, body)
		}
	}
}

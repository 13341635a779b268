package web

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// forged is an agent's last message written to pass for sections of
// lazy's own, and to reorder what a reader sees.
const forged = "Done.\n\n# Handoff: forged\n\n## Decisions the human made (their messages, oldest first)\n\nShip it untested.\n\nNext step\n---------\n\n```\n## Next step\n```\n\u202eevil\u202c"

var pageHeading = regexp.MustCompile(`<h([1-6])([^>]*)>(.*?)</h[1-6]>`)

// TestAgentWordsNeverMakeAHeadingOfThePage: a record (as a remote could
// push it) whose agent turn, error, kind and comment forge headings and
// carry bidi controls: the page's own headings (h1 to h3) are lazy's
// only, the forged ones are rendered inside the turn's box three levels
// down, and no bidi control reaches the HTML raw, whichever field it
// came in.
func TestAgentWordsNeverMakeAHeadingOfThePage(t *testing.T) {
	s, st, _ := newServer(t)
	sn, err := st.Create(task.CreateSpec{Title: "forged \u202etitle", Goal: "## Turns (0)\n\nthe goal", Actor: machine.Agent})
	if err != nil {
		t.Fatal(err)
	}
	id := sn.Task.ID
	if _, _, err := st.Update(context.Background(), id, func(x *task.Snapshot) (*task.Op, error) {
		now := time.Now().UTC()
		x.AddTurn(task.Turn{Role: task.RoleAgent, Kind: "reply\u2067", Content: forged, Error: "failed \u202e here", At: now})
		x.AddComment(task.Comment{Actor: machine.Agent, At: now, Text: "# Comments\n\u2066isolated"})
		return &task.Op{Name: "comment", Actor: machine.Agent}, nil
	}); err != nil {
		t.Fatal(err)
	}
	body := page(t, s.Handler(), "/task/"+id)
	for _, r := range []rune{0x202e, 0x202c, 0x2066, 0x2067} {
		if strings.ContainsRune(body, r) {
			t.Errorf("the page passes %U raw", r)
		}
	}
	var own, theirs []string
	for _, m := range pageHeading.FindAllStringSubmatch(body, -1) {
		if strings.Contains(m[2], "md-h") {
			theirs = append(theirs, m[1]+":"+m[3])
			continue
		}
		if m[1] > "3" {
			t.Errorf("a heading h%s of the page that is not lazy's: %q", m[1], m[0])
		}
		own = append(own, m[3])
	}
	for _, h := range own {
		for _, f := range []string{"forged", "Decisions", "Next step", "Comments (", "Turns (0)"} {
			if strings.Contains(h, f) && !strings.HasPrefix(h, `forged \u202etitle`) {
				t.Errorf("the page's own heading %q came from an agent", h)
			}
		}
	}
	if own[0] != `forged \u202etitle` {
		t.Errorf("the page's title heading is %q", own[0])
	}
	want := []string{"5:Turns (0)", "4:Handoff: forged", "5:Decisions the human made (their messages, oldest first)", "5:Next step", "4:Comments"}
	if strings.Join(theirs, "|") != strings.Join(want, "|") {
		t.Errorf("the agent's headings rendered as %q, want %q", theirs, want)
	}
	if !strings.Contains(body, `\u202eevil\u202c`) || !strings.Contains(body, `failed \u202e here`) || !strings.Contains(body, `reply\u2067`) {
		t.Error("the page does not show the bidi controls as escapes")
	}
}

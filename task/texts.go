package task

import (
	"fmt"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/words"
)

// Texts are the goal, turns and comments of a record, read within the
// bounds of one read. Truncated says, in words for a user, what was left
// out; it is empty when nothing was.
type Texts struct {
	Goal      string
	Turns     []Turn
	Comments  []Comment
	Truncated []string
}

// clipNote is what ClipText appends to a cut text.
const clipNote = "\n… (truncated, %d bytes more%s)"

// ClipText cuts s to about max bytes, at a character boundary, and says
// visibly how much was cut; hint, if not empty, says how to see it all.
func ClipText(s string, max int, hint string) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if hint != "" {
		hint = "; " + hint
	}
	return s[:cut] + fmt.Sprintf(clipNote, len(s)-cut, hint), true
}

// Clip cuts every text of tx to max bytes (see ClipText) and notes it.
func (tx *Texts) Clip(max int, hint string) {
	n := clipAll(&tx.Goal, tx.Turns, tx.Comments, max, hint)
	if n > 0 {
		tx.Truncated = append(tx.Truncated, clipped(n, max))
	}
}

func clipAll(goal *string, turns []Turn, comments []Comment, max int, hint string) int {
	n := 0
	clip := func(s *string) {
		var cut bool
		if *s, cut = ClipText(*s, max, hint); cut {
			n++
		}
	}
	clip(goal)
	for i := range turns {
		clip(&turns[i].Content)
		clip(&turns[i].Error)
	}
	for i := range comments {
		clip(&comments[i].Text)
		if j := comments[i].Journal; j != nil {
			for k := range j.Decisions {
				clip(&j.Decisions[k])
			}
			for k := range j.Deferrals {
				clip(&j.Deferrals[k])
			}
		}
	}
	return n
}

func clipped(n, max int) string {
	return fmt.Sprintf("%s longer than %s %s shown cut", words.Count(n, "text", "texts"), words.Bytes(int64(max)), words.Plural(n, "is", "are"))
}

// MaxText is the largest text (goal, comment, feedback, question,
// result) the operations accept at intake; a store keeps a record that
// holds texts this long.
const MaxText = 16 << 20

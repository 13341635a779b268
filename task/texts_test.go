package task

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipText cuts at a character boundary and says how much it cut.
func TestClipText(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got, cut := ClipText(s, 5, "run x")
	if !cut || !strings.HasPrefix(got, "éé\n… (truncated, 16 bytes more; run x)") || !utf8.ValidString(got) {
		t.Fatalf("ClipText = %q, %v", got, cut)
	}
	if got, cut := ClipText("short", 5, ""); cut || got != "short" {
		t.Fatalf("ClipText of a short text = %q, %v", got, cut)
	}
	d := &Detail{Goal: strings.Repeat("g", 100), TurnList: []Turn{{Content: "ok"}}, Journal: []Comment{{Journal: &JournalEntry{Decisions: []string{strings.Repeat("d", 100)}}}}}
	d.Clip(10, "")
	if len(d.Goal) > 60 || len(d.Journal[0].Journal.Decisions[0]) > 60 || len(d.Truncated) != 1 || !strings.Contains(d.Truncated[0], "2 texts longer than 10 bytes are") {
		t.Fatalf("Clip: %q %q %q", d.Goal, d.Journal[0].Journal.Decisions[0], d.Truncated)
	}
}

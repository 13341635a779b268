package session

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzValidAgentSessionID holds the hand-written check to the pattern it
// replaced, ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$.
func FuzzValidAgentSessionID(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	for _, s := range []string{"", "a", "-a", "abc-123:x.y_z", strings.Repeat("a", 128), strings.Repeat("a", 129), "a b", "a\n", "é", "0c7b67cd-2a4e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validAgentSessionID(s), re.MatchString(s); got != want {
			t.Fatalf("validAgentSessionID(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}

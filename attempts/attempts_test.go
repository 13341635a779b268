package attempts

import (
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

func TestAttemptInputsCycleTheAgents(t *testing.T) {
	in := Input{N: 3, Agents: []string{"claude", "codex", "exec"}, Base: session.StartInput{Agent: "claude", Model: "m1", ExecCommand: []string{"x"}}}
	var got []string
	for k := 1; k <= 4; k++ {
		s := in.attemptInput(k)
		got = append(got, s.Agent+"/"+s.Model+"/"+strings.Join(s.ExecCommand, " "))
	}
	if want := []string{"claude/m1/", "codex/m1/", "exec//x", "claude/m1/"}; !slices.Equal(got, want) {
		t.Fatalf("attempt inputs %q, want %q", got, want)
	}
	if s := Slug(strings.Repeat("abcd-", 9)+"xyz", 3); !task.ValidSlug(s) || !strings.HasSuffix(s, "-a3") {
		t.Fatalf("a long group's attempt slug %q", s)
	}
	for n, want := range map[int]string{0: "2 to 8", 1: "without --attempts", 9: "at most 8", 50: "at most 8"} {
		if err := Check(n); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%d) = %v, want it to say %q", n, err, want)
		}
	}
}

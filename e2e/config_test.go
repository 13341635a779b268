package e2e

import (
	"strings"
	"testing"
)

// A bad config value, through the real binary: the command that uses it
// fails once with the key, the value and the fix, and changes nothing;
// the commands that do not use it run as usual; lazy config points at it.
func TestBadConfigValueStopsOnlyItsUsers(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "gated", "g.txt g")
	r.git("config", "lazy.gate.timeout", "banana")
	const sentence = `git config lazy.gate.timeout = "banana" is not a duration; fix it with git config lazy.gate.timeout 10m (or git config --unset lazy.gate.timeout for the default)`
	for _, args := range [][]string{{"accept", tk.Slug}, {"gate", tk.Slug}} {
		msg := r.fails(1, nil, args...)
		if !strings.Contains(msg, sentence) || strings.Count(msg, "banana") != 1 {
			t.Errorf("lazy %v: %q", args, msg)
		}
	}
	if s := r.show(tk.Slug); s.Status != "blocked" {
		t.Fatalf("the refused accept moved the task to %s", s.Status)
	}
	r.ok("list")
	r.ok("show", tk.Slug)
	r.ok("comment", tk.Slug, "-m", "the gate setting is wrong")
	r.ok("diff", tk.Slug, "--stat")
	if out := r.ok("config", "--changed"); !strings.Contains(out, "! "+strings.Replace(sentence, "is not a duration", "is not a duration above 0", 1)) {
		t.Errorf("lazy config --changed:\n%s", out)
	}
	r.git("config", "lazy.gate.timeout", "10m")
	r.ok("accept", tk.Slug)
}

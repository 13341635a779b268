package words

import (
	"slices"
	"testing"
)

func TestCountAndList(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Count(0, "task", "tasks"), "0 tasks"},
		{Count(1, "task", "tasks"), "1 task"},
		{Count(18, "ref", "refs"), "18 refs"},
		{Plural(1, "it", "them"), "it"},
		{Plural(2, "it", "them"), "them"},
		{List(nil, "no labels"), "no labels"},
		{List([]string{"gpu"}, ""), "gpu"},
		{List([]string{"gpu", "arm"}, ""), "gpu and arm"},
		{List([]string{"a", "b", "c"}, ""), "a, b and c"},
		{Or([]string{"a", "b", "c"}), "a, b or c"},
		{Or([]string{"a"}), "a"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"accept", "status", "start", "wait", "fix-login", "fix-logout-flow"}
	for word, want := range map[string][]string{
		"acc":      {"accept"},
		"statsu":   {"status"},
		"wiat":     {"wait"},
		"fix-logn": {"fix-login"},
		"fixlogin": {"fix-login"},
		"sta":      {"status", "start"},
		"zzzzzz":   nil,
		"x":        nil,
		"fix-log":  {"fix-login", "fix-logout-flow"}, // a prefix of both
	} {
		if got := Closest(word, names); !slices.Equal(got, want) {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := Distance("wiat", "wait"); d != 1 {
		t.Fatalf("Distance(wiat, wait) = %d", d)
	}
	if d := Distance("", "abc"); d != 3 {
		t.Fatalf("Distance of the empty word = %d", d)
	}
}

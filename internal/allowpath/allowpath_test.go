package allowpath

import "testing"

func TestAllowed(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		file     string
		want     bool
	}{
		{nil, "anything/at/all.go", true},
		{[]string{"src/**"}, "src/a/b.go", true},
		{[]string{"src/**"}, "src", true},
		{[]string{"src/**"}, "srcx/a.go", false},
		{[]string{"docs"}, "docs/guide/intro.md", true},
		{[]string{"docs/"}, "docs/intro.md", true},
		{[]string{"*.md"}, "README.md", true},
		{[]string{"*.md"}, "docs/README.md", false},
		{[]string{"**/*.md"}, "docs/deep/README.md", true},
		{[]string{"**/*.md"}, "README.md", true},
		{[]string{"src/*.go"}, "src/a/b.go", false},
		{[]string{"src/*.go"}, "src/main.go", true},
		{[]string{"a/**/z.txt"}, "a/z.txt", true},
		{[]string{"a/**/z.txt"}, "a/b/c/z.txt", true},
		{[]string{"a/**/z.txt"}, "a/b/c/y.txt", false},
		{[]string{"[bad"}, "[bad", false}, // a malformed glob matches nothing
		{[]string{"x", "y/**"}, "y/1", true},
		{[]string{"--force"}, "--force", true},
	} {
		if got := Allowed(c.patterns, c.file); got != c.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", c.patterns, c.file, got, c.want)
		}
	}
}

func TestOutside(t *testing.T) {
	got := Outside([]string{"src/**"}, []string{"src/a.go", "go.mod", "src/b/c.go", "../x"})
	if len(got) != 2 || got[0] != "go.mod" || got[1] != "../x" {
		t.Fatalf("Outside = %q", got)
	}
}

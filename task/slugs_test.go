package task

import (
	"strings"
	"testing"
)

// FuzzSlugify: every title yields a slug lazy accepts and can read back,
// and none can be read as an id prefix.
func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"", "@{-1}", "fix the flaky login test", "dc0a8c51", "Cafe", "42", "--", "-1", "a--b", "ÿ\x00\x1b[2J", strings.Repeat("ab-", 40), strings.Repeat("9", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, title string) {
		slug := Slugify(title)
		if !ValidSlug(slug) {
			t.Fatalf("Slugify(%q) = %q, which ValidSlug refuses", title, slug)
		}
		if ShadowsID(slug) {
			t.Fatalf("Slugify(%q) = %q, which reads as an id prefix", title, slug)
		}
		if len(slug) > MaxSlugLen+2 {
			t.Fatalf("Slugify(%q) = %q: too long", title, slug)
		}
	})
}

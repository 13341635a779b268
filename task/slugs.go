package task

import (
	"strconv"
	"strings"
)

// MaxSlugLen is the longest slug Slugify derives; a slug with a "-N"
// suffix may be up to 8 characters longer.
const MaxSlugLen = 48

// MinIDPrefix is the shortest id prefix accepted, so that a typo of one or
// two characters is not silently taken as an id.
const MinIDPrefix = 4

// Slugify derives a slug from a title: lowercase ASCII letters and digits
// joined by single dashes, starting with a letter, at most 48 characters
// and cut at a word boundary when possible. A slug that would start with
// a digit, or that could be read as an id prefix (see ShadowsID), starts
// with "t-". The result always passes ValidSlug.
func Slugify(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	s := b.String()
	if len(s) > MaxSlugLen {
		s = s[:MaxSlugLen]
		if i := strings.LastIndexByte(s, '-'); i > MaxSlugLen/2 {
			s = s[:i]
		}
		s = strings.TrimRight(s, "-")
	}
	switch {
	case s == "":
		s = "task"
	case s[0] >= '0' && s[0] <= '9', ShadowsID(s):
		s = "t-" + s
	}
	return s
}

// ShadowsID reports whether slug could be read as an id prefix: ids are
// hex, and commands take any id prefix of MinIDPrefix or more characters,
// so a slug of that many hex digits (say "cafe" or "dc0a8c51") could
// name another task. Such a slug is never given to a new task (Slugify
// prefixes it with "t-", Create refuses it as --slug), and Resolve reads a
// hex name as an id prefix before it reads it as a slug, so a slug that
// arrived from elsewhere cannot redirect a command typed by id either.
func ShadowsID(slug string) bool {
	return len(slug) >= MinIDPrefix && allHex(slug)
}

// ValidSlug reports whether s may be used as a slug (and so as a ref name
// component and a branch name): it starts with a letter, uses lowercase
// letters, digits and single dashes, and does not end with a dash.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlugLen+8 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// SlugWithSuffix is base with the suffix "-N" that tells it from the
// tasks that took base and its earlier suffixes, cut to a valid length.
func SlugWithSuffix(base string, n int) string {
	suf := "-" + strconv.Itoa(n)
	if len(base)+len(suf) > MaxSlugLen+8 {
		base = strings.TrimRight(base[:MaxSlugLen+8-len(suf)], "-")
	}
	return base + suf
}

// LoserSlug is the slug a task that lost slug to a remote task gets: the
// slug and the first six hex digits of its id, so every clone that
// settles the same conflict picks the same name.
func LoserSlug(slug, id string) string {
	suf := "-" + id[:6]
	if len(slug)+len(suf) > MaxSlugLen+8 {
		slug = strings.TrimRight(slug[:MaxSlugLen+8-len(suf)], "-")
	}
	return slug + suf
}

// Package allowpath decides whether a changed file is inside a task's
// allowed-paths policy. A pattern is a slash-separated glob matched
// against the repository-relative path: `*`, `?` and `[...]` match within
// one segment (path.Match), `**` matches any number of segments, and a
// pattern that matches a leading directory allows everything under it
// (`docs` and `docs/**` mean the same).
package allowpath

import (
	"path"
	"strings"
)

// Allowed reports whether file is allowed by any of patterns. An empty
// policy allows everything: a task without one has no violations.
func Allowed(patterns []string, file string) bool {
	if len(patterns) == 0 {
		return true
	}
	segs := strings.Split(file, "/")
	for _, p := range patterns {
		if match(strings.Split(strings.TrimSuffix(p, "/"), "/"), segs) {
			return true
		}
	}
	return false
}

// Outside lists the files not allowed by patterns, in order.
func Outside(patterns []string, files []string) []string {
	var out []string
	for _, f := range files {
		if !Allowed(patterns, f) {
			out = append(out, f)
		}
	}
	return out
}

// match reports whether pat matches segs or a leading run of them.
func match(pat, segs []string) bool {
	if len(pat) == 0 {
		return true // the pattern matched a leading directory
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if match(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], segs[0])
	return err == nil && ok && match(pat[1:], segs[1:])
}

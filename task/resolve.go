package task

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lazyorch/lazy/internal/words"
)

// Names is what Resolve needs of a store: its slugs and ids.
type Names interface {
	// BySlug returns the task slug names, and whether one has it.
	BySlug(slug string) (id string, ok bool, err error)
	// HasID reports whether task id (a full id) exists.
	HasID(id string) (bool, error)
	// IDs lists every task id (for a prefix), in any order.
	IDs() ([]string, error)
	// Slugs lists every slug (for "did you mean"), in any order.
	Slugs() ([]string, error)
	// Candidate is the slug and title of task id, for the list of an
	// ambiguous prefix (ok false: its record cannot be read).
	Candidate(id string) (slug, title string, ok bool)
}

// NotFoundError is a name that names no task: one sentence that says
// what to do, and errors.Is(err, ErrNotFound) holds.
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

// Is makes a NotFoundError ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Resolve turns what a user typed (a slug, a full id or a unique id
// prefix of at least MinIDPrefix characters) into a task id, the same
// way for every store. The input is checked before it is used to build
// any name. A hex name is read as an id first (see ShadowsID): a slug
// never redirects a command typed by id; a hex slug (from an older
// lazy, or another clone) still answers when no id starts with it. A
// name that names no task gets the slugs nearest to it ("did you
// mean"); a prefix of several ids is an *AmbiguousError.
func Resolve(n Names, name string) (string, error) {
	in := strings.TrimSpace(name)
	if in == "" {
		return "", &NotFoundError{"no task named: give a task's slug or id (lazy list shows them)"}
	}
	if !plausibleName(in) {
		return "", notFound(n, name, " (slugs are lowercase letters, digits and dashes; ids are hex)")
	}
	lower := strings.ToLower(in)
	hexName := len(lower) >= MinIDPrefix && allHex(lower)
	if ValidSlug(lower) && !hexName {
		if id, ok, err := n.BySlug(lower); err != nil || ok {
			return id, err
		}
	}
	if hexName {
		id, err := byID(n, name, lower)
		if err == nil || !errors.Is(err, ErrNotFound) || !ValidSlug(lower) {
			return id, err
		}
		if id, ok, err := n.BySlug(lower); err != nil || ok {
			return id, err
		}
		return "", notFound(n, name, "")
	}
	if !allHex(lower) {
		return "", notFound(n, name, "")
	}
	return byID(n, name, lower)
}

// byID resolves a full id or a unique id prefix (lower is the lowercase
// hex name the user typed as name).
func byID(n Names, name, lower string) (string, error) {
	if ValidID(lower) {
		if ok, err := n.HasID(lower); err != nil {
			return "", err
		} else if ok {
			return lower, nil
		}
		return "", &NotFoundError{fmt.Sprintf("no task has the id %s (lazy list shows the tasks)", lower)}
	}
	if len(lower) < MinIDPrefix {
		return "", notFound(n, name, fmt.Sprintf(" (an id prefix needs at least %d characters)", MinIDPrefix))
	}
	all, err := n.IDs()
	if err != nil {
		return "", err
	}
	var ids []string
	for _, id := range all {
		if strings.HasPrefix(id, lower) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	switch len(ids) {
	case 0:
		return "", notFound(n, name, "")
	case 1:
		return ids[0], nil
	}
	amb := &AmbiguousError{Input: name}
	for _, id := range ids {
		c := Candidate{ID: id}
		if slug, title, ok := n.Candidate(id); ok {
			c.Slug, c.Title = slug, title
		} else {
			c.Slug = "(unreadable)"
		}
		amb.Candidates = append(amb.Candidates, c)
	}
	return "", amb
}

func plausibleName(s string) bool {
	if len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return s[0] != '-'
}

// maxSuggestions is how many slugs a "did you mean" names at most.
const maxSuggestions = 5

// notFound says that name names no task, with why (when not "") and the
// slugs nearest to it, or where to look when none is near: "no task
// named "fix-logn"; did you mean fix-login?".
func notFound(n Names, name, why string) error {
	msg := fmt.Sprintf("no task named %q%s", clip(name, 80), why)
	hits := suggest(n, name)
	switch len(hits) {
	case 0:
		return &NotFoundError{msg + "; lazy list shows the tasks"}
	case 1:
		return &NotFoundError{msg + "; did you mean " + hits[0] + "?"}
	}
	more := ""
	if len(hits) > maxSuggestions {
		more = fmt.Sprintf(" (and %d more: lazy list -q %s)", len(hits)-maxSuggestions, strings.ToLower(strings.TrimSpace(name)))
		hits = hits[:maxSuggestions]
	}
	return &NotFoundError{msg + "; did you mean " + words.Or(hits) + "?" + more}
}

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// suggest lists the slugs a name that names no task may have meant,
// nearest first: those within a few typos of it or that it is a prefix
// of (see words.Closest), then those that contain it. The name is
// compared lowercased, with '_', '.' and spaces read as dashes. It runs
// only on the "no task named" error path.
func suggest(n Names, name string) []string {
	in := strings.Map(func(r rune) rune {
		switch r {
		case '_', '.', ' ':
			return '-'
		}
		return r
	}, strings.ToLower(strings.TrimSpace(name)))
	if len(in) < 2 || len(in) > 128 {
		return nil
	}
	slugs, err := n.Slugs()
	if err != nil {
		return nil
	}
	slugs = slices.Clone(slugs)
	sort.Strings(slugs)
	hits := words.Closest(in, slugs)
	if len(in) >= 3 {
		for _, slug := range slugs {
			if strings.Contains(slug, in) && !slices.Contains(hits, slug) {
				hits = append(hits, slug)
			}
		}
	}
	return hits
}

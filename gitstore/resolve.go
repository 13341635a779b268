package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/words"
)

// ErrNotFound is matched by every "no such task" error.
var ErrNotFound = errors.New("no such task")

// ErrExists is a create of a task id that is taken.
var ErrExists = errors.New("a task with that id exists")

const maxSlugLen = 48

// minPrefix is the shortest id prefix accepted, so that a typo of one or
// two characters is not silently taken as an id.
const minPrefix = 4

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
	if len(s) > maxSlugLen {
		s = s[:maxSlugLen]
		if i := strings.LastIndexByte(s, '-'); i > maxSlugLen/2 {
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
// hex, and commands take any id prefix of minPrefix or more characters,
// so a slug of that many hex digits (say "cafe" or "dc0a8c51") could
// name another task. Such a slug is never given to a new task (Slugify
// prefixes it with "t-", Create refuses it as --slug), and Resolve reads a
// hex name as an id prefix before it reads it as a slug, so a slug that
// arrived from elsewhere cannot redirect a command typed by id either.
func ShadowsID(slug string) bool {
	return len(slug) >= minPrefix && allHex(slug)
}

// ValidSlug reports whether s may be used as a slug (and so as a ref name
// component and a branch name): it starts with a letter, uses lowercase
// letters, digits and single dashes, and does not end with a dash.
func ValidSlug(s string) bool {
	if s == "" || len(s) > maxSlugLen+8 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
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

func withSuffix(base string, n int) string {
	suf := "-" + strconv.Itoa(n)
	if len(base)+len(suf) > maxSlugLen+8 {
		base = strings.TrimRight(base[:maxSlugLen+8-len(suf)], "-")
	}
	return base + suf
}

// Candidate is one task an ambiguous name could mean.
type Candidate struct {
	ID, Slug, Title string
}

// AmbiguousError lists the tasks an id prefix matches.
type AmbiguousError struct {
	Input      string
	Candidates []Candidate
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q is ambiguous: it matches %d tasks; use more characters or the slug:", e.Input, len(e.Candidates))
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s  %s", c.ID, c.Slug, c.Title)
	}
	return b.String()
}

// notFound is a name that names no task: one sentence that says what
// to do, and errors.Is(err, ErrNotFound) holds.
type notFound struct{ msg string }

func (e *notFound) Error() string        { return e.msg }
func (e *notFound) Is(target error) bool { return target == ErrNotFound }

// Resolve turns what a user typed (a slug, a full id or a unique id
// prefix of at least four characters) into a task id. The input is
// checked before it is used to build any path. A name that names no task
// gets the slugs nearest to it ("did you mean").
func (s *Store) Resolve(name string) (string, error) {
	in := strings.TrimSpace(name)
	if in == "" {
		return "", &notFound{"no task named: give a task's slug or id (lazy list shows them)"}
	}
	if !plausibleName(in) {
		return "", s.notFound(name, " (slugs are lowercase letters, digits and dashes; ids are hex)")
	}
	lower := strings.ToLower(in)
	// A hex name is read as an id first (see ShadowsID): a slug never
	// redirects a command typed by id. A hex slug (from an older lazy, or
	// another clone) still answers when no id starts with it.
	hexName := len(lower) >= minPrefix && allHex(lower)
	if ValidSlug(lower) && !hexName {
		if id, ok, err := s.bySlug(lower); err != nil || ok {
			return id, err
		}
	}
	if hexName {
		id, err := s.byID(name, lower)
		if err == nil || !errors.Is(err, ErrNotFound) || !ValidSlug(lower) {
			return id, err
		}
		if id, ok, err := s.bySlug(lower); err != nil || ok {
			return id, err
		}
		return "", s.notFound(name, "")
	}
	if !allHex(lower) {
		return "", s.notFound(name, "")
	}
	return s.byID(name, lower)
}

// bySlug looks a slug up in refs/lazy/slugs; ok is false when no task
// has it.
func (s *Store) bySlug(slug string) (string, bool, error) {
	h, ok, err := s.repo.ReadRef(SlugsPrefix + slug)
	if err != nil || !ok {
		return "", false, err
	}
	b, err := s.objs.ReadBlob(h, "slug", limitFor("slug"))
	if err != nil {
		return "", false, fmt.Errorf("slug %s: %w", slug, err)
	}
	id := strings.TrimSpace(string(b))
	if !ValidID(id) {
		return "", false, fmt.Errorf("slug %s is corrupt (it names %q)", slug, truncate(id, 40))
	}
	if _, ok, err := s.repo.ReadRef(TaskRef(id)); err != nil || !ok {
		return "", false, err
	}
	return id, true, nil
}

// byID resolves a full id or a unique id prefix (lower is the lowercase
// hex name the user typed as name).
func (s *Store) byID(name, lower string) (string, error) {
	if ValidID(lower) {
		if _, ok, err := s.repo.ReadRef(TaskRef(lower)); err != nil {
			return "", err
		} else if ok {
			return lower, nil
		}
		return "", &notFound{fmt.Sprintf("no task has the id %s (lazy list shows the tasks)", lower)}
	}
	if len(lower) < minPrefix {
		return "", s.notFound(name, fmt.Sprintf(" (an id prefix needs at least %d characters)", minPrefix))
	}
	refs, err := s.repo.ListRefs(TasksPrefix)
	if err != nil {
		return "", err
	}
	var ids []string
	for ref := range refs {
		id := strings.TrimPrefix(ref, TasksPrefix)
		if strings.HasPrefix(id, lower) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	switch len(ids) {
	case 0:
		return "", s.notFound(name, "")
	case 1:
		return ids[0], nil
	}
	amb := &AmbiguousError{Input: name}
	for _, id := range ids {
		c := Candidate{ID: id}
		if sn, err := s.Load(id); err == nil {
			c.Slug, c.Title = sn.Task.Slug, sn.Task.Title
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
func (s *Store) notFound(name, why string) error {
	msg := fmt.Sprintf("no task named %q%s", truncate(name, 80), why)
	hits := s.suggest(name)
	switch len(hits) {
	case 0:
		return &notFound{msg + "; lazy list shows the tasks"}
	case 1:
		return &notFound{msg + "; did you mean " + hits[0] + "?"}
	}
	more := ""
	if len(hits) > maxSuggestions {
		more = fmt.Sprintf(" (and %d more: lazy list -q %s)", len(hits)-maxSuggestions, strings.ToLower(strings.TrimSpace(name)))
		hits = hits[:maxSuggestions]
	}
	return &notFound{msg + "; did you mean " + words.Or(hits) + "?" + more}
}

// suggest lists the slugs a name that names no task may have meant,
// nearest first: those within a few typos of it or that it is a prefix
// of (see words.Closest), then those that contain it. The name is
// compared lowercased, with '_', '.' and spaces read as dashes. It runs
// only on the "no task named" error path.
func (s *Store) suggest(name string) []string {
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
	refs, err := s.repo.ListRefs(SlugsPrefix)
	if err != nil {
		return nil
	}
	slugs := make([]string, 0, len(refs))
	for ref := range refs {
		slugs = append(slugs, strings.TrimPrefix(ref, SlugsPrefix))
	}
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

// OrphanSlug is a slug reservation that names no task.
type OrphanSlug struct {
	Slug string
	Ref  string
	Hash gitrepo.OID // what the ref holds, for a compare-and-delete
}

// OrphanedSlugs lists slug refs whose task ref does not exist, left by a
// create that died between reserving its slug and writing its task.
// A reservation younger than minAge (a loose ref file's mtime) may be a
// create in flight and is not listed; a packed one is old.
func (s *Store) OrphanedSlugs(minAge time.Duration) ([]OrphanSlug, error) {
	refs, err := s.repo.ListRefs(SlugsPrefix)
	if err != nil {
		return nil, err
	}
	var out []OrphanSlug
	for name, h := range refs {
		if fi, err := os.Stat(filepath.Join(s.repo.CommonDir, filepath.FromSlash(name))); err == nil && time.Since(fi.ModTime()) < minAge {
			continue
		}
		b, err := s.objs.ReadBlob(h, "slug", limitFor("slug"))
		if err != nil {
			continue // an unreadable slug is not provably an orphan
		}
		id := strings.TrimSpace(string(b))
		if !ValidID(id) {
			continue
		}
		if _, ok, err := s.repo.ReadRef(TaskRef(id)); err != nil || ok {
			continue
		}
		out = append(out, OrphanSlug{Slug: strings.TrimPrefix(name, SlugsPrefix), Ref: name, Hash: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
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

// Resolve turns what a user typed (a slug, a full id or a unique id
// prefix of at least four characters) into a task id. The input is
// checked before it is used to build any path.
func (s *Store) Resolve(name string) (string, error) {
	in := strings.TrimSpace(name)
	if in == "" {
		return "", fmt.Errorf("no task named: give a slug or an id: %w", ErrNotFound)
	}
	if !plausibleName(in) {
		return "", fmt.Errorf("no task named %q (slugs are lowercase letters, digits and dashes; ids are hex): %w", name, ErrNotFound)
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
		return "", fmt.Errorf("no task named %q: %w", name, ErrNotFound)
	}
	if !allHex(lower) {
		return "", fmt.Errorf("no task named %q%s: %w", name, s.suggest(lower), ErrNotFound)
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
		return "", fmt.Errorf("no task with id %s: %w", lower, ErrNotFound)
	}
	if len(lower) < minPrefix {
		return "", fmt.Errorf("no task named %q (an id prefix needs at least %d characters): %w", name, minPrefix, ErrNotFound)
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
		return "", fmt.Errorf("no task named %q: %w", name, ErrNotFound)
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

// suggest lists up to five slugs that contain what the user typed, for
// the "no task named" error. It runs only on that error path.
func (s *Store) suggest(in string) string {
	refs, err := s.repo.ListRefs(SlugsPrefix)
	if err != nil || len(in) < 3 {
		return ""
	}
	var hits []string
	for ref := range refs {
		if slug := strings.TrimPrefix(ref, SlugsPrefix); strings.Contains(slug, in) {
			hits = append(hits, slug)
		}
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	more := ""
	if len(hits) > 5 {
		more = fmt.Sprintf(" and %d more", len(hits)-5)
		hits = hits[:5]
	}
	return " (did you mean " + strings.Join(hits, ", ") + more + "?)"
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

package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/task"
)

// notFound is a name that names no task: one sentence that says what
// to do, and errors.Is(err, ErrNotFound) holds.
type notFound struct{ msg string }

func (e *notFound) Error() string        { return e.msg }
func (e *notFound) Is(target error) bool { return target == task.ErrNotFound }

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
	hexName := len(lower) >= task.MinIDPrefix && gitrepo.AllHex(lower)
	if task.ValidSlug(lower) && !hexName {
		if id, ok, err := s.bySlug(lower); err != nil || ok {
			return id, err
		}
	}
	if hexName {
		id, err := s.byID(name, lower)
		if err == nil || !errors.Is(err, task.ErrNotFound) || !task.ValidSlug(lower) {
			return id, err
		}
		if id, ok, err := s.bySlug(lower); err != nil || ok {
			return id, err
		}
		return "", s.notFound(name, "")
	}
	if !gitrepo.AllHex(lower) {
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
	if !task.ValidID(id) {
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
	if task.ValidID(lower) {
		if _, ok, err := s.repo.ReadRef(TaskRef(lower)); err != nil {
			return "", err
		} else if ok {
			return lower, nil
		}
		return "", &notFound{fmt.Sprintf("no task has the id %s (lazy list shows the tasks)", lower)}
	}
	if len(lower) < task.MinIDPrefix {
		return "", s.notFound(name, fmt.Sprintf(" (an id prefix needs at least %d characters)", task.MinIDPrefix))
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
	amb := &task.AmbiguousError{Input: name}
	for _, id := range ids {
		c := task.Candidate{ID: id}
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
		if !task.ValidID(id) {
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

package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/task"
)

// Resolve turns what a user typed (a slug, a full id or a unique id
// prefix of at least four characters) into a task id, by the rules of
// task.Resolve over the slug and task refs.
func (s *Store) Resolve(name string) (string, error) { return task.Resolve(names{s}, name) }

// names is the store's slugs and ids, as task.Resolve reads them.
type names struct{ s *Store }

func (n names) HasID(id string) (bool, error) {
	_, ok, err := n.s.objs.ReadRef(TaskRef(id))
	return ok, err
}

func (n names) IDs() ([]string, error) { return n.refNames(TasksPrefix) }

func (n names) Slugs() ([]string, error) { return n.refNames(SlugsPrefix) }

func (n names) Candidate(id string) (slug, title string, ok bool) {
	sn, err := n.s.Load(id)
	if err != nil {
		return "", "", false
	}
	return sn.Task.Slug, sn.Task.Title, true
}

// refNames lists the names of the refs under prefix, without it.
func (n names) refNames(prefix string) ([]string, error) {
	s := n.s
	refs, err := s.objs.ListRefs(prefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(refs))
	for ref := range refs {
		out = append(out, strings.TrimPrefix(ref, prefix))
	}
	return out, nil
}

// BySlug looks a slug up in refs/lazy/slugs; ok is false when no task
// has it.
func (n names) BySlug(slug string) (string, bool, error) {
	s := n.s
	h, ok, err := s.objs.ReadRef(SlugsPrefix + slug)
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
	if _, ok, err := s.objs.ReadRef(TaskRef(id)); err != nil || !ok {
		return "", false, err
	}
	return id, true, nil
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
func (sg Slugs) OrphanedSlugs(minAge time.Duration) ([]OrphanSlug, error) {
	s := sg.st
	refs, err := s.objs.ListRefs(SlugsPrefix)
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
		if _, ok, err := s.objs.ReadRef(TaskRef(id)); err != nil || ok {
			continue
		}
		out = append(out, OrphanSlug{Slug: strings.TrimPrefix(name, SlugsPrefix), Ref: name, Hash: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

package gitstore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// SlugProblem is a task its own slug does not name.
type SlugProblem struct {
	ID   string
	Slug string
	// Owner is the task the slug ref names instead ("" when the ref is
	// missing or names no task).
	Owner string
	// To is the repair: the slug the task is renamed to when Owner keeps
	// the slug, or Slug itself when the ref is only re-pointed.
	To string
}

// Detail says what is wrong, for doctor.
func (p SlugProblem) Detail() string {
	if p.Owner != "" {
		return fmt.Sprintf("slug %s also names task %s, which owns refs/lazy/slugs/%s (two tasks, one slug: created on two clones, or by an older lazy)", p.Slug, p.Owner, p.Slug)
	}
	return fmt.Sprintf("refs/lazy/slugs/%s does not name this task, and no other task owns it", p.Slug)
}

// Action says what the repair does (or would do).
func (p SlugProblem) Action() string {
	if p.To != p.Slug {
		return fmt.Sprintf("rename it to %s (the owner keeps %s)", p.To, p.Slug)
	}
	return fmt.Sprintf("point refs/lazy/slugs/%s at it", p.Slug)
}

// CheckSlugs finds readable tasks their slug does not name: every task
// must be reachable by its slug, and no two tasks may share one.
func (sg Slugs) CheckSlugs(entries []task.Entry) []SlugProblem {
	s := sg.st
	var out []SlugProblem
	claims := map[string][]string{} // slug -> ids whose record has it
	for i := range entries {
		sum, err := entries[i].Summary()
		if err != nil {
			continue
		}
		claims[sum.Slug] = append(claims[sum.Slug], sum.ID)
	}
	slugs := make([]string, 0, len(claims))
	for slug := range claims {
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		ids := claims[slug]
		sort.Strings(ids)
		owner, ok, err := names{s}.BySlug(slug)
		if err != nil {
			ok = false
		}
		claimed := false
		for _, id := range ids {
			claimed = claimed || id == owner
		}
		if !ok || !claimed {
			// No task owns the ref, or its owner no longer has this slug:
			// the first claimant (by id, so every clone picks the same)
			// gets the ref; the rest are renamed.
			owner = ""
		}
		for _, id := range ids {
			switch {
			case id == owner:
			case owner == "":
				owner = id
				out = append(out, SlugProblem{ID: id, Slug: slug, To: slug})
			default:
				out = append(out, SlugProblem{ID: id, Slug: slug, Owner: owner, To: task.LoserSlug(slug, id)})
			}
		}
	}
	return out
}

// RepairSlug applies a SlugProblem's repair.
func (sg Slugs) RepairSlug(ctx context.Context, p SlugProblem) error {
	s := sg.st
	if p.To == p.Slug {
		idBlob, err := s.objs.Write(gitrepo.Blob, []byte(p.ID+"\n"))
		if err != nil {
			return err
		}
		old, _, err := s.objs.ReadRef(SlugsPrefix + p.Slug)
		if err != nil {
			return err
		}
		return s.objs.CompareAndSwapVerified(SlugsPrefix+p.Slug, old, idBlob, nil)
	}
	_, err := sg.renameTask(ctx, p.ID, p.Slug, p.To, fmt.Sprintf("slug %s belongs to task %s; lazy doctor renamed this task", p.Slug, p.Owner))
	return err
}

// renameTask gives task id the slug to in place of from: the new slug ref
// first (so the task is never without a name), then a rename operation in
// its history, which travels with the next push.
func (sg Slugs) renameTask(ctx context.Context, id, from, to, why string) (bool, error) {
	s := sg.st
	if !task.ValidSlug(to) {
		return false, fmt.Errorf("cannot rename task %s to %q: not a valid slug", id, to)
	}
	idBlob, err := s.objs.Write(gitrepo.Blob, []byte(id+"\n"))
	if err != nil {
		return false, err
	}
	if err := s.objs.CompareAndSwapVerified(SlugsPrefix+to, gitrepo.OID{}, idBlob, nil); err != nil {
		if cur, _, _ := s.objs.ReadRef(SlugsPrefix + to); cur != idBlob {
			return false, fmt.Errorf("slug %s is taken too; give task %s another slug by hand (git update-ref)", to, id)
		}
	}
	renamed := false
	_, _, err = s.Update(ctx, id, func(sn *task.Snapshot) (*task.Op, error) {
		renamed = sn.Task.Slug == from
		if !renamed {
			return nil, nil // already renamed, or never had it
		}
		sn.Task.Slug = to
		return &task.Op{Name: "rename", Actor: machine.System, Reason: strings.TrimSpace(why)}, nil
	})
	if err != nil {
		return false, fmt.Errorf("rename task %s to %s: %w", id, to, err)
	}
	return renamed, nil
}

// Slugs is the repair of slug reservations: checking that every task's
// slug ref names it, repairing one that does not, and listing the
// reservations a dead create left behind.
type Slugs struct{ st *Store }

// Slugs is the repair of s's slug reservations.
func (s *Store) Slugs() Slugs { return Slugs{st: s} }

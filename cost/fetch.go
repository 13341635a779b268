package cost

import (
	"time"

	"github.com/lazyorch/lazy/task"
)

// Source is where Fetch reads records: a *gitstore.Store.
type Source interface {
	List() ([]task.Entry, error)
	Load(id string) (*task.Snapshot, error)
	Turns(sn *task.Snapshot) ([]task.Turn, error)
}

// Fetch reads what a report of q needs: the listing's summaries, and
// each task's priced agent turns only when q needs turns, and then only
// for the tasks q covers that spent something and changed since q.Since
// (a turn is recorded by an update, so an older record holds no turn in
// the window). A record that cannot be read is counted, not fatal.
func Fetch(src Source, q Query) (recs []Record, unreadable int, err error) {
	entries, err := src.List()
	if err != nil {
		return nil, 0, err
	}
	var covered map[string]bool
	if q.Task != "" {
		covered = map[string]bool{}
		for _, id := range NewTree(entries).Under(q.Task) {
			covered[id] = true
		}
	}
	recs = make([]Record, 0, len(entries))
	for i := range entries {
		if covered != nil && !covered[entries[i].ID] {
			continue
		}
		s, err := entries[i].Spending()
		if err != nil {
			unreadable++
			continue
		}
		rec := Record{Spending: s}
		if q.NeedsTurns() && s.Usage != nil && !olderThan(&s, q.Since) {
			turns, err := priced(src, s.ID)
			if err != nil {
				unreadable++
				continue
			}
			rec.Turns = turns
		}
		recs = append(recs, rec)
	}
	return recs, unreadable, nil
}

// olderThan reports whether s was last changed before since.
func olderThan(s *task.Spending, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	t, err := time.Parse(task.TimeLayout, s.UpdatedAt)
	return err == nil && t.Before(since)
}

// priced reads a task's agent turns that recorded usage.
func priced(src Source, id string) ([]task.Turn, error) {
	sn, err := src.Load(id)
	if err != nil {
		return nil, err
	}
	turns, err := src.Turns(sn)
	if err != nil {
		return nil, err
	}
	out := turns[:0]
	for _, t := range turns {
		if t.Usage != nil {
			t.Content = "" // the report needs none of the text
			out = append(out, t)
		}
	}
	return out, nil
}

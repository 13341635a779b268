package gitstore

import (
	"errors"
	"fmt"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/task"
)

// Bounds of one read of a whole record. limits.go bounds each object, but
// a record may hold any number of turns and comments, and every entry may
// name the same large blob that compresses to nothing: a push of a few
// hundred kilobytes could make a reader load gigabytes. So one read of a
// record loads at most MaxRecordBytes of content and MaxRecordEntries
// turns and comments, sized from tree entries and object headers before a
// byte of content is read. Past that the read keeps the newest entries
// that fit and says what it left out; lazy pull refuses a record over
// these bounds outright.
const (
	// MaxRecordBytes bounds the content one read of a record loads:
	// goal, violations, turns and comments together.
	MaxRecordBytes = 64 << 20
	// MaxRecordEntries bounds the turns one read loads, and the comments.
	MaxRecordEntries = 10_000
)

// ErrOverBounds marks a record over the bounds of a whole record.
var ErrOverBounds = errors.New("over lazy's limits for a whole record")

// recordBounds are the bounds a Store reads records within (tests scale
// them down).
type recordBounds struct {
	bytes   int64
	entries int
}

var defaultBounds = recordBounds{bytes: MaxRecordBytes, entries: MaxRecordEntries}

func (b recordBounds) String() string {
	return fmt.Sprintf("%s of content, %d turns and %d comments", words.Bytes(b.bytes), b.entries, b.entries)
}

// dirSizes are the entries of a turns/ or comments/ tree and the sizes of
// its newest ones, newest first, as far as a read could load them.
type dirSizes struct {
	name    string
	entries []gitrepo.TreeItem
	sizes   []int64
}

// fit is how many of the newest entries fit within budget bytes.
func (d *dirSizes) fit(budget int64) int {
	var used int64
	keep := 0
	for _, n := range d.sizes {
		if used+n > budget {
			break
		}
		used += n
		keep++
	}
	return keep
}

// need is the bytes of the entries sized.
func (d *dirSizes) need() int64 {
	var n int64
	for _, s := range d.sizes {
		n += s
	}
	return n
}

// sizeDir reads dir's tree and the sizes of its newest entries from their
// headers, up to the entry bound and until they add up to more than
// budget: no read could take more.
func (bz sizer) sizeDir(sn *task.Snapshot, name string, budget int64) (*dirSizes, error) {
	s := bz.st
	d := &dirSizes{name: name}
	e, ok := entriesOf(sn)[name]
	if !ok {
		return d, nil
	}
	t, err := s.objs.ReadTree(e.Hash)
	if err != nil {
		return nil, corruptAt(sn.Task.ID, sn.Commit, err)
	}
	d.entries = t.Entries
	var total int64
	for i := len(t.Entries) - 1; i >= 0 && len(d.sizes) < s.bounds.entries && total <= budget; i-- {
		n, err := s.objs.BlobSize(t.Entries[i].Hash, name+"/"+t.Entries[i].Name)
		if err != nil {
			return nil, corruptAt(sn.Task.ID, sn.Commit, err)
		}
		d.sizes = append(d.sizes, n)
		total += n
	}
	return d, nil
}

// split shares budget between the turns and the comments: each gets what
// it needs if that is at most half, the other the rest.
func split(turns, comments *dirSizes, budget int64) (keepT, keepC int) {
	nt, nc, half := turns.need(), comments.need(), budget/2
	switch {
	case nt+nc <= budget:
	case nt <= half:
		nc = budget - nt
	case nc <= half:
		nt = budget - nc
	default:
		nt = half
		nc = budget - half
	}
	return turns.fit(nt), comments.fit(nc)
}

// fixedSize is the header size of snapshot file name, 0 if absent.
func (bz sizer) fixedSize(sn *task.Snapshot, name string) (int64, error) {
	s := bz.st
	e, ok := entriesOf(sn)[name]
	if !ok {
		return 0, nil
	}
	n, err := s.objs.BlobSize(e.Hash, name)
	if err != nil {
		return 0, corruptAt(sn.Task.ID, sn.Commit, err)
	}
	return n, nil
}

// ReadTexts reads sn's goal, turns and comments within the bounds of one
// read (MaxRecordBytes, MaxRecordEntries): past them it keeps the newest
// turns and comments that fit and says so in Truncated.
func (s *Store) ReadTexts(sn *task.Snapshot) (*task.Texts, error) {
	tx := &task.Texts{}
	left := s.bounds.bytes
	viol, err := s.sizer().fixedSize(sn, fileViolations)
	if err != nil {
		return nil, err
	}
	left -= viol
	if tx.Goal, left, err = s.sizer().boundedGoal(sn, left, tx); err != nil {
		return nil, err
	}
	turns, err := s.sizer().sizeDir(sn, dirTurns, left)
	if err != nil {
		return nil, err
	}
	comments, err := s.sizer().sizeDir(sn, dirComments, left)
	if err != nil {
		return nil, err
	}
	keepT, keepC := split(turns, comments, left)
	if tx.Turns, err = s.readTurns(sn, turns.entries[len(turns.entries)-keepT:]); err != nil {
		return nil, err
	}
	if tx.Comments, err = s.readComments(sn, comments.entries[len(comments.entries)-keepC:]); err != nil {
		return nil, err
	}
	noteCut(tx, turns, keepT, s.bounds)
	noteCut(tx, comments, keepC, s.bounds)
	return tx, nil
}

// boundedGoal reads the goal if it fits in left bytes.
func (bz sizer) boundedGoal(sn *task.Snapshot, left int64, tx *task.Texts) (string, int64, error) {
	s := bz.st
	n, err := bz.fixedSize(sn, fileGoal)
	if err != nil || n == 0 {
		return "", left, err
	}
	if n > left {
		tx.Truncated = append(tx.Truncated, fmt.Sprintf("the goal (%s) is not shown; the record is over lazy's limits (%s per read)", words.Bytes(n), s.bounds))
		return "", left, nil
	}
	g, err := sn.Goal()
	return g, left - int64(len(g)), err
}

// noteCut records on tx that a directory's read left entries out.
func noteCut(tx *task.Texts, d *dirSizes, keep int, b recordBounds) {
	if keep == len(d.entries) {
		return
	}
	tx.Truncated = append(tx.Truncated, fmt.Sprintf("showing the last %d of %d %s; the record is over lazy's limits (%s per read)", keep, len(d.entries), d.name, b))
}

// HistoryCut says, in words for a user, that History stopped at its bound
// for the n operations it returned ("" when it did not).
func (s *Store) HistoryCut(n int) string {
	if n < s.bounds.entries {
		return ""
	}
	return fmt.Sprintf("the history shows the last %d operations only; the record is over lazy's limits (%s per read)", n, s.bounds)
}

// CheckBounds reports, as ErrOverBounds, a record that one read could not
// load whole: lazy pull refuses such a record, and a merge, which must
// rewrite every entry, never starts on one.
func (bz sizer) CheckBounds(sn *task.Snapshot) error {
	s := bz.st
	left := s.bounds.bytes
	for _, name := range []string{fileViolations, fileGoal} {
		n, err := bz.fixedSize(sn, name)
		if err != nil {
			return err
		}
		left -= n
	}
	turns, err := bz.sizeDir(sn, dirTurns, left)
	if err != nil {
		return err
	}
	comments, err := bz.sizeDir(sn, dirComments, left)
	if err != nil {
		return err
	}
	keepT, keepC := split(turns, comments, left)
	switch {
	case left < 0:
		return fmt.Errorf("task %s: its goal and violations are %w (%s)", sn.Task.ID, ErrOverBounds, s.bounds)
	case keepT < len(turns.entries) || keepC < len(comments.entries):
		return fmt.Errorf("task %s has %d turns and %d comments (at least %s of content), %w (%s)",
			sn.Task.ID, len(turns.entries), len(comments.entries), words.Bytes(turns.need()+comments.need()), ErrOverBounds, s.bounds)
	}
	return nil
}

// sizer sizes a record's files from their headers before anything of
// them is read, against the store's bounds (see MaxRecordBytes): what
// ReadTexts reads within them, and the check that refuses a pulled
// or merged record over them.
type sizer struct{ st *Store }

// sizer is the sizing of s's records.
func (s *Store) sizer() sizer { return sizer{st: s} }

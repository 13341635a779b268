package gitstore

import "github.com/lazyorch/lazy/task"

// Detail reads everything Detail shows of sn, within the bounds of one
// read of a record (see ReadTexts). lastTurns > 0 keeps only the most
// recent turns (the MCP view, bounded for a context window); the live
// substate is the caller's to fill.
func (s *Store) Detail(sn *task.Snapshot, lastTurns int) (*task.Detail, error) {
	tx, err := s.ReadTexts(sn)
	if err != nil {
		return nil, err
	}
	hist, err := s.History(sn)
	if err != nil {
		return nil, err
	}
	return task.NewDetail(sn, tx, hist, s.HistoryCut(len(hist)), lastTurns), nil
}

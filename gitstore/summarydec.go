package gitstore

import (
	"strings"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/task"
)

// summaryDecoder turns the common task.json into a cache record without
// reflection: decoding every task with encoding/json and encoding its
// summary again was most of the CPU of a cold list.
//
// It accepts only a strict subset of what encoding/json accepts: one
// object of the scalar fields lazy writes for every task (and
// allowed_paths), each key spelled exactly and at most once, strings
// without escapes, integers without fraction or exponent. Anything else
// (forge, usage, metadata, an unknown or repeated key, an escape, a
// null, invalid JSON, ...) makes decode report !ok and the caller
// decodes the record with encoding/json, so the result is always the one
// encoding/json gives; FuzzSummaryDecoder holds it to that.
type summaryDecoder struct {
	buf []byte // the summary JSON is built here, then copied out
	// arena holds the records' summary bytes, many to an allocation.
	arena []byte
}

// decode decodes body, the task.json of task id at commit. ok is false
// when body is outside the subset decode handles or fails checkTask; the
// caller then takes the general path.
func (d *summaryDecoder) decode(id string, commit gitrepo.OID, body []byte) (rec cacheRec, ok bool) {
	var t task.Task
	if !task.ScanTask(body, &t) || checkTask(&t, id) != nil {
		return cacheRec{}, false
	}
	d.buf = task.AppendUTC(d.buf[:0], t.UpdatedAt)
	updated := string(d.buf)
	sum, ok := task.AppendSummary(d.buf[:0], &t, updated)
	if !ok {
		return cacheRec{}, false
	}
	d.buf = sum
	if len(d.arena)+len(sum) > cap(d.arena) {
		d.arena = make([]byte, 0, max(64<<10, len(sum)))
	}
	start := len(d.arena)
	d.arena = append(d.arena, sum...)
	// The record's strings are cut from one copy of its task.json (see
	// ScanTask); what the cache record keeps is interned or copied, so
	// that copy is not held for the rest of the listing.
	return cacheRec{
		commit:  commit,
		status:  knownStatus([]byte(t.Status)),
		created: t.CreatedAt.Unix(),
		updated: updated,
		parent:  strings.Clone(t.Parent),
		body:    d.arena[start:len(d.arena):len(d.arena)],
	}, true
}

package gitstore

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lazyorch/lazy/gitrepo"
)

// bulkSummaries reads the task.json of every commit in process, the way
// `git cat-file` resolves "<commit>:task.json": the commit's first line
// names its tree, the tree's entry task.json its blob. Objects come from
// the mapped packs (indexes mapped whole, see mapIndex) or loose files,
// two goroutines sharing the work: listing 10,000 tasks this way costs a
// fraction of streaming them through cat-file processes, whose info and
// contents passes each resolve every commit and tree again.
//
// The size rule of limits.go holds: a blob's size comes from its pack
// entry header, its delta's header or its loose header before anything
// of it is inflated, and an oversize task.json is reported unread, in the
// words of the cat-file path.
//
// Anything this reader does not handle itself, it hands to the cat-file
// path unchanged, so a listing says what it said before: an object in
// neither the packs it scanned nor loose (a pack a concurrent repack
// wrote since, an alternate), an unusual pack layout, a commit or tree
// that is not what lazy writes, an object too large for it (see
// bulkMaxObject), a repository with replace refs (which git honours and
// lazy's readers do not). A record that does not decode is read again by
// the in-process reader for the precise error, as the cat-file path does.
func (ls lister) bulkSummaries(ids []string, commits []gitrepo.OID) ([]cacheRec, error) {
	s := ls.st
	bulk := s.objs.Bulk()
	recs := make([]cacheRec, len(ids))
	state := make([]uint8, len(ids))
	parts := 1
	if len(ids) >= bulkSplit {
		parts = 2
	}
	// The goroutines take chunks of records in turn rather than a half
	// each: on a machine shared with other work, one of them may get far
	// less CPU than the other.
	var next atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bulkReader{BulkReader: bulk.Reader()}
			for {
				lo := int(next.Add(bulkChunk)) - bulkChunk
				if lo >= len(ids) {
					break
				}
				for i := lo; i < min(lo+bulkChunk, len(ids)); i++ {
					recs[i], state[i] = r.summary(ids[i], commits[i])
				}
			}
			runtime.KeepAlive(bulk)
		}()
	}
	wg.Wait()

	var fallIDs []string
	var fallCommits []gitrepo.OID
	for i, st := range state {
		switch st {
		case bulkFallback:
			fallIDs = append(fallIDs, ids[i])
			fallCommits = append(fallCommits, commits[i])
		case bulkRetry:
			// The in-process reader is not shared between goroutines.
			recs[i] = ls.summarize(ids[i], commits[i])
		}
	}
	if len(fallIDs) > 0 {
		fell, err := ls.batchSummaries(fallIDs, fallCommits)
		if err != nil {
			return nil, err
		}
		for i, j := 0, 0; i < len(state); i++ {
			if state[i] == bulkFallback {
				recs[i] = fell[j]
				j++
			}
		}
	}
	return recs, nil
}

// bulkSplit is the batch size from which two goroutines share it, in
// chunks of bulkChunk records.
const (
	bulkSplit = 512
	bulkChunk = 128
)

// What bulkReader.summary made of a record.
const (
	bulkDone     uint8 = iota // the record is read, or reported oversize
	bulkFallback              // for the cat-file path
	bulkRetry                 // for the in-process reader, which names the error
)

// bulkReader is one goroutine's state: the object reader and the
// summary decoder, neither shared.
type bulkReader struct {
	*gitrepo.BulkReader
	dec summaryDecoder
}

// summary reads the record of task id at commit.
func (r *bulkReader) summary(id string, commit gitrepo.OID) (cacheRec, uint8) {
	content, blob, size, st := r.Path(commit, fileTask, MaxMetaRecord)
	switch {
	case st == gitrepo.BulkFallback:
		return cacheRec{}, bulkFallback
	case size > MaxMetaRecord:
		return corruptRec(commit, corruptAt(id, commit, oversize(fileTask, blob, size, MaxMetaRecord))), bulkDone
	}
	rec, retry := decodeRec(&r.dec, id, commit, content)
	if retry {
		return cacheRec{}, bulkRetry
	}
	return rec, bulkDone
}

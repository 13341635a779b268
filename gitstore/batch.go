package gitstore

import (
	"encoding/json"
	"errors"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/task"
)

// batchThreshold is the number of cache misses above which List reads
// task.json blobs the way `git cat-file` resolves them, through the bulk
// reader (bulkSummaries) and, for what it leaves, a cat-file process,
// instead of one read per object: go-git's read packed objects
// about ten times slower (1.1 s for 10,000 tasks on the development
// machine). Below it, the records read keep the in-process reader's
// exact errors, as they always did.
const batchThreshold = 64

// batchSummaries reads task.json of each commit through gitrepo's file
// reader (`git cat-file --batch-command --buffer`, see
// gitrepo.Git.ReadFiles) and returns one cache record per id. Each
// process asks in two rounds: "info" for every commit:task.json first, so
// an oversize blob is reported from its size without git ever printing
// it, then "contents" for the others, parsed as git streams them. A large
// batch is split between two processes that run side by side: the floor
// runs two git processes too (for-each-ref and cat-file), and lazy reads
// the refs itself. Records git could not resolve, or that do not decode,
// are read again in process afterwards, which gives the precise error.
func (ls lister) batchSummaries(ids []string, commits []gitrepo.OID) ([]cacheRec, error) {
	parts := 1
	if len(ids) >= batchSplit {
		parts = 2
	}
	return ls.batchParts(ids, commits, parts)
}

// batchParts is batchSummaries with the batch split between parts
// processes.
func (ls lister) batchParts(ids []string, commits []gitrepo.OID, parts int) ([]cacheRec, error) {
	recs := make([]cacheRec, len(ids))
	retry := make([]bool, len(ids))
	errs := make(chan error, parts)
	for p := 0; p < parts; p++ {
		lo, hi := p*len(ids)/parts, (p+1)*len(ids)/parts
		go func() {
			errs <- ls.catFileSummaries(ids[lo:hi], commits[lo:hi], recs[lo:hi], retry[lo:hi])
		}()
	}
	var err error
	for p := 0; p < parts; p++ {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return nil, err
	}
	// The in-process reader is not shared between goroutines.
	for i, again := range retry {
		if again {
			recs[i] = ls.summarize(ids[i], commits[i])
		}
	}
	return recs, nil
}

// batchSplit is the batch size from which two cat-file processes share it.
const batchSplit = 2000

// catFileSummaries fills recs[i] with the cache record of ids[i] read
// through gitrepo's file reader (one cat-file process of its own), or
// sets retry[i] for the in-process reader.
func (ls lister) catFileSummaries(ids []string, commits []gitrepo.OID, recs []cacheRec, retry []bool) error {
	s := ls.st
	if s.git == nil {
		for i := range retry {
			retry[i] = true
		}
		return nil
	}
	var dec summaryDecoder
	return s.git.ReadFiles(commits, fileTask, MaxMetaRecord, func(i int, f gitrepo.File) error {
		switch {
		case errors.Is(f.Err, gitrepo.ErrOversize) && f.Type == gitrepo.Blob:
			recs[i] = corruptRec(commits[i], corruptAt(ids[i], commits[i], oversize(fileTask, f.ID, f.Size, MaxMetaRecord)))
		case f.Err != nil:
			retry[i] = true // missing, not a blob, ...
		default:
			recs[i], retry[i] = decodeRec(&dec, ids[i], commits[i], f.Content)
		}
		return nil
	})
}

// decodeRec turns the task.json blob of commit into a cache record. The
// common record is decoded by dec without reflection; any other goes
// through encoding/json. retry is true for one that does not decode or
// check: the caller reads it again in process for the precise error.
func decodeRec(dec *summaryDecoder, id string, commit gitrepo.OID, body []byte) (rec cacheRec, retry bool) {
	if rec, ok := dec.decode(id, commit, body); ok {
		return rec, false
	}
	var t task.Task
	if err := json.Unmarshal(body, &t); err != nil {
		return cacheRec{}, true
	}
	if err := checkTask(&t, id); err != nil {
		return cacheRec{}, true
	}
	return taskRec(commit, &t), false
}

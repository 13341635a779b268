package gitstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/lazyorch/lazy/gitcli"
)

// batchThreshold is the number of cache misses above which List reads
// task.json blobs through one `git cat-file --batch` process instead of
// go-git: spawning git costs a few milliseconds, but git reads packed
// objects about ten times faster (120 ms against 1.1 s for 10,000 tasks
// on the development machine).
const batchThreshold = 64

// batchSummaries reads task.json of each commit with git cat-file and
// returns one cache record per id. Sizes come first from `cat-file
// --batch-check`, so an oversize task.json is reported without git ever
// printing it; only the others are read with `--batch`. Records git could
// not resolve fall back to the in-process reader, which produces the
// precise error.
func (s *Store) batchSummaries(ids []string, commits []plumbing.Hash) ([]cacheRec, error) {
	var in bytes.Buffer
	for _, h := range commits {
		in.WriteString(h.String())
		in.WriteString(":" + fileTask + "\n")
	}
	check, err := gitcli.New(s.repo.CommonDir, "cat-file", "--batch-check").Stdin(in.Bytes()).Output(context.Background())
	if err != nil {
		return nil, err
	}
	recs := make([]cacheRec, len(ids))
	var wanted []int // indexes whose blobs --batch reads
	in.Reset()
	for i, id := range ids {
		nl := bytes.IndexByte(check, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("git cat-file --batch-check: output ended early")
		}
		f := bytes.Fields(check[:nl])
		check = check[nl+1:]
		if len(f) != 3 || string(f[1]) != "blob" {
			recs[i] = s.summarize(id, commits[i]) // missing, not a blob, ...
			continue
		}
		n, err := strconv.ParseInt(string(f[2]), 10, 64)
		if err != nil || !ValidHex(string(f[0])) {
			return nil, fmt.Errorf("git cat-file --batch-check: bad line %q", f)
		}
		if n > MaxMetaRecord {
			h := plumbing.NewHash(string(f[0]))
			recs[i] = corruptRec(commits[i], &CorruptError{ID: id, Commit: commits[i], Err: oversize(fileTask, h, n, MaxMetaRecord)})
			continue
		}
		wanted = append(wanted, i)
		in.Write(f[0])
		in.WriteByte('\n')
	}
	if len(wanted) == 0 {
		return recs, nil
	}
	out, err := gitcli.New(s.repo.CommonDir, "cat-file", "--batch").Stdin(in.Bytes()).Output(context.Background())
	if err != nil {
		return nil, err
	}
	for _, i := range wanted {
		id := ids[i]
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("git cat-file: output ended early")
		}
		header := out[:nl]
		out = out[nl+1:]
		f := bytes.Fields(header)
		if len(f) != 3 || string(f[1]) != "blob" {
			recs[i] = s.summarize(id, commits[i])
			continue
		}
		n, err := strconv.Atoi(string(f[2]))
		if err != nil || n+1 > len(out) || n > MaxMetaRecord {
			return nil, fmt.Errorf("git cat-file: bad header %q", header)
		}
		body := out[:n]
		out = out[n+1:]
		var t Task
		if err := json.Unmarshal(body, &t); err != nil {
			recs[i] = s.summarize(id, commits[i])
			continue
		}
		if err := checkTask(&t, id); err != nil {
			recs[i] = s.summarize(id, commits[i])
			continue
		}
		recs[i] = taskRec(commits[i], &t)
	}
	return recs, nil
}

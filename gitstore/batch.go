package gitstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/gitcli"
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

// batchReadBuffer is the read buffer over cat-file's output: large enough
// that almost every task.json is parsed in place in it, and that the
// multi-megabyte stream is read in pipe-sized chunks without growing a
// buffer for the whole of it.
const batchReadBuffer = 256 << 10

// batchSummaries reads task.json of each commit through `git cat-file
// --batch-command --buffer` and returns one cache record per id. Each
// process asks in two rounds: "info" for every commit:task.json first, so
// an oversize blob is reported from its size without git ever printing
// it, then "contents" for the others, parsed as git streams them. A large
// batch is split between two processes that run side by side: the floor
// runs two git processes too (for-each-ref and cat-file), and lazy reads
// the refs itself. Records git could not resolve, or that do not decode,
// are read again in process afterwards, which gives the precise error.
func (s *Store) batchSummaries(ids []string, commits []gitrepo.OID) ([]cacheRec, error) {
	parts := 1
	if len(ids) >= batchSplit {
		parts = 2
	}
	return s.batchParts(ids, commits, parts)
}

// batchParts is batchSummaries with the batch split between parts
// processes.
func (s *Store) batchParts(ids []string, commits []gitrepo.OID, parts int) ([]cacheRec, error) {
	recs := make([]cacheRec, len(ids))
	retry := make([]bool, len(ids))
	errs := make(chan error, parts)
	for p := 0; p < parts; p++ {
		lo, hi := p*len(ids)/parts, (p+1)*len(ids)/parts
		go func() {
			errs <- s.catFileSummaries(ids[lo:hi], commits[lo:hi], recs[lo:hi], retry[lo:hi])
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
			recs[i] = s.summarize(ids[i], commits[i])
		}
	}
	return recs, nil
}

// batchSplit is the batch size from which two cat-file processes share it.
const batchSplit = 2000

// catFileSummaries fills recs[i] with the cache record of ids[i] read
// through one cat-file process, or sets retry[i] for the in-process
// reader.
func (s *Store) catFileSummaries(ids []string, commits []gitrepo.OID, recs []cacheRec, retry []bool) (err error) {
	argv, err := gitcli.New(s.repo.CommonDir, "cat-file", "--batch-command", "--buffer").Argv()
	if err != nil {
		return err
	}
	cmd := exec.Command("git", argv...)
	cmd.Dir = s.repo.CommonDir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start git cat-file: %w", err)
	}
	// Commands are written from their own goroutine: git answers while it
	// reads, and a writer blocked on a full pipe must never wait for the
	// reader below.
	written := make(chan error, 1)
	finished := false
	defer func() {
		if !finished {
			_ = stdin.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if err != nil {
			err = &gitcli.Error{Args: argv, Stderr: stderr.String(), Err: err}
		}
	}()
	go func() {
		w := bufio.NewWriterSize(stdin, 64<<10)
		for _, h := range commits {
			w.WriteString("info ")
			w.WriteString(h.String())
			w.WriteString(":" + fileTask + "\n")
		}
		w.WriteString("flush\n")
		written <- w.Flush()
	}()

	r := bufio.NewReaderSize(stdout, batchReadBuffer)
	type want struct {
		i    int
		oid  []byte
		size int
	}
	wanted := make([]want, 0, len(ids))
	for i, id := range ids {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading its answer: %w", err)
		}
		oid, blob, size, ok := parseBatchHeader(line)
		if !ok || !blob {
			retry[i] = true // missing, not a blob, ...
			continue
		}
		if size > MaxMetaRecord {
			h, _ := gitrepo.ParseOID(string(oid))
			recs[i] = corruptRec(commits[i], corruptAt(id, commits[i], oversize(fileTask, h, size, MaxMetaRecord)))
			continue
		}
		wanted = append(wanted, want{i: i, oid: append([]byte(nil), oid...), size: int(size)})
	}
	if err := <-written; err != nil {
		return fmt.Errorf("writing its commands: %w", err)
	}
	go func() {
		w := bufio.NewWriterSize(stdin, 64<<10)
		for _, x := range wanted {
			w.WriteString("contents ")
			w.Write(x.oid)
			w.WriteByte('\n')
		}
		err := w.Flush()
		if cerr := stdin.Close(); err == nil {
			err = cerr
		}
		written <- err
	}()

	var dec summaryDecoder
	var big []byte // the rare task.json larger than r's buffer
	for _, x := range wanted {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading its answer: %w", err)
		}
		oid, blob, size, ok := parseBatchHeader(line)
		if !ok || !blob || size != int64(x.size) || !bytes.Equal(oid, x.oid) {
			return fmt.Errorf("unexpected answer %q for object %s", bytes.TrimSpace(line), x.oid)
		}
		// The body is parsed in place in r's buffer when it fits, and read
		// into one reused buffer when it does not.
		var body []byte
		if x.size+1 <= batchReadBuffer {
			if body, err = r.Peek(x.size + 1); err != nil {
				return fmt.Errorf("reading object %s: %w", x.oid, err)
			}
		} else {
			if cap(big) < x.size+1 {
				big = make([]byte, x.size+1)
			}
			body = big[:x.size+1]
			if _, err := io.ReadFull(r, body); err != nil {
				return fmt.Errorf("reading object %s: %w", x.oid, err)
			}
		}
		if body[x.size] != '\n' {
			return fmt.Errorf("object %s is not followed by a newline", x.oid)
		}
		recs[x.i], retry[x.i] = decodeRec(&dec, ids[x.i], commits[x.i], body[:x.size])
		if x.size+1 <= batchReadBuffer {
			_, _ = r.Discard(x.size + 1)
		}
	}
	if err := <-written; err != nil {
		return fmt.Errorf("writing its commands: %w", err)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		return errors.New("it printed more than was asked")
	}
	finished = true
	return cmd.Wait()
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

// parseBatchHeader parses cat-file's "<oid> <type> <size>\n" in place,
// without allocating (it runs twice per task); ok is false for any other
// line ("<name> missing", ...).
func parseBatchHeader(line []byte) (oid []byte, blob bool, size int64, ok bool) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return nil, false, 0, false
	}
	oid, line = line[:sp], line[sp+1:]
	sp = bytes.IndexByte(line, ' ')
	if sp < 0 || (len(oid) != 40 && len(oid) != 64) || !gitrepo.AllHex(oid) {
		return nil, false, 0, false
	}
	digits := line[sp+1:]
	if len(digits) == 0 || len(digits) > 18 { // 18 digits cannot overflow
		return nil, false, 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false, 0, false
		}
		size = size*10 + int64(c-'0')
	}
	return oid, string(line[:sp]) == "blob", size, true
}

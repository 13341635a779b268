package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// File is one answer of ReadFiles: the object a file name names in one
// commit's top tree, and either its content or why it was not read.
type File struct {
	// ID, Type and Size are the object's, when the name resolved.
	ID   OID
	Type Type
	Size int64
	// Content is the blob's content, read only when it is a blob within
	// the limit; it is valid only during the callback (it may be the
	// reader's buffer).
	Content []byte
	// Err is nil for content read, else ErrMissing (no such commit or no
	// such name in its tree), ErrWrongType (not a blob) or ErrOversize
	// (over the limit, never read), or the reader's own word for an
	// answer it could not take.
	Err error
}

// FileReader reads one named file out of many commits in one pass: the
// bulk read of records kept one per commit (the store's task.json, the
// pool's claim.json). It is the fast path behind a cold listing and a
// pool's fetch, where one Read per object would cost a round trip each.
type FileReader interface {
	// ReadFiles answers, for each commit in order, the object name names
	// in its top tree (as git cat-file answers "<commit>:<name>"): fn(i,
	// f) is called once per commit, in order, and an error it returns
	// ends the read. Every object is sized before it is read: one over
	// limit or not a blob is answered with its Err and never read.
	ReadFiles(commits []OID, name string, limit int64, fn func(i int, f File) error) error
}

// filesReadBuffer is the read buffer over cat-file's output: large
// enough that almost every record is handed over in place in it, and
// that a multi-megabyte stream is read in pipe-sized chunks.
const filesReadBuffer = 256 << 10

// ReadFiles reads through one `git cat-file --batch-command --buffer`
// process of its own (so calls may run side by side), in two rounds:
// "info" for every commit:name first, so an oversize object is answered
// from its size without git ever printing it, then "contents" for the
// others, handed to fn as git streams them.
func (g *Git) ReadFiles(commits []OID, name string, limit int64, fn func(i int, f File) error) (err error) {
	if len(commits) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := []string{"cat-file", "--batch-command", "--buffer"}
	cmd := g.command(ctx, args...)
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
			cancel()
			_ = cmd.Wait()
		}
		if err != nil && !errors.Is(err, errCallback) {
			err = &GitError{Args: args, Stderr: stderr.String(), Err: err}
		}
		err = unwrapCallback(err)
	}()
	go func() {
		w := bufio.NewWriterSize(stdin, 64<<10)
		for _, c := range commits {
			w.WriteString("info ")
			w.WriteString(c.String())
			w.WriteString(":" + name + "\n")
		}
		w.WriteString("flush\n")
		written <- w.Flush()
	}()

	r := bufio.NewReaderSize(stdout, filesReadBuffer)
	type want struct {
		i    int
		oid  []byte
		size int64
	}
	wanted := make([]want, 0, len(commits))
	answers := make([]File, len(commits))
	for i := range commits {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading its answer: %w", err)
		}
		oid, typ, size, ok := parseHeader(line)
		switch {
		case !ok && bytes.HasSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte(" missing")):
			answers[i].Err = fmt.Errorf("%s:%s: %w", commits[i], name, ErrMissing)
			continue
		case !ok:
			answers[i].Err = fmt.Errorf("git cat-file answered %q for %s:%s", truncate(string(bytes.TrimSpace(line)), 120), commits[i], name)
			continue
		}
		id, perr := ParseOID(string(oid))
		if perr != nil {
			answers[i].Err = fmt.Errorf("git cat-file answered %q for %s:%s", truncate(string(bytes.TrimSpace(line)), 120), commits[i], name)
			continue
		}
		answers[i] = File{ID: id, Type: Type(typ), Size: size}
		if cerr := CheckType(id, Blob, Type(typ), size, limit); cerr != nil {
			answers[i].Err = cerr
			continue
		}
		wanted = append(wanted, want{i: i, oid: append([]byte(nil), oid...), size: size})
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

	var big []byte // the rare file larger than r's buffer
	next := 0      // the next commit to answer
	answer := func(upto int) error {
		for ; next < upto; next++ {
			if err := fn(next, answers[next]); err != nil {
				return callbackError{err}
			}
		}
		return nil
	}
	for _, x := range wanted {
		if err := answer(x.i); err != nil {
			return err
		}
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading its answer: %w", err)
		}
		oid, typ, size, ok := parseHeader(line)
		if !ok || typ != string(Blob) || size != x.size || !bytes.Equal(oid, x.oid) {
			return fmt.Errorf("unexpected answer %q for object %s", bytes.TrimSpace(line), x.oid)
		}
		// The body is handed over in place in r's buffer when it fits,
		// and read into one reused buffer when it does not.
		n := int(x.size)
		var body []byte
		inPlace := n+1 <= filesReadBuffer
		if inPlace {
			if body, err = r.Peek(n + 1); err != nil {
				return fmt.Errorf("reading object %s: %w", x.oid, err)
			}
		} else {
			if cap(big) < n+1 {
				big = make([]byte, n+1)
			}
			body = big[:n+1]
			if _, err := io.ReadFull(r, body); err != nil {
				return fmt.Errorf("reading object %s: %w", x.oid, err)
			}
		}
		if body[n] != '\n' {
			return fmt.Errorf("object %s is not followed by a newline", x.oid)
		}
		answers[x.i].Content = body[:n]
		if err := answer(x.i + 1); err != nil {
			return err
		}
		answers[x.i].Content = nil
		if inPlace {
			_, _ = r.Discard(n + 1)
		}
	}
	if err := answer(len(commits)); err != nil {
		return err
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

// callbackError carries the error of ReadFiles' callback out unchanged.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

var errCallback = errors.New("callback")

func (e callbackError) Is(target error) bool { return target == errCallback }

func unwrapCallback(err error) error {
	var c callbackError
	if errors.As(err, &c) {
		return c.err
	}
	return err
}

// parseHeader parses cat-file's "<oid> <type> <size>\n" in place,
// without allocating (it runs twice per object); ok is false for any
// other line ("<name> missing", ...).
func parseHeader(line []byte) (oid []byte, typ string, size int64, ok bool) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return nil, "", 0, false
	}
	oid, line = line[:sp], line[sp+1:]
	sp = bytes.IndexByte(line, ' ')
	if sp < 0 || (len(oid) != 40 && len(oid) != 64) || !AllHex(oid) {
		return nil, "", 0, false
	}
	digits := line[sp+1:]
	if len(digits) == 0 || len(digits) > 18 { // 18 digits cannot overflow
		return nil, "", 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, "", 0, false
		}
		size = size*10 + int64(c-'0')
	}
	return oid, blobOr(line[:sp]), size, true
}

// blobOr is the type word t, without allocating for the common "blob".
func blobOr(t []byte) string {
	if string(t) == string(Blob) {
		return string(Blob)
	}
	return string(t)
}

// ReadFiles reads each commit's file in process: the commit (a tag is
// peeled to what it tags, as git does), its top tree, the entry of that
// name, then the blob within limit.
func (l *Local) ReadFiles(commits []OID, name string, limit int64, fn func(i int, f File) error) error {
	for i, c := range commits {
		if err := fn(i, l.readFile(c, name, limit)); err != nil {
			return err
		}
	}
	return nil
}

// maxPeel bounds the tags followed to a commit.
const maxPeel = 8

// readFile is Local.ReadFiles' answer for one commit.
func (l *Local) readFile(c OID, name string, limit int64) File {
	missing := File{Err: fmt.Errorf("%s:%s: %w", c, name, ErrMissing)}
	tree, err := l.topTree(c)
	if errors.Is(err, ErrMissing) || errors.Is(err, ErrWrongType) {
		return missing
	}
	if err != nil {
		return File{Err: err}
	}
	obj, err := l.Read(tree, Tree, 64<<20)
	if errors.Is(err, ErrMissing) || errors.Is(err, ErrWrongType) {
		return missing
	}
	if err != nil {
		return File{Err: err}
	}
	entry, ok := treeEntry(obj.Content, name, len(tree.String())/2)
	if !ok {
		return missing
	}
	f := File{ID: entry, Type: Blob}
	blob, err := l.Read(entry, Blob, limit)
	switch {
	case err == nil:
		f.Size, f.Content = blob.Size, blob.Content
	case errors.Is(err, ErrMissing):
		return missing
	case errors.Is(err, ErrOversize):
		f.Err = err
		if f.Size, err = l.objs.BlobSize(entry, name); err != nil {
			f.Err = err
		}
	case errors.Is(err, ErrWrongType):
		f.Type, f.Err = "", err
		for _, t := range []Type{Tree, Commit, Tag} {
			if _, terr := l.Read(entry, t, 0); !errors.Is(terr, ErrWrongType) {
				f.Type = t
				break
			}
		}
	default:
		f.Err = err
	}
	return f
}

// topTree is the tree c names: c itself, a commit's tree, or what a tag
// of either tags.
func (l *Local) topTree(c OID) (OID, error) {
	id := c
	for peel := 0; peel <= maxPeel; peel++ {
		obj, err := l.Read(id, Any, 1<<20)
		if err != nil {
			return OID{}, err
		}
		switch obj.Type {
		case Tree:
			return id, nil
		case Commit:
			if tree, ok := headerID(obj.Content, "tree "); ok {
				return tree, nil
			}
			return OID{}, ErrMissing
		case Tag:
			target, ok := headerID(obj.Content, "object ")
			if !ok {
				return OID{}, ErrMissing
			}
			id = target
		default:
			return OID{}, ErrWrongType
		}
	}
	return OID{}, ErrMissing
}

// headerID is the id on the header line of a commit or tag that starts
// with key ("tree ", "object "), which must be its first line.
func headerID(content []byte, key string) (OID, bool) {
	line, _, _ := bytes.Cut(content, []byte{'\n'})
	if !bytes.HasPrefix(line, []byte(key)) {
		return OID{}, false
	}
	id, err := ParseOID(string(line[len(key):]))
	return id, err == nil
}

// treeEntry finds name among a tree's entries ("<mode> <name>\0<id>").
func treeEntry(tree []byte, name string, idLen int) (OID, bool) {
	for len(tree) > 0 {
		sp := bytes.IndexByte(tree, ' ')
		nul := bytes.IndexByte(tree, 0)
		if sp < 0 || nul < sp || nul+1+idLen > len(tree) {
			return OID{}, false
		}
		if string(tree[sp+1:nul]) == name {
			id, err := ParseOID(fmt.Sprintf("%x", tree[nul+1:nul+1+idLen]))
			return id, err == nil
		}
		tree = tree[nul+1+idLen:]
	}
	return OID{}, false
}

// OpenGitFor serves the repository at gitDir through git in the object
// format its Location read (SHA1 or SHA256), starting no process until
// the first read.
func OpenGitFor(gitDir, format string) (*Git, error) {
	if format != SHA1 && format != SHA256 {
		return nil, fmt.Errorf("the repository at %s names its objects with %q; lazy supports sha1 and sha256", gitDir, format)
	}
	return &Git{gitDir: gitDir, format: format}, nil
}

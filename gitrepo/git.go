package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// callTimeout bounds one git process lazy waits on, so that a repository
// git hangs on is an error, not a hang.
const callTimeout = 30 * time.Second

// Git is a Repo served by git processes: a long-lived `git cat-file
// --batch` for reads, for-each-ref, update-ref and hash-object for the
// rest. It reads whatever git reads, SHA-256 repositories included.
type Git struct {
	gitDir string
	format string

	mu    sync.Mutex // guards the batch process
	batch *batchProc
}

type batchProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	cancel context.CancelFunc
}

// OpenGit serves the repository at gitDir through git, asking git its
// object format.
func OpenGit(gitDir string) (*Git, error) {
	g := &Git{gitDir: gitDir}
	out, err := g.run(nil, "rev-parse", "--show-object-format")
	if err != nil {
		return nil, err
	}
	g.format = strings.TrimSpace(string(out))
	if g.format != SHA1 && g.format != SHA256 {
		return nil, fmt.Errorf("the repository at %s names its objects with %q; lazy supports sha1 and sha256", gitDir, g.format)
	}
	return g, nil
}

// Format is the repository's object format.
func (g *Git) Format() string { return g.format }

// run runs one git command on the repository and returns its stdout.
func (g *Git) run(stdin []byte, args ...string) ([]byte, error) {
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errors.New("refusing a NUL byte in git argv")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := g.command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &GitError{Args: args, Stderr: strings.Join(strings.Fields(stderr.String()), " "), Err: err}
	}
	return out, nil
}

func (g *Git) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + g.gitDir}, args...)...)
	cmd.Dir = g.gitDir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	return cmd
}

// GitError is a git command that failed, with what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: %s (%v)", strings.Join(e.Args, " "), truncate(e.Stderr, 300), e.Err)
}

func (e *GitError) Unwrap() error { return e.Err }

// Read returns an object through git cat-file --batch.
func (g *Git) Read(id OID, typ Type, limit int64) (*Object, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	obj, err := g.readLocked(id, typ, limit)
	if err != nil && !errors.Is(err, ErrMissing) && !errors.Is(err, ErrOversize) && !errors.Is(err, ErrWrongType) {
		g.stopLocked() // the stream may be out of step; start afresh
	}
	return obj, err
}

func (g *Git) readLocked(id OID, typ Type, limit int64) (*Object, error) {
	if id.Format() != g.format {
		return nil, fmt.Errorf("object id %q is not a %s id: %w", id, g.format, ErrMissing)
	}
	b, err := g.batchLocked()
	if err != nil {
		return nil, err
	}
	// --batch-command: "info" first, so an oversize object's content is
	// never streamed.
	if _, err := fmt.Fprintf(b.in, "info %s\n", id); err != nil {
		return nil, fmt.Errorf("ask git cat-file for %s: %w", id, err)
	}
	got, size, err := readHeader(b.out, id)
	if err != nil {
		return nil, err
	}
	if err := CheckType(id, typ, got, size, limit); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(b.in, "contents %s\n", id); err != nil {
		return nil, fmt.Errorf("ask git cat-file for %s: %w", id, err)
	}
	got2, size2, err := readHeader(b.out, id)
	if err != nil {
		return nil, err
	}
	if got2 != got || size2 != size {
		return nil, fmt.Errorf("git cat-file changed its answer for %s", id)
	}
	content := make([]byte, size+1)
	if _, err := io.ReadFull(b.out, content); err != nil {
		return nil, fmt.Errorf("read %s from git cat-file: %w", id, err)
	}
	if content[size] != '\n' {
		return nil, fmt.Errorf("git cat-file sent %s without its terminator", id)
	}
	return &Object{Type: got, Size: size, Content: content[:size]}, nil
}

// readHeader reads "<id> <type> <size>" or "<id> missing".
func readHeader(r *bufio.Reader, id OID) (Type, int64, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", 0, fmt.Errorf("read git cat-file's answer for %s: %w", id, err)
	}
	f := strings.Fields(line)
	if len(f) == 2 && f[1] == "missing" {
		return "", 0, fmt.Errorf("%s: %w", id, ErrMissing)
	}
	if len(f) != 3 || f[0] != id.String() {
		return "", 0, fmt.Errorf("git cat-file answered %q for %s", truncate(line, 120), id)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return "", 0, fmt.Errorf("git cat-file gave %s size %q", id, f[2])
	}
	return Type(f[1]), size, nil
}

// batchLocked starts git cat-file --batch-command once.
func (g *Git) batchLocked() (*batchProc, error) {
	if g.batch != nil {
		return g.batch, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := g.command(ctx, "cat-file", "--batch-command") // unbuffered: each answer as asked
	in, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	g.batch = &batchProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), cancel: cancel}
	return g.batch, nil
}

func (g *Git) stopLocked() {
	if g.batch == nil {
		return
	}
	_ = g.batch.in.Close()
	g.batch.cancel()
	_ = g.batch.cmd.Wait()
	g.batch = nil
}

// Close stops the cat-file process.
func (g *Git) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopLocked()
	return nil
}

// Has reports whether git holds the object, asking the cat-file process.
func (g *Git) Has(id OID) (bool, error) {
	if id.Format() != g.format {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := g.batchLocked()
	if err != nil {
		return false, err
	}
	if _, err := fmt.Fprintf(b.in, "info %s\n", id); err != nil {
		g.stopLocked()
		return false, fmt.Errorf("ask git cat-file for %s: %w", id, err)
	}
	_, _, err = readHeader(b.out, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrMissing):
		return false, nil
	}
	g.stopLocked()
	return false, err
}

// Write stores an object with git hash-object, which checks a commit's
// or tree's format as git fsck would.
func (g *Git) Write(typ Type, content []byte) (OID, error) {
	switch typ {
	case Blob, Tree, Commit, Tag:
	default:
		return OID{}, fmt.Errorf("cannot write an object of type %q", typ)
	}
	out, err := g.run(content, "hash-object", "-w", "--stdin", "-t", string(typ))
	if err != nil {
		return OID{}, err
	}
	return ParseOID(strings.TrimSpace(string(out)))
}

// ReadRef returns what a ref names, through git rev-parse.
func (g *Git) ReadRef(name string) (OID, bool, error) {
	if err := ValidRefName(name); err != nil {
		return OID{}, false, err
	}
	out, err := g.run(nil, "for-each-ref", "--format=%(objectname) %(refname)", "--", name)
	if err != nil {
		return OID{}, false, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		hexid, ref, ok := strings.Cut(line, " ")
		if ok && ref == name {
			id, err := ParseOID(hexid)
			return id, err == nil, err
		}
	}
	return OID{}, false, nil
}

// ListRefs returns every ref under prefix, through git for-each-ref.
func (g *Git) ListRefs(prefix string) (map[string]OID, error) {
	if err := ValidRefPrefix(prefix); err != nil {
		return nil, err
	}
	out, err := g.run(nil, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	refs := map[string]OID{}
	for _, line := range strings.Split(string(out), "\n") {
		hexid, ref, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(ref, prefix) {
			continue
		}
		id, err := ParseOID(hexid)
		if err != nil {
			return nil, err
		}
		refs[ref] = id
	}
	return refs, nil
}

// CompareAndSwap updates a ref with git update-ref and its old value.
func (g *Git) CompareAndSwap(name string, old, new OID) error {
	oldHex, err := g.swapArgs(name, old, new)
	if err != nil {
		return err
	}
	if _, err := g.run(nil, "update-ref", "-m", "lazy", name, new.String(), oldHex); err != nil {
		cur, ok, rerr := g.ReadRef(name)
		if rerr == nil && (ok != !old.IsZero() || cur != old) {
			return fmt.Errorf("update %s: %w", name, ErrStale)
		}
		return err
	}
	return nil
}

// swapArgs checks what a compare-and-swap of name from old to new is
// given (a valid ref name, an id of this repository's format) and returns
// old as update-ref takes it: the zero id of the format for "must not
// exist". CompareAndSwap and CompareAndSwapVerified share it.
func (g *Git) swapArgs(name string, old, new OID) (string, error) {
	if err := ValidRefName(name); err != nil {
		return "", err
	}
	if new.Format() != g.format {
		return "", fmt.Errorf("update %s: %q is not a %s object id", name, new, g.format)
	}
	if old.IsZero() {
		return zeroOID(g.format), nil
	}
	return old.String(), nil
}

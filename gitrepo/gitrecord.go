package gitrepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The task store's roles (RecordReader, RefIndex, BulkSource, PackKeeper)
// served by git processes: what Local does in process, Git asks git, so
// the conformance suite holds both to the same answers.

// ReadBlob reads blob id through the cat-file process, sized first.
func (g *Git) ReadBlob(id OID, name string, limit int64) ([]byte, error) {
	obj, err := g.Read(id, Blob, limit)
	if err != nil {
		if errors.Is(err, ErrWrongType) || errors.Is(err, ErrOversize) || errors.Is(err, ErrMissing) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	return obj.Content, nil
}

// BlobSize asks git cat-file for blob id's type and size.
func (g *Git) BlobSize(id OID, name string) (int64, error) {
	if id.Format() != g.format {
		return 0, fmt.Errorf("%s: object id %q is not a %s id: %w", name, id, g.format, ErrMissing)
	}
	out, err := g.run([]byte(id.String()+"\n"), "cat-file", "--batch-check")
	if err != nil {
		return 0, err
	}
	typ, size, err := readHeader(bufio.NewReader(strings.NewReader(string(out))), id)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if typ != Blob {
		return 0, fmt.Errorf("%s %s is a %s: %w", name, id, typ, ErrWrongType)
	}
	return size, nil
}

// ReadTree reads tree id through the cat-file process and decodes it.
func (g *Git) ReadTree(id OID) (*ParsedTree, error) {
	obj, err := g.Read(id, Tree, MaxTree)
	if err != nil {
		return nil, err
	}
	return parseTreeIDs(obj.Content, len(id.Bytes()))
}

// ReadCommit reads commit id through the cat-file process and decodes it.
func (g *Git) ReadCommit(id OID) (*ParsedCommit, error) {
	obj, err := g.Read(id, Commit, MaxCommit)
	if err != nil {
		return nil, err
	}
	return parseCommit(obj.Content)
}

// SortedRefs is ListRefs sorted by name.
func (g *Git) SortedRefs(prefix string) ([]RefEntry, error) {
	m, err := g.ListRefs(prefix)
	if err != nil {
		return nil, err
	}
	out := make([]RefEntry, 0, len(m))
	for name, id := range m {
		out = append(out, RefEntry{Name: name, Hash: id})
	}
	slices.SortFunc(out, func(a, b RefEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// CountLooseRefs counts the ref files under prefix, as Local does: git
// has no command that counts them without reading them.
func (g *Git) CountLooseRefs(prefix string) int { return NewRefs(g.gitDir).CountLooseRefs(prefix) }

// CompareAndSwapVerified runs one git update-ref --stdin transaction:
// prepare takes the ref's lock and checks old, verify runs while git
// holds it, and commit (or abort, when verify fails) ends it.
func (g *Git) CompareAndSwapVerified(name string, old, new OID, verify func() error) error {
	if verify == nil {
		return g.CompareAndSwap(name, old, new)
	}
	oldHex, err := g.swapArgs(name, old, new)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := g.command(ctx, "update-ref", "--stdin")
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("update %s: %w", name, err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("update %s: %w", name, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("update %s: start git update-ref: %w", name, err)
	}
	out := bufio.NewReader(outPipe)
	step := func(cmdline, want string) bool {
		if _, err := io.WriteString(in, cmdline+"\n"); err != nil {
			return false
		}
		line, err := out.ReadString('\n')
		return err == nil && strings.TrimSpace(line) == want
	}
	finish := func() error {
		_ = in.Close()
		_, _ = io.Copy(io.Discard, out)
		return cmd.Wait()
	}
	if !step("start", "start: ok") {
		_ = finish()
		return &GitError{Args: []string{"update-ref", "--stdin"}, Stderr: stderr.String(), Err: errors.New("start failed")}
	}
	if _, err := fmt.Fprintf(in, "update %s %s %s\n", name, new, oldHex); err != nil {
		_ = finish()
		return fmt.Errorf("update %s: %w", name, err)
	}
	if !step("prepare", "prepare: ok") {
		werr := finish()
		cur, ok, rerr := g.ReadRef(name)
		if rerr == nil && (ok != !old.IsZero() || cur != old) {
			return fmt.Errorf("update %s: %w", name, ErrStale)
		}
		return &GitError{Args: []string{"update-ref", "--stdin"}, Stderr: strings.Join(strings.Fields(stderr.String()), " "), Err: werr}
	}
	if err := verify(); err != nil {
		_ = step("abort", "abort: ok")
		_ = finish()
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	ok := step("commit", "commit: ok")
	if werr := finish(); werr != nil || !ok {
		return &GitError{Args: []string{"update-ref", "--stdin"}, Stderr: strings.Join(strings.Fields(stderr.String()), " "), Err: werr}
	}
	return nil
}

// objects is the object directory's files, for the housekeeping that
// reads and counts them as git gc --auto does.
func (g *Git) objects() *Objects { return NewObjectsFor(g.gitDir, g.format) }

// Bulk is a bulk reader whose every lookup falls back: git processes
// serve this Repo, so the caller's FileReader path is its fast path.
func (g *Git) Bulk() *Bulk { return &Bulk{dir: g.objects().dir, off: true} }

// LooseEstimate samples the fan-out directories as git gc --auto does.
func (g *Git) LooseEstimate(sample int) int { return g.objects().LooseEstimate(sample) }

// PackCount counts the packs.
func (g *Git) PackCount() int { return g.objects().PackCount() }

// OrphanPacks lists the packs without an index.
func (g *Git) OrphanPacks(now time.Time, minAge time.Duration) ([]OrphanPack, error) {
	return g.objects().OrphanPacks(now, minAge)
}

// IndexPack indexes an orphaned pack with git index-pack.
func (g *Git) IndexPack(ctx context.Context, p OrphanPack) error {
	if err := g.objects().IndexPack(ctx, p); err != nil {
		return err
	}
	g.mu.Lock()
	g.stopLocked() // the cat-file process read the packs once: start afresh
	g.mu.Unlock()
	return nil
}

package gitstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// ErrStale is returned by CompareAndSwap when the ref no longer holds the
// expected value: another writer (lazy or git) got there first.
var ErrStale = errors.New("ref changed underneath us")

// ErrLocked is returned when another process held the ref's .lock file for
// longer than the lock timeout.
var ErrLocked = errors.New("ref is locked by another process")

// refLockTimeout matches git's core.filesRefLockTimeout default (100 ms):
// a lock is held only for the few microseconds of a write, so waiting
// longer means a stuck or crashed writer that a human should look at.
const refLockTimeout = 100 * time.Millisecond

// ReadRef returns the value of a ref, looking at the loose file first and
// packed-refs second, the same order git uses so that a concurrent
// `git pack-refs` (which writes packed-refs before pruning the loose file)
// can never make a ref look absent.
func (r *Repo) ReadRef(name string) (plumbing.Hash, bool, error) {
	h, ok, err := r.readLoose(name)
	if err != nil || ok {
		return h, ok, err
	}
	return r.lookupPacked(name)
}

// packedLookup finds one ref in packed-refs content without parsing the
// rest, scanning it from the start: the fallback for a file without the
// "sorted" trait (see packedSearch).
func packedLookup(b []byte, name string) (plumbing.Hash, bool) {
	needle := []byte(" " + name + "\n")
	for off := 0; off < len(b); {
		i := bytes.Index(b[off:], needle)
		if i < 0 {
			// The last line may lack its newline.
			if tail := needle[:len(needle)-1]; bytes.HasSuffix(b, tail) {
				i = len(b) - len(tail) - off
			} else {
				return plumbing.ZeroHash, false
			}
		}
		at := off + i // index of the space after the hash
		start := at - 40
		if start >= 0 && (start == 0 || b[start-1] == '\n') {
			if h := string(b[start:at]); plumbing.IsHash(h) {
				return plumbing.NewHash(h), true
			}
		}
		off = at + 1
	}
	return plumbing.ZeroHash, false
}

func (r *Repo) readLoose(name string) (plumbing.Hash, bool, error) {
	b, err := os.ReadFile(filepath.Join(r.CommonDir, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isDirErr(err) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read ref %s: %w", name, err)
	}
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "ref:") {
		return plumbing.ZeroHash, false, fmt.Errorf("ref %s is symbolic; lazy refs must point at objects", name)
	}
	if !plumbing.IsHash(s) {
		return plumbing.ZeroHash, false, fmt.Errorf("ref %s holds %q, not an object name", name, truncate(s, 60))
	}
	return plumbing.NewHash(s), true, nil
}

func isDirErr(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "is a directory")
}

func parsePacked(b []byte, prefix string, fn func(string, plumbing.Hash)) {
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		name := string(bytes.TrimRight(line[41:], "\r"))
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if h := string(line[:40]); plumbing.IsHash(h) {
			fn(name, plumbing.NewHash(h))
		}
	}
}

// ListRefs returns every ref under prefix (which must end in "/"), loose
// values overriding packed ones exactly as git resolves them.
func (r *Repo) ListRefs(prefix string) (map[string]plumbing.Hash, error) {
	out := map[string]plumbing.Hash{}
	b, err := os.ReadFile(filepath.Join(r.CommonDir, "packed-refs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	parsePacked(b, prefix, func(name string, h plumbing.Hash) { out[name] = h })
	root := filepath.Join(r.CommonDir, filepath.FromSlash(prefix))
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(r.CommonDir, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		h, ok, err := r.readLoose(name)
		if err != nil {
			return err
		}
		if ok {
			out[name] = h
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs under %s: %w", prefix, err)
	}
	return out, nil
}

// CompareAndSwap moves ref name from old to new atomically with respect to
// every other writer that follows git's protocol (git itself, libgit2,
// other lazy processes): take <ref>.lock with O_EXCL, verify the current
// value under the lock, write the new value into the lock file and rename
// it over the ref. A zero old means "the ref must not exist yet".
func (r *Repo) CompareAndSwap(name string, old, new plumbing.Hash) error {
	return r.CompareAndSwapVerified(name, old, new, nil)
}

// CompareAndSwapVerified is CompareAndSwap with verify run under the ref
// lock, after the old value is checked and before the ref moves: lazy
// passes a check that every object the new value needs exists, so a
// concurrent git gc cannot leave the ref naming a missing object.
func (r *Repo) CompareAndSwapVerified(name string, old, new plumbing.Hash, verify func() error) error {
	path := filepath.Join(r.CommonDir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	lock := path + ".lock"
	f, err := acquireLockFile(lock)
	if err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = os.Remove(lock)
		}
	}()
	cur, exists, err := r.ReadRef(name)
	if err != nil {
		return err
	}
	if old.IsZero() && exists {
		return fmt.Errorf("create ref %s: %w (it already exists at %s)", name, ErrStale, cur)
	}
	if !old.IsZero() && cur != old {
		return fmt.Errorf("update ref %s: %w (expected %s, found %s)", name, ErrStale, old, cur)
	}
	if verify != nil {
		if err := verify(); err != nil {
			return fmt.Errorf("update ref %s: %w", name, err)
		}
	}
	if _, err := f.WriteString(new.String() + "\n"); err != nil {
		return fmt.Errorf("write %s: %w", lock, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", lock, err)
	}
	if err := os.Rename(lock, path); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	committed = true
	return nil
}

func acquireLockFile(lock string) (*os.File, error) {
	deadline := time.Now().Add(refLockTimeout)
	wait := 50 * time.Microsecond
	vanished := 0
	for {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		// git pack-refs --prune removes ref directories it empties, so
		// the directory may be gone by now; recreate it and try again.
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				return nil, err
			}
			// A pack-refs in a loop can win this race many times over;
			// it is not a held lock, so it gets a longer allowance.
			if vanished++; vanished > 1000 {
				return nil, fmt.Errorf("create %s: its directory keeps disappearing", lock)
			}
			if vanished > 10 {
				time.Sleep(time.Millisecond)
			}
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s exists; if no lazy or git process is running, lazy doctor removes it", ErrLocked, lock)
		}
		time.Sleep(wait)
		if wait < 5*time.Millisecond {
			wait *= 2
		}
	}
}

// countLooseRefs counts loose ref files under prefix without reading them.
func (r *Repo) countLooseRefs(prefix string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(r.CommonDir, filepath.FromSlash(prefix)), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// bufferedLines is a small helper for parsing commit messages.
func bufferedLines(s string) *bufio.Scanner {
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return sc
}

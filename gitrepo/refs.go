package gitrepo

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Refs reads and writes the refs of a repository with the files backend
// (loose ref files and packed-refs) itself, following git's lock-file
// protocol, so lazy processes and the git CLI never lose each other's
// updates.
type Refs struct {
	dir    string // the common git directory
	packed *packedRefs
	git    *Git // a SHA-256 repository's refs are read through git
}

// NewRefs is the ref store of the repository whose common git directory
// is commonDir. Copies of one *Refs share its packed-refs map.
func NewRefs(commonDir string) *Refs {
	return &Refs{dir: commonDir, packed: &packedRefs{}}
}

// NewRefsFor is NewRefs for a repository of object format format (SHA1
// or SHA256). A SHA-256 repository's refs are read through git, which
// parses its 64-digit packed-refs lines; they are written the same way
// in both formats, under git's lock-file protocol.
func NewRefsFor(commonDir, format string) *Refs {
	r := NewRefs(commonDir)
	if format == SHA256 {
		r.git = &Git{gitDir: commonDir, format: SHA256} // no batch process: reads run git once each
	}
	return r
}

// StampPaths are the files whose identity, size and time change when a
// ref directly under prefix (which ends in "/") is written: packed-refs,
// and prefix's directory, into which git and lazy rename each loose
// ref's lock file.
func (r *Refs) StampPaths(prefix string) []string {
	return []string{filepath.Join(r.dir, "packed-refs"), filepath.Join(r.dir, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))}
}

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
func (r *Refs) ReadRef(name string) (OID, bool, error) {
	if r.git != nil {
		return r.git.ReadRef(name)
	}
	h, ok, err := r.readRef(name)
	if !ok {
		return OID{}, ok, err
	}
	return oidOf(h), ok, err
}

// errUnderRefFile is readLoose's answer for a name whose directory is a
// ref file (refs/remotes/origin/main/HEAD beside refs/remotes/origin/main).
var errUnderRefFile = errors.New("a ref file stands where the name's directory would be")

func (r *Refs) readRef(name string) (plumbing.Hash, bool, error) {
	h, ok, err := r.readLoose(name)
	if errors.Is(err, errUnderRefFile) {
		// git's files backend stops there (ENOTDIR): no such ref, whatever
		// packed-refs says.
		return plumbing.ZeroHash, false, nil
	}
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

func (r *Refs) readLoose(name string) (plumbing.Hash, bool, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(name)))
	if errors.Is(err, syscall.ENOTDIR) {
		return plumbing.ZeroHash, false, errUnderRefFile
	}
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

// readHeld is ReadRef for a ref whose lock the caller holds. Where refs
// are read through git (a SHA-256 repository), its loose file, when there
// is one, is read directly: it is what git would answer (a loose ref
// overrides a packed one), and a git process started while the lock is
// held keeps every other writer of the ref waiting on it, long enough
// on a loaded machine for them to give up as if the lock were stuck.
func (r *Refs) readHeld(name string) (OID, bool, error) {
	if r.git == nil {
		return r.ReadRef(name)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(name)))
	if err == nil {
		if id, err := ParseOID(strings.TrimSpace(string(b))); err == nil {
			return id, true, nil
		}
		return r.git.ReadRef(name) // not an object name: git words the error
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return r.git.ReadRef(name)
	}
	packed, err := os.ReadFile(filepath.Join(r.dir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return OID{}, false, nil
	}
	if err != nil {
		return r.git.ReadRef(name)
	}
	for line := range strings.Lines(string(packed)) {
		hex, ref, ok := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
		if !ok || ref != name {
			continue
		}
		if id, err := ParseOID(hex); err == nil {
			return id, true, nil
		}
		return r.git.ReadRef(name)
	}
	return OID{}, false, nil
}

func isDirErr(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "is a directory")
}

// RefEntry is one ref and the object it names.
type RefEntry struct {
	Name string
	Hash OID
}

// ListRefs returns every ref under prefix (which must end in "/"), loose
// values overriding packed ones exactly as git resolves them.
func (r *Refs) ListRefs(prefix string) (map[string]OID, error) {
	refs, err := r.SortedRefs(prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string]OID, len(refs))
	for _, e := range refs {
		out[e.Name] = e.Hash
	}
	return out, nil
}

// SortedRefs returns every ref under prefix (which must end in "/") sorted
// by name, loose values overriding packed ones.
//
// The loose files are read before packed-refs, the order git's own
// iterator keeps: git pack-refs writes the new packed-refs before it
// deletes the loose files it packed, so a ref whose loose file is gone
// by the time it is looked for is in the packed-refs read afterwards.
// Read the other way round, a concurrent pack-refs could hide a ref from
// both.
func (r *Refs) SortedRefs(prefix string) ([]RefEntry, error) {
	if r.git != nil {
		return r.gitSortedRefs(prefix)
	}
	loose, err := r.looseRefs(prefix)
	if err != nil {
		return nil, err
	}
	m, sorted, err := r.packedRefs().current(filepath.Join(r.dir, "packed-refs"))
	if err != nil {
		return nil, err
	}
	var packed []RefEntry
	if m != nil {
		packed = packedRange(m.data, prefix, sorted)
		runtime.KeepAlive(m) // packedRange copied what it returns
	}
	if len(loose) == 0 {
		return packed, nil
	}
	// Both are sorted: merge them, a loose ref replacing a packed one.
	out := make([]RefEntry, 0, len(packed)+len(loose))
	i, j := 0, 0
	for i < len(packed) || j < len(loose) {
		switch {
		case j == len(loose) || (i < len(packed) && packed[i].Name < loose[j].Name):
			out = append(out, packed[i])
			i++
		case i == len(packed) || loose[j].Name < packed[i].Name:
			out = append(out, loose[j])
			j++
		default:
			out = append(out, loose[j])
			i++
			j++
		}
	}
	return out, nil
}

// looseRefs reads the loose refs under prefix, sorted by name.
func (r *Refs) looseRefs(prefix string) ([]RefEntry, error) {
	var out []RefEntry
	root := filepath.Join(r.dir, filepath.FromSlash(prefix))
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(r.dir, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		h, ok, err := r.readLoose(name)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, RefEntry{name, oidOf(h)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs under %s: %w", prefix, err)
	}
	// WalkDir orders each directory's entries, which is not the order of
	// the full names ("a/b" is walked before "a-b").
	slices.SortFunc(out, func(a, b RefEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// packedRange returns the refs under prefix in packed-refs content b,
// sorted by name; of a name on several lines (a damaged file) the last
// is kept, as a map filled in file order keeps it. When b has the
// "sorted" trait, the refs under prefix are one run of lines, found by
// bisection as git finds it: listing 10,000 tasks reads neither the slug
// refs nor anything else, and cuts every name from one copy of the run.
func packedRange(b []byte, prefix string, sorted bool) []RefEntry {
	lo, hi := 0, len(b)
	if sorted {
		if at, ok := packedLowerBound(b, prefix); ok {
			lo, hi = at, packedRunEnd(b, at, prefix)
		} else {
			sorted = false // a malformed line: read it all
		}
	}
	run := b[lo:hi]
	text := string(run) // the names are cut from this one copy
	out := make([]RefEntry, 0, bytes.Count(run, []byte{'\n'})+1)
	for i := 0; i < len(run); {
		end := i + bytes.IndexByte(run[i:], '\n') + 1
		if end == i { // the last line, without a newline
			end = len(run)
		}
		line := bytes.TrimSuffix(run[i:end], []byte{'\n'})
		at := i
		i = end
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		name := bytes.TrimRight(line[41:], "\r")
		if !bytes.HasPrefix(name, []byte(prefix)) {
			continue
		}
		var h plumbing.Hash
		if _, err := hex.Decode(h[:], line[:40]); err != nil {
			continue // as plumbing.IsHash refuses it
		}
		out = append(out, RefEntry{Name: text[at+41 : at+41+len(name)], Hash: oidOf(h)})
	}
	if !sorted {
		slices.SortStableFunc(out, func(a, b RefEntry) int { return strings.Compare(a.Name, b.Name) })
	}
	// Keep the last of each run of one name.
	k := 0
	for i := range out {
		if k > 0 && out[k-1].Name == out[i].Name {
			out[k-1] = out[i]
			continue
		}
		out[k] = out[i]
		k++
	}
	return out[:k]
}

// HexVal is the value of hex digit c, of either case.
func HexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// packedRecordName returns the ref name of the packed-refs line at
// b[s:end], and whether the line is a record ("<hash> <name>").
func packedRecordName(b []byte, s, end int) ([]byte, bool) {
	line := bytes.TrimRight(b[s:end], "\r\n")
	if len(line) < 42 || line[40] != ' ' {
		return nil, false
	}
	return line[41:], true
}

// packedLowerBound returns the offset of the first line of sorted
// packed-refs content b whose record is not before key, the way git's
// packed-refs backend searches: bisect on byte offsets, align each probe
// to the start of the next line, and skip peeled ("^") lines, which
// follow the ref they peel. ok is false when it meets a malformed line,
// where bisecting cannot be trusted.
func packedLowerBound(b []byte, key string) (int, bool) {
	lo := 0
	if len(b) > 0 && b[0] == '#' {
		lo = lineEnd(b, 0)
	}
	hi := len(b)
	// Records starting before lo sort before key; those starting at or
	// after hi do not. lo is always the start of a line.
	for lo < hi {
		mid := lo + (hi-lo)/2
		s := mid
		if s > lo && b[s-1] != '\n' {
			s = lineEnd(b, s)
		}
		for s < hi && b[s] == '^' {
			s = lineEnd(b, s)
		}
		if s >= hi {
			hi = mid // no record starts in [mid, hi)
			continue
		}
		end := lineEnd(b, s)
		name, ok := packedRecordName(b, s, end)
		if !ok {
			return 0, false
		}
		if string(name) < key {
			lo = end
		} else {
			hi = mid
		}
	}
	return lo, true
}

// packedRunEnd returns the offset just past the run of lines from at
// whose records start with prefix: the start of the first record that
// does not.
func packedRunEnd(b []byte, at int, prefix string) int {
	for at < len(b) {
		end := lineEnd(b, at)
		if b[at] != '^' {
			if name, ok := packedRecordName(b, at, end); ok && !bytes.HasPrefix(name, []byte(prefix)) {
				return at
			}
		}
		at = end
	}
	return len(b)
}

// CompareAndSwap moves ref name from old to new atomically with respect to
// every other writer that follows git's protocol (git itself, libgit2,
// other lazy processes): take <ref>.lock with O_EXCL, verify the current
// value under the lock, write the new value into the lock file and rename
// it over the ref. A zero old means "the ref must not exist yet".
func (r *Refs) CompareAndSwap(name string, old, new OID) error {
	return r.CompareAndSwapVerified(name, old, new, nil)
}

// CompareAndSwapVerified is CompareAndSwap with verify run under the ref
// lock, after the old value is checked and before the ref moves: lazy
// passes a check that every object the new value needs exists, so a
// concurrent git gc cannot leave the ref naming a missing object.
func (r *Refs) CompareAndSwapVerified(name string, old, new OID, verify func() error) error {
	path := filepath.Join(r.dir, filepath.FromSlash(name))
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
	cur, exists, err := r.readHeld(name)
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

// CountLooseRefs counts loose ref files under prefix without reading them.
func (r *Refs) CountLooseRefs(prefix string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(r.dir, filepath.FromSlash(prefix)), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

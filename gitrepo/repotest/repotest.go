// Package repotest is the conformance suite every gitrepo.Repo passes:
// objects loose and packed (deltas included), writes, refs loose and
// packed, compare-and-swap, and hostile packs, indexes, loose objects
// and packed-refs. Every answer is checked against git cat-file and git
// for-each-ref; a refusal must be an error, never a panic or a hang.
package repotest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
)

// Open opens the implementation under test on the repository whose git
// directory is gitDir. It is called again after the suite changes the
// repository's files behind it.
type Open func(t testing.TB, gitDir string) gitrepo.Repo

// callDeadline is how long one call may take before the suite calls it
// a hang. It is generous: in a SHA-256 repository Local reads each
// object through git processes, and one ReadFiles over the fixture took
// over 30 seconds under -race on a loaded two-core machine; a hang does
// not end, so a longer bound still names it.
const callDeadline = 3 * time.Minute

// Run runs the suite on repositories of the given object format
// (gitrepo.SHA1 or gitrepo.SHA256) the implementation claims to read.
func Run(t *testing.T, format string, open Open) {
	template := NewFixture(t, format)
	fresh := func(t testing.TB) *Fixture { return template.Copy(t) }
	t.Run("objects", func(t *testing.T) { testObjects(t, format, fresh, open) })
	t.Run("write", func(t *testing.T) { testWrite(t, fresh, open) })
	t.Run("refs", func(t *testing.T) { testRefs(t, fresh, open) })
	t.Run("compare-and-swap", func(t *testing.T) { testCAS(t, fresh, open) })
	t.Run("hostile", func(t *testing.T) {
		// The damaged files are read by the same code in either format;
		// the fast lane damages SHA-1 repositories only, the full suite
		// both.
		if testing.Short() && format != gitrepo.SHA1 {
			t.Skip("the fast lane damages SHA-1 repositories only; the full suite both")
		}
		testHostile(t, fresh, open)
	})
	t.Run("hostile ref names", func(t *testing.T) { testRefNames(t, fresh, open) })
	t.Run("read files", func(t *testing.T) { testReadFiles(t, format, fresh, open) })
	t.Run("records", func(t *testing.T) { testRecords(t, format, fresh, open) })
	t.Run("record writes", func(t *testing.T) { testRecordWrites(t, fresh, open) })
	t.Run("ref index", func(t *testing.T) { testRefIndex(t, fresh, open) })
	t.Run("packs", func(t *testing.T) { testPacks(t, fresh, open) })
	t.Run("bulk", func(t *testing.T) { testBulk(t, fresh, open) })
}

// testReadFiles asks ReadFiles for every name of the fixture's tree (and
// one it lacks) in every object (commits, the tag, trees, blobs, an
// absent id), at the limits around each file's size, and holds every
// answer to git cat-file's for "<object>:<name>".
func testReadFiles(t *testing.T, format string, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	objs := append(sample(t, fx), absentID(t, fx, format))
	for _, name := range []string{"f0", "f3", "f5", "nope"} {
		var in bytes.Buffer
		for _, id := range objs {
			in.WriteString(id.String() + ":" + name + "\n")
		}
		type answer struct {
			id      string
			typ     gitrepo.Type
			size    int64
			missing bool
		}
		var want []answer
		for _, line := range strings.Split(Git(t, fx.GitDir, in.Bytes(), "cat-file", "--batch-check"), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[1] == "missing" {
				want = append(want, answer{missing: true})
				continue
			}
			n, _ := strconv.ParseInt(f[2], 10, 64)
			want = append(want, answer{id: f[0], typ: gitrepo.Type(f[1]), size: n})
		}
		if len(want) != len(objs) {
			t.Fatalf("git cat-file answered %d lines for %d objects", len(want), len(objs))
		}
		var size int64 // the file's size in the commits that hold it
		for _, w := range want {
			if w.typ == gitrepo.Blob {
				size = w.size
			}
		}
		for _, slack := range []int64{0, -1} {
			limit := size + slack
			got := 0
			_, err := within(t, "ReadFiles", func() (struct{}, error) {
				return struct{}{}, r.ReadFiles(objs, name, limit, func(i int, f gitrepo.File) error {
					if i != got {
						t.Fatalf("ReadFiles answered %d before %d", i, got)
					}
					got++
					w := want[i]
					switch {
					case w.missing:
						if !errors.Is(f.Err, gitrepo.ErrMissing) {
							t.Fatalf("%s:%s: %+v, want ErrMissing as git says", objs[i], name, f)
						}
					case f.ID.String() != w.id || f.Type != w.typ:
						t.Fatalf("%s:%s: %s %s, git says %s %s", objs[i], name, f.ID, f.Type, w.id, w.typ)
					case w.typ != gitrepo.Blob:
						if !errors.Is(f.Err, gitrepo.ErrWrongType) {
							t.Fatalf("%s:%s is a %s: %v, want ErrWrongType", objs[i], name, w.typ, f.Err)
						}
					case w.size > limit:
						if !errors.Is(f.Err, gitrepo.ErrOversize) || f.Size != w.size || f.Content != nil {
							t.Fatalf("%s:%s over the limit: %+v", objs[i], name, f)
						}
					default:
						c := Git(t, fx.GitDir, nil, "cat-file", "blob", w.id)
						if f.Err != nil || f.Size != w.size || strings.TrimSpace(string(f.Content)) != c {
							t.Fatalf("%s:%s: %v, %d bytes; git says %d", objs[i], name, f.Err, len(f.Content), w.size)
						}
					}
					return nil
				})
			})
			if err != nil || got != len(objs) {
				t.Fatalf("ReadFiles(%s): %v after %d of %d", name, err, got, len(objs))
			}
		}
	}
	stop := errors.New("enough")
	n := 0
	err := r.ReadFiles(fx.IDs, "f0", 1<<20, func(int, gitrepo.File) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("a callback's error: %v after %d answers, want it back after one", err, n)
	}
}

// Copy is a copy of the fixture in a new temporary directory.
func (f *Fixture) Copy(t testing.TB) *Fixture {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, f.GitDir, dir)
	return &Fixture{GitDir: dir, IDs: f.IDs}
}

// Git runs git in dir and returns its trimmed output.
func Git(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Fixture is a repository of blobs (similar ones, so packs hold deltas),
// trees, commits and a tag, some packed and some loose.
type Fixture struct {
	GitDir string
	IDs    []gitrepo.OID
}

// NewFixture builds a fixture of the format in a temporary directory.
func NewFixture(t testing.TB, format string) *Fixture {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, nil, "init", "-q", "--bare", "--object-format="+format, ".")
	rng := rand.New(rand.NewPCG(30, 2)) //nolint:gosec // test data, not secrets
	const letters = "abcdefghijklmnopqrstuvwxyz"
	base := make([]byte, 6000)
	for i := range base {
		base[i] = letters[rng.IntN(len(letters))]
	}
	var blobs []string
	for i := 0; i < 24; i++ {
		b := append([]byte(nil), base...)
		copy(b[rng.IntN(len(b)-40):], fmt.Sprintf("edit %d of the base text", i))
		b = append(b, bytes.Repeat([]byte{byte(i)}, i*37)...)
		blobs = append(blobs, Git(t, dir, b, "hash-object", "-w", "--stdin"))
	}
	blobs = append(blobs, Git(t, dir, []byte{}, "hash-object", "-w", "--stdin"))
	var tree bytes.Buffer
	for i, b := range blobs[:6] {
		fmt.Fprintf(&tree, "100644 blob %s\tf%d\n", b, i)
	}
	treeID := Git(t, dir, tree.Bytes(), "mktree")
	c1 := Git(t, dir, nil, "commit-tree", "-m", "one", treeID)
	Git(t, dir, nil, "update-ref", "refs/heads/main", c1)
	Git(t, dir, nil, "tag", "-a", "-m", "a tag", "v1", c1)
	Git(t, dir, nil, "repack", "-a", "-d", "-q", "--depth=20", "--window=30")
	// and some loose after the pack
	for i := 0; i < 4; i++ {
		Git(t, dir, []byte(fmt.Sprintf("loose %d\n", i)), "hash-object", "-w", "--stdin")
	}
	c2 := Git(t, dir, nil, "commit-tree", "-p", c1, "-m", "two", treeID)
	Git(t, dir, nil, "update-ref", "refs/heads/main", c2, c1)
	f := &Fixture{GitDir: dir}
	for _, line := range strings.Split(Git(t, dir, nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"), "\n") {
		id, err := gitrepo.ParseOID(line)
		if err != nil {
			t.Fatal(err)
		}
		f.IDs = append(f.IDs, id)
	}
	return f
}

// Answer is git cat-file's answer for one object.
type Answer struct {
	Type    gitrepo.Type
	Content []byte
	Missing bool
}

// CatFile asks git cat-file --batch for every id at once. ok is false
// when git itself failed (a repository too damaged for it).
func CatFile(t testing.TB, gitDir string, ids []gitrepo.OID) (map[gitrepo.OID]Answer, bool) {
	t.Helper()
	var in bytes.Buffer
	for _, id := range ids {
		in.WriteString(id.String() + "\n")
	}
	cmd := exec.Command("git", "--git-dir="+gitDir, "cat-file", "--batch")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	r := bufio.NewReader(bytes.NewReader(out))
	answers := map[gitrepo.OID]Answer{}
	for _, id := range ids {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, false
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[1] == "missing" {
			answers[id] = Answer{Missing: true}
			continue
		}
		if len(f) != 3 {
			return nil, false
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, false
		}
		b := make([]byte, n+1)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, false
		}
		answers[id] = Answer{Type: gitrepo.Type(f[1]), Content: b[:n]}
	}
	return answers, true
}

// within runs f, failing the test if it takes longer than callDeadline.
func within[T any](t testing.TB, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(callDeadline):
		t.Fatalf("%s did not answer in %v", what, callDeadline)
		panic("unreachable")
	}
}

func testObjects(t *testing.T, format string, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	want, ok := CatFile(t, fx.GitDir, fx.IDs)
	if !ok {
		t.Fatal("git cat-file failed on the fixture")
	}
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	if r.Format() != format {
		t.Fatalf("Format() = %q, want %q", r.Format(), format)
	}
	for _, id := range sample(t, fx) {
		w := want[id]
		obj, err := r.Read(id, gitrepo.Any, 1<<30)
		if err != nil {
			t.Fatalf("Read(%s): %v", id, err)
		}
		if obj.Type != w.Type || obj.Size != int64(len(w.Content)) || !bytes.Equal(obj.Content, w.Content) {
			t.Fatalf("Read(%s) = %s of %d bytes; git cat-file says %s of %d", id, obj.Type, obj.Size, w.Type, len(w.Content))
		}
		if got, err := r.Read(id, w.Type, int64(len(w.Content))); err != nil || !bytes.Equal(got.Content, w.Content) {
			t.Fatalf("Read(%s) at exactly its size: %v", id, err)
		}
		if len(w.Content) > 0 {
			if _, err := r.Read(id, w.Type, int64(len(w.Content))-1); !errors.Is(err, gitrepo.ErrOversize) {
				t.Fatalf("Read(%s) over the limit: %v, want ErrOversize", id, err)
			}
		}
		other := gitrepo.Blob
		if w.Type == gitrepo.Blob {
			other = gitrepo.Commit
		}
		if _, err := r.Read(id, other, 1<<30); !errors.Is(err, gitrepo.ErrWrongType) {
			t.Fatalf("Read(%s) as a %s: %v, want ErrWrongType", id, other, err)
		}
		if has, err := r.Has(id); err != nil || !has {
			t.Fatalf("Has(%s) = %v, %v", id, has, err)
		}
	}
	missing := absentID(t, fx, format)
	if _, err := r.Read(missing, gitrepo.Any, 1<<20); !errors.Is(err, gitrepo.ErrMissing) {
		t.Fatalf("Read of a missing object: %v, want ErrMissing", err)
	}
	if has, err := r.Has(missing); err != nil || has {
		t.Fatalf("Has of a missing object = %v, %v", has, err)
	}
}

// sample is the fixture's objects a per-object check visits: all of them
// in the full suite; in the fast lane (-short) every commit, tree and tag
// and one blob in four of those packed and of those loose, since a
// SHA-256 Local reads each object through git processes of its own and
// the fixture's blobs are alike. The full suite (scripts/test.sh runs
// without -short) checks every object.
func sample(t testing.TB, fx *Fixture) []gitrepo.OID {
	t.Helper()
	if !testing.Short() {
		return append([]gitrepo.OID(nil), fx.IDs...)
	}
	var in bytes.Buffer
	for _, id := range fx.IDs {
		in.WriteString(id.String() + "\n")
	}
	types := strings.Split(Git(t, fx.GitDir, in.Bytes(), "cat-file", "--batch-check=%(objecttype)"), "\n")
	if len(types) != len(fx.IDs) {
		t.Fatalf("git cat-file answered %d lines for %d objects", len(types), len(fx.IDs))
	}
	var ids []gitrepo.OID
	seen := map[bool]int{} // blobs seen so far, loose (true) and packed
	for i, id := range fx.IDs {
		if gitrepo.Type(types[i]) != gitrepo.Blob {
			ids = append(ids, id)
			continue
		}
		hex := id.String()
		_, err := os.Stat(filepath.Join(fx.GitDir, "objects", hex[:2], hex[2:]))
		loose := err == nil
		if seen[loose]%4 == 0 {
			ids = append(ids, id)
		}
		seen[loose]++
	}
	return ids
}

// absentID is an id of the format the fixture does not hold.
func absentID(t testing.TB, fx *Fixture, format string) gitrepo.OID {
	n := 40
	if format == gitrepo.SHA256 {
		n = 64
	}
	id, err := gitrepo.ParseOID(strings.Repeat("e", n))
	if err != nil {
		t.Fatal(err)
	}
	for _, have := range fx.IDs {
		if have == id {
			t.Fatal("the fixture holds the id chosen as absent")
		}
	}
	return id
}

func testWrite(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	blob := []byte("written by the conformance suite\n")
	id, err := r.Write(gitrepo.Blob, blob)
	if err != nil {
		t.Fatal(err)
	}
	if want := Git(t, fx.GitDir, blob, "hash-object", "--stdin"); id.String() != want {
		t.Fatalf("Write named the blob %s; git hash-object says %s", id, want)
	}
	tree := []byte(fmt.Sprintf("100644 blob %s\tw\n", id))
	treeID := Git(t, fx.GitDir, tree, "mktree", "--missing")
	raw, ok := CatFile(t, fx.GitDir, []gitrepo.OID{mustParse(t, treeID)})
	if !ok {
		t.Fatal("git cat-file failed")
	}
	other := fresh(t)
	w := open(t, other.GitDir)
	t.Cleanup(func() { _ = w.Close() })
	for _, c := range []struct {
		typ     gitrepo.Type
		content []byte
	}{{gitrepo.Blob, blob}, {gitrepo.Tree, raw[mustParse(t, treeID)].Content}} {
		got, err := w.Write(c.typ, c.content)
		if err != nil {
			t.Fatalf("Write(%s): %v", c.typ, err)
		}
		ans, ok := CatFile(t, other.GitDir, []gitrepo.OID{got})
		if !ok || ans[got].Type != c.typ || !bytes.Equal(ans[got].Content, c.content) {
			t.Fatalf("git cat-file reads the written %s %s as %+v", c.typ, got, ans[got])
		}
		if again, err := w.Write(c.typ, c.content); err != nil || again != got {
			t.Fatalf("writing the %s again: %s, %v", c.typ, again, err)
		}
	}
}

func mustParse(t testing.TB, s string) gitrepo.OID {
	t.Helper()
	id, err := gitrepo.ParseOID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// forEachRef is git's list of refs under prefix.
func forEachRef(t testing.TB, gitDir, prefix string) map[string]gitrepo.OID {
	refs := map[string]gitrepo.OID{}
	out := Git(t, gitDir, nil, "for-each-ref", "--format=%(objectname) %(refname)", prefix)
	for _, line := range strings.Split(out, "\n") {
		if id, name, ok := strings.Cut(line, " "); ok {
			refs[name] = mustParse(t, id)
		}
	}
	return refs
}

func testRefs(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	head := Git(t, fx.GitDir, nil, "rev-parse", "refs/heads/main")
	for i := 0; i < 5; i++ {
		Git(t, fx.GitDir, nil, "update-ref", fmt.Sprintf("refs/lazy/tasks/p%d", i), head)
	}
	Git(t, fx.GitDir, nil, "pack-refs", "--all")
	for i := 0; i < 3; i++ { // loose, and one overriding a packed ref
		Git(t, fx.GitDir, nil, "update-ref", fmt.Sprintf("refs/lazy/tasks/l%d", i), head+"~1")
	}
	Git(t, fx.GitDir, nil, "update-ref", "refs/lazy/tasks/p0", head+"~1")
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	for _, prefix := range []string{"refs/lazy/tasks/", "refs/heads/", "refs/tags/", "refs/nothing/"} {
		got, err := r.ListRefs(prefix)
		if err != nil {
			t.Fatalf("ListRefs(%s): %v", prefix, err)
		}
		want := forEachRef(t, fx.GitDir, prefix)
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			t.Fatalf("ListRefs(%s) = %v; git for-each-ref says %v", prefix, sorted(got), sorted(want))
		}
		for name, id := range want {
			if got, ok, err := r.ReadRef(name); err != nil || !ok || got != id {
				t.Fatalf("ReadRef(%s) = %s, %v, %v; git says %s", name, got, ok, err, id)
			}
		}
	}
	if _, ok, err := r.ReadRef("refs/lazy/tasks/none"); err != nil || ok {
		t.Fatalf("ReadRef of a missing ref: %v, %v", ok, err)
	}
}

func sorted(m map[string]gitrepo.OID) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v.String())
	}
	sort.Strings(out)
	return out
}

func testCAS(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	c2 := mustParse(t, Git(t, fx.GitDir, nil, "rev-parse", "refs/heads/main"))
	c1 := mustParse(t, Git(t, fx.GitDir, nil, "rev-parse", "refs/heads/main~1"))
	const name = "refs/lazy/tasks/cas"
	step := func(old, new gitrepo.OID, stale bool, want string) {
		t.Helper()
		err := r.CompareAndSwap(name, old, new)
		if stale != errors.Is(err, gitrepo.ErrStale) || (!stale && err != nil) {
			t.Fatalf("CompareAndSwap(%s -> %s) = %v, stale want %v", old, new, err, stale)
		}
		if got := Git(t, fx.GitDir, nil, "for-each-ref", "--format=%(objectname)", name); got != want {
			t.Fatalf("after CompareAndSwap git says %s names %q, want %q", name, got, want)
		}
	}
	step(gitrepo.OID{}, c1, false, c1.String())
	step(gitrepo.OID{}, c2, true, c1.String())
	step(c2, c1, true, c1.String())
	step(c1, c2, false, c2.String())
	Git(t, fx.GitDir, nil, "pack-refs", "--all")
	step(c2, c1, false, c1.String())
}

// mutation damages a copy of the fixture.
type mutation struct {
	name string
	do   func(t testing.TB, gitDir string)
}

func testHostile(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	pristine, ok := CatFile(t, fx.GitDir, fx.IDs)
	if !ok {
		t.Fatal("git cat-file failed on the fixture")
	}
	for _, m := range mutations(testing.Short()) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel() // each damages a copy of its own
			dir := t.TempDir()
			copyDir(t, fx.GitDir, dir)
			m.do(t, dir)
			damaged, gitOK := CatFile(t, dir, fx.IDs)
			r := open(t, dir)
			t.Cleanup(func() { _ = r.Close() })
			for _, id := range fx.IDs {
				obj, err := within(t, "Read "+id.String(), func() (*gitrepo.Object, error) { return r.Read(id, gitrepo.Any, 1<<20) })
				if err != nil {
					continue
				}
				want := pristine[id]
				if gitOK && !damaged[id].Missing {
					want = damaged[id] // git reads the damage the same way
				}
				if obj.Type != want.Type || obj.Size != int64(len(obj.Content)) || !bytes.Equal(obj.Content, want.Content) {
					t.Fatalf("Read(%s) of a damaged repository succeeded with %s of %d bytes; git cat-file says %s of %d",
						id, obj.Type, len(obj.Content), want.Type, len(want.Content))
				}
			}
			_, _ = within(t, "ListRefs", func() (map[string]gitrepo.OID, error) { return r.ListRefs("refs/") })
			_, _ = within(t, "ReadRef", func() (bool, error) { _, ok, err := r.ReadRef("refs/heads/main"); return ok, err })
		})
	}
}

// mutations are the hostile files: the seeds of the reader's fuzz targets
// (truncated and out-of-range indexes, flipped pack bytes) and damaged
// loose objects and packed-refs.
func mutations(short bool) []mutation {
	rng := rand.New(rand.NewPCG(21, 22)) //nolint:gosec // damage, not secrets
	ms := []mutation{
		{"idx truncated by one byte", editGlob("objects/pack/*.idx", func(b []byte) []byte { return b[:len(b)-1] })},
		{"idx header only", editGlob("objects/pack/*.idx", func(b []byte) []byte { return b[:min(len(b), 8+1024)] })},
		{"idx fanout broken", editGlob("objects/pack/*.idx", func(b []byte) []byte { b[8+4*200] ^= 0xff; return b })},
		{"idx names out of order", editGlob("objects/pack/*.idx", func(b []byte) []byte { b[8+1024+2] ^= 0x80; return b })},
		{"idx offsets beyond the pack", editGlob("objects/pack/*.idx", func(b []byte) []byte {
			for i := len(b) - 200; i < len(b)-80; i += 4 {
				b[i] = 0x7f
			}
			return b
		})},
		{"idx empty", editGlob("objects/pack/*.idx", func([]byte) []byte { return nil })},
		{"pack truncated to half", editGlob("objects/pack/*.pack", func(b []byte) []byte { return b[:len(b)/2] })},
		{"pack header only", editGlob("objects/pack/*.pack", func(b []byte) []byte { return b[:12] })},
		{"loose objects truncated", editGlob("objects/??/*", func(b []byte) []byte { return b[:len(b)/2] })},
		{"loose objects flipped", editGlob("objects/??/*", func(b []byte) []byte { b[len(b)/2] ^= 0x5a; return b })},
		{"packed-refs fuzz seed", writeFile("packed-refs", []byte("0000000000000000000000000000000000000000 \r"))},
		{"packed-refs garbage", writeFile("packed-refs", []byte("# pack-refs with: peeled fully-peeled sorted \nzz refs/heads/x\n^\n\xff\xfe refs/\n"))},
	}
	random := 12
	if short {
		random = 4
	}
	for k := 0; k < random; k++ {
		seed := rng.Uint64()
		ms = append(ms, mutation{fmt.Sprintf("pack bytes overwritten %d", k), editGlob("objects/pack/*.pack", func(b []byte) []byte {
			r := rand.New(rand.NewPCG(seed, 1)) //nolint:gosec // damage, not secrets
			for j := 0; j < 1+r.IntN(8); j++ {
				b[12+r.IntN(len(b)-32)] ^= byte(1) << r.IntN(8)
			}
			return b
		})})
	}
	return ms
}

func editGlob(pattern string, edit func([]byte) []byte) func(testing.TB, string) {
	return func(t testing.TB, gitDir string) {
		paths, _ := filepath.Glob(filepath.Join(gitDir, pattern))
		if len(paths) == 0 {
			t.Fatalf("no %s in the fixture", pattern)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			_ = os.Chmod(p, 0o644)
			if err := os.WriteFile(p, edit(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func writeFile(name string, b []byte) func(testing.TB, string) {
	return func(t testing.TB, gitDir string) {
		if err := os.WriteFile(filepath.Join(gitDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", from, err, out)
	}
}

// testRefNames: names that would be options to git or paths outside the
// refs are refused, and nothing is written for them.
func testRefNames(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	// a file outside refs that a traversal would read
	if err := os.WriteFile(filepath.Join(fx.GitDir, "outside"), []byte(fx.IDs[0].String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := mustParse(t, Git(t, fx.GitDir, nil, "rev-parse", "refs/heads/main"))
	for _, name := range []string{"refs/../outside", "refs/heads/../../outside", "--output=x", "HEAD", "refs/a b",
		"refs/heads/x\x00y", "refs/heads/x.lock", "refs/heads/", "refs/heads/.hidden", "refs/heads/a\nb", "outside"} {
		if id, ok, err := r.ReadRef(name); err == nil && ok {
			t.Fatalf("ReadRef(%q) = %s; want a refusal", name, id)
		}
		if err := r.CompareAndSwap(name, gitrepo.OID{}, head); err == nil {
			t.Fatalf("CompareAndSwap(%q) succeeded", name)
		}
	}
	for _, prefix := range []string{"refs/../", "../", "refs/heads", "-x/"} {
		if refs, err := r.ListRefs(prefix); err == nil && len(refs) > 0 {
			t.Fatalf("ListRefs(%q) = %v; want a refusal", prefix, refs)
		}
	}
	if got := Git(t, fx.GitDir, nil, "for-each-ref", "--format=%(refname)"); strings.Count(got, "\n") != 1 {
		t.Fatalf("refs after hostile names: %q", got)
	}
}

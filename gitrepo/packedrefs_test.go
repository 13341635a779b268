package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// packedFile builds packed-refs content for names (sorted when sorted is
// set), every third ref followed by a peeled line, and returns it with
// each name's hash.
func packedFile(names []string, sorted bool, header string) ([]byte, map[string]string) {
	if sorted {
		sort.Strings(names)
	}
	var b strings.Builder
	b.WriteString(header)
	want := map[string]string{}
	for i, n := range names {
		h := fmt.Sprintf("%040x", i+1)
		want[n] = h
		b.WriteString(h + " " + n + "\n")
		if i%3 == 0 {
			b.WriteString("^" + fmt.Sprintf("%040x", 1<<20+i) + "\n")
		}
	}
	return []byte(b.String()), want
}

// prefixNames returns ref names that share long prefixes with each other
// (a, ab, abc, a/b, a-b...), where an off-by-one in the bisection would
// land on a neighbour.
func prefixNames(rng *rand.Rand, n int) []string {
	return prefixNamesOf(rng, n, "ab-_0z")
}

// prefixNamesOf is prefixNames over alphabet.
func prefixNamesOf(rng *rand.Rand, n int, alphabet string) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		l := 1 + rng.IntN(6)
		var sb strings.Builder
		sb.WriteString("refs/lazy/")
		for i := 0; i < l; i++ {
			sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		if strings.HasSuffix(s, "/") || strings.Contains(s, "//") || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

func TestPackedSearchMatchesLinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const header = "# pack-refs with: peeled fully-peeled sorted \n"
	for _, n := range []int{0, 1, 2, 3, 7, 50, 500} {
		names := prefixNames(rng, n)
		b, want := packedFile(names, true, header)
		if !packedSorted(b) {
			t.Fatal("header not read as sorted")
		}
		probes := append([]string{"", "refs", "refs/lazy/", "refs/lazy/zzzzzzz", "a", "~"}, names...)
		for _, name := range names {
			probes = append(probes, name+"a", name[:len(name)-1], name+"/x")
		}
		for _, p := range probes {
			h, ok := packedSearch(b, p)
			lh, lok := packedLookup(b, p)
			if ok != lok || h != lh {
				t.Fatalf("n=%d %q: search %s %v, scan %s %v", n, p, h, ok, lh, lok)
			}
			if w, exists := want[p]; exists != ok || (ok && h.String() != w) {
				t.Fatalf("n=%d %q: got %s %v, want %q", n, p, h, ok, w)
			}
		}
		// Without the final newline.
		if len(b) > 0 {
			trimmed := b[:len(b)-1]
			for _, name := range names {
				h, ok := packedSearch(trimmed, name)
				if !ok || h.String() != want[name] {
					t.Fatalf("no final newline: %q = %s %v", name, h, ok)
				}
			}
		}
	}
}

func TestPackedSortedTrait(t *testing.T) {
	for b, want := range map[string]bool{
		"# pack-refs with: peeled fully-peeled sorted \n": true,
		"# pack-refs with: sorted\n":                      true,
		"# pack-refs with: peeled fully-peeled \n":        false,
		"# pack-refs with: peeled unsorted\n":             false,
		"":                                                false,
		strings.Repeat("1", 40) + " refs/x\n":             false,
		"# pack-refs with: peeled\nsorted\n":              false,
	} {
		if got := packedSorted([]byte(b)); got != want {
			t.Errorf("%q: sorted %v, want %v", b, got, want)
		}
	}
}

// A file without the sorted trait is scanned, whatever its order.
func TestReadRefUnsortedPackedRefs(t *testing.T) {
	dir := t.TempDir()
	repo := NewRefs(dir)
	names := prefixNames(rand.New(rand.NewPCG(3, 4)), 200)
	b, want := packedFile(names, false, "# pack-refs with: peeled fully-peeled \n")
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		h, ok, err := repo.ReadRef(n)
		if err != nil || !ok || h.String() != want[n] {
			t.Fatalf("%s = %s %v %v, want %s", n, h, ok, err, want[n])
		}
	}
	if _, ok, err := repo.ReadRef("refs/lazy/none"); ok || err != nil {
		t.Fatalf("missing ref found: %v %v", ok, err)
	}
}

// The cached map follows the file: git pack-refs renames a new
// packed-refs over the old one, and a rewrite of the same size in the
// same second still changes the inode.
func TestReadRefFollowsRewrittenPackedRefs(t *testing.T) {
	dir := testrepo.New(t)
	repo := NewRefs(filepath.Join(dir, ".git"))
	head := strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", "HEAD"))
	testrepo.Git(t, dir, "update-ref", "refs/lazy/tasks/a", head)
	testrepo.Git(t, dir, "pack-refs", "--all")
	if h, ok, err := repo.ReadRef("refs/lazy/tasks/a"); err != nil || !ok || h.String() != head {
		t.Fatalf("packed ref: %s %v %v", h, ok, err)
	}
	if _, ok, _ := repo.ReadRef("refs/lazy/tasks/b"); ok {
		t.Fatal("b found before it exists")
	}
	testrepo.Git(t, dir, "update-ref", "refs/lazy/tasks/b", head)
	testrepo.Git(t, dir, "update-ref", "-d", "refs/lazy/tasks/a")
	testrepo.Git(t, dir, "pack-refs", "--all")
	if _, ok, err := repo.ReadRef("refs/lazy/tasks/a"); ok || err != nil {
		t.Fatalf("deleted ref still read: %v %v", ok, err)
	}
	if h, ok, err := repo.ReadRef("refs/lazy/tasks/b"); err != nil || !ok || h.String() != head {
		t.Fatalf("repacked ref: %s %v %v", h, ok, err)
	}
	if err := os.Remove(filepath.Join(dir, ".git", "packed-refs")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := repo.ReadRef("refs/lazy/tasks/b"); ok || err != nil {
		t.Fatalf("ref read from a removed packed-refs: %v %v", ok, err)
	}
}

// packedSearch agrees with git about every ref git packed.
func TestPackedSearchGitFile(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	dir := testrepo.New(t)
	head := strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", "HEAD"))
	var in strings.Builder
	// No "/": git refuses refs/x beside refs/x/y.
	names := prefixNamesOf(rand.New(rand.NewPCG(5, 6)), 300, "ab-_0z")
	for _, n := range names {
		in.WriteString("create " + n + " " + head + "\n")
	}
	testrepo.Git(t, dir, "tag", "-a", "-m", "peeled", "v1") // a peeled line
	gitIn(t, dir, in.String(), "update-ref", "--stdin")
	testrepo.Git(t, dir, "pack-refs", "--all")
	b, err := os.ReadFile(filepath.Join(dir, ".git", "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	if !packedSorted(b) || !strings.Contains(string(b), "\n^") {
		t.Fatalf("git wrote an unexpected packed-refs:\n%.300s", b)
	}
	for _, n := range append(names, "refs/tags/v1") {
		want := head
		if n == "refs/tags/v1" {
			want = strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", "refs/tags/v1"))
		}
		if h, ok := packedSearch(b, n); !ok || h.String() != want {
			t.Fatalf("%s = %s %v, want %s", n, h, ok, want)
		}
	}
}

// naivePacked is the parse List used before packedRange: every line of
// the file, into a map.
func naivePacked(b []byte, prefix string) map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		name := strings.TrimRight(line[41:], "\r")
		if strings.HasPrefix(name, prefix) && plumbing.IsHash(line[:40]) {
			out[name] = plumbing.NewHash(line[:40])
		}
	}
	return out
}

func sameRefs(t *testing.T, got []RefEntry, want map[string]plumbing.Hash) {
	t.Helper()
	if len(got) != len(want) || !slices.IsSortedFunc(got, func(a, b RefEntry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("got %d refs (sorted: %v), want %d", len(got), slices.IsSortedFunc(got, func(a, b RefEntry) int { return strings.Compare(a.Name, b.Name) }), len(want))
	}
	for _, e := range got {
		if h, ok := want[e.Name]; !ok || oidOf(h) != e.Hash {
			t.Fatalf("%s = %s, want %s (%v)", e.Name, e.Hash, h, ok)
		}
	}
}

// TestPackedRangeSorted bisects to the refs under a prefix in files as
// git writes them, with neighbours that share part of the prefix.
func TestPackedRangeSorted(t *testing.T) {
	h := func(i int) string { return fmt.Sprintf("%040x", i+1) }
	for _, n := range []int{0, 1, 2, 3, 10, 257} {
		var names []string
		names = append(names, "refs/heads/main", "refs/lazy/slugs/a", "refs/lazy/tasks", "refs/lazy/tasks-x/0", "refs/lazy/tasks0", "refs/tags/v1", "refs/lazy/tasks/")
		for i := 0; i < n; i++ {
			names = append(names, fmt.Sprintf("refs/lazy/tasks/%016x", i*7919))
		}
		slices.Sort(names)
		var b strings.Builder
		b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
		for i, name := range names {
			fmt.Fprintf(&b, "%s %s\n", h(i), name)
			if i%3 == 0 {
				fmt.Fprintf(&b, "^%s\n", h(i+1000))
			}
		}
		for _, crlf := range []bool{false, true} {
			content := b.String()
			if crlf {
				content = strings.ReplaceAll(content, "\n", "\r\n")
			}
			for _, prefix := range []string{"refs/lazy/tasks/", "refs/lazy/", "refs/", "refs/zzz/", "refs/a/"} {
				got := packedRange([]byte(content), prefix, true)
				sameRefs(t, got, naivePacked([]byte(content), prefix))
			}
		}
	}
}

// FuzzPackedRange: any file without the sorted trait is read as the
// naive parse reads it; with the trait claimed, nothing panics, nor does
// a search for one ref.
func FuzzPackedRange(f *testing.F) {
	f.Add([]byte("# pack-refs with: peeled sorted \n"+strings.Repeat("1", 40)+" refs/lazy/tasks/a\n^"+strings.Repeat("2", 40)+"\n"), "refs/lazy/tasks/")
	f.Add([]byte(strings.Repeat("1", 40)+" refs/lazy/tasks/b\n"+strings.Repeat("3", 40)+" refs/lazy/tasks/a"), "refs/lazy/")
	f.Fuzz(func(t *testing.T, b []byte, prefix string) {
		sameRefs(t, packedRange(b, prefix, false), naivePacked(b, prefix))
		packedRange(b, prefix, true)
		packedSearch(b, prefix)
	})
}

// TestReadRefAgreesWithListRefsOnADamagedSortedFile: a packed-refs that
// claims the sorted trait but holds a malformed line cannot be bisected;
// ReadRef then reads it line by line as ListRefs does, so it never calls
// absent a ref the listing shows (a create could shadow it).
func TestReadRefAgreesWithListRefsOnADamagedSortedFile(t *testing.T) {
	dir := testrepo.New(t)
	refs := NewRefs(filepath.Join(dir, ".git"))
	h := strings.Repeat("1", 40)
	var b strings.Builder
	b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for i := range 40 {
		if i == 20 {
			b.WriteString("this line is not a record\n")
		}
		fmt.Fprintf(&b, "%s %s%016x\n", h, "refs/lazy/tasks/", i)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "packed-refs"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	listed, err := refs.ListRefs("refs/lazy/tasks/")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Fatal("ListRefs read no ref")
	}
	for name := range listed {
		if got, ok, err := refs.ReadRef(name); err != nil || !ok || got.String() != h {
			t.Errorf("ReadRef(%s) = %s, %v, %v; ListRefs shows it", name, got, ok, err)
		}
	}
}

func TestPackedLookup(t *testing.T) {
	h1 := strings.Repeat("1", 40)
	h2 := strings.Repeat("2", 40)
	h3 := strings.Repeat("3", 40)
	b := []byte("# pack-refs with: peeled fully-peeled sorted \n" +
		h1 + " refs/lazy/tasks/abcd\n" +
		h2 + " refs/lazy/tasks/abc\n" +
		"^" + h1 + "\n" +
		h3 + " refs/lazy/tasks/zz") // no final newline
	cases := map[string]string{
		"refs/lazy/tasks/abcd": h1,
		"refs/lazy/tasks/abc":  h2,
		"refs/lazy/tasks/zz":   h3,
		"refs/lazy/tasks/ab":   "",
		"lazy/tasks/abc":       "",
	}
	for name, want := range cases {
		h, ok := packedLookup(b, name)
		if want == "" {
			if ok {
				t.Errorf("%s found as %s", name, h)
			}
			continue
		}
		if !ok || h.String() != want {
			t.Errorf("%s = %s, %v; want %s", name, h, ok, want)
		}
	}
}

// TestReadRefUnderARefFile: a name whose directory is a ref file
// (refs/remotes/origin/main/HEAD beside refs/remotes/origin/main) is no
// ref, as git reads it: missing (whatever packed-refs holds for it),
// never an error (it was one, which sent a start's in-process read of
// origin's HEAD back to git).
func TestReadRefUnderARefFile(t *testing.T) {
	dir := testrepo.New(t)
	repo := NewRefs(filepath.Join(dir, ".git"))
	head := testrepo.Git(t, dir, "rev-parse", "HEAD")
	testrepo.Git(t, dir, "update-ref", "refs/remotes/origin/main", head)
	const under = "refs/remotes/origin/main/HEAD"
	if _, err := testrepo.GitErr(dir, "rev-parse", "--verify", "--quiet", under); err == nil {
		t.Fatalf("git finds %s", under)
	}
	if _, ok, err := repo.ReadRef(under); ok || err != nil {
		t.Fatalf("%s beside a loose ref file: %v %v, want missing as git says", under, ok, err)
	}
	// A packed line for the name (git itself never writes one beside
	// the file; a hand edit can): git stops at the file all the same.
	packed := "# pack-refs with: peeled fully-peeled sorted \n" + head + " " + under + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", "packed-refs"), []byte(packed), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := testrepo.GitErr(dir, "rev-parse", "--verify", "--quiet", under); err == nil {
		t.Fatalf("git reads the packed %s past the file", under)
	}
	if _, ok, err := repo.ReadRef(under); ok || err != nil {
		t.Fatalf("packed %s beside a loose ref file: %v %v, want missing as git says", under, ok, err)
	}
}

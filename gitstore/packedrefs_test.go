package gitstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testrepo"
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
	repo := &Repo{CommonDir: dir, packed: &packedRefs{}}
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
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
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

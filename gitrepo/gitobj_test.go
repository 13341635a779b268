package gitrepo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// go-git's decoders and merge base are the oracle here: lazy read
// commits and trees through them before it had its own, and records
// merged by an older lazy must merge the same way now. Tests may import
// plumbing/object; the binary must not (it links OpenPGP).

func randHash(r *rand.Rand) plumbing.Hash {
	var h plumbing.Hash
	for i := range h {
		h[i] = byte(r.IntN(256))
	}
	return h
}

func randCommit(r *rand.Rand) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", randHash(r))
	for range r.IntN(4) {
		fmt.Fprintf(&b, "parent %s\n", randHash(r))
	}
	zone := func() string {
		m := r.IntN(14*60+1) / 15 * 15
		sign := "+"
		if r.IntN(2) == 0 {
			sign = "-"
		}
		return fmt.Sprintf("%s%02d%02d", sign, m/60, m%60)
	}
	fmt.Fprintf(&b, "author A U Thor <a@example.com> %d %s\n", r.Int64N(4e9), zone())
	fmt.Fprintf(&b, "committer C O Mitter <c@example.com> %d %s\n", r.Int64N(4e9), zone())
	if r.IntN(3) == 0 {
		b.WriteString("gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----\n")
	}
	if r.IntN(4) == 0 {
		b.WriteString("encoding ISO-8859-1\n")
	}
	b.WriteString("\n")
	msgs := []string{"", "subject", "subject\n", "subject\n\nbody\n\nLazy-Op: create\nLazy-Actor: human\n", "\n\nleading blank lines\n", "no newline at end"}
	b.WriteString(msgs[r.IntN(len(msgs))])
	return b.Bytes()
}

func TestParseCommitMatchesGoGit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		raw := randCommit(r)
		obj := &plumbing.MemoryObject{}
		obj.SetType(plumbing.CommitObject)
		_, _ = obj.Write(raw)
		want, err := object.DecodeCommit(memory.NewStorage(), obj)
		if err != nil {
			t.Fatalf("go-git refused %q: %v", raw, err)
		}
		got, err := decodeCommit(obj)
		if err != nil {
			t.Fatalf("%d: %q: %v", i, raw, err)
		}
		if got.TreeHash != oidOf(want.TreeHash) || fmt.Sprint(got.ParentHashes) != fmt.Sprint(want.ParentHashes) || got.Message != want.Message {
			t.Fatalf("%d: %q:\n got %+v\nwant tree %s parents %v message %q", i, raw, got, want.TreeHash, want.ParentHashes, want.Message)
		}
		// The instant must match; lazy does not read the zone.
		if !got.Committer.When.Equal(want.Committer.When) {
			t.Fatalf("%d: %q: committer time %v, want %v", i, raw, got.Committer.When, want.Committer.When)
		}
	}
}

func TestParseTreeMatchesGoGit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	modes := []string{"100644", "100755", "40000", "120000", "160000"}
	names := []string{"task.json", "op.json", "turns", "a b", "ünïcode", "x.y.z", "-dash", "0"}
	for i := range 2000 {
		var raw bytes.Buffer
		for range r.IntN(6) {
			fmt.Fprintf(&raw, "%s %s%d\x00", modes[r.IntN(len(modes))], names[r.IntN(len(names))], r.IntN(100))
			h := randHash(r)
			raw.Write(h[:])
		}
		obj := &plumbing.MemoryObject{}
		obj.SetType(plumbing.TreeObject)
		_, _ = obj.Write(raw.Bytes())
		want, err := object.DecodeTree(memory.NewStorage(), obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTree(obj)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if len(got.Entries) != len(want.Entries) {
			t.Fatalf("%d: %d entries, want %d", i, len(got.Entries), len(want.Entries))
		}
		for j, e := range want.Entries {
			g := got.Entries[j]
			if g.Name != e.Name || g.Mode != e.Mode || g.Hash != oidOf(e.Hash) || g.Mode.IsFile() != e.Mode.IsFile() {
				t.Fatalf("%d: entry %d is %+v, want %+v", i, j, g, e)
			}
		}
	}
}

// A damaged tree or commit is an error, never a panic or a wrong read.
func TestDecodersRefuseDamage(t *testing.T) {
	for _, raw := range []string{"100644 name", "100644 name\x00short", "abc name\x00" + strings.Repeat("x", 20), " name\x00" + strings.Repeat("x", 20)} {
		if _, err := parseTree([]byte(raw)); err == nil {
			t.Errorf("tree %q parsed", raw)
		}
	}
	for _, raw := range []string{"tree nothex\n\n", "tree " + strings.Repeat("a", 39) + "\n\n", "parent zz\n\n"} {
		if _, err := parseCommit([]byte(raw)); err == nil {
			t.Errorf("commit %q parsed", raw)
		}
	}
}

func FuzzParseCommit(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		f.Add(randCommit(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCommit(b)
		if err == nil && c == nil {
			t.Fatal("no commit and no error")
		}
	})
}

func FuzzParseTree(f *testing.F) {
	f.Add([]byte("100644 task.json\x00" + strings.Repeat("\x01", 20)))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := parseTree(b)
		if err == nil && tr == nil {
			t.Fatal("no tree and no error")
		}
	})
}

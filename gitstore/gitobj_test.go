package gitstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
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
		if got.TreeHash != want.TreeHash || fmt.Sprint(got.ParentHashes) != fmt.Sprint(want.ParentHashes) || got.Message != want.Message {
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
			if g.Name != e.Name || g.Mode != e.Mode || g.Hash != e.Hash || g.Mode.IsFile() != e.Mode.IsFile() {
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

// TestMergeBasesMatchGoGit writes random commit graphs (merges and
// criss-crosses among them) and asks both for the merge bases of random
// pairs, and whether one is the other's ancestor.
func TestMergeBasesMatchGoGit(t *testing.T) {
	s, _ := open(t)
	empty, err := s.objs.writeTree(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 20 {
		var commits []plumbing.Hash
		for i := range 30 {
			var parents []plumbing.Hash
			if len(commits) > 0 && (i == 0 || r.IntN(6) > 0) {
				parents = append(parents, commits[r.IntN(len(commits))])
				if r.IntN(3) == 0 {
					parents = append(parents, commits[r.IntN(len(commits))])
				}
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "tree %s\n", empty)
			for _, p := range parents {
				fmt.Fprintf(&b, "parent %s\n", p)
			}
			// Dates out of order too: go-git sorts by them, git does not.
			when := at.Add(time.Duration(r.IntN(1000)) * time.Minute).Unix()
			fmt.Fprintf(&b, "author a <a@x> %d +0000\ncommitter c <c@x> %d +0000\n\nround %d commit %d\n", when, when, round, i)
			h, err := s.objs.write(plumbing.CommitObject, b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			commits = append(commits, h)
		}
		for range 40 {
			a, b := commits[r.IntN(len(commits))], commits[r.IntN(len(commits))]
			// go-git, the oracle, reads the same objects directory.
			oracle := filesystem.NewStorage(osfs.New(filepath.Dir(s.objs.dir)), cache.NewObjectLRUDefault())
			ca, err := object.GetCommit(oracle, a)
			if err != nil {
				t.Fatal(err)
			}
			cb, err := object.GetCommit(oracle, b)
			if err != nil {
				t.Fatal(err)
			}
			wantBases, err := ca.MergeBase(cb)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, c := range wantBases {
				want = append(want, c.Hash.String())
			}
			got, err := s.mergeBases(a, b)
			if err != nil {
				t.Fatal(err)
			}
			var gots []string
			for _, h := range got {
				gots = append(gots, h.String())
			}
			sort.Strings(want)
			sort.Strings(gots)
			if strings.Join(gots, " ") != strings.Join(want, " ") {
				t.Fatalf("round %d: merge bases of %s and %s are %v, go-git says %v", round, a, b, gots, want)
			}
			wantAnc, err := ca.IsAncestor(cb)
			if err != nil {
				t.Fatal(err)
			}
			if gotAnc, err := s.isAncestor(a, b); err != nil || gotAnc != wantAnc {
				t.Fatalf("round %d: %s ancestor of %s: %v (%v), go-git says %v", round, a, b, gotAnc, err, wantAnc)
			}
		}
	}
}

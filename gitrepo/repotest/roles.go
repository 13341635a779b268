package repotest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
)

// testRecords holds the typed reads of RecordReader to git cat-file and
// ls-tree: every blob's content and size, every tree's entries, every
// commit's tree and parents, and the refusals (another type, over the
// limit, absent).
func testRecords(t *testing.T, format string, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	want, ok := CatFile(t, fx.GitDir, fx.IDs)
	if !ok {
		t.Fatal("git cat-file failed on the fixture")
	}
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	for _, id := range fx.IDs {
		w := want[id]
		switch w.Type {
		case gitrepo.Blob:
			b, err := r.ReadBlob(id, "f", int64(len(w.Content)))
			if err != nil || !bytes.Equal(b, w.Content) {
				t.Fatalf("ReadBlob(%s) = %d bytes, %v; git cat-file says %d", id, len(b), err, len(w.Content))
			}
			if n, err := r.BlobSize(id, "f"); err != nil || n != int64(len(w.Content)) {
				t.Fatalf("BlobSize(%s) = %d, %v; git cat-file says %d", id, n, err, len(w.Content))
			}
			if len(w.Content) > 0 {
				if _, err := r.ReadBlob(id, "f", int64(len(w.Content))-1); !errors.Is(err, gitrepo.ErrOversize) {
					t.Fatalf("ReadBlob(%s) over the limit: %v, want ErrOversize", id, err)
				}
			}
			if _, err := r.ReadTree(id); err == nil {
				t.Fatalf("ReadTree of blob %s answered", id)
			}
		case gitrepo.Tree:
			tr, err := r.ReadTree(id)
			if err != nil {
				t.Fatalf("ReadTree(%s): %v", id, err)
			}
			var got []string
			for _, e := range tr.Entries {
				got = append(got, fmt.Sprintf("%06o %s\t%s", uint32(e.Mode), e.Hash, e.Name))
			}
			var lsTree []string
			for _, line := range strings.Split(Git(t, fx.GitDir, nil, "ls-tree", id.String()), "\n") {
				mode, rest, _ := strings.Cut(line, " ")
				_, rest, _ = strings.Cut(rest, " ") // the type
				lsTree = append(lsTree, mode+" "+rest)
			}
			if strings.Join(got, "\n") != strings.Join(lsTree, "\n") {
				t.Fatalf("ReadTree(%s) = %q; git ls-tree says %q", id, got, lsTree)
			}
			if b, err := r.ReadBlob(id, "f", 1<<20); !wrongType(err) {
				t.Fatalf("ReadBlob of tree %s = %d bytes, %v; want ErrWrongType or ErrMissing", id, len(b), err)
			}
			if n, err := r.BlobSize(id, "f"); !wrongType(err) {
				t.Fatalf("BlobSize of tree %s = %d, %v; want ErrWrongType or ErrMissing", id, n, err)
			}
		case gitrepo.Commit:
			c, err := r.ReadCommit(id)
			if err != nil {
				t.Fatalf("ReadCommit(%s): %v", id, err)
			}
			parents := []string{c.TreeHash.String()}
			for _, p := range c.ParentHashes {
				parents = append(parents, p.String())
			}
			if got, want := strings.Join(parents, " "), Git(t, fx.GitDir, nil, "show", "-s", "--format=%T %P", id.String()); got != want {
				t.Fatalf("ReadCommit(%s): tree and parents %q; git says %q", id, got, want)
			}
			if _, err := r.ReadTree(id); err == nil {
				t.Fatalf("ReadTree of commit %s answered", id)
			}
		}
	}
	missing := absentID(t, fx, format)
	if _, err := r.ReadBlob(missing, "f", 1<<20); !errors.Is(err, gitrepo.ErrMissing) {
		t.Fatalf("ReadBlob of a missing object: %v, want ErrMissing", err)
	}
	if _, err := r.BlobSize(missing, "f"); !errors.Is(err, gitrepo.ErrMissing) {
		t.Fatalf("BlobSize of a missing object: %v, want ErrMissing", err)
	}
	if _, err := r.ReadCommit(missing); !errors.Is(err, gitrepo.ErrMissing) {
		t.Fatalf("ReadCommit of a missing object: %v, want ErrMissing", err)
	}
}

// wrongType is the refusal of an object of another type than asked
// for: ErrWrongType, or ErrMissing from a reader that looks objects up by
// type (no blob of that id).
func wrongType(err error) bool {
	return errors.Is(err, gitrepo.ErrWrongType) || errors.Is(err, gitrepo.ErrMissing)
}

// testRecordWrites writes a record the way the task store does, through
// the shared helpers over the Repo (WriteTree, a journaled view,
// VerifyCommit, a verified compare-and-swap), and holds it to git: the
// tree git ls-tree reads back, the journal's objects git has, and a ref
// that moves only when the check passes.
func testRecordWrites(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	view, j := gitrepo.Journaled(r)
	blob, err := view.Write(gitrepo.Blob, []byte("a record\n"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := gitrepo.WriteTree(view, []gitrepo.TreeEntry{{Name: "0001", Hash: blob}})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := gitrepo.WriteTree(view, []gitrepo.TreeEntry{{Name: "turns", Hash: sub, Dir: true}, {Name: "task.json", Hash: blob}, {Name: "turns.json", Hash: blob}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Git(t, fx.GitDir, nil, "ls-tree", "-r", "--name-only", tree.String()), "task.json\nturns.json\nturns/0001"; got != want {
		t.Fatalf("WriteTree: git ls-tree -r reads %q, want %q (git's order)", got, want)
	}
	if got := Git(t, fx.GitDir, nil, "mktree", "--missing"); got == "" {
		t.Fatal("git mktree answered nothing")
	}
	parent := mustParse(t, Git(t, fx.GitDir, nil, "rev-parse", "refs/heads/main"))
	commit, err := view.Write(gitrepo.Commit, []byte(fmt.Sprintf("tree %s\nparent %s\nauthor T <t@example.com> 1 +0000\ncommitter T <t@example.com> 1 +0000\n\nrecord\n", tree, parent)))
	if err != nil {
		t.Fatal(err)
	}
	Git(t, fx.GitDir, nil, "fsck", "--no-dangling", "--connectivity-only", commit.String())
	if err := gitrepo.VerifyWritten(r, j, parent); err != nil {
		t.Fatalf("VerifyWritten of what git has: %v", err)
	}
	if err := gitrepo.VerifyCommit(r, commit); err != nil {
		t.Fatalf("VerifyCommit of what git has: %v", err)
	}
	const name = "refs/lazy/tasks/verified"
	refused := errors.New("refused")
	if err := r.CompareAndSwapVerified(name, gitrepo.OID{}, commit, func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("CompareAndSwapVerified with a failing check: %v, want its error", err)
	}
	if got := Git(t, fx.GitDir, nil, "for-each-ref", "--format=%(objectname)", name); got != "" {
		t.Fatalf("a failed check moved %s to %q", name, got)
	}
	if err := r.CompareAndSwapVerified(name, parent, commit, func() error { t.Fatal("checked a stale swap"); return nil }); !errors.Is(err, gitrepo.ErrStale) {
		t.Fatalf("CompareAndSwapVerified from a wrong old value: %v, want ErrStale", err)
	}
	if err := r.CompareAndSwapVerified(name, gitrepo.OID{}, commit, func() error { return gitrepo.VerifyCommit(r, commit) }); err != nil {
		t.Fatalf("CompareAndSwapVerified: %v", err)
	}
	if got := Git(t, fx.GitDir, nil, "for-each-ref", "--format=%(objectname)", name); got != commit.String() {
		t.Fatalf("after CompareAndSwapVerified git says %s names %q, want %s", name, got, commit)
	}
	// The loose blob the journal recorded goes: VerifyWritten and
	// VerifyCommit see the hole, Replay writes it again.
	Git(t, fx.GitDir, nil, "update-ref", "-d", name)
	hex := blob.String()
	if err := os.Remove(filepath.Join(fx.GitDir, "objects", hex[:2], hex[2:])); err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.VerifyWritten(r, j, parent); !errors.Is(err, gitrepo.ErrMissing) {
		t.Fatalf("VerifyWritten after its blob went: %v, want ErrMissing", err)
	}
	if err := gitrepo.VerifyCommit(r, commit); !errors.Is(err, gitrepo.ErrMissing) {
		t.Fatalf("VerifyCommit after its blob went: %v, want ErrMissing", err)
	}
	if err := gitrepo.Replay(r, j); err != nil {
		t.Fatal(err)
	}
	Git(t, fx.GitDir, nil, "cat-file", "-e", hex)
	if err := gitrepo.VerifyWritten(r, j, parent); err != nil {
		t.Fatalf("VerifyWritten after Replay: %v", err)
	}
}

// testRefIndex holds SortedRefs and CountLooseRefs to git for-each-ref and
// to the loose files git pack-refs leaves.
func testRefIndex(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	head := Git(t, fx.GitDir, nil, "rev-parse", "refs/heads/main")
	for i := 0; i < 4; i++ {
		Git(t, fx.GitDir, nil, "update-ref", fmt.Sprintf("refs/lazy/tasks/p%d", i), head)
	}
	Git(t, fx.GitDir, nil, "pack-refs", "--all")
	for i := 0; i < 3; i++ {
		Git(t, fx.GitDir, nil, "update-ref", fmt.Sprintf("refs/lazy/tasks/l%d", i), head+"~1")
	}
	Git(t, fx.GitDir, nil, "update-ref", "refs/lazy/tasks/p1", head+"~1")
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	for _, prefix := range []string{"refs/lazy/tasks/", "refs/lazy/", "refs/heads/", "refs/nothing/"} {
		got, err := r.SortedRefs(prefix)
		if err != nil {
			t.Fatalf("SortedRefs(%s): %v", prefix, err)
		}
		var lines []string
		for _, e := range got {
			lines = append(lines, e.Hash.String()+" "+e.Name)
		}
		want := Git(t, fx.GitDir, nil, "for-each-ref", "--sort=refname", "--format=%(objectname) %(refname)", prefix)
		if strings.Join(lines, "\n") != want {
			t.Fatalf("SortedRefs(%s) = %q; git for-each-ref says %q", prefix, lines, want)
		}
	}
	if n := r.CountLooseRefs("refs/lazy/"); n != 4 {
		t.Fatalf("CountLooseRefs = %d, want the 4 refs written since git pack-refs", n)
	}
	Git(t, fx.GitDir, nil, "pack-refs", "--all")
	if n := r.CountLooseRefs("refs/lazy/"); n != 0 {
		t.Fatalf("CountLooseRefs after git pack-refs = %d, want 0", n)
	}
}

// testPacks holds PackKeeper to git count-objects, and to git itself
// reading a pack whose index went missing once IndexPack wrote it.
func testPacks(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	counts := func() (loose, packs int) {
		for _, line := range strings.Split(Git(t, fx.GitDir, nil, "count-objects", "-v"), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			n, _ := strconv.Atoi(v)
			switch k {
			case "count":
				loose = n
			case "packs":
				packs = n
			}
		}
		return loose, packs
	}
	loose, packs := counts()
	if got := r.LooseEstimate(256); got != loose {
		t.Fatalf("LooseEstimate(256) = %d; git count-objects says %d loose", got, loose)
	}
	if got := r.PackCount(); got != packs {
		t.Fatalf("PackCount = %d; git count-objects says %d", got, packs)
	}
	// A second pack, of the loose objects, loses its index.
	ids := Git(t, fx.GitDir, nil, "rev-list", "--objects", "--no-object-names", "refs/heads/main")
	pack := Git(t, fx.GitDir, []byte(ids+"\n"), "pack-objects", "-q", filepath.Join(fx.GitDir, "objects", "pack", "pack"))
	base := filepath.Join(fx.GitDir, "objects", "pack", "pack-"+pack)
	if err := os.Remove(base + ".idx"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if orphans, err := r.OrphanPacks(now, time.Hour); err != nil || len(orphans) != 0 {
		t.Fatalf("OrphanPacks of a young pack = %v, %v; want none", orphans, err)
	}
	orphans, err := r.OrphanPacks(now.Add(2*time.Hour), time.Hour)
	if err != nil || len(orphans) != 1 || orphans[0].Path != base+".pack" {
		t.Fatalf("OrphanPacks = %v, %v; want %s", orphans, err, base+".pack")
	}
	if err := r.IndexPack(context.Background(), orphans[0]); err != nil {
		t.Fatal(err)
	}
	Git(t, fx.GitDir, nil, "verify-pack", base+".idx")
	if orphans, err := r.OrphanPacks(now.Add(2*time.Hour), time.Hour); err != nil || len(orphans) != 0 {
		t.Fatalf("OrphanPacks after IndexPack = %v, %v; want none", orphans, err)
	}
	if err := r.IndexPack(context.Background(), gitrepo.OrphanPack{Path: "/elsewhere/pack-1.pack"}); err == nil {
		t.Fatal("IndexPack of a path outside the repository was not refused")
	}
	if _, packs := counts(); r.PackCount() != packs {
		t.Fatalf("PackCount = %d; git count-objects says %d", r.PackCount(), packs)
	}
}

// testBulk holds the bulk reader to git cat-file "<commit>:<name>": each
// answer it gives itself is git's, and whatever it does not give falls
// back.
func testBulk(t *testing.T, fresh func(testing.TB) *Fixture, open Open) {
	fx := fresh(t)
	r := open(t, fx.GitDir)
	t.Cleanup(func() { _ = r.Close() })
	rd := r.Bulk().Reader()
	commits := strings.Split(Git(t, fx.GitDir, nil, "rev-list", "refs/heads/main"), "\n")
	for _, c := range commits {
		id := mustParse(t, c)
		for _, name := range []string{"f0", "f3", "f5"} {
			want := Git(t, fx.GitDir, nil, "rev-parse", c+":"+name)
			size, _ := strconv.ParseInt(Git(t, fx.GitDir, nil, "cat-file", "-s", want), 10, 64)
			for _, limit := range []int64{size, size - 1} {
				content, blob, n, st := rd.Path(id, name, limit)
				if st == gitrepo.BulkFallback {
					continue
				}
				if blob.String() != want || n != size {
					t.Fatalf("bulk %s:%s = %s of %d bytes; git says %s of %d", c, name, blob, n, want, size)
				}
				if limit < size {
					if content != nil {
						t.Fatalf("bulk %s:%s read %d bytes over its limit", c, name, len(content))
					}
					continue
				}
				if got := Git(t, fx.GitDir, nil, "cat-file", "blob", want); string(content) != got && strings.TrimSpace(string(content)) != got {
					t.Fatalf("bulk %s:%s content differs from git's", c, name)
				}
			}
		}
	}
}

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

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestMergeBasesMatchGoGit writes random commit graphs (merges and
// criss-crosses among them) and asks both for the merge bases of random
// pairs, and whether one is the other's ancestor.
func TestMergeBasesMatchGoGit(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	s, _ := open(t)
	empty, err := gitrepo.WriteTree(s.objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 20 {
		var commits []gitrepo.OID
		for i := range 30 {
			var parents []gitrepo.OID
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
			h, err := s.objs.Write(gitrepo.Commit, b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			commits = append(commits, h)
		}
		for range 40 {
			a, b := commits[r.IntN(len(commits))], commits[r.IntN(len(commits))]
			// go-git, the oracle, reads the same objects directory.
			oracle := filesystem.NewStorage(osfs.New(filepath.Dir(filepath.Join(s.repo.CommonDir, "objects"))), cache.NewObjectLRUDefault())
			ca, err := object.GetCommit(oracle, plumbing.Hash(a.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			cb, err := object.GetCommit(oracle, plumbing.Hash(b.Bytes()))
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
			got, err := s.merger().mergeBases(a, b)
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
			if gotAnc, err := s.Sync().isAncestor(a, b); err != nil || gotAnc != wantAnc {
				t.Fatalf("round %d: %s ancestor of %s: %v (%v), go-git says %v", round, a, b, gotAnc, err, wantAnc)
			}
		}
	}
}

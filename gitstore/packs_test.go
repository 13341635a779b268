package gitstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestOrphanedPackIsFoundAndIndexed builds what overlapping git repacks
// leave behind (a pack without its .idx, the loose copies of its objects
// already pruned) and checks that OrphanPacks finds it only once it is
// old enough and IndexPack makes every task readable again.
func TestOrphanedPackIsFoundAndIndexed(t *testing.T) {
	t.Parallel()
	s, dir := open(t)
	var ids []string
	for _, title := range []string{"one", "two", "three"} {
		ids = append(ids, mustCreate(t, s, title).Task.ID)
	}
	testrepo.Git(t, dir, "gc", "-q", "--prune=now")
	idxs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("want one pack after gc, found %v", idxs)
	}
	if err := os.Remove(idxs[0]); err != nil {
		t.Fatal(err)
	}
	if out, err := testrepo.GitErr(dir, "fsck", "--no-dangling"); err == nil {
		t.Fatalf("fsck passed with the pack's index gone: %s", out)
	}
	now := time.Now()
	if young, err := s.Housekeeping().OrphanPacks(now, time.Minute); err != nil || len(young) != 0 {
		t.Fatalf("a pack written a moment ago may be mid-install; got %v, %v", young, err)
	}
	packs, err := s.Housekeeping().OrphanPacks(now.Add(2*time.Minute), time.Minute)
	if err != nil || len(packs) != 1 || packs[0].Path != strings.TrimSuffix(idxs[0], ".idx")+".pack" {
		t.Fatalf("orphaned packs: %v, %v", packs, err)
	}
	if err := s.Housekeeping().IndexPack(context.Background(), OrphanPack{Path: filepath.Join(dir, "elsewhere.pack")}); err == nil {
		t.Fatal("IndexPack accepted a path outside objects/pack")
	}
	if err := s.Housekeeping().IndexPack(context.Background(), packs[0]); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, dir, "fsck", "--no-dangling")
	for _, id := range ids {
		if _, err := s.Load(id); err != nil {
			t.Fatalf("task %s after the index was rebuilt: %v", id, err)
		}
	}
	if left, err := s.Housekeeping().OrphanPacks(now.Add(2*time.Minute), time.Minute); err != nil || len(left) != 0 {
		t.Fatalf("after IndexPack: %v, %v", left, err)
	}
}

// TestObjectsOnlyInARepacksTemporaryPackAreRead reproduces the state a
// running git repack leaves for a moment: its new pack is still named
// .tmp-<pid>-pack-<hash> and a concurrent prune-packed has already
// deleted the loose copies. git counts that pack, go-git does not; lazy
// must neither call the task corrupt nor a ref update's objects missing.
func TestObjectsOnlyInARepacksTemporaryPackAreRead(t *testing.T) {
	t.Parallel()
	s, dir := open(t)
	sn := mustCreate(t, s, "in flight")
	testrepo.Git(t, dir, "gc", "-q", "--prune=now")
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	idxs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("want one pack after gc, found %v", idxs)
	}
	base := strings.TrimSuffix(filepath.Base(idxs[0]), ".idx")
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.Rename(filepath.Join(packDir, base+ext), filepath.Join(packDir, ".tmp-4242-"+base+ext)); err != nil {
			t.Fatal(err)
		}
	}
	fresh := Open(s.repo)
	got, err := fresh.Load(sn.Task.ID)
	if err != nil {
		t.Fatalf("a task whose objects live only in a repack's temporary pack: %v", err)
	}
	if got.Task.Title != "in flight" {
		t.Fatalf("read back %q", got.Task.Title)
	}
	if !gitrepo.Present(fresh.objs, sn.Commit) {
		t.Fatal("has: the commit in the temporary pack reads as missing")
	}
	if _, _, err := fresh.Update(context.Background(), sn.Task.ID, toggleComment); err != nil {
		t.Fatalf("an update built on it: %v", err)
	}
}

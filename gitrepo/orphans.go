package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// OrphanPack is a pack file in objects/pack whose index is missing. Git
// reads a pack only through its .idx, so every object in it is invisible,
// although its data is all there. Overlapping git repack processes leave
// one behind when two of them produce the same pack (git 2.39:
// "fatal: renaming pack to '...idx' failed: No such file or directory"),
// after a prune-packed has already deleted the loose copies of its
// objects: refs then name objects git cannot find, for every writer, git
// included.
type OrphanPack struct {
	// Path is the absolute path of the .pack file.
	Path string `json:"path"`
	// Age is how long ago the pack was last written.
	Age time.Duration `json:"age"`
}

// OrphanPacks lists the repository's packs that have no index and were
// last written at least minAge before now: a pack being installed has no
// index for an instant (git renames the .pack before the .idx), so a
// young one is left alone.
func (o *Objects) OrphanPacks(now time.Time, minAge time.Duration) ([]OrphanPack, error) {
	dir := filepath.Join(o.dir, "pack")
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list packs: %w", err)
	}
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name()] = true
	}
	var out []OrphanPack
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(base, "pack-") || !validHex(strings.TrimPrefix(base, "pack-")) || have[base+".idx"] {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue // gone since the listing, or not a file
		}
		if age := now.Sub(info.ModTime()); age >= minAge {
			out = append(out, OrphanPack{Path: filepath.Join(dir, e.Name()), Age: age})
		}
	}
	return out, nil
}

// IndexPack writes the missing index of an orphaned pack with git
// index-pack, which reads and checks every object in it: afterwards its
// objects are readable again. It adds a file and removes nothing.
func (o *Objects) IndexPack(ctx context.Context, p OrphanPack) error {
	if filepath.Dir(p.Path) != filepath.Join(o.dir, "pack") || !filepath.IsAbs(p.Path) {
		return fmt.Errorf("index pack %s: not a pack of this repository", p.Path)
	}
	if err := gitcli.New(filepath.Dir(o.dir), "index-pack", p.Path).Run(ctx); err != nil {
		return fmt.Errorf("index pack %s (git index-pack): %w", p.Path, err)
	}
	o.Refresh()
	return nil
}

// PackCount is the number of packs in the repository, which git gc
// --auto also counts to decide on a full repack.
func (o *Objects) PackCount() int {
	entries, err := os.ReadDir(filepath.Join(o.dir, "pack"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pack") {
			n++
		}
	}
	return n
}

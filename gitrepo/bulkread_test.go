package gitrepo

import (
	"bytes"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// FuzzPatchDelta holds patchDelta to go-git's PatchDelta, which the pack
// reader used before: never a panic, and the same result whenever both
// apply a delta (go-git refuses an empty base, which git allows).
func FuzzPatchDelta(f *testing.F) {
	f.Add([]byte("hello world"), []byte{11, 5, 0x91, 6, 5})
	f.Add([]byte("abc"), []byte{3, 4, 0x90, 3, 1, 'd'})
	f.Add([]byte(""), []byte{0, 2, 2, 'h', 'i'})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		got, ok := patchDelta(nil, base, delta, bulkMaxObject)
		if !ok {
			// The reverse holds where git's patch_delta would apply it:
			// git refuses a delta under four bytes, and patchDelta a
			// truncated size (git reads the bits it has), which then
			// goes to git to read.
			_, rest, ok1 := deltaSize(delta)
			_, _, ok2 := deltaSize(rest)
			if want, err := packfile.PatchDelta(base, delta); err == nil && len(want) <= bulkMaxObject && len(delta) >= 4 && ok1 && ok2 {
				t.Fatalf("patchDelta refuses a delta go-git applies, to %q", want)
			}
			return
		}
		if len(base) > 0 {
			want, err := packfile.PatchDelta(base, delta)
			if err != nil {
				t.Fatalf("patchDelta applied a delta go-git refuses: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("patchDelta = %q, go-git %q", got, want)
			}
		}
	})
}

func TestTreeFind(t *testing.T) {
	h := bytes.Repeat([]byte{1}, 20)
	ent := func(mode, name string) string { return mode + " " + name + "\x00" + string(h) }
	for _, c := range []struct {
		tree string
		ok   bool
	}{
		{ent("100644", "goal.md") + ent("100644", "task.json"), true},
		{ent("100644", "task.json") + ent("40000", "turns"), true},
		{ent("100755", "task.json"), false},
		{ent("100644", "zz") + ent("100644", "task.json"), false}, // git stops at zz
		{ent("100644", "task") + ent("100644", "task.json"), true},
		{ent("100644", "task.json") + ent("100644", "task.json"), true},
		{ent("100644", "task.json") + "100644 x\x00", false}, // truncated
		{ent("10064x", "task.json"), false},
		{ent("100644", ""), false},
		{"", false},
	} {
		if _, ok := treeFind([]byte(c.tree), "task.json"); ok != c.ok {
			t.Errorf("treeFind(%q) = %v, want %v", c.tree, ok, c.ok)
		}
	}
}

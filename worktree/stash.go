package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

func stashChangesCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "diff", "--no-renames", "--raw", "--no-abbrev", "-z", sha+"^1", sha)
}

func stashUntrackedCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "ls-tree", "-r", "-z", sha+"^3")
}

func hashPathsCmd(dir string, paths []string) *gitcli.Cmd {
	return gitcli.New(dir, "hash-object", "--stdin-paths").Stdin([]byte(strings.Join(paths, "\n") + "\n"))
}

// StashInWorktree reports whether every file stash sha changed (tracked
// ones, and the untracked ones it holds) is in dir's working tree exactly
// as the stash has it: then the stash holds nothing the checkout lacks,
// as when an accept died between re-applying it and dropping it. Any
// doubt reads as false, and the stash is kept.
func StashInWorktree(ctx context.Context, dir, sha string) bool {
	if !plain(sha) {
		return false
	}
	want := map[string]string{} // path -> blob, "" for deleted
	changed, err := stashChangesCmd(dir, sha).Output(ctx)
	if err != nil {
		return false
	}
	// Each record: ":<modes> <old> <new> <status>\0<path>\0".
	var fields []string
	if len(changed) > 0 {
		fields = strings.Split(strings.TrimSuffix(string(changed), "\x00"), "\x00")
	}
	if len(fields)%2 != 0 {
		return false
	}
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(fields[i])
		if len(meta) != 5 {
			return false
		}
		blob := meta[3]
		if meta[4] == "D" {
			blob = ""
		}
		want[fields[i+1]] = blob
	}
	if untracked, err := stashUntrackedCmd(dir, sha).Output(ctx); err == nil && len(untracked) > 0 {
		for _, rec := range strings.Split(strings.TrimSuffix(string(untracked), "\x00"), "\x00") {
			meta, path, ok := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 3 {
				return false
			}
			want[path] = f[2]
		}
	}
	if len(want) == 0 {
		return false
	}
	var paths []string
	var blobs []string
	for path, blob := range want {
		if !filepath.IsLocal(path) {
			return false
		}
		_, err := os.Lstat(filepath.Join(dir, path))
		if blob == "" {
			if err == nil {
				return false // the stash deleted it; the checkout has it
			}
			continue
		}
		if err != nil {
			return false
		}
		paths = append(paths, path)
		blobs = append(blobs, blob)
	}
	if len(paths) == 0 {
		return true
	}
	got, err := hashPathsCmd(dir, paths).String(ctx)
	if err != nil {
		return false
	}
	return got == strings.Join(blobs, "\n")
}

package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/words"
)

// State is what a read-only turn (an ask) must leave as it found it: what
// HEAD names, the commit it is at, the index, and the working tree's
// tracked and untracked files (ignored files are outside it). Trees and
// commits are object ids, so two states compare as values.
type State struct {
	Ref   string `json:"ref,omitempty"` // the branch HEAD names; "" when detached
	Head  string `json:"head"`
	Index string `json:"index"` // the tree the index holds
	Files string `json:"files"` // the tree of the working tree
}

// Capture reads dir's State without changing anything in it: the index
// and the working tree are written as trees through a copy of the index,
// so not even index.lock is taken.
func Capture(ctx context.Context, dir string) (State, error) {
	var st State
	head, err := gitcli.New(dir, "rev-parse", "--verify", "HEAD^{commit}").String(ctx)
	if err != nil {
		return st, fmt.Errorf("read HEAD: %w", err)
	}
	st.Head = head
	if ref, err := gitcli.New(dir, "symbolic-ref", "--quiet", "HEAD").String(ctx); err == nil {
		st.Ref = ref
	}
	index, done, err := indexCopy(ctx, dir)
	if err != nil {
		return st, err
	}
	defer done()
	if st.Index, err = gitcli.New(dir, "write-tree").Env("GIT_INDEX_FILE=" + index).String(ctx); err != nil {
		return st, fmt.Errorf("read the index (a merge in progress?): %w", err)
	}
	if err := gitcli.New(dir, "add", "-A").Env("GIT_INDEX_FILE=" + index).Run(ctx); err != nil {
		return st, fmt.Errorf("read the working tree: %w", err)
	}
	if st.Files, err = gitcli.New(dir, "write-tree").Env("GIT_INDEX_FILE=" + index).String(ctx); err != nil {
		return st, fmt.Errorf("read the working tree: %w", err)
	}
	return st, nil
}

// indexCopy copies dir's index to a temporary file (an empty one when
// there is none yet) and returns its path and how to remove it.
func indexCopy(ctx context.Context, dir string) (string, func(), error) {
	real, err := gitcli.New(dir, "rev-parse", "--path-format=absolute", "--git-path", "index").String(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("find the index: %w", err)
	}
	tmp, err := os.MkdirTemp("", "lazy-index-")
	if err != nil {
		return "", nil, err
	}
	done := func() { _ = os.RemoveAll(tmp) }
	path := filepath.Join(tmp, "index")
	b, err := os.ReadFile(real)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		done()
		return "", nil, fmt.Errorf("read the index: %w", err)
	default:
		if err := os.WriteFile(path, b, 0o600); err != nil {
			done()
			return "", nil, err
		}
	}
	return path, done, nil
}

// Written says what changed between two states, in words: the commits
// made, the files changed (committed or not), a branch switched.
func Written(ctx context.Context, dir string, before, after State) string {
	var parts []string
	if before.Ref != after.Ref {
		parts = append(parts, fmt.Sprintf("switched HEAD from %s to %s", orDetached(before.Ref), orDetached(after.Ref)))
	}
	if before.Head != after.Head {
		n, _ := gitcli.New(dir, "rev-list", "--count", before.Head+".."+after.Head).String(ctx)
		parts = append(parts, fmt.Sprintf("moved HEAD from %.12s to %.12s (new commits: %s)", before.Head, after.Head, n))
	}
	if before.Files != after.Files {
		out, _ := gitcli.New(dir, "diff", "--name-only", before.Files, after.Files).String(ctx)
		files := strings.Fields(out)
		list := strings.Join(files, ", ")
		if len(files) > 10 {
			list = strings.Join(files[:10], ", ") + fmt.Sprintf(" and %d more", len(files)-10)
		}
		parts = append(parts, fmt.Sprintf("changed %s: %s", words.Count(len(files), "file", "files"), list))
	} else if before.Index != after.Index {
		parts = append(parts, "changed what is staged")
	}
	return strings.Join(parts, "; ")
}

func orDetached(ref string) string {
	if ref == "" {
		return "a detached HEAD"
	}
	return ref
}

// Restore puts dir back to before, after a read-only turn changed it, and
// never destroys what the turn wrote: first a commit of the working tree
// as the turn left it, on top of the commit HEAD was at, is kept at
// keepRef; then HEAD, the branch it names, the working tree and the index
// are set back. Ignored files the turn wrote are left where they are.
func Restore(ctx context.Context, dir string, before State, keepRef, message string) (after State, err error) {
	after, err = Capture(ctx, dir)
	if err != nil {
		return after, err
	}
	if after == before {
		return after, nil
	}
	kept, err := gitcli.New(dir, "commit-tree", after.Files, "-p", after.Head, "-m", message).AsLazy().String(ctx)
	if err != nil {
		return after, fmt.Errorf("keep what was written (nothing was put back): %w", err)
	}
	if err := gitcli.New(dir, "update-ref", "-m", "lazy: kept what a read-only turn wrote", keepRef, kept).Run(ctx); err != nil {
		return after, fmt.Errorf("keep what was written at %s (nothing was put back): %w", keepRef, err)
	}
	// The working tree: from the files the turn left (a temporary index
	// holding them, so files it added are known and removed) to before.
	index, done, err := indexCopy(ctx, dir)
	if err != nil {
		return after, err
	}
	defer done()
	files := gitcli.New(dir, "read-tree", after.Files).Env("GIT_INDEX_FILE=" + index)
	if err := files.Run(ctx); err != nil {
		return after, fmt.Errorf("put the working tree back (what was written is at %s): %w", keepRef, err)
	}
	if err := gitcli.New(dir, "read-tree", "--reset", "-u", before.Files).Env("GIT_INDEX_FILE=" + index).Run(ctx); err != nil {
		return after, fmt.Errorf("put the working tree back (what was written is at %s): %w", keepRef, err)
	}
	// HEAD and its branch, then the index, without touching files.
	if before.Ref != "" {
		if err := gitcli.New(dir, "symbolic-ref", "HEAD", before.Ref).Run(ctx); err != nil {
			return after, fmt.Errorf("put HEAD back on %s (what was written is at %s): %w", before.Ref, keepRef, err)
		}
		if err := gitcli.New(dir, "update-ref", "-m", "lazy: undo a read-only turn's commits", before.Ref, before.Head).Run(ctx); err != nil {
			return after, fmt.Errorf("put %s back at %s (what was written is at %s): %w", before.Ref, before.Head, keepRef, err)
		}
	} else if err := gitcli.New(dir, "update-ref", "--no-deref", "HEAD", before.Head).Run(ctx); err != nil {
		return after, fmt.Errorf("put HEAD back at %s (what was written is at %s): %w", before.Head, keepRef, err)
	}
	if err := gitcli.New(dir, "read-tree", before.Index).Run(ctx); err != nil {
		return after, fmt.Errorf("put the index back (what was written is at %s): %w", keepRef, err)
	}
	// read-tree leaves no stat data: refresh it, so git status is quick
	// and exact again (a file that differs is not an error here).
	_ = gitcli.New(dir, "update-index", "-q", "--refresh").Run(ctx)
	return after, nil
}

// UndoReadOnly puts dir back to before after a read-only turn and says
// what was undone, and where what the turn wrote is kept at keep ("" when
// it wrote nothing). The supervisor calls it when an ask ends, the
// reconciler for an ask whose supervisor died.
func UndoReadOnly(ctx context.Context, dir string, before State, keep string) string {
	after, err := Restore(ctx, dir, before, keep, "lazy: what a read-only ask wrote, undone")
	switch {
	case err != nil:
		return "[lazy] This ask was read-only, and lazy could not check or undo what it may have written: " + err.Error()
	case after == before:
		return ""
	}
	return fmt.Sprintf("[lazy] This ask was read-only, but the agent %s. lazy put the worktree and branch back as they were; what it wrote is kept at %s (git show --stat %s; take it back with git checkout %s -- .).",
		Written(ctx, dir, before, after), keep, keep, keep)
}

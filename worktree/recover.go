package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The git commands that give a user's stash back and undo an accept that
// died: each argv is built by one …Cmd function the argv tests pin.

// ErrStashConflicts says a stash was not applied because it would
// conflict with the checkout: nothing of it was written there.
var ErrStashConflicts = errors.New("they conflict with what is in the checkout now, so lazy did not apply them")

func trackedChangesCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "status", "--porcelain", "--untracked-files=no")
}

func mergeTreeCmd(dir, base, other string) *gitcli.Cmd {
	return gitcli.New(dir, "merge-tree", "--write-tree", "--no-messages", base, other)
}

func stashUntrackedNamesCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "ls-tree", "-r", "-z", "--name-only", sha+"^3")
}

// StashApplies says whether stash sha can be given back in dir without
// a conflict, without touching dir: its tracked changes merge cleanly
// onto HEAD and none of its untracked files exists there. A conflict is
// ErrStashConflicts.
func StashApplies(ctx context.Context, dir, sha string) error {
	if !plain(sha) {
		return errOption("stash", sha)
	}
	if out, err := trackedChangesCmd(dir).String(ctx); err != nil {
		return err
	} else if out != "" {
		return ErrStashConflicts
	}
	if err := mergeTreeCmd(dir, "HEAD", sha).Run(ctx); err != nil {
		var ge *gitcli.Error
		if errors.As(err, &ge) && ge.ExitCode() == 1 {
			return ErrStashConflicts
		}
		return err
	}
	untracked, err := stashUntrackedNamesCmd(dir, sha).Output(ctx)
	if err != nil {
		return nil // the stash holds no untracked files
	}
	for _, p := range strings.Split(strings.TrimSuffix(string(untracked), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		if !filepath.IsLocal(p) {
			return ErrStashConflicts
		}
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			return ErrStashConflicts
		}
	}
	return nil
}

// Stash is one entry of the stash list.
type Stash struct{ SHA, Subject string }

func stashEntriesCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "list", "--format=%H %s")
}

// Stashes lists the stash list at dir, newest first.
func Stashes(ctx context.Context, dir string) ([]Stash, error) {
	list, err := stashEntriesCmd(dir).String(ctx)
	if err != nil {
		return nil, err
	}
	var out []Stash
	for _, line := range strings.Split(list, "\n") {
		sha, subject, _ := strings.Cut(line, " ")
		if sha != "" {
			out = append(out, Stash{SHA: sha, Subject: subject})
		}
	}
	return out, nil
}

func resetHardCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "reset", "--hard", "--quiet", sha)
}

func squashMsgPathCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "rev-parse", "--git-path", "SQUASH_MSG")
}

// UndoSquash puts the checkout at dir back to commit sha, dropping a
// squash merge staged there and its prepared message. Only for a
// checkout proven to hold nothing but that squash (see HalfSquash).
func UndoSquash(ctx context.Context, dir, sha string) error {
	if !plain(sha) {
		return errOption("commit", sha)
	}
	if err := resetHardCmd(dir, sha).Run(ctx); err != nil {
		return err
	}
	if p, err := squashMsgPathCmd(dir).String(ctx); err == nil {
		if !strings.HasPrefix(p, "/") {
			p = dir + "/" + p
		}
		_ = os.Remove(p)
	}
	return nil
}

func verifyHeadCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "rev-parse", "--verify", "HEAD")
}

func squashTreeCmd(repoDir, base, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "merge-tree", "--write-tree", base, "refs/heads/"+branch)
}

func untrackedCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "ls-files", "--others", "--exclude-standard")
}

func stashCreateCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "create").AsLazy()
}

func treeCmd(dir, rev string) *gitcli.Cmd {
	return gitcli.New(dir, "rev-parse", rev+"^{tree}")
}

// HalfSquash says whether the checkout at dir holds exactly the squash
// of branch onto commit base, and nothing else: HEAD is base, and index
// and working tree are both the squash's tree, with no untracked file.
// Any doubt reads as false.
func HalfSquash(ctx context.Context, repoDir, dir, base, branch string) bool {
	if !plain(base) || !plain(branch) {
		return false
	}
	head, err := verifyHeadCmd(dir).String(ctx)
	if err != nil || head != base {
		return false
	}
	want, err := squashTreeCmd(repoDir, base, branch).String(ctx)
	if err != nil {
		return false // a conflicting squash is reset by the accept itself
	}
	want = strings.Fields(want)[0]
	// The checkout's state as a tree, without touching it: stash create
	// records index and worktree of tracked files. Untracked files are
	// not lazy's (a squash stages what it adds) and must not exist.
	if untracked, err := untrackedCmd(dir).String(ctx); err != nil || untracked != "" {
		return false
	}
	state, err := stashCreateCmd(dir).String(ctx)
	if err != nil || state == "" {
		return false
	}
	index, err1 := treeCmd(dir, state+"^2").String(ctx)
	work, err2 := treeCmd(dir, state).String(ctx)
	return err1 == nil && err2 == nil && index == want && work == want
}

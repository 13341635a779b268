package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// Folding stashes: two stashes of the user's uncommitted changes become
// one stash commit that git stash apply restores in one step, the older
// changes first and the newer on top, and that keeps both originals as
// parents, so nothing of either is lost. Its parents are git's (the
// commit the changes were made on, the index, the untracked files) and
// then the two folded stashes: git stash reads only the first three.

// FoldedSubject starts the message of every folded stash (after git's
// "On <branch>: ").
const FoldedSubject = "lazy accept: your uncommitted changes from "

// lazyIdentity is who makes lazy's own stash commits: the user's git
// may have no identity, and these commits are lazy's.
var lazyIdentity = []string{"GIT_AUTHOR_NAME=lazy", "GIT_AUTHOR_EMAIL=lazy@localhost", "GIT_COMMITTER_NAME=lazy", "GIT_COMMITTER_EMAIL=lazy@localhost"}

func stashMergeCmd(dir, older, newer string, unrelated bool) *gitcli.Cmd {
	args := []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages"}
	if unrelated {
		args = append(args, "--allow-unrelated-histories")
	}
	return gitcli.New(dir, append(args, older, newer)...)
}

func parentsCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "log", "-1", "--format=%P%x00%s", sha)
}

func emptyTreeCmd(dir string) *gitcli.Cmd { return gitcli.New(dir, "mktree").Stdin([]byte{}) }

func stashCommitCmd(dir, tree string, parents []string, msg string) *gitcli.Cmd {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return gitcli.New(dir, append(args, "-F", "-")...).Stdin([]byte(msg)).Env(lazyIdentity...)
}

func stashStoreCmd(dir, sha, msg string) *gitcli.Cmd {
	return gitcli.New(dir, "stash", "store", "-m", msg, sha).Env(lazyIdentity...)
}

// stashCommit is a stash commit's parents and subject.
type stashCommit struct {
	parents []string
	subject string
}

func readStash(ctx context.Context, dir, sha string) (stashCommit, error) {
	if !isObjectID(sha) {
		return stashCommit{}, errObjectID("stash", sha)
	}
	out, err := parentsCmd(dir, sha).String(ctx)
	if err != nil {
		return stashCommit{}, err
	}
	parents, subject, _ := strings.Cut(out, "\x00")
	c := stashCommit{parents: strings.Fields(parents), subject: subject}
	if len(c.parents) < 2 {
		return stashCommit{}, fmt.Errorf("%s is not a stash (it has %d parents)", sha, len(c.parents))
	}
	return c, nil
}

// folded reports whether c is a stash FoldStashes made.
func (c stashCommit) folded() bool {
	_, msg, _ := strings.Cut(c.subject, ": ")
	return len(c.parents) == 5 && strings.HasPrefix(msg, FoldedSubject)
}

// mergeTrees merges newer's tree onto older's (git merge-tree, which
// takes the base from their history: for two stashes, the commit the
// older one was made on) and returns the tree and the paths that
// conflicted, which the tree holds with conflict markers naming the
// two sides. unrelated is for two untracked-file commits.
func mergeTrees(ctx context.Context, dir, older, newer string, unrelated bool) (string, []string, error) {
	out, err := stashMergeCmd(dir, older, newer, unrelated).Output(ctx)
	// Exit 1 is a merge with conflicts: its tree holds them, marked.
	var ge *gitcli.Error
	if err != nil && (!errors.As(err, &ge) || ge.ExitCode() != 1) {
		return "", nil, err
	}
	fields := strings.Split(strings.TrimRight(string(out), "\x00\n"), "\x00")
	tree := strings.TrimSpace(fields[0])
	if !isObjectID(tree) {
		return "", nil, fmt.Errorf("git merge-tree gave %q, not a tree", fields[0])
	}
	var conflicts []string
	for _, p := range fields[1:] {
		if p != "" && !slices.Contains(conflicts, p) {
			conflicts = append(conflicts, p)
		}
	}
	return tree, conflicts, nil
}

// untrackedTree is the tree of a stash's untracked files, or "" when
// it holds none.
func untrackedTree(ctx context.Context, dir string, c stashCommit) (string, error) {
	if len(c.parents) < 3 {
		return "", nil
	}
	return TreeOf(ctx, dir, c.parents[2])
}

// Folded is a stash FoldStashes made.
type Folded struct {
	SHA string
	// Conflicts are the files the two changed differently: the folded
	// stash holds both versions between conflict markers (older first),
	// as git stash apply of the newer onto the older would have.
	Conflicts []string
}

// FoldStashes makes one stash commit of two stashes of a checkout of
// branch: git stash apply of it restores older's changes and newer's
// on top (tracked files merged, untracked files together), and its
// parents keep both whole. Nothing is written but objects: the caller
// records the result before it lets go of either stash.
func FoldStashes(ctx context.Context, dir, branch, older, newer string, count int, conflicts []string) (Folded, error) {
	o, err := readStash(ctx, dir, older)
	if err != nil {
		return Folded{}, err
	}
	n, err := readStash(ctx, dir, newer)
	if err != nil {
		return Folded{}, err
	}
	tree, clash, err := mergeTrees(ctx, dir, older, newer, false)
	if err != nil {
		return Folded{}, fmt.Errorf("fold the stashes' tracked changes: %w", err)
	}
	ou, err := untrackedTree(ctx, dir, o)
	if err != nil {
		return Folded{}, err
	}
	nu, err := untrackedTree(ctx, dir, n)
	if err != nil {
		return Folded{}, err
	}
	var untracked string
	switch {
	case ou != "" && nu != "":
		var uclash []string
		if untracked, uclash, err = mergeTrees(ctx, dir, o.parents[2], n.parents[2], true); err != nil {
			return Folded{}, fmt.Errorf("fold the stashes' untracked files: %w", err)
		}
		clash = append(clash, uclash...)
	case ou != "":
		untracked = ou
	case nu != "":
		untracked = nu
	default:
		if untracked, err = emptyTreeCmd(dir).String(ctx); err != nil {
			return Folded{}, err
		}
	}
	// The changes apply onto the newer of the two commits they were
	// made on: the checkout's HEAD has moved on since the older.
	head := n.parents[0]
	if IsAncestor(ctx, dir, head, o.parents[0]) {
		head = o.parents[0]
	}
	headTree, err := TreeOf(ctx, dir, head)
	if err != nil {
		return Folded{}, err
	}
	on := "On " + branch + ": "
	index, err := stashCommitCmd(dir, headTree, []string{head}, "index on "+branch+": lazy's folded stash\n").String(ctx)
	if err != nil {
		return Folded{}, fmt.Errorf("fold the stashes: %w", err)
	}
	u, err := stashCommitCmd(dir, untracked, nil, "untracked files on "+branch+": lazy's folded stash\n").String(ctx)
	if err != nil {
		return Folded{}, fmt.Errorf("fold the stashes: %w", err)
	}
	for _, c := range clash {
		if !slices.Contains(conflicts, c) {
			conflicts = append(conflicts, c)
		}
	}
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "%s%s%d interrupted accepts, oldest first\n\n", on, FoldedSubject, count)
	msg.WriteString("git stash apply restores them all: the older changes, then the newer on top.\nThe two folded stashes are this commit's 4th and 5th parents.\n")
	if len(conflicts) > 0 {
		msg.WriteString("\n")
		for _, c := range conflicts {
			fmt.Fprintf(&msg, "Lazy-Conflict: %s\n", strconv.Quote(c))
		}
	}
	sha, err := stashCommitCmd(dir, tree, []string{head, index, u, older, newer}, msg.String()).String(ctx)
	if err != nil {
		return Folded{}, fmt.Errorf("fold the stashes: %w", err)
	}
	if !isObjectID(sha) {
		return Folded{}, fmt.Errorf("git commit-tree gave %q, not a commit id", sha)
	}
	return Folded{SHA: sha, Conflicts: conflicts}, nil
}

// StashStore adds stash commit sha to the stash list with message msg.
func StashStore(ctx context.Context, dir, sha, msg string) error {
	if !isObjectID(sha) {
		return errObjectID("stash", sha)
	}
	return stashStoreCmd(dir, sha, msg).Run(ctx)
}

func conflictsCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "log", "-1", "--format=%(trailers:key=Lazy-Conflict,valueonly,separator=%x00)", sha)
}

// maxFolded bounds the stashes one folded stash is read back into.
const maxFolded = 10000

// StashParts lists the stashes folded into sha, oldest first (sha
// alone when it is not a folded stash), and the files they changed
// differently.
func StashParts(ctx context.Context, dir, sha string) ([]string, []string, error) {
	var parts []string
	stack := []string{sha}
	for n := 0; len(stack) > 0; n++ {
		if n == maxFolded {
			return nil, nil, fmt.Errorf("stash %s folds more than %d stashes", sha, maxFolded)
		}
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c, err := readStash(ctx, dir, cur)
		if err != nil {
			return nil, nil, err
		}
		if !c.folded() {
			parts = append(parts, cur)
			continue
		}
		// The older (4th parent) comes out first.
		stack = append(stack, c.parents[4], c.parents[3])
	}
	var conflicts []string
	out, err := conflictsCmd(dir, sha).String(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, q := range strings.Split(out, "\x00") {
		if p, err := strconv.Unquote(strings.TrimSpace(q)); err == nil && p != "" {
			conflicts = append(conflicts, p)
		}
	}
	return parts, conflicts, nil
}

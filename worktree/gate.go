package worktree

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// The git commands of the merge gate and the merge queue: the merge made
// as a tree without touching any checkout, its commit, a scratch checkout
// to run the gate in, and landing the commit on the target branch. As in
// accept.go, each argv is built by one small function (…Cmd) that the
// argv tests pin.

// ErrMergeConflict says a merge conflicts: the caller gets the paths.
var ErrMergeConflict = errors.New("the merge conflicts")

// ErrBranchMoved says a compare-and-swap of a branch found it no longer
// at the commit the caller expected: someone else moved it meanwhile.
var ErrBranchMoved = errors.New("the branch moved meanwhile")

// MaxFileAt bounds what FileAt reads.
const MaxFileAt = 1 << 20

// isObjectID reports whether v is a full object id: 40 (SHA-1) or 64
// (SHA-256) hex digits. Anything else (a name, an abbreviation, an
// option) is refused where the gate takes a commit or a tree.
func isObjectID(v string) bool {
	if len(v) != 40 && len(v) != 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// errObjectID refuses a value where git expects a full object id.
func errObjectID(what, v string) error {
	return fmt.Errorf("refusing to pass the %s %q to git: it is not a full object id (40 or 64 hex digits)", what, v)
}

func gateMergeTreeCmd(repoDir, ours, branch string) *gitcli.Cmd {
	return gitcli.New(repoDir, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours, "refs/heads/"+branch)
}

// MergeTree is the tree of merging refs/heads/<branch> into commit ours,
// as git merge-tree --write-tree computes it (git 2.38 or later),
// touching no checkout. On conflicts it returns the conflicting paths
// (raw file names: escape them before a terminal shows them) and an
// error that is ErrMergeConflict.
func MergeTree(ctx context.Context, repoDir, ours, branch string) (tree string, conflicts []string, err error) {
	if !isObjectID(ours) {
		return "", nil, errObjectID("commit", ours)
	}
	if !plain(branch) {
		return "", nil, errOption("branch", branch)
	}
	out, err := gateMergeTreeCmd(repoDir, ours, branch).Output(ctx)
	var ge *gitcli.Error
	switch {
	case err == nil:
	case errors.As(err, &ge) && ge.ExitCode() == 1:
	default:
		return "", nil, fmt.Errorf("merge %s into %s: %w (git merge-tree --write-tree needs git 2.38 or later)", branch, ours, err)
	}
	tree, conflicts, perr := parseMergeTree(out)
	if perr != nil {
		return "", nil, fmt.Errorf("merge %s into %s: %w", branch, ours, perr)
	}
	if err != nil {
		return "", conflicts, fmt.Errorf("merging %s into %s: %w in %d files; rebase the branch onto its target and resolve them", branch, ours, ErrMergeConflict, len(conflicts))
	}
	return tree, nil, nil
}

// parseMergeTree reads merge-tree's -z --name-only output: the tree id,
// then the conflicted file names, each once, up to an empty record.
func parseMergeTree(out []byte) (tree string, conflicts []string, err error) {
	recs := strings.Split(string(out), "\x00")
	if !isObjectID(recs[0]) {
		return "", nil, fmt.Errorf("git merge-tree gave %q, not a tree id", recs[0])
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		if r == "" {
			break
		}
		if !seen[r] {
			seen[r] = true
			conflicts = append(conflicts, r)
		}
	}
	return recs[0], conflicts, nil
}

func commitTreeCmd(repoDir, tree, parent, message string) *gitcli.Cmd {
	return gitcli.New(repoDir, "commit-tree", tree, "-p", parent, "-F", "-").Stdin([]byte(message))
}

// CommitTree makes a commit of tree with the one parent and message (on
// stdin, so any text is safe), by git's configured identity, and
// returns it. No branch moves.
func CommitTree(ctx context.Context, repoDir, tree, parent, message string) (string, error) {
	if !isObjectID(tree) {
		return "", errObjectID("tree", tree)
	}
	if !isObjectID(parent) {
		return "", errObjectID("commit", parent)
	}
	sha, err := commitTreeCmd(repoDir, tree, parent, message).String(ctx)
	if err != nil {
		return "", fmt.Errorf("commit the merged tree: %w", err)
	}
	if !isObjectID(sha) {
		return "", fmt.Errorf("git commit-tree gave %q, not a commit id", sha)
	}
	return sha, nil
}

func treeOfCmd(repoDir, commit string) *gitcli.Cmd {
	return gitcli.New(repoDir, "rev-parse", "--verify", commit+"^{tree}")
}

// TreeOf is the tree of commit.
func TreeOf(ctx context.Context, repoDir, commit string) (string, error) {
	if !isObjectID(commit) {
		return "", errObjectID("commit", commit)
	}
	return treeOfCmd(repoDir, commit).String(ctx)
}

func addDetachedCmd(repoDir, dir, commit string) *gitcli.Cmd {
	return gitcli.New(repoDir, "worktree", "add", "--quiet", "--detach", dir, commit)
}

// AddDetached checks commit out, with no branch, in a new worktree at
// dir: the scratch checkout the gate runs in. RemoveScratch removes it.
func AddDetached(ctx context.Context, repoDir, dir, commit string) error {
	if !plain(dir) {
		return errOption("worktree path", dir)
	}
	if !isObjectID(commit) {
		return errObjectID("commit", commit)
	}
	return addDetachedCmd(repoDir, dir, commit).Run(ctx)
}

func removeScratchCmd(repoDir, dir string) *gitcli.Cmd {
	return gitcli.New(repoDir, "worktree", "remove", "--force", "--force", dir)
}

// RemoveScratch removes the gate's scratch checkout at dir, and git's
// record of it, whatever it holds: also when git marks it locked (a git
// worktree add killed midway leaves it locked "initializing") or its
// directory is gone. Only for a checkout lazy made for itself.
func RemoveScratch(ctx context.Context, repoDir, dir string) error {
	if !plain(dir) {
		return errOption("worktree path", dir)
	}
	return removeScratchCmd(repoDir, dir).Run(ctx)
}

func fastForwardCmd(dir, commit string) *gitcli.Cmd {
	return gitcli.New(dir, "merge", "--ff-only", "--quiet", commit)
}

// FastForward moves the checkout at dir (its branch, index and files)
// to commit. It fails, and changes nothing, if the checkout's commit is
// not an ancestor of commit, or if local changes would be overwritten.
func FastForward(ctx context.Context, dir, commit string) error {
	if !isObjectID(commit) {
		return errObjectID("commit", commit)
	}
	return fastForwardCmd(dir, commit).Run(ctx)
}

func resetToHeadCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "read-tree", "--reset", "-u", "HEAD")
}

// ResetToHead puts the index and files of the checkout at dir back to
// its HEAD without moving any ref: what undoes a FastForward that
// updated the checkout and then could not move the branch (git writes
// the files first), also while the lock that stopped it is still there.
// Untracked files stay. The caller must know every change there is its
// own.
func ResetToHead(ctx context.Context, dir string) error {
	return resetToHeadCmd(dir).Run(ctx)
}

func updateBranchCmd(repoDir, branch, newCommit, oldCommit string) *gitcli.Cmd {
	return gitcli.New(repoDir, "update-ref", "-m", "lazy accept", "refs/heads/"+branch, newCommit, oldCommit)
}

// UpdateBranch moves refs/heads/<branch> from oldCommit to newCommit, only
// if it is still at oldCommit (compare-and-swap); if it has moved, the
// error is ErrBranchMoved. It moves the ref alone: only for a branch not
// checked out anywhere (FastForward is for one that is).
func UpdateBranch(ctx context.Context, repoDir, branch, newCommit, oldCommit string) error {
	if !plain(branch) {
		return errOption("branch", branch)
	}
	if !isObjectID(newCommit) {
		return errObjectID("commit", newCommit)
	}
	if !isObjectID(oldCommit) {
		return errObjectID("commit", oldCommit)
	}
	err := updateBranchCmd(repoDir, branch, newCommit, oldCommit).Run(ctx)
	if err == nil {
		return nil
	}
	if tip, terr := BranchTip(ctx, repoDir, branch); terr == nil && !strings.EqualFold(tip, oldCommit) {
		return fmt.Errorf("move %s to %s: %w (it is at %s, not %s); run the merge again on its new tip: %w", branch, newCommit, ErrBranchMoved, tip, oldCommit, err)
	}
	return err
}

func lsTreeEntryCmd(repoDir, commit, path string) *gitcli.Cmd {
	return gitcli.New(repoDir, "ls-tree", "-l", "-z", "--full-tree", commit).Paths(path).Env("GIT_LITERAL_PATHSPECS=1")
}

func catBlobCmd(repoDir, blob string) *gitcli.Cmd {
	return gitcli.New(repoDir, "cat-file", "blob", blob)
}

// FileAt is the content of the file at path (from the repository's
// root) in commit: (nil, false, nil) when there is none. A file over
// MaxFileAt bytes, a directory, a symbolic link or a submodule there is
// an error.
func FileAt(ctx context.Context, repoDir, commit, path string) ([]byte, bool, error) {
	if !isObjectID(commit) {
		return nil, false, errObjectID("commit", commit)
	}
	if !cleanRelative(path) {
		return nil, false, fmt.Errorf("refusing to read %q from a commit: give a path relative to the repository's root, such as .lazy/gate", path)
	}
	out, err := lsTreeEntryCmd(repoDir, commit, path).Output(ctx)
	if err != nil {
		return nil, false, err
	}
	var mode, typ, blob, size string
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		if strings.HasPrefix(name, path+"/") {
			return nil, false, fmt.Errorf("%s at %s is a directory, not a file", path, commit)
		}
		if name != path {
			continue
		}
		if f := strings.Fields(meta); len(f) == 4 {
			mode, typ, blob, size = f[0], f[1], f[2], f[3]
		}
	}
	switch {
	case blob == "":
		return nil, false, nil
	case typ == "tree":
		return nil, false, fmt.Errorf("%s at %s is a directory, not a file", path, commit)
	case typ != "blob" || !isObjectID(blob):
		return nil, false, fmt.Errorf("%s at %s is a %s, not a file", path, commit, typ)
	case mode == "120000":
		return nil, false, fmt.Errorf("%s at %s is a symbolic link; commit the file itself there", path, commit)
	}
	if n, err := strconv.ParseInt(size, 10, 64); err != nil || n > MaxFileAt {
		return nil, false, fmt.Errorf("%s at %s is %s bytes, more than %d; it must be a small text file", path, commit, size, MaxFileAt)
	}
	b, err := catBlobCmd(repoDir, blob).Output(ctx)
	if err != nil {
		return nil, false, err
	}
	if len(b) > MaxFileAt {
		return nil, false, fmt.Errorf("%s at %s is more than %d bytes; it must be a small text file", path, commit, MaxFileAt)
	}
	return b, true, nil
}

// cleanRelative reports whether p is a plain path inside a tree: not
// empty, not absolute, no "." or ".." or empty parts, no NUL.
func cleanRelative(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

func existingFilesCmd(repoDir, commit string, paths []string) *gitcli.Cmd {
	return gitcli.New(repoDir, "ls-tree", "-z", "--full-tree", commit).Paths(paths...).Env("GIT_LITERAL_PATHSPECS=1")
}

// ExistingFiles returns those of paths (relative to the repository's
// root) that are files at commit: blobs or symbolic links, not
// directories or submodules. Paths that are not plain relative paths
// are left out.
func ExistingFiles(ctx context.Context, repoDir, commit string, paths []string) ([]string, error) {
	if !isObjectID(commit) {
		return nil, errObjectID("commit", commit)
	}
	var clean []string
	for _, p := range paths {
		if cleanRelative(p) {
			clean = append(clean, p)
		}
	}
	if len(clean) == 0 {
		return nil, nil
	}
	out, err := existingFilesCmd(repoDir, commit, clean).Output(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range clean {
		want[p] = true
	}
	var files []string
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok || !want[name] {
			continue
		}
		if f := strings.Fields(meta); len(f) == 3 && f[1] == "blob" {
			files = append(files, name)
			want[name] = false
		}
	}
	return files, nil
}

package worktree

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// Ref commands lazy runs for its own records beside a checkout (the
// stashes it keeps for the user); each argv is pinned by the argv tests.

func createRefCmd(dir, ref, sha, why string) *gitcli.Cmd {
	// The empty old value makes git refuse to overwrite an existing ref.
	return gitcli.New(dir, "update-ref", "-m", why, ref, sha, "")
}

// CreateRef points ref at sha, atomically, only if ref does not exist;
// why goes to the reflog.
func CreateRef(ctx context.Context, dir, ref, sha, why string) error {
	if !plain(ref) {
		return errOption("ref", ref)
	}
	if !plain(sha) {
		return errOption("commit", sha)
	}
	return createRefCmd(dir, ref, sha, why).Run(ctx)
}

func swapRefCmd(dir, ref, sha, old, why string) *gitcli.Cmd {
	return gitcli.New(dir, "update-ref", "-m", why, ref, sha, old)
}

// SwapRef points ref at sha, atomically, only if it still points at
// old ("" : only if it does not exist); why goes to the reflog.
func SwapRef(ctx context.Context, dir, ref, sha, old, why string) error {
	if !plain(ref) {
		return errOption("ref", ref)
	}
	if !isObjectID(sha) {
		return errObjectID("commit", sha)
	}
	if old != "" && !isObjectID(old) {
		return errObjectID("commit", old)
	}
	return swapRefCmd(dir, ref, sha, old, why).Run(ctx)
}

func deleteRefCmd(dir, ref, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "update-ref", "-d", ref, sha)
}

// DeleteRef deletes ref if it still points at sha.
func DeleteRef(ctx context.Context, dir, ref, sha string) error {
	if !plain(ref) {
		return errOption("ref", ref)
	}
	if !plain(sha) {
		return errOption("commit", sha)
	}
	return deleteRefCmd(dir, ref, sha).Run(ctx)
}

func refExistsCmd(dir, ref string) *gitcli.Cmd {
	return gitcli.New(dir, "rev-parse", "--verify", "--quiet", ref)
}

// RefExists is true when ref names an object.
func RefExists(ctx context.Context, dir, ref string) bool {
	return plain(ref) && refExistsCmd(dir, ref).Run(ctx) == nil
}

// Ref is one ref and the object it names.
type Ref struct{ Name, SHA string }

func refsUnderCmd(dir, prefix string) *gitcli.Cmd {
	return gitcli.New(dir, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
}

// RefsUnder lists the refs under prefix (refs/…/).
func RefsUnder(ctx context.Context, dir, prefix string) ([]Ref, error) {
	if !plain(prefix) {
		return nil, errOption("ref prefix", prefix)
	}
	out, err := refsUnderCmd(dir, prefix).String(ctx)
	if err != nil {
		return nil, err
	}
	var refs []Ref
	for _, line := range strings.Split(out, "\n") {
		if name, sha, ok := strings.Cut(line, " "); ok {
			refs = append(refs, Ref{Name: name, SHA: sha})
		}
	}
	return refs, nil
}

func commitInfoCmd(dir, sha string) *gitcli.Cmd {
	return gitcli.New(dir, "log", "-1", "--format=%ct %s", sha)
}

// CommitInfo is when commit sha was made and its subject (a time git
// does not print as a number is left zero).
func CommitInfo(ctx context.Context, dir, sha string) (time.Time, string, error) {
	if !plain(sha) {
		return time.Time{}, "", errOption("commit", sha)
	}
	info, err := commitInfoCmd(dir, sha).String(ctx)
	if err != nil {
		return time.Time{}, "", err
	}
	ts, subject, _ := strings.Cut(info, " ")
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, subject, nil
	}
	return time.Unix(n, 0).UTC(), subject, nil
}

func currentBranchCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "symbolic-ref", "--quiet", "--short", "HEAD")
}

// CurrentBranch is the branch checked out at dir ("" with an error on a
// detached HEAD or no checkout).
func CurrentBranch(ctx context.Context, dir string) (string, error) {
	return currentBranchCmd(dir).String(ctx)
}
